//! The resident hook server (`spec/hooks.md` §11): `memlineage hook serve LEDGER` keeps the
//! ledger open and answers the event hooks over a unix socket beside it, so that one hook
//! process costs the same at any ledger size (opening a ledger re-reads and re-hashes every
//! label row). The hook command ([`ask`]) starts it on demand and handles the event itself
//! whenever the server cannot answer (fail closed: an answer is believed only when its tag
//! verifies under the log key, [`memlineage::front::hookd`]).

use crate::open::{file_id, key_path, load_policy, open_pinned, warn_if_readable, FileId};
use crate::Res;
use memlineage::front::hook::{failed, FileSessions, HookEvent, HookOutcome};
use memlineage::front::hookd::{Request, ServerKey};
use memlineage::front::keystore::KeyStore;
use memlineage::front::mcp::SharedKeyFile;
use memlineage::front::pin::StateDir;
use memlineage::front::Front;
use memlineage::ledger::{RowsCheck, RowsError};
use memlineage::store::{SqliteStore, Store};
use std::io::{BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the server lives without a request (10 minutes); it also exits within a quarter
/// second of its ledger file or its socket disappearing.
pub const IDLE_EXIT: Duration = Duration::from_secs(600);
/// How long the hook waits for the server's whole answer before handling the event itself.
pub(crate) const ANSWER_WAIT: Duration = Duration::from_secs(15);
/// How long the server waits for `LEDGER.key.lock` (less than [`ANSWER_WAIT`], so that it
/// answers a fail-closed outcome before the hook gives up on it).
const SERVER_LOCK_WAIT: Duration = Duration::from_secs(12);
/// How long the server waits, before deciding an event other than PreToolUse, for the
/// rows-chain check it started when it opened the ledger (`spec/hooks.md` §11.3 item 2); when
/// the count has not finished by then the event is left unanswered and the hook decides it in
/// process, as while no server is up. With [`SERVER_LOCK_WAIT`] after it, less than
/// [`ANSWER_WAIT`].
const ROWS_WAIT: Duration = Duration::from_secs(2);
/// How long the server waits for a client's request bytes.
pub(crate) const REQUEST_WAIT: Duration = Duration::from_secs(5);
/// Longest socket path used, in bytes (`sun_path` holds 108 bytes on Linux, 104 on macOS,
/// and binding goes through a path 4 bytes longer); beyond it every event is handled in the
/// hook process.
pub(crate) const MAX_SOCKET_PATH: usize = 96;
/// How often the server checks its idle time, socket and ledger file.
pub(crate) const WATCH_EVERY: Duration = Duration::from_millis(250);

/// `MEMLINEAGE_HOOK_SERVER`: whether the event hooks use the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Default: ask the server, starting it when absent; handle the event in the hook process
    /// when it cannot answer.
    Auto,
    /// `off`: always handle the event in the hook process (memlineage 0.1's behaviour).
    Off,
    /// `only`: ask a running server, never start one; when it cannot answer, the event fails
    /// closed (PreToolUse blocks, tool output marks its session). For tests and diagnosis.
    Only,
}

impl Mode {
    /// The mode named by `MEMLINEAGE_HOOK_SERVER` (`off`, `only`; anything else: auto).
    pub fn from_env() -> Self {
        match std::env::var("MEMLINEAGE_HOOK_SERVER").as_deref() {
            Ok("off") => Mode::Off,
            Ok("only") => Mode::Only,
            _ => Mode::Auto,
        }
    }
}

/// The server's files for a ledger, policy and state directory (absolute paths):
/// `LEDGER.hook.sock` and `LEDGER.hook.lock` with the bundled policy and no state directory;
/// with `--policy P`, `LEDGER.hook-<16 hex of SHA-256(P)>.sock` / `.lock`; with `--state S`
/// too, the hash is of `P NUL S`: one server per policy file and state directory.
pub struct Paths {
    /// The socket.
    pub socket: PathBuf,
    /// Held by the running server (holds its process id).
    pub lock: PathBuf,
}

impl Paths {
    /// The paths for `ledger`, `policy` and `state`, all absolute.
    pub fn of(ledger: &Path, policy: Option<&Path>, state: Option<&StateDir>) -> Self {
        let mut base = ledger.as_os_str().to_owned();
        base.push(".hook");
        if policy.is_some() || state.is_some() {
            // Without a state directory the name is what it was (the policy path's hash).
            fn bytes(p: Option<&Path>) -> &[u8] {
                p.map_or(&b""[..], |p| p.as_os_str().as_encoded_bytes())
            }
            let key = match state {
                None => bytes(policy).to_vec(),
                Some(s) => [bytes(policy), b"\0", bytes(Some(&s.0))].concat(),
            };
            let h = memlineage::record::Hash32::digest(&key);
            base.push(format!("-{}", &hex::encode(h.0)[..16]));
        }
        let with = |ext: &str| {
            let mut p = base.clone();
            p.push(ext);
            PathBuf::from(p)
        };
        Paths {
            socket: with(".sock"),
            lock: with(".lock"),
        }
    }
}

pub(crate) fn absolute(ledger: &Path, policy: Option<&Path>) -> Res<(PathBuf, Option<PathBuf>)> {
    let l = std::fs::canonicalize(ledger)?;
    let p = policy.map(std::fs::canonicalize).transpose()?;
    Ok((l, p))
}

/// The server key of the ledger at `ledger`, from its key file (warning, as opening the ledger
/// does, when the file is readable by others).
fn server_key(ledger: &Path) -> Res<ServerKey> {
    let keys = key_path(ledger);
    warn_if_readable(&keys);
    Ok(ServerKey::of(&KeyStore::load(&keys)?.log_signer()?))
}

/// Hands one event to the ledger's server and returns its verified answer. Any failure —
/// no server (one is started in [`Mode::Auto`]), a path too long for a socket, a connection
/// error, a timeout, a frame that is malformed or whose tag does not verify — is an `Err`,
/// and the caller handles the event itself: a server failure never allows anything.
pub fn ask(
    event: HookEvent,
    ledger: &Path,
    policy: Option<&Path>,
    state: Option<&StateDir>,
    input: &[u8],
    mode: Mode,
) -> Result<HookOutcome, String> {
    #[cfg(unix)]
    {
        ask_unix(event, ledger, policy, state, input, mode).map_err(|e| e.to_string())
    }
    #[cfg(not(unix))]
    {
        let _ = (event, ledger, policy, state, input, mode);
        Err("the hook server needs unix sockets".into())
    }
}

#[cfg(unix)]
fn ask_unix(
    event: HookEvent,
    ledger: &Path,
    policy: Option<&Path>,
    state: Option<&StateDir>,
    input: &[u8],
    mode: Mode,
) -> Res<HookOutcome> {
    use std::os::unix::net::UnixStream;
    let (ledger, policy) = absolute(ledger, policy)?;
    let paths = Paths::of(&ledger, policy.as_deref(), state);
    if paths.socket.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(format!("{} is too long for a socket path", paths.socket.display()).into());
    }
    let key = server_key(&ledger)?;
    let stream = match UnixStream::connect(&paths.socket) {
        Ok(s) => s,
        Err(e) => {
            use std::io::ErrorKind::{ConnectionRefused, NotFound};
            if mode == Mode::Auto && matches!(e.kind(), NotFound | ConnectionRefused) {
                start_server(&ledger, policy.as_deref(), state)?;
            }
            return Err(format!("{}: {e}", paths.socket.display()).into());
        }
    };
    let until = Instant::now() + ANSWER_WAIT;
    stream.set_write_timeout(Some(ANSWER_WAIT))?;
    let mut req = Request::new(event, input.to_vec());
    req.write(&key, &mut BufWriter::new(&stream))?;
    let mut r = BufReader::new(Deadline {
        stream: &stream,
        until,
    });
    Ok(req.read_answer(&key, &mut r)?)
}

/// A socket read with one deadline for the whole answer (a per-read timeout would let a
/// server that drips bytes hold the hook for ever).
#[cfg(unix)]
pub(crate) struct Deadline<'a> {
    /// The connection.
    pub(crate) stream: &'a std::os::unix::net::UnixStream,
    /// When the whole answer must have arrived.
    pub(crate) until: Instant,
}

#[cfg(unix)]
impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

/// Starts `memlineage hook serve` detached (own process group, no standard streams); the
/// server's lock makes every start but one exit at once.
#[cfg(unix)]
#[allow(clippy::zombie_processes)] // detached on purpose: it outlives this hook process
fn start_server(ledger: &Path, policy: Option<&Path>, state: Option<&StateDir>) -> Res<()> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("hook").arg("serve").arg(ledger);
    if let Some(p) = policy {
        cmd.arg("--policy").arg(p);
    }
    if let Some(s) = state {
        cmd.arg("--state").arg(std::path::absolute(&s.0)?);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    Ok(())
}

/// `memlineage hook serve LEDGER [--policy P]`: serves the event hooks of `ledger` until idle
/// for [`IDLE_EXIT`] or until its ledger file or socket disappears. Exits at once (success)
/// when another server of the same ledger and policy holds the lock.
pub fn serve(ledger: &Path, policy: Option<PathBuf>, state: Option<PathBuf>) -> Res<ExitCode> {
    let state = crate::open::state_for(ledger, state)?;
    #[cfg(unix)]
    {
        serve_unix(ledger, policy, state)
    }
    #[cfg(not(unix))]
    {
        let _ = (ledger, policy, state);
        Err("the hook server needs unix sockets".into())
    }
}

#[cfg(unix)]
fn serve_unix(ledger: &Path, policy: Option<PathBuf>, state: Option<StateDir>) -> Res<ExitCode> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    use std::os::unix::net::UnixListener;
    let (ledger, policy) = absolute(ledger, policy.as_deref())?;
    let paths = Paths::of(&ledger, policy.as_deref(), state.as_ref());
    if paths.socket.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(format!("{} is too long for a socket path", paths.socket.display()).into());
    }
    // Every path is absolute now; do not keep the starting hook's directory busy.
    std::env::set_current_dir("/")?;
    // Never through a symbolic link planted beside the ledger: the pid written below would
    // truncate the file it points to (`memlineage::store::durable::create_regular`).
    let mut lock = memlineage::store::durable::create_regular(&paths.lock)?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(ExitCode::SUCCESS),
        Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
    }
    lock.set_len(0)?;
    writeln!(lock, "{}", std::process::id())?;
    let exe = Executable::now();
    let mut state = State::new(ledger.clone(), policy, state);
    state.count_rows_beside();
    // Opened before the socket exists, so that no hook waits on a server still opening.
    if let Err(e) = state.front() {
        tracing::warn!(error = %e, "memlineage hook serve: ledger not opened yet");
    }
    // Bound in a private directory, restricted, then moved into place: the socket is never
    // reachable by another user, not even between bind and chmod.
    let _ = std::fs::remove_file(&paths.socket);
    let mut tmp = paths.socket.clone().into_os_string();
    tmp.push(".d");
    let tmp = PathBuf::from(tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::DirBuilder::new().mode(0o700).create(&tmp)?;
    let bound = tmp.join("s");
    let listener = UnixListener::bind(&bound)?;
    std::fs::set_permissions(&bound, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&bound, &paths.socket)?;
    std::fs::remove_dir(&tmp)?;
    let ino = std::fs::metadata(&paths.socket)?.ino();
    let last = Arc::new(Mutex::new(Instant::now()));
    {
        let (last, socket) = (Arc::clone(&last), paths.socket.clone());
        std::thread::spawn(move || watch(&last, &socket, ino, &ledger, &exe));
    }
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let mut at = last.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = state.serve_one(&conn) {
            tracing::debug!(error = %e, "memlineage hook serve: request refused");
        }
        *at = Instant::now();
    }
    Ok(ExitCode::SUCCESS)
}

/// The file the server was started from, as it was then: when it is replaced or changed (an
/// upgrade, `cargo install`, a rebuild), the server exits rather than go on answering with
/// the code it was started with while the hooks run the new one (an active session never
/// leaves it idle). The next event is decided by the hook itself and starts a server of the
/// new file.
#[cfg(unix)]
struct Executable {
    path: PathBuf,
    id: Option<(u64, u64, i64, i64, u64)>,
}

#[cfg(unix)]
impl Executable {
    fn now() -> Option<Self> {
        let path = std::env::current_exe().ok()?;
        let id = Self::id_of(&path);
        id.is_some().then_some(Executable { path, id })
    }

    /// Device, inode, modification time and size.
    fn id_of(path: &Path) -> Option<(u64, u64, i64, i64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some((m.dev(), m.ino(), m.mtime(), m.mtime_nsec(), m.len()))
    }

    fn changed(&self) -> bool {
        Self::id_of(&self.path) != self.id
    }
}

/// Exits the process (removing the socket if it is still this server's) once idle for
/// [`IDLE_EXIT`], when the socket or the ledger file is gone, or when the server's own
/// executable was replaced ([`Executable`]). Holds `last` while exiting, so no request is cut
/// off.
#[cfg(unix)]
fn watch(last: &Mutex<Instant>, socket: &Path, ino: u64, ledger: &Path, exe: &Option<Executable>) {
    use std::os::unix::fs::MetadataExt;
    loop {
        std::thread::sleep(WATCH_EVERY);
        let at = last.lock().unwrap_or_else(|e| e.into_inner());
        let ours = std::fs::symlink_metadata(socket).is_ok_and(|m| m.ino() == ino);
        let replaced = exe.as_ref().is_some_and(Executable::changed);
        if at.elapsed() >= IDLE_EXIT || !ours || !ledger.exists() || replaced {
            if ours {
                let _ = std::fs::remove_file(socket);
            }
            std::process::exit(0);
        }
    }
}

/// What the server holds between requests (shared with the separated server,
/// `hook_separate.rs`).
pub(crate) struct State {
    ledger: PathBuf,
    policy: Option<PathBuf>,
    /// The state directory (pin and session records), when the hooks keep one.
    state: Option<StateDir>,
    front: Option<Front<SqliteStore, SharedKeyFile>>,
    /// The ledger file's (device, inode) when `front` was opened.
    ledger_id: Option<(u64, u64)>,
    /// The policy file's identity when `front` was opened.
    policy_id: Option<FileId>,
    /// The key file's identity when `key` was derived, and the key.
    key: Option<(Option<FileId>, ServerKey)>,
    /// The separated guard's root, protected besides the ledger's files (`spec/hooks.md`
    /// §14.4).
    guard_root: Option<PathBuf>,
    /// Files the front was configured from, protected besides the ledger's files (the
    /// gateway's `--config`, `spec/mcp.md` §6.5).
    config_files: Vec<PathBuf>,
    /// Whether an opened ledger's rows are counted beside the server's work rather than
    /// before it ([`State::count_rows_beside`]).
    rows_beside: bool,
    /// A count beside the work refused the store: the next open counts before answering
    /// again, until a count passes.
    rows_refused: bool,
    /// The ledger's file sessions, the same at every event (`None` only while an event holds
    /// them, [`State::locked`]).
    sessions: Option<FileSessions>,
}

impl State {
    /// A server state for `ledger`, `policy` and `state`; nothing opened yet.
    pub(crate) fn new(ledger: PathBuf, policy: Option<PathBuf>, state: Option<StateDir>) -> Self {
        State {
            ledger,
            policy,
            state,
            front: None,
            ledger_id: None,
            policy_id: None,
            key: None,
            guard_root: None,
            config_files: Vec::new(),
            rows_beside: false,
            rows_refused: false,
            sessions: None,
        }
    }

    /// Counts the rows of every ledger this state opens on a thread of its own, beside the
    /// server's work, instead of before it answers (`spec/hooks.md` §11.3 item 3): the
    /// handle's writes are held until the count passes (`Ledger::hold_writes`), and an event
    /// other than PreToolUse waits for it at most [`ROWS_WAIT`] before it is decided.
    pub(crate) fn count_rows_beside(&mut self) {
        self.rows_beside = true;
    }

    /// Drops the open front, so that the next event opens the ledger again (its handle is
    /// ahead of the store after a group of writes that could not be committed).
    pub(crate) fn forget_front(&mut self) {
        self.front = None;
    }

    /// Protects the separated guard's root `root` too, in every call the front screens.
    pub(crate) fn protect_guard_root(&mut self, root: PathBuf) {
        self.guard_root = Some(root);
        self.front = None;
    }

    /// Protects the file `config` this front was configured from too, in every call the
    /// front screens (the gateway's configuration, `spec/mcp.md` §6.5).
    pub(crate) fn protect_config(&mut self, config: PathBuf) {
        self.config_files.push(config);
        self.front = None;
    }

    /// The server key, derived again whenever the key file changed.
    fn key(&mut self) -> Res<ServerKey> {
        let id = file_id(&key_path(&self.ledger));
        match &self.key {
            Some((have, k)) if *have == id && id.is_some() => Ok(k.clone()),
            _ => {
                let k = ServerKey::of(&KeyStore::load(&key_path(&self.ledger))?.log_signer()?);
                self.key = Some((id, k.clone()));
                Ok(k)
            }
        }
    }

    /// Reads one request, decides it as the hook process would, and answers it.
    fn serve_one(&mut self, conn: &std::os::unix::net::UnixStream) -> Res<()> {
        conn.set_read_timeout(Some(REQUEST_WAIT))?;
        conn.set_write_timeout(Some(REQUEST_WAIT))?;
        let key = self.key()?;
        let req = Request::read(&key, &mut BufReader::new(conn))?;
        // Events other than PreToolUse may write: not before the rows are counted. Unanswered,
        // the hook decides it in process, as while no server is up.
        if req.event != HookEvent::PreToolUse && !self.rows_counted(ROWS_WAIT) {
            return Err("the ledger's rows are still being counted: left to the hook".into());
        }
        let outcome = self.outcome(req.event, &req.input, |_| {});
        req.answer(&key, &outcome, &mut BufWriter::new(conn))?;
        Ok(())
    }

    /// Whether the rows-chain check of the front's ledger has ended (passed or refused: a
    /// refusal then fails the event closed in [`State::front`]), waiting at most `wait`;
    /// `true` also when the front cannot be had (deciding fails the event closed then).
    fn rows_counted(&mut self, wait: Duration) -> bool {
        match self.front() {
            Ok(f) => f.ledger_mut().await_writes(wait) != Err(RowsError::Pending),
            Err(_) => true,
        }
    }

    /// Decides one event as the hook process would, with `LEDGER.key.lock` held and the
    /// sessions loaded; `before` runs first on the sessions, under the same lock (the
    /// separated server marks sessions it has not seen from their start there).
    pub(crate) fn outcome(
        &mut self,
        event: HookEvent,
        input: &[u8],
        before: impl FnOnce(&mut FileSessions),
    ) -> HookOutcome {
        self.locked(event, input, SERVER_LOCK_WAIT, |state, sessions| {
            before(sessions);
            state.decide(sessions, event, input)
        })
    }

    /// [`crate::hook_answer::locked`] with this server's sessions, which live across events
    /// (what they keep in memory too); `f` is given the state and the sessions.
    pub(crate) fn locked(
        &mut self,
        event: HookEvent,
        input: &[u8],
        wait: Duration,
        f: impl FnOnce(&mut Self, &mut FileSessions) -> HookOutcome,
    ) -> HookOutcome {
        let ledger = self.ledger.clone();
        let mut sessions = self
            .sessions
            .take()
            .unwrap_or_else(|| crate::hook_answer::sessions_of(&ledger, self.state.as_ref()));
        let outcome =
            crate::hook_answer::locked(event, &ledger, &mut sessions, input, wait, |s| f(self, s));
        self.sessions = Some(sessions);
        outcome
    }

    /// Runs `f` on the sessions with `LEDGER.key.lock` held (a lock not had fails `event`
    /// closed, as [`State::outcome`] does).
    pub(crate) fn with_sessions(
        &mut self,
        event: HookEvent,
        f: impl FnOnce(&mut FileSessions) -> HookOutcome,
    ) -> HookOutcome {
        self.locked(event, b"", SERVER_LOCK_WAIT, |_, sessions| f(sessions))
    }

    fn decide(
        &mut self,
        sessions: &mut FileSessions,
        event: HookEvent,
        input: &[u8],
    ) -> HookOutcome {
        let state = self.state.clone();
        match self.front() {
            Ok(front) => crate::hook_answer::decide(front, sessions, state.as_ref(), event, input),
            Err(e) => failed(sessions, event, input, &e.to_string()),
        }
    }

    /// The front, caught up with the store: re-opened (seal and entries with effects checked
    /// again, `spec/lineage.md` §5.1) when the ledger file was replaced, the policy file changed, the store holds
    /// fewer entries than seen, or catching up fails; otherwise [`Ledger::refresh`]ed, which
    /// costs O(new entries).
    ///
    /// [`Ledger::refresh`]: memlineage::Ledger::refresh
    pub(crate) fn front(&mut self) -> Res<&mut Front<SqliteStore, SharedKeyFile>> {
        let ledger_id = file_id(&self.ledger).map(|(dev, ino, ..)| (dev, ino));
        let policy_id = self.policy.as_deref().and_then(file_id);
        let same = ledger_id.is_some()
            && ledger_id == self.ledger_id
            && (self.policy.is_none() || policy_id == self.policy_id);
        let caught_up = match self.front.as_mut() {
            Some(f) if same => {
                let l = f.ledger_mut();
                let shrunk = l.store().tree_size().map_or(true, |n| n < l.len());
                // A count beside the work that refused the store refuses every event, as a
                // count before answering does.
                match l.await_writes(Duration::ZERO) {
                    Ok(()) | Err(RowsError::Pending) => {}
                    Err(e) => {
                        self.front = None;
                        self.rows_refused = true;
                        return Err(e.into());
                    }
                }
                // The pin as it is now: hooks run in process (and the MCP server) advance it
                // after the handle opened, and a store cut below it is refused at this
                // refresh as on open (attack review 57).
                let pinned = match &self.state {
                    Some(st) => st.teach(l),
                    None => Ok(()),
                };
                pinned.is_ok() && !shrunk && l.refresh().is_ok()
            }
            _ => false,
        };
        if !caught_up {
            self.front = None;
            if ledger_id.is_none() {
                return Err(format!("no ledger at {}", self.ledger.display()).into());
            }
            // The hooks' default policy is the coding-agent policy (spec/hooks.md §10), in
            // process and here alike.
            let policy = match self.policy.clone() {
                Some(p) => load_policy(Some(p))?,
                None => memlineage::gate::Policy::coding(),
            };
            let (mut l, _) = open_pinned(&self.ledger, self.state.as_ref())?;
            // Once per (re)open of the long-lived server: the rows must chain. Counted beside
            // the work (O(n)), nothing written until they are; before answering again after a
            // count refused the store.
            if self.rows_beside && !self.rows_refused {
                let path = self.ledger.clone();
                l.hold_writes(RowsCheck::spawn(move || Ok(SqliteStore::open(&path)?)));
            } else {
                l.check_rows_chain()?;
                self.rows_refused = false;
            }
            let mut front = Front::new(l, policy, SharedKeyFile(key_path(&self.ledger)));
            let mut protected = crate::open::protected(
                &self.ledger,
                self.policy.as_deref(),
                self.state.as_ref().map(|s| s.0.as_path()),
            );
            if let Some(root) = &self.guard_root {
                protected =
                    protected.with_tree(root, memlineage::front::protect::Resource::GuardRoot);
            }
            for c in &self.config_files {
                protected =
                    protected.with_file(c, memlineage::front::protect::Resource::GatewayConfig);
            }
            front.set_protected(protected);
            self.front = Some(front);
            self.ledger_id = ledger_id;
            self.policy_id = policy_id;
        }
        self.front.as_mut().ok_or_else(|| "no ledger".into())
    }
}
