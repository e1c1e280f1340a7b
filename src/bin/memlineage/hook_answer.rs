//! How one hook event is answered, whoever decides it (`spec/hooks.md` §5, §11): under a
//! watchdog that answers closed before the agent's timeout, with `LEDGER.key.lock` held and the
//! ledger's file sessions, the output of a hook that cannot finish marked unrecorded apart from
//! its session's record, and the pin advanced after a write. Shared by the in-process hook
//! (`hook`), the resident server (`hookd`) and the guarded hook (`hook_separate`).

use crate::open::key_path;
use crate::{telemetry, Res};
use memlineage::front::ask;
use memlineage::front::hook::{
    failed_in, handle, marked_apart, FileSessions, HookEvent, HookOutcome, PRUNE_AFTER,
};
use memlineage::front::pin::StateDir;
use memlineage::front::Front;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

/// How long a hook runs before its watchdog answers closed: less than the 30 s `timeout` that
/// `hook install` writes, and than the lock wait plus slack. `MEMLINEAGE_HOOK_WATCHDOG_MS` can
/// only shorten it (tests).
const WATCHDOG: Duration = Duration::from_secs(25);
/// How much of an oversized PostToolUse event is scanned for its `session_id`, in bytes.
pub(crate) const MAX_SCAN_BYTES: u64 = 256 << 20;
/// How long the watchdog and a hook without the lock try to mark a session apart before
/// they answer.
const MARK_WAIT: Duration = Duration::from_secs(1);

/// The session an output-carrying hook records into, once its event is read: if the hook
/// cannot finish (its watchdog fires, the lock cannot be had), the output is marked
/// unrecorded in that session apart from its record (`spec/hooks.md` §5), so that the
/// session's sensitive calls are refused instead of its values looking unsourced.
pub(crate) static RECORDING: std::sync::Mutex<Option<(FileSessions, String)>> =
    std::sync::Mutex::new(None);

/// Marks the output of [`RECORDING`]'s session unrecorded apart, waiting at most
/// [`MARK_WAIT`]; the session id when it was marked.
fn mark_recording_apart() -> Option<String> {
    let (sessions, id) = RECORDING.lock().ok()?.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(sessions.mark_unrecorded_apart(&id).map(|()| id));
    });
    rx.recv_timeout(MARK_WAIT).ok()?.ok()
}

/// Answers `event` with what `decide` gives, rendered for `agent` (an ask becomes Claude
/// Code's ask, or a deny elsewhere: `spec/hooks.md` §15.2), under the [`watchdog`]: whoever
/// answers first answers alone. Shared by the in-process, served and guarded hooks.
pub(crate) fn answer(
    event: HookEvent,
    agent: Option<ask::Agent>,
    decide: impl FnOnce() -> HookOutcome,
) -> Res<ExitCode> {
    let _telemetry = telemetry::init(false);
    let answered = std::sync::Arc::new(std::sync::Mutex::new(false));
    watchdog(event, std::sync::Arc::clone(&answered));
    let outcome = ask::for_agent(decide(), agent);
    let mut done = answered.lock().unwrap_or_else(|e| e.into_inner());
    if *done {
        return Ok(ExitCode::from(memlineage::front::hook::EXIT_BLOCK));
    }
    *done = true;
    std::io::stdout().write_all(outcome.stdout.as_bytes())?;
    std::io::stderr().write_all(outcome.stderr.as_bytes())?;
    Ok(ExitCode::from(outcome.code))
}

/// Answers the event closed (exit 2, spec/hooks.md §5) if the hook has not answered within
/// [`WATCHDOG`], whatever it is stuck on (a FIFO or device where a file should be, a lock, a
/// wedged disk): Codex lets a call through when its hook times out, so the hook must answer
/// first (issue 25).
fn watchdog(event: HookEvent, answered: std::sync::Arc<std::sync::Mutex<bool>>) {
    let wait = std::env::var("MEMLINEAGE_HOOK_WATCHDOG_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(WATCHDOG, Duration::from_millis)
        .min(WATCHDOG);
    std::thread::spawn(move || {
        std::thread::sleep(wait);
        let mut done = answered.lock().unwrap_or_else(|e| e.into_inner());
        if *done {
            return;
        }
        *done = true;
        let why = format!(
            "{} did not finish within {} ms: failing closed",
            event.event_name(),
            wait.as_millis()
        );
        let outcome = match mark_recording_apart() {
            Some(id) => marked_apart(event, &id, &why),
            None => failed_in(None, event, None, &why),
        };
        let _ = std::io::stdout().write_all(outcome.stdout.as_bytes());
        let _ = std::io::stderr().write_all(outcome.stderr.as_bytes());
        let _ = std::io::stderr().flush();
        std::process::exit(i32::from(outcome.code));
    });
}

/// The ledger's file sessions: in the state directory when the hooks keep one, else
/// `LEDGER.sessions/`.
pub(crate) fn sessions_of(ledger: &Path, state: Option<&StateDir>) -> FileSessions {
    match state {
        Some(s) => s.sessions(),
        None => FileSessions::beside(ledger),
    }
}

/// Runs `decide` with `LEDGER.key.lock` held (waiting at most `wait`) and the ledger's file
/// `sessions` ([`sessions_of`]; a long-lived server passes the same ones at every event, so
/// that what they keep in memory lives across events), then prunes sessions if due; a lock not
/// had fails the event closed. One hook at a time per ledger: the session files and the key
/// file are read-modify-write.
pub(crate) fn locked(
    event: HookEvent,
    ledger: &Path,
    sessions: &mut FileSessions,
    input: &[u8],
    wait: Duration,
    decide: impl FnOnce(&mut FileSessions) -> HookOutcome,
) -> HookOutcome {
    let _lock = match lock_within(ledger, wait) {
        Ok(l) => l,
        Err(e) => {
            if let Some(id) = mark_recording_apart() {
                return marked_apart(event, &id, &e.to_string());
            }
            let id = memlineage::front::hook::session_id_of(input);
            return failed_in(None, event, id.as_deref(), &e.to_string());
        }
    };
    let outcome = decide(sessions);
    // Opportunistic pruning never changes the outcome.
    if let Err(e) = sessions.prune_if_due(PRUNE_AFTER, SystemTime::now()) {
        tracing::warn!(error = %e, "memlineage hook: pruning sessions failed");
    }
    outcome
}

/// `LEDGER.key.lock`, locked exclusively (shared with `memlineage append`), waiting at most
/// `wait`.
pub(crate) fn lock_within(ledger: &Path, wait: Duration) -> Res<std::fs::File> {
    let mut p = key_path(ledger).into_os_string();
    p.push(".lock");
    let path = PathBuf::from(p);
    Ok(memlineage::store::durable::lock_file(&path, wait)
        .map_err(|e| format!("{}: {e}", path.display()))?)
}

/// Handles one event on `front` and, when it wrote to the ledger and a state directory is
/// kept, signs the checkpoint and advances the pin (a failure there fails the event closed).
pub(crate) fn decide<K: memlineage::front::Keys>(
    front: &mut Front<memlineage::store::SqliteStore, K>,
    sessions: &mut FileSessions,
    state: Option<&StateDir>,
    event: HookEvent,
    input: &[u8],
) -> HookOutcome {
    let outcome = handle(front, sessions, event, input);
    match state {
        Some(st) if event != HookEvent::PreToolUse && outcome.allows() => {
            match crate::open::advance_pin(front.ledger_mut(), st) {
                Ok(()) => outcome,
                Err(e) => failed_in(None, event, None, &format!("pin: {e}")),
            }
        }
        _ => outcome,
    }
}
