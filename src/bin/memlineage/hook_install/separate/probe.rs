//! The probe behind `memlineage hook doctor --separated` (`spec/hooks.md` §14.5): as the agent's
//! user, try every way at the guard's files and server and report each refusal.

use crate::hook_separate::{peer_uid, Layout};
use crate::Res;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, ExitCode};

/// What one probe attempt did.
enum Tried {
    /// The operating system refused it (the wanted outcome).
    Refused(std::io::Error),
    /// It succeeded: the separation does not hold.
    Allowed,
    /// It could not be tried (for example no server to signal).
    Untried(String),
}

type Attempt<'a> = (String, Box<dyn FnOnce() -> Tried + 'a>);

fn io(r: std::io::Result<()>) -> Tried {
    match r {
        Ok(()) => Tried::Allowed,
        Err(e) => Tried::Refused(e),
    }
}

/// `memlineage hook probe LAYOUT`, as the agent's user: one line per attempt,
/// `refused\tWHAT\tERROR`, `ALLOWED\tWHAT` or `UNTRIED\tWHAT\tWHY`; exits 1 unless every
/// attempt was refused.
pub fn probe(layout: &Path) -> Res<ExitCode> {
    let l = Layout::load_trusted(layout)?;
    let me = nix::unistd::geteuid().as_raw();
    if me == 0 || me == l.guard_uid {
        return Err(
            "hook probe runs as the agent's user (`hook doctor --separated` runs it so)".into(),
        );
    }
    let mut all = true;
    for (what, attempt) in attempts(&l) {
        match attempt() {
            Tried::Refused(e) => println!("refused\t{what}\t{e}"),
            Tried::Allowed => {
                all = false;
                println!("ALLOWED\t{what}");
            }
            Tried::Untried(why) => {
                all = false;
                println!("UNTRIED\t{what}\t{why}");
            }
        }
    }
    Ok(if all {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn write_to(p: &Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new().write(true).open(p).map(drop)
}

fn create_in(dir: &Path) -> std::io::Result<()> {
    let p = dir.join(format!(".memlineage-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)?;
    let _ = std::fs::remove_file(&p);
    Ok(())
}

fn attempts(l: &Layout) -> Vec<Attempt<'_>> {
    let ledger_dir: &Path = l.ledger.parent().unwrap_or(&l.root);
    let run: &Path = l.socket.parent().unwrap_or(&l.root);
    let d = |p: &Path| p.display().to_string();
    let mut v: Vec<Attempt<'_>> = vec![
        (
            format!("read the signing key {}", d(&l.key)),
            Box::new(move || {
                io(std::fs::File::open(&l.key).and_then(|mut f| f.read(&mut [0u8; 1]).map(drop)))
            }),
        ),
        (
            format!("overwrite the signing key {}", d(&l.key)),
            Box::new(move || io(write_to(&l.key))),
        ),
        (
            format!("list the ledger's directory {}", d(ledger_dir)),
            Box::new(move || io(std::fs::read_dir(ledger_dir).map(drop))),
        ),
        (
            format!("open the ledger {} for writing", d(&l.ledger)),
            Box::new(move || io(write_to(&l.ledger))),
        ),
        (
            "open the ledger read-write with SQLite and take its write lock".to_string(),
            Box::new(move || sqlite_write(&l.ledger)),
        ),
        (
            "create a file beside the ledger (a checkpoint, a -wal)".to_string(),
            Box::new(move || io(create_in(ledger_dir))),
        ),
        (
            "make the ledger's directory writable (chmod 0777)".to_string(),
            Box::new(move || {
                io(std::fs::set_permissions(
                    ledger_dir,
                    std::fs::Permissions::from_mode(0o777),
                ))
            }),
        ),
        (
            format!("remove the hook socket {}", d(&l.socket)),
            Box::new(move || io(std::fs::remove_file(&l.socket))),
        ),
        (
            format!("replace the hook socket (bind another in {})", d(run)),
            Box::new(move || {
                let p = run.join(format!(".memlineage-probe-{}.sock", std::process::id()));
                io(std::os::unix::net::UnixListener::bind(&p).map(|_| {
                    let _ = std::fs::remove_file(&p);
                }))
            }),
        ),
        (
            format!("move the socket's directory {} away", d(run)),
            Box::new(move || io(std::fs::rename(run, l.root.join("run.probe")))),
        ),
        (
            format!(
                "edit the session state (add a record to {}/sessions)",
                d(&l.state)
            ),
            Box::new(move || io(create_in(&l.state.join("sessions")))),
        ),
        (
            format!("overwrite the pin {}/pin.json", d(&l.state)),
            Box::new(move || io(write_to(&l.state.join("pin.json")))),
        ),
        (
            format!("write the policy {}", d(&l.policy)),
            Box::new(move || io(write_to(&l.policy))),
        ),
        (
            format!("overwrite the binary {}", d(&l.binary)),
            Box::new(move || io(write_to(&l.binary))),
        ),
        (
            "put another binary beside it".to_string(),
            Box::new(move || io(create_in(l.binary.parent().unwrap_or(&l.root)))),
        ),
        (
            format!("rewrite the layout {}/layout.json", d(&l.root)),
            Box::new(move || io(write_to(&l.root.join("layout.json")))),
        ),
    ];
    v.push((
        "signal the hook server (kill -0 its pid, from SO_PEERCRED)".into(),
        Box::new(move || server_pid(l).map_or_else(Tried::Untried, signal)),
    ));
    v.push((
        "read the hook server's memory (/proc/PID/mem)".into(),
        Box::new(move || {
            server_pid(l).map_or_else(Tried::Untried, |pid| {
                io(std::fs::File::open(format!("/proc/{pid}/mem")).map(drop))
            })
        }),
    ));
    v.push((
        "read the hook server's environment (/proc/PID/environ)".into(),
        Box::new(move || {
            server_pid(l).map_or_else(Tried::Untried, |pid| {
                io(std::fs::File::open(format!("/proc/{pid}/environ"))
                    .and_then(|mut f| f.read(&mut [0u8; 1]).map(drop)))
            })
        }),
    ));
    v
}

fn sqlite_write(ledger: &Path) -> Tried {
    use rusqlite::OpenFlags;
    let conn =
        match rusqlite::Connection::open_with_flags(ledger, OpenFlags::SQLITE_OPEN_READ_WRITE) {
            Ok(c) => c,
            Err(e) => return Tried::Refused(std::io::Error::other(e.to_string())),
        };
    match conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;") {
        Ok(()) => Tried::Allowed,
        Err(e) => Tried::Refused(std::io::Error::other(e.to_string())),
    }
}

/// The server's pid, as the kernel reports the socket's peer.
fn server_pid(l: &Layout) -> Result<i32, String> {
    let s = std::os::unix::net::UnixStream::connect(&l.socket)
        .map_err(|e| format!("no server on {}: {e}", l.socket.display()))?;
    let (uid, pid) = peer_uid(&s).map_err(|e| e.to_string())?;
    if uid != l.guard_uid {
        return Err(format!(
            "the socket's server runs as uid {uid}, not the guard's"
        ));
    }
    Ok(pid)
}

fn signal(pid: i32) -> Tried {
    // Signal 0: the kernel checks the permission to signal without delivering anything.
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => Tried::Allowed,
        Err(e) => Tried::Refused(std::io::Error::from(e)),
    }
}

/// Runs the probe as the agent's user (`setpriv`, with the user's groups) and prints its
/// lines; `Ok(false)` when any attempt was not refused.
pub fn run_probe(layout_path: &Path) -> Res<bool> {
    let l = Layout::load_trusted(layout_path)?;
    for (what, p) in [
        ("key", &l.key),
        ("ledger", &l.ledger),
        ("socket", &l.socket),
        ("session state", &l.state.join("sessions")),
        ("policy", &l.policy),
        ("binary", &l.binary),
    ] {
        if std::fs::symlink_metadata(p).is_err() {
            crate::io::say!("FAIL the guard's {what} {} does not exist", p.display());
            return Ok(false);
        }
    }
    let out = as_agent(&l, &l.binary)
        .arg("hook")
        .arg("probe")
        .arg(layout_path)
        .output()
        .map_err(|e| format!("setpriv: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut refused, mut bad) = (0, 0);
    for line in text.lines() {
        let mut f = line.splitn(3, '\t');
        match (f.next(), f.next(), f.next()) {
            (Some("refused"), Some(what), why) => {
                refused += 1;
                crate::io::say!(
                    "ok   as {}: {what}: refused ({})",
                    l.agent_user,
                    why.unwrap_or("")
                );
            }
            (Some(_), Some(what), why) => {
                bad += 1;
                crate::io::say!(
                    "FAIL as {}: {what}: NOT refused{}",
                    l.agent_user,
                    why.map(|w| format!(" ({w})")).unwrap_or_default()
                );
            }
            _ => {}
        }
    }
    let ok = out.status.success() && bad == 0 && refused >= 12;
    if !ok {
        crate::io::say!(
            "FAIL the probe as {} refused {refused} attempt(s), {bad} not ({}){}",
            l.agent_user,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(ok)
}

/// A command that runs `program` as the layout's agent user, with that user's groups.
pub fn as_agent(l: &Layout, program: &Path) -> Command {
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={}", l.agent_uid))
        .arg(format!("--regid={}", l.agent_gid))
        .arg("--init-groups")
        .arg("--")
        .arg(program);
    c
}
