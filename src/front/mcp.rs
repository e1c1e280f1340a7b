//! The MCP server (`memlineage mcp`, `spec/mcp.md`): four tools over a [`Front`], on the
//! official Rust SDK `rmcp` (<https://github.com/modelcontextprotocol/rust-sdk>, MCP
//! specification <https://modelcontextprotocol.io/specification>).
//!
//! | tool | readOnly | destructive | openWorld |
//! |---|---|---|---|
//! | `ledger_append` | false | false | false |
//! | `ledger_retrieve` | true | false | false |
//! | `ledger_gate_check` | true | false | false |
//! | `ledger_explain` | true | false | false |
//!
//! The writer of every append is the server's configured agent principal: no argument names a
//! writer, a role or a label, and unknown arguments are rejected (`additionalProperties:
//! false`). The server is advisory: the model decides whether to call it. Enforcement is the
//! hooks' job ([`crate::front::hook`]).

use crate::front::{Front, Keys, Refusal, Session, Verdict};
use crate::gate::Denial;
use crate::record::{EntryId, Kind, Parent, Weight};
use crate::retrieve::Outcome;
use crate::store::Store;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

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
    /// Entry ids, 64 hex digits each.
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
    /// Per argument, the entries that justify its value (64-hex ids). Arguments not listed
    /// are justified by the entries of this session's reads that their value matches exactly.
    #[serde(default)]
    pub justifications: BTreeMap<String, Vec<String>>,
}

/// Arguments of `ledger_explain`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainArgs {
    /// Entry id, 64 hex digits.
    pub id: String,
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
    /// Ids kept out (tombstoned, unknown, or failing verification), with the reason.
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
    /// `allow` or `deny`.
    pub decision: String,
    /// Whether the policy treats the tool as a sensitive sink (non-sensitive calls are
    /// allowed without checks).
    pub sensitive: bool,
    /// On denial: why, as a sentence.
    pub reason: Option<String>,
    /// On a gate denial: the offending parameter.
    pub param: Option<String>,
    /// On a gate denial: the offending entry.
    pub entry: Option<String>,
    /// On a gate denial: the lineage path from the untrusted source to the entry.
    pub path: Vec<String>,
    /// The entries found to justify each argument.
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

/// The MCP server: a [`Front`] and the connection's session, behind a mutex (tool calls are
/// short and synchronous).
pub struct LedgerServer<S: Store, K: Keys> {
    state: Arc<Mutex<(Front<S, K>, Session)>>,
    tool_router: ToolRouter<Self>,
}

impl<S: Store, K: Keys> Clone for LedgerServer<S, K> {
    fn clone(&self) -> Self {
        LedgerServer {
            state: Arc::clone(&self.state),
            tool_router: self.tool_router.clone(),
        }
    }
}

fn bad(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::invalid_params(e.to_string(), None)
}

fn id_arg(s: &str) -> Result<EntryId, ErrorData> {
    EntryId::from_hex(s).map_err(|_| bad(format!("`{s}` is not an entry id (64 hex digits)")))
}

#[tool_router]
impl<S: Store + Send + 'static, K: Keys + Send + 'static> LedgerServer<S, K> {
    /// A server over `front`; reads are recorded in a session named `session`.
    pub fn new(front: Front<S, K>, session: &str) -> Self {
        LedgerServer {
            state: Arc::new(Mutex::new((front, Session::new(session)))),
            tool_router: Self::tool_router(),
        }
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Front<S, K>, &mut Session) -> Result<T, ErrorData>,
    ) -> Result<T, ErrorData> {
        let mut g = self
            .state
            .lock()
            .map_err(|_| ErrorData::internal_error("ledger state poisoned", None))?;
        let (front, session) = &mut *g;
        // Hooks and other processes append to the same ledger: catch up first.
        front.ledger().refresh().map_err(bad)?;
        f(front, session)
    }

    /// Record a memory (summary, observation or fact) with the entries it was derived from.
    /// The writer is this server's agent principal; the label is computed from the parents.
    #[tool(annotations(
        title = "Append a memory",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    pub async fn ledger_append(
        &self,
        params: Parameters<AppendArgs>,
    ) -> Result<Json<Appended>, ErrorData> {
        let a = params.0;
        let kind = match a.kind.as_deref().unwrap_or("summary") {
            k @ ("summary" | "observation" | "fact") => Kind::from_name(k),
            other => return Err(bad(format!("kind `{other}`: use summary or fact"))),
        }
        .ok_or_else(|| bad("kind"))?;
        let mut parents = Vec::with_capacity(a.parents.len());
        for p in &a.parents {
            let weight = Weight::from_f64(p.weight).map_err(bad)?;
            parents.push(Parent {
                id: id_arg(&p.id)?,
                weight,
            });
        }
        self.with(|front, session| {
            let out = front
                .remember(session, kind, &a.text, parents)
                .map_err(bad)?;
            Ok(Json(Appended {
                id: out.id.to_string(),
                index: out.index,
                label: out.label.to_string(),
                writer: front.agent().to_string(),
            }))
        })
    }

    /// Verify (signature, inclusion under the signed checkpoint) and return entries with their
    /// labels. Each returned entry is added to this session's reads.
    #[tool(annotations(
        title = "Retrieve labelled memories",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    pub async fn ledger_retrieve(
        &self,
        params: Parameters<RetrieveArgs>,
    ) -> Result<Json<Retrieved>, ErrorData> {
        let ids = params
            .0
            .ids
            .iter()
            .map(|s| id_arg(s))
            .collect::<Result<Vec<_>, _>>()?;
        self.with(|front, session| {
            let outcomes = front.retrieve(session, &ids).map_err(bad)?;
            let mut out = Retrieved {
                entries: Vec::new(),
                withheld: Vec::new(),
            };
            for o in outcomes {
                match o {
                    Outcome::Verified(r) => out.entries.push(RetrievedEntry {
                        id: r.id.to_string(),
                        label: r.label.to_string(),
                        kind: r.kind.name().to_string(),
                        writer: r.writer.clone(),
                        rendered: r.render(),
                        text: r.text,
                    }),
                    Outcome::Tombstoned(id) => out.withheld.push(Withheld {
                        id: id.to_string(),
                        reason: "deleted by a tombstone".into(),
                    }),
                    Outcome::Quarantined(id) => out.withheld.push(Withheld {
                        id: id.to_string(),
                        reason: "quarantined: a flagged source reaches it".into(),
                    }),
                    Outcome::Rejected(id, e) => out.withheld.push(Withheld {
                        id: id.to_string(),
                        reason: e.to_string(),
                    }),
                }
            }
            Ok(Json(out))
        })
    }

    /// The gate's decision for a proposed tool call: allow, or deny with the reason, the
    /// offending parameter and entry, and the lineage path back to the untrusted source.
    #[tool(annotations(
        title = "Check a tool call against the gate",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    pub async fn ledger_gate_check(
        &self,
        params: Parameters<GateArgs>,
    ) -> Result<Json<GateResult>, ErrorData> {
        let a = params.0;
        let mut given: HashMap<String, Vec<EntryId>> = HashMap::new();
        for (param, ids) in &a.justifications {
            let ids = ids.iter().map(|s| id_arg(s)).collect::<Result<_, _>>()?;
            given.insert(param.clone(), ids);
        }
        self.with(|front, session| {
            let c = front
                .check(session, &a.tool, &a.args, &given)
                .map_err(bad)?;
            let justifications = c
                .call
                .args
                .iter()
                .map(|(p, ids)| (p.clone(), ids.iter().map(EntryId::to_string).collect()))
                .collect();
            let mut out = GateResult {
                decision: if c.verdict.is_allow() {
                    "allow"
                } else {
                    "deny"
                }
                .into(),
                sensitive: c.sensitive,
                reason: None,
                param: None,
                entry: None,
                path: Vec::new(),
                justifications,
            };
            if let Verdict::Deny(r) = &c.verdict {
                out.reason = Some(r.to_string());
                if let Refusal::Gate(Denial {
                    param, entry, path, ..
                }) = r
                {
                    out.param = Some(param.clone());
                    out.entry = entry.map(|e| e.to_string());
                    out.path = path.iter().map(EntryId::to_string).collect();
                }
            }
            Ok(Json(out))
        })
    }

    /// An entry's label and the lineage path (source first) that gives it.
    #[tool(annotations(
        title = "Explain an entry's label",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    pub async fn ledger_explain(
        &self,
        params: Parameters<ExplainArgs>,
    ) -> Result<Json<Explained>, ErrorData> {
        let id = id_arg(&params.0.id)?;
        self.with(|front, _| {
            let l = front.ledger();
            let label = l
                .label(&id)
                .ok_or_else(|| bad(format!("unknown entry {id}")))?;
            let mut path = Vec::new();
            for hop in l.untrusted_path(&id).map_err(bad)? {
                let e = l.get(&hop).map_err(bad)?;
                path.push(Hop {
                    id: hop.to_string(),
                    kind: e.entry().kind.name().to_string(),
                    writer: l
                        .principal(&e.writer())
                        .map(|(r, n)| format!("{n} ({})", r.name()))
                        .unwrap_or_else(|| e.writer().short()),
                    label: l.label(&hop).map(|x| x.to_string()).unwrap_or_default(),
                });
            }
            Ok(Json(Explained {
                id: id.to_string(),
                label: label.to_string(),
                tombstoned: l.is_tombstoned(&id),
                path,
            }))
        })
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "memlineage",
    instructions = "Signed, lineage-labelled agent memory. Append memories with their parents, \
retrieve them with their trust labels, and ask ledger_gate_check before a sensitive tool call. \
Advisory: enforcement is done by memlineage's PreToolUse hook."
)]
impl<S: Store + Send + 'static, K: Keys + Send + 'static> ServerHandler for LedgerServer<S, K> {}
