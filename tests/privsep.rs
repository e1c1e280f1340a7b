//! Privilege separation (issue 30, `spec/hooks.md` §14) through the real binary and real users:
//! `hook install --separate` as root, the separated server started as the guard user, and the
//! installed hooks run as the agent's user through `sh -c`, as Claude Code runs them. As the
//! agent, reading the key, writing the ledger, replacing the socket and editing the session
//! state all fail; the injected payment of `tests/hooks/claude-injected.jsonl` is refused
//! through the guarded hook, and still refused (with every other call) once the server is
//! killed; `hook doctor --separated` reports every refusal.
//!
//! Needs root (useradd, setpriv). Without root the test is skipped with a note, unless
//! `MEMLINEAGE_REQUIRE_ROOT_TESTS=1` (set by `.ci/run` when it runs as root), where not being
//! root is a failure.

use serde_json::Value;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "common/cli_support.rs"]
mod cli_support;
use cli_support::{ok, run_command, BIN};

/// Whether this process is root; panics when it is not and root tests are required.
fn root_or_skip(test: &str) -> bool {
    let uid = std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid());
    if uid == 0 {
        return true;
    }
    assert!(
        std::env::var("MEMLINEAGE_REQUIRE_ROOT_TESTS").as_deref() != Ok("1"),
        "{test}: MEMLINEAGE_REQUIRE_ROOT_TESTS=1 but not running as root (uid {uid})"
    );
    eprintln!("note: {test} skipped: it needs root (useradd, setpriv); run it as root");
    false
}

/// Users made for the test, deleted (with their groups) when dropped.
struct Users(Vec<String>);

impl Drop for Users {
    fn drop(&mut self) {
        for u in &self.0 {
            let _ = Command::new("userdel").arg(u).output();
            let _ = Command::new("groupdel").arg(u).output();
        }
    }
}

/// A server process, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Fixture {
    // Dropped last: users after the server, the directory after both.
    tmp: tempfile::TempDir,
    project: PathBuf,
    layout: Value,
    settings: Value,
    agent: (u32, u32),
}

impl Fixture {
    fn path(&self, key: &str) -> PathBuf {
        PathBuf::from(self.layout[key].as_str().unwrap())
    }

    fn uid(&self, key: &str) -> u32 {
        self.layout[key].as_u64().unwrap() as u32
    }

    /// The installed command for `event`.
    fn command(&self, event: &str) -> String {
        self.settings["hooks"][event][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Starts the separated server as the guard user (setpriv execs it: the child is the
    /// server) and waits for its socket.
    fn start_server(&self) -> Server {
        let socket = self.path("socket");
        let _ = std::fs::remove_file(&socket);
        let child = Command::new("setpriv")
            .arg(format!("--reuid={}", self.uid("guard_uid")))
            .arg(format!("--regid={}", self.uid("guard_gid")))
            .arg("--init-groups")
            .arg("--")
            .arg(self.path("binary"))
            .args(["hook", "serve", "--separated"])
            .arg(self.path("root").join("layout.json"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while UnixStream::connect(&socket).is_err() {
            assert!(start.elapsed() < Duration::from_secs(30), "server not up");
            std::thread::sleep(Duration::from_millis(20));
        }
        Server(child)
    }
}

/// `sh -c script` as `(uid, gid)` with that user's groups, in `dir`, fed `stdin`.
fn as_user(who: (u32, u32), dir: &Path, script: &str, stdin: &[u8]) -> Output {
    run_command(
        Command::new("setpriv")
            .arg(format!("--reuid={}", who.0))
            .arg(format!("--regid={}", who.1))
            .arg("--init-groups")
            .args(["--", "sh", "-c", script])
            .current_dir(dir),
        Some(stdin),
    )
}

fn useradd(name: &str) -> (u32, u32) {
    let out = Command::new("useradd")
        .args(["--system", "--user-group", "--no-create-home", name])
        .output()
        .unwrap();
    assert!(out.status.success(), "useradd {name}: {out:?}");
    let id = |flag: &str| -> u32 {
        let o = Command::new("id").args([flag, name]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    (id("-u"), id("-g"))
}

/// The events of `tests/hooks/claude-injected.jsonl`: (event name, bytes, wanted exit).
fn injected() -> Vec<(String, Vec<u8>, i32)> {
    let text = std::fs::read_to_string("tests/hooks/claude-injected.jsonl").unwrap();
    text.lines()
        .map(|line| {
            let c: Value = serde_json::from_str(line).unwrap();
            let e = &c["event"];
            (
                e["hook_event_name"].as_str().unwrap().to_string(),
                serde_json::to_vec(e).unwrap(),
                c["want_exit"].as_i64().unwrap() as i32,
            )
        })
        .collect()
}

/// An agent user, a project it owns, a ledger made by root, and `hook install --separate`.
fn install(users: &mut Users, tag: &str) -> Fixture {
    let id = std::process::id() % 100_000;
    let (agent_name, guard_name) = (format!("mlt{id}{tag}a"), format!("mlt{id}{tag}g"));
    let agent = useradd(&agent_name);
    users.0.push(agent_name.clone());
    users.0.push(guard_name.clone());
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o711)).unwrap();
    let project = root.join("proj");
    std::fs::create_dir(&project).unwrap();
    std::os::unix::fs::chown(&project, Some(agent.0), Some(agent.1)).unwrap();
    let ledger = root.join("agent.ledger");
    let guard_root = root.join("guard");
    ok(&run_command(
        Command::new(BIN)
            .arg("init")
            .arg(&ledger)
            .current_dir(&root),
        None,
    ));
    let out = ok(&run_command(
        Command::new(BIN)
            .args(["hook", "install", "--agent", "claude-code", "--separate"])
            .arg("--ledger")
            .arg(&ledger)
            .arg("--dir")
            .arg(&project)
            .args(["--agent-user", &agent_name, "--guard-user", &guard_name])
            .arg("--guard-root")
            .arg(&guard_root)
            .args(["--name", &format!("t{id}{tag}")])
            .current_dir(&root),
        None,
    ));
    for want in [
        "created system user",
        "runuser -u",
        "[Service]",
        "moved the signing key",
    ] {
        assert!(out.contains(want), "install output lacks {want:?}:\n{out}");
    }
    assert!(
        !root.join("agent.ledger.key").exists(),
        "the agent's copy of the key is gone"
    );
    let read = |p: PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    Fixture {
        layout: read(guard_root.join("layout.json")),
        settings: read(project.join(".claude/settings.json")),
        tmp,
        project,
        agent,
    }
}

fn mode_owner(p: &Path) -> (u32, u32) {
    let m = std::fs::symlink_metadata(p).unwrap();
    (m.mode() & 0o7777, m.uid())
}

#[test]
fn separated_install_keeps_the_key_from_the_agent_and_fails_closed() {
    if !root_or_skip("separated_install_keeps_the_key_from_the_agent_and_fails_closed") {
        return;
    }
    let mut users = Users(Vec::new());
    let f = install(&mut users, "s");
    let guard = f.uid("guard_uid");
    let (key, ledger, socket) = (f.path("key"), f.path("ledger"), f.path("socket"));
    let (state, root) = (f.path("state"), f.path("root"));
    assert_eq!(mode_owner(&root), (0o711, 0));
    assert_eq!(mode_owner(ledger.parent().unwrap()), (0o700, guard));
    assert_eq!(mode_owner(&key), (0o600, guard));
    assert_eq!(mode_owner(&ledger), (0o600, guard));
    assert_eq!(mode_owner(&state), (0o700, guard));
    assert_eq!(mode_owner(&f.path("policy")), (0o644, 0));
    assert_eq!(mode_owner(&f.path("binary")), (0o755, 0));
    assert!(f.command("PreToolUse").contains("--guarded"));
    assert!(!f.command("PreToolUse").contains(ledger.to_str().unwrap()));

    let mut server = f.start_server();
    assert_eq!(mode_owner(&socket), (0o666, guard));
    let key_bytes = std::fs::read(&key).unwrap();
    let ledger_len = std::fs::metadata(&ledger).unwrap().len();

    // As the agent: every way at the key, the ledger, the socket and the sessions fails.
    let server_pid = server.0.id();
    let sessions = state.join("sessions");
    let q = |p: &Path| format!("'{}'", p.display());
    for attack in [
        format!("cat {}", q(&key)),
        format!("cp {} /tmp/stolen-$$", q(&key)),
        format!("ls {}", q(ledger.parent().unwrap())),
        format!("printf x >> {}", q(&ledger)),
        format!("printf x > {}", q(&ledger)),
        format!("{} verify {}", q(&f.path("binary")), q(&ledger)),
        format!("rm {}", q(&socket)),
        format!("mv {} /tmp/moved-$$", q(&socket)),
        format!("ln -sf /tmp/evil {}", q(&socket)),
        format!("mv {} {}/run2", q(socket.parent().unwrap()), q(&root)),
        format!("echo '{{}}' > {}/x.json", q(&sessions)),
        format!("ls {}", q(&sessions)),
        format!("printf '{{}}' > {}/pin.json", q(&state)),
        format!("printf x >> {}", q(&f.path("policy"))),
        format!("cp /bin/true {}", q(&f.path("binary"))),
        format!("kill -9 {server_pid}"),
    ] {
        let out = as_user(f.agent, &f.project, &attack, b"");
        assert_ne!(
            out.status.code(),
            Some(0),
            "as the agent, {attack:?} succeeded"
        );
    }
    assert_eq!(std::fs::read(&key).unwrap(), key_bytes);
    assert_eq!(std::fs::metadata(&ledger).unwrap().len(), ledger_len);
    assert!(
        server.0.try_wait().unwrap().is_none(),
        "the server is alive"
    );

    // The injected payment is refused through the guarded hooks; the rest as in process.
    let cases = injected();
    assert_eq!(
        cases.iter().map(|c| c.2).collect::<Vec<_>>(),
        [0, 0, 0, 2, 2, 0]
    );
    for (i, (event, input, want)) in cases.iter().enumerate() {
        let out = as_user(f.agent, &f.project, &f.command(event), input);
        assert_eq!(out.status.code(), Some(*want), "case {i}: {out:?}");
    }
    let pay = &cases[3];
    let out = as_user(f.agent, &f.project, &f.command(&pay.0), &pay.1);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("labelled EXTERNAL"),
        "{out:?}"
    );

    // The doctor, as root, proves every refusal and the synthetic events as the agent.
    let out = run_command(
        Command::new(BIN)
            .args(["hook", "doctor", "--agent", "claude-code"])
            .arg("--dir")
            .arg(&f.project)
            .arg("--separated")
            .arg(root.join("layout.json")),
        None,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{out:?}");
    let refused = text.lines().filter(|l| l.contains(": refused (")).count();
    assert!(refused >= 12, "{refused} refusals:\n{text}");
    assert!(!text.contains("FAIL"), "{text}");

    // The server killed: the injected call and a benign one are refused, with a reason that
    // says how to start the server; tool output cannot be recorded either.
    server.0.kill().unwrap();
    server.0.wait().unwrap();
    for (i, (event, input, _)) in cases.iter().enumerate().skip(1) {
        let out = as_user(f.agent, &f.project, &f.command(event), input);
        assert_eq!(
            out.status.code(),
            Some(2),
            "case {i} without a server: {out:?}"
        );
    }
    let bash = &cases[5];
    let out = as_user(f.agent, &f.project, &f.command(&bash.0), &bash.1);
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(
        why.contains("failing closed") && why.contains("Start the hook server"),
        "{why}"
    );
    assert!(why.contains("runuser -u"), "{why}");

    // Restarted, the server refuses the sensitive calls of the session it did not see from
    // its start (its output may have gone unrecorded); a new session is served normally.
    let _server = f.start_server();
    let out = as_user(f.agent, &f.project, &f.command(&bash.0), &bash.1);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not be recorded"));
    for (i, (event, input, want)) in cases.iter().enumerate() {
        let input = String::from_utf8_lossy(input).replace("9a7e33f2-claude-injected", "fresh");
        let out = as_user(f.agent, &f.project, &f.command(event), input.as_bytes());
        assert_eq!(out.status.code(), Some(*want), "fresh case {i}: {out:?}");
    }
    // A session whose first event is not its SessionStart is refused too (spec/hooks.md
    // §3.1).
    let input = String::from_utf8_lossy(&bash.1).replace("9a7e33f2-claude-injected", "midway");
    let out = as_user(f.agent, &f.project, &f.command(&bash.0), input.as_bytes());
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn only_the_agent_is_served_and_only_the_guard_is_believed() {
    if !root_or_skip("only_the_agent_is_served_and_only_the_guard_is_believed") {
        return;
    }
    let mut users = Users(Vec::new());
    let f = install(&mut users, "p");
    let _server = f.start_server();
    let cases = injected();
    let bash = &cases[5];
    let command = f.command(&bash.0);
    let out = as_user(f.agent, &f.project, &command, &bash.1);
    // A first PreToolUse is refused (its session was not seen from its start): exit 2,
    // answered.
    assert!(String::from_utf8_lossy(&out.stderr).contains("was not seen from its start"));

    // Another user reaches the socket (0666) but is not served: no answer, exit 2.
    let other_name = format!("mlt{}po", std::process::id() % 100_000);
    let other = useradd(&other_name);
    users.0.push(other_name);
    let out = as_user(other, f.tmp.path(), &command, &bash.1);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("failing closed"));

    // A socket that is not the guard's is never asked; one owned by the guard but bound by
    // another process (here root) is never believed.
    let fake_dir = f.tmp.path().join("fake");
    std::fs::create_dir(&fake_dir).unwrap();
    std::fs::set_permissions(&fake_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let fake = fake_dir.join("hook.sock");
    let _listener = UnixListener::bind(&fake).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o666)).unwrap();
    let real = f.path("socket").display().to_string();
    let pointed = command.replace(&real, &fake.display().to_string());
    assert_ne!(pointed, command);
    let out = as_user(f.agent, &f.project, &pointed, &bash.1);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is owned by uid 0, not by the guard"),
        "{out:?}"
    );
    let guard = f.uid("guard_uid");
    std::os::unix::fs::chown(&fake, Some(guard), None).unwrap();
    let out = as_user(f.agent, &f.project, &pointed, &bash.1);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("runs as uid 0, not the guard user's"),
        "{out:?}"
    );
    // The real server still serves the agent.
    let fresh = String::from_utf8_lossy(&cases[0].1).replace("9a7e33f2-claude-injected", "p2");
    let out = as_user(
        f.agent,
        &f.project,
        &f.command(&cases[0].0),
        fresh.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let b2 = String::from_utf8_lossy(&bash.1).replace("9a7e33f2-claude-injected", "p2");
    let out = as_user(f.agent, &f.project, &command, b2.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // A call that names the guard's socket (to speak the protocol itself) is screened out.
    let mut talk: Value = serde_json::from_str(&b2).unwrap();
    talk["tool_input"]["command"] = Value::String(format!(
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{real}')\""
    ));
    let out = as_user(f.agent, &f.project, &command, talk.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the separated guard's directory"),
        "{out:?}"
    );
}

#[test]
fn install_separate_needs_root() {
    if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        // As root the refusal is checked by dropping to nobody.
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let out = run_command(
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(BIN)
                .args(["hook", "install", "--agent", "claude-code", "--separate"])
                .args(["--ledger", "/nonexistent/l.db", "--agent-user", "nobody"])
                .current_dir(dir.path()),
            None,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(err.contains("must run as root"), "{err}");
    } else {
        eprintln!("note: install_separate_needs_root checks only as root");
    }
}
