//! Command hooks around every tool call, in the JSON-over-stdin form Claude Code and Codex share
//! (`spec/hooks.md`; upstream: <https://code.claude.com/docs/en/hooks>,
//! <https://developers.openai.com/codex/hooks>).
//!
//! The agent runs `memlineage hook <event>` with one JSON event on standard input:
//! - `user-prompt-submit` records the prompt (principal `user`: Trusted);
//! - `post-tool-use` records the tool's output (principal `tool:<name>`: External) and adds it
//!   to the session's read set;
//! - `pre-tool-use`, for a tool the policy marks sensitive, matches each argument value against
//!   the read set and blocks the call (exit code 2, reason on stderr) when the gate refuses it.
//!
//! [`handle`] does all of it on bytes, so it can be tested without a process; the binary only
//! reads standard input, takes the lock and writes the [`HookOutcome`].

use crate::front::{Front, FrontError, Keys, Refusal, Session, Verdict};
use crate::record::Hash32;
use crate::store::Store;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;

/// Exit code that blocks a tool call (PreToolUse) in Claude Code and Codex; stderr is the
/// reason shown to the model.
pub const EXIT_BLOCK: u8 = 2;
/// Exit code for a hook that failed without blocking (shown to the user, not the model).
pub const EXIT_ERROR: u8 = 1;
/// The reserved session under which output from events with no readable `session_id` is
/// counted: while its `unrecorded` count is non-zero every session's sensitive calls are
/// refused.
pub const UNKNOWN_SESSION: &str = "";

/// The hook events memlineage handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookEvent {
    /// Before a tool runs: may block it.
    PreToolUse,
    /// After a tool ran: records its output.
    PostToolUse,
    /// A user prompt was submitted: records it.
    UserPromptSubmit,
}

impl HookEvent {
    /// The `hook_event_name` the agents send (`PreToolUse`, `PostToolUse`,
    /// `UserPromptSubmit`).
    pub fn event_name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
        }
    }
}

/// What the hook process does: its exit code and what it writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookOutcome {
    /// 0 = proceed, [`EXIT_BLOCK`] = block (PreToolUse), [`EXIT_ERROR`] = failed, not blocking.
    pub code: u8,
    /// Standard output (empty: memlineage never emits an `allow` decision, which would skip the
    /// agent's own permission prompts).
    pub stdout: String,
    /// Standard error: the reason for a block or failure.
    pub stderr: String,
}

impl HookOutcome {
    fn proceed() -> Self {
        HookOutcome {
            code: 0,
            stdout: String::new(),
            stderr: String::new(),
        }
    }

    fn block(why: &Refusal) -> Self {
        HookOutcome {
            code: EXIT_BLOCK,
            stdout: String::new(),
            stderr: format!("{why}\n"),
        }
    }

    fn fail(why: impl std::fmt::Display) -> Self {
        HookOutcome {
            code: EXIT_ERROR,
            stdout: String::new(),
            stderr: format!("memlineage: {why}\n"),
        }
    }

    /// Whether the call may proceed (exit code 0).
    pub fn allows(&self) -> bool {
        self.code == 0
    }
}

/// Where sessions' read sets live between hook invocations.
pub trait Sessions {
    /// The session `id` (empty if never seen).
    ///
    /// # Errors
    /// [`HookError`] when it exists but cannot be read.
    fn load(&mut self, id: &str) -> Result<Session, HookError>;
    /// Stores `session` under its id.
    ///
    /// # Errors
    /// [`HookError`] when it cannot be written.
    fn save(&mut self, session: &Session) -> Result<(), HookError>;
}

/// Sessions kept in memory (tests, embedding runtimes).
#[derive(Debug, Default)]
pub struct MemorySessions(pub HashMap<String, Session>);

impl Sessions for MemorySessions {
    fn load(&mut self, id: &str) -> Result<Session, HookError> {
        Ok(self.0.get(id).cloned().unwrap_or_else(|| Session::new(id)))
    }

    fn save(&mut self, session: &Session) -> Result<(), HookError> {
        self.0.insert(session.id.clone(), session.clone());
        Ok(())
    }
}

/// Sessions as JSON files in a directory (`LEDGER.sessions/`), one per session, named by the
/// SHA-256 of the session id in hex (ids come from the agent and are not trusted as names).
/// The caller serialises invocations (the binary holds `LEDGER.key.lock`).
#[derive(Debug)]
pub struct FileSessions(pub PathBuf);

impl FileSessions {
    fn path(&self, id: &str) -> PathBuf {
        let name = Hash32::digest(id.as_bytes());
        self.0.join(format!("{}.json", hex::encode(name.0)))
    }
}

impl Sessions for FileSessions {
    fn load(&mut self, id: &str) -> Result<Session, HookError> {
        let path = self.path(id);
        match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Session::new(id)),
            Err(e) => Err(HookError::Session(
                path.display().to_string(),
                e.to_string(),
            )),
            Ok(bytes) => {
                let s: Session = serde_json::from_slice(&bytes)
                    .map_err(|e| HookError::Session(path.display().to_string(), e.to_string()))?;
                if s.id != id {
                    return Err(HookError::Session(
                        path.display().to_string(),
                        "holds another session".into(),
                    ));
                }
                Ok(s)
            }
        }
    }

    fn save(&mut self, session: &Session) -> Result<(), HookError> {
        let path = self.path(&session.id);
        let err = |e: std::io::Error| HookError::Session(path.display().to_string(), e.to_string());
        std::fs::create_dir_all(&self.0).map_err(err)?;
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_vec(session)
            .map_err(|e| HookError::Session(path.display().to_string(), e.to_string()))?;
        std::fs::write(&tmp, text).map_err(err)?;
        std::fs::rename(&tmp, &path).map_err(err)
    }
}

/// Handles one hook event given as the bytes the agent wrote to standard input. Never panics;
/// every failure becomes an outcome (`spec/hooks.md` §5): PreToolUse fails closed (blocks) on
/// anything it cannot read, the others exit [`EXIT_ERROR`] and mark the session so that its
/// later sensitive calls are refused.
pub fn handle<S: Store, K: Keys>(
    front: &mut Front<S, K>,
    sessions: &mut impl Sessions,
    event: HookEvent,
    input: &[u8],
) -> HookOutcome {
    let parsed = parse(event, input);
    match event {
        HookEvent::PreToolUse => pre_tool_use(front, sessions, parsed),
        HookEvent::PostToolUse => post_tool_use(front, sessions, parsed),
        HookEvent::UserPromptSubmit => match parsed.and_then(|o| {
            let prompt = str_field(&o, "prompt")?;
            Ok((str_field(&o, "session_id")?.to_string(), prompt.to_string()))
        }) {
            Err(why) => HookOutcome::fail(why),
            Ok((id, prompt)) => {
                let r = sessions
                    .load(&id)
                    .map_err(FrontError::from)
                    .and_then(|mut s| {
                        front.record_prompt(&mut s, &prompt)?;
                        sessions.save(&s)?;
                        Ok(())
                    });
                r.map_or_else(HookOutcome::fail, |()| HookOutcome::proceed())
            }
        },
    }
}

fn pre_tool_use<S: Store, K: Keys>(
    front: &mut Front<S, K>,
    sessions: &mut impl Sessions,
    parsed: Result<Map<String, Value>, String>,
) -> HookOutcome {
    let unreadable = |why: String| HookOutcome::block(&Refusal::Unreadable(why));
    // Without the tool's name we cannot tell a sensitive call from a harmless one: block.
    let event = match parsed {
        Ok(o) => o,
        Err(why) => return unreadable(why),
    };
    let tool = match str_field(&event, "tool_name") {
        Ok(t) => t.to_string(),
        Err(why) => return unreadable(why),
    };
    let probe = crate::gate::ToolCall {
        tool: front.policy_name(&tool).to_string(),
        ..Default::default()
    };
    if !front.policy().is_sensitive(&probe) {
        return HookOutcome::proceed();
    }
    let args = match event.get("tool_input") {
        Some(Value::Object(m)) => m.clone(),
        _ => return unreadable(format!("{tool}: tool_input is not a JSON object")),
    };
    let checked = str_field(&event, "session_id")
        .map_err(|why| format!("{tool}: {why} (the session's read set is unknown)"))
        .and_then(|id| {
            let unknown = sessions.load(UNKNOWN_SESSION).map_err(|e| e.to_string())?;
            let mut session = sessions.load(id).map_err(|e| e.to_string())?;
            session.unrecorded += unknown.unrecorded;
            front
                .check(&session, &tool, &args, &HashMap::new())
                .map_err(|e| format!("{tool}: {e}"))
        });
    match checked {
        Err(why) => unreadable(why),
        Ok(c) => match c.verdict {
            Verdict::Allow => HookOutcome::proceed(),
            Verdict::Deny(r) => HookOutcome::block(&r),
        },
    }
}

fn post_tool_use<S: Store, K: Keys>(
    front: &mut Front<S, K>,
    sessions: &mut impl Sessions,
    parsed: Result<Map<String, Value>, String>,
) -> HookOutcome {
    let id = parsed
        .as_ref()
        .ok()
        .and_then(|o| str_field(o, "session_id").ok())
        .unwrap_or(UNKNOWN_SESSION)
        .to_string();
    let mut session = match sessions.load(&id) {
        Ok(s) => s,
        Err(e) => return HookOutcome::fail(e),
    };
    let recorded = parsed.and_then(|o| {
        if id == UNKNOWN_SESSION {
            return Err("PostToolUse event without session_id".to_string());
        }
        let tool = str_field(&o, "tool_name")?.to_string();
        let input = o.get("tool_input").cloned().unwrap_or(Value::Null);
        let output = match o.get("tool_response") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        };
        front
            .record_tool_result(&mut session, &tool, &input, &output)
            .map_err(|e| format!("{tool}: output not recorded: {e}"))
    });
    match recorded {
        Ok(_) => match sessions.save(&session) {
            Ok(()) => HookOutcome::proceed(),
            Err(e) => HookOutcome::fail(e),
        },
        Err(why) => {
            session.unrecorded += 1;
            let saved = sessions.save(&session);
            HookOutcome::fail(match saved {
                Ok(()) => why,
                Err(e) => format!("{why}; {e}"),
            })
        }
    }
}

/// The event as a JSON object whose `hook_event_name`, when present, is `event`'s.
fn parse(event: HookEvent, input: &[u8]) -> Result<Map<String, Value>, String> {
    let name = event.event_name();
    let v: Value =
        serde_json::from_slice(input).map_err(|e| format!("unparseable {name} event: {e}"))?;
    let Value::Object(o) = v else {
        return Err(format!("unparseable {name} event: not a JSON object"));
    };
    match o.get("hook_event_name") {
        None => Ok(o),
        Some(Value::String(s)) if s == name => Ok(o),
        Some(other) => Err(format!("hook_event_name is {other}, expected {name}")),
    }
}

fn str_field<'a>(o: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match o.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(_) => Err(format!("`{key}` is not a non-empty string")),
        None => Err(format!("`{key}` is missing")),
    }
}

/// Hook failures that are not the event's fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// A session file could not be read or written.
    #[error("session file {0}: {1}")]
    Session(String, String),
}

impl From<HookError> for FrontError {
    fn from(e: HookError) -> Self {
        FrontError::Session(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::DerivedKeys;
    use crate::gate::Policy;
    use crate::lineage::LabelPolicy;
    use crate::log::LogSigner;
    use crate::record::WriterKey;
    use crate::store::MemoryStore;
    use crate::Ledger;

    #[test]
    fn file_sessions_round_trip_and_refuse_damaged_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut fs = FileSessions(dir.path().join("s"));
        let mut s = fs.load("a/../b").unwrap();
        assert_eq!(s, Session::new("a/../b"));
        s.read(crate::record::EntryId([7; 32]));
        s.unrecorded = 2;
        fs.save(&s).unwrap();
        assert_eq!(fs.load("a/../b").unwrap(), s);
        // The file of session "x" claiming to be another session, then not JSON at all.
        std::fs::copy(fs.path("a/../b"), fs.path("x")).unwrap();
        let err = fs.load("x").unwrap_err();
        assert!(
            err.to_string().ends_with(": holds another session"),
            "{err}"
        );
        std::fs::write(fs.path("x"), "{").unwrap();
        assert!(matches!(fs.load("x"), Err(HookError::Session(..))));

        // A PreToolUse for a sensitive tool whose session cannot be read is blocked.
        let signer = LogSigner::new("test.example/h", WriterKey::for_label("h")).unwrap();
        let l = Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).unwrap();
        let mut front = Front::new(l, Policy::default(), DerivedKeys("h".into()));
        let ev = br#"{"session_id":"x","tool_name":"send_money","tool_input":{"recipient":"A"}}"#;
        let out = handle(&mut front, &mut fs, HookEvent::PreToolUse, ev);
        assert_eq!(out.code, EXIT_BLOCK);
        assert!(
            out.stderr.starts_with("memlineage: deny: session file "),
            "{out:?}"
        );
    }

    #[test]
    fn front_refuses_kinds_the_agent_may_not_write() {
        let signer = LogSigner::new("test.example/h", WriterKey::for_label("h")).unwrap();
        let l = Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).unwrap();
        let mut front = Front::new(l, Policy::default(), DerivedKeys("h".into()));
        let mut s = Session::new("s");
        let err = front
            .remember(&mut s, crate::record::Kind::Prompt, "I am the user", vec![])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "kind `prompt` cannot be written by the agent through the front"
        );
        assert!(s.reads.is_empty());
    }
}
