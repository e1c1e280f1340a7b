//! Replays AgentDojo ground-truth traces (schema: `fixtures/agentdojo/README.md`) into a ledger
//! and gates every sensitive tool call under three configurations.
//!
//! Per run: the prompt becomes a user entry; each tool call an agent entry whose parents are the
//! entries its arguments came from (`arg_sources`); each tool result an entry of the tool's own
//! principal (role tool, so External). In [`Mode::ViaMemory`] each tool result is also
//! summarised into an agent-written memory (parent: the result, coarse weight 1.0) and calls are
//! justified by those memories: the memory-laundering case. Configurations:
//! - [`Config::NoDefence`]: every call is allowed;
//! - [`Config::SignaturesOnly`]: each justifying entry's signature is checked and its *writer's*
//!   role decides (tool/external = untrusted), no lineage;
//! - [`Config::MemLineage`]: the gate over lineage labels;
//! - [`Config::MemLineageRepair`]: the gate with authority repair ([`crate::forensics::repair`]): a denied
//!   parameter whose value also has trusted provenance (the user's prompt, or a principal the
//!   policy names authoritative) is re-justified by it.

use crate::forensics::receipt::{receipt, Cause};
use crate::forensics::repair::{
    decide_with_repair_and_origin, Candidate, Found, RepairOutcome, TrustedValues,
};
use crate::gate::{Gating, LineageDecision, LineageView, Policy, ToolCall};
use crate::ledger::{Ledger, LedgerError};
use crate::lineage::quarantine::Reach;
use crate::lineage::Label;
use crate::record::{EntryId, Hash32, Kind, Parent, ProvEntry, Role, SignedEntry, WriterKey};
use crate::store::Store;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, Read};

mod figures;

pub use figures::{render_json, render_table, Config, Figures, Mode, Tally};

/// Largest run (one JSONL line) a replay reads, in bytes (64 MiB; the bundled workspace
/// suite's longest line is far below 1 MiB).
pub const MAX_RUN_BYTES: u64 = 64 << 20;

/// Base of writer-asserted times in replayed entries: 2025-01-01T00:00:00Z in ms (AgentDojo
/// pins its clock there).
const TIME_BASE_MS: u64 = 1_735_689_600_000;

/// One AgentDojo run (a line of the JSONL file). Unknown fields are ignored.
#[derive(Debug, Deserialize)]
pub struct Run {
    /// Suite name.
    pub suite: String,
    /// AgentDojo user task id.
    pub user_task: String,
    /// Injection task id, `None` for the run without injection.
    pub injection_task: Option<String>,
    /// Events in order.
    pub events: Vec<Event>,
}

/// One event of a run.
#[derive(Debug, Deserialize)]
pub struct Event {
    /// Position in the run.
    pub id: u64,
    /// `user`, `agent` or `tool:<name>`.
    pub principal: String,
    /// `prompt`, `tool_call` or `tool_result`.
    pub kind: String,
    /// Tool name for calls and results.
    pub tool: Option<String>,
    /// Call arguments.
    pub args: Option<serde_json::Value>,
    /// Prompt or tool output text.
    pub text: Option<String>,
    /// For a call: argument name → ids of earlier events its value came from.
    pub arg_sources: Option<BTreeMap<String, Vec<u64>>>,
    /// For a call: whether the tool is a sensitive sink.
    pub sensitive: Option<bool>,
    /// For a call: whether it belongs to the injection task.
    pub attack: Option<bool>,
}

/// A denial seen during replay, for the report.
#[derive(Debug, Clone)]
pub struct Example {
    /// Suite.
    pub suite: String,
    /// Mode.
    pub mode: Mode,
    /// Whether the call was an attack call.
    pub attack: bool,
    /// The denial as a sentence.
    pub text: String,
}

/// Replays runs into a ledger and tallies gate decisions.
pub struct Replayer<'l, S: Store> {
    ledger: &'l mut Ledger<S>,
    policy: Policy,
    keys: HashMap<String, WriterKey>,
    /// The tallies so far.
    pub figures: Figures,
    /// The first denial of an attack call and of a legitimate call per suite and mode.
    pub examples: Vec<Example>,
    /// When set, every injected tool result of an attacked run is flagged after the run's
    /// calls are decided ([`Replayer::flag_injections`]).
    flagger: Option<WriterKey>,
    /// Quarantine figures per suite and mode when flagging.
    pub flags: BTreeMap<String, BTreeMap<Mode, FlagTally>>,
    /// The first receipt per suite and mode, as a sentence.
    pub receipts: Vec<(String, Mode, String)>,
}

/// What flagging the injected tool results of attacked runs quarantined (`spec/forensics.md`
/// §6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlagTally {
    /// Injected tool results flagged (those whose text carries AgentDojo's `<INFORMATION>`
    /// attack marker).
    pub flagged: u64,
    /// Justifying entries of attack calls that descend from a flagged result (over any edge).
    pub attack_justifications: u64,
    /// Of those, quarantined.
    pub quarantined: u64,
    /// Of those, with a receipt naming a flag.
    pub receipts: u64,
    /// Justifying entries of attack calls that do not descend from a flagged result (values
    /// that also occur in clean output, matched by coincidence).
    pub other_justifications: u64,
}

impl<'l, S: Store> Replayer<'l, S> {
    /// A replayer appending to `ledger` and gating under `policy`.
    pub fn new(ledger: &'l mut Ledger<S>, policy: Policy) -> Self {
        Replayer {
            ledger,
            policy,
            keys: HashMap::new(),
            figures: Figures::new(),
            examples: Vec::new(),
            flagger: None,
            flags: BTreeMap::new(),
            receipts: Vec::new(),
        }
    }

    /// Flags every injected tool result of each attacked run (reach: every edge), signed by
    /// `key`, which this call binds as the `system` principal `advisory`, once the run's calls
    /// are decided (so the gate figures are unchanged). Then checks that every attack call's
    /// justifying entries that descend from a flagged result are quarantined with a receipt.
    ///
    /// # Errors
    /// Ledger errors binding the key.
    pub fn flag_injections(&mut self, key: WriterKey) -> Result<(), ReplayError> {
        if self.ledger.principal(&key.key_id()).is_none() {
            self.ledger.bind(key.key_id(), Role::System, "advisory")?;
        }
        self.flagger = Some(key);
        Ok(())
    }

    /// Replays every line of a JSONL trace file in each of `modes`.
    ///
    /// # Errors
    /// [`ReplayError::Parse`] naming the line of a malformed run (runs before it stay
    /// recorded); ledger errors.
    pub fn replay_reader(
        &mut self,
        mut reader: impl BufRead,
        modes: &[Mode],
    ) -> Result<u64, ReplayError> {
        let mut runs = 0;
        let mut buf = Vec::new();
        for n in 0.. {
            buf.clear();
            let parse = |msg: String| ReplayError::Parse { line: n + 1, msg };
            // A line may hold at most MAX_RUN_BYTES: a hostile file cannot make us allocate more.
            let read = (&mut reader)
                .take(MAX_RUN_BYTES + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| parse(e.to_string()))?;
            if read == 0 {
                break;
            }
            if buf.len() as u64 > MAX_RUN_BYTES {
                return Err(parse(format!("longer than {MAX_RUN_BYTES} bytes")));
            }
            let line = std::str::from_utf8(&buf).map_err(|e| parse(e.to_string()))?;
            if line.trim().is_empty() {
                continue;
            }
            let run: Run = serde_json::from_str(line).map_err(|e| parse(e.to_string()))?;
            for &mode in modes {
                self.replay_run(&run, mode).map_err(|e| match e {
                    ReplayError::BadRun { reason: msg } => ReplayError::Parse { line: n + 1, msg },
                    other => other,
                })?;
            }
            runs += 1;
        }
        Ok(runs)
    }

    /// The key of a principal named in the trace, bound in the keyring on first use.
    fn key(&mut self, principal: &str) -> Result<&WriterKey, ReplayError> {
        if !self.keys.contains_key(principal) {
            let role = match principal {
                "user" => Role::User,
                "agent" => Role::Agent,
                p if p.starts_with("tool:") => Role::Tool,
                _ => Role::External,
            };
            let key = WriterKey::for_label(&format!("agentdojo/{principal}"));
            self.ledger.bind(key.key_id(), role, principal)?;
            self.keys.insert(principal.to_string(), key);
        }
        self.keys.get(principal).ok_or_else(|| ReplayError::BadRun {
            reason: format!("no key for {principal}"),
        })
    }

    /// Records one run in one batch, then decides each sensitive call under every configuration.
    ///
    /// # Errors
    /// [`ReplayError::BadRun`] for an event that breaks the schema; ledger errors.
    pub fn replay_run(&mut self, run: &Run, mode: Mode) -> Result<(), ReplayError> {
        if run.events.is_empty() {
            return Err(ReplayError::BadRun {
                reason: "run has no events".into(),
            });
        }
        for p in ["user", "agent"] {
            self.key(p)?;
        }
        for e in &run.events {
            self.key(&e.principal)?;
        }
        let run_tag = format!(
            "agentdojo/{}/{}/{}/{}",
            run.suite,
            run.user_task,
            run.injection_task.as_deref().unwrap_or("none"),
            mode.name()
        );
        let mut batch: Vec<(SignedEntry, Vec<u8>)> = Vec::new();
        let mut justify: HashMap<u64, EntryId> = HashMap::new();
        let mut calls: HashMap<u64, EntryId> = HashMap::new();
        let mut results: HashMap<u64, EntryId> = HashMap::new();
        for ev in &run.events {
            let base = self.ledger.len() + batch.len() as u64;
            let source = Hash32::digest(format!("{run_tag}/{}", ev.id).as_bytes());
            match ev.kind.as_str() {
                "prompt" => {
                    let text = ev.text.clone().unwrap_or_default();
                    let e = self.sign(
                        &ev.principal,
                        Kind::Prompt,
                        text.into_bytes(),
                        vec![],
                        source,
                        base,
                    )?;
                    justify.insert(ev.id, e.0.id());
                    batch.push(e);
                }
                "tool_call" => {
                    let mut parents: BTreeSet<EntryId> = BTreeSet::new();
                    for ids in ev.arg_sources.iter().flat_map(|m| m.values()) {
                        for i in ids {
                            parents.insert(
                                *justify
                                    .get(i)
                                    .ok_or_else(|| bad(ev, "arg source not an earlier event"))?,
                            );
                        }
                    }
                    let content = serde_json::json!({"tool": ev.tool, "args": ev.args}).to_string();
                    let parents = parents.into_iter().map(Parent::full).collect();
                    let e = self.sign(
                        "agent",
                        Kind::ToolCall,
                        content.into_bytes(),
                        parents,
                        source,
                        base,
                    )?;
                    calls.insert(ev.id, e.0.id());
                    batch.push(e);
                }
                "tool_result" => {
                    let text = ev.text.clone().unwrap_or_default();
                    let parents = match ev.id.checked_sub(1).and_then(|c| calls.get(&c)) {
                        Some(call) => vec![Parent::full(*call)],
                        None => vec![],
                    };
                    let r = self.sign(
                        &ev.principal,
                        Kind::ToolResult,
                        text.clone().into_bytes(),
                        parents,
                        source,
                        base,
                    )?;
                    let result_id = r.0.id();
                    results.insert(ev.id, result_id);
                    batch.push(r);
                    justify.insert(ev.id, result_id);
                    if mode == Mode::ViaMemory {
                        let memory = format!(
                            "memory of {} output: {text}",
                            ev.tool.as_deref().unwrap_or("tool")
                        );
                        let parents = vec![Parent::full(result_id)];
                        let m = self.sign(
                            "agent",
                            Kind::Summary,
                            memory.into_bytes(),
                            parents,
                            source,
                            base + 1,
                        )?;
                        justify.insert(ev.id, m.0.id());
                        batch.push(m);
                    }
                }
                _ => return Err(bad(ev, "unknown event kind")),
            }
        }
        let entries = batch
            .iter()
            .map(|(s, c)| (s.clone(), c.as_slice()))
            .collect();
        self.ledger.append_signed(entries)?;
        for ev in run.events.iter().filter(|e| e.kind == "tool_call") {
            self.decide(run, mode, ev, &justify)?;
        }
        if run.injection_task.is_some() && self.flagger.is_some() {
            self.flag_run(run, mode, &results, &justify)?;
        }
        Ok(())
    }

    /// Flags the run's injected tool results and tallies what the quarantine reached.
    fn flag_run(
        &mut self,
        run: &Run,
        mode: Mode,
        results: &HashMap<u64, EntryId>,
        justify: &HashMap<u64, EntryId>,
    ) -> Result<(), ReplayError> {
        let Some(key) = self.flagger.take() else {
            return Ok(());
        };
        let injected: BTreeSet<u64> = run
            .events
            .iter()
            .filter(|e| e.kind == "tool_result")
            .filter(|e| {
                e.text
                    .as_deref()
                    .is_some_and(|t| t.contains("<INFORMATION>"))
            })
            .map(|e| e.id)
            .collect();
        let mut tally = FlagTally::default();
        let mut outcome: Result<(), ReplayError> = Ok(());
        for ev_id in &injected {
            if let Some(id) = results.get(ev_id) {
                let reason = format!(
                    "AgentDojo {} planted a prompt injection in this tool output",
                    run.injection_task.as_deref().unwrap_or("injection task")
                );
                if let Err(e) = self.ledger.flag(*id, Reach::All, &key, &reason) {
                    outcome = Err(e.into());
                    break;
                }
                tally.flagged += 1;
            }
        }
        self.flagger = Some(key);
        outcome?;
        for ev in run
            .events
            .iter()
            .filter(|e| e.kind == "tool_call" && e.attack == Some(true))
        {
            for (param, ids) in ev.arg_sources.iter().flatten() {
                for i in ids {
                    let Some(j) = justify.get(i) else { continue };
                    // The justifying entry is the result itself (direct) or the memory of it.
                    if !injected.contains(i) {
                        tally.other_justifications += 1;
                        continue;
                    }
                    tally.attack_justifications += 1;
                    if !self.ledger.is_quarantined(j) {
                        continue;
                    }
                    tally.quarantined += 1;
                    if let Ok(mut r) = receipt(&*self.ledger, j) {
                        if matches!(r.cause, Cause::Flagged { .. }) {
                            r.call = ev.tool.clone().map(|t| (t, param.clone()));
                            tally.receipts += 1;
                            let seen = self
                                .receipts
                                .iter()
                                .any(|(s, m, _)| *s == run.suite && *m == mode);
                            if !seen {
                                self.receipts.push((run.suite.clone(), mode, r.sentence()));
                            }
                        }
                    }
                }
            }
        }
        let t = self
            .flags
            .entry(run.suite.clone())
            .or_default()
            .entry(mode)
            .or_default();
        t.flagged += tally.flagged;
        t.attack_justifications += tally.attack_justifications;
        t.quarantined += tally.quarantined;
        t.receipts += tally.receipts;
        t.other_justifications += tally.other_justifications;
        Ok(())
    }

    fn sign(
        &mut self,
        principal: &str,
        kind: Kind,
        content: Vec<u8>,
        parents: Vec<Parent>,
        source: Hash32,
        index: u64,
    ) -> Result<(SignedEntry, Vec<u8>), ReplayError> {
        let key = self.key(principal)?;
        let e = ProvEntry::new(key.key_id(), kind, &content)
            .with_parents(parents)
            .with_source_hash(source)
            .with_time_ms(TIME_BASE_MS + index);
        Ok((
            SignedEntry::sign(e, key).map_err(LedgerError::from)?,
            content,
        ))
    }

    fn decide(
        &mut self,
        run: &Run,
        mode: Mode,
        ev: &Event,
        justify: &HashMap<u64, EntryId>,
    ) -> Result<(), ReplayError> {
        let mut call = ToolCall {
            tool: ev
                .tool
                .clone()
                .ok_or_else(|| bad(ev, "tool_call without tool"))?,
            sensitive: ev.sensitive.unwrap_or(false),
            args: Vec::new(),
        };
        for (name, ids) in ev.arg_sources.iter().flatten() {
            let entries = ids.iter().filter_map(|i| justify.get(i).copied()).collect();
            call.args.push((name.clone(), entries));
        }
        // Whether the call is gated is the policy's one answer (`Policy::gates`), as for the
        // hooks, the MCP fronts and the explorer; the trace's own mark (AgentDojo's ground
        // truth of which calls are sensitive) gates too: the worst of the two decides. A call
        // gated only if it writes a gated file counts as gated (the replay knows no
        // directories: fail closed).
        let proposed = match &ev.args {
            Some(serde_json::Value::Object(m)) => m.clone(),
            _ => serde_json::Map::new(),
        };
        if !call.sensitive && self.policy.gates(&call.tool, &proposed) == Gating::Pass {
            return Ok(());
        }
        // Gated: decided as sensitive, whichever of the two gated it.
        call.sensitive = true;
        let attack = ev.attack.unwrap_or(false);
        // `proposed`: the proposed values, also for the origin check (`spec/gate.md` §3.1).
        for config in Config::ALL {
            let mut repaired = false;
            let decision = match config {
                Config::NoDefence => LineageDecision::Allow,
                Config::SignaturesOnly => self.policy.decide(&call, &SignaturesOnly(&*self.ledger)),
                Config::MemLineage => {
                    crate::gate::decide(&self.policy, &call, &proposed, &*self.ledger)
                }
                Config::MemLineageRepair => {
                    let (values, trusted) = self.provenance(ev, &call);
                    match decide_with_repair_and_origin(
                        &self.policy,
                        &*self.ledger,
                        &call,
                        &proposed,
                        &values,
                        &trusted,
                    ) {
                        RepairOutcome::Allowed => LineageDecision::Allow,
                        RepairOutcome::Repaired { values: v, .. } => {
                            // The replay's candidates carry the proposed values only, so a
                            // repaired call is the proposed call; checked, not assumed.
                            if v != values {
                                return Err(bad(ev, "repair changed a value"));
                            }
                            repaired = true;
                            LineageDecision::Allow
                        }
                        RepairOutcome::Denied { denial, .. } => LineageDecision::Deny(denial),
                    }
                }
            };
            let t = self
                .figures
                .entry(run.suite.clone())
                .or_default()
                .entry(mode)
                .or_default()
                .entry(config)
                .or_default();
            let allowed = u64::from(decision.is_allow());
            t.repaired += u64::from(repaired);
            if attack {
                t.attack_calls += 1;
                t.attack_allowed += allowed;
            } else {
                t.legit_calls += 1;
                t.legit_allowed += allowed;
            }
            if let (Config::MemLineage, LineageDecision::Deny(d)) = (config, &decision) {
                let seen = self
                    .examples
                    .iter()
                    .any(|x| x.suite == run.suite && x.mode == mode && x.attack == attack);
                if !seen {
                    self.examples.push(Example {
                        suite: run.suite.clone(),
                        mode,
                        attack,
                        text: d.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Per-call provenance for authority repair: each parameter's value as text and, as candidates,
/// the same value justified by each one of its recorded entries with that entry's principal.
struct CallProvenance(BTreeMap<String, Vec<Candidate>>);

impl TrustedValues for CallProvenance {
    fn candidates(&self, _tool: &str, param: &str) -> Vec<Candidate> {
        self.0.get(param).cloned().unwrap_or_default()
    }
}

impl<S: Store> Replayer<'_, S> {
    fn provenance(
        &self,
        ev: &Event,
        call: &ToolCall,
    ) -> (BTreeMap<String, String>, CallProvenance) {
        let mut values = BTreeMap::new();
        let mut cands = BTreeMap::new();
        for (param, entries) in &call.args {
            let value = match ev.args.as_ref().and_then(|a| a.get(param)) {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let list: Vec<Candidate> = entries
                .iter()
                .map(|id| Candidate {
                    value: value.clone(),
                    entries: vec![*id],
                    // The fixtures' arg_sources come from exact value matching in text.
                    found: Found::TextMatch,
                })
                .collect();
            values.insert(param.clone(), value);
            cands.insert(param.clone(), list);
        }
        (values, CallProvenance(cands))
    }
}

/// The signatures-only baseline: an entry is trusted iff its signature verifies and its writer's
/// role is not tool/external. Lineage is ignored.
pub struct SignaturesOnly<'a, S: Store>(pub &'a Ledger<S>);

impl<S: Store> LineageView for SignaturesOnly<'_, S> {
    fn label_of(&self, id: &EntryId) -> Option<Label> {
        let entry = self.0.get(id).ok()?;
        let role = self.0.principal(&entry.writer())?.0;
        Some(if role.is_untrusted() {
            Label::External
        } else {
            Label::Trusted
        })
    }

    fn tombstoned(&self, id: &EntryId) -> bool {
        self.0.is_tombstoned(id)
    }

    fn path_to_source(&self, id: &EntryId) -> Vec<EntryId> {
        vec![*id]
    }
}

fn bad(ev: &Event, what: &str) -> ReplayError {
    ReplayError::BadRun {
        reason: format!("event {}: {what}", ev.id),
    }
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A line is not a run of the AgentDojo schema.
    #[error("trace line {line}: {msg}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// A run breaks the schema (line number added by the reader).
    #[error("bad run: {reason}")]
    BadRun {
        /// What is wrong, in words (`event 3: unknown event kind`).
        reason: String,
    },
    /// The ledger refused an append.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}
