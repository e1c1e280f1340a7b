//! `memlineage hook install` and `memlineage hook doctor` (spec/hooks.md §9): write the agent's
//! hook settings with absolute paths and fail-closed wrapping, merged into what is there; then
//! run synthetic events through exactly the configured commands and check that an injected
//! call is blocked and a benign one allowed.

use crate::Res;
use clap::{Args, ValueEnum};
use indexmap::IndexMap;
use memlineage::front::hook::HookEvent;
use memlineage::front::pin::StateDir;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod doctor;
pub mod separate;

pub use doctor::{doctor, DoctorArgs};

/// Seconds an agent waits for one memlineage hook (the `timeout` written).
const TIMEOUT_S: u64 = 30;

/// The agents whose hook settings memlineage writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    /// Claude Code: PROJECT/.claude/settings.json.
    ClaudeCode,
    /// Codex: PROJECT/.codex/hooks.json (`--dir ~` for ~/.codex/hooks.json).
    Codex,
}

impl Agent {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
        }
    }

    /// The settings file under the project directory `dir`.
    pub(crate) fn settings(self, dir: &Path) -> PathBuf {
        match self {
            Agent::ClaudeCode => dir.join(".claude").join("settings.json"),
            Agent::Codex => dir.join(".codex").join("hooks.json"),
        }
    }

    /// The events installed, in file order. Codex fires PostToolUse for failed calls too and
    /// has no PostToolUseFailure event that fires (spec/hooks.md §9). SessionStart decides
    /// whether a session was seen from its start (spec/hooks.md §3.1).
    fn events(self) -> &'static [HookEvent] {
        match self {
            Agent::ClaudeCode => &[
                HookEvent::SessionStart,
                HookEvent::UserPromptSubmit,
                HookEvent::PreToolUse,
                HookEvent::PostToolUse,
                HookEvent::PostToolUseFailure,
            ],
            Agent::Codex => &[
                HookEvent::SessionStart,
                HookEvent::UserPromptSubmit,
                HookEvent::PreToolUse,
                HookEvent::PostToolUse,
            ],
        }
    }

    /// The matcher for every tool.
    fn every_tool(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "*",
            Agent::Codex => ".*",
        }
    }

    /// The handler memlineage installs for `event`: the agent's own fail-closed setting where it
    /// has one (Claude Code's `onFailure: "block"`, v2.1.295+; Codex has none).
    fn handler(self, command: String) -> Json {
        let mut h = IndexMap::new();
        h.insert("type".into(), Json::String("command".into()));
        h.insert("command".into(), Json::String(command));
        h.insert("timeout".into(), Json::Number(TIMEOUT_S.into()));
        if self == Agent::ClaudeCode {
            h.insert("onFailure".into(), Json::String("block".into()));
        }
        Json::Object(h)
    }

    fn group(self, event: HookEvent, handler: Json) -> Json {
        let mut g = IndexMap::new();
        // UserPromptSubmit has no matcher; SessionStart's matches its source, and every
        // source must reach the hook.
        if !matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart) {
            g.insert("matcher".into(), Json::String(self.every_tool().into()));
        }
        g.insert("hooks".into(), Json::Array(vec![handler]));
        Json::Object(g)
    }
}

/// The text of the settings file at `path`, `None` when there is none.
pub(crate) fn read_existing(path: &Path) -> Res<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display()).into()),
    }
}

/// Writes `text` to `path` (atomically, its directory made) unless it already holds it
/// (`existing`), and says which.
pub(crate) fn write_if_changed(path: &Path, existing: Option<&str>, text: &str) -> Res<()> {
    if existing == Some(text) {
        crate::io::say!("{} already up to date", path.display());
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    memlineage::store::durable::write_atomic(path, text.as_bytes())?;
    crate::io::say!("wrote {}", path.display());
    Ok(())
}

/// A JSON value whose objects keep their members' order, so that a merged settings file keeps
/// the user's layout (serde_json's own map sorts; its `preserve_order` feature would change
/// every map in the crate).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(IndexMap<String, Json>),
}

/// The state directory of `ledger` (`state`, or its default), with the ledger's log key and
/// newest checkpoint pinned there (`spec/hooks.md` §6.2), and the session records kept beside
/// the ledger so far copied into it (those it does not hold yet; they carry their seals).
/// Re-pinning a ledger is what `install` is for: run it again after replacing a ledger on
/// purpose.
pub(crate) fn pin(ledger: &Path, state: Option<&Path>) -> Res<StateDir> {
    let dir = match state {
        Some(s) => StateDir::new(std::path::absolute(s)?),
        None => StateDir::default_for(&std::fs::canonicalize(ledger)?).ok_or(
            "neither XDG_STATE_HOME nor HOME is set: give the hooks' state directory with --state",
        )?,
    };
    let _lock = crate::open::lock_key_file(ledger)?;
    let (mut l, _) = crate::open::open_unpinned(ledger)?;
    let c = l.checkpoint()?;
    dir.repin(&l.vkey(), &c)?;
    dir.take_sessions(&memlineage::front::hook::FileSessions::beside(ledger))?;
    crate::io::say!(
        "pinned log key and checkpoint of size {} in {}",
        c.size(),
        dir.0.display()
    );
    Ok(dir)
}

/// `memlineage hook install` arguments.
#[derive(Args)]
pub struct InstallArgs {
    /// Which agent's settings to write.
    #[arg(long, value_enum)]
    agent: Agent,
    /// The ledger the hooks record into (made by `memlineage init`).
    #[arg(long)]
    ledger: PathBuf,
    /// Project directory (default: the current directory); `~` for the user-wide settings.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The memlineage binary the hooks run (default: this executable).
    #[arg(long)]
    binary: Option<PathBuf>,
    /// Gate policy passed to the hooks (default: the bundled policy).
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The hooks' state directory, outside the ledger's (spec/hooks.md §6.2): the pin and the
    /// session records. Default: `$XDG_STATE_HOME/memlineage/ledgers/<hash of the ledger
    /// path>` (else under `~/.local/state`).
    #[arg(long)]
    state: Option<PathBuf>,
    /// Privilege separation (spec/hooks.md §14).
    #[command(flatten)]
    separate: separate::SeparateArgs,
}

/// A path made absolute (against the current directory) and as UTF-8.
fn absolute(p: &Path, what: &str) -> Res<String> {
    let abs = std::path::absolute(p)?;
    abs.to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{what} path {} is not UTF-8", abs.display()).into())
}

/// `s` as one POSIX shell word (single-quoted).
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The command line the agent runs for `event`. Any exit but 0 and 2 of the hook, including the
/// shell's 127 for a missing binary and death by a signal, becomes exit 2 with a reason on
/// stderr (Codex ignores an exit 2 without one): spec/hooks.md §9.1. PreToolUse names the
/// agent (`--agent`), which decides how an ask is answered (spec/hooks.md §15.2).
pub fn hook_command(
    binary: &str,
    event: HookEvent,
    ledger: &str,
    policy: Option<&str>,
    state: Option<&str>,
    agent: Agent,
) -> String {
    let mut c = format!(
        "{} hook {} {}",
        sh_quote(binary),
        event.subcommand(),
        sh_quote(ledger)
    );
    if event == HookEvent::PreToolUse {
        c.push_str(&format!(" --agent {}", agent.name()));
    }
    if let Some(p) = policy {
        c.push_str(&format!(" --policy {}", sh_quote(p)));
    }
    if let Some(s) = state {
        c.push_str(&format!(" --state {}", sh_quote(s)));
    }
    c.push_str(
        " || { s=$?; [ \"$s\" -eq 2 ] || echo \"memlineage: hook failed (exit status $s); \
         failing closed\" >&2; exit 2; }",
    );
    c
}

/// Whether handler `h` is a memlineage hook for `event` (one `install` wrote, or one merged by
/// hand from an older example): a command whose words include `…memlineage hook <event>`.
fn is_ours(h: &Json, event: HookEvent) -> bool {
    let Json::Object(h) = h else { return false };
    if h.get("type") != Some(&Json::String("command".into())) {
        return false;
    }
    let Some(Json::String(cmd)) = h.get("command") else {
        return false;
    };
    let words: Vec<&str> = cmd
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '\'' || c == '"'))
        .collect();
    words.windows(3).any(|w| {
        (w[0] == "memlineage" || w[0].ends_with("/memlineage"))
            && w[1] == "hook"
            && w[2] == event.subcommand()
    })
}

/// The settings text after merging memlineage's hooks for `agent` into `existing` (None: no
/// file yet). Each event's memlineage handlers are replaced by one group at the place of the
/// first of them (or appended); everything else is kept in order. Deterministic, so running it
/// on its own output changes nothing.
///
/// # Errors
/// When `existing` is not JSON or not shaped like hook settings (root, `hooks`, an event's
/// groups or a group's `hooks` of the wrong type): the file must then be left untouched.
pub(crate) fn merge(
    agent: Agent,
    existing: Option<&str>,
    command: &dyn Fn(HookEvent) -> String,
) -> Res<String> {
    let mut root = match existing {
        None => IndexMap::new(),
        Some(text) => {
            // serde_json first, for its error messages (line and column).
            let v: serde_json::Value = serde_json::from_str(text)?;
            if !v.is_object() {
                return Err("the root is not a JSON object".into());
            }
            match serde_json::from_str::<Json>(text)? {
                Json::Object(o) => o,
                _ => return Err("the root is not a JSON object".into()),
            }
        }
    };
    let hooks = root
        .entry("hooks".to_string())
        .or_insert_with(|| Json::Object(IndexMap::new()));
    let Json::Object(hooks) = hooks else {
        return Err("`hooks` is not an object".into());
    };
    for &event in agent.events() {
        let name = event.event_name();
        let groups = hooks
            .entry(name.to_string())
            .or_insert_with(|| Json::Array(Vec::new()));
        let Json::Array(groups) = groups else {
            return Err(format!("`hooks.{name}` is not an array").into());
        };
        let mut kept = Vec::with_capacity(groups.len() + 1);
        let mut at = None;
        for (i, mut g) in std::mem::take(groups).into_iter().enumerate() {
            let Json::Object(go) = &mut g else {
                return Err(format!("`hooks.{name}[{i}]` is not an object").into());
            };
            let removed = match go.get_mut("hooks") {
                None => false,
                Some(Json::Array(hs)) => {
                    let before = hs.len();
                    hs.retain(|h| !is_ours(h, event));
                    hs.len() != before
                }
                Some(_) => return Err(format!("`hooks.{name}[{i}].hooks` is not an array").into()),
            };
            if removed && at.is_none() {
                at = Some(kept.len());
            }
            let empty = matches!(go.get("hooks"), Some(Json::Array(hs)) if hs.is_empty());
            if !(removed && empty) {
                kept.push(g);
            }
        }
        let ours = agent.group(event, agent.handler(command(event)));
        kept.insert(at.unwrap_or(kept.len()), ours);
        *groups = kept;
    }
    Ok(serde_json::to_string_pretty(&Json::Object(root))? + "\n")
}

/// `memlineage hook install`.
pub fn install(a: &InstallArgs) -> Res<ExitCode> {
    if a.separate.separate && !nix::unistd::geteuid().is_root() {
        return Err(separate::NEEDS_ROOT.into());
    }
    let dir = std::path::absolute(a.dir.clone().unwrap_or_else(|| PathBuf::from(".")))?;
    if !dir.is_dir() {
        return Err(format!("no directory {}", dir.display()).into());
    }
    if !a.ledger.is_file() {
        return Err(format!(
            "no ledger at {} (create it with `memlineage init {}`)",
            a.ledger.display(),
            a.ledger.display()
        )
        .into());
    }
    let ledger = absolute(&a.ledger, "ledger")?;
    let binary = match &a.binary {
        Some(b) => absolute(b, "binary")?,
        None => absolute(&std::env::current_exe()?, "binary")?,
    };
    let policy = match &a.policy {
        Some(p) if !p.is_file() => return Err(format!("no policy file {}", p.display()).into()),
        Some(p) => Some(absolute(p, "policy")?),
        None => None,
    };
    if a.separate.separate {
        if a.state.is_some() {
            return Err("--separate keeps the state in the guard root: no --state".into());
        }
        let binary = PathBuf::from(&binary);
        let given = separate::Given {
            agent: a.agent,
            ledger: &std::path::absolute(&a.ledger)?,
            dir: &dir,
            binary: &binary,
            policy: policy.as_deref().map(Path::new),
        };
        return separate::install(&given, &a.separate);
    }
    let state = pin(&a.ledger, a.state.as_deref())?;
    let state = Some(absolute(&state.0, "state")?);
    let path = a.agent.settings(&dir);
    let existing = read_existing(&path)?;
    let command = |event| {
        hook_command(
            &binary,
            event,
            &ledger,
            policy.as_deref(),
            state.as_deref(),
            a.agent,
        )
    };
    let text = merge(a.agent, existing.as_deref(), &command).map_err(|e| {
        format!(
            "{}: {e}; not a hook settings file memlineage can merge into: left untouched",
            path.display()
        )
    })?;
    write_if_changed(&path, existing.as_deref(), &text)?;
    let events: Vec<&str> = a.agent.events().iter().map(|e| e.event_name()).collect();
    crate::io::say!("hooks: {} -> {binary} (ledger {ledger})", events.join(", "));
    if a.agent == Agent::Codex {
        crate::io::say!(
            "Codex runs new or changed hooks only after you trust them: open /hooks in Codex \
             (0.124.0 or later) and trust the memlineage hooks"
        );
    } else {
        crate::io::say!("Claude Code 2.1.295 or later is needed for onFailure \"block\"");
    }
    warn_ledger_inside(&dir, &a.ledger);
    crate::io::say!(
        "check with: memlineage hook doctor --agent {} --dir {}",
        a.agent.name(),
        sh_quote(&dir.display().to_string())
    );
    Ok(ExitCode::SUCCESS)
}

/// Warns (standard error) when the ledger is inside the project `dir`: its directory holds the
/// signing key, which no tool call may touch (spec/hooks.md §13), so every search of the whole
/// project is refused, and `git add -A` stages the key.
fn warn_ledger_inside(dir: &Path, ledger: &Path) {
    let (Ok(dir), Ok(ledger)) = (dir.canonicalize(), ledger.canonicalize()) else {
        return;
    };
    if ledger.starts_with(&dir) {
        eprintln!(
            "warning: the ledger {} is inside the project {}: its directory holds the signing \
             key, so the hooks refuse every search of the whole project (Grep, Glob, `grep -r \
             .`, `find .`) and `git add -A` stages the key; put the ledger outside the project \
             (`memlineage init ~/.memlineage/agent.ledger`) and install again",
            ledger.display(),
            dir.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::doctor::{asks, matches, pre_verdict, Ran};
    use super::*;

    #[test]
    fn doctor_names_an_ask_as_an_ask_not_an_allow() {
        let ran = |code, stdout: &str| Ran {
            code,
            stdout: stdout.to_string(),
            stderr: String::new(),
        };
        let ask = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"r"}}"#;
        assert!(asks(&ran(Some(0), ask)));
        assert!(!asks(&ran(Some(0), "")));
        assert!(!asks(&ran(Some(2), ask)));
        assert_eq!(pre_verdict(false, true), "asked (the user decides)");
        assert_eq!(pre_verdict(false, false), "allowed");
        assert_eq!(pre_verdict(true, true), "blocked");
    }

    #[test]
    fn quoting_survives_quotes_and_spaces() {
        assert_eq!(sh_quote("/a b/it's"), r"'/a b/it'\''s'");
        let c = hook_command(
            "/x/memlineage",
            HookEvent::PreToolUse,
            "/l.db",
            None,
            None,
            Agent::Codex,
        );
        assert!(
            c.starts_with("'/x/memlineage' hook pre-tool-use '/l.db' --agent codex || {"),
            "{c}"
        );
    }

    #[test]
    fn matchers() {
        assert_eq!(matches(None, "Bash"), Some(true));
        assert_eq!(matches(Some("Edit|Write"), "Write"), Some(true));
        assert_eq!(matches(Some("Edit|Write"), "Bash"), Some(false));
        assert_eq!(matches(Some("mcp__.*"), "mcp__a__b"), Some(true));
        assert_eq!(matches(Some("^Bash$"), "Bash"), None);
    }

    #[test]
    fn merge_refuses_misshapen_settings() {
        let cmd = |e: HookEvent| e.subcommand().to_string();
        for (text, want) in [
            ("[1]", "the root is not a JSON object"),
            (r#"{"hooks": 3}"#, "`hooks` is not an object"),
            (
                r#"{"hooks": {"PreToolUse": {}}}"#,
                "`hooks.PreToolUse` is not an array",
            ),
            (
                r#"{"hooks": {"PreToolUse": [1]}}"#,
                "`hooks.PreToolUse[0]` is not an object",
            ),
            (
                r#"{"hooks": {"PreToolUse": [{"hooks": {}}]}}"#,
                "`hooks.PreToolUse[0].hooks` is not an array",
            ),
        ] {
            let err = merge(Agent::Codex, Some(text), &cmd).unwrap_err();
            assert_eq!(err.to_string(), want, "{text}");
        }
    }
}
