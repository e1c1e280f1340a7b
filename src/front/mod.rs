//! The agent-runtime front (`spec/hooks.md`, `spec/mcp.md`): one façade over a [`Ledger`] that
//! the command hooks ([`crate::front::hook`]), the MCP server (`front::mcp`, feature `mcp`) and
//! embedding runtimes (`examples/agent_loop.rs`) share.
//!
//! A [`Front`] records what an agent session reads (prompts, tool output, retrieved memories)
//! into the ledger under principals it holds the keys of, keeps the session's *read set*, and
//! decides proposed tool calls: each argument value is matched by exact value against the texts
//! the session has read ([`matching`]), and the gate ([`Policy::decide`]) checks the labels of
//! the entries it came from. Writers are never taken from the caller: the front signs with the
//! keys its configuration names.

pub mod ask;
pub mod hook;
pub mod hookd;
pub mod keystore;
pub mod pin;
pub mod privsep;
pub mod protect;
pub mod secret_values;
pub mod secrets;
pub mod sinks;
pub mod tools;
mod error;
mod gating;
mod keys;
mod retrieval;
mod rules;
mod secret_flow;
mod session;
mod sources;
mod unique_json;
mod verdict;
mod write;
pub use error::FrontError;
pub use keys::{DerivedKeys, GeneratedKeys, KeyFile, Keys};
pub use retrieval::{WITHHELD_OVER_BUDGET, WITHHELD_QUARANTINED, WITHHELD_TOMBSTONED};
use secret_flow::SecretNode;
pub use session::{
    session_context, NewestReader, Session, Sighting, SESSION_START, UNSEEN_HISTORY,
};
use sources::haystack_of;
use verdict::worst;
pub use verdict::{Checked, Refusal, Verdict};
use write::{Ref, Spec};
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;

use crate::gate::extract;
use crate::gate::matching;
use crate::gate::{Gating, LineageDecision, Policy, ToolCall};
use crate::ledger::retrieve::Outcome;
use crate::ledger::{Appended, Ledger};
use crate::record::{EntryId, Kind, Parent, Role, Weight};
use crate::store::Store;

use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// The principal name prompts are recorded under (role user).
pub const USER: &str = "user";
/// The default principal the agent's own writes are recorded under (role agent).
pub const AGENT: &str = "agent";
/// The principal (role external) of the context entry a front gives a write it cannot tie to
/// a session's reads (`spec/lineage.md` §4.2): the write then derives from External input.
pub const UNKNOWN_CONTEXT: &str = "context:unknown";
/// Most uncovered reads an agent write names one by one; past it the front first folds them
/// into a new context entry (`spec/lineage.md` §4.2), so a write costs the same after 10 reads
/// as after 100,000.
pub const FOLD_AT: usize = 32;

/// The front: a ledger, a gate policy, the keys of its principals and a text cache.
pub struct Front<S: Store, K: Keys> {
    ledger: Ledger<S>,
    policy: Policy,
    keys: K,
    /// The principal the agent's own writes are signed by.
    agent: String,
    /// The last writer time used, in ms since the Unix epoch.
    last_ms: u64,
    /// The haystacks of the texts this front has read, indexed (`spec/hooks.md` §4.7).
    haystacks: matching::ReadIndex,
    /// How many entries [`Front::newest_reader`] has read, and what it found.
    newest: Option<(u64, NewestReader)>,
    /// Whether sessions must have been seen from their start ([`Front::require_start`]).
    require_start: bool,
    /// The agent's working directory, if known: paths under it are not specific tokens
    /// (`spec/hooks.md` §4.5).
    project: Option<String>,
    /// The guard's own resources, refused to every call (`spec/hooks.md` §13).
    protected: protect::Protected,
    /// Verified entries the secrecy rule has judged (`spec/hooks.md` §16.1): each one's own
    /// secret source, if any, and its parents; entries are immutable, so a verdict holds
    /// for the working directory it was made in ([`Front::set_project`] clears it on change).
    secret_nodes: HashMap<EntryId, SecretNode>,
    /// The working directory of `secret_nodes`' verdicts.
    secret_nodes_cwd: Option<String>,
    /// The policy's secrecy rule, compiled once for this process's home directory.
    secret_rules: std::sync::Arc<secrets::SecretRules>,
    /// The policy's gated writes (`spec/hooks.md` §17.3), for the same home directory.
    write_rules: std::sync::Arc<sinks::writes::WriteRules>,
    /// What [`Front::is_statement`] read of verified entries (writer key, kind, context
    /// hash: fixed by the signed bytes), under the store's content epoch.
    facts: sources::EntryFacts,
    /// The ledger handle ([`Ledger::instance`]) the texts, secrecy judgements and facts above
    /// were verified against ([`Front::verified_here`]).
    verified_under: u64,
}

/// What [`Front::screen`] makes of a call before any lineage is looked at.
///
/// Exhaustive: this is a decision before lineage; a new one must break every caller's build
/// rather than fall into a wildcard arm that might allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Screen {
    /// It touches a protected resource: refused in every session.
    Protected(protect::Touch),
    /// The policy does not gate it: allowed without reading the session.
    NotGated,
    /// The policy gates it: its arguments' lineage decides ([`Front::check`]).
    Gated,
    /// The policy does not gate it, but it sends data off the machine: the secrecy rule of
    /// `spec/hooks.md` §16 alone judges it, on the session's reads.
    Egress,
}

impl<S: Store, K: Keys> Front<S, K> {
    /// A front over `ledger`, gating with `policy`, signing with `keys`; the agent's writes
    /// are signed as principal [`AGENT`].
    pub fn new(ledger: Ledger<S>, policy: Policy, keys: K) -> Self {
        let (secret_rules, write_rules) = rules::compiled(&policy);
        let verified_under = ledger.instance();
        Front {
            verified_under,
            ledger,
            policy,
            keys,
            agent: AGENT.to_string(),
            project: None,
            protected: protect::Protected::default(),
            secret_nodes: HashMap::new(),
            secret_nodes_cwd: None,
            secret_rules,
            write_rules,
            last_ms: 0,
            haystacks: matching::ReadIndex::new(),
            newest: None,
            require_start: false,
            facts: sources::EntryFacts::default(),
        }
    }

    /// Requires every session this front decides or writes for to have been seen from its
    /// start (`spec/hooks.md` §3.1): the hooks and the MCP server, whose sessions begin in
    /// the agent, not here, set it. A session neither started under the hooks
    /// ([`Session::started`]) nor holding an unseen-history entry ([`Session::unseen`]) then
    /// has its sensitive calls refused ([`Refusal::UnseenStart`]) and its writes untied
    /// (derived from an unknown context). Default: off — an embedding runtime that makes its
    /// sessions itself sees them begin.
    pub fn require_start(&mut self, on: bool) {
        self.require_start = on;
    }

    /// Signs the agent's writes as principal `name` (role agent) instead of [`AGENT`].
    pub fn with_agent(mut self, name: &str) -> Self {
        self.agent = name.to_string();
        self
    }

    /// The ledger, to read.
    pub fn ledger(&self) -> &Ledger<S> {
        &self.ledger
    }

    /// The ledger, to append to or refresh (e.g. [`Ledger::flag`], [`Ledger::refresh`]).
    ///
    /// # Note
    /// Replacing the ledger through it (`*front.ledger_mut() = other`) is detected: before
    /// its next decision or write the front sees another ledger handle and drops what it
    /// verified against the old one (the read texts, the secrecy rule's judgements, the
    /// statement facts, the newest reader), so nothing verified against one ledger decides
    /// against another.
    pub fn ledger_mut(&mut self) -> &mut Ledger<S> {
        &mut self.ledger
    }

    /// The principal the agent's writes are signed by.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The gate policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The key source (e.g. to save a key file).
    pub fn keys(&self) -> &K {
        &self.keys
    }

    /// The key source, to sign as another of the front's principals (the MCP server's flag
    /// entries, `spec/mcp.md` §2.5).
    pub fn keys_mut(&mut self) -> &mut K {
        &mut self.keys
    }

    /// Sets the agent's working directory for the next checks (the hook event's `cwd`):
    /// paths under it are not specific tokens of a command (`spec/hooks.md` §4.5).
    pub fn set_project(&mut self, dir: Option<&str>) {
        self.project = dir.map(str::to_string);
    }

    /// Refuses every call that touches `protected` (`spec/hooks.md` §13); default: nothing
    /// is protected (a front embedded without files of its own).
    pub fn set_protected(&mut self, protected: protect::Protected) {
        self.protected = protected;
    }

    /// The first step of every decision, shared by [`Front::check`] and the hooks' PreToolUse:
    /// a call that touches a protected resource (in the working directory set by
    /// [`Front::set_project`]) is [`Screen::Protected`]; else the policy says whether it is
    /// gated ([`Policy::gates`], `spec/gate.md` §2, `spec/hooks.md` §10.2), a tool's write to
    /// a gated file judged by this front's write paths (§17.3); an ungated call that sends
    /// data off the machine is [`Screen::Egress`] (§16).
    pub fn screen(&self, tool: &str, args: &serde_json::Map<String, Value>) -> Screen {
        let cwd = self.project.as_deref().map(Path::new);
        if let Some(t) = self.protected.touch(tool, args, cwd) {
            return Screen::Protected(t);
        }
        let gated = match self.policy.gates(tool, args) {
            Gating::Gate => true,
            Gating::Pass => false,
            // A write to a gated file (spec/hooks.md §17.3), under this front's write paths.
            Gating::GateIfWritesGated => self.gated_write(self.policy_name(tool), args),
        };
        if gated {
            Screen::Gated
        } else if self.secret_rules().egress(tool, args, cwd).is_some() {
            // A read-only or ungated call that sends data off the machine (`WebSearch`) is
            // still judged by the secrecy rule (§16).
            Screen::Egress
        } else {
            Screen::NotGated
        }
    }

    /// Whether the policy classifies `tool` (as the agent names it): a key of the policy
    /// names it or, for `mcp__<server>__<name>`, its bare name (`spec/hooks.md` §15.3).
    /// Unclassified tools are gated unless the policy's `unknown_tools` is `allow`.
    pub fn classifies(&self, tool: &str) -> bool {
        self.policy.classifies(tool)
    }

    /// Records a user prompt (principal [`USER`], role user: Trusted) and adds it to the read
    /// set.
    ///
    /// # Errors
    /// [`FrontError`] from keys or the ledger; nothing is recorded then.
    pub fn record_prompt(
        &mut self,
        session: &mut Session,
        text: &str,
    ) -> Result<Appended, FrontError> {
        let intact = self.session_sealed(session);
        let a = self.write(session, Spec::new(USER, Role::User, Kind::Prompt, text))?;
        session.read(a.id);
        self.reseal(session, intact);
        Ok(a)
    }

    /// Records a tool call and its output, as the replay does: an agent `tool_call` entry whose
    /// parents are the entries its arguments came from, then a `tool_result` entry of principal
    /// `tool:<tool>` (role tool: External) with the call as parent, added to the read set.
    /// Returns `(call, result)`.
    ///
    /// # Errors
    /// [`FrontError`]; on error the result is not recorded.
    pub fn record_tool_result(
        &mut self,
        session: &mut Session,
        tool: &str,
        input: &Value,
        output: &str,
    ) -> Result<(Appended, Appended), FrontError> {
        let intact = self.session_sealed(session);
        let mut sources: Vec<EntryId> = Vec::new();
        if let Value::Object(args) = input {
            for v in args.values() {
                sources.extend(self.sources(session, v)?);
            }
        }
        // An unverifiable read the ledger no longer knows cannot be a parent; it still
        // taints the call's arguments at the gate.
        sources.retain(|id| self.ledger.index_of(id).is_some());
        sources.sort();
        sources.dedup();
        let declared = sources.into_iter().map(Parent::full).collect();
        // The call is the agent's write: it descends from everything the session read. The
        // call and its result are written together, all or nothing.
        let lineage = self.session_parents(session, intact, declared);
        let content = serde_json::json!({"tool": tool, "args": input}).to_string();
        let call = Spec::new(&self.agent, Role::Agent, Kind::ToolCall, &content);
        let result = Spec::new(
            &format!("tool:{tool}"),
            Role::Tool,
            Kind::ToolResult,
            output,
        )
        .with_parents(vec![(Ref::Batch(0), Weight::ONE)]);
        let mut out = self.write_after(session, lineage, vec![call, result])?;
        let (Some(result), Some(call)) = (out.pop(), out.pop()) else {
            return Err(FrontError::BatchOrder);
        };
        session.read(result.id);
        self.reseal(session, intact);
        Ok((call, result))
    }

    /// Records a memory the agent writes (summary, fact…), signed by the agent principal, and
    /// adds it to the read set. Its parents are everything the session has read (through the
    /// session's context entry and the reads it does not cover yet, each at full weight),
    /// then `parents`: declared parents can only add lineage, and a declared weight lowers a
    /// read's edge only under the policy's `read_weights = "declared"` (`spec/lineage.md`
    /// §4.2). A write the front cannot tie to verified reads (a session that has read
    /// nothing, whose record does not verify, with unrecorded output, or whose reads the
    /// ledger no longer has) also descends from an External [`UNKNOWN_CONTEXT`] entry: it is
    /// never labelled better than Derived-Untrusted. The label follows from the parents.
    ///
    /// # Errors
    /// [`FrontError::Kind`] for a kind other than summary or fact (those are what the ledger
    /// counts as the agent's memories, [`Front::catch_up`]); [`FrontError`] from keys or the
    /// ledger, e.g. an unknown declared
    /// parent or more than [`crate::record::MAX_PARENTS`] of them.
    pub fn remember(
        &mut self,
        session: &mut Session,
        kind: Kind,
        text: &str,
        parents: Vec<Parent>,
    ) -> Result<Appended, FrontError> {
        let intact = self.session_sealed(session);
        if !matches!(kind, Kind::Summary | Kind::Fact) {
            return Err(FrontError::Kind(kind.name()));
        }
        let lineage = self.session_parents(session, intact, parents);
        let memory = Spec::new(&self.agent, Role::Agent, kind, text);
        let a = self.write_last(session, lineage, memory)?;
        session.read(a.id);
        self.reseal(session, intact);
        Ok(a)
    }

    /// Flags `source` as a bad source (`spec/forensics.md` §2) with `reason`, signed by the
    /// system principal `flagger`, on behalf of the agent of `session`: the reason is text the
    /// agent chose, so the flag entry descends from everything the session read, as a memory
    /// does ([`Front::remember`], `spec/lineage.md` §4.2). Its quarantine works the same; what
    /// changes is that its reason, retrieved into another session, is never better labelled
    /// than what the agent had read.
    ///
    /// # Errors
    /// As [`Ledger::flag`]: an unknown source, a flag the rules refuse.
    pub fn flag(
        &mut self,
        session: &mut Session,
        flagger: &str,
        source: EntryId,
        reach: crate::lineage::quarantine::Reach,
        reason: &str,
    ) -> Result<Appended, FrontError> {
        let intact = self.session_sealed(session);
        let lineage = self.session_parents(session, intact, Vec::new());
        let mut flag = Spec::new(flagger, Role::System, reach.kind(), reason);
        flag.target = Some(source);
        let a = self.write_last(session, lineage, flag)?;
        self.reseal(session, intact);
        Ok(a)
    }

    /// Deletes `target` by a tombstone signed by the agent principal with `reason`, on behalf
    /// of the agent of `session`: like [`Front::flag`], the tombstone descends from what the
    /// session read.
    ///
    /// # Errors
    /// As [`Ledger::tombstone`].
    pub fn tombstone(
        &mut self,
        session: &mut Session,
        target: EntryId,
        reason: &str,
    ) -> Result<Appended, FrontError> {
        let intact = self.session_sealed(session);
        let lineage = self.session_parents(session, intact, Vec::new());
        let mut tombstone = Spec::new(&self.agent, Role::Agent, Kind::Tombstone, reason);
        tombstone.target = Some(target);
        let a = self.write_last(session, lineage, tombstone)?;
        self.reseal(session, intact);
        Ok(a)
    }

    /// Decides a proposed call of `tool` with `args` (a JSON object). Every argument is
    /// justified by the read-set entries its value matches ([`Front::sources`],
    /// `spec/hooks.md` §4); entries the caller names in `given` for an argument are added to
    /// those (a caller can make a decision stricter, never looser: a cited entry taints, but an
    /// argument nothing read holds stays unsourced and composed, §15.1; a cited entry that is
    /// unknown or does not verify refuses the call). Calls the policy does not mark sensitive
    /// are allowed without matching.
    ///
    /// # Errors
    /// [`FrontError`] only for ledger failures while reading the read set.
    pub fn check(
        &mut self,
        session: &Session,
        tool: &str,
        args: &serde_json::Map<String, Value>,
        given: &HashMap<String, Vec<EntryId>>,
    ) -> Result<Checked, FrontError> {
        let screen = self.screen(tool, args);
        self.check_screened(screen, session, tool, args, given)
    }

    /// [`Front::check`] of a call already screened by [`Front::screen`] (the hooks screen
    /// first, to read the session only for gated calls). Crate-private: a screen not made by
    /// `screen` for this very call would be a second door.
    pub(crate) fn check_screened(
        &mut self,
        screen: Screen,
        session: &Session,
        tool: &str,
        args: &serde_json::Map<String, Value>,
        given: &HashMap<String, Vec<EntryId>>,
    ) -> Result<Checked, FrontError> {
        let mut call = ToolCall {
            tool: self.policy_name(tool).to_string(),
            sensitive: false,
            args: Vec::new(),
        };
        let sensitive = match screen {
            Screen::Protected(touch) => {
                return Ok(Checked {
                    call,
                    sensitive: true,
                    verdict: Verdict::Deny(Refusal::Protected {
                        tool: tool.to_string(),
                        touch,
                    }),
                })
            }
            Screen::NotGated => false,
            Screen::Gated => true,
            Screen::Egress => {
                // Not gated: only the secrecy rule, on reads that must be known (fail closed).
                let verdict = if session.unrecorded > 0 {
                    Verdict::Deny(Refusal::Unrecorded {
                        count: session.unrecorded,
                        session: session.id.clone(),
                    })
                } else if self.unseen_start(session) {
                    Verdict::Deny(Refusal::UnseenStart {
                        session: session.id.clone(),
                    })
                } else if !self.session_sealed(session) {
                    Verdict::Deny(Refusal::Unreadable {
                        reason: format!(
                            "the read record of session {:?} was altered outside memlineage, so \
                         what it read is unknown",
                            session.id
                        ),
                    })
                } else {
                    self.secret_flow(session, tool, args, false)
                        .map_or(Verdict::Allow, Verdict::Deny)
                };
                return Ok(Checked {
                    call,
                    sensitive: true,
                    verdict,
                });
            }
        };
        // A gated call is sensitive whether the policy names the tool or not (an unknown tool
        // gated by `unknown_tools`, spec/hooks.md §15.3).
        call.sensitive = sensitive;
        if !sensitive {
            return Ok(Checked {
                call,
                sensitive,
                verdict: Verdict::Allow,
            });
        }
        // An entry the caller cites must verify (signature, inclusion under the signed
        // checkpoint): one that does not is refused, whatever label the store gives it
        // (`spec/gate.md` §7).
        let cited: Vec<EntryId> = given.values().flatten().copied().collect();
        if !cited.is_empty() {
            for o in self.ledger.retrieve(&cited)? {
                if let Outcome::Rejected(id, e) = o {
                    let why = format!(
                        "{}: cited entry {} cannot be verified: {e}",
                        call.tool,
                        id.short()
                    );
                    return Ok(Checked {
                        call,
                        sensitive,
                        verdict: Verdict::Deny(Refusal::Unreadable { reason: why }),
                    });
                }
            }
        }
        // The parameters with something to match and no source (`spec/hooks.md` §15.1).
        let mut composed: Vec<String> = Vec::new();
        // Those of them naming where the call goes (an IBAN, a URL, an e-mail address or host).
        let mut destinations: Vec<String> = Vec::new();
        // The same call with every read each value matches, statements or not, and the
        // statements that made the difference (`spec/hooks.md` §4.4).
        let mut unstated = call.clone();
        let mut statements: Vec<(String, EntryId)> = Vec::new();
        // What the call runs, installs or writes beyond its words (§17).
        let sinks = self.call_sinks(tool, args);
        // The first argument one of whose sources is a read whose text cannot be read or
        // verified (`spec/hooks.md` §4.6), with that read.
        let mut unreadable: Option<(String, EntryId)> = None;
        // The call with the sources found only, without the entries the caller cited: what the
        // gate's unsourced rule and the composed rule judge, since a citation can only make a
        // decision stricter (`spec/gate.md` §7).
        let mut found = call.clone();
        // Per argument, the values it is matched by, for the origin check of each.
        let mut matched: Vec<(String, Vec<Value>)> = Vec::new();
        for (name, value) in args {
            // Caller-cited entries only add sources: they can make a decision stricter,
            // never looser (`spec/gate.md` §7).
            let mut ids: Vec<EntryId> = Vec::new();
            let mut all: Vec<EntryId> = Vec::new();
            let project = self.project.clone();
            let tool = call.tool.clone();
            let mut values = extract::values(&self.policy, &tool, name, value, project.as_deref());
            values.extend(sinks.extra_values(name).iter().cloned().map(Value::String));
            let matchable = values.iter().any(ask::is_matchable) || sinks.forces(name);
            for v in &values {
                let s = self.sources_split(session, v, Some((&tool, name)))?;
                if unreadable.is_none() {
                    let id = s.kept.iter().find(|id| !self.is_verified_text(id));
                    unreadable = id.map(|id| (name.clone(), *id));
                }
                push_new(&mut ids, s.kept);
                push_new(&mut all, s.matched);
                statements.extend(s.stated.into_iter().map(|id| (name.clone(), id)));
            }
            if matchable && ids.is_empty() {
                composed.push(name.clone());
                let names = |v: &Value| v.as_str().is_some_and(matching::names_a_destination);
                if values.iter().any(names) {
                    destinations.push(name.clone());
                }
            }
            matched.push((name.clone(), values));
            found.args.push((name.clone(), ids.clone()));
            let cited = given.get(name).into_iter().flatten().copied();
            push_new(&mut ids, cited.clone());
            push_new(&mut all, cited);
            call.args.push((name.clone(), ids));
            unstated.args.push((name.clone(), all));
        }
        for (name, ids) in given {
            if !args.contains_key(name) {
                call.args.push((name.clone(), ids.clone()));
                unstated.args.push((name.clone(), ids.clone()));
            }
        }
        let verdict = if session.unrecorded > 0 {
            Verdict::Deny(Refusal::Unrecorded {
                count: session.unrecorded,
                session: session.id.clone(),
            })
        } else if self.unseen_start(session) {
            Verdict::Deny(Refusal::UnseenStart {
                session: session.id.clone(),
            })
        } else if !self.session_sealed(session) {
            Verdict::Deny(Refusal::Unreadable {
                reason: format!(
                    "the read record of session {:?} was altered outside memlineage (its seal \
                 does not verify under the log key), so argument provenance is unknown",
                    session.id
                ),
            })
        } else {
            // Composed: nothing of the call is copied from what the session read, or an
            // argument naming where it goes is not (§15.1): a copied argument beside it does
            // not make the destination the user's (attack review 49: a word of the prompt in a
            // parameter the tool does not take took a decoded IBAN out of the ask).
            if found.args.iter().any(|(_, ids)| !ids.is_empty()) {
                composed.retain(|name| destinations.contains(name));
            }
            // The cited entries as well, for what they taint; the worse decides.
            let gate = self.gate_decision(&call, &found, args, !given.is_empty(), &matched);
            match (gate, unreadable) {
                // A read that holds every value because its text cannot be read is a source
                // that proves nothing (§4.6): the value may be one nothing read holds, or one
                // the agent composed. The gate counted it by its label; refused here instead,
                // so that deleting a trusted read's text never loosens a decision.
                (LineageDecision::Allow, Some((param, read))) => {
                    Verdict::Deny(Refusal::Unreadable {
                        reason: format!(
                            "{tool}: the text of read {} of session {:?}, a source of argument \
                         {param:?}, cannot be read or verified (redacted, edited or deleted in \
                         the store), so where the argument came from is unknown",
                            read.short(),
                            session.id
                        ),
                    })
                }
                // The worst decides: a secret leaving is refused before the ask rules run.
                (LineageDecision::Allow, None) => match self.secret_flow(session, tool, args, true)
                {
                    Some(r) => Verdict::Deny(r),
                    // Then the rule of stated values untrusted input also carries (§4.4),
                    // code, installs and gated writes (§17) and the ask rule (§15): the
                    // worst of them decides, the first named when they tie.
                    None => worst([
                        self.stated_verdict(&call, &unstated, args, &statements),
                        self.sink_verdict(session, &call, &sinks)
                            .unwrap_or(Verdict::Allow),
                        self.composed_verdict(session, &call, &composed, sinks.write()),
                    ]),
                },
                (LineageDecision::Deny(d), _) => Verdict::Deny(Refusal::Gate(d)),
            }
        };
        Ok(Checked {
            call,
            sensitive,
            verdict,
        })
    }

    /// The name `tool` is known by in the policy: `tool` itself if the policy names it,
    /// else for an MCP tool `mcp__<server>__<name>` (the form Claude Code and Codex give) the
    /// bare `<name>` if the policy names that, else `tool`.
    pub fn policy_name<'t>(&self, tool: &'t str) -> &'t str {
        self.policy.tool_name(tool)
    }

    /// Drops what this front verified against another ledger handle than the one it holds
    /// now (a ledger replaced through [`Front::ledger_mut`]): the texts of its index, the secrecy
    /// rule's judgements, the statement facts and the newest reader, so that nothing verified
    /// against one ledger decides against another. Called before the index is read or added
    /// to; O(1) when the handle is the same.
    pub(crate) fn verified_here(&mut self) {
        let now = self.ledger.instance();
        if self.verified_under != now {
            self.haystacks = matching::ReadIndex::new();
            self.secret_nodes.clear();
            self.facts = sources::EntryFacts::default();
            self.newest = None;
            self.verified_under = now;
        }
    }

    /// The index of the texts this front has read, for adding to ([`Front::verified_here`]
    /// first).
    pub(crate) fn index_mut(&mut self) -> &mut matching::ReadIndex {
        self.verified_here();
        &mut self.haystacks
    }
}

/// Appends to `list` the ids of `more` it does not hold yet, in order.
fn push_new(list: &mut Vec<EntryId>, more: impl IntoIterator<Item = EntryId>) {
    for id in more {
        if !list.contains(&id) {
            list.push(id);
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
