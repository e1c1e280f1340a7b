//! `memlineage hook install --separate` (as root, once) and the probe behind `memlineage hook
//! doctor --separated` (`spec/hooks.md` §14.4, §14.5): set up the guard user, its root and the
//! agent's settings; then, as the agent's user, try every way at the guard's files and server
//! and report each refusal.

use super::{merge, sh_quote, Agent};
use crate::hook_separate::{Layout, LAYOUT_FORMAT};
use crate::open::key_path;
use crate::Res;
use memlineage::front::hook::HookEvent;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod probe;

pub use probe::{as_agent, probe, run_probe};

/// The install's arguments for privilege separation (flattened into `hook install`).
#[derive(clap::Args)]
pub struct SeparateArgs {
    /// Privilege separation (spec/hooks.md §14), as root, once: a system user owns the key,
    /// the ledger and the session state; the agent's hooks hold no key and only talk to that
    /// user's hook server.
    #[arg(long)]
    pub separate: bool,
    /// With --separate: the user the agent runs as (name or uid; not root).
    #[arg(long, requires = "separate")]
    pub agent_user: Option<String>,
    /// With --separate: the guard's system user (default memlineage-NAME), created with
    /// `useradd --system` when missing.
    #[arg(long, requires = "separate")]
    pub guard_user: Option<String>,
    /// With --separate: the guard root (default /var/lib/memlineage/NAME).
    #[arg(long, requires = "separate")]
    pub guard_root: Option<PathBuf>,
    /// With --separate: the install's name (default: the ledger's file name; letters, digits,
    /// `-`).
    #[arg(long, requires = "separate")]
    pub name: Option<String>,
}

/// Why `install --separate` refuses to run as another user than root.
pub const NEEDS_ROOT: &str = "hook install --separate must run as root, once: it creates a system \
     user (useradd --system), a guard root owned by root and by that user, and moves the \
     signing key there (spec/hooks.md §14.4)";

/// What `install --separate` was given besides [`SeparateArgs`].
pub struct Given<'a> {
    /// Which agent's settings.
    pub agent: Agent,
    /// The ledger to move under the guard.
    pub ledger: &'a Path,
    /// The project directory whose settings are written.
    pub dir: &'a Path,
    /// The binary copied into the guard root.
    pub binary: &'a Path,
    /// The policy copied there (None: the bundled coding policy).
    pub policy: Option<&'a Path>,
}

/// A user account: name, uid, primary gid.
struct Account {
    name: String,
    uid: u32,
    gid: u32,
}

fn user(spec: &str) -> Res<Option<Account>> {
    use nix::unistd::{Uid, User};
    let u = match spec.parse::<u32>() {
        Ok(uid) => User::from_uid(Uid::from_raw(uid))?,
        Err(_) => User::from_name(spec)?,
    };
    Ok(u.map(|u| Account {
        name: u.name,
        uid: u.uid.as_raw(),
        gid: u.gid.as_raw(),
    }))
}

/// `memlineage hook install --separate`.
pub fn install(g: &Given<'_>, s: &SeparateArgs) -> Res<ExitCode> {
    if !nix::unistd::geteuid().is_root() {
        return Err(NEEDS_ROOT.into());
    }
    let spec = s
        .agent_user
        .as_deref()
        .ok_or("--separate needs --agent-user USER: the user the agent runs as")?;
    let agent = user(spec)?.ok_or_else(|| format!("no user {spec:?}"))?;
    if agent.uid == 0 {
        return Err("the agent must not run as root: root can read every key".into());
    }
    let name = match &s.name {
        Some(n) => n.clone(),
        None => default_name(g.ledger),
    };
    if name.is_empty()
        || name.len() > 24
        || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return Err(format!("install name {name:?}: 1 to 24 letters, digits or `-`").into());
    }
    let root = std::path::absolute(
        s.guard_root
            .clone()
            .unwrap_or_else(|| Path::new("/var/lib/memlineage").join(&name)),
    )?;
    if root.join("layout.json").exists() {
        return Err(format!("{} already holds a guard: remove it first", root.display()).into());
    }
    if let Some(parent) = root.parent() {
        std::fs::create_dir_all(parent)?;
        check_ancestors(parent)?;
    }
    let guard_name = s
        .guard_user
        .clone()
        .unwrap_or_else(|| format!("memlineage-{name}"));
    let guard = ensure_user(&guard_name, &root)?;
    if guard.uid == agent.uid || guard.uid == 0 {
        return Err(
            format!("the guard user {guard_name} must be neither root nor the agent").into(),
        );
    }
    let l = lay_out(g, &root, &name, &guard, &agent)?;
    write_settings(g, &l, &agent)?;
    report(g, &l);
    Ok(ExitCode::SUCCESS)
}

/// The ledger's file name reduced to letters, digits and `-` (at most 24).
fn default_name(ledger: &Path) -> String {
    let stem = ledger
        .file_stem()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let n: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(24)
        .collect();
    if n.is_empty() {
        "ledger".into()
    } else {
        n
    }
}

/// Every directory from `dir` up must be root's and writable by root only (or sticky, as
/// `/tmp`): otherwise its owner could move the guard root away and put another in its place.
fn check_ancestors(dir: &Path) -> Res<()> {
    for d in std::fs::canonicalize(dir)?.ancestors() {
        let m = std::fs::metadata(d)?;
        let sticky = m.mode() & 0o1000 != 0;
        if m.uid() != 0 || (m.mode() & 0o022 != 0 && !sticky) {
            return Err(format!(
                "{} (owner uid {}, mode {:o}) could be changed by another user than root: \
                 choose a --guard-root under root-owned directories",
                d.display(),
                m.uid(),
                m.mode() & 0o7777
            )
            .into());
        }
    }
    Ok(())
}

/// The guard user `name`, created as a system user (no login, home = the guard root) when it
/// does not exist.
fn ensure_user(name: &str, root: &Path) -> Res<Account> {
    if let Some(a) = user(name)? {
        return Ok(a);
    }
    let shell = ["/usr/sbin/nologin", "/sbin/nologin", "/bin/false"]
        .into_iter()
        .find(|s| Path::new(s).exists())
        .unwrap_or("/bin/false");
    let out = Command::new("useradd")
        .args([
            "--system",
            "--user-group",
            "--no-create-home",
            "--shell",
            shell,
        ])
        .arg("--home-dir")
        .arg(root)
        .arg(name)
        .output()
        .map_err(|e| format!("useradd: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "useradd --system {name}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    crate::io::say!("created system user {name}");
    user(name)?.ok_or_else(|| format!("useradd made no user {name}").into())
}

fn mkdir(path: &Path, mode: u32, owner: (u32, u32)) -> Res<()> {
    match std::fs::create_dir(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("{}: {e}", path.display()).into()),
    }
    std::os::unix::fs::chown(path, Some(owner.0), Some(owner.1))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

fn place(path: &Path, bytes: &[u8], mode: u32, owner: (u32, u32)) -> Res<()> {
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    std::io::Write::write_all(&mut f, bytes)?;
    f.sync_all()?;
    std::os::unix::fs::chown(path, Some(owner.0), Some(owner.1))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// Gives everything under `dir` to `owner`, directories 0700 and files 0600.
fn give(dir: &Path, owner: (u32, u32)) -> Res<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let m = std::fs::symlink_metadata(&p)?;
        std::os::unix::fs::lchown(&p, Some(owner.0), Some(owner.1))?;
        if m.is_dir() {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700))?;
            give(&p, owner)?;
        } else if m.is_file() {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

/// Makes the guard root and moves the ledger's key there (`spec/hooks.md` §14.4).
fn lay_out(
    g: &Given<'_>,
    root: &Path,
    name: &str,
    guard: &Account,
    agent: &Account,
) -> Res<Layout> {
    let (r, gd) = ((0, 0), (guard.uid, guard.gid));
    mkdir(root, 0o711, r)?;
    for (d, mode, owner) in [
        ("ledger", 0o700, gd),
        ("state", 0o700, gd),
        ("run", 0o755, gd),
        ("bin", 0o755, r),
    ] {
        mkdir(&root.join(d), mode, owner)?;
    }
    let file = g
        .ledger
        .file_name()
        .ok_or("the ledger path has no file name")?;
    let ledger = root.join("ledger").join(file);
    // The WAL folded into the file, so that one copy holds every entry.
    {
        let conn = rusqlite::Connection::open(g.ledger)?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    }
    place(&ledger, &std::fs::read(g.ledger)?, 0o600, gd)?;
    let old_key = key_path(g.ledger);
    place(&key_path(&ledger), &std::fs::read(&old_key)?, 0o600, gd)?;
    let policy = root.join("policy.toml");
    let text = match g.policy {
        Some(p) => std::fs::read(p)?,
        None => memlineage::gate::CODING_POLICY_TOML.as_bytes().to_vec(),
    };
    place(&policy, &text, 0o644, r)?;
    let binary = root.join("bin").join("memlineage");
    place(&binary, &std::fs::read(g.binary)?, 0o755, r)?;
    super::pin(&ledger, Some(&root.join("state")))?;
    mkdir(&root.join("state").join("sessions"), 0o700, gd)?;
    give(&root.join("ledger"), gd)?;
    give(&root.join("state"), gd)?;
    // The agent must not keep a copy of the key: it is moved, not copied.
    std::fs::remove_file(&old_key)?;
    let layout_path = root.join("layout.json");
    let start = format!(
        "runuser -u {} -- {} hook serve --separated {}",
        guard.name,
        sh_quote(&binary.display().to_string()),
        sh_quote(&layout_path.display().to_string())
    );
    let l = Layout {
        format: LAYOUT_FORMAT.into(),
        name: name.into(),
        root: root.to_path_buf(),
        guard_user: guard.name.clone(),
        guard_uid: guard.uid,
        guard_gid: guard.gid,
        agent_user: agent.name.clone(),
        agent_uid: agent.uid,
        agent_gid: agent.gid,
        key: key_path(&ledger),
        ledger,
        policy,
        state: root.join("state"),
        socket: root.join("run").join("hook.sock"),
        binary,
        start,
    };
    let text = serde_json::to_string_pretty(&l)? + "\n";
    place(&layout_path, text.as_bytes(), 0o644, r)?;
    Ok(l)
}

/// The command `agent` runs for `event` in separated mode (with the fail-closed wrapping
/// of `spec/hooks.md` §9.2); PreToolUse names the agent, so that an ask is rendered for it
/// (§15.2).
pub fn guarded_command(l: &Layout, event: HookEvent, agent: Agent) -> String {
    let named = if event == HookEvent::PreToolUse {
        format!(" --agent {}", agent.name())
    } else {
        String::new()
    };
    format!(
        "{} hook {}{named} --guarded {} --guard-user {} || {{ s=$?; [ \"$s\" -eq 2 ] || echo \
         \"memlineage: hook failed (exit status $s); failing closed\" >&2; exit 2; }}",
        sh_quote(&l.binary.display().to_string()),
        event.subcommand(),
        sh_quote(&l.socket.display().to_string()),
        l.guard_uid
    )
}

fn write_settings(g: &Given<'_>, l: &Layout, agent: &Account) -> Res<()> {
    let path = g.agent.settings(g.dir);
    let existing = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", path.display()).into()),
    };
    let command = |event| guarded_command(l, event, g.agent);
    let text = merge(g.agent, existing.as_deref(), &command).map_err(|e| {
        format!(
            "{}: {e}; not a hook settings file memlineage can merge into",
            path.display()
        )
    })?;
    if let Some(parent) = path.parent() {
        if !parent.exists() {
            std::fs::create_dir_all(parent)?;
            std::os::unix::fs::chown(parent, Some(agent.uid), Some(agent.gid))?;
        }
    }
    memlineage::store::durable::write_atomic(&path, text.as_bytes())?;
    if existing.is_none() {
        std::os::unix::fs::chown(&path, Some(agent.uid), Some(agent.gid))?;
    }
    crate::io::say!("wrote {}", path.display());
    Ok(())
}

fn report(g: &Given<'_>, l: &Layout) {
    let root = l.root.display();
    crate::io::say!(
        "privilege separation needs: root once (this run), the system user {} (uid {}) that \
         owns the key, the ledger and the state and runs the hook server, and the modes below; \
         the agent runs as {} (uid {}), never as root",
        l.guard_user,
        l.guard_uid,
        l.agent_user,
        l.agent_uid
    );
    crate::io::say!(
        "guard root {root} (root, 0711): ledger/ (0700) with the ledger and its key (0600), \
         state/ (0700, pin and sessions), all owned by {}; run/ (0755, {}) for the socket \
         (0666: the server checks each peer's uid with SO_PEERCRED, the hooks check that the \
         socket and the process on it are {}); policy.toml, bin/memlineage and layout.json \
         owned by root, not writable by the agent",
        l.guard_user,
        l.guard_user,
        l.guard_user
    );
    crate::io::say!(
        "moved the signing key {} there; the ledger at {} is no longer used by the hooks",
        key_path(g.ledger).display(),
        g.ledger.display()
    );
    crate::io::say!(
        "hooks: {} as uid {} ({}) hold no key and only ask the server on {}",
        g.agent.settings(g.dir).display(),
        l.agent_uid,
        l.agent_user,
        l.socket.display()
    );
    crate::io::say!(
        "start the server as {} now (as root):\n  {}",
        l.guard_user,
        l.start
    );
    crate::io::say!(
        "or install it as a systemd unit, /etc/systemd/system/memlineage-{}.service:\n{}",
        l.name,
        unit(l)
    );
    crate::io::say!(
        "then check (as root): memlineage hook doctor --agent {} --dir {} --separated {}",
        g.agent.name(),
        sh_quote(&g.dir.display().to_string()),
        sh_quote(&l.root.join("layout.json").display().to_string())
    );
}

/// The systemd unit that runs the separated server.
fn unit(l: &Layout) -> String {
    let root = l.root.display();
    format!(
        "[Unit]\nDescription=memlineage separated hook server ({name})\n\n[Service]\n\
         User={user}\nExecStart={bin} hook serve --separated {root}/layout.json\n\
         Restart=always\nRestartSec=1\nNoNewPrivileges=yes\nProtectSystem=strict\n\
         ReadWritePaths={root}/ledger {root}/state {root}/run\nPrivateTmp=yes\n\n\
         [Install]\nWantedBy=multi-user.target\n",
        name = l.name,
        user = l.guard_user,
        bin = l.binary.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let root = PathBuf::from("/var/lib/memlineage/it's");
        Layout {
            format: LAYOUT_FORMAT.into(),
            name: "x".into(),
            root: root.clone(),
            guard_user: "memlineage-x".into(),
            guard_uid: 990,
            guard_gid: 990,
            agent_user: "dev".into(),
            agent_uid: 1000,
            agent_gid: 1000,
            ledger: root.join("ledger/a.ledger"),
            key: root.join("ledger/a.ledger.key"),
            policy: root.join("policy.toml"),
            state: root.join("state"),
            socket: root.join("run/hook.sock"),
            binary: root.join("bin/memlineage"),
            start: String::new(),
        }
    }

    #[test]
    fn the_guarded_command_holds_no_ledger_and_fails_closed() {
        let c = guarded_command(&layout(), HookEvent::PreToolUse, Agent::ClaudeCode);
        assert!(
            c.starts_with(concat!(
                r"'/var/lib/memlineage/it'\''s/bin/memlineage' hook pre-tool-use --agent claude-code --guarded ",
                r"'/var/lib/memlineage/it'\''s/run/hook.sock' --guard-user 990 || {"
            )),
            "{c}"
        );
        assert!(c.ends_with("exit 2; }"), "{c}");
        assert!(!c.contains("ledger"), "{c}");
    }

    #[test]
    fn default_names_are_plain() {
        assert_eq!(
            default_name(Path::new("/a/Agent Ledger.db")),
            "agent-ledger"
        );
        assert_eq!(default_name(Path::new("/")), "ledger");
        assert_eq!(default_name(Path::new("/a/ééé")), "---");
    }
}
