//! M6: the gate in front of sensitive tool calls (`spec/gate.md`).
//!
//! A [`Policy`] names the sensitive tools (sinks) and, per parameter, the worst label allowed to
//! justify it. A [`ToolCall`] comes with, for each argument, the entries that justify it. The
//! decision is [`Decision::Allow`], or [`Decision::Deny`] naming the parameter, the offending
//! entry and the lineage path back to the untrusted source. Policy is input, not code.

use crate::front::matching::Haystack;
use crate::lineage::Label;
use crate::record::{EntryId, Role};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

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
    /// The role of the principal that wrote the entry, if the view knows it (authority repair
    /// takes a value from a labelled entry only when the user stated it, `spec/forensics.md`
    /// §7). Views that do not know roles say `None`: nothing is a statement there.
    fn role_of(&self, _id: &EntryId) -> Option<Role> {
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
    /// Principals whose output other people can write (calendar, e-mail, messaging, shared
    /// documents, web): their entries count as External for the origin check whatever their
    /// role (`spec/gate.md` §3.2). Names are compared after [`principal_stem`]. Default
    /// [`DEFAULT_SHARED_WRITABLE`]; a policy's `shared_writable` key replaces it.
    pub shared_writable: BTreeSet<String>,
    /// Whether a weight the agent declares for a parent can lower the edge to an entry its
    /// session read (`spec/lineage.md` §4.2). Default [`ReadWeights::Full`].
    pub read_weights: ReadWeights,
    /// What the fronts do with a sensitive call whose arguments the agent composed in a
    /// session that read External input (`spec/hooks.md` §15); a tool's
    /// [`ToolRule::composed_after_external`] overrides it. Default [`Composed::Allow`].
    pub composed_after_external: Composed,
    /// What the fronts do with a sensitive call the gate allows only because the user stated
    /// one of its values in the session, when untrusted input the session read carries that
    /// value too (the statement may quote the input: "a mail asks me to wire 500 to X — is it
    /// a scam?"; `spec/hooks.md` §4.4); a tool's [`ToolRule::stated_and_untrusted`] overrides
    /// it. The same three answers as [`Composed`]. Default [`Composed::Ask`].
    pub stated_and_untrusted: Composed,
    /// Whether the fronts gate a tool the policy does not name (`spec/hooks.md` §15.3).
    /// Default [`UnknownTools::Gate`].
    pub unknown_tools: UnknownTools,
    /// Tools the policy classifies as read-only: never gated, also when `unknown_tools` is
    /// [`UnknownTools::Gate`].
    pub read_only_tools: BTreeSet<String>,
    /// Where secrets come from and where they may go (`spec/hooks.md` §16; policy table
    /// `[secrets]`). Default: empty, no secrecy rule.
    pub secrets: Secrets,
    /// Calls that install packages and files whose writes are gated (`spec/hooks.md` §17;
    /// policy table `[sinks]`). Default: empty.
    pub sinks: Sinks,
}

/// What the fronts do with a sensitive call that passed the gate but whose arguments the agent
/// composed (no value matched anything the session read) after the session read External
/// input (policy key `composed_after_external`, `spec/hooks.md` §15).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Composed {
    /// `"allow"` (the default): value provenance alone decides.
    #[default]
    Allow,
    /// `"ask"`: the user decides, where the front can ask; elsewhere the call is denied.
    Ask,
    /// `"deny"`: the call is refused.
    Deny,
}

impl Composed {
    fn from_name(s: &str) -> Result<Self, PolicyError> {
        match s {
            "allow" => Ok(Composed::Allow),
            "ask" => Ok(Composed::Ask),
            "deny" => Ok(Composed::Deny),
            other => Err(PolicyError::UnknownLabel(other.to_string())),
        }
    }
}

/// Whether the fronts gate a tool that no key of the policy names (policy key
/// `unknown_tools`, `spec/hooks.md` §15.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnknownTools {
    /// `"gate"` (the default, fail closed): every argument of an unknown tool is gated as a
    /// sensitive tool's with the policy's defaults.
    #[default]
    Gate,
    /// `"allow"`: an unknown tool is not gated (memlineage 0.1's behaviour).
    Allow,
}

/// The secrecy rule's settings (`spec/hooks.md` §16): which reads produce secret data and
/// which calls send data off the machine. Path patterns are globs over absolute paths: `~/`
/// is the home directory, a pattern without a leading `/` or `~/` matches at any depth, `*`
/// and `?` stand for characters other than `/`, `**` for any characters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Secrets {
    /// Files whose contents are secret (`~/.aws/**`, `.env`, `*.pem`).
    pub paths: Vec<String>,
    /// Exceptions to `paths` (`.env.example`, `*.pub`).
    pub public_paths: Vec<String>,
    /// Tools whose results are secret (compared after [`principal_stem`]).
    pub tools: BTreeSet<String>,
    /// Secret tools whose results others than the user can write (an inbox, a channel):
    /// their results are untrusted input as well as secret (`spec/hooks.md` §16.6).
    pub written_by_others: BTreeSet<String>,
    /// Commands that print the environment (`env`, `printenv`): their output is secret.
    pub environment_commands: Vec<String>,
    /// Command prefixes (words) that send data off the machine (`curl`, `git push`).
    pub egress_commands: Vec<String>,
    /// Per tool that sends data off the machine, the parameters naming where to
    /// (`WebFetch` → `url`); an empty list: the destination is unknown.
    pub egress_tools: BTreeMap<String, Vec<String>>,
    /// Hosts secrets may go to (a host, or `.domain` for it and its subdomains).
    pub open_destinations: Vec<String>,
    /// Git remotes secrets may be pushed to (`origin`).
    pub open_git_remotes: Vec<String>,
}

impl Secrets {
    /// Whether the policy has a secrecy rule at all.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.tools.is_empty() && self.environment_commands.is_empty()
    }
}

/// The code sinks a front recognises beyond value provenance (`spec/hooks.md` §17; policy
/// table `[sinks]`): commands that install packages by name, and files whose writes — by any
/// route: a file tool, a patch, a shell redirection, `tee`, `sed -i`, `cp`, an interpreter —
/// are gated because a tool runs them or an agent loads them into later sessions. Path
/// patterns are globs as in [`Secrets`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Sinks {
    /// Command prefixes (words; options between them skipped) that install the packages their
    /// other arguments name (`pip install`, `npm install`, `cargo add`).
    pub install_commands: Vec<String>,
    /// Command prefixes that fetch one package, named by their first argument, and run it
    /// (`npx`, `uvx`, `pipx run`).
    pub run_package_commands: Vec<String>,
    /// Files whose writes are gated (CI workflows, git hooks, `Makefile`, `conftest.py`,
    /// editor tasks, `CLAUDE.md`…).
    pub write_paths: Vec<String>,
    /// Instruction files an agent loads into every session (`CLAUDE.md`): the files they
    /// import (`@path`, followed up to 5 hops) are gated too. Plain names are looked for in
    /// the working directory, its ancestors and the written file's ancestors; `~/…` under the
    /// home directory.
    pub instruction_files: Vec<String>,
}

impl Sinks {
    /// Whether the policy names no sink.
    pub fn is_empty(&self) -> bool {
        self.install_commands.is_empty()
            && self.run_package_commands.is_empty()
            && self.write_paths.is_empty()
            && self.instruction_files.is_empty()
    }
}

/// How a front weighs the edges from an agent write to what its session read
/// (`spec/lineage.md` §4.2; policy key `read_weights`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadWeights {
    /// `"full"` (the default): every read is a parent at weight 1.0, whatever the caller
    /// declares; declared weights apply only to parents the session did not read.
    #[default]
    Full,
    /// `"declared"`: a weight the caller declares for a read not yet folded into the
    /// session's context entry replaces 1.0 on that write (an attribution judge's weights);
    /// reads it does not name stay at 1.0. Under the fail-closed rule a low weight then
    /// removes a read's label only beside a strong parent (`spec/lineage.md` §4.1).
    Declared,
}

/// The principals classified shared-writable when a policy has no `shared_writable` key
/// (`spec/gate.md` §3.2): tools whose output other people can write. Compared with
/// [`principal_stem`] of the writer's name.
pub const DEFAULT_SHARED_WRITABLE: &[&str] = &[
    "browser",
    "calendar",
    "chat",
    "docs",
    "documents",
    "drive",
    "e-mail",
    "email",
    "files",
    "inbox",
    "mail",
    "messages",
    "messaging",
    "shared_documents",
    "slack",
    "sms",
    "web",
    "webpage",
];

/// The name a principal is classified by (`spec/gate.md` §3.2): `name` lower-cased, without a
/// `tool:` prefix and without an MCP `mcp__<server>__` prefix (`tool:mcp__g__Calendar` →
/// `calendar`).
pub fn principal_stem(name: &str) -> String {
    let bare = name.strip_prefix("tool:").unwrap_or(name);
    let bare = bare
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
        .map_or(bare, |(_, tool)| tool);
    bare.to_lowercase()
}

/// What the origin check (`spec/gate.md` §3.1) reads of one entry, verified by the view.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OriginNode {
    /// The entry's label; `None` when it is not in the log.
    pub label: Option<Label>,
    /// The role and name of its writer, when the entry's bytes verified (signature, id) and
    /// the writer is bound; `None` otherwise (the entry then counts as External).
    pub writer: Option<(Role, String)>,
    /// Its content, checked against the signed content hash; `None` when redacted or
    /// unreadable (the entry then counts as containing every value).
    pub text: Option<String>,
    /// Every recorded parent, weak edges included; empty when the entry could not be read.
    pub parents: Vec<EntryId>,
    /// Not tombstoned and not quarantined.
    pub live: bool,
}

/// A lineage view that can also show an entry's verified text, writer and every recorded edge,
/// for the origin check (`spec/gate.md` §3.1). [`crate::Ledger`] implements it.
pub trait OriginView: LineageView {
    /// The entry `id` as the origin check sees it. Must not fail: what cannot be read or
    /// verified is reported as absent (`writer`/`text` `None`), which the check treats as the
    /// worst case.
    fn origin_node(&self, id: &EntryId) -> OriginNode;
}

/// Shortest normalised form of a string value the origin check also looks for (after removing
/// everything but letters and digits and upper-casing): identifiers such as IBANs are
/// rewritten with other spacing or case. Shorter values are matched exactly only.
pub const MIN_NORMALISED_CHARS: usize = 8;

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
    /// Overrides the policy's [`Policy::composed_after_external`] for this tool.
    pub composed_after_external: Option<Composed>,
    /// Overrides the policy's [`Policy::stated_and_untrusted`] for this tool.
    pub stated_and_untrusted: Option<Composed>,
    /// The parameter naming the file a call writes (for a [`ValueKind::Patch`] parameter: the
    /// files of the patch). A tool with it is gated, besides `when`, for a call that writes
    /// one of [`Sinks::write_paths`] or a file an instruction file imports
    /// (`spec/hooks.md` §17.3).
    pub writes: Option<String>,
}

/// How a parameter's value is matched (`spec/hooks.md` §4.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
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
    /// Not a value the call acts on (a description shown to the user, a timeout): never
    /// matched, so it can neither source nor leave unsourced a call (`spec/hooks.md` §15.1).
    None,
}

impl ValueKind {
    fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "value" => ValueKind::Value,
            "command" => ValueKind::Command,
            "text" => ValueKind::Text,
            "url" => ValueKind::Url,
            "patch" => ValueKind::Patch,
            "none" => ValueKind::None,
            _ => return None,
        })
    }
}

/// What to do with an argument no recorded entry justifies (a value the agent composed).
///
/// Exhaustive: a policy's two answers for a composed value; a new one must be handled where
/// the gate decides, not fall into a wildcard arm.
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
///
/// Exhaustive: a caller must handle both answers; a new one must break its build rather than
/// fall into a wildcard arm that might allow.
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
    /// The lineage path from the untrusted source to `entry` (source first). For
    /// [`DenyReason::UntrustedOrigin`], from the untrusted ancestor holding the value to
    /// `entry`, over every recorded edge.
    pub path: Vec<EntryId>,
}

/// The class of a denial.
///
/// Exhaustive: every refusal is explained to the agent and the operator; a new class must be
/// handled by each caller that explains it, not fall into a wildcard arm.
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
    /// The argument's value is held by an untrusted entry in the justification's ancestry
    /// (the first of `path`) and no principal with authority for the parameter states it
    /// (`spec/gate.md` §3.1), whatever the weights.
    UntrustedOrigin {
        /// The ancestor's label as the origin check counts it (External for a shared-writable
        /// writer or an entry that cannot be verified).
        label: Label,
    },
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Tool and parameter names are the caller's: quoted so that no name can read as more
        // of the sentence (`crate::quote`, spec/gate.md §5).
        write!(
            f,
            "deny {}: parameter {}",
            crate::quote::word(&self.tool),
            crate::quote::name(&self.param)
        )?;
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
            DenyReason::UntrustedOrigin { label } => match self.path.first() {
                Some(o) => write!(
                    f,
                    " whose value comes from entry {} labelled {label}, which no authority \
                     for it states",
                    o.short()
                )?,
                None => write!(f, " whose value comes from an untrusted entry")?,
            },
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
                    composed_after_external: t
                        .composed_after_external
                        .as_deref()
                        .map(Composed::from_name)
                        .transpose()?,
                    stated_and_untrusted: t
                        .stated_and_untrusted
                        .as_deref()
                        .map(Composed::from_name)
                        .transpose()?,
                    writes: t.writes,
                },
            );
        }
        Ok(Policy {
            default_max_label: label(&raw.default_max_label)?,
            unsourced: unsourced(raw.unsourced.as_deref().unwrap_or("allow"))?,
            repair_unsourced: unsourced(raw.repair_unsourced.as_deref().unwrap_or("deny"))?,
            sensitive_tools: raw.sensitive_tools.into_iter().collect(),
            tools,
            shared_writable: match raw.shared_writable {
                Some(names) => names.iter().map(|n| principal_stem(n)).collect(),
                None => default_shared_writable(),
            },
            read_weights: match raw.read_weights.as_deref() {
                None | Some("full") => ReadWeights::Full,
                Some("declared") => ReadWeights::Declared,
                Some(other) => return Err(PolicyError::UnknownLabel(other.to_string())),
            },
            secrets: raw
                .secrets
                .map(RawSecrets::into_secrets)
                .unwrap_or_default(),
            sinks: raw.sinks.unwrap_or_default(),
            composed_after_external: Composed::from_name(
                raw.composed_after_external.as_deref().unwrap_or("allow"),
            )?,
            stated_and_untrusted: Composed::from_name(
                raw.stated_and_untrusted.as_deref().unwrap_or("ask"),
            )?,
            unknown_tools: match raw.unknown_tools.as_deref() {
                None | Some("gate") => UnknownTools::Gate,
                Some("allow") => UnknownTools::Allow,
                Some(other) => return Err(PolicyError::UnknownLabel(other.to_string())),
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

    fn strictest() -> Self {
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

    /// Whether the policy classifies the principal named `writer` as shared-writable
    /// (`spec/gate.md` §3.2): compared by [`principal_stem`].
    pub fn is_shared_writable(&self, writer: &str) -> bool {
        self.shared_writable.contains(&principal_stem(writer))
    }

    /// The full gate (`spec/gate.md` §3): the label decision of [`Policy::decide`], then, for
    /// each argument in order, the origin check of §3.1 on its value in `values` (an argument
    /// absent from `values` gets only the writer check of §3.2 on its justifying entries).
    /// Denies with [`DenyReason::UntrustedOrigin`] when an entry in the justification's
    /// ancestry over every recorded edge holds the value and is labelled worse than the
    /// parameter allows (External for a shared-writable writer or an entry that cannot be
    /// verified), unless an entry by a principal with authority for the parameter (the user,
    /// or one [`Policy::is_authoritative`] names) holds it too. Weights play no part.
    ///
    /// Cost: one [`OriginView::origin_node`] per distinct entry in the ancestry of the
    /// justifying entries, plus a text search of each per argument.
    pub fn decide_with_origin(
        &self,
        call: &ToolCall,
        values: &Map<String, Value>,
        view: &impl OriginView,
    ) -> Decision {
        match self.decide(call, view) {
            Decision::Allow => self.check_origin(call, values, view),
            deny => deny,
        }
    }

    /// The origin check of `spec/gate.md` §3.1–3.2 alone, without the label decision (for a
    /// call whose labels were judged otherwise, e.g. after authority repair,
    /// `spec/forensics.md` §7). See [`Policy::decide_with_origin`].
    pub fn check_origin(
        &self,
        call: &ToolCall,
        values: &Map<String, Value>,
        view: &impl OriginView,
    ) -> Decision {
        if !self.is_sensitive(call) {
            return Decision::Allow;
        }
        let mut seen: HashMap<EntryId, Seen> = HashMap::new();
        for (param, entries) in &call.args {
            let found = self.untrusted_origin(
                &call.tool,
                param,
                entries,
                values.get(param),
                view,
                &mut seen,
            );
            if let Some((path, label)) = found {
                let entry = path.last().copied();
                return self.deny(
                    call,
                    param,
                    entry,
                    DenyReason::UntrustedOrigin { label },
                    path,
                );
            }
        }
        Decision::Allow
    }

    /// §3.1 for one argument: the path (untrusted ancestor first, justifying entry last) and
    /// the counted label of the first untrusted holder of `value` found breadth first, or
    /// `None` when there is none or an authority holds the value too.
    fn untrusted_origin(
        &self,
        tool: &str,
        param: &str,
        entries: &[EntryId],
        value: Option<&Value>,
        view: &impl OriginView,
        seen: &mut HashMap<EntryId, Seen>,
    ) -> Option<(Vec<EntryId>, Label)> {
        let max = self.max_label(tool, param);
        let mut prev: HashMap<EntryId, EntryId> = HashMap::new();
        let mut queue: VecDeque<EntryId> = VecDeque::new();
        let mut visited: BTreeSet<EntryId> = BTreeSet::new();
        for id in entries {
            if visited.insert(*id) {
                queue.push_back(*id);
            }
        }
        let mut untrusted: Option<(EntryId, Label)> = None;
        while let Some(cur) = queue.pop_front() {
            let s = seen
                .entry(cur)
                .or_insert_with(|| Seen::new(view.origin_node(&cur)));
            let holds = value.is_some_and(|v| s.holds(v));
            // A justifying entry counts whether or not it holds the value (§3.2: a
            // shared-writable writer's entry is External as a justification too).
            let counts = holds || entries.contains(&cur);
            match self.origin_class(tool, param, &s.node) {
                Class::Authority if holds => return None,
                Class::Counted(label) if counts && label > max && untrusted.is_none() => {
                    untrusted = Some((cur, label));
                }
                _ => {}
            }
            if value.is_none() {
                // No value to look for: only the justifying entries are checked.
                continue;
            }
            for p in s.node.parents.clone() {
                if visited.insert(p) {
                    prev.insert(p, cur);
                    queue.push_back(p);
                }
            }
        }
        let (origin, label) = untrusted?;
        let mut path = vec![origin];
        let mut at = origin;
        while let Some(p) = prev.get(&at) {
            path.push(*p);
            at = *p;
        }
        Some((path, label))
    }

    /// How the origin check counts an entry for `param` of `tool` (§3.1, §3.2).
    fn origin_class(&self, tool: &str, param: &str, n: &OriginNode) -> Class {
        let (Some(label), Some((role, name))) = (n.label, n.writer.as_ref()) else {
            return Class::Counted(Label::External);
        };
        // The user's own statement (a prompt: role user, labelled Trusted), or a principal the
        // policy names for the parameter; never the agent's memory, whatever its label.
        let authority = (*role == Role::User && label == Label::Trusted)
            || self.is_authoritative(tool, param, name);
        if authority && n.live && n.text.is_some() {
            return Class::Authority;
        }
        if self.is_shared_writable(name) && !self.is_authoritative(tool, param, name) {
            return Class::Counted(Label::External);
        }
        Class::Counted(label)
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

/// How the origin check counts one entry.
enum Class {
    /// Written by a principal with authority for the parameter, live and readable.
    Authority,
    /// Counted with this label.
    Counted(Label),
}

/// An entry the origin check has read, with its search forms built once per decision.
struct Seen {
    node: OriginNode,
    hay: Option<Haystack>,
    normalised: Option<String>,
}

impl Seen {
    fn new(node: OriginNode) -> Self {
        let hay = node.text.as_deref().map(Haystack::new);
        let normalised = node.text.as_deref().map(normalise);
        Seen {
            node,
            hay,
            normalised,
        }
    }

    /// Whether the entry holds `value` (§3.1): the matching rules of `spec/hooks.md` §4 on its
    /// verified text, or a string value's normalised form (letters and digits, upper-cased,
    /// at least [`MIN_NORMALISED_CHARS`]) in the normalised text; an entry without a readable
    /// text holds every value a text could hold.
    fn holds(&self, value: &Value) -> bool {
        match (&self.hay, &self.normalised) {
            (Some(h), Some(n)) => h.matches(value) || normalised_in(n, value),
            _ => Haystack::unverifiable().matches(value),
        }
    }
}

/// `s` without anything but letters and digits, upper-cased.
fn normalise(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_uppercase)
        .collect()
}

fn normalised_in(text: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => {
            let n = normalise(s);
            n.chars().count() >= MIN_NORMALISED_CHARS && text.contains(&n)
        }
        Value::Array(items) => items.iter().any(|v| normalised_in(text, v)),
        Value::Object(m) => m.values().any(|v| normalised_in(text, v)),
        _ => false,
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
    egress_commands: Vec<String>,
    #[serde(default)]
    egress_tools: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    open_destinations: Vec<String>,
    #[serde(default)]
    open_git_remotes: Vec<String>,
}

impl RawSecrets {
    fn into_secrets(self) -> Secrets {
        Secrets {
            paths: self.paths,
            public_paths: self.public_paths,
            tools: self.tools.iter().map(|t| principal_stem(t)).collect(),
            written_by_others: self
                .written_by_others
                .iter()
                .map(|t| principal_stem(t))
                .collect(),
            environment_commands: self.environment_commands,
            egress_commands: self.egress_commands,
            egress_tools: self.egress_tools,
            open_destinations: self
                .open_destinations
                .iter()
                .map(|d| d.to_lowercase())
                .collect(),
            open_git_remotes: self.open_git_remotes,
        }
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

    /// A view that knows quarantine but not principals (the trait's default `principal_of`).
    struct Quarantining(View, BTreeSet<EntryId>);

    impl LineageView for Quarantining {
        fn label_of(&self, id: &EntryId) -> Option<Label> {
            self.0.label_of(id)
        }
        fn tombstoned(&self, id: &EntryId) -> bool {
            self.0.tombstoned(id)
        }
        fn path_to_source(&self, id: &EntryId) -> Vec<EntryId> {
            self.0.path_to_source(id)
        }
        fn quarantined(&self, id: &EntryId) -> bool {
            self.1.contains(id)
        }
    }

    #[test]
    fn a_quarantined_entry_cannot_justify_whatever_its_label() {
        let v = Quarantining(view(), BTreeSet::from([id(1)]));
        let p = Policy::default();
        let c = call("send_money", &[("recipient", &[1])]);
        match p.decide(&c, &v) {
            Decision::Deny(d) => assert_eq!(d.reason, DenyReason::Quarantined),
            other => panic!("{other:?}"),
        }
        // The view's default says no entry is quarantined and no principal is known.
        assert!(p.decide(&c, &view()).is_allow());
        assert_eq!(v.principal_of(&id(1)), None);
        assert!(!view().quarantined(&id(1)));
    }

    fn seen(text: Option<&str>) -> Seen {
        Seen::new(OriginNode {
            label: Some(Label::External),
            writer: None,
            text: text.map(str::to_string),
            parents: Vec::new(),
            live: true,
        })
    }

    #[test]
    fn an_entry_holds_a_value_by_the_matching_rules_or_its_normalised_form() {
        use serde_json::json;
        assert_eq!(normalise("ab-12 cd_34.é"), "AB12CD34É");
        assert_eq!(normalise("straße"), "STRASSE");
        let order = seen(Some("order no. AB-12-CD-34, total 12345"));
        // Only the normalised form finds this one; only the matching rules find the number.
        assert!(order.holds(&json!("ab12cd34")));
        assert!(order.holds(&json!(12345)));
        assert!(!order.holds(&json!("ab12cd35")));
        let n = normalise("order no. AB-12-CD-34");
        assert!(normalised_in(&n, &json!("ab 12 cd 34")));
        assert!(normalised_in(&n, &json!(["x", "ab-12-cd-34"])));
        assert!(normalised_in(&n, &json!({"k": "ab.12.cd.34"})));
        assert!(!normalised_in(&n, &json!("ab12cd3")), "shorter than 8");
        assert!(!normalised_in(&n, &json!(1234)));
        assert!(!normalised_in(&n, &json!(null)));
        // An entry without a readable text holds every value a text could hold.
        assert!(seen(None).holds(&json!("anything at all")));
        assert!(!seen(None).holds(&json!(null)));
    }

    #[test]
    fn the_strictest_policy_refuses_all_but_trusted_and_unsourced() {
        let p = Policy::strictest();
        assert_eq!(p.default_max_label, Label::Trusted);
        assert_eq!(p.unsourced, Unsourced::Deny);
        assert_eq!(p.repair_unsourced, Unsourced::Deny);
        assert_ne!(p, Policy::default());
    }

    #[test]
    fn a_denial_names_its_lineage_only_when_it_has_more_than_one_hop() {
        let d = |path: Vec<EntryId>| Denial {
            tool: "send_money".into(),
            param: "recipient".into(),
            entry: Some(id(4)),
            reason: DenyReason::Untrusted {
                label: Label::External,
                max: Label::DerivedTrusted,
            },
            path,
        };
        assert!(!d(vec![id(4)]).to_string().contains("lineage"));
        assert!(d(vec![id(9), id(4)])
            .to_string()
            .contains("; lineage 09090909 -> 04040404"));
    }

    #[test]
    fn value_kinds_parse_by_name() {
        for (name, kind) in [
            ("value", ValueKind::Value),
            ("command", ValueKind::Command),
            ("text", ValueKind::Text),
            ("url", ValueKind::Url),
            ("patch", ValueKind::Patch),
        ] {
            assert_eq!(ValueKind::from_name(name), Some(kind), "{name}");
        }
        assert_eq!(ValueKind::from_name("Value"), None);
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
        assert_eq!(p.value_kind("Bash", "description"), ValueKind::None);
        assert_eq!(p.value_kind("Bash", "other"), ValueKind::Value);
        assert_eq!(p.composed_after_external("Bash"), Composed::Ask);
        assert_eq!(p.composed_after_external("not_named"), Composed::Ask);
        assert_eq!(p.unknown_tools, UnknownTools::Gate);
        assert!(p.names("Read") && p.names("Bash") && !p.names("transfer_funds"));
        assert_eq!(p.tools["Write"].writes.as_deref(), Some("file_path"));
        assert!(p.sinks.write_paths.contains(&".github/workflows/**".into()));
        assert!(p.sinks.install_commands.contains(&"pip install".into()));
        assert!(Policy::from_toml("default_max_label = \"trusted\"\n[sinks]\nother = []").is_err());
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
    fn ask_and_unknown_tool_keys_parse_with_fail_closed_defaults() {
        let p = Policy::from_toml("default_max_label = \"trusted\"").unwrap();
        assert_eq!(p.composed_after_external("t"), Composed::Allow);
        assert_eq!(p.unknown_tools, UnknownTools::Gate);
        assert!(p.read_only_tools.is_empty());
        let p = Policy::from_toml(
            "default_max_label = \"trusted\"\ncomposed_after_external = \"deny\"\n\
             unknown_tools = \"allow\"\nread_only_tools = [\"look\"]\n\
             [tools.pay]\ncomposed_after_external = \"ask\"\n[tools.pay.match]\nnote = \"none\"",
        )
        .unwrap();
        assert_eq!(p.composed_after_external("pay"), Composed::Ask);
        assert_eq!(p.composed_after_external("other"), Composed::Deny);
        assert_eq!(p.unknown_tools, UnknownTools::Allow);
        assert_eq!(p.value_kind("pay", "note"), ValueKind::None);
        assert!(p.names("look") && p.names("pay") && !p.names("other"));
        for bad in [
            "composed_after_external = \"maybe\"",
            "unknown_tools = \"deny\"",
            "[tools.x]\ncomposed_after_external = \"prompt\"",
        ] {
            let text = format!("default_max_label = \"trusted\"\n{bad}");
            assert!(
                matches!(Policy::from_toml(&text), Err(PolicyError::UnknownLabel(_))),
                "{bad}"
            );
        }
        assert_eq!(
            Policy::strictest().composed_after_external("x"),
            Composed::Deny
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

    /// A lineage view with texts, writers and edges for the origin check.
    #[derive(Default)]
    struct Graph(HashMap<EntryId, OriginNode>);

    impl Graph {
        fn add(
            &mut self,
            b: u8,
            label: Label,
            writer: Option<(Role, &str)>,
            text: Option<&str>,
            parents: &[u8],
        ) {
            self.0.insert(
                id(b),
                OriginNode {
                    label: Some(label),
                    writer: writer.map(|(r, n)| (r, n.to_string())),
                    text: text.map(str::to_string),
                    parents: parents.iter().map(|p| id(*p)).collect(),
                    live: true,
                },
            );
        }
    }

    impl LineageView for Graph {
        fn label_of(&self, id: &EntryId) -> Option<Label> {
            self.0.get(id).and_then(|n| n.label)
        }
        fn tombstoned(&self, _id: &EntryId) -> bool {
            false
        }
        fn path_to_source(&self, id: &EntryId) -> Vec<EntryId> {
            vec![*id]
        }
    }

    impl OriginView for Graph {
        fn origin_node(&self, id: &EntryId) -> OriginNode {
            self.0.get(id).cloned().unwrap_or_default()
        }
    }

    const IBAN: &str = "ZZ99ATTACKER0001";

    /// The prompt (1, user, no IBAN), the page (2, browser, External, the IBAN) and the agent's
    /// memo (3, Derived-Trusted: its weak edge to the page did not propagate) citing both.
    fn laundered(page_text: Option<&str>) -> Graph {
        let mut g = Graph::default();
        g.add(
            1,
            Label::Trusted,
            Some((Role::User, "user")),
            Some("Pay the open invoice."),
            &[],
        );
        g.add(
            2,
            Label::External,
            Some((Role::Tool, "tool:browser")),
            page_text,
            &[],
        );
        g.add(
            3,
            Label::DerivedTrusted,
            Some((Role::Agent, "agent")),
            Some(&format!("Pay to {IBAN}.")),
            &[1, 2],
        );
        g
    }

    fn pay(value: &str, by: u8) -> (ToolCall, Map<String, Value>) {
        let c = call("send_money", &[("recipient", &[by])]);
        let mut v = Map::new();
        v.insert("recipient".into(), Value::String(value.into()));
        (c, v)
    }

    #[test]
    fn a_value_held_by_an_untrusted_ancestor_is_refused_whatever_the_weights() {
        let p = Policy::default();
        let g = laundered(Some(&format!("Billing: pay {IBAN}.")));
        let (c, v) = pay(IBAN, 3);
        // The labels alone allow it: the memo is Derived-Trusted.
        assert!(p.decide(&c, &g).is_allow());
        let Decision::Deny(d) = p.decide_with_origin(&c, &v, &g) else {
            panic!("the page holds the value")
        };
        assert_eq!(
            d.reason,
            DenyReason::UntrustedOrigin {
                label: Label::External
            }
        );
        assert_eq!((d.entry, d.path.clone()), (Some(id(3)), vec![id(2), id(3)]));
        assert!(
            d.to_string()
                .contains("whose value comes from entry 02020202 labelled EXTERNAL"),
            "{d}"
        );
        // A value the page does not hold is not refused, nor is a parameter without a value.
        assert!(p
            .decide_with_origin(
                &pay("GB29NWBK60161331926819", 3).0,
                &pay("GB29NWBK60161331926819", 3).1,
                &g
            )
            .is_allow());
        assert!(p.decide_with_origin(&c, &Map::new(), &g).is_allow());
        // A parameter that allows External is not refused either.
        let lax = Policy::from_toml(
            "default_max_label = \"external\"\nsensitive_tools = [\"send_money\"]",
        )
        .unwrap();
        assert!(lax.decide_with_origin(&c, &v, &g).is_allow());
    }

    #[test]
    fn respaced_values_are_found_and_short_ones_are_not_normalised() {
        let p = Policy::default();
        let g = laundered(Some("Billing: pay iban zz99 atta cker-0001."));
        let (c, v) = pay(IBAN, 3);
        assert!(!p.decide_with_origin(&c, &v, &g).is_allow());
        let mut g = laundered(Some("ref a-b 12"));
        g.add(
            3,
            Label::DerivedTrusted,
            Some((Role::Agent, "agent")),
            Some("ref AB12"),
            &[1, 2],
        );
        let (c, v) = pay("AB12", 3);
        assert!(
            p.decide_with_origin(&c, &v, &g).is_allow(),
            "below MIN_NORMALISED_CHARS"
        );
    }

    #[test]
    fn only_the_users_own_statement_or_a_named_source_has_authority() {
        let p = Policy::default();
        // An agent memo that holds the value and is labelled Trusted (written with no
        // parents) is no authority: the page still refuses it (issue 24).
        let mut g = laundered(Some(&format!("Billing: pay {IBAN}.")));
        g.add(
            4,
            Label::Trusted,
            Some((Role::Agent, "agent")),
            Some(&format!("note: {IBAN}")),
            &[],
        );
        g.add(
            3,
            Label::DerivedTrusted,
            Some((Role::Agent, "agent")),
            Some(&format!("Pay to {IBAN}.")),
            &[1, 2, 4],
        );
        let (c, v) = pay(IBAN, 3);
        assert!(!p.decide_with_origin(&c, &v, &g).is_allow());
        // A user-role entry that is not Trusted (derived from the page) is no statement.
        g.add(
            4,
            Label::DerivedUntrusted,
            Some((Role::User, "user")),
            Some(&format!("pay {IBAN}")),
            &[2],
        );
        assert!(!p.decide_with_origin(&c, &v, &g).is_allow());
        // The user's Trusted prompt is.
        g.add(
            4,
            Label::Trusted,
            Some((Role::User, "user")),
            Some(&format!("pay {IBAN}")),
            &[],
        );
        assert!(p.decide_with_origin(&c, &v, &g).is_allow());
    }

    #[test]
    fn the_user_or_an_authoritative_source_stating_the_value_gives_authority() {
        let p = Policy::default();
        let mut g = laundered(Some(&format!("Billing: pay {IBAN}.")));
        g.add(
            1,
            Label::Trusted,
            Some((Role::User, "user")),
            Some(&format!("Pay {IBAN}.")),
            &[],
        );
        let (c, v) = pay(IBAN, 3);
        assert!(p.decide_with_origin(&c, &v, &g).is_allow());
        // The default policy names the scheduled transactions authoritative for `recipient`.
        let mut g = laundered(Some(&format!("Billing: pay {IBAN}.")));
        g.add(
            4,
            Label::External,
            Some((Role::Tool, "tool:get_scheduled_transactions")),
            Some(IBAN),
            &[],
        );
        g.add(
            3,
            Label::DerivedTrusted,
            Some((Role::Agent, "agent")),
            Some(IBAN),
            &[1, 2, 4],
        );
        assert!(p.decide_with_origin(&c, &v, &g).is_allow());
        // A redacted user prompt cannot state anything.
        g.add(4, Label::Trusted, Some((Role::User, "user")), None, &[]);
        assert!(!p.decide_with_origin(&c, &v, &g).is_allow());
    }

    #[test]
    fn an_unverifiable_ancestor_holds_every_value() {
        let p = Policy::default();
        // The page's text is gone: it may hold the value.
        let (c, v) = pay(IBAN, 3);
        assert!(!p.decide_with_origin(&c, &v, &laundered(None)).is_allow());
        // Its bytes do not verify (no writer): counted External even though indexed Trusted.
        let mut g = laundered(Some("nothing here"));
        g.add(5, Label::Trusted, None, None, &[]);
        g.add(
            3,
            Label::DerivedTrusted,
            Some((Role::Agent, "agent")),
            Some(IBAN),
            &[1, 5],
        );
        let Decision::Deny(d) = p.decide_with_origin(&c, &v, &g) else {
            panic!()
        };
        assert_eq!(
            (d.reason, d.path),
            (
                DenyReason::UntrustedOrigin {
                    label: Label::External
                },
                vec![id(5), id(3)]
            )
        );
        // A redacted Trusted entry stays Trusted: it holds the value but refuses nothing.
        g.add(5, Label::Trusted, Some((Role::User, "user")), None, &[]);
        assert!(p.decide_with_origin(&c, &v, &g).is_allow());
    }

    #[test]
    fn shared_writable_writers_are_external_unless_the_policy_says_otherwise() {
        let mut g = Graph::default();
        let echo = format!("Today: pay {IBAN}");
        g.add(
            6,
            Label::Trusted,
            Some((Role::System, "calendar")),
            Some(&echo),
            &[],
        );
        let (c, v) = pay(IBAN, 6);
        let p = Policy::default();
        assert!(p.decide(&c, &g).is_allow(), "Trusted by its role");
        assert!(!p.decide_with_origin(&c, &v, &g).is_allow());
        // Also as a justification without a value to look for.
        assert!(!p.decide_with_origin(&c, &Map::new(), &g).is_allow());
        assert!(p.is_shared_writable("tool:mcp__work__Calendar"));
        let own = Policy::from_toml("default_max_label = \"derived_trusted\"\nsensitive_tools = [\"send_money\"]\nshared_writable = []").unwrap();
        assert!(own.shared_writable.is_empty());
        assert!(own.decide_with_origin(&c, &v, &g).is_allow());
        assert_eq!(principal_stem("tool:mcp__g__Web"), "web");
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
