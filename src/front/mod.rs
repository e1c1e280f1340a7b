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

pub mod hook;
pub mod keystore;
pub mod matching;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;

use crate::front::keystore::{KeyStore, KeyStoreError};
use crate::gate::{Decision, Denial, Policy, ToolCall};
use crate::ledger::{Appended, Ledger, LedgerError};
use crate::record::{EntryId, Hash32, Kind, Parent, ProvEntry, Role, Weight, WriterKey};
use crate::retrieve::Outcome;
use crate::store::Store;
use matching::Haystack;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// The principal name prompts are recorded under (role user).
pub const USER: &str = "user";
/// The default principal the agent's own writes are recorded under (role agent).
pub const AGENT: &str = "agent";

/// Where the front gets signing keys for its principals.
pub trait Keys {
    /// The key of principal `name` with `role`, created if absent. Returns the key and whether
    /// it was created (so that a key file can be saved before the key is used).
    ///
    /// # Errors
    /// [`FrontError::Keys`] when `name` exists with another role or the store of keys fails.
    fn key(&mut self, name: &str, role: Role) -> Result<(WriterKey, bool), FrontError>;
}

impl Keys for KeyStore {
    fn key(&mut self, name: &str, role: Role) -> Result<(WriterKey, bool), FrontError> {
        let (k, _, created) = self.principal(name, Some(role))?;
        Ok((k, created))
    }
}

/// A key file ([`KeyStore`]) that is saved as soon as a principal is added to it, before the
/// new key signs anything (a bound key whose seed was lost could never write again).
#[derive(Debug)]
pub struct KeyFile {
    /// The keys.
    pub store: KeyStore,
    /// Where they are saved.
    pub path: std::path::PathBuf,
}

impl Keys for KeyFile {
    fn key(&mut self, name: &str, role: Role) -> Result<(WriterKey, bool), FrontError> {
        let (k, created) = self.store.key(name, role)?;
        if created {
            self.store.save(&self.path)?;
        }
        Ok((k, created))
    }
}

/// Fresh random keys per principal, kept in memory for the front's lifetime (an embedding
/// runtime that keeps its ledger in memory, or persists keys itself).
#[derive(Debug, Default)]
pub struct GeneratedKeys(pub HashMap<String, (Role, WriterKey)>);

impl Keys for GeneratedKeys {
    fn key(&mut self, name: &str, role: Role) -> Result<(WriterKey, bool), FrontError> {
        match self.0.get(name) {
            Some((r, _)) if *r != role => Err(KeyStoreError::RoleMismatch(name.to_string()).into()),
            Some((_, k)) => Ok((WriterKey::from_seed(&k.seed()), false)),
            None => {
                let k = WriterKey::generate();
                self.0
                    .insert(name.to_string(), (role, WriterKey::from_seed(&k.seed())));
                Ok((k, true))
            }
        }
    }
}

/// Keys derived from their names with [`WriterKey::for_label`] under a secret prefix: for tests
/// and examples only (anyone who knows the prefix can sign as any principal).
#[derive(Debug, Clone)]
pub struct DerivedKeys(pub String);

impl Keys for DerivedKeys {
    fn key(&mut self, name: &str, _role: Role) -> Result<(WriterKey, bool), FrontError> {
        Ok((WriterKey::for_label(&format!("{}/{name}", self.0)), false))
    }
}

/// What one agent session has read, as entry ids in the order read (`spec/hooks.md` §3).
/// Persisted by the hooks between invocations (JSON: `{"reads": [hex…], "unrecorded": n}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// The agent's session id (e.g. Claude Code's `session_id`); entries written for the
    /// session carry `H(id)` as their context hash (`spec/record.md` field 5).
    #[serde(default)]
    pub id: String,
    /// Entries whose text the session has seen.
    #[serde(default, with = "hex_ids")]
    pub reads: Vec<EntryId>,
    /// Tool outputs the session saw that could not be recorded: while non-zero, sensitive
    /// calls are refused (their arguments may come from text the ledger does not know).
    #[serde(default)]
    pub unrecorded: u64,
}

impl Session {
    /// An empty session named `id`.
    pub fn new(id: &str) -> Self {
        Session {
            id: id.to_string(),
            ..Session::default()
        }
    }

    /// Adds `id` to the read set (once).
    pub fn read(&mut self, id: EntryId) {
        if !self.reads.contains(&id) {
            self.reads.push(id);
        }
    }
}

/// A front's answer to a proposed tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The call may proceed.
    Allow,
    /// The call is refused.
    Deny(Refusal),
}

impl Verdict {
    /// Whether this is [`Verdict::Allow`].
    pub fn is_allow(&self) -> bool {
        matches!(self, Verdict::Allow)
    }
}

/// Why a call was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The gate refused it: an argument comes from an entry labelled worse than allowed.
    Gate(Denial),
    /// The session saw tool output that could not be recorded (fail closed).
    Unrecorded(u64),
    /// The event or arguments could not be read (fail closed for sensitive tools).
    Unreadable(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Gate(d) => write!(f, "memlineage: {d}"),
            Refusal::Unrecorded(n) => write!(
                f,
                "memlineage: deny: {n} tool output(s) of this session could not be recorded, \
                 so argument provenance is unknown"
            ),
            Refusal::Unreadable(why) => write!(f, "memlineage: deny: {why}"),
        }
    }
}

/// A gate check with the sources found for each argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// The call as gated, with each argument's justifying entries.
    pub call: ToolCall,
    /// Whether the policy treats it as sensitive.
    pub sensitive: bool,
    /// The verdict.
    pub verdict: Verdict,
}

/// The front: a ledger, a gate policy, the keys of its principals and a text cache.
pub struct Front<S: Store, K: Keys> {
    ledger: Ledger<S>,
    policy: Policy,
    keys: K,
    /// The principal the agent's own writes are signed by.
    agent: String,
    /// The last writer time used, in ms since the Unix epoch.
    last_ms: u64,
    haystacks: HashMap<EntryId, Haystack>,
}

impl<S: Store, K: Keys> Front<S, K> {
    /// A front over `ledger`, gating with `policy`, signing with `keys`; the agent's writes
    /// are signed as principal [`AGENT`].
    pub fn new(ledger: Ledger<S>, policy: Policy, keys: K) -> Self {
        Front {
            ledger,
            policy,
            keys,
            agent: AGENT.to_string(),
            last_ms: 0,
            haystacks: HashMap::new(),
        }
    }

    /// Signs the agent's writes as principal `name` (role agent) instead of [`AGENT`].
    pub fn with_agent(mut self, name: &str) -> Self {
        self.agent = name.to_string();
        self
    }

    /// The ledger.
    pub fn ledger(&mut self) -> &mut Ledger<S> {
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
        let a = self.write(session, USER, Role::User, Kind::Prompt, text, Vec::new())?;
        session.read(a.id);
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
        let mut parents: Vec<EntryId> = Vec::new();
        if let Value::Object(args) = input {
            for v in args.values() {
                parents.extend(self.sources(session, v)?);
            }
        }
        parents.sort();
        parents.dedup();
        let parents = parents
            .into_iter()
            .map(|id| Parent {
                id,
                weight: Weight::ONE,
            })
            .collect();
        let content = serde_json::json!({"tool": tool, "args": input}).to_string();
        let agent = self.agent.clone();
        let call = self.write(
            session,
            &agent,
            Role::Agent,
            Kind::ToolCall,
            &content,
            parents,
        )?;
        let by_call = vec![Parent {
            id: call.id,
            weight: Weight::ONE,
        }];
        let name = format!("tool:{tool}");
        let result = self.write(
            session,
            &name,
            Role::Tool,
            Kind::ToolResult,
            output,
            by_call,
        )?;
        session.read(result.id);
        Ok((call, result))
    }

    /// Records a memory the agent writes (summary, fact…) with its parents, signed by the
    /// agent principal, and adds it to the read set. The label follows from the parents.
    ///
    /// # Errors
    /// [`FrontError`]; e.g. an unknown parent.
    pub fn remember(
        &mut self,
        session: &mut Session,
        kind: Kind,
        text: &str,
        parents: Vec<Parent>,
    ) -> Result<Appended, FrontError> {
        if matches!(kind, Kind::Keyring | Kind::Tombstone | Kind::Prompt) {
            return Err(FrontError::Kind(kind.name()));
        }
        let agent = self.agent.clone();
        let a = self.write(session, &agent, Role::Agent, kind, text, parents)?;
        session.read(a.id);
        Ok(a)
    }

    /// Verifies and renders `ids` ([`Ledger::retrieve`]); each verified entry joins the read
    /// set, so later calls whose arguments come from it are tied to it.
    ///
    /// # Errors
    /// Only when no checkpoint can be produced.
    pub fn retrieve(
        &mut self,
        session: &mut Session,
        ids: &[EntryId],
    ) -> Result<Vec<Outcome>, FrontError> {
        let out = self.ledger.retrieve(ids)?;
        for o in &out {
            if let Outcome::Verified(r) = o {
                session.read(r.id);
                if let Some(t) = &r.text {
                    self.haystacks.insert(r.id, Haystack::new(t));
                }
            }
        }
        Ok(out)
    }

    /// Decides a proposed call of `tool` with `args` (a JSON object). Arguments named in
    /// `given` are justified by those entries; every other argument by the read-set entries its
    /// value matches (`spec/hooks.md` §4). Calls the policy does not mark sensitive are allowed
    /// without matching.
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
        let mut call = ToolCall {
            tool: self.policy_name(tool).to_string(),
            sensitive: false,
            args: Vec::new(),
        };
        let sensitive = self.policy.is_sensitive(&call);
        if !sensitive {
            return Ok(Checked {
                call,
                sensitive,
                verdict: Verdict::Allow,
            });
        }
        for (name, value) in args {
            let ids = match given.get(name) {
                Some(ids) => ids.clone(),
                None => self.sources(session, value)?,
            };
            call.args.push((name.clone(), ids));
        }
        for (name, ids) in given {
            if !args.contains_key(name) {
                call.args.push((name.clone(), ids.clone()));
            }
        }
        let verdict = if session.unrecorded > 0 {
            Verdict::Deny(Refusal::Unrecorded(session.unrecorded))
        } else {
            match self.ledger.gate(&self.policy, &call) {
                Decision::Allow => Verdict::Allow,
                Decision::Deny(d) => Verdict::Deny(Refusal::Gate(d)),
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
        let named =
            |t: &str| self.policy.sensitive_tools.contains(t) || self.policy.tools.contains_key(t);
        if named(tool) {
            return tool;
        }
        match tool
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
        {
            Some((_, bare)) if named(bare) => bare,
            _ => tool,
        }
    }

    /// The read-set entries whose text `value` matches, in read order.
    ///
    /// # Errors
    /// Ledger failures while fetching texts not cached yet.
    pub fn sources(
        &mut self,
        session: &Session,
        value: &Value,
    ) -> Result<Vec<EntryId>, FrontError> {
        let missing: Vec<EntryId> = session
            .reads
            .iter()
            .filter(|id| !self.haystacks.contains_key(id))
            .copied()
            .collect();
        if !missing.is_empty() {
            for o in self.ledger.retrieve(&missing)? {
                // An entry that no longer verifies or was deleted justifies nothing: an
                // argument matching only it counts as unsourced.
                let (id, text) = match o {
                    Outcome::Verified(r) => (r.id, r.text.unwrap_or_default()),
                    Outcome::Tombstoned(id)
                    | Outcome::Quarantined(id)
                    | Outcome::Rejected(id, _) => (id, String::new()),
                };
                self.haystacks.insert(id, Haystack::new(&text));
            }
        }
        Ok(session
            .reads
            .iter()
            .filter(|id| self.haystacks.get(id).is_some_and(|h| h.matches(value)))
            .copied()
            .collect())
    }

    /// Signs and appends one entry as principal `name`, binding its key on first use.
    fn write(
        &mut self,
        session: &Session,
        name: &str,
        role: Role,
        kind: Kind,
        text: &str,
        parents: Vec<Parent>,
    ) -> Result<Appended, FrontError> {
        let (key, _) = self.keys.key(name, role)?;
        self.ledger.bind(key.key_id(), role, name)?;
        let context = Hash32::digest(format!("memlineage/session/{}", session.id).as_bytes());
        let mut attempt = 0;
        let a = loop {
            // Time is strictly increasing per front, so that the same text written twice in
            // one millisecond still makes two entries (an entry's id covers its time).
            self.last_ms = now_ms().max(self.last_ms + 1);
            let entry = ProvEntry::new(key.key_id(), kind, text.as_bytes())
                .with_parents(parents.clone())
                .with_context_hash(context)
                .with_time_ms(self.last_ms);
            match self.ledger.append(entry, &key, text.as_bytes()) {
                // Another process wrote the very same entry in the same millisecond.
                Err(LedgerError::Duplicate(_)) if attempt < 3 => attempt += 1,
                other => break other?,
            }
        };
        self.haystacks.insert(a.id, Haystack::new(text));
        Ok(a)
    }
}

/// Entry ids as 64-hex strings in session files.
mod hex_ids {
    use crate::record::EntryId;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ids: &[EntryId], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(ids.iter().map(EntryId::to_string))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<EntryId>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|h| EntryId::from_hex(h).map_err(serde::de::Error::custom))
            .collect()
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Errors of the front.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrontError {
    /// The ledger refused an append or a read (e.g. unknown parent, store failure).
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A principal's key could not be had (role mismatch, bad key file).
    #[error(transparent)]
    Keys(#[from] KeyStoreError),
    /// A session's read set could not be loaded or saved.
    #[error("{0}")]
    Session(String),
    /// The agent asked to write a kind it may not write through the front.
    #[error("kind `{0}` cannot be written by the agent through the front")]
    Kind(&'static str),
}
