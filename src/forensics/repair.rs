//! Forensics: authority repair (`spec/forensics.md` §7).
//!
//! When the gate denies a parameter because its justification is untrusted (or quarantined),
//! look for the same parameter's value in trusted provenance; if there is one, use it and
//! decide again. Rules, in order, per denied parameter:
//! 1. if the parameter's *current* value has trusted provenance (a candidate with the same
//!    value), keep the value and justify it by that provenance only;
//! 2. else, if the trusted candidates hold exactly one distinct value, substitute it;
//! 3. else (none, or several disagreeing values) the call stays denied.
//!
//! Repair grants authority, so it asks for stronger evidence than a denial does (a spurious
//! provenance match can only make the gate deny more, but would make repair allow more):
//! - a candidate that qualifies by its label and was found by matching the value inside text
//!   ([`Found::TextMatch`]) must be at least [`MIN_MATCHED_VALUE_CHARS`] characters long: short
//!   values (`"13"`) occur in free text by chance (the AgentDojo fixtures' README lists `"13"`
//!   matching "June 13"). Sources the policy names authoritative are records of the values the
//!   parameter takes (ids, payees) that the attacker cannot write, so the floor does not apply
//!   to them;
//! - a repaired call may not carry an unsourced parameter: after repair every parameter must be
//!   justified by recorded entries (a call the gate once refused is not let through on a value
//!   nobody can account for). [`Policy::repair_unsourced`] = allow lifts this rule; on the
//!   AgentDojo fixtures that lets phishing messages through (`spec/forensics.md` §7.3).
//!
//! A candidate counts as trusted provenance when every one of its entries is in the log, not
//! tombstoned, not quarantined, and either labelled no worse than the parameter allows or
//! written by a principal the policy names as authoritative for that parameter
//! ([`crate::gate::ToolRule::authoritative`]). Values are never invented: a substituted value is
//! always a candidate's value, reported with its entries.

use crate::gate::{
    DenyReason, LineageDecision, LineageDenial, LineageView, OriginView, Policy, ToolCall,
    Unsourced,
};
use crate::lineage::Label;
use crate::record::{EntryId, Role};
use std::collections::{BTreeMap, BTreeSet};

/// Shortest value, in characters, that a text match in a non-authoritative entry may grant
/// authority to.
pub const MIN_MATCHED_VALUE_CHARS: usize = 4;

/// How the caller found a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Found {
    /// From a structured field (a contacts list's `iban`, an earlier approved call's argument).
    Structured,
    /// By finding the value inside an entry's text (exact substring match).
    TextMatch,
}

/// A value of a parameter found in recorded provenance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The value, as the tool call would carry it (strings raw, other JSON values as JSON).
    pub value: String,
    /// The entries it comes from (all must qualify).
    pub entries: Vec<EntryId>,
    /// How the value was found.
    pub found: Found,
}

/// Where repair looks for values: the caller's index of recorded provenance.
pub trait TrustedValues {
    /// Candidate values for `param` of `tool` (unfiltered; [`decide_with_repair`] filters).
    fn candidates(&self, tool: &str, param: &str) -> Vec<Candidate>;
}

/// One repaired parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Swap {
    /// The parameter.
    pub param: String,
    /// The value and justification the gate denied.
    pub from: (String, Vec<EntryId>),
    /// The value and justification used instead (same value under rule 1).
    pub to: (String, Vec<EntryId>),
}

/// Why a denied call could not be repaired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unrepairable {
    /// The denial is not about untrusted or quarantined justification (unknown entry,
    /// tombstone, unsourced argument): repair does not apply.
    NotAboutTrust,
    /// No trusted provenance holds a value for the parameter.
    NoTrustedValue,
    /// Trusted provenance holds several different values.
    Ambiguous,
    /// The parameter was already repaired and is still denied.
    StillDenied,
    /// After repair a parameter is still unsourced (no recorded entry justifies it).
    UnsourcedParameter,
    /// A value of the call, as proposed or repaired, is held by an untrusted entry in its
    /// justification's ancestry (`spec/gate.md` §3.1): repair replaces justifications with
    /// authoritative ones, never what the value's origin is.
    UntrustedOrigin,
}

/// The outcome of [`decide_with_repair`].
///
/// Exhaustive: this is a decision (allowed as is, allowed after repair, or denied); a new
/// outcome must break every caller's build rather than fall into a wildcard arm that might allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepairOutcome {
    /// Allowed as proposed.
    Allowed,
    /// Allowed after repair: the call to make, its values, and what changed.
    Repaired {
        /// The repaired call (justifications replaced).
        call: ToolCall,
        /// Parameter values of the repaired call.
        values: BTreeMap<String, String>,
        /// What was swapped, in order.
        swaps: Vec<Swap>,
    },
    /// Denied; `denial` is the gate's last answer.
    Denied {
        /// The gate's denial.
        denial: LineageDenial,
        /// Why repair did not help.
        why: Unrepairable,
    },
}

impl RepairOutcome {
    /// Whether the call may proceed (as proposed or repaired).
    pub fn is_allow(&self) -> bool {
        !matches!(self, RepairOutcome::Denied { .. })
    }
}

/// [`decide_with_repair`], then the origin check of `spec/gate.md` §3.1–3.2 on the call it
/// would allow: the call as proposed with the `proposed` JSON values, or the repaired call with
/// each swapped parameter's new value (a string) in its argument's place. What `memlineage
/// gate --repair` and the replay's repair configuration decide (`spec/forensics.md` §7): a
/// repair never lets a value through that the gate's origin check refuses.
pub fn decide_with_repair_and_origin(
    policy: &Policy,
    view: &impl OriginView,
    call: &ToolCall,
    proposed: &serde_json::Map<String, serde_json::Value>,
    values: &BTreeMap<String, String>,
    trusted: &impl TrustedValues,
) -> RepairOutcome {
    let outcome = decide_with_repair(policy, view, call, values, trusted);
    let (checked_call, checked) = match &outcome {
        RepairOutcome::Denied { .. } => return outcome,
        RepairOutcome::Allowed => (call, proposed.clone()),
        RepairOutcome::Repaired { call, swaps, .. } => {
            let mut checked = proposed.clone();
            // A swap that kept the value (only its justification changed) is checked with
            // the value as proposed; a new value is checked as the string it is.
            for s in swaps.iter().filter(|s| s.to.0 != s.from.0) {
                checked.insert(s.param.clone(), serde_json::Value::String(s.to.0.clone()));
            }
            (call, checked)
        }
    };
    match policy.check_origin(checked_call, &checked, view) {
        LineageDecision::Allow => outcome,
        LineageDecision::Deny(denial) => RepairOutcome::Denied {
            denial,
            why: Unrepairable::UntrustedOrigin,
        },
    }
}

/// Decides `call` (with its parameter `values`) under `policy`, repairing denied parameters from
/// `trusted` (module docs). Labels only: [`decide_with_repair_and_origin`] adds the origin
/// check a decision before a tool call needs. Bounded: each parameter is repaired at most once, so at most
/// `args + 1` gate decisions are made.
pub fn decide_with_repair(
    policy: &Policy,
    view: &impl LineageView,
    call: &ToolCall,
    values: &BTreeMap<String, String>,
    trusted: &impl TrustedValues,
) -> RepairOutcome {
    let mut call = call.clone();
    let mut values = values.clone();
    let mut swaps: Vec<Swap> = Vec::new();
    let mut repaired: BTreeSet<String> = BTreeSet::new();
    // Per parameter, the authoritative entries accepted for it (and for nothing else).
    let mut authorised: BTreeMap<String, BTreeSet<EntryId>> = BTreeMap::new();
    loop {
        let denial = match decide_per_param(policy, view, &call, &authorised) {
            LineageDecision::Allow if swaps.is_empty() => return RepairOutcome::Allowed,
            LineageDecision::Allow => {
                let unsourced = call.args.iter().find(|(_, e)| e.is_empty());
                if let (Some((param, _)), Unsourced::Deny) = (unsourced, policy.repair_unsourced) {
                    let denial = LineageDenial {
                        tool: call.tool.clone(),
                        param: param.clone(),
                        entry: None,
                        reason: DenyReason::Unsourced,
                        path: Vec::new(),
                    };
                    return RepairOutcome::Denied {
                        denial,
                        why: Unrepairable::UnsourcedParameter,
                    };
                }
                return RepairOutcome::Repaired {
                    call,
                    values,
                    swaps,
                };
            }
            LineageDecision::Deny(d) => d,
        };
        let why = if !matches!(
            denial.reason,
            DenyReason::Untrusted { .. } | DenyReason::Quarantined
        ) {
            Some(Unrepairable::NotAboutTrust)
        } else if repaired.contains(&denial.param) {
            Some(Unrepairable::StillDenied)
        } else {
            None
        };
        if let Some(why) = why {
            return RepairOutcome::Denied { denial, why };
        }
        let param = denial.param.clone();
        let current = values.get(&param).cloned().unwrap_or_default();
        let max = policy.max_label(&call.tool, &param);
        let usable: Vec<Candidate> = trusted
            .candidates(&call.tool, &param)
            .into_iter()
            .filter(|c| qualifies(policy, view, &call.tool, &param, max, c).is_some())
            .collect();
        let chosen = match usable.iter().find(|c| c.value == current) {
            Some(c) => Ok(c.clone()),
            None => {
                let distinct: BTreeSet<&str> = usable.iter().map(|c| c.value.as_str()).collect();
                match (distinct.len(), usable.first()) {
                    (1, Some(c)) => Ok(c.clone()),
                    (0, _) | (_, None) => Err(Unrepairable::NoTrustedValue),
                    _ => Err(Unrepairable::Ambiguous),
                }
            }
        };
        let chosen = match chosen {
            Ok(c) => c,
            Err(why) => return RepairOutcome::Denied { denial, why },
        };
        let old_entries = call
            .args
            .iter()
            .find(|(p, _)| *p == param)
            .map(|(_, e)| e.clone())
            .unwrap_or_default();
        for (p, entries) in call.args.iter_mut() {
            if *p == param {
                *entries = chosen.entries.clone();
            }
        }
        if qualifies(policy, view, &call.tool, &param, max, &chosen) == Some(true) {
            authorised
                .entry(param.clone())
                .or_default()
                .extend(chosen.entries.iter().copied());
        }
        values.insert(param.clone(), chosen.value.clone());
        swaps.push(Swap {
            param: param.clone(),
            from: (current, old_entries),
            to: (chosen.value, chosen.entries),
        });
        repaired.insert(param);
    }
}

/// The gate's decision for `call`, parameter by parameter in argument order, with the entries
/// authorised for a parameter counting as Trusted for that parameter only.
fn decide_per_param(
    policy: &Policy,
    view: &impl LineageView,
    call: &ToolCall,
    authorised: &BTreeMap<String, BTreeSet<EntryId>>,
) -> LineageDecision {
    let empty = BTreeSet::new();
    for (param, entries) in &call.args {
        let one = ToolCall {
            tool: call.tool.clone(),
            sensitive: call.sensitive,
            args: vec![(param.clone(), entries.clone())],
        };
        let view = Authorised {
            inner: view,
            entries: authorised.get(param).unwrap_or(&empty),
        };
        if let LineageDecision::Deny(d) = policy.decide(&one, &view) {
            return LineageDecision::Deny(d);
        }
    }
    LineageDecision::Allow
}

/// `None` when the candidate does not qualify; `Some(true)` when it qualifies only because
/// every entry's writer is a principal the policy names authoritative for the parameter (its
/// entries are then accepted for that parameter), `Some(false)` when its labels qualify on
/// their own.
fn qualifies(
    policy: &Policy,
    view: &impl LineageView,
    tool: &str,
    param: &str,
    max: Label,
    c: &Candidate,
) -> Option<bool> {
    let authoritative = c.entries.iter().all(|id| {
        view.principal_of(id)
            .is_some_and(|p| policy.is_authoritative(tool, param, &p))
    });
    let short_match =
        c.found == Found::TextMatch && c.value.chars().count() < MIN_MATCHED_VALUE_CHARS;
    let live = |id: &EntryId| !view.tombstoned(id) && !view.quarantined(id);
    // A labelled entry grants authority only as a statement of the user (role user, labelled
    // Trusted: a prompt); an agent memory never does, whatever its label (the worst source
    // decides, `spec/gate.md` §3.1 step 4).
    let stated = |id: &EntryId| {
        view.role_of(id) == Some(Role::User) && view.label_of(id) == Some(Label::Trusted)
    };
    let by_label = !short_match
        && c.entries
            .iter()
            .all(|id| view.label_of(id).is_some_and(|l| l <= max) && stated(id) && live(id));
    let by_authority = authoritative
        && c.entries
            .iter()
            .all(|id| view.label_of(id).is_some() && live(id));
    match (c.entries.is_empty(), by_label, by_authority) {
        (true, _, _) => None,
        (false, true, _) => Some(false),
        (false, false, true) => Some(true),
        (false, false, false) => None,
    }
}

/// A view in which the entries of authoritative candidates chosen for one parameter count as
/// Trusted; everything else is the inner view's answer.
struct Authorised<'a, V: LineageView> {
    inner: &'a V,
    entries: &'a BTreeSet<EntryId>,
}

impl<V: LineageView> LineageView for Authorised<'_, V> {
    fn label_of(&self, id: &EntryId) -> Option<Label> {
        let l = self.inner.label_of(id)?;
        Some(if self.entries.contains(id) {
            Label::Trusted
        } else {
            l
        })
    }

    fn tombstoned(&self, id: &EntryId) -> bool {
        self.inner.tombstoned(id)
    }

    fn path_to_source(&self, id: &EntryId) -> Vec<EntryId> {
        self.inner.path_to_source(id)
    }

    fn quarantined(&self, id: &EntryId) -> bool {
        self.inner.quarantined(id)
    }

    fn principal_of(&self, id: &EntryId) -> Option<String> {
        self.inner.principal_of(id)
    }

    fn role_of(&self, id: &EntryId) -> Option<Role> {
        self.inner.role_of(id)
    }
}
