//! Programs a shell reads from its standard input when the command shows them (`spec/hooks.md`
//! §13.3, attack review 43): `echo 'CMD' | sh`, `printf 'CMD' | bash`, and ssh without a remote
//! command, whose login shell on a host that may be this machine reads its standard input in
//! the home directory (`echo 'CMD' | ssh localhost`, `ssh localhost <<< 'CMD'`, `ssh localhost <
//! x.sh`). The text is analysed as the command it is. Before, in a session that had read nothing,
//! `echo 'cat ../../guard/*.key' | sh`, `echo 'cat ../guard/*.key' | ssh localhost` and `ssh
//! localhost < tools/x.sh` printed the signing key, exit 0
//! (`tests/commands_run_elsewhere.rs::a_program_piped_into_a_shell_is_screened`).

use super::shell::Lexed;
use super::simple::{simple_commands, Simple};
use super::terminal::{arguments, reads_program};
use super::SHELLS;
use std::path::Path;

/// The command texts shells of `lexed` read from a pipe of `echo`/`printf` with literal
/// arguments, a here-string, or (for ssh) a redirected file; run in the home directory for ssh
/// (`cd && …`). A writer with arguments only known when it runs feeds code only known when it
/// runs: `None`, which the screen refuses.
pub(super) fn fed_programs(lexed: &Lexed, cwd: Option<&Path>) -> Vec<Option<String>> {
    let all = simple_commands(lexed);
    let mut out = Vec::new();
    let mut fed: Option<Option<String>> = None;
    for s in &all {
        let args = arguments(s);
        let name = s.program_name().unwrap_or_default();
        let remote = name == "ssh" && reads_program("ssh", &args);
        let shell = SHELLS.contains(&name.as_str()) && reads_program(&name, &args);
        if remote || shell {
            let mut texts: Vec<Option<String>> = Vec::new();
            if s.piped {
                if let Some(t) = fed.clone() {
                    texts.push(t);
                }
            }
            texts.extend(
                s.here
                    .iter()
                    .filter(|_| here_string(s))
                    .map(|w| w.literal()),
            );
            if remote {
                for (r, w) in &s.redirects {
                    if *r == super::shell::Redirect::Reads {
                        texts.push(w.literal().and_then(|f| {
                            let p = cwd.map_or_else(|| Path::new(&f).to_path_buf(), |c| c.join(&f));
                            shlex::try_quote(&p.to_string_lossy())
                                .ok()
                                .map(|q| format!("sh {q}"))
                        }));
                    }
                }
            }
            out.extend(
                texts
                    .into_iter()
                    .map(|t| t.map(|t| if remote { format!("cd && {t}") } else { t })),
            );
        }
        fed = s.pipes.then(|| written(s, &name)).flatten();
    }
    out
}

/// Whether `s`'s here-document words are a here-string's (`<<< WORD`), not a delimiter: the
/// lexer keeps the body of a here-document apart, and analyses it as a command itself.
fn here_string(s: &Simple) -> bool {
    s.here.len() == 1
        && s.here[0]
            .literal()
            .is_some_and(|l| l.contains(' ') || l.contains('/'))
}

/// What `echo`/`printf` writes to the pipe: their arguments joined (printf's format among
/// them), `Some(None)` when one is only known when it runs; `None` for another program.
fn written(s: &Simple, name: &str) -> Option<Option<String>> {
    if name != "echo" && name != "printf" {
        return None;
    }
    let words = s.words.get(s.program() + 1..).unwrap_or_default();
    let lits: Option<Vec<String>> = words.iter().map(|w| w.literal()).collect();
    Some(lits.map(|l| {
        l.into_iter()
            .filter(|a| !(name == "echo" && matches!(a.as_str(), "-n" | "-e" | "-E" | "-ne")))
            .collect::<Vec<_>>()
            .join(" ")
            .replace("\\n", "\n")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::protect::shell::lex;

    fn fed(c: &str) -> Vec<Option<String>> {
        fed_programs(&lex(c), Some(Path::new("/p")))
    }

    #[test]
    fn programs_piped_into_a_shell_or_ssh() {
        assert_eq!(fed("echo 'cat x' | sh"), vec![Some("cat x".to_string())]);
        assert_eq!(
            fed("printf 'cd d\\nrm y' | bash"),
            vec![Some("cd d\nrm y".to_string())]
        );
        assert_eq!(fed("echo \"$X\" | sh"), vec![None]);
        assert_eq!(
            fed("echo 'cat x' | ssh localhost"),
            vec![Some("cd && cat x".to_string())]
        );
        assert_eq!(
            fed("ssh localhost < t/x.sh"),
            vec![Some("cd && sh /p/t/x.sh".to_string())]
        );
        assert!(fed("echo hi | wc -l").is_empty());
        assert!(fed("cat f | sh -c 'wc -l'").is_empty());
        assert!(fed("ssh h uptime < /dev/null").is_empty());
    }
}
