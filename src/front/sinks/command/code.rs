//! Code a command carries for an interpreter or another program to run (`spec/hooks.md` §17):
//! inline code of interpreters, awk and sed programs, and the commands that `find -exec`, git's
//! configuration, tar, ssh, rsync and `env -S` run.

use super::{AWK_VALUE_OPTIONS, SED_VALUE_OPTIONS};
use crate::front::protect::shell::Word;

/// Calls by which interpreter code runs code or commands it builds (`exec(`, `os.system`,
/// `child_process`…): inline code that makes them runs data as code, whatever its words.
const RUNS_COMMANDS: &[&str] = &[
    "exec(",
    "eval(",
    "compile(",
    "__import__(",
    "b64decode",
    "fromhex",
    "unhexlify",
    "os.system",
    "os.popen",
    "subprocess",
    "pty.spawn",
    "child_process",
    "execSync",
    "spawnSync",
    "Function(",
    "system(",
    "popen(",
    "Deno.Command",
    "Deno.run",
    "shell_exec",
    "passthru",
    "proc_open",
    "pack(",
];

/// The program text of awk or sed command `prog`: the value of `-e`/`--expression` (sed) or the
/// first operand that is not an option or an option's value. `Some(None)`: a program only
/// known when it runs (`-f FILE`, an expansion); `None`: none given.
pub(crate) fn script_text(prog: &str, args: &[&Word]) -> Option<Option<String>> {
    let values = if prog == "sed" {
        SED_VALUE_OPTIONS
    } else {
        AWK_VALUE_OPTIONS
    };
    let mut k = 0;
    while k < args.len() {
        let w = args[k];
        let Some(l) = w.literal() else {
            return Some(None);
        };
        if l == "-e" || l == "--expression" || l == "--source" {
            return Some(args.get(k + 1).and_then(|v| v.literal()));
        }
        if let Some(code) = l
            .strip_prefix("--expression=")
            .or_else(|| l.strip_prefix("--source="))
        {
            return Some(Some(code.to_string()));
        }
        if let Some(code) = l.strip_prefix("-e").filter(|c| !c.is_empty()) {
            return Some(Some(code.to_string()));
        }
        // A program from a file (`-f FILE`, gawk's `-E FILE`): not known here.
        if l == "-f" || l == "--file" || l.starts_with("--file=") || (prog != "sed" && l == "-E") {
            return Some(None);
        }
        if l.starts_with('-') && l.len() > 1 {
            k += if values.contains(&l.as_str()) { 2 } else { 1 };
            continue;
        }
        return Some(Some(l));
    }
    None
}

/// The first way awk program `code` runs commands, if any: `system()`, a pipe to or from a
/// command (`print | "sh"`, `"cmd" | getline`, `|&`).
pub(crate) fn awk_runs(code: &str) -> Option<&'static str> {
    let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    ["system(", "getline", "|&", "|\""]
        .into_iter()
        .find(|m| squeezed.contains(m))
        .or_else(|| print_pipes(code).then_some("print | command"))
}

/// Whether awk `code` pipes output to a command other than through a quoted name
/// (`print $0 | cmd`).
fn print_pipes(code: &str) -> bool {
    code.split(['{', '}', ';', '\n'])
        .any(|st| st.find("print").is_some_and(|p| st[p..].contains('|')))
}

/// The files awk program `code` writes with `>` or `>>` after a `print`/`printf`: a quoted name
/// as `Some`, anything else as `None` (any path).
pub(super) fn awk_writes(code: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for st in code.split(['{', '}', ';', '\n']) {
        // `print` anywhere in the statement (`if (x) print … > "f"`, `while (…) print …`).
        let Some(p) = st.find("print") else {
            continue;
        };
        let st = &st[p..];
        if let Some(at) = st.find('>') {
            let rest = st[at..].trim_start_matches('>').trim_start();
            out.push(
                rest.strip_prefix('"')
                    .and_then(|r| r.split_once('"'))
                    .map(|(name, _)| name.to_string()),
            );
        }
    }
    out
}

/// The commands of sed script `code`, trimmed (split at `;` and new lines).
fn sed_commands(code: &str) -> impl Iterator<Item = &str> {
    code.split([';', '\n'])
        .map(|c| {
            c.trim()
                .trim_start_matches('{')
                .trim_end_matches('}')
                .trim()
        })
        .filter(|c| !c.is_empty())
}

/// The command after a sed command's address (`1,5`, `/x/`, `$`), if it can be told.
fn sed_command(c: &str) -> &str {
    let mut rest = c;
    loop {
        let t = rest.trim_start_matches(|ch: char| {
            ch.is_ascii_digit() || matches!(ch, ',' | '$' | '!' | ' ' | '~' | '+')
        });
        // An address `/RE/` or `\cREc` (any delimiter c), then maybe a block's `{`.
        let (delim, r) = if let Some(r) = t.strip_prefix('/') {
            ('/', r)
        } else if let Some(r) = t.strip_prefix('\\') {
            let mut cs = r.chars();
            match cs.next() {
                Some(d) => (d, cs.as_str()),
                None => return "",
            }
        } else {
            return t.trim_start_matches(['{', ' ']);
        };
        match r.split_once(delim) {
            Some((_, after)) => rest = after.trim_start_matches(['I', 'M']),
            None => return "",
        }
    }
}

/// The first way sed script `code` runs commands, if any: the `e` command, or the `e` flag of
/// a substitution.
pub(crate) fn sed_runs(code: &str) -> Option<&'static str> {
    sed_commands(code).find_map(|c| {
        let cmd = sed_command(c);
        if cmd == "e" || cmd.starts_with("e ") {
            return Some("e");
        }
        substitution_flags(cmd)
            .is_some_and(|f| f.contains('e'))
            .then_some("s///e")
    })
}

/// The files sed script `code` writes: the `w` and `W` commands and the `w` flag of a
/// substitution (the name runs to the end of the command).
pub(super) fn sed_writes(code: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for c in sed_commands(code) {
        let cmd = sed_command(c);
        // `w FILE`, and GNU sed's `wFILE`: no other command starts with `w` or `W`.
        let name = if let Some(n) = cmd.strip_prefix('w').or_else(|| cmd.strip_prefix('W')) {
            Some(n.trim().to_string())
        } else {
            substitution_flags(cmd)
                .and_then(|f| f.find('w').map(|at| f[at + 1..].trim().to_string()))
        };
        if let Some(n) = name {
            out.push((!n.is_empty() && n != "/dev/stdout" && n != "/dev/stderr").then_some(n));
        }
    }
    out
}

/// The flags of a substitution command `s<d>…<d>…<d>FLAGS`, if `cmd` is one.
fn substitution_flags(cmd: &str) -> Option<&str> {
    let mut chars = cmd.strip_prefix('s')?.char_indices();
    let (_, d) = chars.next()?;
    if d.is_alphanumeric() || d.is_whitespace() || d == '\\' {
        return None;
    }
    let mut seen = 0;
    let mut escaped = false;
    for (i, ch) in chars {
        if escaped {
            escaped = false;
        } else if ch == '\\' {
            escaped = true;
        } else if ch == d {
            seen += 1;
            if seen == 2 {
                return Some(&cmd[1 + d.len_utf8() + i..]);
            }
        }
    }
    None
}

/// Ways of running a command that need no parenthesis (perl's and ruby's `system $_`,
/// `exec $_`, backticks and `qx`, `%x`; Lua's `os.execute`, `io.popen`), looked for as written.
const RUNS_COMMANDS_WORDS: &[&str] = &[
    "system ",
    "exec ",
    "qx",
    "`",
    "%x",
    "os.execute",
    "io.popen",
    "IO.popen",
    "Popen",
    "spawn",
    "Runtime.getRuntime",
    "exec.Command",
];

/// The first call of [`RUNS_COMMANDS`] in `code` (white space removed, so `system (` is
/// `system(`), or of [`RUNS_COMMANDS_WORDS`] as written, if any.
pub(super) fn runs_commands(code: &str) -> Option<&'static str> {
    let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    RUNS_COMMANDS
        .iter()
        .copied()
        .find(|m| squeezed.contains(m))
        .or_else(|| {
            RUNS_COMMANDS_WORDS
                .iter()
                .copied()
                .find(|m| code.contains(m))
        })
}

/// `env`'s split string, if `w` is one: `-SCMD`, `--split-string=CMD` (the value of a separate
/// `-S` is the program word itself, `program_index`).
pub(super) fn split_string(w: &str) -> Option<String> {
    w.strip_prefix("--split-string=")
        .or_else(|| w.strip_prefix("-S").filter(|r| !r.is_empty()))
        .map(str::to_string)
}

/// The commands `prog` runs from its arguments, `None` for one only known when it runs:
/// `find … -exec|-execdir|-ok|-okdir CMD… ;|+`, git's configuration values that are commands
/// (`-c alias.x=!CMD`, `core.pager`, `core.fsmonitor`, `core.sshCommand`, `core.editor`, …),
/// tar's `--checkpoint-action=exec=CMD`, `--to-command=CMD`, `--use-compress-program=CMD`
/// (`-I CMD`), ssh's `-o ProxyCommand=CMD` / `LocalCommand=CMD`, rsync's `-e CMD`, `make -f -`.
pub(crate) fn carried_commands(prog: &str, args: &[&Word]) -> Vec<Option<String>> {
    let lits: Vec<Option<String>> = args.iter().map(|w| w.literal()).collect();
    let mut out = Vec::new();
    let value_of = |k: usize| lits.get(k + 1).cloned().flatten();
    match prog {
        "find" => {
            let mut k = 0;
            while k < lits.len() {
                if matches!(
                    lits[k].as_deref(),
                    Some("-exec" | "-execdir" | "-ok" | "-okdir")
                ) {
                    let mut words = Vec::new();
                    let mut unknown = false;
                    k += 1;
                    while k < lits.len() && !matches!(lits[k].as_deref(), Some(";" | "+")) {
                        match &lits[k] {
                            Some(w) => words.push(
                                shlex::try_quote(w)
                                    .map_or_else(|_| "UNQUOTABLE".to_string(), |q| q.into_owned()),
                            ),
                            None => unknown = true,
                        }
                        k += 1;
                    }
                    out.push((!unknown).then(|| words.join(" ")));
                }
                k += 1;
            }
        }
        "git" => {
            for (k, l) in lits.iter().enumerate() {
                if l.as_deref() != Some("-c") {
                    continue;
                }
                let Some(kv) = value_of(k) else {
                    out.push(None);
                    continue;
                };
                let Some((key, value)) = kv.split_once('=') else {
                    continue;
                };
                let key = key.to_ascii_lowercase();
                let command_key = matches!(
                    key.as_str(),
                    "core.pager"
                        | "core.fsmonitor"
                        | "core.sshcommand"
                        | "core.editor"
                        | "sequence.editor"
                        | "diff.external"
                        | "gpg.program"
                        | "core.askpass"
                        | "credential.helper"
                        | "uploadpack.packobjectshook"
                ) || key.starts_with("pager.")
                    || key.ends_with(".textconv")
                    || key.ends_with(".command")
                    || key.ends_with(".cmd")
                    || key.ends_with(".clean")
                    || key.ends_with(".smudge")
                    || key.ends_with(".process");
                if let Some(cmd) = value.strip_prefix('!') {
                    out.push(Some(cmd.to_string()));
                } else if command_key {
                    out.push(Some(value.to_string()));
                }
            }
        }
        "tar" | "bsdtar" => {
            for (k, l) in lits.iter().enumerate() {
                let Some(l) = l.as_deref() else { continue };
                if let Some(v) = l.strip_prefix("--checkpoint-action=") {
                    if let Some(cmd) = v.strip_prefix("exec=") {
                        out.push(Some(cmd.to_string()));
                    }
                } else if let Some(cmd) = [
                    "--to-command=",
                    "--use-compress-program=",
                    "--rsh-command=",
                    "--info-script=",
                    "--new-volume-script=",
                ]
                .iter()
                .find_map(|p| l.strip_prefix(p))
                {
                    out.push(Some(cmd.to_string()));
                } else if matches!(l, "-I" | "--to-command" | "--use-compress-program" | "-F") {
                    out.push(value_of(k));
                }
            }
        }
        "ssh" | "scp" | "sftp" | "rsync" => {
            for (k, l) in lits.iter().enumerate() {
                let Some(l) = l.as_deref() else { continue };
                let opt = match l {
                    "-o" => value_of(k),
                    x if x.starts_with("-o") && x.len() > 2 => Some(x[2..].to_string()),
                    "-e" | "--rsh" if prog == "rsync" => {
                        out.push(value_of(k));
                        continue;
                    }
                    _ => continue,
                };
                if let Some(o) = opt {
                    for key in ["proxycommand", "localcommand", "knownhostscommand"] {
                        if o.len() > key.len() && o[..key.len()].eq_ignore_ascii_case(key) {
                            let v = o[key.len()..].trim_start_matches([' ', '=']);
                            out.push(Some(v.to_string()));
                        }
                    }
                }
            }
        }
        "make" | "gmake" => {
            for (k, l) in lits.iter().enumerate() {
                if matches!(l.as_deref(), Some("-f" | "--file" | "--makefile"))
                    && value_of(k).is_none_or(|v| v == "-" || v == "/dev/stdin")
                {
                    out.push(None);
                }
            }
        }
        _ => {}
    }
    out
}
