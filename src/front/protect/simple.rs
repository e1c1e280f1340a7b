//! The simple commands of a lexed shell command (POSIX *Shell Command Language* §2.9.1): the
//! words between control operators, the files they redirect to, whether a pipe feeds them,
//! and which word is the program once assignments and wrappers (`sudo`, `env`, `xargs`…) are
//! skipped. Shared by the analyses that look at what a command does (`spec/hooks.md` §16.2,
//! §17); like the lexer it never rejects input.

use super::runners::{is_runner, runs, Runs};
use super::shell::{Lexed, Operator, Piece, Redirect, Token, Word};
use super::WRAPPERS;

/// One simple command of a lexed command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Simple<'l> {
    /// Its words, in order (assignments and wrappers included), without redirections.
    pub words: Vec<&'l Word>,
    /// The files it redirects to or from.
    pub redirects: Vec<(Redirect, &'l Word)>,
    /// The words after a here-document or here-string operator (the delimiter, or the string).
    pub here: Vec<&'l Word>,
    /// Whether a pipe feeds its standard input (`… | this`).
    pub piped: bool,
    /// Whether it feeds the next command through a pipe (`this | …`).
    pub pipes: bool,
    /// The operator after it (`None`: it ends the text).
    pub(crate) ends: Option<Operator>,
}

impl Simple<'_> {
    /// The index in [`Simple::words`] of the program run, after `NAME=value` assignments and
    /// wrappers with their options (`sudo -u x`, `env -i`, `timeout 5`); `words.len()` when
    /// there is none.
    pub fn program(&self) -> usize {
        program_index(&self.words)
    }

    /// The program's name (its last `/` component), when it is literal.
    pub fn program_name(&self) -> Option<String> {
        let w = self.words.get(self.program())?;
        w.literal().map(|l| basename(&l).to_string())
    }

    /// Whether a wrapper named `name` runs the program (`xargs sh -c …`).
    pub fn wrapped_by(&self, name: &str) -> bool {
        self.words[..self.program()]
            .iter()
            .filter_map(|w| w.literal())
            .any(|l| basename(&l) == name)
    }
}

/// The simple commands of `lexed`, in order (nested commands are not included: they are
/// texts of their own, [`Lexed::nested`]).
pub fn simple_commands(lexed: &Lexed) -> Vec<Simple<'_>> {
    let mut out = Vec::new();
    let mut cur = Simple::default();
    let mut pending: Option<&Token> = None;
    let mut operators = lexed.operators.iter();
    for t in lexed.tokens.iter().chain(std::iter::once(&Token::Control)) {
        match (t, pending.take()) {
            (Token::Word(w), Some(Token::Redirect(r))) => cur.redirects.push((*r, w)),
            (Token::Word(w), Some(_)) => cur.here.push(w),
            (Token::Word(w), None) => cur.words.push(w),
            (Token::Redirect(_) | Token::HereDoc, _) => pending = Some(t),
            (Token::Control | Token::Pipe, _) => {
                let pipe = *t == Token::Pipe;
                let ends = operators.next().copied();
                let done = std::mem::take(&mut cur);
                if !(done.words.is_empty() && done.redirects.is_empty()) || pipe {
                    out.push(Simple {
                        pipes: pipe,
                        ends,
                        ..done
                    });
                }
                cur.piped = pipe;
            }
        }
    }
    out
}

/// The index of the program in `words`: after `NAME=value` assignments and wrappers with
/// their options (and the values of those that take one: `sudo -u root`, `xargs -n 1`,
/// `timeout -s KILL 5`) and numeric arguments; `words.len()` when there is none.
pub fn program_index(words: &[&Word]) -> usize {
    let mut i = 0;
    while i < words.len() {
        let lit = words[i].literal();
        match lit.as_deref() {
            Some(s) if is_assignment(s) => i += 1,
            // An assignment whose value is only known when it runs (`PATH=$HOME/bin:$PATH`):
            // before attack review 41 it was taken for the program.
            None if assigns(words[i]) => i += 1,
            // A runner's program (`uv run python x.py`, `bundle exec rake`; `spec/hooks.md`
            // §13.3, "Runners"): one whose options cannot be read is the program itself, and
            // hands code only known when it runs (`super::handed`); one given no program is
            // the program too (`npx -c CMD` runs its command).
            Some(s) if is_runner(basename(s)) => match runs(words, i) {
                Some((_, Runs::Program(k))) if k > i && k < words.len() => i = k,
                _ => break,
            },
            Some(s) if WRAPPERS.contains(&basename(s)) => {
                let wrapper = basename(s).to_string();
                i += 1;
                while let Some(o) = words.get(i).and_then(|w| w.literal()) {
                    if !(o.starts_with('-') || o.parse::<f64>().is_ok()) {
                        break;
                    }
                    // `env -S 'sh -s'`: the split string is the command, the program word.
                    if wrapper == "env" && (o == "-S" || o == "--split-string") {
                        return i + 1;
                    }
                    if wrapper == "env" && (o.starts_with("-S") || o.starts_with("--split-string="))
                    {
                        return i;
                    }
                    i += 1;
                    if takes_value(&wrapper, &o) {
                        i += 1;
                    }
                }
            }
            _ => break,
        }
    }
    i
}

/// The directory a wrapper before the program runs it in (`env -C DIR`, `env --chdir=DIR`,
/// `sudo -D DIR`, `unshare --wd=DIR`, `nsenter -w DIR`: env(1), sudo(8), unshare(1),
/// nsenter(1); a login shell's, `sudo -i`, `su -`: a home directory, not known), the last
/// one; `None` when none moves it. Its program's
/// words and the commands it hands are that directory's (`spec/hooks.md` §13.3; attack
/// review 42: `env -C <key's directory> sh -c 'cat *.key'` printed the signing key).
pub(crate) fn wrapper_dir(words: &[&Word]) -> Option<Option<String>> {
    let mut dir = None;
    let mut flags: &[&str] = &[];
    let mut wrapper = String::new();
    let mut k = 0;
    // Computed once: per word it made every wrapper of `env env … env` cost the whole list
    // again (attack review 49: 5,000 wrappers held the MCP server's lock for a minute).
    let program = program_index(words);
    while k < program {
        let w = words[k];
        k += 1;
        let Some(l) = w.literal() else {
            continue;
        };
        if WRAPPERS.contains(&basename(&l)) || is_runner(basename(&l)) {
            wrapper = basename(&l).to_string();
            flags = match basename(&l) {
                "env" => &["-C", "--chdir"],
                "sudo" => &["-D", "--chdir"],
                "unshare" | "nsenter" => &["-w", "--wd"],
                _ => &[],
            };
            continue;
        }
        let glued = flags.iter().find_map(|f| {
            let rest = l.strip_prefix(f)?;
            match f.len() {
                2 => (!rest.is_empty()).then(|| rest.to_string()),
                _ => rest.strip_prefix('=').map(str::to_string),
            }
        });
        if logs_in(&wrapper, &l) {
            // A login shell starts in the target user's home (attack review 58).
            dir = Some(None);
        } else if let Some(d) = glued {
            dir = Some(Some(d));
        } else if flags.contains(&l.as_str()) {
            dir = Some(words.get(k).and_then(|v| v.literal()));
            k += 1;
        }
    }
    dir
}

/// Whether option `o` of `wrapper` runs the program through a login shell, which starts in the
/// target user's home directory (sudo(8) `-i`/`--login`, su(1) and runuser(1) `-`, `-l`,
/// `--login`, machinectl's `shell`).
fn logs_in(wrapper: &str, o: &str) -> bool {
    match wrapper {
        "sudo" => {
            o == "--login"
                || (o.starts_with('-') && !o.starts_with("--") && {
                    let letters = o.trim_start_matches('-');
                    let upto = letters
                        .find(|c: char| "ugCDhprtUT".contains(c))
                        .unwrap_or(letters.len());
                    letters[..upto].contains('i')
                })
        }
        "su" | "runuser" => matches!(o, "-" | "-l" | "--login"),
        _ => false,
    }
}

/// Whether word `w` is an assignment: a literal name (and `+`), then a literal `=`.
pub(crate) fn assigns(w: &Word) -> bool {
    let Some(eq) = w.pieces.iter().position(|p| *p == Piece::Lit('=')) else {
        return false;
    };
    let name: Option<String> = w.pieces[..eq]
        .iter()
        .map(|p| match p {
            Piece::Lit(c) => Some(*c),
            _ => None,
        })
        .collect();
    name.is_some_and(|n| is_assignment(&format!("{n}=")))
}

/// Whether option `o` of wrapper `w` takes the next word as its value.
///
/// Short options may be combined (`sudo -Eu USER`, `sudo -iu USER`): the word takes the next
/// one when its last letter is an option that does and none before it is (one before it
/// takes the rest of the word as its value). Before attack review 58, `sudo -Eu me rm -rf
/// <the ledger's directory>` read `me` as the program and passed with exit 0.
pub(crate) fn takes_value(w: &str, o: &str) -> bool {
    let letters = o
        .strip_prefix('-')
        .filter(|l| l.chars().count() > 1 && !l.starts_with('-') && !l.contains('='));
    let Some(letters) = letters else {
        return takes_value_alone(w, o);
    };
    for (i, c) in letters.char_indices() {
        if takes_value_alone(w, &format!("-{c}")) {
            return i + c.len_utf8() == letters.len();
        }
    }
    false
}

/// [`takes_value`] of one option.
fn takes_value_alone(w: &str, o: &str) -> bool {
    matches!(
        (w, o),
        (
            "sudo" | "doas" | "runuser" | "su",
            "-u" | "-g" | "-C" | "-D" | "-h" | "-p"
        ) | (
            "sudo" | "doas" | "runuser" | "su",
            "--user"
                | "--group"
                | "--chdir"
                | "--host"
                | "--prompt"
                | "--close-from"
                | "--other-user"
                | "--role"
                | "--type"
                | "--command-timeout"
        ) | ("env", "-u" | "-C" | "--unset" | "--chdir")
            | ("nice", "-n" | "--adjustment")
            | ("ionice", "-c" | "-n" | "--class" | "--classdata")
            | (
                "xargs",
                "-I" | "-n"
                    | "-P"
                    | "-d"
                    | "-E"
                    | "-L"
                    | "-s"
                    | "-a"
                    | "--delimiter"
                    | "--max-args"
                    | "--max-procs"
                    | "--replace"
                    | "--eof"
                    | "--max-lines"
                    | "--max-chars"
                    | "--arg-file"
                    | "--process-slot-var"
            )
            | ("parallel", "-j" | "-I" | "-S" | "--jobs")
            | ("exec", "-a")
            | (
                "unshare" | "nsenter",
                "-w" | "--wd" | "-S" | "--setuid" | "-G" | "--setgid" | "-t" | "--target"
            )
            | (
                "unshare",
                "--map-user" | "--map-group" | "--propagation" | "--setgroups"
            )
            | ("taskset", "-c" | "--cpu-list")
            | ("numactl", "-C" | "-N" | "-m" | "-p" | "-i")
            | (
                "systemd-run",
                "-p" | "-E" | "-u" | "--unit" | "--property" | "--setenv" | "--slice"
            )
            | ("time", "-o" | "-f" | "--output" | "--format")
            | (
                "strace" | "ltrace",
                "-o" | "-e" | "-p" | "-s" | "-u" | "-E" | "-P" | "-a" | "-b" | "-I" | "-X"
            )
            | ("timeout", "-s" | "-k" | "--signal" | "--kill-after")
            | (
                "flock",
                "-w" | "--wait" | "--timeout" | "-E" | "--conflict-exit-code"
            )
            | (
                "stdbuf",
                "-i" | "-o" | "-e" | "--input" | "--output" | "--error"
            )
    )
}

/// Whether `s` is a `NAME=value` assignment, or bash's `NAME+=value` (which appends; before
/// attack review 41 it was read as the program, and the program after it as an argument).
pub fn is_assignment(s: &str) -> bool {
    s.split_once('=').is_some_and(|(name, _)| {
        let name = name.strip_suffix('+').unwrap_or(name);
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The last `/` component of `s`.
pub fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::protect::shell::lex;

    #[test]
    fn combined_short_options_take_the_next_word_when_their_last_letter_does() {
        assert!(takes_value("sudo", "-Eu"));
        assert!(takes_value("sudo", "-iu"));
        assert!(takes_value("sudo", "-u"));
        assert!(!takes_value("sudo", "-uE"));
        assert!(!takes_value("sudo", "-Ei"));
        assert!(!takes_value("nice", "-n5"));
        assert!(!takes_value("sudo", "--user=x"));
        let lexed = lex("sudo -Eu me rm -rf d");
        let s = simple_commands(&lexed);
        assert_eq!(s[0].program_name().as_deref(), Some("rm"));
    }

    fn programs(text: &str) -> Vec<(Option<String>, bool, bool)> {
        let l = lex(text);
        simple_commands(&l)
            .iter()
            .map(|s| (s.program_name(), s.piped, s.pipes))
            .collect()
    }

    #[test]
    fn pipes_and_programs_after_wrappers() {
        assert_eq!(
            programs("echo x | sudo -u root env A=1 sh -s; timeout 5 curl u && X=1 make"),
            [
                (Some("echo".into()), false, true),
                (Some("sh".into()), true, false),
                (Some("curl".into()), false, false),
                (Some("make".into()), false, false),
            ]
        );
        let l = lex("cat <<EOF > out.txt | xargs -n1 bash -c x 2>/dev/null");
        let s = simple_commands(&l);
        assert_eq!(s[0].redirects.len(), 1);
        assert_eq!(s[0].redirects[0].0, Redirect::Writes);
        assert_eq!(s[0].here.len(), 1);
        assert!(s[1].wrapped_by("xargs") && s[1].piped);
        assert_eq!(s[1].program_name().as_deref(), Some("bash"));
    }
}
