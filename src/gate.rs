//! M6: the gate in front of sensitive tool calls (`spec/gate.md`).
//!
//! A [`Policy`] names the sensitive tools (sinks) and, per parameter, the worst label allowed to
//! justify it. A [`ToolCall`] comes with, for each argument, the entries that justify it. The
//! decision is [`Decision::Allow`], or [`Decision::Deny`] naming the parameter, the offending
//! entry and the lineage path back to the untrusted source. Policy is input, not code.

use crate::lineage::Label;
use crate::record::EntryId;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// The default policy, as TOML (also shipped as `examples/policy.toml`).
pub const DEFAULT_POLICY_TOML: &str = include_str!("../examples/policy.toml");

/// The coding-agent policy (`spec/hooks.md` §10), as TOML (shipped as
/// `examples/coding-policy.toml`): the hooks' default, and what `hook install` writes.
pub const CODING_POLICY_TOML: &str = include_str!("../examples/coding-policy.toml");

/// What the gate needs to know about entries. [`crate::Ledger`] implements it from the log;
/// other views (e.g. the signatures-only baseline of the replay) can be plugged in.
pub trait LineageView {
    /// The entry's label, `None` if the entry is not in the log.
    fn label_of(&self, id: &EntryId) -> Option<Label>;
    /// Whether the entry has been tombstoned.
    fn tombstoned(&self, id: &EntryId) -> bool;
    /// The lineage path from `id` back to its untrusted source (first element `id`'s source,
    /// last `id`); empty if unknown or not untrusted.
    fn path_to_source(&self, id: &EntryId) -> Vec<EntryId>;
    /// Whether the entry is quarantined (`spec/forensics.md` §2); views without forensic
    /// state say no.
    fn quarantined(&self, _id: &EntryId) -> bool {
        false
    }
    /// The name of the principal that wrote the entry, if the view knows it (authority repair
    /// checks it against the policy's authoritative principals).
    fn principal_of(&self, _id: &EntryId) -> Option<String> {
        None
    }
}

/// A gate policy (`spec/gate.md` §2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Worst label allowed for any parameter of a sensitive tool the policy does not detail.
    pub default_max_label: Label,
    /// What to do with an argument that has no justifying entry.
    pub unsourced: Unsourced,
    /// Authority repair (`spec/forensics.md` §7): whether a call allowed only after repair may
    /// still carry unsourced arguments. Default [`Unsourced::Deny`].
    pub repair_unsourced: Unsourced,
    /// Tools that are sensitive sinks. A call the runtime itself marks sensitive is gated too.
    pub sensitive_tools: BTreeSet<String>,
    /// Per-tool rules.
    pub tools: BTreeMap<String, ToolRule>,
}

/// The rule for one sensitive tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolRule {
    /// Worst label allowed for parameters not named in `params` (default: the policy default).
    pub max_label: Option<Label>,
    /// Worst label allowed per parameter.
    pub params: BTreeMap<String, Label>,
    /// Per parameter, principals whose entries authority repair may take the parameter's value
    /// from whatever their label (e.g. a contacts list for `recipient`); `spec/forensics.md` §7.
    pub authoritative: BTreeMap<String, BTreeSet<String>>,
    /// Per parameter, how its value is turned into the values that are matched against what
    /// was read (`spec/hooks.md` §4.5); parameters not named are matched whole.
    pub matching: BTreeMap<String, ValueKind>,
    /// Per parameter, path patterns: when not empty, the tool is sensitive only for a call
    /// where one of these parameters names a path matching one of its patterns
    /// (`spec/hooks.md` §10.2).
    pub when: BTreeMap<String, Vec<String>>,
    /// Command prefixes (words, e.g. `git push`) whose whole segment of a command string is
    /// matched too (`spec/hooks.md` §4.5, rule 6).
    pub guarded_commands: Vec<String>,
}

/// How a parameter's value is matched (`spec/hooks.md` §4.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ValueKind {
    /// The value itself (§4).
    #[default]
    Value,
    /// A shell command: its specific tokens (URLs, hosts, e-mail addresses, paths outside
    /// the project, long tokens, guarded segments).
    Command,
    /// Free text written to a file: the specific tokens of its words.
    Text,
    /// A URL: the URL and its host.
    Url,
    /// A Codex `apply_patch` patch: the specific tokens of its added lines; its paths for
    /// `when`.
    Patch,
}

impl ValueKind {
    fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "value" => ValueKind::Value,
            "command" => ValueKind::Command,
            "text" => ValueKind::Text,
            "url" => ValueKind::Url,
            "patch" => ValueKind::Patch,
            _ => return None,
        })
    }
}

/// What to do with an argument no recorded entry justifies (a value the agent composed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsourced {
    /// Allow it: nothing untrusted is known to have produced it.
    Allow,
    /// Deny the call.
    Deny,
}

/// A proposed tool call with the justification of each argument.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCall {
    /// The tool's name.
    pub tool: String,
    /// Whether the runtime marks this call sensitive (gated even if the policy does not list it).
    pub sensitive: bool,
    /// `(parameter name, entries that justify its value)`, in the caller's order.
    pub args: Vec<(String, Vec<EntryId>)>,
}

/// The gate's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The call may proceed.
    Allow,
    /// The call is refused.
    Deny(Denial),
}

impl Decision {
    /// Whether this is [`Decision::Allow`].
    pub fn is_allow(&self) -> bool {
        matches!(self, Decision::Allow)
    }
}

/// Why a call was refused: the first offending parameter in argument order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// The tool.
    pub tool: String,
    /// The parameter whose justification failed.
    pub param: String,
    /// The offending entry (`None` for an unsourced argument).
    pub entry: Option<EntryId>,
    /// What is wrong with it.
    pub reason: DenyReason,
    /// The lineage path from the untrusted source to `entry` (source first).
    pub path: Vec<EntryId>,
}

/// The class of a denial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DenyReason {
    /// The entry's label is worse than the parameter allows.
    Untrusted {
        /// The entry's label.
        label: Label,
        /// The worst label the parameter allows.
        max: Label,
    },
    /// The entry is not in the log (fail closed).
    UnknownEntry,
    /// The entry was deleted by a tombstone.
    Tombstoned,
    /// The entry is quarantined: a flagged source reaches it (`spec/forensics.md` §2).
    Quarantined,
    /// No entry justifies the argument and the policy denies unsourced arguments.
    Unsourced,
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "deny {}: parameter `{}`", self.tool, self.param)?;
        if let Some(e) = &self.entry {
            write!(f, " justified by entry {}", e.short())?;
        }
        match self.reason {
            DenyReason::Untrusted { label, max } => {
                write!(f, " labelled {label}, worse than {max}")?
            }
            DenyReason::UnknownEntry => write!(f, " which is not in the log")?,
            DenyReason::Tombstoned => write!(f, " which was deleted")?,
            DenyReason::Quarantined => write!(f, " which is quarantined")?,
            DenyReason::Unsourced => write!(f, ": no recorded entry justifies it")?,
        }
        if self.path.len() > 1 {
            let hops: Vec<String> = self.path.iter().map(EntryId::short).collect();
            write!(f, "; lineage {}", hops.join(" -> "))?;
        }
        Ok(())
    }
}

impl Policy {
    /// Parses a TOML policy (`spec/gate.md` §2).
    ///
    /// # Errors
    /// [`PolicyError`] for bad TOML, unknown keys, or unknown label names. Does not panic.
    pub fn from_toml(text: &str) -> Result<Self, PolicyError> {
        let raw: RawPolicy = toml::from_str(text).map_err(|e| PolicyError::Toml(e.to_string()))?;
        let label =
            |s: &str| Label::from_name(s).ok_or_else(|| PolicyError::UnknownLabel(s.to_string()));
        let mut tools = BTreeMap::new();
        for (name, t) in raw.tools {
            let mut params = BTreeMap::new();
            for (p, l) in t.params {
                params.insert(p, label(&l)?);
            }
            let max_label = t.max_label.as_deref().map(label).transpose()?;
            let authoritative = t
                .authoritative
                .into_iter()
                .map(|(p, names)| (p, names.into_iter().collect()))
                .collect();
            let mut matching = BTreeMap::new();
            for (p, k) in t.matching {
                let kind = ValueKind::from_name(&k).ok_or(PolicyError::UnknownLabel(k))?;
                matching.insert(p, kind);
            }
            tools.insert(
                name,
                ToolRule {
                    max_label,
                    params,
                    authoritative,
                    matching,
                    when: t.when,
                    guarded_commands: t.guarded_commands,
                },
            );
        }
        Ok(Policy {
            default_max_label: label(&raw.default_max_label)?,
            unsourced: unsourced(raw.unsourced.as_deref().unwrap_or("allow"))?,
            repair_unsourced: unsourced(raw.repair_unsourced.as_deref().unwrap_or("deny"))?,
            sensitive_tools: raw.sensitive_tools.into_iter().collect(),
            tools,
        })
    }

    /// Whether `call` is gated: the runtime marks it sensitive, or the policy names the tool.
    pub fn is_sensitive(&self, call: &ToolCall) -> bool {
        call.sensitive
            || self.sensitive_tools.contains(&call.tool)
            || self.tools.contains_key(&call.tool)
    }

    /// The worst label allowed to justify `param` of `tool`.
    pub fn max_label(&self, tool: &str, param: &str) -> Label {
        match self.tools.get(tool) {
            Some(rule) => rule
                .params
                .get(param)
                .copied()
                .or(rule.max_label)
                .unwrap_or(self.default_max_label),
            None => self.default_max_label,
        }
    }

    /// How `param` of `tool` is matched (`spec/hooks.md` §4.5).
    pub fn value_kind(&self, tool: &str, param: &str) -> ValueKind {
        self.tools
            .get(tool)
            .and_then(|t| t.matching.get(param))
            .copied()
            .unwrap_or_default()
    }

    /// The coding-agent policy in [`CODING_POLICY_TOML`] (the most restrictive policy if it
    /// were ever broken; a unit test checks it parses).
    pub fn coding() -> Self {
        Policy::from_toml(CODING_POLICY_TOML).unwrap_or_else(|_| Policy::strictest())
    }

    fn strictest() -> Self {
        Policy {
            default_max_label: Label::Trusted,
            unsourced: Unsourced::Deny,
            repair_unsourced: Unsourced::Deny,
            sensitive_tools: BTreeSet::new(),
            tools: BTreeMap::new(),
        }
    }

    /// Whether the policy names `principal` as an authoritative source of `param` of `tool`
    /// for authority repair (`spec/forensics.md` §7).
    pub fn is_authoritative(&self, tool: &str, param: &str, principal: &str) -> bool {
        self.tools
            .get(tool)
            .and_then(|t| t.authoritative.get(param))
            .is_some_and(|names| names.contains(principal))
    }

    /// Decides `call` (`spec/gate.md` §3): a call that is not sensitive is allowed; otherwise
    /// every justifying entry of every argument must be in the log, not tombstoned, and labelled
    /// no worse than its parameter allows. The first failure, in argument order, is reported.
    /// O(total justifying entries) label lookups; the lineage path is computed only on denial.
    pub fn decide(&self, call: &ToolCall, view: &impl LineageView) -> Decision {
        if !self.is_sensitive(call) {
            return Decision::Allow;
        }
        for (param, entries) in &call.args {
            let max = self.max_label(&call.tool, param);
            if entries.is_empty() && self.unsourced == Unsourced::Deny {
                return self.deny(call, param, None, DenyReason::Unsourced, Vec::new());
            }
            for id in entries {
                let reason = match view.label_of(id) {
                    None => DenyReason::UnknownEntry,
                    Some(_) if view.tombstoned(id) => DenyReason::Tombstoned,
                    Some(_) if view.quarantined(id) => DenyReason::Quarantined,
                    Some(label) if label > max => DenyReason::Untrusted { label, max },
                    Some(_) => continue,
                };
                let path = match reason {
                    DenyReason::Untrusted { .. } => view.path_to_source(id),
                    _ => Vec::new(),
                };
                return self.deny(call, param, Some(*id), reason, path);
            }
        }
        Decision::Allow
    }

    fn deny(
        &self,
        call: &ToolCall,
        param: &str,
        entry: Option<EntryId>,
        reason: DenyReason,
        path: Vec<EntryId>,
    ) -> Decision {
        Decision::Deny(Denial {
            tool: call.tool.clone(),
            param: param.to_string(),
            entry,
            reason,
            path,
        })
    }
}

impl Default for Policy {
    /// The policy in [`DEFAULT_POLICY_TOML`].
    fn default() -> Self {
        // The bundled file is checked by a unit test; fall back to the most restrictive
        // policy rather than panic if it were ever broken.
        Policy::from_toml(DEFAULT_POLICY_TOML).unwrap_or_else(|_| Policy::strictest())
    }
}

fn unsourced(s: &str) -> Result<Unsourced, PolicyError> {
    match s {
        "allow" => Ok(Unsourced::Allow),
        "deny" => Ok(Unsourced::Deny),
        other => Err(PolicyError::UnknownLabel(other.to_string())),
    }
}

/// The tracing span of one gate decision, with OpenTelemetry GenAI attribute names
/// (`gen_ai.operation.name = execute_tool`, `gen_ai.tool.name`; semantic conventions
/// <https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/>) and `memlineage.*` for
/// the decision, the untrusted source (`tainted_by`) and the offending label.
pub fn span(call: &ToolCall) -> tracing::Span {
    tracing::info_span!(
        "memlineage.gate",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.tool,
        memlineage.decision = tracing::field::Empty,
        memlineage.tainted_by = tracing::field::Empty,
        memlineage.label = tracing::field::Empty,
    )
}

/// Records `decision` on a span made by [`span`] and returns it.
pub fn record(span: &tracing::Span, decision: Decision) -> Decision {
    match &decision {
        Decision::Allow => span.record("memlineage.decision", "allow"),
        Decision::Deny(d) => {
            if let Some(src) = d.path.first() {
                span.record("memlineage.tainted_by", src.to_string());
            }
            if let DenyReason::Untrusted { label, .. } = d.reason {
                span.record("memlineage.label", label.name());
            }
            span.record("memlineage.decision", "deny")
        }
    };
    decision
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    default_max_label: String,
    unsourced: Option<String>,
    repair_unsourced: Option<String>,
    #[serde(default)]
    sensitive_tools: Vec<String>,
    #[serde(default)]
    tools: BTreeMap<String, RawTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    max_label: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, String>,
    #[serde(default)]
    authoritative: BTreeMap<String, Vec<String>>,
    #[serde(default, rename = "match")]
    matching: BTreeMap<String, String>,
    #[serde(default)]
    when: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    guarded_commands: Vec<String>,
}

/// A policy file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// Not valid TOML for the policy schema (unknown keys are rejected).
    #[error("policy: {0}")]
    Toml(String),
    /// A label or setting name that does not exist.
    #[error("policy: unknown label or setting `{0}`")]
    UnknownLabel(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct View(HashMap<EntryId, Label>, BTreeSet<EntryId>);

    impl LineageView for View {
        fn label_of(&self, id: &EntryId) -> Option<Label> {
            self.0.get(id).copied()
        }
        fn tombstoned(&self, id: &EntryId) -> bool {
            self.1.contains(id)
        }
        fn path_to_source(&self, id: &EntryId) -> Vec<EntryId> {
            vec![EntryId([9; 32]), *id]
        }
    }

    fn id(b: u8) -> EntryId {
        EntryId([b; 32])
    }

    fn view() -> View {
        let labels = HashMap::from([
            (id(1), Label::Trusted),
            (id(2), Label::DerivedTrusted),
            (id(3), Label::DerivedUntrusted),
            (id(4), Label::External),
        ]);
        View(labels, BTreeSet::from([id(2)]))
    }

    fn call(tool: &str, args: &[(&str, &[u8])]) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            sensitive: false,
            args: args
                .iter()
                .map(|(n, ids)| (n.to_string(), ids.iter().map(|b| id(*b)).collect()))
                .collect(),
        }
    }

    #[test]
    fn default_policy_parses_and_lists_agentdojo_sinks() {
        let p = Policy::from_toml(DEFAULT_POLICY_TOML).unwrap();
        assert_eq!(p, Policy::default());
        assert!(p.sensitive_tools.contains("send_money"));
        assert!(p.sensitive_tools.contains("reserve_hotel"));
        assert_eq!(p.default_max_label, Label::DerivedTrusted);
    }

    #[test]
    fn coding_policy_parses_and_gates_shell_writes_and_sinks() {
        let p = Policy::from_toml(CODING_POLICY_TOML).unwrap();
        assert_eq!(p, Policy::coding());
        assert_eq!(p.value_kind("Bash", "command"), ValueKind::Command);
        assert_eq!(p.value_kind("WebFetch", "url"), ValueKind::Url);
        assert_eq!(p.value_kind("apply_patch", "command"), ValueKind::Patch);
        assert_eq!(p.value_kind("Bash", "description"), ValueKind::Value);
        assert!(p.tools["Write"].when["file_path"].contains(&".github/workflows/**".into()));
        assert!(p.tools["Bash"]
            .guarded_commands
            .contains(&"git push".into()));
        assert!(p.sensitive_tools.contains("send_money"));
        assert!(
            Policy::from_toml("default_max_label = \"trusted\"\n[tools.X.match]\na = \"b\"")
                .is_err()
        );
    }

    #[test]
    fn decides_by_label_tombstone_and_unknown() {
        let p = Policy::default();
        let v = view();
        assert_eq!(
            p.decide(&call("send_money", &[("recipient", &[1])]), &v),
            Decision::Allow
        );
        let Decision::Deny(d) = p.decide(
            &call("send_money", &[("amount", &[1]), ("recipient", &[1, 3])]),
            &v,
        ) else {
            panic!("must deny")
        };
        assert_eq!(d.param, "recipient");
        assert_eq!(d.entry, Some(id(3)));
        assert_eq!(
            d.reason,
            DenyReason::Untrusted {
                label: Label::DerivedUntrusted,
                max: Label::DerivedTrusted
            }
        );
        assert_eq!(d.path, vec![id(9), id(3)]);
        let Decision::Deny(d) = p.decide(&call("send_money", &[("x", &[2])]), &v) else {
            panic!()
        };
        assert_eq!(d.reason, DenyReason::Tombstoned);
        let Decision::Deny(d) = p.decide(&call("send_money", &[("x", &[7])]), &v) else {
            panic!()
        };
        assert_eq!(d.reason, DenyReason::UnknownEntry);
        // Not sensitive: allowed whatever its justification.
        assert!(p.decide(&call("read_file", &[("x", &[4])]), &v).is_allow());
        // Marked sensitive by the runtime: gated by the default rule.
        let mut c = call("never_heard_of_it", &[("x", &[4])]);
        c.sensitive = true;
        assert!(!p.decide(&c, &v).is_allow());
    }

    #[test]
    fn per_parameter_rules_and_unsourced() {
        let p = Policy::from_toml(
            r#"
            default_max_label = "trusted"
            unsourced = "deny"
            [tools.pay]
            max_label = "external"
            [tools.pay.params]
            iban = "derived_trusted"
            "#,
        )
        .unwrap();
        let v = view();
        assert!(p
            .decide(&call("pay", &[("memo", &[4]), ("iban", &[2 - 1])]), &v)
            .is_allow());
        assert!(!p.decide(&call("pay", &[("iban", &[3])]), &v).is_allow());
        let Decision::Deny(d) = p.decide(&call("pay", &[("iban", &[])]), &v) else {
            panic!()
        };
        assert_eq!(d.reason, DenyReason::Unsourced);
        assert_eq!(p.max_label("other", "x"), Label::Trusted);
    }

    #[test]
    fn bad_policies_are_typed_errors() {
        assert!(matches!(
            Policy::from_toml("default_max_label = \"meh\""),
            Err(PolicyError::UnknownLabel(_))
        ));
        assert!(matches!(
            Policy::from_toml("nope = 1"),
            Err(PolicyError::Toml(_))
        ));
        assert!(matches!(
            Policy::from_toml("default_max_label = \"trusted\"\nunsourced = \"maybe\""),
            Err(PolicyError::UnknownLabel(_))
        ));
    }

    #[test]
    fn denial_reads_as_a_sentence() {
        let Decision::Deny(d) =
            Policy::default().decide(&call("send_money", &[("recipient", &[4])]), &view())
        else {
            panic!()
        };
        let text = d.to_string();
        assert!(text.starts_with("deny send_money: parameter `recipient` justified by entry 04040404 labelled EXTERNAL"), "{text}");
        assert!(text.contains("lineage 09090909 -> 04040404"), "{text}");
    }
}
