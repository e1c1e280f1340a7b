//! The guard's own resources and the tool calls that touch them (`spec/hooks.md` §13).
//!
//! An injected agent does not need the store: it runs as the same user as the hooks, so it
//! can empty `.claude/settings.json`, read the signing key, edit the ledger or kill the hook
//! server, with arguments it composed itself (which value provenance allows). [`Protected`]
//! knows those resources — the ledger and every file beside it that shares its name (key,
//! locks, sessions, sockets, checkpoint, SQLite's `-wal`/`-shm`/`-journal`), the state
//! directory, the policy file, the memlineage binary, the agents' settings (`.claude/`,
//! `.codex/`, `.mcp.json`, `~/.claude.json`) — and [`Protected::touch`] finds a tool call
//! that reads, writes, moves, deletes or runs against any of them, or kills the server. Such a
//! call is refused in every session, whatever its lineage ([`crate::front::Front::screen`]).
//!
//! Shell analysis can never be complete (a command can build a path from a file's contents),
//! so this is one layer; privilege separation (§14) is the one that holds when it misses.
//! Within the layer every doubt refuses: an expansion whose value is unknown matches any
//! characters, a program that cannot be named is refused, a `kill` of a process that cannot
//! be named is refused.

pub mod pattern;
pub mod shell;
pub mod simple;

mod analysis;
pub(crate) mod invocation;
mod commands;
mod connection;
mod fed;
pub(crate) mod handed;
pub(crate) mod percent;
mod programs;
mod staged;
pub(crate) mod runners;
mod terminal;
pub(crate) mod working_dirs;

pub(crate) use programs::{SHELLS, WRAPPERS};

use analysis::Ctx;
use pattern::{normalise, resolved};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// How deep commands nested in commands (`$(…)`, `sh -c`, `eval`) are analysed; deeper is
/// refused.
pub const MAX_NESTING: usize = 8;

/// Longest string argument analysed as a path.
const MAX_PATH_CHARS: usize = 4096;

/// A resource of the guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resource {
    /// The ledger file.
    Ledger,
    /// A file beside the ledger that shares its name (locks, checkpoint, SQLite side files).
    LedgerFile,
    /// The key file `LEDGER.key`.
    Key,
    /// The session records `LEDGER.sessions/`.
    Sessions,
    /// The hook server's socket or lock.
    Socket,
    /// The state directory (`--state`).
    StateDir,
    /// The policy file (`--policy`).
    Policy,
    /// The memlineage binary.
    Binary,
    /// An agent's settings (`.claude/`, `.codex/`, `.mcp.json`, `~/.claude.json`), and the MCP
    /// hosts' server lists (`mcp.json`, `mcp_config.json`, `claude_desktop_config.json`).
    AgentSettings,
    /// The resident hook server's process.
    HookServer,
    /// The separated guard's root directory (`spec/hooks.md` §14.4): the socket, the layout
    /// and the files the guard user owns.
    GuardRoot,
    /// The gateway's configuration file (`memlineage mcp proxy --config`, `spec/mcp.md` §6.5),
    /// which names the ledger, policy, state directory, session and upstream servers the
    /// gateway starts with.
    GatewayConfig,
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Resource::Ledger => "the ledger",
            Resource::LedgerFile => "the ledger's side file",
            Resource::Key => "the signing key file",
            Resource::Sessions => "the session records",
            Resource::Socket => "the hook server's socket",
            Resource::StateDir => "the state directory",
            Resource::Policy => "the gate policy",
            Resource::Binary => "the memlineage binary",
            Resource::AgentSettings => "the agent's hook settings",
            Resource::HookServer => "the hook server",
            Resource::GuardRoot => "the separated guard's directory",
            Resource::GatewayConfig => "the gateway's configuration",
        })
    }
}

/// A tool call's touch of a protected resource: what, where, and how the call touches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Touch {
    /// The resource.
    pub resource: Resource,
    /// The protected path (or process) touched.
    pub path: String,
    /// How: "names", "may name" (a pattern), "works on a directory holding", "runs", "kills"…
    pub how: &'static str,
}

impl std::fmt::Display for Touch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.how,
            self.resource,
            crate::quote::name(&self.path)
        )
    }
}

#[derive(Clone, Debug)]
enum Item {
    /// This path.
    Exact(PathBuf),
    /// This path and everything under it.
    Tree(PathBuf),
    /// Every path in `dir` whose name starts with `prefix`, and everything under them.
    Family { dir: PathBuf, prefix: String },
}

/// The guard's resources for one ledger (empty: [`Protected::default`], nothing protected).
#[derive(Clone, Debug, Default)]
pub struct Protected {
    items: Vec<(Item, Resource)>,
    /// Known protected paths, for patterns and for "holds".
    concrete: Vec<(PathBuf, Resource)>,
    /// Names looked for in any text of a call (lower case).
    names: Vec<(String, Resource, PathBuf)>,
    /// Program names that run memlineage.
    programs: Vec<String>,
    home: Option<PathBuf>,
    /// The server's command line as `pkill -f` sees it (lower case).
    server_cmdline: String,
    /// The ledger, for the server's lock files.
    ledger: Option<PathBuf>,
}

/// File names beside the ledger that exist or will (spec/hooks.md §1 item 3, §11.1).
const SIDE_SUFFIXES: &[&str] = &[
    ".key",
    ".key.lock",
    ".sessions",
    ".checkpoint",
    ".hook.sock",
    ".hook.lock",
    "-wal",
    "-shm",
    "-journal",
];

/// The agents' settings files under a project or home directory.
const SETTINGS: &[&str] = &[
    ".claude",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".codex",
    ".codex/hooks.json",
    ".codex/config.toml",
    ".mcp.json",
    ".claude.json",
    // The MCP hosts' server lists, which put servers behind the gateway (`spec/mcp.md` §6.6).
    ".cursor/mcp.json",
    ".codeium/windsurf/mcp_config.json",
    "Library/Application Support/Claude/claude_desktop_config.json",
    ".config/Claude/claude_desktop_config.json",
];

/// Directory names that hold agent settings wherever they are.
const SETTINGS_DIRS: &[&str] = &[".claude", ".codex"];
/// File names that are agent settings wherever they are.
const SETTINGS_FILES: &[&str] = &[
    ".mcp.json",
    ".claude.json",
    "mcp.json",
    "mcp_config.json",
    "claude_desktop_config.json",
];

impl Protected {
    /// The resources of the ledger at `ledger` (its directory is listed once for the files
    /// beside it), its policy file and state directory if given, the memlineage `binary`,
    /// and the agents' settings under `home`.
    pub fn for_ledger(
        ledger: &Path,
        policy: Option<&Path>,
        state: Option<&Path>,
        binary: Option<&Path>,
        home: Option<&Path>,
    ) -> Self {
        let mut p = Protected {
            home: home.map(Path::to_path_buf),
            ..Default::default()
        };
        let ledger_abs = absolute(ledger);
        for l in variants(&ledger_abs) {
            let (Some(dir), Some(name)) = (l.parent(), l.file_name()) else {
                continue;
            };
            let name = name.to_string_lossy().to_string();
            p.items.push((
                Item::Family {
                    dir: dir.to_path_buf(),
                    prefix: name.clone(),
                },
                Resource::Ledger,
            ));
            p.concrete.push((l.clone(), Resource::Ledger));
            for s in SIDE_SUFFIXES {
                let f = dir.join(format!("{name}{s}"));
                p.concrete.push((f.clone(), family_resource(s)));
            }
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten().take(10_000) {
                    let n = e.file_name().to_string_lossy().to_string();
                    if let Some(rest) = n.strip_prefix(&name) {
                        let f = e.path();
                        p.concrete.push((f.clone(), family_resource(rest)));
                        children(&f, family_resource(rest), &mut p.concrete);
                    }
                }
            }
            if name.chars().count() >= 5 {
                p.names
                    .push((name.to_lowercase(), Resource::Ledger, l.clone()));
            }
        }
        p.ledger = Some(ledger_abs.clone());
        if let Some(s) = state {
            for s in variants(&absolute(s)) {
                p.items.push((Item::Tree(s.clone()), Resource::StateDir));
                p.concrete.push((s.clone(), Resource::StateDir));
                children(&s, Resource::StateDir, &mut p.concrete);
                p.names.push((
                    s.to_string_lossy().to_lowercase(),
                    Resource::StateDir,
                    s.clone(),
                ));
            }
        }
        if let Some(pol) = policy {
            for pol in variants(&absolute(pol)) {
                p.items.push((Item::Exact(pol.clone()), Resource::Policy));
                p.concrete.push((pol.clone(), Resource::Policy));
                if let Some(n) = pol.file_name() {
                    p.names.push((
                        n.to_string_lossy().to_lowercase(),
                        Resource::Policy,
                        pol.clone(),
                    ));
                }
            }
        }
        p.programs.push("memlineage".into());
        if let Some(b) = binary {
            for b in variants(&absolute(b)) {
                p.items.push((Item::Exact(b.clone()), Resource::Binary));
                p.concrete.push((b.clone(), Resource::Binary));
                if let Some(n) = b.file_name() {
                    let n = n.to_string_lossy().to_lowercase();
                    if !p.programs.contains(&n) {
                        p.programs.push(n);
                    }
                }
            }
        }
        if let Some(h) = home {
            for s in SETTINGS {
                p.concrete.push((h.join(s), Resource::AgentSettings));
            }
        }
        for n in SETTINGS_DIRS.iter().chain(SETTINGS_FILES) {
            p.names
                .push((n.to_string(), Resource::AgentSettings, PathBuf::from(n)));
        }
        p.server_cmdline = format!(
            "{} hook serve {} --policy {} --state {}",
            binary.map_or("memlineage".into(), |b| b.display().to_string()),
            ledger_abs.display(),
            policy.map_or(String::new(), |x| x.display().to_string()),
            state.map_or(String::new(), |x| x.display().to_string()),
        )
        .to_lowercase();
        p
    }

    /// These resources and the directory `dir` with everything under it, as `what` (the
    /// separated guard's root, `spec/hooks.md` §14.4, which holds the socket and the layout).
    pub fn with_tree(mut self, dir: &Path, what: Resource) -> Self {
        for d in variants(&absolute(dir)) {
            self.items.push((Item::Tree(d.clone()), what));
            self.concrete.push((d.clone(), what));
            children(&d, what, &mut self.concrete);
            self.names
                .push((d.to_string_lossy().to_lowercase(), what, d.clone()));
        }
        self
    }

    /// These resources and the file `file` as `what`, guarded as the policy file is: the file
    /// (through its links), and its name in any text of a call (a file the guard reads its
    /// own configuration from, such as the gateway's `--config`, `spec/mcp.md` §6.5).
    pub fn with_file(mut self, file: &Path, what: Resource) -> Self {
        for f in variants(&absolute(file)) {
            self.items.push((Item::Exact(f.clone()), what));
            self.concrete.push((f.clone(), what));
            if let Some(n) = f.file_name() {
                self.names
                    .push((n.to_string_lossy().to_lowercase(), what, f.clone()));
            }
        }
        self
    }

    /// Whether nothing is protected.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The first protected resource that the call of `tool` with `args` touches, run in
    /// `cwd` (the event's working directory; `None`: unknown, every relative path may be
    /// anywhere). `tool` is the name as the agent gave it (`Bash`, `mcp__fs__write_file`).
    pub fn touch(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        cwd: Option<&Path>,
    ) -> Option<Touch> {
        if self.is_empty() {
            return None;
        }
        let bare = tool
            .strip_prefix("mcp__")
            .and_then(|r| r.split_once("__"))
            .map_or(tool, |(_, t)| t);
        // Codex's `workdir`, as the kernel enters it; one that cannot be known leaves the
        // working directory unknown (every relative path may be anywhere).
        let cwd_owned = match args.get("workdir").and_then(Value::as_str) {
            Some(w) => pattern::entered(cwd, w),
            None => cwd.map(Path::to_path_buf),
        };
        let cwd = cwd_owned.as_deref();
        let vars = Default::default();
        let listed = Default::default();
        let code_seen = Default::default();
        let ctx = Ctx {
            p: self,
            cwd,
            project: cwd,
            vars: &vars,
            listed: &listed,
            lenient: false,
            code_files: true,
            code_seen: &code_seen,
        };
        // Every string anywhere in the call: the names of protected files.
        let mut leaves = Vec::new();
        for (k, v) in args {
            leaves_of(v, Some(k), &mut leaves);
        }
        for (_, s) in &leaves {
            if let Some(t) = ctx.name_in(s) {
                return Some(t);
            }
        }
        let shell_tool = shell::is_shell_tool(bare);
        for (key, value) in args {
            let command_key = matches!(key.as_str(), "command" | "cmd");
            if shell_tool && command_key {
                let Some(text) = shell::command_text(value) else {
                    continue;
                };
                if let Some(t) = ctx.command(&text, cwd.map(Path::to_path_buf), 0) {
                    return Some(t);
                }
            } else if bare == "apply_patch" && command_key {
                if let Some(s) = value.as_str() {
                    for f in crate::gate::extract::patch_paths(s) {
                        if let Some(t) = ctx.path_str(f, "writes") {
                            return Some(t);
                        }
                    }
                }
            }
        }
        // Every other string that could be a path; a directory holding any protected file is
        // one for a tool that moves or deletes what it is given, as for `mv`/`rm` in a shell.
        let destroys = programs::destroys_by_name(bare);
        for (key, s) in &leaves {
            if key.as_deref().is_some_and(is_content_key)
                || (shell_tool && key.as_deref().is_some_and(|k| k == "command" || k == "cmd"))
            {
                continue;
            }
            if s.is_empty() || s.len() > MAX_PATH_CHARS || s.contains('\n') {
                continue;
            }
            // A `file:` URL names the local path it decodes to (a file server may take one);
            // other URLs name no local path.
            let paths = match s.contains("://") {
                true => percent::file_url_paths(s),
                false => vec![s.clone()],
            };
            for path in &paths {
                if let Some(t) = ctx.path_str_held(path, "names", !destroys) {
                    return Some(t);
                }
            }
        }
        // Search tools without a path search their working directory.
        if matches!(bare, "Grep" | "Glob" | "LS") && !args.contains_key("path") {
            if let Some(c) = cwd {
                if let Some(t) = ctx.holds(c, true) {
                    return Some(t);
                }
            }
        }
        None
    }

    /// The files in the protected directories as they are now: those in the ledger's
    /// directory whose name starts with the ledger's and two levels under them (the session
    /// records and their marks under `LEDGER.sessions/`), and three levels under the state
    /// directory and other protected trees (`sessions/<record>`, `sessions/<hex>.unrecorded/
    /// <mark>` there). Listed at every screening that matches a pattern
    /// (`spec/hooks.md` §13.3), not once when the set was made: a front that lives long (the
    /// hook server) must see the records made since as a hook process does. At most
    /// [`MAX_LISTED`] entries, [`MAX_PER_DIR`] of one directory; a directory not listed whole
    /// is in [`Listing::partial`], and a pattern that may name a path in it counts as naming
    /// one (fail closed).
    pub(super) fn listing(&self) -> Listing {
        let mut out = Listing::default();
        for (item, r) in &self.items {
            match item {
                Item::Family { dir, prefix } => {
                    let Ok(rd) = std::fs::read_dir(dir) else {
                        continue;
                    };
                    let prefix = prefix.to_lowercase();
                    for e in rd.flatten() {
                        let n = e.file_name().to_string_lossy().to_lowercase();
                        let Some(rest) = n.strip_prefix(&prefix) else {
                            continue;
                        };
                        if out.files.len() >= MAX_LISTED {
                            out.partial.push((dir.clone(), family_resource(rest)));
                            break;
                        }
                        let what = family_resource(rest);
                        out.files.push((e.path(), what));
                        below(&e.path(), what, 2, &mut out);
                    }
                }
                Item::Tree(t) => below(t, *r, 3, &mut out),
                Item::Exact(_) => {}
            }
        }
        out
    }

    /// The process ids of running hook servers of this ledger (their lock files).
    fn server_pids(&self) -> Vec<i64> {
        let Some(l) = &self.ledger else {
            return Vec::new();
        };
        let (Some(dir), Some(name)) = (l.parent(), l.file_name()) else {
            return Vec::new();
        };
        let prefix = format!("{}.hook", name.to_string_lossy());
        let mut out = Vec::new();
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten().take(10_000) {
                let n = e.file_name().to_string_lossy().to_string();
                if n.starts_with(&prefix) && n.ends_with(".lock") {
                    if let Ok(Some(s)) = crate::store::durable::read_regular(&e.path(), 64) {
                        if let Ok(pid) = String::from_utf8_lossy(&s).trim().parse() {
                            out.push(pid);
                        }
                    }
                }
            }
        }
        out
    }
}

/// Keys whose strings are content, not paths (still scanned for protected names).
fn is_content_key(k: &str) -> bool {
    matches!(
        k,
        "content"
            | "new_string"
            | "old_string"
            | "text"
            | "body"
            | "message"
            | "prompt"
            | "description"
            | "query"
            | "pattern"
            | "new_source"
            | "subject"
            | "title"
    )
}

/// The resource of a file beside the ledger whose name is the ledger's plus `suffix`.
fn family_resource(suffix: &str) -> Resource {
    let s = suffix.to_lowercase();
    if s.is_empty() {
        Resource::Ledger
    } else if s.starts_with(".key") && !s.starts_with(".key.lock") {
        Resource::Key
    } else if s.starts_with(".sessions") {
        Resource::Sessions
    } else if s.starts_with(".hook") {
        Resource::Socket
    } else {
        Resource::LedgerFile
    }
}

/// One level of the directory `dir`'s entries, as protected paths.
fn children(dir: &Path, r: Resource, out: &mut Vec<(PathBuf, Resource)>) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten().take(1_000) {
            out.push((e.path(), r));
        }
    }
}

/// Most entries [`Protected::listing`] gives.
const MAX_LISTED: usize = 20_000;

/// Most entries [`Protected::listing`] takes of one directory.
const MAX_PER_DIR: usize = 1_000;

/// The protected directories' files as [`Protected::listing`] found them at one screening.
#[derive(Debug, Default)]
pub(super) struct Listing {
    /// The files and directories listed, each with the resource it belongs to.
    pub(super) files: Vec<(PathBuf, Resource)>,
    /// The directories not listed whole (more than [`MAX_PER_DIR`] entries, or the listing
    /// full): every path in them counts as protected.
    pub(super) partial: Vec<(PathBuf, Resource)>,
}

/// The entries under the directory `dir`, `depth` levels down, as protected paths of
/// resource `r` in `out` (a directory not listed whole goes to [`Listing::partial`]).
fn below(dir: &Path, r: Resource, depth: u8, out: &mut Listing) {
    if depth == 0 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for (i, e) in rd.flatten().enumerate() {
        if i >= MAX_PER_DIR || out.files.len() >= MAX_LISTED {
            out.partial.push((dir.to_path_buf(), r));
            return;
        }
        out.files.push((e.path(), r));
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            below(&e.path(), r, depth - 1, out);
        }
    }
}

/// `p` made absolute (against the current directory) and normalised.
fn absolute(p: &Path) -> PathBuf {
    normalise(&std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
}

/// `p` as given and with symbolic links resolved, if different.
fn variants(p: &Path) -> Vec<PathBuf> {
    let r = resolved(p);
    if r == p {
        vec![p.to_path_buf()]
    } else {
        vec![p.to_path_buf(), r]
    }
}

/// Every string in `v`, with the key of the object member it is in.
fn leaves_of(v: &Value, key: Option<&str>, out: &mut Vec<(Option<String>, String)>) {
    match v {
        Value::String(s) => out.push((key.map(str::to_string), s.clone())),
        Value::Array(a) => a.iter().for_each(|x| leaves_of(x, key, out)),
        Value::Object(m) => m.iter().for_each(|(k, x)| leaves_of(x, Some(k), out)),
        _ => {}
    }
}
