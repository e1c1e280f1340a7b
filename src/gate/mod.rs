//! The gate in front of sensitive tool calls (`spec/gate.md`).
//!
//! A [`Policy`] names the sensitive tools (sinks) and, per parameter, the worst label allowed to
//! justify it. A [`ToolCall`] comes with, for each argument, the entries that justify it. The
//! decision is [`LineageDecision::Allow`], or [`LineageDecision::Deny`] naming the parameter,
//! the offending entry and the lineage path back to the untrusted source. Policy is input, not
//! code.
//!
//! The names say whose answer it is: the gate decides by lineage alone (a
//! [`LineageDecision`], refused with a [`LineageDenial`]); a front weighs that decision with
//! what only it knows of the session (unrecorded reads, protected files, secrets, composed
//! arguments) into its [`Verdict`](crate::front::Verdict), refused with a
//! [`Refusal`](crate::front::Refusal) — the answer a runtime acts on.

use crate::lineage::Label;
use crate::record::{EntryId, Role};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// The default policy, as TOML (also shipped as `examples/policy.toml`).
pub const DEFAULT_POLICY_TOML: &str = include_str!("../../examples/policy.toml");

/// The coding-agent policy (`spec/hooks.md` §10), as TOML (shipped as
/// `examples/coding-policy.toml`): the hooks' default, and what `hook install` writes.
pub const CODING_POLICY_TOML: &str = include_str!("../../examples/coding-policy.toml");

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
    /// The value `s` of the policy key `setting`.
    fn from_name(setting: &'static str, s: &str) -> Result<Self, PolicyError> {
        match s {
            "allow" => Ok(Composed::Allow),
            "ask" => Ok(Composed::Ask),
            "deny" => Ok(Composed::Deny),
            other => Err(PolicyError::unknown_setting(setting, other)),
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
    /// Command prefixes (words; options between them skipped; a program word ending in `*`
    /// matches by its beginning) that print what a credential store holds (`gh auth token`,
    /// `git credential fill`, `pass`): their output is secret (`spec/hooks.md` §16.1).
    pub secret_commands: Vec<String>,
    /// Command prefixes (words) that send data off the machine (`curl`, `git push`).
    pub egress_commands: Vec<String>,
    /// Command prefixes (words) the policy's owner declares keep data on the machine, beside
    /// the programs memlineage knows to (`spec/hooks.md` §16.2, "Programs not known to stay
    /// local"): a call that reads a secret and runs one of them is not refused for it.
    pub local_commands: Vec<String>,
    /// Per tool that sends data off the machine, the parameters naming where to
    /// (`WebFetch` → `url`); an empty list: the destination is unknown.
    pub egress_tools: BTreeMap<String, Vec<String>>,
    /// Hosts secrets may go to (a host, or `.domain` for it and its subdomains).
    pub open_destinations: Vec<String>,
    /// Git remotes secrets may be pushed to (`origin`).
    pub open_git_remotes: Vec<String>,
    /// SHA-256 digests of code texts the user vouches for (`"sha256:<64 hex>"` in the policy):
    /// a script whose bytes are one of them is the user's code, and what it does itself is not
    /// judged as reading or sending secrets; the files of code it runs are judged as ever
    /// (`spec/hooks.md` §16.2, "Endorsed code").
    pub endorsed_code: BTreeSet<[u8; 32]>,
}

impl Secrets {
    /// Whether the policy has a secrecy rule at all.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
            && self.tools.is_empty()
            && self.environment_commands.is_empty()
            && self.secret_commands.is_empty()
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

    /// The entry `id` for one origin check: by default [`OriginView::origin_node`] read now.
    /// A view may keep what it verified of immutable entries between checks (edges, writer
    /// key, verified text and its search forms; [`crate::Ledger`] does, `spec/gate.md` §3.3),
    /// provided everything that can change (label, binding, forensic state) is read now and
    /// the answer is the one `origin_node` would give.
    fn origin_entry(&self, id: &EntryId) -> OriginEntry {
        OriginEntry::from(self.origin_node(id))
    }

    /// Called once at the start of each origin check, before any [`OriginView::origin_entry`]:
    /// a view that keeps entries drops them here when what it verified may no longer hold
    /// (e.g. content was removed from the store since). Does nothing by default.
    fn origin_check_begins(&self) {}

    /// The ancestry of `id` a view kept for origin checks (`spec/gate.md` §3.3), or the one
    /// `build` makes now (which the view may keep); `None` when the view keeps none (the
    /// default: the check then walks) or `build` cannot make it.
    fn ancestry(
        &self,
        _id: &EntryId,
        _build: &mut dyn FnMut() -> Option<Ancestry>,
    ) -> Option<std::sync::Arc<Ancestry>> {
        None
    }
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

/// The gate's answer, decided by lineage alone: the labels, quarantine and tombstones of the
/// entries that justify each argument, and the origin of each value (`spec/gate.md` §3). A
/// front weighs it into its [`Verdict`](crate::front::Verdict), the answer a runtime acts on.
///
/// Exhaustive: a caller must handle both answers; a new one must break its build rather than
/// fall into a wildcard arm that might allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineageDecision {
    /// The call may proceed.
    Allow,
    /// The call is refused.
    Deny(LineageDenial),
}

impl LineageDecision {
    /// Whether this is [`LineageDecision::Allow`].
    pub fn is_allow(&self) -> bool {
        matches!(self, LineageDecision::Allow)
    }
}

/// Why a call was refused: the first offending parameter in argument order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineageDenial {
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

impl std::fmt::Display for LineageDenial {
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

/// The gate's decision for `call` (`spec/gate.md` §3): the label decision of
/// [`Policy::decide`], then the origin check of every argument's value in `values` (parameter
/// name → the JSON value proposed) over every recorded edge of its justification, and the
/// shared-writable writer check of §3.2, from what `view` verified ([`crate::Ledger`] is one),
/// traced on a `gen_ai.tool.call` span ([`span`]). The one decision the library, the hooks, the
/// MCP server and gateway, the CLI, the eval, the replay and the explorer make: an argument
/// absent from `values` gets the writer check of its justifying entries only, so a caller that
/// has the values passes them all.
pub fn decide(
    policy: &Policy,
    call: &ToolCall,
    values: &Map<String, Value>,
    view: &impl OriginView,
) -> LineageDecision {
    let span = span(call);
    let _g = span.enter();
    record(&span, policy.decide_with_origin(call, values, view))
}

/// Records `decision` on a span made by [`span`] and returns it.
pub fn record(span: &tracing::Span, decision: LineageDecision) -> LineageDecision {
    match &decision {
        LineageDecision::Allow => span.record("memlineage.decision", "allow"),
        LineageDecision::Deny(d) => {
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
/// A policy file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// Not valid TOML for the policy schema (unknown keys are rejected): the TOML parser's
    /// error, with its line and column.
    #[error("policy: {0}")]
    Toml(#[source] toml::de::Error),
    /// A label name that does not exist (`spec/gate.md` §2.1 rule 2: `trusted`,
    /// `derived_trusted`, `derived_untrusted`, `external`), where the policy names a label
    /// (`default_max_label`, a tool's `max_label` or a parameter's label). The policy file is
    /// the operator's input.
    #[error("policy: unknown label `{label}`")]
    UnknownLabel {
        /// The name the policy gave, as written.
        label: String,
    },
    /// A value that a setting does not take (`unsourced = "maybe"`, a `[tools.*.match]`
    /// value kind that does not exist…). The policy file is the operator's input.
    #[error("policy: setting `{setting}` does not take `{value}`")]
    UnknownSetting {
        /// The policy key of the setting (`unsourced`, `composed_after_external`,
        /// `match`…); for a key of a `[tools.*]` table, its name within the table.
        setting: &'static str,
        /// The value the policy gave, as written.
        value: String,
    },
}

mod ancestry;
mod classify;
pub mod extract;
pub mod matching;
mod origin;
pub use ancestry::Ancestry;
pub use classify::Gating;
pub use origin::{HeldText, OriginEntry};
mod policy;
#[cfg(test)]
mod tests;
