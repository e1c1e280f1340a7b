//! Scenario files (TOML, schema in `spec/eval.md` §2) and their scripted run through the real
//! crate path: [`Ledger::append`], [`Ledger::retrieve`], [`Ledger::gate`].

use super::EvalError;
use crate::eval::replay::{Config, SignaturesOnly};
use crate::gate::{LineageDecision, LineageView, Policy, ToolCall};
use crate::ledger::retrieve::Outcome;
use crate::ledger::Ledger;
use crate::lineage::attribution::{self, ContextEntry, Judge, JudgeEnvelope, Method, OverlapJudge};
use crate::lineage::{Label, LabelPolicy};
use crate::log::LogSigner;
use crate::record::{EntryId, Kind, ProvEntry, Role, SignedEntry, Weight, WriterKey};
use crate::store::{MemoryStore, Store};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Origin of every harness ledger's log.
pub const LOG_ORIGIN: &str = "memlineage.eval/log";

/// Writer-asserted time of step `i` of a scenario: this base (2025-01-01T00:00:00Z in ms)
/// plus `i`, so that runs are byte-identical.
pub const TIME_BASE_MS: u64 = 1_735_689_600_000;

/// A deterministic key for principal `name`: [`WriterKey::for_label`] of
/// `"memlineage-eval/" || name` (public seeds: never use for real data).
pub fn principal_key(name: &str) -> WriterKey {
    WriterKey::for_label(&format!("memlineage-eval/{name}"))
}

/// A whole scenario file (`spec/eval.md` §2).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Principal name → role name (`user`, `system`, `agent`, `tool`, `external`).
    pub principals: BTreeMap<String, String>,
    /// The τ × K ablation grid.
    pub ablation: AblationSpec,
    /// Scenarios, in table order.
    pub scenario: Vec<Scenario>,
}

/// The τ × K grid (`spec/eval.md` §4). Decimals are rounded to the nearest millionth.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AblationSpec {
    /// Chain lengths K (hops), each in `1..=16`.
    pub ks: Vec<u32>,
    /// Thresholds τ in `[0, 1]`.
    pub taus: Vec<f64>,
    /// Weight panels `(w0, d)`; hop k has weight w0·d^(k−1). Coarse is `(1.0, 1.0)`.
    pub panels: Vec<Panel>,
}

/// One panel of the ablation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Panel {
    /// Name shown in the table.
    pub name: String,
    /// First-hop weight w0 in `[0, 1]`.
    pub w0: f64,
    /// Decay per hop d in `[0, 1]`.
    pub d: f64,
}

/// Which table a scenario belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Group {
    /// The attack table (paper §6).
    Attack,
    /// The benign table.
    Benign,
    /// The laundering table (beyond the paper).
    Launder,
}

/// One scripted scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Unique name, the table row.
    pub name: String,
    /// Table.
    pub group: Group,
    /// Attack family or workflow (`poison_raw`, `graft_forged`, `sleeper_derived`, …).
    pub family: String,
    /// One-line description for the table.
    pub description: String,
    /// The paper's attack success (or dispatch rate) for no defence, signatures only,
    /// memlineage, when the paper reports this row.
    #[serde(default)]
    pub paper: Option<[f64; 3]>,
    /// For one of the paper's four benign workflows: the paper's legitimate dispatch rate
    /// under memlineage.
    #[serde(default)]
    pub paper_dispatch: Option<f64>,
    /// τ of the scenario's ledger (default 0.5).
    #[serde(default = "default_tau")]
    pub tau: f64,
    /// Steps, in order.
    pub step: Vec<Step>,
}

fn default_tau() -> f64 {
    0.5
}

/// The scripted judge of an `lm_self_eval` write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum JudgeKind {
    /// [`OverlapJudge`].
    #[default]
    Overlap,
    /// [`ObedientJudge`].
    Obedient,
}

/// A judge persuaded by the text it scores, the worst case of a real model: if the context
/// entry's text contains the marker `JUDGE:` followed by a line, it answers that line verbatim
/// (whatever it is); otherwise it answers like [`OverlapJudge`]. The envelope keeps the text a
/// string value, and the strict parser turns a malformed answer into weight 1.0, but a
/// well-formed low weight the judge was talked into passes: this judge measures what the
/// weak-parent rule does then.
#[derive(Debug, Clone, Copy, Default)]
pub struct ObedientJudge;

impl Judge for ObedientJudge {
    fn score(&self, envelope: &str) -> Result<String, String> {
        let env: JudgeEnvelope = serde_json::from_str(envelope).map_err(|e| e.to_string())?;
        match env.context_entry.text.split_once("JUDGE:") {
            Some((_, rest)) => Ok(rest.lines().next().unwrap_or_default().trim().to_string()),
            None => OverlapJudge.score(envelope),
        }
    }
}

/// One step of a scenario (`spec/eval.md` §2.2).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Step {
    /// Sign an entry and append it with [`Ledger::append`]; its parents are the `context`
    /// entries weighted by `attribution`.
    Write {
        /// Name later steps use for the entry.
        name: String,
        /// Principal writing it.
        by: String,
        /// Entry kind name ([`Kind::from_name`]).
        kind: String,
        /// Content.
        text: String,
        /// Names of entries in the writer's context (retrieved first).
        #[serde(default)]
        context: Vec<String>,
        /// Weighting method (default coarse).
        #[serde(default)]
        attribution: Option<Method>,
        /// For `attention`: one weight per context entry.
        #[serde(default)]
        weights: Vec<f64>,
        /// For `lm_self_eval`: which scripted judge (default `overlap`).
        #[serde(default)]
        judge: JudgeKind,
    },
    /// Sign an entry but do not append it: it is planted in the agent's retrieval results
    /// outside the log.
    Plant {
        /// Name later steps use for the entry.
        name: String,
        /// Principal whose key signs it.
        by: String,
        /// Entry kind name.
        kind: String,
        /// Content.
        text: String,
    },
    /// A tool call the scripted agent proposes, decided under every configuration.
    Call {
        /// Tool name; the default gate policy says whether it is sensitive.
        tool: String,
        /// Whether this call is the attacker's goal (else a legitimate call).
        #[serde(default)]
        attack: bool,
        /// Parameter → names of the entries justifying its value.
        args: BTreeMap<String, Vec<String>>,
        /// Parameter → the value proposed (string or number), for the gate's origin check
        /// (`spec/gate.md` §3.1); a parameter without a value gets the label decision only.
        #[serde(default)]
        values: BTreeMap<String, serde_json::Value>,
    },
}

/// What happened to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallOutcome {
    /// The attacker's goal call?
    pub attack: bool,
    /// Dispatched under no defence, signatures only, memlineage (the first three of [`Config::ALL`], in that order).
    pub allowed: [bool; 3],
    /// Dispatched under signatures only with an inclusion requirement: the AgentDojo
    /// replay's [`SignaturesOnly`] view, which knows only entries in the log.
    pub signatures_and_log: bool,
    /// Justifying entries [`Ledger::retrieve`] refused (not in the log, tombstoned, bad).
    pub retrieval_refused: usize,
    /// Worst memlineage label among the justifying entries (`None`: none is in the log).
    pub worst_label: Option<Label>,
}

/// Runs `scenario` in a fresh in-memory ledger with labelling policy `labels`, deciding each
/// call under `gate` and each configuration.
///
/// # Errors
/// [`EvalError::Scenario`] for a scenario that breaks the schema (unknown principal, name,
/// kind, role; bad weights); ledger and attribution errors.
pub fn run(
    principals: &BTreeMap<String, String>,
    scenario: &Scenario,
    labels: LabelPolicy,
    gate: &Policy,
) -> Result<Vec<CallOutcome>, EvalError> {
    let bad = |msg: String| EvalError::Scenario {
        scenario: scenario.name.clone(),
        msg,
    };
    let log = LogSigner::new(LOG_ORIGIN, principal_key("log")).map_err(crate::LedgerError::from)?;
    let mut ledger = Ledger::create(MemoryStore::default(), log, labels)?;
    let mut keys = BTreeMap::new();
    for (name, role) in principals {
        let role = Role::from_name(role).ok_or_else(|| bad(format!("unknown role {role}")))?;
        let key = principal_key(name);
        ledger.bind(key.key_id(), role, name)?;
        keys.insert(name.as_str(), key);
    }
    let key = |by: &str| {
        keys.get(by)
            .ok_or_else(|| bad(format!("unknown principal {by}")))
    };
    let kind = |k: &str| Kind::from_name(k).ok_or_else(|| bad(format!("unknown kind {k}")));
    let resolve = |names: &HashMap<&str, EntryId>, refs: &[String]| {
        refs.iter()
            .map(|r| {
                names
                    .get(r.as_str())
                    .copied()
                    .ok_or_else(|| bad(format!("unknown entry {r}")))
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let mut names: HashMap<&str, EntryId> = HashMap::new();
    let mut planted: HashMap<EntryId, Vec<u8>> = HashMap::new();
    let mut out = Vec::new();
    for (i, step) in scenario.step.iter().enumerate() {
        let time = TIME_BASE_MS + i as u64;
        match step {
            Step::Write {
                name,
                by,
                kind: k,
                text,
                context,
                attribution: method,
                weights,
                judge,
            } => {
                let ids = resolve(&names, context)?;
                let method = method.unwrap_or(Method::Coarse);
                let parents = match method {
                    Method::Coarse => attribution::coarse(&ids)?,
                    Method::Attention => {
                        let ws = weights
                            .iter()
                            .map(|&w| Weight::from_f64(w))
                            .collect::<Result<Vec<_>, _>>()
                            .map_err(|e| bad(e.to_string()))?;
                        attribution::attention(&ids, &ws)?
                    }
                    Method::LmSelfEval => {
                        // The judge reads the context as the agent does: through retrieval.
                        let texts = retrieved_texts(&mut ledger, &ids)?;
                        let ctx: Vec<ContextEntry<'_>> = ids
                            .iter()
                            .zip(&texts)
                            .map(|(&id, t)| ContextEntry { id, text: t })
                            .collect();
                        let judge: &dyn Judge = match judge {
                            JudgeKind::Overlap => &OverlapJudge,
                            JudgeKind::Obedient => &ObedientJudge,
                        };
                        attribution::lm_self_eval(judge, text, &ctx)?
                    }
                };
                let key = key(by)?;
                let entry = ProvEntry::new(key.key_id(), kind(k)?, text.as_bytes())
                    .with_parents(parents)
                    .with_attribution(attribution::method_code(method))
                    .with_time_ms(time);
                let a = ledger.append(entry, key, text.as_bytes())?;
                names.insert(name, a.id);
            }
            Step::Plant {
                name,
                by,
                kind: k,
                text,
            } => {
                let key = key(by)?;
                let entry =
                    ProvEntry::new(key.key_id(), kind(k)?, text.as_bytes()).with_time_ms(time);
                let s = SignedEntry::sign(entry, key).map_err(crate::LedgerError::from)?;
                names.insert(name, s.id());
                planted.insert(s.id(), s.cose().to_vec());
            }
            Step::Call {
                tool,
                attack,
                args,
                values,
            } => {
                let proposed: serde_json::Map<String, serde_json::Value> =
                    values.clone().into_iter().collect();
                let mut call = ToolCall {
                    tool: tool.clone(),
                    sensitive: false,
                    args: Vec::new(),
                };
                let mut all = Vec::new();
                for (param, refs) in args {
                    let ids = resolve(&names, refs)?;
                    all.extend_from_slice(&ids);
                    call.args.push((param.clone(), ids));
                }
                let retrieval_refused = ledger
                    .retrieve(&all)?
                    .iter()
                    .filter(|o| !matches!(o, Outcome::Verified(_)))
                    .count();
                let view = Presented {
                    ledger: &ledger,
                    planted: &planted,
                };
                // The paper's three configurations (authority repair is not one of them).
                let allowed = [
                    Config::NoDefence,
                    Config::SignaturesOnly,
                    Config::MemLineage,
                ]
                .map(|c| match c {
                    Config::NoDefence => true,
                    Config::SignaturesOnly => gate.decide(&call, &view).is_allow(),
                    _ => matches!(
                        ledger.gate_values(gate, &call, &proposed),
                        LineageDecision::Allow
                    ),
                });
                out.push(CallOutcome {
                    attack: *attack,
                    allowed,
                    signatures_and_log: gate.decide(&call, &SignaturesOnly(&ledger)).is_allow(),
                    retrieval_refused,
                    worst_label: all.iter().filter_map(|id| ledger.label(id)).max(),
                });
            }
        }
    }
    Ok(out)
}

/// The texts of `ids` as retrieval renders them to the agent (without the label prefix).
fn retrieved_texts<S: Store>(
    ledger: &mut Ledger<S>,
    ids: &[EntryId],
) -> Result<Vec<String>, EvalError> {
    ledger
        .retrieve(ids)?
        .into_iter()
        .map(|o| match o {
            Outcome::Verified(r) => Ok(r.text.unwrap_or_default()),
            Outcome::Tombstoned(id) | Outcome::Quarantined(id) => {
                Err(EvalError::Ledger(crate::LedgerError::UnknownEntry(id)))
            }
            Outcome::Rejected(_, e) => Err(EvalError::Ledger(e)),
        })
        .collect()
}

/// The signatures-only baseline over what the agent was handed: entries in the log are judged
/// by [`SignaturesOnly`] (signature re-verified, writer's role, no lineage); an entry planted
/// outside the log is judged the same way from its presented bytes (its signature verified
/// under its `kid`, the writer's role from the keyring). No inclusion check: that, with
/// lineage, is what memlineage adds.
struct Presented<'a, S: Store> {
    ledger: &'a Ledger<S>,
    planted: &'a HashMap<EntryId, Vec<u8>>,
}

impl<S: Store> LineageView for Presented<'_, S> {
    fn label_of(&self, id: &EntryId) -> Option<Label> {
        if let Some(l) = SignaturesOnly(self.ledger).label_of(id) {
            return Some(l);
        }
        let entry = SignedEntry::decode(self.planted.get(id)?).ok()?;
        let role = self.ledger.principal(&entry.writer())?.0;
        Some(if role.is_untrusted() {
            Label::External
        } else {
            Label::Trusted
        })
    }

    fn tombstoned(&self, id: &EntryId) -> bool {
        SignaturesOnly(self.ledger).tombstoned(id)
    }

    fn path_to_source(&self, id: &EntryId) -> Vec<EntryId> {
        vec![*id]
    }
}
