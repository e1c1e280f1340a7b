//! The policy (`spec/gate.md` §2): parsing its TOML, what it says of a tool and a
//! parameter, and the label decision of §3 ([`Policy::decide`]).

use super::*;
use serde::Deserialize;

impl Policy {
    /// Parses a TOML policy (`spec/gate.md` §2).
    ///
    /// # Errors
    /// [`PolicyError::Toml`] for bad TOML or unknown keys, [`PolicyError::UnknownLabel`] for an
    /// unknown label name, [`PolicyError::UnknownSetting`] for a value a setting does not take.
    /// Does not panic.
    pub fn from_toml(text: &str) -> Result<Self, PolicyError> {
        let raw: RawPolicy = toml::from_str(text).map_err(PolicyError::Toml)?;
        let label = |s: &str| {
            Label::from_name(s).ok_or_else(|| PolicyError::UnknownLabel {
                label: s.to_string(),
            })
        };
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
                let kind = ValueKind::from_name(&k)
                    .ok_or_else(|| PolicyError::unknown_setting("match", &k))?;
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
                    composed_after_external: t
                        .composed_after_external
                        .as_deref()
                        .map(|s| Composed::from_name("composed_after_external", s))
                        .transpose()?,
                    stated_and_untrusted: t
                        .stated_and_untrusted
                        .as_deref()
                        .map(|s| Composed::from_name("stated_and_untrusted", s))
                        .transpose()?,
                    writes: t.writes,
                },
            );
        }
        Ok(Policy {
            default_max_label: label(&raw.default_max_label)?,
            unsourced: unsourced("unsourced", raw.unsourced.as_deref().unwrap_or("allow"))?,
            repair_unsourced: unsourced(
                "repair_unsourced",
                raw.repair_unsourced.as_deref().unwrap_or("deny"),
            )?,
            sensitive_tools: raw.sensitive_tools.into_iter().collect(),
            tools,
            shared_writable: match raw.shared_writable {
                Some(names) => names.iter().map(|n| principal_stem(n)).collect(),
                None => default_shared_writable(),
            },
            read_weights: match raw.read_weights.as_deref() {
                None | Some("full") => ReadWeights::Full,
                Some("declared") => ReadWeights::Declared,
                Some(other) => return Err(PolicyError::unknown_setting("read_weights", other)),
            },
            secrets: raw
                .secrets
                .map(RawSecrets::into_secrets)
                .transpose()?
                .unwrap_or_default(),
            sinks: raw.sinks.unwrap_or_default(),
            composed_after_external: Composed::from_name(
                "composed_after_external",
                raw.composed_after_external.as_deref().unwrap_or("allow"),
            )?,
            stated_and_untrusted: Composed::from_name(
                "stated_and_untrusted",
                raw.stated_and_untrusted.as_deref().unwrap_or("ask"),
            )?,
            unknown_tools: match raw.unknown_tools.as_deref() {
                None | Some("gate") => UnknownTools::Gate,
                Some("allow") => UnknownTools::Allow,
                Some(other) => return Err(PolicyError::unknown_setting("unknown_tools", other)),
            },
            read_only_tools: raw.read_only_tools.into_iter().collect(),
        })
    }

    /// Whether a key of the policy names `tool`: `sensitive_tools`, a `[tools.*]` table or
    /// `read_only_tools`. A tool no key names is *unknown* (`spec/hooks.md` §15.3).
    pub fn names(&self, tool: &str) -> bool {
        self.sensitive_tools.contains(tool)
            || self.tools.contains_key(tool)
            || self.read_only_tools.contains(tool)
    }

    /// What the fronts do with a composed call of `tool` after External input
    /// (`spec/hooks.md` §15.1): the tool's `composed_after_external`, else the policy's.
    pub fn composed_after_external(&self, tool: &str) -> Composed {
        self.tools
            .get(tool)
            .and_then(|t| t.composed_after_external)
            .unwrap_or(self.composed_after_external)
    }

    /// What the fronts do with a call of `tool` that only a statement of the user lets through
    /// when untrusted input the session read also carries the stated value (`spec/hooks.md`
    /// §4.4): the tool's `stated_and_untrusted`, else the policy's.
    pub fn stated_and_untrusted(&self, tool: &str) -> Composed {
        self.tools
            .get(tool)
            .and_then(|t| t.stated_and_untrusted)
            .unwrap_or(self.stated_and_untrusted)
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

    pub(super) fn strictest() -> Self {
        Policy {
            default_max_label: Label::Trusted,
            unsourced: Unsourced::Deny,
            repair_unsourced: Unsourced::Deny,
            sensitive_tools: BTreeSet::new(),
            tools: BTreeMap::new(),
            shared_writable: default_shared_writable(),
            read_weights: ReadWeights::Full,
            secrets: Secrets::default(),
            sinks: Sinks::default(),
            composed_after_external: Composed::Deny,
            stated_and_untrusted: Composed::Deny,
            unknown_tools: UnknownTools::Gate,
            read_only_tools: BTreeSet::new(),
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
    pub fn decide(&self, call: &ToolCall, view: &impl LineageView) -> LineageDecision {
        if !self.is_sensitive(call) {
            return LineageDecision::Allow;
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
        LineageDecision::Allow
    }

    /// Whether the policy classifies the principal named `writer` as shared-writable
    /// (`spec/gate.md` §3.2): compared by [`principal_stem`].
    pub fn is_shared_writable(&self, writer: &str) -> bool {
        self.shared_writable.contains(&principal_stem(writer))
    }

    pub(super) fn deny(
        &self,
        call: &ToolCall,
        param: &str,
        entry: Option<EntryId>,
        reason: DenyReason,
        path: Vec<EntryId>,
    ) -> LineageDecision {
        LineageDecision::Deny(LineageDenial {
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

fn default_shared_writable() -> BTreeSet<String> {
    DEFAULT_SHARED_WRITABLE
        .iter()
        .map(|s| (*s).to_string())
        .collect()
}

/// The value `s` of the policy key `setting` (`unsourced` or `repair_unsourced`).
fn unsourced(setting: &'static str, s: &str) -> Result<Unsourced, PolicyError> {
    match s {
        "allow" => Ok(Unsourced::Allow),
        "deny" => Ok(Unsourced::Deny),
        other => Err(PolicyError::unknown_setting(setting, other)),
    }
}

impl PolicyError {
    /// [`PolicyError::UnknownSetting`]: `value` is not a value of the policy key `setting`.
    pub(super) fn unknown_setting(setting: &'static str, value: &str) -> Self {
        PolicyError::UnknownSetting {
            setting,
            value: value.to_string(),
        }
    }
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
    shared_writable: Option<Vec<String>>,
    read_weights: Option<String>,
    composed_after_external: Option<String>,
    stated_and_untrusted: Option<String>,
    unknown_tools: Option<String>,
    #[serde(default)]
    read_only_tools: Vec<String>,
    secrets: Option<RawSecrets>,
    sinks: Option<Sinks>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSecrets {
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    public_paths: Vec<String>,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    written_by_others: Vec<String>,
    #[serde(default)]
    environment_commands: Vec<String>,
    #[serde(default)]
    secret_commands: Vec<String>,
    #[serde(default)]
    egress_commands: Vec<String>,
    #[serde(default)]
    local_commands: Vec<String>,
    #[serde(default)]
    egress_tools: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    open_destinations: Vec<String>,
    #[serde(default)]
    open_git_remotes: Vec<String>,
    #[serde(default)]
    endorsed_code: Vec<String>,
}

impl RawSecrets {
    fn into_secrets(self) -> Result<Secrets, PolicyError> {
        let endorsed_code = self
            .endorsed_code
            .iter()
            .map(|e| {
                e.strip_prefix("sha256:")
                    .filter(|h| h.len() == 64)
                    .and_then(|h| hex::decode(h).ok())
                    .and_then(|d| <[u8; 32]>::try_from(d).ok())
                    .ok_or_else(|| PolicyError::unknown_setting("secrets.endorsed_code", e))
            })
            .collect::<Result<_, _>>()?;
        Ok(Secrets {
            paths: self.paths,
            public_paths: self.public_paths,
            tools: self.tools.iter().map(|t| principal_stem(t)).collect(),
            written_by_others: self
                .written_by_others
                .iter()
                .map(|t| principal_stem(t))
                .collect(),
            environment_commands: self.environment_commands,
            secret_commands: self.secret_commands,
            egress_commands: self.egress_commands,
            local_commands: self.local_commands,
            egress_tools: self.egress_tools,
            open_destinations: self
                .open_destinations
                .iter()
                .map(|d| d.to_lowercase())
                .collect(),
            open_git_remotes: self.open_git_remotes,
            endorsed_code,
        })
    }
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
    composed_after_external: Option<String>,
    stated_and_untrusted: Option<String>,
    writes: Option<String>,
}
