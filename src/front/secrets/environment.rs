//! The commands that print the environment (`spec/hooks.md` §16.1 item 3, §16.2): the
//! policy's `secrets.environment_commands`, read as each program reads its words, wherever a
//! wrapper runs them (`time env`, `{ env; }`, `nohup env`, `command env`), and the programs
//! whose own small language reads it (jq's `env` and `$ENV`, yq's `env()`, ps's `e`).
//!
//! Before attack review 46 an entry matched its words exactly, then nothing but assignments,
//! and only as the first word or the program after the wrappers — but `env` is a wrapper
//! itself, so `time env`, `nohup env` and `{ env; }` ran no program and were no dump; `env
//! -0`, `env -u X`, `export`, `declare -p`, `typeset -x`, `env > /tmp/e` (the redirection's
//! file read as an argument) were none either, and each passed with exit 0 when piped to a
//! program not known to keep data on the machine (`tests/attack46.rs`).

use crate::front::protect::shell::Word;
use crate::front::protect::simple::{basename, is_assignment, program_index};

/// The environment command the simple command `words` (its redirections' files left out)
/// runs, if any: at its first word or at any word a wrapper before the program runs.
pub(super) fn dumped(entries: &[String], words: &[&Word]) -> Option<String> {
    let lits: Vec<String> = words.iter().map(|w| w.squeezed()).collect();
    let last = program_index(words).min(lits.len().saturating_sub(1));
    (0..=last).find_map(|k| {
        let prog = basename(lits.get(k)?);
        let args = &lits[k + 1..];
        let listed = entries.iter().any(|e| env_dump(e, prog, args));
        (listed || reads_environment(prog, args)).then(|| prog.to_string())
    })
}

/// Whether `prog args…` is the environment dump `dump` (a policy entry: a program and the
/// options it needs, `declare -x`):
///
/// - `env`: after its options (env(1): `-0`, `-i`, `-u NAME`, `-C DIR`…), nothing but
///   assignments (`env FOO=1` prints too; `env FOO=1 cargo test` runs a command; `-S` is a
///   command);
/// - `printenv`: with any variable names;
/// - `set`: exactly its words, then nothing but assignments (`set -e` sets an option);
/// - any other (`export`, `declare`, `typeset`, `readonly`): every option letter of the entry
///   among the command's (`declare -px` is `declare -x`), and no operand unless `-p` is given
///   (`declare -p NAME` prints the variable; `export FOO=1` prints nothing).
pub(super) fn env_dump(dump: &str, prog: &str, args: &[String]) -> bool {
    let mut words = dump.split_whitespace();
    if words.next() != Some(prog) {
        return false;
    }
    let wanted: Vec<&str> = words.collect();
    match prog {
        "printenv" => true,
        "env" => env_prints(args),
        "set" => {
            args.len() >= wanted.len()
                && args.iter().zip(&wanted).all(|(a, w)| a == w)
                && args[wanted.len()..].iter().all(|a| is_assignment(a))
        }
        _ => {
            let letters: String = args
                .iter()
                .filter(|a| a.starts_with(['-', '+']) && *a != "--")
                .flat_map(|a| a.chars().skip(1))
                .collect();
            let has = |o: &str| o.chars().skip(1).all(|c| letters.contains(c));
            let operands = args.iter().any(|a| !a.starts_with(['-', '+']));
            wanted.iter().all(|o| has(o)) && (!operands || letters.contains('p'))
        }
    }
}

/// Whether `env args…` prints the environment: no program after its options and
/// assignments (env(1), GNU coreutils and BSD).
fn env_prints(args: &[String]) -> bool {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if a.starts_with("-S") || a.starts_with("--split-string") {
            return false;
        }
        if matches!(a.as_str(), "-u" | "--unset" | "-C" | "--chdir" | "-P") {
            i += 1;
        } else if !(a.starts_with('-') || is_assignment(a)) {
            return false;
        }
    }
    true
}

/// Whether a program's own language reads the environment, which none of its words names
/// as a file: jq's and gojq's `env` and `$ENV` (jq(1), "$ENV, env"), yq's `env()`,
/// `strenv()` and `envsubst`, in any word (the filter, `--arg` values are not code but are
/// read alike, fail closed); ps's BSD option `e` (ps(1): "Show the environment after the
/// command"), in a word without a dash.
fn reads_environment(prog: &str, args: &[String]) -> bool {
    match prog {
        "jq" | "gojq" | "jaq" | "yq" => args.iter().any(|a| a.to_lowercase().contains("env")),
        "ps" => args.iter().any(|a| {
            !a.starts_with('-') && a.chars().all(|c| c.is_ascii_alphabetic()) && a.contains('e')
        }),
        _ => false,
    }
}
