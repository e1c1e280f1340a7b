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

use pattern::{candidate, candidate_with, matches, normalise, resolved, Candidate};
use serde_json::{Map, Value};
use shell::{lex, Piece, Token, Word};
use std::path::{Path, PathBuf};

/// How deep commands nested in commands (`$(…)`, `sh -c`, `eval`) are analysed; deeper is
/// refused.
pub const MAX_NESTING: usize = 8;

/// Longest string argument analysed as a path.
const MAX_PATH_CHARS: usize = 4096;

/// A resource of the guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
        let cwd_owned = args
            .get("workdir")
            .and_then(Value::as_str)
            .map(|w| match cwd {
                Some(c) => normalise(&c.join(w)),
                None => PathBuf::from(w),
            })
            .or_else(|| cwd.map(Path::to_path_buf));
        let cwd = cwd_owned.as_deref();
        let vars = Default::default();
        let ctx = Ctx {
            p: self,
            cwd,
            project: cwd,
            vars: &vars,
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
                    for f in crate::front::extract::patch_paths(s) {
                        if let Some(t) = ctx.path_str(f, "writes") {
                            return Some(t);
                        }
                    }
                }
            }
        }
        // Every other string that could be a path.
        for (key, s) in &leaves {
            if key.as_deref().is_some_and(is_content_key)
                || (shell_tool && key.as_deref().is_some_and(|k| k == "command" || k == "cmd"))
            {
                continue;
            }
            if s.is_empty() || s.len() > MAX_PATH_CHARS || s.contains('\n') || s.contains("://") {
                continue;
            }
            if let Some(t) = ctx.path_str(s, "names") {
                return Some(t);
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

/// One analysis: the resources, the working directory, the event's project directory (whose
/// agent settings are protected wherever the command `cd`s), and the variables the command
/// assigned so far.
struct Ctx<'a> {
    p: &'a Protected,
    cwd: Option<&'a Path>,
    project: Option<&'a Path>,
    vars: &'a std::cell::RefCell<std::collections::HashMap<String, String>>,
}

/// Programs that read or write the files they are given (for arguments whose value is
/// unknown: `cat $F`, `xargs rm`).
const FILE_PROGRAMS: &[&str] = &[
    "cat",
    "tac",
    "nl",
    "head",
    "tail",
    "less",
    "more",
    "cp",
    "mv",
    "rm",
    "ln",
    "chmod",
    "chown",
    "chgrp",
    "dd",
    "tee",
    "sed",
    "awk",
    "gawk",
    "perl",
    "python",
    "python3",
    "ruby",
    "node",
    "sqlite3",
    "xxd",
    "od",
    "hexdump",
    "base64",
    "strings",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "openssl",
    "scp",
    "rsync",
    "install",
    "truncate",
    "shred",
    "vi",
    "vim",
    "nano",
    "emacs",
    "jq",
    "yq",
    "source",
    ".",
    "sh",
    "bash",
    "zsh",
    "dash",
    "file",
    "stat",
    "wc",
    "sort",
    "uniq",
    "cut",
    "diff",
    "cmp",
    "patch",
    "curl",
    "wget",
    "nc",
    "socat",
    "touch",
    "mkdir",
    "unlink",
    "readlink",
    "realpath",
    "split",
    "csplit",
    "iconv",
    "gpg",
    "age",
    "ssh-keygen",
    "mkfifo",
    "lsof",
    "fuser",
];

/// Programs that move, delete, relink or re-own what they are given, directories included: a
/// directory that holds any protected file is protected from them.
const DESTROY_PROGRAMS: &[&str] = &[
    "rm", "rmdir", "mv", "chmod", "chown", "chgrp", "chattr", "ln", "shred", "mount", "umount",
    "bindfs", "setfacl", "rsync",
];

/// Programs that read directories recursively (search, copy, archive): a directory that
/// holds the signing key is protected from them.
const READ_TREE_PROGRAMS: &[&str] = &[
    "cp", "rsync", "scp", "tar", "zip", "7z", "find", "grep", "egrep", "fgrep", "rg", "ag", "ack",
    "du", "tree", "sqlite3", "git",
];

/// Programs that search their working directory when given no path.
const SEARCH_PROGRAMS: &[&str] = &["rg", "ag", "ack", "find"];

/// Shells whose `-c` argument is a command.
pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox",
];

/// Words before a command that run it (their own options skipped).
pub(crate) const WRAPPERS: &[&str] = &[
    "sudo",
    "doas",
    "env",
    "nohup",
    "exec",
    "command",
    "builtin",
    "time",
    "nice",
    "ionice",
    "stdbuf",
    "timeout",
    "setsid",
    "chronic",
    "xargs",
    "then",
    "do",
    "else",
    "elif",
    "if",
    "while",
    "until",
    "!",
    "{",
    "}",
    "watch",
    "strace",
    "ltrace",
    "flock",
    "unbuffer",
    "script",
    "runuser",
    "su",
    "setpriv",
    "chroot",
    "unshare",
    "nsenter",
    "caffeinate",
    "parallel",
];

/// `git` subcommands that rewrite the working tree as a whole.
const GIT_TREE: &[&str] = &["stash", "reset", "restore", "checkout", "clean", "switch"];

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

impl Ctx<'_> {
    /// A protected name in `text` (case-insensitive, at word boundaries; a ledger's name
    /// may be followed by a side file's suffix).
    fn name_in(&self, text: &str) -> Option<Touch> {
        let lower = text.to_lowercase();
        // Also with quoting and escapes removed: `agent.led''ger`, `agent.led\ger`.
        let stripped: String = lower.chars().filter(|c| !"'\"\\".contains(*c)).collect();
        for hay in [&lower, &stripped] {
            for (name, resource, path) in &self.p.names {
                if bounded(hay, name) {
                    return Some(Touch {
                        resource: *resource,
                        path: path.display().to_string(),
                        how: "names",
                    });
                }
            }
        }
        None
    }

    /// Every protected path known: the resources' and the agent settings of the project and
    /// working directories.
    fn known(&self) -> Vec<(std::borrow::Cow<'_, Path>, Resource)> {
        use std::borrow::Cow;
        let mut known: Vec<(Cow<'_, Path>, Resource)> = self
            .p
            .concrete
            .iter()
            .map(|(p, r)| (Cow::Borrowed(p.as_path()), *r))
            .collect();
        for d in [self.project, self.cwd].into_iter().flatten() {
            known.extend(
                SETTINGS
                    .iter()
                    .map(|x| (Cow::Owned(d.join(x)), Resource::AgentSettings)),
            );
        }
        known
    }

    /// The resource at `path` (absolute, normalised), if protected.
    fn resource_at(&self, path: &Path) -> Option<(Resource, PathBuf)> {
        for p in [path.to_path_buf(), resolved(path)] {
            let s = lower(&p);
            for (item, r) in &self.p.items {
                match item {
                    Item::Exact(e) if s == lower(e) => return Some((*r, e.clone())),
                    Item::Tree(t) if under(&s, &lower(t)) => return Some((*r, p.clone())),
                    Item::Family { dir, prefix } => {
                        let d = lower(dir);
                        if let Some(rest) = s.strip_prefix(&d).and_then(|x| x.strip_prefix('/')) {
                            let first = rest.split('/').next().unwrap_or("");
                            if let Some(suffix) = first.strip_prefix(&prefix.to_lowercase()) {
                                return Some((family_resource(suffix), p.clone()));
                            }
                        }
                    }
                    _ => {}
                }
            }
            let comps: Vec<String> = p
                .components()
                .map(|c| c.as_os_str().to_string_lossy().to_lowercase())
                .collect();
            let is_settings = comps.iter().any(|c| SETTINGS_DIRS.contains(&c.as_str()))
                || comps
                    .last()
                    .is_some_and(|c| SETTINGS_FILES.contains(&c.as_str()));
            if is_settings {
                return Some((Resource::AgentSettings, p.clone()));
            }
        }
        None
    }

    /// A protected resource under `dir` (a strict ancestor of it): any, or with `secrets`
    /// only the signing key (what a recursive read would leak).
    fn holds(&self, dir: &Path, secrets: bool) -> Option<Touch> {
        for d in [dir.to_path_buf(), resolved(dir)] {
            let s = lower(&d);
            for (path, r) in &self.known() {
                let ps = lower(path);
                if (!secrets || *r == Resource::Key) && ps != s && under(&ps, &s) && path.exists() {
                    return Some(Touch {
                        resource: *r,
                        path: path.display().to_string(),
                        how: "works on a directory holding",
                    });
                }
            }
        }
        None
    }

    /// The touch of a string argument taken as a path (relative to the working directory).
    fn path_str(&self, s: &str, how: &'static str) -> Option<Touch> {
        let p = match (Path::new(s).is_absolute(), s.strip_prefix("~/"), self.cwd) {
            (true, _, _) => normalise(Path::new(s)),
            (_, Some(rest), _) if self.p.home.is_some() => {
                normalise(&self.p.home.as_deref().unwrap_or(Path::new("/")).join(rest))
            }
            (_, _, Some(c)) => normalise(&c.join(s)),
            (_, _, None) => {
                return self.pattern(
                    &[pattern::Pat::Any, pattern::Pat::Ch('/')]
                        .into_iter()
                        .chain(s.chars().map(pattern::Pat::Ch))
                        .collect::<Vec<_>>(),
                )
            }
        };
        if let Some((r, at)) = self.resource_at(&p) {
            return Some(Touch {
                resource: r,
                path: at.display().to_string(),
                how,
            });
        }
        self.holds(&p, true)
    }

    /// A protected path that `pat` matches.
    fn pattern(&self, pat: &[pattern::Pat]) -> Option<Touch> {
        self.known()
            .iter()
            .find(|(p, _)| matches(pat, &p.to_string_lossy()))
            .map(|(p, r)| Touch {
                resource: *r,
                path: p.display().to_string(),
                how: "may name",
            })
    }

    /// The touch of one word of a command run in `cwd`. `tree`: the program works on
    /// directories (`Some(true)`: reads them, a directory holding the key counts;
    /// `Some(false)`: moves or deletes them, a directory holding any protected file counts);
    /// `unknown_counts`: a word with no literal character (`$F`) may name anything.
    fn word(
        &self,
        w: &Word,
        cwd: Option<&Path>,
        tree: Option<bool>,
        unknown_counts: bool,
    ) -> Option<Touch> {
        if w.all_unknown() && !unknown_counts {
            return None;
        }
        let ctx = Ctx {
            p: self.p,
            cwd,
            project: self.project,
            vars: self.vars,
        };
        let c = candidate_with(w, cwd, self.p.home.as_deref(), &self.vars.borrow());
        match c {
            Candidate::Path(p) => {
                if let Some((r, at)) = ctx.resource_at(&p) {
                    return Some(Touch {
                        resource: r,
                        path: at.display().to_string(),
                        how: "names",
                    });
                }
                if let Some(secrets) = tree {
                    return ctx.holds(&p, secrets);
                }
                None
            }
            Candidate::Pattern(pat) => ctx.pattern(&pat),
        }
        .or_else(|| {
            // `of=PATH`, `--file=PATH`: the value after `=` is a path too.
            let eq = w.pieces.iter().position(|p| *p == Piece::Lit('='))?;
            let rest = Word {
                pieces: w.pieces[eq + 1..].to_vec(),
            };
            if rest.pieces.is_empty() {
                return None;
            }
            self.word(&rest, cwd, tree, false)
        })
    }

    /// The touch of a shell command run in `cwd`, nested `depth` levels deep.
    fn command(&self, text: &str, mut cwd: Option<PathBuf>, depth: usize) -> Option<Touch> {
        if depth > MAX_NESTING {
            return Some(Touch {
                resource: Resource::Binary,
                path: text.chars().take(60).collect(),
                how: "nests commands too deeply to analyse; refused like a command that",
            });
        }
        if let Some(t) = self.name_in(text) {
            return Some(t);
        }
        let lexed = lex(text);
        for n in &lexed.nested {
            if let Some(t) = self.command(n, cwd.clone(), depth + 1) {
                return Some(t);
            }
        }
        for t in &lexed.tokens {
            if let Token::Word(w) = t {
                if let Some(t) = self.name_in(&w.squeezed()) {
                    return Some(t);
                }
            }
        }
        let mut words: Vec<Word> = Vec::new();
        let mut targets: Vec<Word> = Vec::new();
        let mut next_is: Option<&Token> = None;
        let mut tokens = lexed.tokens.iter().peekable();
        loop {
            let t = tokens.next();
            match t {
                Some(Token::Word(w)) => match next_is.take() {
                    Some(Token::Redirect(_)) => targets.push(w.clone()),
                    Some(_) => {}
                    None => words.push(w.clone()),
                },
                Some(op @ (Token::Redirect(_) | Token::HereDoc)) => next_is = Some(op),
                Some(Token::Control | Token::Pipe) | None => {
                    if let Some(t) = self.segment(&words, &targets, &mut cwd, depth) {
                        return Some(t);
                    }
                    words.clear();
                    targets.clear();
                    next_is = None;
                    t?;
                }
            }
        }
    }

    /// One simple command: its words and redirection targets.
    fn segment(
        &self,
        words: &[Word],
        targets: &[Word],
        cwd: &mut Option<PathBuf>,
        depth: usize,
    ) -> Option<Touch> {
        let here = cwd.clone();
        let here = here.as_deref();
        for t in targets {
            if let Some(t) = self.word(t, here, None, true) {
                return Some(Touch {
                    how: "redirects to",
                    ..t
                });
            }
        }
        let mut i = 0;
        let mut xargs = false;
        // Assignments (`F=path cmd`) and wrappers (`sudo`, `env`, `timeout 5`, `xargs`).
        while let Some(w) = words.get(i) {
            let lit = w.literal();
            let assignment = w
                .pieces
                .iter()
                .position(|p| *p == Piece::Lit('='))
                .is_some_and(|eq| {
                    eq > 0
                        && w.pieces[..eq]
                            .iter()
                            .all(|p| matches!(p, Piece::Lit(c) if c.is_alphanumeric() || *c == '_'))
                });
            if assignment {
                if let Some(t) = self.word(w, here, None, false) {
                    return Some(t);
                }
                let text: String = w.squeezed();
                if let Some((name, value)) = text.split_once('=') {
                    let mut vars = self.vars.borrow_mut();
                    match w
                        .pieces
                        .iter()
                        .skip(name.chars().count() + 1)
                        .all(|p| matches!(p, Piece::Lit(_)))
                    {
                        true => vars.insert(name.to_string(), value.to_string()),
                        false => vars.remove(name),
                    };
                }
                i += 1;
                continue;
            }
            let Some(name) = lit.as_deref().map(basename) else {
                break;
            };
            if !WRAPPERS.contains(&name.as_str()) {
                break;
            }
            xargs |= name == "xargs";
            i += 1;
            // The wrapper's options and their values.
            while let Some(o) = words.get(i).and_then(Word::literal) {
                if o.starts_with('-') && o != "-" {
                    i += 1;
                    let takes = matches!(
                        (name.as_str(), o.as_str()),
                        ("sudo" | "doas" | "runuser" | "su", "-u" | "-g" | "-c")
                            | ("nice", "-n")
                            | (
                                "xargs",
                                "-I" | "-n" | "-P" | "-d" | "-E" | "-L" | "-s" | "-a"
                            )
                            | ("timeout", "-s" | "-k")
                            | ("flock", "-w")
                    );
                    if takes {
                        if let Some(v) = words.get(i) {
                            if let Some(t) = self.word(v, here, None, false) {
                                return Some(t);
                            }
                        }
                        if matches!((name.as_str(), o.as_str()), ("su" | "runuser", "-c")) {
                            let c = words.get(i).map(Word::squeezed).unwrap_or_default();
                            if let Some(t) = self.command(&c, cwd.clone(), depth + 1) {
                                return Some(t);
                            }
                        }
                        i += 1;
                    }
                } else if (name == "env" && o.contains('='))
                    || (name == "timeout" && o.chars().next().is_some_and(|c| c.is_ascii_digit()))
                {
                    i += 1;
                } else {
                    break;
                }
            }
        }
        let program = words.get(i)?;
        let args = &words[i + 1..];
        let Some(prog) = program.literal() else {
            return Some(Touch {
                resource: Resource::Binary,
                path: program.squeezed(),
                how: "runs a program whose name is only known when it runs, which may be",
            });
        };
        let name = basename(&prog).to_lowercase();
        if self.p.programs.contains(&name) {
            return Some(Touch {
                resource: Resource::Binary,
                path: prog,
                how: "runs",
            });
        }
        if prog.contains('/') {
            if let Some(t) = self.word(program, here, None, false) {
                return Some(Touch { how: "runs", ..t });
            }
        }
        let destroys = DESTROY_PROGRAMS.contains(&name.as_str())
            || (name == "find"
                && args.iter().filter_map(Word::literal).any(|a| {
                    matches!(
                        a.as_str(),
                        "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir"
                    )
                }));
        let tree = if destroys {
            Some(false)
        } else if READ_TREE_PROGRAMS.contains(&name.as_str()) {
            Some(true)
        } else {
            None
        };
        let files = FILE_PROGRAMS.contains(&name.as_str());
        match name.as_str() {
            "cd" | "pushd" => {
                *cwd = match args
                    .iter()
                    .find(|a| a.literal().is_none_or(|l| !l.starts_with('-')))
                {
                    None => self.p.home.clone(),
                    Some(a) => match candidate(a, here, self.p.home.as_deref()) {
                        Candidate::Path(p) => Some(p),
                        Candidate::Pattern(_) => None,
                    },
                };
                return None;
            }
            "kill" | "pkill" | "killall" | "skill" | "fuser" | "systemctl" | "service"
            | "launchctl" => {
                if let Some(t) = self.kill(&name, args) {
                    return Some(t);
                }
            }
            "eval" => {
                let all: Vec<String> = args.iter().map(Word::squeezed).collect();
                if args.iter().any(|a| a.literal().is_none()) {
                    return Some(Touch {
                        resource: Resource::Binary,
                        path: all.join(" "),
                        how: "evaluates a command only known when it runs, which may run",
                    });
                }
                return self.command(&all.join(" "), cwd.clone(), depth + 1);
            }
            "git" => {
                let mut j = 0;
                let mut dir = here.map(Path::to_path_buf);
                while let Some(a) = args.get(j).and_then(Word::literal) {
                    if a == "-C" {
                        dir = args.get(j + 1).and_then(|d| {
                            match candidate(d, here, self.p.home.as_deref()) {
                                Candidate::Path(p) => Some(p),
                                Candidate::Pattern(_) => None,
                            }
                        });
                        j += 2;
                    } else if a == "-c" {
                        j += 2;
                    } else if a.starts_with('-') {
                        j += 1;
                    } else {
                        break;
                    }
                }
                let sub = args.get(j).and_then(Word::literal).unwrap_or_default();
                let rest: Vec<String> = args[j + 1..].iter().map(Word::squeezed).collect();
                // `git checkout -b NEW` / `git switch -c NEW` from HEAD leave the tree as it is.
                let new_branch = matches!(sub.as_str(), "checkout" | "switch")
                    && rest.len() == 2
                    && matches!(rest[0].as_str(), "-b" | "-c");
                let resets_tree = sub != "reset"
                    || rest
                        .iter()
                        .any(|a| matches!(a.as_str(), "--hard" | "--merge" | "--keep"));
                if GIT_TREE.contains(&sub.as_str()) && !new_branch && resets_tree {
                    let t = match &dir {
                        Some(d) => self.holds(d, false),
                        None => self.pattern(&[pattern::Pat::Any]),
                    };
                    if let Some(t) = t {
                        return Some(Touch {
                            how: "rewrites the working tree holding",
                            ..t
                        });
                    }
                }
            }
            _ => {}
        }
        if SHELLS.contains(&name.as_str()) {
            let mut j = 0;
            while let Some(a) = args.get(j) {
                let Some(l) = a.literal() else { break };
                if l.starts_with('-') && !l.starts_with("--") && l.contains('c') {
                    let Some(c) = args.get(j + 1) else { break };
                    if c.literal().is_none() {
                        return Some(Touch {
                            resource: Resource::Binary,
                            path: c.squeezed(),
                            how: "runs a shell command only known when it runs, which may run",
                        });
                    }
                    return self.command(&c.squeezed(), cwd.clone(), depth + 1);
                } else if l.starts_with('-') {
                    j += 1;
                } else {
                    break;
                }
            }
        }
        if SEARCH_PROGRAMS.contains(&name.as_str())
            || (matches!(name.as_str(), "grep" | "egrep" | "fgrep")
                && args.iter().filter_map(Word::literal).any(|a| {
                    a == "--recursive"
                        || (a.starts_with('-')
                            && !a.starts_with("--")
                            && (a.contains('r') || a.contains('R')))
                }))
        {
            if let Some(c) = here {
                if let Some(t) = self.holds(c, !destroys) {
                    return Some(t);
                }
            }
        }
        for a in args {
            if let Some(t) = self.word(
                a,
                here,
                tree,
                (files || xargs) && !a.literal().is_some_and(|l| l.starts_with('-')),
            ) {
                return Some(t);
            }
        }
        if xargs && files {
            // Arguments read from standard input: any path.
            return self.pattern(&[pattern::Pat::Any]).map(|t| Touch {
                how: "passes unknown arguments that may name",
                ..t
            });
        }
        None
    }

    /// A `kill`-like command aimed at the hook server.
    fn kill(&self, name: &str, args: &[Word]) -> Option<Touch> {
        let server = |how| Touch {
            resource: Resource::HookServer,
            path: self.p.server_cmdline.clone(),
            how,
        };
        let mut first = true;
        for a in args {
            let Some(l) = a.literal() else {
                return Some(server(
                    "signals a process only known when it runs, which may be",
                ));
            };
            let l = l.to_lowercase();
            if name == "kill" {
                let is_signal = first && l.starts_with('-');
                first = false;
                if is_signal || l == "--" || l == "-s" || l == "-l" {
                    continue;
                }
                if let Ok(pid) = l.parse::<i64>() {
                    if pid <= 1 || self.p.server_pids().contains(&pid.abs()) {
                        return Some(server("kills"));
                    }
                } else if !l.starts_with('%')
                    && !l
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_alphabetic())
                {
                    return Some(server("signals a process it names by a word that may be"));
                }
            } else if !l.starts_with('-') {
                // A process name or pattern: refused when every literal run of it is in the
                // server's command line (a pattern with none may match anything).
                let runs: Vec<&str> = l
                    .split(|c: char| ".*+?[](){}|^$\\".contains(c))
                    .filter(|r| !r.is_empty())
                    .collect();
                let cmdline = &self.p.server_cmdline;
                if runs.iter().all(|r| cmdline.contains(r)) || l.contains("memlineage") {
                    return Some(server("stops"));
                }
            }
        }
        None
    }
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

fn lower(p: &Path) -> String {
    p.to_string_lossy().to_lowercase()
}

/// Whether path string `p` is `dir` or under it.
fn under(p: &str, dir: &str) -> bool {
    p == dir || (p.starts_with(dir) && (dir.ends_with('/') || p[dir.len()..].starts_with('/')))
}

fn basename(s: &str) -> String {
    s.rsplit('/').next().unwrap_or(s).to_string()
}

/// Whether `name` occurs in `hay` with no letter, digit or `_` on either side.
fn bounded(hay: &str, name: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut from = 0;
    while let Some(at) = hay[from..].find(name) {
        let start = from + at;
        let end = start + name.len();
        if !word(hay[..start].chars().next_back()) && !word(hay[end..].chars().next()) {
            return true;
        }
        from = start + name.len().max(1);
        if from >= hay.len() {
            break;
        }
        while !hay.is_char_boundary(from) {
            from += 1;
        }
    }
    false
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
