//! Lineage labels (`spec/lineage.md`).
//!
//! Labels form the chain `Trusted < DerivedTrusted < DerivedUntrusted < External`. An entry's
//! label is a function of the log: its writer's role (from the keyring), its parents' labels,
//! the edge weights and the threshold τ. It is computed once, at append, in O(parents), and
//! never signed or trusted from storage.

use crate::record::{Role, Weight};
use std::fmt;

/// A trust label (paper §4.3). Ordered from most to least trusted; "worst" means maximum.
///
/// Exhaustive: the four labels of the lattice (`spec/lineage.md`); a new label is a new format
/// version, and every decision over labels must handle it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    /// Written by a trusted principal (user, system, log, or agent) from nothing untrusted.
    Trusted,
    /// Derived, over strong edges, only from Trusted or Derived-Trusted entries.
    DerivedTrusted,
    /// Derived, over strong edges, from at least one External or Derived-Untrusted entry.
    DerivedUntrusted,
    /// Written by a tool or external principal.
    External,
}

impl Label {
    /// All labels, best first.
    pub const ALL: [Label; 4] = [
        Label::Trusted,
        Label::DerivedTrusted,
        Label::DerivedUntrusted,
        Label::External,
    ];

    /// Storage code, `0..=3` in lattice order.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The label with storage code `code`.
    pub fn from_code(code: u8) -> Option<Self> {
        Label::ALL.get(usize::from(code)).copied()
    }

    /// The label a child inherits from a parent with this label over a strong edge:
    /// Trusted and Derived-Trusted lift to Derived-Trusted; Derived-Untrusted and External
    /// lift to Derived-Untrusted (`spec/lineage.md` §3).
    pub fn lifted(self) -> Label {
        match self {
            Label::Trusted | Label::DerivedTrusted => Label::DerivedTrusted,
            Label::DerivedUntrusted | Label::External => Label::DerivedUntrusted,
        }
    }

    /// Upper-case name used in rendering: `TRUSTED`, `DERIVED_TRUSTED`, ….
    pub fn name(self) -> &'static str {
        match self {
            Label::Trusted => "TRUSTED",
            Label::DerivedTrusted => "DERIVED_TRUSTED",
            Label::DerivedUntrusted => "DERIVED_UNTRUSTED",
            Label::External => "EXTERNAL",
        }
    }

    /// Parses `trusted`, `derived_trusted`, `derived_untrusted`, `external` (any case, `-` or `_`).
    pub fn from_name(s: &str) -> Option<Self> {
        let norm = s.trim().to_ascii_uppercase().replace('-', "_");
        Label::ALL.into_iter().find(|l| l.name() == norm)
    }

    /// Whether this label is Derived-Untrusted or External.
    pub fn is_untrusted(self) -> bool {
        self >= Label::DerivedUntrusted
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a derived entry with no strong parent (every `w <= τ`) gets (`spec/lineage.md` §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum WeakRule {
    /// The paper's rule: with no strong parent the entry is Trusted.
    FailOpen,
    /// The default: with no strong parent, the worst lifted label over all parents.
    #[default]
    FailClosed,
}

impl WeakRule {
    /// `fail-open` or `fail-closed`.
    pub fn name(self) -> &'static str {
        match self {
            WeakRule::FailOpen => "fail-open",
            WeakRule::FailClosed => "fail-closed",
        }
    }

    /// Parses [`WeakRule::name`].
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "fail-open" => Some(WeakRule::FailOpen),
            "fail-closed" => Some(WeakRule::FailClosed),
            _ => None,
        }
    }
}

/// The labelling parameters of a ledger: threshold τ and the weak-parent rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LabelPolicy {
    /// τ: an edge is strong when `w > τ` (strict). Default 0.5 (500_000 millionths).
    pub tau: Weight,
    /// What an entry with parents but no strong parent gets.
    pub weak_rule: WeakRule,
}

impl Default for LabelPolicy {
    fn default() -> Self {
        LabelPolicy {
            // 500_000 <= 1_000_000.
            tau: match Weight::new(500_000) {
                Ok(w) => w,
                Err(_) => Weight::ONE,
            },
            weak_rule: WeakRule::FailClosed,
        }
    }
}

impl LabelPolicy {
    /// The label of a new entry (`spec/lineage.md` §3):
    ///
    /// 1. writer role tool or external → External;
    /// 2. no parents → Trusted;
    /// 3. else the worst [`Label::lifted`] label over parents with `w > τ`;
    /// 4. if no parent is strong: Trusted under [`WeakRule::FailOpen`], the worst lifted label
    ///    over all parents under [`WeakRule::FailClosed`].
    ///
    /// `parents` yields `(weight, parent label)`. O(parents). Does not panic.
    pub fn label(&self, writer: Role, parents: impl IntoIterator<Item = (Weight, Label)>) -> Label {
        if writer.is_untrusted() {
            return Label::External;
        }
        let mut any = false;
        let mut strong: Option<Label> = None;
        let mut all = Label::Trusted;
        for (w, l) in parents {
            any = true;
            let lifted = l.lifted();
            all = all.max(lifted);
            if w > self.tau {
                strong = Some(strong.map_or(lifted, |s| s.max(lifted)));
            }
        }
        match (any, strong, self.weak_rule) {
            (false, _, _) => Label::Trusted,
            (true, Some(s), _) => s,
            (true, None, WeakRule::FailOpen) => Label::Trusted,
            (true, None, WeakRule::FailClosed) => all,
        }
    }

    /// Whether an edge of weight `w` propagates labels: `w > τ`.
    pub fn is_strong(&self, w: Weight) -> bool {
        w > self.tau
    }

    /// The checkpoint extension line that signs these parameters (`spec/lineage.md` §2.1):
    /// `memlineage/label-policy@v1 tau=<millionths> rule=<rule>` and a newline.
    pub fn extension_line(&self) -> String {
        format!(
            "{POLICY_LINE} tau={} rule={}\n",
            self.tau.millionths(),
            self.weak_rule.name()
        )
    }

    /// The parameters a checkpoint's extension lines sign (`spec/lineage.md` §2.1): `None`
    /// when no line starts with the `memlineage/label-policy@v1 ` tag (a checkpoint signed
    /// before parameters were signed).
    ///
    /// # Errors
    /// [`SignedPolicyError`] when a tagged line does not parse exactly (unknown field, τ out of
    /// range or not canonical, unknown rule) or appears twice. Does not panic.
    pub fn from_extension(extension: &str) -> Result<Option<LabelPolicy>, SignedPolicyError> {
        let mut found = None;
        for line in extension.lines() {
            let Some(rest) = line.strip_prefix(POLICY_LINE) else {
                continue;
            };
            let rest = rest
                .strip_prefix(' ')
                .ok_or_else(|| SignedPolicyError(line.into()))?;
            let bad = || SignedPolicyError(line.into());
            let (tau, rule) = match rest.split(' ').collect::<Vec<_>>()[..] {
                [t, r] => (
                    t.strip_prefix("tau=").ok_or_else(bad)?,
                    r.strip_prefix("rule=").ok_or_else(bad)?,
                ),
                _ => return Err(bad()),
            };
            let millionths: u64 = tau.parse().map_err(|_| bad())?;
            if millionths.to_string() != tau {
                return Err(bad());
            }
            let policy = LabelPolicy {
                tau: Weight::new(millionths).map_err(|_| bad())?,
                weak_rule: WeakRule::from_name(rule).ok_or_else(bad)?,
            };
            if found.replace(policy).is_some() {
                return Err(bad());
            }
        }
        Ok(found)
    }
}

/// The tag of the checkpoint extension line that signs a ledger's labelling parameters.
pub const POLICY_LINE: &str = "memlineage/label-policy@v1";

/// A checkpoint extension line tagged [`POLICY_LINE`] that does not parse, or a second one.
/// Only a holder of the log key can sign one; a ledger that finds it refuses to open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the checkpoint's label-policy line {0:?} is malformed or repeated")]
pub struct SignedPolicyError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    fn w(m: u64) -> Weight {
        Weight::new(m).unwrap()
    }

    #[test]
    fn untrusted_writers_are_external() {
        let p = LabelPolicy::default();
        assert_eq!(p.label(Role::Tool, []), Label::External);
        assert_eq!(
            p.label(Role::External, [(w(0), Label::Trusted)]),
            Label::External
        );
        assert_eq!(p.label(Role::User, []), Label::Trusted);
    }

    /// `w > τ` exactly (`spec/lineage.md` §2): an edge of weight τ is weak. This predicate
    /// feeds the denial path ([`crate::ledger::Ledger::untrusted_path`]) and quarantine reach
    /// `strong`, so `>` must not become `>=`.
    #[test]
    fn is_strong_is_strict_at_tau() {
        for tau in [0, 1, 500_000, 999_999] {
            let p = LabelPolicy {
                tau: w(tau),
                weak_rule: WeakRule::FailClosed,
            };
            assert!(!p.is_strong(w(tau)), "w = τ = {tau} is weak");
            assert!(p.is_strong(w(tau + 1)), "w = τ + 1 is strong");
            if tau > 0 {
                assert!(!p.is_strong(w(tau - 1)), "w = τ - 1 is weak");
            }
        }
        assert!(!LabelPolicy::default().is_strong(LabelPolicy::default().tau));
    }

    #[test]
    fn weight_equal_to_tau_does_not_propagate() {
        let p = LabelPolicy {
            tau: w(500_000),
            weak_rule: WeakRule::FailOpen,
        };
        assert_eq!(
            p.label(Role::Agent, [(w(500_000), Label::External)]),
            Label::Trusted
        );
        assert_eq!(
            p.label(Role::Agent, [(w(500_001), Label::External)]),
            Label::DerivedUntrusted
        );
    }

    #[test]
    fn worst_strong_parent_wins_and_lifts() {
        let p = LabelPolicy::default();
        let parents = [
            (Weight::ONE, Label::Trusted),
            (w(900_000), Label::DerivedUntrusted),
        ];
        assert_eq!(p.label(Role::Agent, parents), Label::DerivedUntrusted);
        assert_eq!(
            p.label(Role::Agent, [(Weight::ONE, Label::Trusted)]),
            Label::DerivedTrusted
        );
        // A strong trusted parent shields nothing: a weak untrusted one is ignored.
        assert_eq!(
            p.label(
                Role::Agent,
                [(Weight::ONE, Label::Trusted), (w(1), Label::External)]
            ),
            Label::DerivedTrusted
        );
    }

    #[test]
    fn fail_closed_uses_all_parents_when_none_is_strong() {
        let closed = LabelPolicy::default();
        let open = LabelPolicy {
            weak_rule: WeakRule::FailOpen,
            ..closed
        };
        let weak = [(w(100_000), Label::External)];
        assert_eq!(closed.label(Role::Agent, weak), Label::DerivedUntrusted);
        assert_eq!(open.label(Role::Agent, weak), Label::Trusted);
    }

    #[test]
    fn names_round_trip() {
        for l in Label::ALL {
            assert_eq!(Label::from_name(l.name()), Some(l));
            assert_eq!(Label::from_code(l.code()), Some(l));
        }
        assert_eq!(
            Label::from_name("derived-untrusted"),
            Some(Label::DerivedUntrusted)
        );
        assert_eq!(Label::from_code(4), None);
    }

    #[test]
    fn the_policy_line_round_trips_and_refuses_what_it_does_not_know() {
        let p = LabelPolicy {
            tau: w(700_000),
            weak_rule: WeakRule::FailOpen,
        };
        let line = p.extension_line();
        assert_eq!(
            line,
            "memlineage/label-policy@v1 tau=700000 rule=fail-open\n"
        );
        assert_eq!(LabelPolicy::from_extension(&line), Ok(Some(p)));
        assert_eq!(LabelPolicy::from_extension("other line\n"), Ok(None));
        assert_eq!(LabelPolicy::from_extension(""), Ok(None));
        for bad in [
            "memlineage/label-policy@v1 tau=0700000 rule=fail-open",
            "memlineage/label-policy@v1 tau=1000001 rule=fail-open",
            "memlineage/label-policy@v1 tau=5 rule=open",
            "memlineage/label-policy@v1 rule=fail-open tau=5",
            "memlineage/label-policy@v1 tau=5 rule=fail-open extra=1",
            "memlineage/label-policy@v1x tau=5 rule=fail-open",
        ] {
            assert!(LabelPolicy::from_extension(bad).is_err(), "{bad}");
        }
        let twice = format!("{line}{line}");
        assert!(LabelPolicy::from_extension(&twice).is_err());
        assert_eq!(
            SignedPolicyError("x".into()).to_string(),
            "the checkpoint's label-policy line \"x\" is malformed or repeated"
        );
    }
}
