//! The options by which programs run a command or code they are handed (`spec/hooks.md`
//! §16.2 "Handed commands"), read as the programs read them: GNU `getopt_long` accepts any
//! unambiguous prefix of a long option (`--use-compress-prog=`) and clusters short options
//! (`-cI CMD`, `-vo ProxyCommand=…`); each source is the program's manual page, named beside
//! its reader. What [`crate::front::sinks::command::carried_commands`] already reads as written
//! (`git -c alias.x=!CMD`, `tar --to-command=CMD`, `ssh -o ProxyCommand=CMD`) is read there.

use super::{Handed, ARGUMENT};
use crate::front::protect::shell::Word;
use crate::front::protect::simple::is_assignment;
use crate::front::protect::SHELLS;
use crate::front::secrets::is_interpreter;
use crate::front::sinks::command::{awk_runs, script_text, sed_runs};

/// The commands program `prog` runs from `args` (`words`: the whole simple command, for a
/// variable `git --config-env` names).
pub(super) fn options(prog: &str, args: &[&Word], words: &[&Word], out: &mut Vec<Handed>) {
    let lits: Vec<Option<String>> = args.iter().map(|w| w.literal()).collect();
    match prog {
        "git" => super::git::git(args, &lits, words, out),
        "tar" | "bsdtar" | "gtar" => tar(&lits, out),
        "zip" => long_or_short(&lits, &["unzip-command"], "-TT", out),
        "rsync" => {
            let mut shells = Vec::new();
            cluster(&lits, 'e', "BfTM", &mut shells);
            long_or_short(&lits, &["rsh"], "", &mut shells);
            out.extend(
                shells
                    .into_iter()
                    .map(|s| s.map(|s| format!("{s} host.invalid true"))),
            );
            long_or_short(&lits, &["rsync-path"], "", out);
            out.extend(super::elsewhere::remote_paths(args));
        }
        "ssh" | "scp" | "sftp" | "slogin" => {
            ssh(prog, &lits, out);
            if matches!(prog, "ssh" | "slogin") {
                out.extend(super::elsewhere::ssh_remote_command(args));
            } else {
                out.extend(super::elsewhere::remote_paths(args));
            }
        }
        "docker" | "podman" | "nerdctl" | "bwrap" | "proot" | "systemd-nspawn" | "firejail"
        | "mount" => {
            out.extend(super::elsewhere::mounts(prog, args));
        }
        "make" | "gmake" => make(&lits, out),
        "man" => {
            long_or_short(&lits, &["pager", "html"], "-P", out);
            short_glued(&lits, "-H", out);
        }
        "less" | "more" | "most" => less(&lits, out),
        "vi" | "vim" | "nvim" | "ex" | "view" | "vimdiff" | "gvim" | "evim" => vim(&lits, out),
        "sed" | "gsed" => {
            if let Some(code) = script_text("sed", args) {
                let sandboxed = lits.iter().any(|l| l.as_deref() == Some("--sandbox"));
                if !sandboxed && code.as_deref().is_none_or(|c| sed_runs(c).is_some()) {
                    out.push(None);
                }
            }
        }
        "awk" | "gawk" | "mawk" | "nawk" => {
            if let Some(code) = script_text("awk", args) {
                match code {
                    Some(c) => awk(&c, out),
                    None => out.push(None),
                }
            }
        }
        "sqlite3" => sqlite(&lits, out),
        "strace" => {
            let mut values = Vec::new();
            long_or_short(&lits, &["output"], "-o", &mut values);
            for v in values {
                out.extend(v.map_or(Some(None), |v| {
                    v.strip_prefix(['|', '!']).map(|c| Some(c.to_string()))
                }));
            }
        }
        "gdb" => gdb(&lits, out),
        "npm" | "npx" | "pnpm" | "yarn" | "bunx" => {
            long_or_short(&lits, &["call"], "-c", out);
            let mut shells = Vec::new();
            long_or_short(&lits, &["script-shell"], "", &mut shells);
            out.extend(shells.into_iter().map(|s| s.map(|s| format!("{s} -c :"))));
        }
        "parallel" | ":::" | "::::" => parallel(prog, &lits, out),
        "tmux" => tmux(&lits, out),
        // ripgrep's `--pre COMMAND` runs for every file searched (rg(1)).
        "rg" => {
            let mut pre = Vec::new();
            long_or_short(&lits, &["pre"], "", &mut pre);
            out.extend(
                pre.into_iter()
                    .map(|p| p.map(|p| format!("{p} {ARGUMENT}"))),
            );
        }
        // cargo-watch's `-s`/`--shell CMD` and `-x`/`--exec SUBCOMMAND`, nodemon's `--exec`,
        // entr's `-s`, watchexec's command words (run through a shell by default).
        "cargo" if lits.first().and_then(|l| l.as_deref()) == Some("watch") => {
            long_or_short(&lits, &["shell"], "-s", out);
            let mut sub = Vec::new();
            long_or_short(&lits, &["exec"], "-x", &mut sub);
            out.extend(sub.into_iter().map(|c| c.map(|c| format!("cargo {c}"))));
        }
        // Programs of the local list that run a command (attack review 45): sort(1)
        // `--compress-program=PROG` (its temporary files through PROG), split(1)
        // `--filter=COMMAND` (each piece on a shell command's input), cpio(1)
        // `--rsh-command` and an archive named `[USER@]HOST:FILE` (through rsh).
        "sort" | "gsort" => long_or_short(&lits, &["compress-program"], "", out),
        "split" | "gsplit" => long_or_short(&lits, &["filter"], "", out),
        "cpio" => cpio(&lits, out),
        // A PKCS#11 or security-key provider library is code loaded into the program
        // (ssh-keygen(1) `-D`, `-w`; ssh-add(1) `-s`, `-S`): code nobody reads here.
        "ssh-keygen" | "ssh-add" => {
            let mut libs = Vec::new();
            let flags = match prog {
                "ssh-keygen" => ["-D", "-w"],
                _ => ["-s", "-S"],
            };
            for flag in flags {
                short_valued(&lits, flag, &mut libs);
            }
            out.extend(libs.into_iter().map(|_| None));
        }
        "nodemon" => long_or_short(&lits, &["exec"], "-x", out),
        "entr" => short_valued(&lits, "-s", out),
        "watchexec" => {
            let words = lits
                .iter()
                .skip_while(|l| l.as_deref() != Some("--"))
                .skip(1);
            let joined: Option<Vec<String>> = words.cloned().collect();
            match joined {
                Some(j) if !j.is_empty() => out.push(Some(j.join(" "))),
                Some(_) => out.extend(
                    lits.iter()
                        .flatten()
                        .filter(|l| l.contains(char::is_whitespace))
                        .map(|l| Some(l.clone())),
                ),
                None => out.push(None),
            }
        }
        // Options read from a file nothing here reads (curl's `-K`, wget's `--config`): what
        // it sends, and from where, is only known when it runs.
        "curl" => {
            let mut files = Vec::new();
            long_or_short(&lits, &["config"], "-K", &mut files);
            out.extend(files.into_iter().map(|_| None));
        }
        "wget" => {
            let mut files = Vec::new();
            long_or_short(&lits, &["config"], "", &mut files);
            out.extend(files.into_iter().map(|_| None));
        }
        "screen" => {
            if let Some(k) = lits.iter().position(|l| l.as_deref() == Some("stuff")) {
                out.push(lits.get(k + 1).cloned().flatten());
            }
        }
        "at" | "batch" => {
            let lists = lits
                .iter()
                .flatten()
                .any(|l| matches!(l.as_str(), "-l" | "-r" | "-d" | "-c" | "-V" | "--help"));
            if !lists {
                out.push(None);
            }
        }
        "crontab" => {
            let lists = lits
                .iter()
                .flatten()
                .any(|l| matches!(l.as_str(), "-l" | "-r"));
            if !lists {
                out.push(None);
            }
        }
        _ => {}
    }
}

/// What code a program `xargs` runs with input lines in it: a shell or interpreter whose code
/// holds the replace string (`xargs -I{} sh -c '{}'`), or one whose code or script is the
/// input itself (`xargs sh -c`, `xargs bash`): the input, only known when it runs.
pub(super) fn fed_by_xargs(prog: &str, args: &[&Word], replace: &str) -> Vec<Handed> {
    if !(SHELLS.contains(&prog) || is_interpreter(prog) || prog == "eval") {
        return Vec::new();
    }
    let lits: Vec<String> = args.iter().map(|w| w.squeezed()).collect();
    let from_input = if replace.is_empty() {
        lits.last().is_none_or(|l| l.starts_with('-'))
    } else {
        lits.iter().any(|l| l.contains(replace))
    };
    if from_input {
        vec![None]
    } else {
        Vec::new()
    }
}

/// The value of long option `--NAME[=V]` given as any prefix of 3 characters or more of one
/// of `names` (getopt_long(3)), or of short option `short` alone or glued (`-TT CMD`,
/// `-PCMD`); the next word when not glued.
pub(super) fn long_or_short(
    lits: &[Option<String>],
    names: &[&str],
    short: &str,
    out: &mut Vec<Handed>,
) {
    let mut k = 0;
    while k < lits.len() {
        let Some(l) = lits[k].as_deref() else {
            k += 1;
            continue;
        };
        let (opt, glued) = match l.split_once('=') {
            Some((o, v)) => (o, Some(v)),
            None => (l, None),
        };
        let long = opt
            .strip_prefix("--")
            .is_some_and(|o| o.len() >= 3 && names.iter().any(|n| n.starts_with(o)));
        let short_hit = !short.is_empty() && l.starts_with(short);
        if long {
            out.push(match glued {
                Some(v) => Some(v.to_string()),
                None => lits.get(k + 1).cloned().flatten(),
            });
        } else if short_hit {
            let rest = &l[short.len()..];
            out.push(if rest.is_empty() {
                lits.get(k + 1).cloned().flatten()
            } else {
                Some(rest.to_string())
            });
        }
        k += 1;
    }
}

/// The value of short option `short` given alone, the next word (`entr -s CMD`).
fn short_valued(lits: &[Option<String>], short: &str, out: &mut Vec<Handed>) {
    for (k, l) in lits.iter().enumerate() {
        if l.as_deref() == Some(short) {
            out.push(lits.get(k + 1).cloned().flatten());
        }
    }
}

/// The glued value of a short option whose value is optional (`man -Hbrowser`).
fn short_glued(lits: &[Option<String>], short: &str, out: &mut Vec<Handed>) {
    for l in lits.iter().flatten() {
        if let Some(v) = l.strip_prefix(short).filter(|v| !v.is_empty()) {
            out.push(Some(format!("{v} {ARGUMENT}")));
        }
    }
}

/// Short option `letter` inside a cluster (`-avze CMD`, `-avzeCMD`); `valued`: the letters
/// that take a value, which end the cluster. A word that is exactly `-<letter>` is left to
/// [`long_or_short`] and `carried_commands`.
fn cluster(lits: &[Option<String>], letter: char, valued: &str, out: &mut Vec<Handed>) {
    for (k, l) in lits.iter().enumerate() {
        let Some(l) = l.as_deref() else { continue };
        let Some(letters) = l.strip_prefix('-').filter(|r| !r.starts_with('-')) else {
            continue;
        };
        if letters.len() < 2 {
            continue;
        }
        for (at, c) in letters.char_indices() {
            if c == letter {
                if at == 0 {
                    break;
                }
                let rest = &letters[at + c.len_utf8()..];
                out.push(if rest.is_empty() {
                    lits.get(k + 1).cloned().flatten()
                } else {
                    Some(rest.to_string())
                });
                break;
            }
            if valued.contains(c) {
                break;
            }
        }
    }
}

/// tar(1): `-I`/`--use-compress-program`, `-F`/`--info-script`/`--new-volume-script`,
/// `--to-command`, `--rsh-command`, `--rmt-command`, `--checkpoint-action=exec=CMD`, in any
/// abbreviation, cluster (`-cIcmd`) or old-style letters (`tar cIf CMD a.tar`, whose valued
/// letters take the next words in turn).
fn tar(lits: &[Option<String>], out: &mut Vec<Handed>) {
    const LONG: &[&str] = &[
        "use-compress-program",
        "info-script",
        "new-volume-script",
        "to-command",
        "rsh-command",
        "rmt-command",
    ];
    const VALUED: &str = "bCfgHKLNTVX";
    let mut values = Vec::new();
    long_or_short(lits, LONG, "", &mut values);
    out.extend(values);
    let mut actions = Vec::new();
    long_or_short(lits, &["checkpoint-action"], "", &mut actions);
    for a in actions {
        match a {
            Some(a) => out.extend(a.strip_prefix("exec=").map(|c| Some(c.to_string()))),
            None => out.push(None),
        }
    }
    for (k, l) in lits.iter().enumerate() {
        let Some(l) = l.as_deref() else { continue };
        let old_style = k == 0 && !l.starts_with('-') && l.chars().all(|c| c.is_ascii_alphabetic());
        let Some(letters) = l
            .strip_prefix('-')
            .filter(|r| !r.starts_with('-'))
            .or(old_style.then_some(l))
        else {
            continue;
        };
        let mut next = k + 1;
        for (at, c) in letters.char_indices() {
            let command = c == 'I' || c == 'F';
            if !command && !VALUED.contains(c) {
                continue;
            }
            let rest = &letters[at + 1..];
            if !old_style && !rest.is_empty() {
                if command {
                    out.push(Some(rest.to_string()));
                }
                break;
            }
            if command {
                out.push(lits.get(next).cloned().flatten());
            }
            next += 1;
            if !old_style {
                break;
            }
        }
    }
}

/// ssh(1), scp(1), sftp(1): `-o` inside a cluster (`-vo ProxyCommand=CMD`), the options whose
/// value is a command or a library (`RemoteCommand`, `PKCS11Provider`,
/// `SecurityKeyProvider`), `-F FILE` (a configuration nobody reads here), scp's and sftp's `-S
/// PROGRAM`, sftp's `-D COMMAND`.
fn ssh(prog: &str, lits: &[Option<String>], out: &mut Vec<Handed>) {
    let mut values = Vec::new();
    cluster(lits, 'o', "BbcDEeFIiJLlmOpQRSWw", &mut values);
    for (k, l) in lits.iter().enumerate() {
        match l.as_deref() {
            Some("-o") => values.push(lits.get(k + 1).cloned().flatten()),
            Some(o) if o.starts_with("-o") && o.len() > 2 => values.push(Some(o[2..].to_string())),
            Some("-F") => {
                let f = lits.get(k + 1).cloned().flatten();
                if f.as_deref().is_none_or(|f| f != "/dev/null" && f != "none") {
                    out.push(None);
                }
            }
            Some("-S") if prog != "ssh" => out.push(
                lits.get(k + 1)
                    .cloned()
                    .flatten()
                    .map(|p| format!("{p} host.invalid")),
            ),
            Some("-D") if prog == "sftp" => out.push(lits.get(k + 1).cloned().flatten()),
            _ => {}
        }
    }
    for v in values {
        let Some(v) = v else {
            out.push(None);
            continue;
        };
        let lower = v.to_ascii_lowercase();
        for key in [
            "proxycommand",
            "localcommand",
            "knownhostscommand",
            "remotecommand",
        ] {
            if lower.starts_with(key) && lower.len() > key.len() {
                out.push(Some(
                    v[key.len()..].trim_start_matches([' ', '=']).to_string(),
                ));
            }
        }
        if lower.starts_with("pkcs11provider") || lower.starts_with("securitykeyprovider") {
            out.push(None);
        }
    }
}

/// make(1): `--eval=TEXT` (`-E TEXT`), makefile text whose recipe lines run (analysed as shell
/// text whole); a command-line variable `NAME=VALUE`, which overrides the makefile's and may be
/// a recipe's command (`$(CC)`; `SHELL` runs every recipe). A value that is not literal is
/// left alone, but for `SHELL`.
fn make(lits: &[Option<String>], out: &mut Vec<Handed>) {
    long_or_short(lits, &["eval"], "-E", out);
    for l in lits.iter().flatten() {
        if let Some((name, value)) = l.split_once('=') {
            if is_assignment(l) && !value.is_empty() {
                out.push(Some(match name {
                    "SHELL" => format!("{value} -c :"),
                    _ => value.to_string(),
                }));
            }
        }
    }
}

/// less(1) OPTIONS `+cmd` (a command run at start) with its shell escape `!CMD` or pipe
/// `|mCMD`.
fn less(lits: &[Option<String>], out: &mut Vec<Handed>) {
    for l in lits.iter().flatten() {
        let Some(cmd) = l.strip_prefix('+') else {
            continue;
        };
        if let Some(at) = cmd.find('!') {
            out.push(Some(cmd[at + 1..].to_string()));
        } else if let Some(at) = cmd.find('|') {
            out.push(Some(cmd[at + 1..].chars().skip(1).collect()));
        }
    }
}

/// vim(1): the Ex commands of `-c CMD`, `+CMD` and `--cmd CMD`, and the files of commands of
/// `-S`, `-s` and `-u` (nobody reads them here). An Ex command with a `!` runs the rest as a
/// shell command; a line number, a search or a plain setting runs nothing; any other (`:call
/// system()`, `:py3`, `:norm`) may run anything.
fn vim(lits: &[Option<String>], out: &mut Vec<Handed>) {
    for (k, l) in lits.iter().enumerate() {
        let Some(l) = l.as_deref() else { continue };
        let cmd = match l {
            "-c" | "--cmd" => lits.get(k + 1).cloned().flatten(),
            "-S" | "-s" | "-u" | "-U" => {
                let f = lits.get(k + 1).cloned().flatten();
                if f.is_none_or(|f| !matches!(f.as_str(), "NONE" | "NORC" | "DEFAULTS")) {
                    out.push(None);
                }
                continue;
            }
            _ => match l.strip_prefix('+') {
                Some(c) => Some(c.to_string()),
                None => continue,
            },
        };
        let Some(cmd) = cmd else {
            out.push(None);
            continue;
        };
        let c = cmd.trim().trim_start_matches(':');
        let first = c.split_whitespace().next().unwrap_or_default();
        let plain = c.is_empty()
            || c.chars().all(|ch| ch.is_ascii_digit())
            || c.starts_with(['/', '?'])
            || (matches!(
                first.trim_end_matches('!'),
                "set"
                    | "se"
                    | "setl"
                    | "setlocal"
                    | "q"
                    | "qa"
                    | "wq"
                    | "wqa"
                    | "x"
                    | "xa"
                    | "w"
                    | "wa"
                    | "up"
                    | "update"
                    | "syntax"
                    | "filetype"
                    | "e"
                    | "edit"
            ) && !c.contains('|')
                && !c[first.len()..].contains('!'));
        if plain {
            continue;
        }
        match c.find('!') {
            Some(at) => out.push(Some(c[at + 1..].to_string())),
            None => out.push(None),
        }
    }
}

/// awk program `code` that runs commands (`system()`, pipes: [`awk_runs`]): each string
/// literal of it is a command it may run; a command built otherwise (`system($0)`, `print |
/// cmd`, `"a" f | getline`) is only known when it runs.
fn awk(code: &str, out: &mut Vec<Handed>) {
    if awk_runs(code).is_none() {
        return;
    }
    let chars: Vec<char> = code.chars().collect();
    let mut literals = Vec::new();
    let mut built = false;
    let mut k = 0;
    // Whether the literal or expression at `k` (after blanks) is a whole string literal
    // followed by `end` (or `|`/`;`/`}`/a new line when `end` is None).
    let whole_literal = |mut k: usize, end: Option<char>| -> bool {
        while chars.get(k).is_some_and(|c| c.is_whitespace()) {
            k += 1;
        }
        if chars.get(k) != Some(&'"') {
            return false;
        }
        k += 1;
        while let Some(c) = chars.get(k) {
            match c {
                '\\' => k += 2,
                '"' => break,
                _ => k += 1,
            }
        }
        k += 1;
        while chars.get(k).is_some_and(|c| *c == ' ' || *c == '\t') {
            k += 1;
        }
        match (chars.get(k), end) {
            (Some(c), Some(e)) => *c == e,
            (c, None) => c.is_none_or(|c| matches!(c, ';' | '}' | '\n' | ')' | '|')),
            (None, Some(_)) => false,
        }
    };
    while k < chars.len() {
        match chars[k] {
            '"' => {
                let mut s = String::new();
                k += 1;
                while k < chars.len() && chars[k] != '"' {
                    if chars[k] == '\\' {
                        k += 1;
                    }
                    s.extend(chars.get(k));
                    k += 1;
                }
                literals.push(s);
            }
            '(' if chars[..k]
                .iter()
                .collect::<String>()
                .trim_end()
                .ends_with("system") =>
            {
                built |= !whole_literal(k + 1, Some(')'));
            }
            '|' if chars.get(k + 1) != Some(&'|')
                && k.checked_sub(1).is_none_or(|p| chars[p] != '|') =>
            {
                let after: String = chars[k + 1..].iter().collect();
                let after = after.trim_start_matches('&').trim_start();
                if after.starts_with("getline") {
                    let before: String = chars[..k].iter().collect();
                    built |= !before.trim_end().ends_with('"');
                } else {
                    let skip = usize::from(chars.get(k + 1) == Some(&'&'));
                    built |= !whole_literal(k + 1 + skip, None);
                }
            }
            _ => {}
        }
        k += 1;
    }
    out.extend(literals.into_iter().map(Some));
    if built {
        out.push(None);
    }
}

/// sqlite3(1) dot-commands in its arguments or `-cmd` values: `.shell CMD`, `.system CMD`, an
/// output or input `|CMD` (`.once`, `.output`, `.import`, `.read`); `.read FILE`, `.load`,
/// `-init FILE` and SQL's `edit()` (runs an editor) run code nobody reads here.
fn sqlite(lits: &[Option<String>], out: &mut Vec<Handed>) {
    for l in lits.iter().flatten() {
        if l == "-init" || l.contains("edit(") {
            out.push(None);
            continue;
        }
        for line in l.lines().map(str::trim) {
            let mut parts = line.splitn(2, char::is_whitespace);
            let dot = parts.next().unwrap_or_default();
            let rest = parts.next().unwrap_or_default().trim();
            let rest = rest.trim_matches(['\'', '"']);
            match dot {
                ".shell" | ".system" => out.push(Some(rest.to_string())),
                ".once" | ".output" | ".import" | ".read" | ".excel" if rest.starts_with('|') => {
                    out.push(Some(rest[1..].to_string()))
                }
                ".read" | ".load" => out.push(None),
                _ => {}
            }
        }
    }
}

/// gdb(1): `-ex`/`-iex`/`--eval-command`/`--init-eval-command` commands (`shell CMD`, `!CMD`
/// run a shell command; `python`, `pipe`, `source`, `guile`, `compile` any code) and the
/// command files of `-x`, `-ix`, `--command`, `--init-command`.
fn gdb(lits: &[Option<String>], out: &mut Vec<Handed>) {
    let mut cmds = Vec::new();
    long_or_short(lits, &["eval-command", "init-eval-command"], "", &mut cmds);
    for (k, l) in lits.iter().enumerate() {
        match l.as_deref() {
            Some("-ex" | "-iex" | "-eval-command") => cmds.push(lits.get(k + 1).cloned().flatten()),
            Some("-x" | "-ix" | "--command" | "--init-command" | "-command") => out.push(None),
            Some(o) if o.starts_with("--command=") || o.starts_with("--init-command=") => {
                out.push(None)
            }
            _ => {}
        }
    }
    for c in cmds {
        let Some(c) = c else {
            out.push(None);
            continue;
        };
        let c = c.trim();
        if let Some(cmd) = c.strip_prefix("shell ").or_else(|| c.strip_prefix('!')) {
            out.push(Some(cmd.to_string()));
        } else if [
            "python", "py ", "pi", "pipe", "|", "source", "guile", "gu ", "compile",
        ]
        .iter()
        .any(|p| c.starts_with(p))
        {
            out.push(None);
        }
    }
}

/// GNU parallel(1) with no command of its own (the program word is its `:::`): each argument
/// is a command; `::::` reads them from files, only known when it runs. (With no program word
/// at all it reads them from its input: `wrappers` in the module above.)
fn parallel(prog: &str, lits: &[Option<String>], out: &mut Vec<Handed>) {
    match prog {
        ":::" => {
            for l in lits.iter().take_while(|l| l.as_deref() != Some(":::")) {
                out.push(l.clone());
            }
        }
        _ => out.push(None),
    }
}

/// tmux(1): a shell command given as one argument (`new-session 'CMD'`, `run-shell`, `if-shell`,
/// `split-window`, `respawn-pane`, `pipe-pane`), and keys `send-keys` types into a shell.
fn tmux(lits: &[Option<String>], out: &mut Vec<Handed>) {
    let sends = lits
        .iter()
        .position(|l| matches!(l.as_deref(), Some("send-keys" | "send")));
    for (k, l) in lits.iter().enumerate() {
        match l {
            Some(l) if l.contains(char::is_whitespace) => out.push(Some(l.clone())),
            Some(l) if sends.is_some_and(|s| k > s) && !l.starts_with('-') => {
                out.push(Some(l.clone()))
            }
            None => out.push(None),
            _ => {}
        }
    }
}

/// cpio(1): `--rsh-command=COMMAND`, and an archive (`-F`/`-O`/`-I`, `--file`) named
/// `[USER@]HOST:FILE`, which cpio opens through `rsh HOST` unless `--force-local`.
fn cpio(lits: &[Option<String>], out: &mut Vec<Handed>) {
    long_or_short(lits, &["rsh-command"], "", out);
    if lits.iter().any(|l| l.as_deref() == Some("--force-local")) {
        return;
    }
    let mut archives = Vec::new();
    for short in ["-F", "-O", "-I"] {
        long_or_short(lits, &["file"], short, &mut archives);
    }
    for a in archives {
        match a {
            Some(a) => {
                if let Some((host, _)) = a.split_once(':').filter(|(h, _)| !h.contains('/')) {
                    out.push(Some(format!("rsh {host} /etc/rmt")));
                }
            }
            None => out.push(None),
        }
    }
}
