//! The arguments and results of the six tools (`spec/mcp.md` §2): what an MCP client sends and
//! is sent back, with their JSON schemas.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Arguments of `ledger_append`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendArgs {
    /// The memory's text (UTF-8).
    pub text: String,
    /// `summary` (default; also `observation`) or `fact`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Entries this memory was derived from, with weights in [0, 1] (an edge propagates
    /// labels when its weight exceeds the ledger's threshold τ).
    #[serde(default)]
    pub parents: Vec<ParentArg>,
}

/// One parent of an appended memory.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParentArg {
    /// Entry id, 64 hex digits.
    pub id: String,
    /// Weight in [0, 1].
    pub weight: f64,
}

/// Arguments of `ledger_retrieve`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrieveArgs {
    /// Entry ids, 64 hex digits each, at most 1024.
    pub ids: Vec<String>,
}

/// Arguments of `ledger_gate_check`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateArgs {
    /// The tool the agent proposes to call.
    pub tool: String,
    /// The call's arguments, as the tool would receive them.
    #[serde(default)]
    pub args: serde_json::Map<String, serde_json::Value>,
    /// Per argument, entries (64-hex ids) the caller says justify its value. They can only
    /// make the decision stricter: each is verified and gated too, besides the entries the
    /// server finds the value in.
    #[serde(default)]
    pub justifications: BTreeMap<String, Vec<String>>,
}

/// Arguments of `ledger_explain` and `ledger_receipt`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainArgs {
    /// Entry id, 64 hex digits.
    pub id: String,
}

/// Arguments of `ledger_flag`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlagArgs {
    /// The bad source's entry id (64 hex digits).
    pub source: String,
    /// Why (the advisory), recorded as the flag entry's content; not empty.
    pub reason: String,
    /// `all` (default: over every recorded edge) or `strong` (over edges with w > τ only).
    #[serde(default)]
    pub reach: Option<String>,
}

/// Result of `ledger_append`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Appended {
    /// The new entry's id.
    pub id: String,
    /// Its leaf index in the log.
    pub index: u64,
    /// Its label (`TRUSTED`, `DERIVED_TRUSTED`, `DERIVED_UNTRUSTED`, `EXTERNAL`).
    pub label: String,
    /// The principal that signed it (the server's, never the caller's choice).
    pub writer: String,
}

/// Result of `ledger_retrieve`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Retrieved {
    /// Verified entries, in request order.
    pub entries: Vec<RetrievedEntry>,
    /// Ids kept out (tombstoned, quarantined, unknown, failing verification, or past the
    /// response's text budget), with the reason.
    pub withheld: Vec<Withheld>,
}

/// One verified entry.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RetrievedEntry {
    /// Entry id.
    pub id: String,
    /// Its label.
    pub label: String,
    /// Kind of write.
    pub kind: String,
    /// Writer's name.
    pub writer: String,
    /// Content, `null` when redacted.
    pub text: Option<String>,
    /// `[trust=LABEL id=XXXXXXXX writer=NAME] text`, for a prompt.
    pub rendered: String,
}

/// An id retrieval kept out of the prompt.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Withheld {
    /// Entry id.
    pub id: String,
    /// Why.
    pub reason: String,
}

/// Result of `ledger_gate_check`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GateResult {
    /// `allow`, `deny`, or `ask`: the value gate allows the call but the agent composed its
    /// arguments after the session read untrusted input, and the policy says to ask the user
    /// (`spec/hooks.md` §15); the client MUST NOT run the call without the user's approval.
    pub decision: String,
    /// Whether the policy treats the tool as a sensitive sink (non-sensitive calls are
    /// allowed without checks).
    pub sensitive: bool,
    /// On denial or ask: why, as a sentence (for an ask, the receipt naming the untrusted read).
    pub reason: Option<String>,
    /// On a gate denial: the offending parameter.
    pub param: Option<String>,
    /// On a gate denial: the offending entry.
    pub entry: Option<String>,
    /// On a gate denial: the lineage path from the untrusted source to the entry.
    pub path: Vec<String>,
    /// Per argument, the entries the decision rests on: those its value was found in, then
    /// those the caller cited.
    pub justifications: BTreeMap<String, Vec<String>>,
}

/// Result of `ledger_explain`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Explained {
    /// Entry id.
    pub id: String,
    /// Its label.
    pub label: String,
    /// Whether it was deleted by a tombstone.
    pub tombstoned: bool,
    /// The path from the untrusted source that gives the label (empty when trusted).
    pub path: Vec<Hop>,
}

/// One entry on a lineage path.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hop {
    /// Entry id.
    pub id: String,
    /// Kind of write.
    pub kind: String,
    /// Writer's name and role, e.g. `tool:read_file (tool)`.
    pub writer: String,
    /// Label.
    pub label: String,
}

/// Result of `ledger_flag`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Flagged {
    /// The flag entry's id.
    pub flag: String,
    /// The flagged source.
    pub source: String,
    /// `all` or `strong`.
    pub reach: String,
    /// Entries quarantined now, in the whole ledger.
    pub quarantined: u64,
    /// Of those, how many this flag added.
    pub newly_quarantined: u64,
}

/// Result of `ledger_receipt`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReceiptResult {
    /// The entry explained.
    pub id: String,
    /// The receipt as a sentence (`spec/forensics.md` §3).
    pub sentence: String,
    /// `flagged` (a flag quarantined the source) or `external` (the source is External).
    pub cause: String,
    /// The flag entry, when flagged.
    pub flag: Option<String>,
    /// The flag's reason, when flagged.
    pub reason: Option<String>,
    /// The path, source first.
    pub path: Vec<ReceiptHop>,
}

/// One hop of a receipt path.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReceiptHop {
    /// Entry id.
    pub id: String,
    /// Leaf index (the number the sentence uses).
    pub index: u64,
    /// Kind of write.
    pub kind: String,
    /// Writer's name and role, e.g. `tool:read_file (tool)`.
    pub writer: String,
    /// Label.
    pub label: String,
}
