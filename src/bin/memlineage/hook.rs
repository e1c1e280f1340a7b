//! `memlineage hook …`: the command hooks for Claude Code and Codex and their set-up
//! (`spec/hooks.md`). Logs and traces go to standard error only: a hook's output is read by the
//! agent.

use crate::hook_answer::{answer, decide, lock_within, locked, MAX_SCAN_BYTES, RECORDING};
use crate::open::{key_path, load_policy, open_pinned};
use crate::{hook_install, hook_separate, hookd, io::say, Res};
use clap::Subcommand;
use memlineage::front::ask;
use memlineage::front::hook::{
    failed, failed_in, session_id_in, HookEvent, HookOutcome, MAX_EVENT_BYTES,
};
use memlineage::front::pin::StateDir;
use memlineage::front::{Front, KeyFile};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

/// How long a hook waits for `LEDGER.key.lock` before it fails (closed): less than the 30 s
/// timeout `hook install` writes, so that the hook answers before the agent gives up on it
/// (Codex lets a call through when its hook times out).
const LOCK_WAIT: Duration = Duration::from_secs(20);

/// Command hooks for Claude Code and Codex (one JSON event on standard input; exit 2 blocks)
/// and their set-up: install, doctor, prune (spec/hooks.md).
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: HookCmd,
}

/// `memlineage hook …`: the command hooks and their set-up (spec/hooks.md).
#[derive(Subcommand)]
enum HookCmd {
    /// Before a tool call: blocks (exit 2, reason on stderr) sensitive calls justified by
    /// untrusted entries; blocks on any failure.
    PreToolUse(EventArgs),
    /// After a tool call: records its output as an External entry of `tool:<name>`.
    PostToolUse(EventArgs),
    /// After a failed tool call (Claude Code): records its error output like post-tool-use.
    PostToolUseFailure(EventArgs),
    /// A user prompt: records it as a Trusted entry of `user`.
    UserPromptSubmit(EventArgs),
    /// A session began: records whether the hooks saw it from its start (spec/hooks.md
    /// §3.1).
    SessionStart(EventArgs),
    /// Write or merge the agent's hook settings (absolute paths, fail-closed wrapping).
    Install(hook_install::InstallArgs),
    /// Run synthetic events through the configured hook commands: is an injected call blocked
    /// and a benign one allowed? Exits 1 if not.
    Doctor(hook_install::DoctorArgs),
    /// The resident per-ledger hook server (spec/hooks.md §11), started on demand by the event
    /// hooks: serves them on `LEDGER.hook.sock` until idle. With `--separated LAYOUT`, the
    /// separated server (spec/hooks.md §14), run as the guard user.
    #[command(hide = true)]
    Serve(ServeArgs),
    /// As the agent's user: try to read, write or replace each of the guard's files and to
    /// signal the server, and print one line per attempt (spec/hooks.md §14.5); run by
    /// `hook doctor --separated`.
    #[command(hide = true)]
    Probe {
        /// The guard's `layout.json`.
        layout: PathBuf,
    },
    /// Print the digest of each script for the policy's `secrets.endorsed_code` (spec/hooks.md
    /// §16.2, "Endorsed code"): one `"sha256:<hex>", # FILE` line each, to add by hand after
    /// reading the script. Changes nothing.
    Endorse {
        /// Scripts (text, at most 4 MiB each).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Replace session files untouched for longer than the limit by pruned markers.
    Prune {
        /// Ledger path.
        ledger: PathBuf,
        /// Age limit in days.
        #[arg(long, default_value_t = 30)]
        older_than_days: u64,
    },
}

/// The arguments of an event hook.
#[derive(clap::Args)]
pub struct EventArgs {
    /// Ledger path (not with `--guarded`).
    #[arg(required_unless_present = "guarded", conflicts_with = "guarded")]
    ledger: Option<PathBuf>,
    /// Separated mode (spec/hooks.md §14): hand the event to the guard's hook server on this
    /// socket and hold no key; if it cannot answer, fail closed.
    #[arg(long, value_name = "SOCKET", requires = "guard_user")]
    guarded: Option<PathBuf>,
    /// With `--guarded`: the uid the hook server must run as (and own the socket).
    #[arg(long, value_name = "UID", requires = "guarded")]
    guard_user: Option<u32>,
    /// Gate policy (TOML); default: the bundled policy.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The state directory outside the ledger's (spec/hooks.md §6.2), written by `hook
    /// install`: the pin (the log's key and newest checkpoint) and the session records.
    /// Without it, sessions are kept beside the ledger and nothing is pinned.
    #[arg(long)]
    state: Option<PathBuf>,
    /// The agent that runs the hook (`hook install` writes it into PreToolUse): how an ask is
    /// answered (spec/hooks.md §15.2). Claude Code asks the user; Codex, or no `--agent`,
    /// denies with the receipt.
    #[arg(long, value_enum)]
    agent: Option<hook_install::Agent>,
}

/// The arguments of `hook serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Ledger path (not with `--separated`).
    #[arg(required_unless_present = "separated", conflicts_with = "separated")]
    ledger: Option<PathBuf>,
    /// Gate policy (TOML); default: the bundled policy.
    #[arg(long, conflicts_with = "separated")]
    policy: Option<PathBuf>,
    /// The state directory (spec/hooks.md §6.2).
    #[arg(long, conflicts_with = "separated")]
    state: Option<PathBuf>,
    /// Serve as the separated guard (spec/hooks.md §14) of the layout `hook install
    /// --separate` wrote; run as the guard user.
    #[arg(long, value_name = "LAYOUT")]
    separated: Option<PathBuf>,
}

/// Runs `memlineage hook <cmd>`.
pub fn run(a: Args) -> Res<ExitCode> {
    hook_cmd(a.cmd)
}

fn hook_cmd(cmd: HookCmd) -> Res<ExitCode> {
    let (event, args) = match cmd {
        HookCmd::PreToolUse(a) => (HookEvent::PreToolUse, a),
        HookCmd::PostToolUse(a) => (HookEvent::PostToolUse, a),
        HookCmd::PostToolUseFailure(a) => (HookEvent::PostToolUseFailure, a),
        HookCmd::UserPromptSubmit(a) => (HookEvent::UserPromptSubmit, a),
        HookCmd::SessionStart(a) => (HookEvent::SessionStart, a),
        HookCmd::Install(a) => return hook_install::install(&a),
        HookCmd::Doctor(a) => return hook_install::doctor(&a),
        HookCmd::Endorse { files } => return endorse(&files),
        HookCmd::Serve(a) => {
            return match (a.separated, a.ledger) {
                (Some(layout), _) => hook_separate::serve(&layout),
                (None, Some(ledger)) => hookd::serve(&ledger, a.policy, a.state),
                (None, None) => Err("hook serve: give LEDGER or --separated LAYOUT".into()),
            }
        }
        HookCmd::Probe { layout } => return crate::hook_install::separate::probe(&layout),
        HookCmd::Prune {
            ledger,
            older_than_days,
        } => return prune(&ledger, older_than_days),
    };
    let agent = args.agent.map(|a| match a {
        hook_install::Agent::ClaudeCode => ask::Agent::ClaudeCode,
        hook_install::Agent::Codex => ask::Agent::Codex,
    });
    if let (Some(socket), Some(uid)) = (&args.guarded, args.guard_user) {
        return hook_separate::guarded(event, socket, uid, agent);
    }
    let Some(ledger) = args.ledger else {
        return Err("give LEDGER or --guarded SOCKET --guard-user UID".into());
    };
    // Absolute, as the server's socket name hashes it (`hookd::Paths::of`).
    let state = crate::open::state_for(&ledger, args.state)?;
    hook(event, &ledger, args.policy, state, agent)
}

/// Handles one hook event from standard input. Every failure fails closed (spec/hooks.md §5):
/// exit 2, and tool output that could not be recorded marks its session.
fn hook(
    event: HookEvent,
    ledger: &Path,
    policy: Option<PathBuf>,
    state: Option<StateDir>,
    agent: Option<ask::Agent>,
) -> Res<ExitCode> {
    answer(event, agent, || {
        run_hook(event, ledger, policy, state.as_ref())
    })
}

fn run_hook(
    event: HookEvent,
    ledger: &Path,
    policy: Option<PathBuf>,
    state: Option<&StateDir>,
) -> HookOutcome {
    let mut stdin = std::io::stdin().lock();
    let mut input = Vec::new();
    let read = (&mut stdin)
        .take(MAX_EVENT_BYTES as u64 + 1)
        .read_to_end(&mut input);
    // A PreToolUse needs nothing but a verdict: do not create files beside a missing ledger.
    if event == HookEvent::PreToolUse && !ledger.is_file() {
        let why = format!("no ledger at {}", ledger.display());
        return failed_in(None, event, None, &why);
    }
    if event.carries_output() {
        if let (Some(id), Ok(mut slot)) = (
            memlineage::front::hook::session_id_of(&input),
            RECORDING.lock(),
        ) {
            *slot = Some((crate::hook_answer::sessions_of(ledger, state), id));
        }
    }
    let mut lock_wait = LOCK_WAIT;
    // The resident server (spec/hooks.md §11) answers for readable events of normal size;
    // when it cannot, the event is handled here (or, with `only`, fails closed).
    let mode = hookd::Mode::from_env();
    let mut unserved = None;
    if read.is_ok() && input.len() <= MAX_EVENT_BYTES && mode != hookd::Mode::Off {
        let start = Instant::now();
        match hookd::ask(event, ledger, policy.as_deref(), state, &input, mode) {
            Ok(outcome) => return outcome,
            Err(why) => {
                tracing::debug!(%why, "memlineage hook: handled without the hook server");
                unserved = (mode == hookd::Mode::Only).then_some(why);
            }
        }
        // Whatever the server took of the budget is not waited again here.
        lock_wait = LOCK_WAIT
            .saturating_sub(start.elapsed())
            .max(Duration::from_secs(2));
    }
    let oversized = input.len() > MAX_EVENT_BYTES;
    let mut sessions = crate::hook_answer::sessions_of(ledger, state);
    locked(
        event,
        ledger,
        &mut sessions,
        &input,
        lock_wait,
        |sessions| {
            if let Err(e) = read {
                failed(sessions, event, &input, &format!("standard input: {e}"))
            } else if oversized {
                // The session id is read from the event's start, or further on without keeping it.
                let id = event
                    .carries_output()
                    .then(|| {
                        session_id_in(
                            std::io::Cursor::new(&input).chain(stdin.take(MAX_SCAN_BYTES)),
                        )
                    })
                    .flatten();
                let why = format!("event longer than {MAX_EVENT_BYTES} bytes");
                failed_in(Some(sessions), event, id.as_deref(), &why)
            } else if let Some(why) = unserved {
                failed(sessions, event, &input, &format!("hook server: {why}"))
            } else {
                match front(ledger, policy, state) {
                    Ok(mut front) => decide(&mut front, sessions, state, event, &input),
                    Err(e) => failed(sessions, event, &input, &e.to_string()),
                }
            }
        },
    )
}

/// `memlineage hook prune`: prunes the ledger's sessions older than `days` days.
fn prune(ledger: &Path, days: u64) -> Res<ExitCode> {
    if !ledger.is_file() {
        return Err(format!("no ledger at {}", ledger.display()).into());
    }
    let _lock = lock_within(ledger, LOCK_WAIT)?;
    // The records the hooks keep: in the state directory `hook install` made, when there is
    // one (before, only those beside the ledger were pruned).
    let state = crate::open::default_state(ledger);
    let sessions = crate::hook_answer::sessions_of(ledger, state.as_ref());
    let age = Duration::from_secs(days.saturating_mul(24 * 3600));
    let done = sessions.prune(age, SystemTime::now())?;
    say!(
        "pruned {} session(s) untouched for more than {days} day(s); kept {}",
        done.pruned,
        done.kept
    );
    Ok(ExitCode::SUCCESS)
}

fn front(
    ledger: &Path,
    policy: Option<PathBuf>,
    state: Option<&StateDir>,
) -> Res<Front<memlineage::store::SqliteStore, KeyFile>> {
    // The hooks' default is the coding-agent policy (spec/hooks.md §10).
    let protected = crate::open::protected(ledger, policy.as_deref(), state.map(|s| s.0.as_path()));
    let policy = match policy {
        Some(p) => load_policy(Some(p))?,
        None => memlineage::gate::Policy::coding(),
    };
    let (l, store) = open_pinned(ledger, state)?;
    let keys = KeyFile {
        store,
        path: key_path(ledger),
    };
    let mut front = Front::new(l, policy, keys);
    front.set_protected(protected);
    Ok(front)
}

/// `hook endorse FILE…`: the policy line of each script's digest. The digest is of the file's
/// bytes, which the secrecy rule reads as its text only when they are UTF-8 without a NUL and
/// at most 4 MiB; any other file is refused here, since its text is never read as endorsed.
fn endorse(files: &[PathBuf]) -> Res<ExitCode> {
    use sha2::{Digest, Sha256};
    const MAX: u64 = 4 << 20;
    let mut lines = String::new();
    for file in files {
        let bytes = memlineage::store::durable::read_regular(file, MAX)
            .map_err(|e| format!("hook endorse: {}: {e}", file.display()))?
            .ok_or_else(|| format!("hook endorse: {}: no such file", file.display()))?;
        if bytes.contains(&0) || std::str::from_utf8(&bytes).is_err() {
            return Err(format!(
                "hook endorse: {}: not text (UTF-8 without NUL)",
                file.display()
            )
            .into());
        }
        let shown = serde_json::to_string(&file.display().to_string())?;
        lines.push_str(&format!(
            "\"sha256:{}\", # {shown}\n",
            hex::encode(Sha256::digest(&bytes))
        ));
    }
    print!("{lines}");
    Ok(ExitCode::SUCCESS)
}
