//! Command hooks around every tool call, in the JSON-over-stdin form Claude Code and Codex share
//! (`spec/hooks.md`; upstream: <https://code.claude.com/docs/en/hooks>,
//! <https://developers.openai.com/codex/hooks>).
//!
//! The agent runs `memlineage hook <event>` with one JSON event on standard input:
//! - `user-prompt-submit` records the prompt (principal `user`: Trusted);
//! - `post-tool-use` and `post-tool-use-failure` record the tool's output (principal
//!   `tool:<name>`: External) and add it to the session's read set;
//! - `pre-tool-use`, for a tool the policy marks sensitive, matches each argument value against
//!   the read set and blocks the call (exit code 2, reason on stderr) when the gate refuses it.
//!
//! The hooks fail closed (`spec/hooks.md` §5): a failure blocks the call it concerns, and tool
//! output that could not be recorded marks *its own* session so that the session's later
//! sensitive calls are refused. A failure that cannot be tied to a session marks nothing and
//! never blocks other sessions.
//!
//! [`handle`] does all of it on bytes, so it can be tested without a process; the binary only
//! reads standard input, takes the lock and writes the [`HookOutcome`].

use crate::front::{Front, Keys, Refusal, Screen, Sighting, Verdict};
use crate::store::Store;
use input::{output_text, parse, str_field};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

mod input;
mod sessions;

pub use input::{session_id_in, session_id_of, transcript_history, MAX_TRANSCRIPT_BYTES};
#[cfg(feature = "mcp")]
pub(crate) use sessions::parse_record;
pub use sessions::{FileSessions, MemorySessions, Pruned, Sessions};

/// Exit code that blocks a tool call (PreToolUse) in Claude Code and Codex; stderr is the
/// reason shown to the model. Every failure of every event exits with it too (`spec/hooks.md`
/// §2.2): for PostToolUse it shows the reason to the model, for UserPromptSubmit it blocks the
/// prompt.
pub const EXIT_BLOCK: u8 = 2;
/// Largest session record read, in bytes (about 500,000 reads).
pub const MAX_SESSION_BYTES: u64 = 64 << 20;
/// Largest hook event handled, in bytes (16 MiB; a tool's output travels inside it). A longer
/// event is an unreadable event (`spec/hooks.md` §1).
pub const MAX_EVENT_BYTES: usize = 16 << 20;
/// Default age after which an untouched session file is pruned: 30 days, Claude Code's default
/// transcript retention (`cleanupPeriodDays`), after which a session can no longer be resumed
/// there (`spec/hooks.md` §6.1).
pub const PRUNE_AFTER: Duration = Duration::from_secs(30 * 24 * 3600);
/// How often the hooks prune opportunistically: at most once per this interval (one day) per
/// ledger; every other invocation costs one `stat` of the stamp file.
pub const PRUNE_EVERY: Duration = Duration::from_secs(24 * 3600);

/// The hook events memlineage handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HookEvent {
    /// Before a tool runs: may block it.
    PreToolUse,
    /// After a tool ran: records its output.
    PostToolUse,
    /// After a tool failed (Claude Code): records its error output like PostToolUse.
    PostToolUseFailure,
    /// A user prompt was submitted: records it.
    UserPromptSubmit,
    /// A session began (new, cleared, resumed, compacted, forked): decides whether the hooks
    /// saw it from its start (`spec/hooks.md` §3.1).
    SessionStart,
}

impl HookEvent {
    /// The `hook_event_name` the agents send (`PreToolUse`, `PostToolUse`,
    /// `PostToolUseFailure`, `UserPromptSubmit`).
    pub fn event_name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::SessionStart => "SessionStart",
        }
    }

    /// The `memlineage hook` subcommand for the event (`pre-tool-use`, …).
    pub fn subcommand(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "pre-tool-use",
            HookEvent::PostToolUse => "post-tool-use",
            HookEvent::PostToolUseFailure => "post-tool-use-failure",
            HookEvent::UserPromptSubmit => "user-prompt-submit",
            HookEvent::SessionStart => "session-start",
        }
    }

    /// Whether the event carries a tool's output (PostToolUse, PostToolUseFailure).
    pub fn carries_output(self) -> bool {
        matches!(self, HookEvent::PostToolUse | HookEvent::PostToolUseFailure)
    }
}

/// What the hook process does: its exit code and what it writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookOutcome {
    /// 0 = proceed, [`EXIT_BLOCK`] = block (PreToolUse) or failed (any event).
    pub code: u8,
    /// Standard output: empty, but for an ask (`ask::ask_outcome`), Claude Code's ask decision
    /// (memlineage never emits an `allow` decision, which would skip the agent's own
    /// permission prompts).
    pub stdout: String,
    /// Standard error: the reason for a block or failure, one line.
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
            code: EXIT_BLOCK,
            stdout: String::new(),
            stderr: format!("memlineage: {why}\n"),
        }
    }

    /// Whether the call may proceed (exit code 0).
    pub fn allows(&self) -> bool {
        self.code == 0
    }
}

/// Handles one hook event given as the bytes the agent wrote to standard input. Never panics;
/// every failure becomes an outcome (`spec/hooks.md` §5): PreToolUse fails closed (blocks) on
/// anything it cannot read; the other events exit [`EXIT_BLOCK`], and tool output that could
/// not be recorded marks its session so that the session's later sensitive calls are refused.
/// An event longer than [`MAX_EVENT_BYTES`] is handled by [`failed`].
pub fn handle<S: Store, K: Keys>(
    front: &mut Front<S, K>,
    sessions: &mut impl Sessions,
    event: HookEvent,
    input: &[u8],
) -> HookOutcome {
    if input.len() > MAX_EVENT_BYTES {
        let why = format!("event longer than {MAX_EVENT_BYTES} bytes");
        return failed(sessions, event, input, &why);
    }
    // A hook session begins in the agent, not here: it must have been seen from its start
    // (spec/hooks.md §3.1).
    front.require_start(true);
    let parsed = parse(event, input);
    match event {
        HookEvent::PreToolUse => pre_tool_use(front, sessions, parsed),
        HookEvent::SessionStart => session_start(front, sessions, parsed),
        HookEvent::PostToolUse | HookEvent::PostToolUseFailure => {
            post_tool_use(front, sessions, event, parsed, input)
        }
        HookEvent::UserPromptSubmit => match parsed.and_then(|o| {
            let prompt = str_field(&o, "prompt")?;
            Ok((str_field(&o, "session_id")?.to_string(), prompt.to_string()))
        }) {
            Err(why) => HookOutcome::fail(why),
            Ok((id, prompt)) => {
                let r = front.load_session(sessions, &id).and_then(|mut s| {
                    front.sight(&mut s, Sighting::Event("UserPromptSubmit"))?;
                    front.record_prompt(&mut s, &prompt)?;
                    sessions.save(&s)?;
                    Ok(())
                });
                r.map_or_else(
                    |e| HookOutcome::fail(format!("session {id:?}: prompt not recorded: {e}")),
                    |()| HookOutcome::proceed(),
                )
            }
        },
    }
}

/// The outcome of a hook that failed before or outside [`handle`] (oversized event, ledger
/// that cannot be opened, key file, policy file…): PreToolUse blocks; PostToolUse and
/// PostToolUseFailure mark the session named by the event's top-level `session_id`
/// ([`session_id_of`]) as having unrecorded output; UserPromptSubmit fails. `why` is the reason
/// shown. Never panics.
pub fn failed(
    sessions: &mut impl Sessions,
    event: HookEvent,
    input: &[u8],
    why: &str,
) -> HookOutcome {
    let id = if event.carries_output() {
        session_id_of(input)
    } else {
        None
    };
    failed_in(
        Some(sessions as &mut dyn Sessions),
        event,
        id.as_deref(),
        why,
    )
}

/// [`failed`] with the session already found (`session`, e.g. by [`session_id_in`] over a
/// stream) and the sessions store, if one could be had (`None`: nothing can be marked, e.g.
/// the lock could not be taken).
pub fn failed_in(
    sessions: Option<&mut dyn Sessions>,
    event: HookEvent,
    session: Option<&str>,
    why: &str,
) -> HookOutcome {
    match event {
        HookEvent::PreToolUse => HookOutcome::block(&Refusal::Unreadable {
            reason: why.to_string(),
        }),
        // A start that is not recorded leaves the session without its start marker: its next
        // event writes the unseen-history entry (spec/hooks.md §3.1).
        HookEvent::UserPromptSubmit | HookEvent::SessionStart => HookOutcome::fail(why),
        HookEvent::PostToolUse | HookEvent::PostToolUseFailure => {
            let name = event.event_name();
            let Some(id) = session.filter(|s| !s.is_empty()) else {
                return HookOutcome::fail(format!(
                    "{name} output not recorded: {why}; no session_id could be read from the \
                     event, so no session was marked"
                ));
            };
            match sessions.map(|s| mark_unrecorded(s, id)) {
                Some(Ok(n)) => HookOutcome::fail(format!(
                    "session {id:?}: {name} output not recorded: {why}; {n} unrecorded \
                     output(s): the session's sensitive calls will be refused"
                )),
                Some(Err(e)) => HookOutcome::fail(format!(
                    "session {id:?}: {name} output not recorded: {why}; the session could not \
                     be marked: {e}"
                )),
                None => HookOutcome::fail(format!(
                    "session {id:?}: {name} output not recorded: {why}; the session could not \
                     be marked"
                )),
            }
        }
    }
}

/// The closed answer of an output-carrying `event` of session `id` whose output a hook that
/// could not finish marked unrecorded apart from the session's record
/// ([`FileSessions::mark_unrecorded_apart`], `spec/hooks.md` §5).
pub fn marked_apart(event: HookEvent, id: &str, why: &str) -> HookOutcome {
    HookOutcome::fail(format!(
        "session {id:?}: {} output not recorded: {why}; marked unrecorded apart from the \
         session's record: its sensitive calls will be refused",
        event.event_name()
    ))
}

/// Adds one unrecorded output to session `id`; returns its new count.
fn mark_unrecorded(sessions: &mut dyn Sessions, id: &str) -> Result<u64, HookError> {
    let mut s = sessions.load(id)?;
    s.unrecorded = s.unrecorded.saturating_add(1);
    sessions.save(&s)?;
    Ok(s.unrecorded)
}

fn pre_tool_use<S: Store, K: Keys>(
    front: &mut Front<S, K>,
    sessions: &mut impl Sessions,
    parsed: Result<Map<String, Value>, String>,
) -> HookOutcome {
    let unreadable = |why: String| HookOutcome::block(&Refusal::Unreadable { reason: why });
    // Without the tool's name we cannot tell a sensitive call from a harmless one: block.
    let event = match parsed {
        Ok(o) => o,
        Err(why) => return unreadable(why),
    };
    let tool = match str_field(&event, "tool_name") {
        Ok(t) => t.to_string(),
        Err(why) => return unreadable(why),
    };
    let args = match event.get("tool_input") {
        Some(Value::Object(m)) => m.clone(),
        _ => return unreadable(format!("{tool}: tool_input is not a JSON object")),
    };
    front.set_project(event.get("cwd").and_then(Value::as_str));
    // The guard's own files first, in every session; then only gated calls read the session
    // (a Write outside the sensitive paths is not gated, spec/hooks.md §10.2).
    let screen = front.screen(&tool, &args);
    match screen {
        Screen::Protected(touch) => return HookOutcome::block(&Refusal::Protected { tool, touch }),
        Screen::NotGated => return HookOutcome::proceed(),
        Screen::Gated | Screen::Egress => {}
    }
    let id = match str_field(&event, "session_id") {
        Ok(id) => id,
        Err(why) => {
            return unreadable(format!("{tool}: {why} (the session's read set is unknown)"))
        }
    };
    let session = match front.load_session(sessions, id) {
        Ok(s) => s,
        Err(e) => return unreadable(format!("{tool}: {e}")),
    };
    // Every rule of the decision, the unrecorded outputs' included, is `Front::check`'s.
    match front.check_screened(screen, &session, &tool, &args, &HashMap::new()) {
        Err(e) => unreadable(format!("{tool}: session {id:?}: {e}")),
        Ok(c) => match c.verdict {
            Verdict::Allow => HookOutcome::proceed(),
            Verdict::Deny(r) => HookOutcome::block(&r),
            // Denies until the hook process renders it for an agent that can ask
            // (`ask::for_agent`, spec/hooks.md §15.2).
            Verdict::Ask(r) => crate::front::ask::ask_outcome(&r),
        },
    }
}

fn post_tool_use<S: Store, K: Keys>(
    front: &mut Front<S, K>,
    sessions: &mut impl Sessions,
    event: HookEvent,
    parsed: Result<Map<String, Value>, String>,
    input: &[u8],
) -> HookOutcome {
    let o = match parsed {
        Ok(o) => o,
        Err(why) => return failed(sessions, event, input, &why),
    };
    let id = match str_field(&o, "session_id") {
        Ok(id) => id.to_string(),
        Err(why) => return failed_in(None, event, None, &why),
    };
    let mut session = match front.load_session(sessions, &id) {
        Ok(s) => s,
        // A session file that cannot be read cannot be marked either; its PreToolUse fails
        // on the same file and blocks.
        Err(e) => return failed_in(None, event, Some(&id), &e.to_string()),
    };
    // The session's first event may be this one: the start rule first (§3.1).
    if let Err(e) = front.sight(&mut session, Sighting::Event(event.event_name())) {
        return failed_in(None, event, Some(&id), &e.to_string());
    }
    let recorded = str_field(&o, "tool_name").and_then(|tool| {
        // The memlineage MCP server's retrieval shows verified entries: read them as those
        // entries, when the output is exactly such a view (`Front::read_retrieved_view`).
        if event == HookEvent::PostToolUse && tool.ends_with("ledger_retrieve") {
            if let Some(response) = o.get("tool_response") {
                match front.read_retrieved_view(&mut session, response) {
                    Ok(Some(_)) => return Ok(()),
                    Ok(None) => {}
                    Err(e) => return Err(format!("{tool}: {e}")),
                }
            }
        }
        let input = o.get("tool_input").cloned().unwrap_or(Value::Null);
        let output = output_text(event, &o);
        front
            .record_tool_result(&mut session, tool, &input, &output)
            .map(|_| ())
            .map_err(|e| format!("{tool}: {e}"))
    });
    match recorded {
        Ok(_) => match sessions.save(&session) {
            Ok(()) => HookOutcome::proceed(),
            Err(e) => failed_in(
                Some(sessions as &mut dyn Sessions),
                event,
                Some(&id),
                &e.to_string(),
            ),
        },
        Err(why) => failed_in(Some(sessions as &mut dyn Sessions), event, Some(&id), &why),
    }
}

/// Decides how a session began (`spec/hooks.md` §3.1): a `SessionStart` event's `source`
/// and what its `transcript_path` holds ([`transcript_history`]) go to [`Front::sight`], which
/// writes the session's start marker or its unseen-history entry. A failure exits
/// [`EXIT_BLOCK`] (Claude Code shows the reason to the user; the session then has no start
/// marker and its next event writes the unseen-history entry: fail closed).
fn session_start<S: Store, K: Keys>(
    front: &mut Front<S, K>,
    sessions: &mut impl Sessions,
    parsed: Result<Map<String, Value>, String>,
) -> HookOutcome {
    let o = match parsed {
        Ok(o) => o,
        Err(why) => return HookOutcome::fail(why),
    };
    let id = match str_field(&o, "session_id") {
        Ok(id) => id.to_string(),
        Err(why) => return HookOutcome::fail(why),
    };
    // An absent or unknown source is not a new conversation.
    let source = o.get("source").and_then(Value::as_str).unwrap_or("");
    let history = o
        .get("transcript_path")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .and_then(|p| transcript_history(Path::new(p)));
    let r = front.load_session(sessions, &id).and_then(|mut s| {
        front.sight(
            &mut s,
            Sighting::Start {
                source,
                history: history.as_deref(),
            },
        )?;
        sessions.save(&s)?;
        Ok(())
    });
    r.map_or_else(
        |e| HookOutcome::fail(format!("session {id:?}: start not recorded: {e}")),
        |()| HookOutcome::proceed(),
    )
}

/// Hook failures that are not the event's fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// A session file could not be read or written.
    #[error("session file {path}: {cause}")]
    Session {
        /// The file (or directory) of the session.
        path: String,
        /// Why it could not be read or written.
        cause: String,
    },
    /// The session's file was pruned (`spec/hooks.md` §6.1): what it read is no longer known.
    #[error(
        "session {session:?} was pruned after a long time without activity: what it read is no \
         longer known, so it cannot be checked (start a new session)"
    )]
    Pruned {
        /// The session's id.
        session: String,
    },
}

#[cfg(test)]
mod tests;
