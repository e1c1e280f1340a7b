//! Shells and interpreters that read their program from the terminal (`spec/hooks.md` §13.3).
//!
//! Codex starts a command with `exec_command`, whose PreToolUse event (`Bash`) carries the
//! command only, and types into it later with `write_stdin`, which fires no hook at all
//! (`codex-rs/core/src/tools/handlers/unified_exec/write_stdin.rs`, openai/codex:
//! "non-empty writes continue a command that already ran PreToolUse as Bash"). A `bash`,
//! `python3` or `cat | sh` started that way runs whatever is typed into it, and no screen,
//! secrecy rule or gate sees a word of it: its program is only known when it runs, as
//! `eval "$X"` is. The screen therefore refuses such a command for every agent (Claude Code's
//! `Bash` gives a command no terminal, so nothing it runs needs one).

use super::invocation::{invocation, Program};
use super::shell::joined;
use super::shell::{Lexed, Redirect};
use super::simple::{simple_commands, Simple};

/// The text of the first simple command of `lexed` that is a shell or interpreter reading its
/// program from the terminal: its standard input is not redirected from a file or
/// here-document and no pipe feeds it, or the pipe's writer only copies the terminal (`cat`,
/// `tee`, `dd` without `if=`); and its arguments give no program (no script, no `-c`, `-e`,
/// `-m`…, [`invocation`]). Arguments that are not literal count as giving one (the other
/// rules judge them).
pub(super) fn fed_by_the_terminal(lexed: &Lexed) -> Option<String> {
    let mut passes_terminal = false;
    for s in simple_commands(lexed) {
        let redirected =
            !s.here.is_empty() || s.redirects.iter().any(|(r, _)| *r == Redirect::Reads);
        let terminal = !redirected && (!s.piped || passes_terminal);
        let args = arguments(&s);
        let name = s.program_name();
        let reads = name.as_deref().is_some_and(|n| reads_program(n, &args)) || root_shell(&s);
        if terminal && reads {
            return Some(joined(s.words.iter().copied()));
        }
        passes_terminal = terminal && s.pipes && name.as_deref().is_some_and(|n| copies(n, &args));
    }
    None
}

/// The program's arguments, `None` where not literal.
pub(super) fn arguments(s: &Simple) -> Vec<Option<String>> {
    s.words
        .get(s.program() + 1..)
        .unwrap_or_default()
        .iter()
        .map(|w| w.literal())
        .collect()
}

/// Whether `prog args…` reads its program from its standard input, or the terminal after
/// its program (`python3 -i x.py`), as the program reads its options ([`invocation`]).
pub(super) fn reads_program(prog: &str, args: &[Option<String>]) -> bool {
    if prog == "ssh" {
        return remote_shell(args);
    }
    invocation(prog, args).is_some_and(|inv| match inv.program {
        Program::Stdin => true,
        Program::Unknown | Program::NoneGiven => false,
        Program::Script(_) | Program::Inline(_) | Program::Module(_) => inv.interactive,
    })
}

/// `sudo -i`, `sudo -s`, `doas -s` with no program, `su [USER]` without `-c` (after any
/// wrappers: `env su me`): a shell, of root or another user, reading the terminal.
fn root_shell(s: &Simple) -> bool {
    let words: Vec<String> = s.words.iter().filter_map(|w| w.literal()).collect();
    if words.len() < s.words.len() {
        return false;
    }
    let short_with = |ws: &[String], c: char| ws.iter().any(|w| is_short(w) && w.contains(c));
    if let Some(at) = words
        .iter()
        .position(|w| super::simple::basename(w) == "su")
    {
        let rest = &words[at + 1..];
        let operands = rest.iter().filter(|w| !w.starts_with('-')).count();
        return operands <= 1
            && !short_with(rest, 'c')
            && !rest.iter().any(|w| w.starts_with("--command"));
    }
    s.program() >= s.words.len()
        && words
            .iter()
            .any(|w| matches!(super::simple::basename(w), "sudo" | "doas"))
        && (short_with(&words, 'i')
            || short_with(&words, 's')
            || words.iter().any(|w| w == "--login" || w == "--shell"))
}

/// `ssh` given a host and no remote command: an interactive shell there (`ssh localhost` is
/// one here).
fn remote_shell(args: &[Option<String>]) -> bool {
    let mut words = 0;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let Some(a) = a else { return false };
        if is_short(a) {
            // Options that take a value, alone (`-p 22`) or joined (`-p22`).
            let takes = a.len() == 2 && "BbcDEeFIiJLlmOopQRSWw".contains(&a[1..]);
            i += if takes { 2 } else { 1 };
            continue;
        }
        words += 1;
        i += 1;
    }
    words <= 1
}

/// Whether `a` is a cluster of short options (`-il`), not a long option.
fn is_short(a: &str) -> bool {
    a.len() > 1 && a.starts_with('-') && !a.starts_with("--")
}

/// Whether `prog args…` copies its standard input to its output: `cat`, `head`, `tail` with
/// nothing but options or `-`; `tee`; `dd` without `if=`.
fn copies(prog: &str, args: &[Option<String>]) -> bool {
    let options_only = args
        .iter()
        .all(|a| a.as_deref().is_some_and(|a| a.starts_with('-')));
    match prog {
        "cat" | "head" | "tail" => options_only,
        "tee" => true,
        "dd" => !args
            .iter()
            .any(|a| a.as_deref().is_none_or(|a| a.starts_with("if="))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::protect::shell::lex;

    #[test]
    fn programs_read_from_the_terminal_and_programs_given() {
        for c in [
            "bash",
            "bash -i",
            "sh -s x",
            "env bash",
            "cd d && python3",
            "python3 -W ignore",
            "cat | sh",
            "cat -u | tee log | python3 -",
            "busybox sh",
            "node",
            "python3 -i tools/setup.py",
            "su",
            "su -",
            "sudo -i",
            "sudo -s",
            "env su me",
            "ssh localhost",
            "ssh -p 2222 me@host",
        ] {
            assert!(fed_by_the_terminal(&lex(c)).is_some(), "{c}");
        }
        for c in [
            "bash x.sh",
            "bash -c 'ls'",
            "bash -lc 'ls'",
            "python3 -c 1",
            "python3 -m pytest",
            "python3 a.py",
            "node -e 1",
            "perl -ne 'print' f",
            "python3 <<'E'\n1\nE",
            "bash < x.sh",
            "echo ls | bash",
            "cat x | sh",
            "bash $F",
            "cargo test",
            "sudo -u me cargo test",
            "su -c 'ls' me",
            "ssh host uptime",
            "ssh -i key host 'git pull'",
            "perl -i.bak -pe 's/a/b/' f",
        ] {
            assert_eq!(fed_by_the_terminal(&lex(c)), None, "{c}");
        }
    }
}
