//! `memlineage hook <event>`: the command hook for Claude Code and Codex (`spec/hooks.md`).
//! Logs and traces go to standard error only: a hook's output is read by the agent.

use crate::open::{front, lock_key_file};
use crate::{telemetry, Res};
use clap::ValueEnum;
use memlineage::front::hook::{handle, FileSessions, HookEvent, HookOutcome, EXIT_BLOCK};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Largest hook event read from standard input, in bytes (a tool's output travels inside it).
const MAX_EVENT_BYTES: u64 = 16 << 20;

/// Command hook for Claude Code and Codex: one JSON event on standard input
/// (spec/hooks.md). pre-tool-use exits 2 with the reason on stderr to block a call.
#[derive(clap::Args)]
pub struct Args {
    /// Which event.
    #[arg(value_enum)]
    event: HookArg,
    /// Ledger path.
    ledger: PathBuf,
    /// Gate policy (TOML); default: the bundled policy.
    #[arg(long)]
    policy: Option<PathBuf>,
}

/// The hook events, as subcommand arguments.
#[derive(Clone, Copy, ValueEnum)]
enum HookArg {
    /// Before a tool call: blocks (exit 2) sensitive calls justified by untrusted entries.
    PreToolUse,
    /// After a tool call: records its output as an External entry of `tool:<name>`.
    PostToolUse,
    /// A user prompt: records it as a Trusted entry of `user`.
    UserPromptSubmit,
}

impl HookArg {
    fn event(self) -> HookEvent {
        match self {
            HookArg::PreToolUse => HookEvent::PreToolUse,
            HookArg::PostToolUse => HookEvent::PostToolUse,
            HookArg::UserPromptSubmit => HookEvent::UserPromptSubmit,
        }
    }
}

/// Handles one hook event from standard input. Any failure before the event is decided blocks
/// a PreToolUse call (fail closed) and exits 1 for the other events.
pub fn run(a: Args) -> Res<ExitCode> {
    let _telemetry = telemetry::init(false);
    let event = a.event.event();
    let outcome = run_hook(event, &a.ledger, a.policy).unwrap_or_else(|e| HookOutcome {
        code: if event == HookEvent::PreToolUse {
            EXIT_BLOCK
        } else {
            1
        },
        stdout: String::new(),
        stderr: format!("memlineage: deny: {e}\n"),
    });
    std::io::stdout().write_all(outcome.stdout.as_bytes())?;
    std::io::stderr().write_all(outcome.stderr.as_bytes())?;
    Ok(ExitCode::from(outcome.code))
}

fn run_hook(event: HookEvent, ledger: &Path, policy: Option<PathBuf>) -> Res<HookOutcome> {
    let mut input = Vec::new();
    std::io::stdin()
        .take(MAX_EVENT_BYTES + 1)
        .read_to_end(&mut input)?;
    if input.len() as u64 > MAX_EVENT_BYTES {
        return Err(format!("event longer than {MAX_EVENT_BYTES} bytes").into());
    }
    if !ledger.is_file() {
        return Err(format!("no ledger at {}", ledger.display()).into());
    }
    // One hook at a time per ledger: the session files and the key file are read-modify-write.
    let _lock = lock_key_file(ledger)?;
    let mut front = front(ledger, policy)?;
    let mut dir = ledger.as_os_str().to_owned();
    dir.push(".sessions");
    let mut sessions = FileSessions(PathBuf::from(dir));
    Ok(handle(&mut front, &mut sessions, event, &input))
}
