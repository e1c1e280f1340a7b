//! What git runs that it is handed (`spec/hooks.md` §16.2 "Handed commands"): git(1) OPTIONS
//! (`--config-env`, `--exec-path`, `--git-dir`), git-config(1) keys that run a command or name
//! code, git-remote-ext(1) remotes, and the options of subcommands that take a command:
//! git-rebase(1) `--exec`/`-x`, git-difftool(1) `--extcmd`/`-x`, git-grep(1)
//! `--open-files-in-pager`/`-O`, git-clone(1)/git-fetch(1)/git-ls-remote(1) `--upload-pack`
//! (`clone -u`), git-push(1) `--receive-pack`/`--exec`, git-filter-branch(1) `--*-filter`,
//! git-send-email(1) `--sendmail-cmd`/`--to-cmd`/`--cc-cmd`/`--smtp-server`,
//! git-submodule(1) `foreach CMD`, git-bisect(1) `run CMD`.

use super::programs::long_or_short;
use super::{Handed, ARGUMENT};
use crate::front::protect::shell::Word;
use crate::front::protect::simple::is_assignment;

/// The long options of git subcommands whose value is a command (any abbreviation, in its
/// subcommand only: `show-ref --head` is no `--header-cmd`).
const COMMAND_OPTIONS: &[(&str, &[&str])] = &[
    ("rebase", &["exec"]),
    ("difftool", &["extcmd"]),
    ("grep", &["open-files-in-pager"]),
    ("clone", &["upload-pack"]),
    ("fetch", &["upload-pack"]),
    ("pull", &["upload-pack"]),
    ("ls-remote", &["upload-pack"]),
    ("archive", &["exec"]),
    ("push", &["receive-pack", "exec"]),
    ("send-pack", &["receive-pack", "exec"]),
    (
        "filter-branch",
        &[
            "tree-filter",
            "index-filter",
            "msg-filter",
            "env-filter",
            "parent-filter",
            "commit-filter",
            "tag-name-filter",
        ],
    ),
    (
        "send-email",
        &[
            "sendmail-cmd",
            "to-cmd",
            "cc-cmd",
            "header-cmd",
            "smtp-server",
        ],
    ),
];

/// git(1) OPTIONS and git-config(1): `--config-env=KEY=VAR` takes the value of `VAR` (an
/// assignment of the command, else only known when it runs); `-c KEY=VALUE` whose key runs a
/// command or names code (`core.hooksPath`, `include.path`); `ext::CMD` remotes
/// (git-remote-ext(1)). A value that is not literal, under a key that runs one, is unknown.
pub(super) fn git(args: &[&Word], lits: &[Option<String>], words: &[&Word], out: &mut Vec<Handed>) {
    subcommand(lits, out);
    let mut k = 0;
    while k < args.len() {
        let l = args[k].squeezed();
        if l == "-c" {
            if let Some(w) = args.get(k + 1) {
                let kv = w.squeezed();
                let key = kv.split_once('=').map_or(kv.as_str(), |(key, _)| key);
                let value = w
                    .literal()
                    .map(|l| l.split_once('=').map(|(_, v)| v.to_string()));
                out.extend(git_value(key, value.map(Option::unwrap_or_default)));
            }
            k += 2;
            continue;
        }
        let env = if l == "--config-env" {
            k += 1;
            args.get(k).map(|w| w.squeezed())
        } else {
            l.strip_prefix("--config-env=").map(str::to_string)
        };
        if let Some(kv) = env {
            let (key, var) = kv.split_once('=').unwrap_or((kv.as_str(), ""));
            let value = words.iter().find_map(|w| {
                let s = w.squeezed();
                let (n, _) = s.split_once('=')?;
                (n == var && is_assignment(&s)).then(|| {
                    w.literal()
                        .and_then(|l| l.split_once('=').map(|(_, v)| v.to_string()))
                })
            });
            out.extend(git_value(key, value.flatten()));
        }
        // Another repository's configuration, hooks and programs: nothing here reads them.
        let elsewhere = ["--git-dir=", "--exec-path="]
            .iter()
            .any(|p| l.starts_with(p))
            || l == "--git-dir";
        if elsewhere {
            out.push(None);
        }
        if let Some(Some(remote)) = lits.get(k) {
            if let Some(cmd) = remote.strip_prefix("ext::") {
                out.push(Some(cmd.replace("% ", " ").replace("%%", "%")));
            }
        }
        k += 1;
    }
}

/// What git runs for configuration `key` set to `value` (`None`: not literal).
fn git_value(key: &str, value: Option<String>) -> Option<Handed> {
    let key = key.to_ascii_lowercase();
    let last = key.rsplit('.').next().unwrap_or_default();
    let code_file = key == "core.hookspath"
        || key == "include.path"
        || key == "init.templatedir"
        || (key.starts_with("includeif.") && last == "path");
    let runs = key.starts_with("pager.")
        || last.ends_with("command")
        || last.ends_with("cmd")
        || last.ends_with("program")
        || last.ends_with("helper")
        || last.ends_with("driver")
        || last.ends_with("proxy")
        || matches!(
            last,
            "pager"
                | "editor"
                | "fsmonitor"
                | "askpass"
                | "textconv"
                | "clean"
                | "smudge"
                | "process"
                | "uploadpack"
                | "receivepack"
                | "packobjectshook"
                | "difffilter"
                | "smtpserver"
        );
    match value {
        None if runs || code_file || value_starts_unknown(&key) => Some(None),
        None => None,
        Some(v) if code_file => (!v.is_empty() && v != "/dev/null").then_some(None),
        Some(v) if key == "core.pager" || key.starts_with("pager.") => Some(super::pager(&v)),
        Some(v) if runs && !v.starts_with('!') => Some(Some(format!("{v} {ARGUMENT}"))),
        Some(v) => v.strip_prefix('!').map(|c| Some(c.to_string())),
    }
}

/// Whether a `-c` value that is not literal may begin with `!` (an alias runs it as a shell
/// command): every alias.
fn value_starts_unknown(key: &str) -> bool {
    key.starts_with("alias.")
}

/// The commands of git subcommand options ([`COMMAND_OPTIONS`]; `-x` of `rebase` and
/// `difftool`, `-O` of `grep`, `-u` of `clone`), and the command words of `submodule foreach`
/// and `bisect run`.
fn subcommand(lits: &[Option<String>], out: &mut Vec<Handed>) {
    let sub = crate::gate::extract::git_global_options(
        &lits
            .iter()
            .map(|l| l.clone().unwrap_or_default())
            .collect::<Vec<_>>(),
    );
    let Some(rest) = lits.get(sub..) else { return };
    let name = rest.first().cloned().flatten().unwrap_or_default();
    let mut values = Vec::new();
    let short = match name.as_str() {
        "rebase" | "difftool" => "-x",
        "clone" => "-u",
        _ => "",
    };
    let names = COMMAND_OPTIONS
        .iter()
        .find(|(sub, _)| *sub == name)
        .map_or(&[][..], |(_, names)| *names);
    long_or_short(rest, names, short, &mut values);
    if name == "grep" {
        for l in rest.iter().flatten() {
            if let Some(p) = l.strip_prefix("-O").filter(|p| !p.is_empty()) {
                values.push(Some(p.to_string()));
            }
        }
    }
    out.extend(
        values
            .into_iter()
            .map(|v| v.map(|v| format!("{v} {ARGUMENT}"))),
    );
    let words = match (name.as_str(), rest.get(1).cloned().flatten().as_deref()) {
        ("submodule", Some("foreach")) => &rest[2..],
        ("bisect", Some("run")) => &rest[2..],
        _ => return,
    };
    let words = words
        .iter()
        .skip_while(|w| w.as_deref() == Some("--recursive"));
    let joined: Option<Vec<String>> = words.cloned().collect();
    out.push(joined.map(|j| j.join(" ")));
}
