//! The commands that print the environment (`spec/hooks.md` §16.1 item 3, §16.2): the
//! policy's `secrets.environment_commands`, read as each program reads its words.

use crate::front::protect::simple::is_assignment;

/// Whether `prog args…` is the environment dump `dump` (`env`, `export -p`): its words
/// exactly, then nothing but assignments (`env FOO=1` prints too; `env FOO=1 cargo test` runs
/// a command, `set -e` sets an option); `printenv` with any variable names.
pub(super) fn env_dump(dump: &str, prog: &str, args: &[String]) -> bool {
    let words: Vec<&str> = dump.split_whitespace().collect();
    if words.first() != Some(&prog) || args.len() + 1 < words.len() {
        return false;
    }
    if !args.iter().zip(&words[1..]).all(|(a, w)| a == w) {
        return false;
    }
    let extra = &args[words.len() - 1..];
    prog == "printenv" || extra.iter().all(|a| is_assignment(a))
}
