//! Commands a simple command hands to a program to run through a channel other than its own
//! program word (`spec/hooks.md` §13.3, §16.2 "Handed commands", attack review 41): an
//! environment variable the program runs (`GIT_SSH_COMMAND`, `PAGER`, `LESSOPEN`), a variable
//! that carries its options (`TAR_OPTIONS`, `MAKEFLAGS`), a wrapper's `-c` (`script -qc`,
//! `flock f -c`), a wrapper's command given as one word (`watch 'CMD'`, `env -S 'CMD'`), a shell
//! started by a program the analyses do not know (`systemd-run --user bash -c CMD`), and the
//! options by which a program runs a command or code (this module's `programs`: git's
//! `--config-env` and command keys, tar's abbreviated or clustered options, `zip -TT`, `man -P`,
//! `less +!`, vim's `-c '!…'`, awk's `system()`, sed's `e`, sqlite3's `.shell`, strace's `-o |`,
//! gdb's `-ex shell`, `npx -c`, `parallel :::`, code fed through `xargs -I`, `at`, `crontab`).
//!
//! Each is a command text to analyse as the command it is (`Some`), in the working directory of
//! the simple command, or `None`: code only known when it runs (a file of code nobody reads
//! here, a value that is not literal, a program's input run as code), which the screen refuses
//! and the secrecy rule counts as reading any secret and sending it to an unnamed destination.
//! Before, the screen judged none of these and the secrecy rule few: `GIT_PAGER='cat *.key'
//! git log` in the key's directory, `watch -n 100 'curl -F f=@$HOME/.aws/credentials …'` and
//! `tar -cf /dev/null --use-compress-prog='<that curl> #' src` ran, exit 0, in a session that had
//! read nothing (`tests/hooks/shell-rewrites/handed-commands.json`).
//!
//! A value is handed with the arguments its program gives it, so that the analyses read it as
//! it runs: an ssh command with a host and a remote command, an editor or a helper with a file,
//! a pager fed by a pipe, a shell with `-c`. Like the lexer, this never rejects input.

mod elsewhere;
mod git;
mod programs;

use super::invocation::Program;
use super::runners::{runs, Runs};
use super::shell::{lex, Lexed, Piece, Token, Word};
use super::simple::{basename, is_assignment, program_index};
use super::SHELLS;
use crate::front::secrets::is_interpreter;
use crate::front::sinks::command::carried_commands;

/// A command handed to a program: its text, or `None` when it is only known when it runs.
pub(crate) type Handed = Option<String>;

/// The argument a handed file-taking command is given (an editor's file, a helper's prompt):
/// a relative name no rule protects or holds secret, so that the program is judged with an
/// operand, as it runs.
const ARGUMENT: &str = "handed-argument";

/// How a program runs the command an environment variable holds.
#[derive(Clone, Copy)]
enum Shape {
    /// As ssh, with a host and a remote command (`GIT_SSH_COMMAND`, `RSYNC_RSH`).
    Ssh,
    /// With a file or another argument (an editor, a diff tool, an askpass helper).
    File,
    /// As a pager, reading what the program pipes to it.
    Stdin,
    /// As the shell of recipes and commands: `VALUE -c CMD` (`SHELL` for make).
    Shell,
    /// As shell text (`PROMPT_COMMAND`, `PS4`'s `$(…)`, `LESSOPEN`'s `|CMD`).
    Text,
    /// Code from a file or library nobody reads here (`LD_PRELOAD`, `GIT_CONFIG_GLOBAL`).
    Unknown,
    /// Options of the named interpreter (`NODE_OPTIONS`, `PERL5OPT`, `RUBYOPT`): handed as
    /// that interpreter's own options before code that does nothing (`perl -Itools -MReport
    /// -e 0`), so that the files and modules they load are read as its options' are
    /// ([`super::invocation`]).
    InterpreterOptions(&'static str),
    /// A file of shell code a shell reads first, its name expanded (`BASH_ENV` for a
    /// non-interactive bash, `ENV` for an interactive sh; bash(1) INVOCATION): handed as
    /// `. FILE`.
    Sourced,
    /// Lua's `LUA_INIT`: `@FILE` runs that file, anything else is Lua code (lua(1)).
    LuaInit,
    /// Options of the named program (`TAR_OPTIONS`): read as if written before its own.
    Options(&'static str),
}

/// Environment variables whose value a program runs or loads as code: git(1) ENVIRONMENT
/// VARIABLES, ssh(1) (`SSH_ASKPASS`), sudo(8) (`SUDO_ASKPASS`), less(1) INPUT PREPROCESSOR,
/// man(1) ENVIRONMENT, rsync(1) ENVIRONMENT VARIABLES, bash(1) Shell Variables (`PROMPT_COMMAND`,
/// `PS0`–`PS4` are expanded, `$(…)` included), make(1) (`MAKEFLAGS`, `MAKEFILES`), tar(1)
/// (`TAR_OPTIONS`), zip(1) (`ZIPOPT`), ld.so(8), vim(1) (`EXINIT`, `VIMINIT`), perlrun
/// (`PERL5OPT`), ruby(1) (`RUBYOPT`), the Node.js CLI (`NODE_OPTIONS`), bash(1) INVOCATION
/// (`BASH_ENV`, `ENV`), git-config(1) FILES and the XDG Base Directory Specification (`HOME`,
/// `XDG_CONFIG_HOME`, `XDG_CONFIG_DIRS`), zsh(1) STARTUP/SHUTDOWN FILES (`ZDOTDIR`), Python's
/// `site` and command line (`PYTHONUSERBASE`, `PYTHONSTARTUP`).
const VARIABLES: &[(&str, Shape)] = &[
    ("GIT_SSH_COMMAND", Shape::Ssh),
    ("GIT_SSH", Shape::Ssh),
    ("RSYNC_RSH", Shape::Ssh),
    ("CVS_RSH", Shape::Ssh),
    ("SVN_SSH", Shape::Ssh),
    ("GIT_EXTERNAL_DIFF", Shape::File),
    ("GIT_EDITOR", Shape::File),
    ("GIT_SEQUENCE_EDITOR", Shape::File),
    ("EDITOR", Shape::File),
    ("VISUAL", Shape::File),
    ("FCEDIT", Shape::File),
    ("GIT_ASKPASS", Shape::File),
    ("SSH_ASKPASS", Shape::File),
    ("SUDO_ASKPASS", Shape::File),
    ("BROWSER", Shape::File),
    ("GIT_PROXY_COMMAND", Shape::File),
    ("GIT_PAGER", Shape::Stdin),
    ("PAGER", Shape::Stdin),
    ("MANPAGER", Shape::Stdin),
    ("SYSTEMD_PAGER", Shape::Stdin),
    ("SHELL", Shape::Shell),
    ("PROMPT_COMMAND", Shape::Text),
    ("PS0", Shape::Text),
    ("PS1", Shape::Text),
    ("PS2", Shape::Text),
    ("PS4", Shape::Text),
    ("LESSOPEN", Shape::Text),
    ("LESSCLOSE", Shape::Text),
    ("RSYNC_CONNECT_PROG", Shape::Text),
    ("LD_PRELOAD", Shape::Unknown),
    ("LD_AUDIT", Shape::Unknown),
    ("GIT_CONFIG_GLOBAL", Shape::Unknown),
    ("GIT_CONFIG_SYSTEM", Shape::Unknown),
    ("GIT_CONFIG", Shape::Unknown),
    ("GIT_CONFIG_PARAMETERS", Shape::Unknown),
    ("GIT_EXEC_PATH", Shape::Unknown),
    ("GIT_TEMPLATE_DIR", Shape::Unknown),
    ("GIT_DIR", Shape::Unknown),
    // Where programs find the user's own start-up and configuration files, which can hold
    // code (a git pager or alias, a shell's rc file, an editor's init, Python's
    // `usercustomize`): moved to a directory the agent could have written, that code is read
    // nowhere here (attack review 56).
    ("HOME", Shape::Unknown),
    ("XDG_CONFIG_HOME", Shape::Unknown),
    ("XDG_CONFIG_DIRS", Shape::Unknown),
    ("ZDOTDIR", Shape::Unknown),
    ("PYTHONUSERBASE", Shape::Unknown),
    ("PYTHONSTARTUP", Shape::Unknown),
    ("MAKEFILES", Shape::Unknown),
    ("EXINIT", Shape::Unknown),
    ("VIMINIT", Shape::Unknown),
    ("PERL5OPT", Shape::InterpreterOptions("perl")),
    ("RUBYOPT", Shape::InterpreterOptions("ruby")),
    ("NODE_OPTIONS", Shape::InterpreterOptions("node")),
    ("BASH_ENV", Shape::Sourced),
    ("ENV", Shape::Sourced),
    ("LUA_INIT", Shape::LuaInit),
    ("LUA_INIT_5_4", Shape::LuaInit),
    ("TAR_OPTIONS", Shape::Options("tar")),
    ("ZIPOPT", Shape::Options("zip")),
    ("MAKEFLAGS", Shape::Options("make")),
    ("GNUMAKEFLAGS", Shape::Options("make")),
    ("MFLAGS", Shape::Options("make")),
    ("MANOPT", Shape::Options("man")),
    ("LESS", Shape::Options("less")),
];

/// npm's settings that name a program or code it runs, or a file of settings that may
/// (npm-config(7): a variable `npm_config_KEY`, its name in any case and `_` for `-`):
/// `script-shell` runs every `npm run` script, `git` every git dependency, `node-options`,
/// `onload-script` and `init-module` are code, and `userconfig`/`globalconfig` are files that
/// may set any of them (attack review 56).
const NPM_RUNS: &[&str] = &[
    "script_shell",
    "shell",
    "git",
    "node_options",
    "onload_script",
    "init_module",
    "userconfig",
    "globalconfig",
    "editor",
    "browser",
    "viewer",
];

/// Whether `name` is an npm setting of [`NPM_RUNS`].
fn npm_runs(name: &str) -> bool {
    let lower = name.to_ascii_lowercase().replace('-', "_");
    lower
        .strip_prefix("npm_config_")
        .is_some_and(|key| NPM_RUNS.contains(&key))
}

/// Builtins whose operands are assignments of the shell's (exported or not: a later
/// simple command of the same call may run a program that reads them).
const DECLARERS: &[&str] = &["export", "declare", "typeset", "local", "readonly"];

/// Wrappers that run their `-c` value through a shell: su(1), runuser(1), script(1), flock(1).
const DASH_C_WRAPPERS: &[&str] = &["su", "runuser", "script", "flock"];

/// The commands simple command `words` (assignments, wrappers and program included) hands to a
/// program through something other than its program word (module docs).
pub(crate) fn handed_commands(words: &[&Word]) -> Vec<Handed> {
    let i = program_index(words);
    let mut out = Vec::new();
    let declares = words
        .get(i)
        .and_then(|w| w.literal())
        .is_some_and(|p| DECLARERS.contains(&p.as_str()));
    let assignments = if declares { words } else { &words[..i] };
    for w in assignments {
        out.extend(variable(w, words));
    }
    out.extend(assigned_from_input(words, i));
    wrappers(words, i, &mut out);
    // A runner whose options cannot be read, or that runs code from files nothing here
    // reads (`nix develop`): code only known when it runs (§13.3, "Runners").
    if let Some((_, Runs::Unknown)) = runs(words, i) {
        out.push(None);
    }
    // A sandbox the analyses skip as a wrapper (`firejail --bind=HOST,GUEST CMD`): its mounts.
    for (k, w) in words[..i].iter().enumerate() {
        if let Some(p) = w.literal() {
            if matches!(
                basename(&p),
                "firejail" | "bwrap" | "proot" | "systemd-nspawn"
            ) {
                out.extend(elsewhere::mounts(basename(&p), &words[k + 1..i]));
            }
        }
    }
    let Some(program) = words.get(i).and_then(|w| w.literal()) else {
        return out;
    };
    // A multi-call binary runs its first argument's applet (`busybox tar -I CMD`).
    let applet = words.get(i + 1).and_then(|w| w.literal());
    let (prog, args) = match (basename(&program), applet) {
        ("busybox" | "toybox", Some(a)) => (basename(&a).to_string(), &words[i + 2..]),
        (p, _) => (p.to_string(), &words[i + 1..]),
    };
    out.extend(searched_path(&words[..i], &program, args));
    programs::options(&prog, args, words, &mut out);
    if let Some(xargs) = xargs_replace(&words[..i]) {
        out.extend(programs::fed_by_xargs(&prog, args, &xargs));
    }
    shells_after(args, &mut out);
    let mut seen = Vec::new();
    out.retain(|h| {
        let new = !seen.contains(h);
        if new {
            seen.push(h.clone());
        }
        new
    });
    out
}

/// [`handed_commands`] and the commands `carried_commands` reads from the program's arguments
/// (`find -exec`, a git alias, rsync's `-e`, ssh's `-o ProxyCommand=`), each given two
/// operands as its program gives them (a host and a remote command, a file): what the screen
/// of §13.3 analyses.
pub(crate) fn handed_and_carried(words: &[&Word]) -> Vec<Handed> {
    let mut out = handed_commands(words);
    let i = program_index(words);
    if let Some(prog) = words.get(i).and_then(|w| w.literal()) {
        out.extend(
            carried_commands(basename(&prog), &words[i + 1..])
                .into_iter()
                .map(|c| c.map(|c| format!("{c} {ARGUMENT} {ARGUMENT}"))),
        );
    }
    out
}

/// What an assignment word `NAME=VALUE` hands to a program, if `NAME` is one of
/// [`VARIABLES`] (or `GIT_CONFIG_VALUE_<n>`, a git configuration value: a command when it
/// begins with `!` or its key runs one, judged as a command either way).
fn variable(w: &Word, words: &[&Word]) -> Vec<Handed> {
    let text = w.squeezed();
    let Some((name, _)) = text.split_once('=') else {
        return Vec::new();
    };
    if !is_assignment(&format!("{name}=")) {
        return Vec::new();
    }
    // `NAME+=VALUE` appends to a value that may be empty: judged as the value.
    let name = name.strip_suffix('+').unwrap_or(name);
    let value = w
        .literal()
        .and_then(|l| l.split_once('=').map(|(_, v)| v.to_string()));
    let shape = if name.starts_with("GIT_CONFIG_VALUE_") {
        Shape::Text
    } else if npm_runs(name) {
        Shape::Unknown
    } else if let Some((_, s)) = VARIABLES.iter().find(|(n, _)| *n == name) {
        *s
    } else {
        return Vec::new();
    };
    let Some(v) = value else {
        return vec![None];
    };
    let v = v.trim();
    if v.is_empty() || v == "/dev/null" {
        return Vec::new();
    }
    match shape {
        Shape::Ssh => vec![Some(format!("{v} host.invalid true"))],
        Shape::File => vec![Some(format!("{v} {ARGUMENT}"))],
        Shape::Stdin => vec![pager(v)],
        Shape::Shell => vec![Some(format!("{v} -c :"))],
        Shape::Text => vec![Some(
            v.trim_start_matches(['|', '-', '!'])
                .replace("%s", ARGUMENT)
                .to_string(),
        )],
        Shape::Unknown => vec![None],
        Shape::Sourced => vec![Some(format!(". {v}"))],
        Shape::InterpreterOptions(prog) => {
            let opts: Vec<Option<String>> =
                shlex::split(v).map_or_else(|| vec![None], |ws| ws.into_iter().map(Some).collect());
            let Some(inv) = super::invocation::invocation(prog, &opts) else {
                return vec![None];
            };
            // The options as the program's own, before inline code that does nothing: the
            // files and modules they load are read where their `-I` directories say.
            let quoted: Option<Vec<String>> = opts
                .iter()
                .map(|o| o.as_deref().and_then(|o| shlex::try_quote(o).ok()))
                .map(|o| o.map(|o| o.into_owned()))
                .collect();
            let mut out = vec![quoted.map(|q| format!("{prog} {} -e 0", q.join(" ")))];
            // Code or a program in the options (`--eval`, a script) replaces the command's.
            if !matches!(inv.program, Program::Stdin | Program::NoneGiven) {
                out.push(None);
            }
            out
        }
        Shape::LuaInit => vec![match v.strip_prefix('@') {
            Some(file) => shlex::try_quote(file).ok().map(|f| format!("lua {f}")),
            None => shlex::try_quote(v).ok().map(|c| format!("lua -e {c}")),
        }],
        Shape::Options(prog) => {
            let lexed = lex(v);
            let opts = words_of(&lexed);
            let mut out = Vec::new();
            programs::options(prog, &opts, words, &mut out);
            out
        }
    }
}

/// A pager command `v`, fed what its program pipes to it: a shell or interpreter there runs
/// that output (commit messages, a diff) as code, only known when it runs.
fn pager(v: &str) -> Handed {
    let first = v.split_whitespace().next().unwrap_or_default();
    let first = basename(first);
    if SHELLS.contains(&first) || is_interpreter(first) || first == "eval" {
        return None;
    }
    Some(format!(": | {v}"))
}

/// Builtins that set variables they name to text only known when they run (`read`, `printf
/// -v`, `mapfile`, `for`, `select`, `getopts`): one of [`VARIABLES`] set so hands a program
/// code only known when it runs. Builtins that run code they are handed: `trap CODE SIG`,
/// `complete -C CMD`/`compgen -C CMD`, `fc -e EDITOR`, and `enable -f LIB` (a builtin from a
/// shared object nothing here reads).
fn assigned_from_input(words: &[&Word], i: usize) -> Vec<Handed> {
    let Some(prog) = words.get(i).and_then(|w| w.literal()) else {
        return Vec::new();
    };
    let args = &words[i + 1..];
    let lits: Vec<Option<String>> = args.iter().map(|w| w.literal()).collect();
    let value_after = |o: &str| {
        lits.iter()
            .position(|l| l.as_deref() == Some(o))
            .map(|k| lits.get(k + 1).cloned().flatten())
    };
    match prog.as_str() {
        "read" | "printf" | "mapfile" | "readarray" | "for" | "select" | "getopts" => {
            let named: Vec<String> = if prog == "printf" {
                value_after("-v").flatten().into_iter().collect()
            } else {
                lits.iter().flatten().cloned().collect()
            };
            let names_one = named.iter().any(|l| {
                VARIABLES.iter().any(|(n, _)| n == l) || l.starts_with("GIT_CONFIG_VALUE_")
            });
            if names_one {
                vec![None]
            } else {
                Vec::new()
            }
        }
        "trap" => {
            let code = lits.iter().find(|l| l.as_deref() != Some("--"));
            match code {
                Some(Some(c)) if !c.starts_with('-') => vec![Some(c.clone())],
                Some(None) => vec![None],
                _ => Vec::new(),
            }
        }
        "complete" | "compgen" => value_after("-C").into_iter().collect(),
        "fc" => value_after("-e")
            .into_iter()
            .map(|e| e.map(|e| format!("{e} {ARGUMENT}")))
            .collect(),
        "enable" => value_after("-f").map(|_| None).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// The program a `PATH=DIR:…` assignment before it makes the shell find (bash(1) COMMAND
/// EXECUTION): for each literal directory of the value, that directory's file of the program's
/// name, run with its arguments, so that the rules read it as a program named by its path
/// (`PATH=/tmp/x:$PATH git status` runs `/tmp/x/git` when it is there). An absolute directory
/// counts only when the file is there; a relative one always (the analyses resolve it).
fn searched_path(assignments: &[&Word], program: &str, args: &[&Word]) -> Vec<Handed> {
    if program.contains('/') {
        return Vec::new();
    }
    let mut out = Vec::new();
    for w in assignments {
        let Some(value) = w.pieces.strip_prefix(&PATH_EQ.map(Piece::Lit)[..]) else {
            continue;
        };
        // The directories whose every character is literal (`$HOME/bin` is left out).
        let dirs = value.split(|p| *p == Piece::Lit(':')).filter_map(|d| {
            d.iter()
                .map(|p| match p {
                    Piece::Lit(c) => Some(*c),
                    _ => None,
                })
                .collect::<Option<String>>()
        });
        for dir in dirs.filter(|d| !d.is_empty()) {
            let file = format!("{}/{program}", dir.trim_end_matches('/'));
            let absolute = dir.starts_with('/');
            if absolute && !std::path::Path::new(&file).is_file() {
                continue;
            }
            let rest: Option<Vec<String>> = args
                .iter()
                .map(|a| {
                    a.literal()
                        .and_then(|l| shlex::try_quote(&l).ok().map(|q| q.into_owned()))
                })
                .collect();
            let quoted = shlex::try_quote(&file).ok().map(|q| q.into_owned());
            out.push(
                quoted
                    .zip(rest)
                    .map(|(f, r)| [vec![f], r].concat().join(" ")),
            );
        }
    }
    out
}

/// `PATH=` as characters.
const PATH_EQ: [char; 5] = ['P', 'A', 'T', 'H', '='];

/// The words of a lexed text, operators left out.
fn words_of(lexed: &Lexed) -> Vec<&Word> {
    let words = lexed.tokens.iter().filter_map(|t| match t {
        Token::Word(w) => Some(w),
        _ => None,
    });
    words.collect()
}

/// The commands wrappers before the program run through a shell: the `-c` value of
/// [`DASH_C_WRAPPERS`] (alone, glued or at the end of a cluster: `script -qc CMD`), `su -s
/// SHELL`, `watch`'s command words (joined and given to `sh -c`, watch(1)), and a program
/// word that is a command line (`watch 'CMD'`, `env -S 'CMD'`, `env -SCMD`).
fn wrappers(words: &[&Word], i: usize, out: &mut Vec<Handed>) {
    for (k, w) in words[..i.min(words.len())].iter().enumerate() {
        let Some(name) = w.literal().map(|l| basename(&l).to_string()) else {
            continue;
        };
        if DASH_C_WRAPPERS.contains(&name.as_str()) {
            for (j, o) in words[k + 1..].iter().enumerate() {
                let Some(o) = o.literal() else { continue };
                let value = |glued: &str| match glued {
                    "" => words.get(k + 2 + j).map(|v| v.literal()),
                    g => Some(Some(g.to_string())),
                };
                let got = if let Some(v) = o.strip_prefix("--command=") {
                    Some(Some(v.to_string()))
                } else if o == "--command" {
                    value("")
                } else if o.starts_with('-') && !o.starts_with("--") {
                    match o[1..].find('c') {
                        Some(at) => value(&o[2 + at..]),
                        None if name == "su" || name == "runuser" => o[1..]
                            .find('s')
                            .and_then(|at| value(&o[2 + at..]))
                            .map(|s| s.map(|s| format!("{s} -c :"))),
                        None => None,
                    }
                } else {
                    None
                };
                out.extend(got);
            }
        }
        if name == "strace" {
            // Its `-o |CMD` (strace(1)); its program is the wrapped one.
            programs::options("strace", &words[k + 1..i.min(words.len())], words, out);
        }
        if name == "parallel" && i >= words.len() {
            // Commands read from its input.
            out.push(None);
        }
        if name == "watch" {
            let joined: Option<Vec<String>> = words[i..].iter().map(|w| w.literal()).collect();
            out.push(joined.map(|j| j.join(" ")));
        }
    }
    if let Some(p) = words.get(i).and_then(|w| w.literal()) {
        let split = p
            .strip_prefix("--split-string=")
            .or_else(|| p.strip_prefix("-S").filter(|r| !r.is_empty()));
        if let Some(s) = split {
            out.push(Some(s.to_string()));
        } else if p.contains([' ', '\t', '\n']) {
            // What the shell splits at (a `\r` is a character of its word, as in a CRLF
            // script: handing such a word on would hand it back unchanged, for ever).
            out.push(Some(p));
        }
    }
}

/// The replace string of an `xargs` among `wrappers` (`-I R`, `-IR`, `-i`, `--replace[=R]`):
/// the place in its command where each input line goes.
fn xargs_replace(wrappers: &[&Word]) -> Option<String> {
    let at = wrappers
        .iter()
        .position(|w| w.literal().is_some_and(|l| basename(&l) == "xargs"))?;
    let mut k = at + 1;
    while let Some(o) = wrappers.get(k).and_then(|w| w.literal()) {
        if o == "-I" {
            return wrappers.get(k + 1).and_then(|w| w.literal());
        }
        if let Some(r) = o
            .strip_prefix("-I")
            .or_else(|| o.strip_prefix("--replace="))
        {
            return Some(r.to_string());
        }
        if o == "-i" || o == "--replace" {
            return Some("{}".to_string());
        }
        k += 1;
    }
    Some(String::new())
}

/// A shell or interpreter started with code by a program none of the analyses knows
/// (`systemd-run --user bash -c CMD`, `dbus-run-session sh -c CMD`, `gdbserver - python3 -c
/// CODE`): the words from it on, as a command, which the analyses then read as they read
/// that shell or interpreter. Only when the next word is an option of code (`-c`, `-lc`,
/// `-e`): `man bash` names a shell without starting one.
fn shells_after(args: &[&Word], out: &mut Vec<Handed>) {
    for (k, w) in args.iter().enumerate() {
        let Some(name) = w.literal().map(|l| basename(&l).to_string()) else {
            continue;
        };
        let Some(next) = args.get(k + 1).and_then(|w| w.literal()) else {
            continue;
        };
        let short = next.starts_with('-') && !next.starts_with("--");
        let code = (SHELLS.contains(&name.as_str()) && short && next.contains('c'))
            || (is_interpreter(&name)
                && matches!(next.as_str(), "-c" | "-e" | "-E" | "-p" | "-r" | "--eval"));
        if code {
            let rest: Option<Vec<String>> = args[k..]
                .iter()
                .map(|w| {
                    w.literal()
                        .and_then(|l| shlex::try_quote(&l).ok().map(|q| q.into_owned()))
                })
                .collect();
            out.push(rest.map(|r| r.join(" ")));
            return;
        }
    }
}

#[cfg(test)]
mod tests;
