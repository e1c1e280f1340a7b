//! Privilege separation of the hooks (`spec/hooks.md` §14), as ssh-agent and gpg-agent do it:
//! the signing key, the ledger and the session state belong to a guard user; the separated
//! hook server ([`serve`], `memlineage hook serve --separated LAYOUT`) runs as that user and
//! decides every event; the hooks the agent starts ([`guarded`], `memlineage hook <event>
//! --guarded SOCKET --guard-user UID`) hold no key, open no ledger and only talk to it over
//! the socket, whose peer credentials both sides check (`SO_PEERCRED`,
//! [`memlineage::front::privsep`]). Whatever cannot be answered fails closed; nothing falls
//! back to deciding in process with a key.
//!
//! `hook install --separate` and `hook doctor --separated` are in `hook_install/separate.rs`.

use crate::hookd::{Deadline, State, ANSWER_WAIT, REQUEST_WAIT, WATCH_EVERY};
use crate::Res;
use memlineage::front::hook::{
    failed_in, session_id_in, session_id_of, FileSessions, HookEvent, HookOutcome, Sessions,
    MAX_EVENT_BYTES,
};
use memlineage::front::pin::StateDir;
use memlineage::front::privsep::{Body, Notice, Request, SeparationError};
use memlineage::front::Session;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// The `format` of a `layout.json`.
pub const LAYOUT_FORMAT: &str = "memlineage/guard-layout@v1";
/// Largest `layout.json`, in bytes.
const MAX_LAYOUT_BYTES: u64 = 64 << 10;

/// Where `hook install --separate` put the guard's files, and who owns them
/// (`GUARD_ROOT/layout.json`, root-owned, mode 0644; `spec/hooks.md` §14.4).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    /// [`LAYOUT_FORMAT`].
    pub format: String,
    /// The install's name (the systemd unit `install` prints is `memlineage-NAME.service`).
    pub name: String,
    /// The guard root (root-owned, mode 0711).
    pub root: PathBuf,
    /// The guard user's name.
    pub guard_user: String,
    /// The guard user's uid.
    pub guard_uid: u32,
    /// The guard user's primary gid.
    pub guard_gid: u32,
    /// The agent's user name.
    pub agent_user: String,
    /// The agent's uid: the only non-root peer the server serves.
    pub agent_uid: u32,
    /// The agent's primary gid.
    pub agent_gid: u32,
    /// The ledger (in `ROOT/ledger/`, mode 0700, guard-owned).
    pub ledger: PathBuf,
    /// Its key file (mode 0600, guard-owned).
    pub key: PathBuf,
    /// The policy file (root-owned, 0644).
    pub policy: PathBuf,
    /// The state directory: pin and sessions (guard-owned, 0700).
    pub state: PathBuf,
    /// The socket (in `ROOT/run/`, 0755 guard-owned; the socket 0666).
    pub socket: PathBuf,
    /// The binary the hooks and the server run (root-owned, 0755).
    pub binary: PathBuf,
    /// The command line that starts the server.
    pub start: String,
}

impl Layout {
    /// Reads `path`, which must be owned by root and writable by nobody else (it names the
    /// uid the server serves).
    ///
    /// # Errors
    /// A file that is not a layout, has another format, or could be written by a non-root
    /// user.
    pub fn load_trusted(path: &Path) -> Res<Self> {
        let m = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if m.uid() != 0 || m.mode() & 0o022 != 0 {
            return Err(format!(
                "{}: must be owned by root and writable by root only (owner uid {}, mode {:o})",
                path.display(),
                m.uid(),
                m.mode() & 0o7777
            )
            .into());
        }
        let bytes = crate::io::read_capped(path, MAX_LAYOUT_BYTES, "a layout")?;
        let l: Layout =
            serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        if l.format != LAYOUT_FORMAT {
            return Err(format!(
                "{}: format {:?}, want {LAYOUT_FORMAT:?}",
                path.display(),
                l.format
            )
            .into());
        }
        Ok(l)
    }
}

// ---------------------------------------------------------------------------------------------
// The agent side.

/// `memlineage hook <event> --guarded SOCKET --guard-user UID`: reads the event, hands it to
/// the separated server and prints its answer. Holds no key and opens no ledger. When the
/// server cannot answer — not running, killed, socket not a socket or not owned by `guard_uid`,
/// listener not running as `guard_uid`, malformed answer, 15 s passed — the event fails closed
/// (PreToolUse blocks, exit 2, with the reason and how to start the server).
pub fn guarded(
    event: HookEvent,
    socket: &Path,
    guard_uid: u32,
    agent: Option<memlineage::front::ask::Agent>,
) -> Res<ExitCode> {
    // An ask from the server is rendered here, for the agent alone, as in process.
    crate::hook_answer::answer(event, agent, || guarded_outcome(event, socket, guard_uid))
}

fn guarded_outcome(event: HookEvent, socket: &Path, guard_uid: u32) -> HookOutcome {
    let mut stdin = std::io::stdin().lock();
    let mut input = Vec::new();
    let read = (&mut stdin)
        .take(MAX_EVENT_BYTES as u64 + 1)
        .read_to_end(&mut input);
    let trouble = match &read {
        Err(e) => Some(format!("standard input: {e}")),
        Ok(_) if input.len() > MAX_EVENT_BYTES => {
            Some(format!("event longer than {MAX_EVENT_BYTES} bytes"))
        }
        Ok(_) => None,
    };
    let Some(why) = trouble else {
        return match ask(socket, guard_uid, Body::Event(event, input.clone())) {
            Ok(outcome) => outcome,
            Err(e) => failed_in(
                None,
                event,
                session_id_of(&input).as_deref(),
                &unreachable(socket, &e),
            ),
        };
    };
    // Output that cannot be handed over: the server marks its session (this process cannot).
    if event.carries_output() {
        let scan =
            std::io::Cursor::new(&input).chain(stdin.take(crate::hook_answer::MAX_SCAN_BYTES));
        if let Some(id) = session_id_in(scan) {
            let notice = Notice {
                session_id: id.clone(),
                hook_event_name: event.event_name().to_string(),
                reason: why.clone(),
            };
            return match ask(socket, guard_uid, Body::Notice(notice)) {
                Ok(outcome) => outcome,
                Err(e) => {
                    let why = format!("{why}; {}", unreachable(socket, &e));
                    failed_in(None, event, Some(&id), &why)
                }
            };
        }
    }
    failed_in(None, event, None, &why)
}

/// The reason given when the server cannot answer: what failed and how to start it (the
/// `start` line of the layout beside the socket's directory, when readable).
fn unreachable(socket: &Path, e: &SeparationError) -> String {
    let start = socket
        .parent()
        .and_then(Path::parent)
        .map(|root| root.join("layout.json"))
        .and_then(|p| Layout::load_trusted(&p).ok())
        .map_or_else(
            || "see the output of `memlineage hook install --separate`".to_string(),
            |l| format!("as root: {}", l.start),
        );
    format!(
        "separated hook server on {}: {e}; failing closed (this hook holds no key and decides \
         nothing without the server). Start the hook server ({start})",
        socket.display()
    )
}

/// One request to the separated server on `socket`, believed only from `guard_uid`: the
/// socket file must be a socket owned by it, and the kernel must report the listening process
/// as running under it.
fn ask(socket: &Path, guard_uid: u32, body: Body) -> Result<HookOutcome, SeparationError> {
    let m = std::fs::symlink_metadata(socket)?;
    if !m.file_type().is_socket() {
        return Err(SeparationError::NotSocket);
    }
    if m.uid() != guard_uid {
        return Err(SeparationError::SocketOwner {
            got: m.uid(),
            want: guard_uid,
        });
    }
    let stream = UnixStream::connect(socket)?;
    let peer = peer_uid(&stream)?;
    if peer.0 != guard_uid {
        return Err(SeparationError::ServerNotGuard {
            got: peer.0,
            want: guard_uid,
        });
    }
    let until = Instant::now() + ANSWER_WAIT;
    stream.set_write_timeout(Some(ANSWER_WAIT))?;
    let req = Request::new(body);
    req.write(&mut BufWriter::new(&stream))?;
    let mut r = BufReader::new(Deadline {
        stream: &stream,
        until,
    });
    req.read_answer(&mut r)
}

/// The uid and pid of the process at the other end of `s`, as the kernel reports them
/// (`SO_PEERCRED`).
pub fn peer_uid(s: &UnixStream) -> Result<(u32, i32), SeparationError> {
    let c = nix::sys::socket::getsockopt(s, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(std::io::Error::from)?;
    Ok((c.uid(), c.pid()))
}

// ---------------------------------------------------------------------------------------------
// The guard side.

/// `memlineage hook serve --separated LAYOUT`: the separated server, run as the layout's guard
/// user. Serves only connections whose peer runs as the agent's uid or root; marks the
/// sessions it has not seen from their start (`spec/hooks.md` §14.3). Runs until its socket is
/// replaced or removed or its ledger disappears (no idle exit: nothing restarts it on demand;
/// the systemd unit `install` prints restarts it).
pub fn serve(layout_path: &Path) -> Res<ExitCode> {
    let layout = Layout::load_trusted(layout_path)?;
    let me = nix::unistd::geteuid().as_raw();
    if me != layout.guard_uid {
        return Err(format!(
            "hook serve --separated must run as the guard user {} (uid {}), not as uid {me}: {}",
            layout.guard_user, layout.guard_uid, layout.start
        )
        .into());
    }
    std::env::set_current_dir("/")?;
    let dir = StateDir::new(layout.state.clone());
    let paths = crate::hookd::Paths::of(&layout.ledger, Some(&layout.policy), Some(&dir));
    // Never through a symbolic link planted beside the ledger: the pid written below would
    // truncate the file it points to (`memlineage::store::durable::create_regular`).
    let mut lock = memlineage::store::durable::create_regular(&paths.lock)?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err("another separated hook server of this guard is running".into())
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
    }
    lock.set_len(0)?;
    writeln!(lock, "{}", std::process::id())?;
    let mut state = State::new(
        layout.ledger.clone(),
        Some(layout.policy.clone()),
        Some(dir),
    );
    state.protect_guard_root(layout.root.clone());
    if let Err(e) = state.front() {
        eprintln!("memlineage hook serve --separated: ledger not opened yet: {e}");
    }
    let listener = bind(&layout.socket)?;
    let ino = std::fs::metadata(&layout.socket)?.ino();
    {
        let (socket, ledger) = (layout.socket.clone(), layout.ledger.clone());
        std::thread::spawn(move || watch(&socket, ino, &ledger));
    }
    eprintln!(
        "memlineage hook serve --separated: serving uid {} on {}",
        layout.agent_uid,
        layout.socket.display()
    );
    let mut seen = HashSet::new();
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        if let Err(e) = serve_one(&mut state, &mut seen, layout.agent_uid, &conn) {
            eprintln!("memlineage hook serve --separated: request refused: {e}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Binds `socket` (mode 0666: the kernel's peer credentials decide who is served) under a
/// temporary name in its directory and renames it into place.
fn bind(socket: &Path) -> Res<UnixListener> {
    let dir = socket.parent().ok_or("the socket path has no directory")?;
    let tmp = dir.join(format!(".hook.sock.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let listener = UnixListener::bind(&tmp)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o666))?;
    std::fs::rename(&tmp, socket)?;
    Ok(listener)
}

/// Exits the process when the socket is no longer this server's or the ledger is gone.
fn watch(socket: &Path, ino: u64, ledger: &Path) {
    loop {
        std::thread::sleep(WATCH_EVERY);
        let ours = std::fs::symlink_metadata(socket).is_ok_and(|m| m.ino() == ino);
        if !ours || !ledger.exists() {
            if ours {
                let _ = std::fs::remove_file(socket);
            }
            std::process::exit(0);
        }
    }
}

fn serve_one(
    state: &mut State,
    seen: &mut HashSet<String>,
    agent_uid: u32,
    conn: &UnixStream,
) -> Res<()> {
    conn.set_read_timeout(Some(REQUEST_WAIT))?;
    conn.set_write_timeout(Some(REQUEST_WAIT))?;
    let (uid, _) = peer_uid(conn)?;
    if uid != agent_uid && uid != 0 {
        return Err(SeparationError::PeerRefused {
            uid,
            agent: agent_uid,
        }
        .into());
    }
    let req = Request::read(&mut BufReader::new(conn))?;
    let outcome = match &req.body {
        Body::Event(event, input) => {
            let event = *event;
            state.outcome(event, input, |sessions| first_sight(seen, sessions, input))
        }
        Body::Notice(n) => {
            let event = n.event().unwrap_or(HookEvent::PostToolUse);
            let why = format!("the hook could not hand it over: {}", n.reason);
            state.with_sessions(event, |sessions| {
                failed_in(Some(sessions), event, Some(&n.session_id), &why)
            })
        }
    };
    req.answer(&outcome, &mut BufWriter::new(conn))?;
    Ok(())
}

/// Fail closed on what the server may have missed (`spec/hooks.md` §14.3): the first time
/// this server process sees a session, the session is marked as having unrecorded output when
/// its record already exists (the server was restarted or stopped while the session went on,
/// so tool output may have been read that no hook could hand over). Its sensitive calls are
/// then refused. A session whose first event is not its `SessionStart` is the start rule's
/// (`spec/hooks.md` §3.1, in [`hook::handle`](memlineage::front::hook::handle)), as in every
/// mode.
fn first_sight(seen: &mut HashSet<String>, sessions: &mut FileSessions, input: &[u8]) {
    let Some(id) = session_id_of(input) else {
        return;
    };
    if !seen.insert(id.clone()) {
        return;
    }
    let Ok(record) = sessions.load(&id) else {
        // Pruned or unreadable: the event fails on it anyway.
        return;
    };
    if record == Session::new(&id) {
        return;
    }
    let why = format!(
        "the separated hook server did not see session {id:?} from its start (it was \
         restarted or stopped meanwhile), so output the session read may be unrecorded; \
         start a new session"
    );
    eprintln!("memlineage hook serve --separated: {why}");
    let _ = failed_in(Some(sessions), HookEvent::PostToolUse, Some(&id), &why);
}
