//! The gateway's one door (`spec/mcp.md` §6.1): every decision and every record is a hook event
//! (`spec/hooks.md` §1), answered by the code that answers the command hooks. The gateway
//! writes the event Claude Code would write for the same MCP tool — `tool_name`
//! `mcp__<server>__<tool>`, the arguments as `tool_input`, the session's id — and reads the
//! [`HookOutcome`] as the hooks' exit code: 0 forwards, anything else refuses. There is no
//! second path: the policy, the matching, the origin check, the session's read set and its
//! failure rules are the hooks' own.

use crate::front::hook::{HookEvent, HookOutcome};
use serde_json::{json, Map, Value};

/// Answers hook events: what `memlineage hook <event>` would answer for the same bytes on
/// standard input. The binary's door is the resident hook server's handler (in process), which
/// takes `LEDGER.key.lock` and keeps the session files as the hooks do; a test's door may be
/// [`crate::front::hook::handle`] over a [`crate::front::Front`] in memory.
pub trait Door: Send + 'static {
    /// The outcome of `event` with the JSON `input`. Must not panic; every failure is an
    /// outcome that does not allow (exit code 2).
    fn answer(&mut self, event: HookEvent, input: &[u8]) -> HookOutcome;

    /// The outcomes of `events` (records: PostToolUse, PostToolUseFailure, UserPromptSubmit),
    /// in order, each as [`Door::answer`] gives it. A door may take them together (one lock,
    /// one save of the session, one checkpoint) as long as each outcome is the one `answer`
    /// would give; the default answers them one by one.
    fn answer_all(&mut self, events: &[(HookEvent, Vec<u8>)]) -> Vec<HookOutcome> {
        events.iter().map(|(e, i)| self.answer(*e, i)).collect()
    }
}

impl<F: FnMut(HookEvent, &[u8]) -> HookOutcome + Send + 'static> Door for F {
    fn answer(&mut self, event: HookEvent, input: &[u8]) -> HookOutcome {
        self(event, input)
    }
}

/// What the relay does with a proposed `tools/call`, as the door's PreToolUse outcome says:
/// forward it, refuse it, or ask the user. Not a decision of its own: the hook's
/// [`Verdict`](crate::front::Verdict) (and the gate's
/// [`LineageDecision`](crate::gate::LineageDecision) within it) decided; this is how the relay
/// carries it out.
///
/// Exhaustive: the relay forwards or refuses; a new answer must break its build rather than
/// fall into a wildcard arm that might forward.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Exit code 0: forward it.
    Forward,
    /// Refused; the receipt (the hook's reason, one line).
    Refuse(String),
    /// The policy asks the user (`spec/hooks.md` §15); the receipt (without `memlineage: ask`).
    /// The gateway asks through an elicitation when the client offers them, and refuses
    /// otherwise ([`Disposition::unasked`]).
    Ask(String),
}

impl Disposition {
    /// The disposition an outcome of PreToolUse stands for.
    pub fn of(outcome: &HookOutcome) -> Self {
        if crate::front::ask::is_ask(outcome) {
            let reason = serde_json::from_str::<Value>(&outcome.stdout)
                .ok()
                .and_then(|v| {
                    v["hookSpecificOutput"]["permissionDecisionReason"]
                        .as_str()
                        .map(str::to_string)
                })
                .unwrap_or_default();
            let receipt = reason.strip_prefix("memlineage: ask ").unwrap_or(&reason);
            return Disposition::Ask(receipt.to_string());
        }
        if outcome.allows() {
            return Disposition::Forward;
        }
        let why = outcome.stderr.trim();
        Disposition::Refuse(if why.is_empty() {
            "memlineage: deny: the gate gave no reason (failing closed)".to_string()
        } else {
            why.to_string()
        })
    }
}

impl Disposition {
    /// The refusal of an asked call when the user could not be asked, or did not approve
    /// (`why`, e.g. "the client offers no elicitation").
    pub fn unasked(receipt: &str, why: &str) -> String {
        format!("memlineage: deny {receipt}; the user's approval is needed: {why}")
    }
}

/// The prefix of the sessions a gateway starts itself: `mcp-gateway`, and every id beginning
/// `mcp-gateway/` (what `mcp install` writes, one per host). Any other id is a session of an
/// agent's hooks (Claude Code's `session_id`), which only their `SessionStart` begins.
pub const GATEWAY_SESSION: &str = "mcp-gateway";

/// Whether `id` is a session a gateway starts itself ([`GATEWAY_SESSION`]).
pub fn is_gateway_session(id: &str) -> bool {
    id == GATEWAY_SESSION
        || id
            .strip_prefix(GATEWAY_SESSION)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The hook events of one gateway: its server's name, the session and working directory they
/// carry.
#[derive(Clone, Debug)]
pub struct Events {
    /// The upstream server's name (`mcp__<server>__<tool>`).
    pub server: String,
    /// The session id every event carries (`spec/hooks.md` §3).
    pub session: String,
    /// The agent's working directory, when known (`cwd` of the events).
    pub cwd: Option<String>,
}

impl Events {
    /// The tool name the hooks see for `tool` of this server: `mcp__<server>__<tool>`, as
    /// Claude Code names it, so that a policy resolves it by its bare name (`spec/hooks.md`
    /// §5.1) and the tool's principal is `tool:mcp__<server>__<tool>` in the hooks and here.
    pub fn tool_name(&self, tool: &str) -> String {
        format!("mcp__{}__{}", self.server, tool)
    }

    fn event(&self, name: &str, mut fields: Map<String, Value>) -> Vec<u8> {
        fields.insert("hook_event_name".into(), json!(name));
        fields.insert("session_id".into(), json!(self.session));
        if let Some(cwd) = &self.cwd {
            fields.insert("cwd".into(), json!(cwd));
        }
        Value::Object(fields).to_string().into_bytes()
    }

    /// The PreToolUse event of a call of `tool` with `args`.
    pub fn pre_tool_use(&self, tool: &str, args: &Map<String, Value>) -> Vec<u8> {
        let mut f = Map::new();
        f.insert("tool_name".into(), json!(self.tool_name(tool)));
        f.insert("tool_input".into(), Value::Object(args.clone()));
        self.event(HookEvent::PreToolUse.event_name(), f)
    }

    /// The PostToolUse event of `name` (a tool, or a method whose result is a read) called with
    /// `input`, whose output was `output`.
    pub fn post_tool_use(&self, name: &str, input: &Value, output: &Value) -> Vec<u8> {
        let mut f = Map::new();
        f.insert("tool_name".into(), json!(self.tool_name(name)));
        f.insert("tool_input".into(), input.clone());
        f.insert("tool_response".into(), output.clone());
        self.event(HookEvent::PostToolUse.event_name(), f)
    }

    /// The PostToolUseFailure event of `name` called with `input`, which failed with `error`
    /// (a JSON-RPC error object, or the gateway's refusal).
    pub fn post_tool_use_failure(&self, name: &str, input: &Value, error: &Value) -> Vec<u8> {
        let mut f = Map::new();
        f.insert("tool_name".into(), json!(self.tool_name(name)));
        f.insert("tool_input".into(), input.clone());
        f.insert("error".into(), error.clone());
        self.event(HookEvent::PostToolUseFailure.event_name(), f)
    }

    /// The SessionStart event a gateway writes when it starts (`spec/mcp.md` §6.4), for a
    /// session of its own only ([`is_gateway_session`]): source `startup` and no transcript,
    /// since the gateway sees every message of its own session from its first process on. The
    /// door writes the start marker only for a session the ledger holds no entry of; a session
    /// that already has entries and no marker gets an unseen-history entry (`spec/hooks.md`
    /// §3.1), and one already started is unchanged. `None` for any other session (a hooks'
    /// session given with `--session`): the hooks' own `SessionStart` begins it, seeing its
    /// source and transcript (a fork, a resume), which a gateway cannot.
    pub fn session_start(&self) -> Option<Vec<u8>> {
        if !is_gateway_session(&self.session) {
            return None;
        }
        let mut f = Map::new();
        f.insert("source".into(), json!("startup"));
        Some(self.event(HookEvent::SessionStart.event_name(), f))
    }

    /// The UserPromptSubmit event of the user's `text`.
    pub fn user_prompt(&self, text: &str) -> Vec<u8> {
        let mut f = Map::new();
        f.insert("prompt".into(), json!(text));
        self.event(HookEvent::UserPromptSubmit.event_name(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::hook::EXIT_BLOCK;

    fn outcome(code: u8, stdout: &str, stderr: &str) -> HookOutcome {
        HookOutcome {
            code,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn outcomes_read_as_the_hooks_exit_codes() {
        assert_eq!(Disposition::of(&outcome(0, "", "")), Disposition::Forward);
        assert_eq!(
            Disposition::of(&outcome(EXIT_BLOCK, "", "memlineage: deny x\n")),
            Disposition::Refuse("memlineage: deny x".into())
        );
        assert!(matches!(
            Disposition::of(&outcome(1, "", "")),
            Disposition::Refuse(r) if r.contains("failing closed")
        ));
        let ask = crate::front::ask::ask_outcome(&crate::front::ask::Receipt {
            tool: "write_file".into(),
            param: "path".into(),
            read: crate::record::EntryId([1; 32]),
            label: None,
            writer: None,
            untrusted_reads: 1,
            stated: None,
            sink: None,
        });
        let Disposition::Ask(receipt) = Disposition::of(&ask) else {
            panic!()
        };
        assert!(
            receipt.starts_with("write_file: parameter `path`"),
            "{receipt}"
        );
        let text = Disposition::unasked(&receipt, "the client offers no elicitation");
        assert!(
            text.starts_with("memlineage: deny write_file: parameter `path`"),
            "{text}"
        );
        assert!(
            text.ends_with("needed: the client offers no elicitation"),
            "{text}"
        );
    }

    #[test]
    fn events_name_the_tool_as_claude_code_does() {
        let e = Events {
            server: "fs".into(),
            session: "s".into(),
            cwd: None,
        };
        let v: Value = serde_json::from_slice(&e.pre_tool_use("write_file", &Map::new())).unwrap();
        assert_eq!(v["tool_name"], "mcp__fs__write_file");
        assert_eq!(v["hook_event_name"], "PreToolUse");
        assert_eq!(v["session_id"], "s");
        assert!(v.get("cwd").is_none());
    }
}
