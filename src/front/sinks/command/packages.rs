//! The packages a command installs or fetches and runs (`spec/hooks.md` §17: `sinks.install_commands`,
//! `sinks.run_package_commands`).

use super::{push, Analysis, Facts};
use crate::front::protect::shell::Word;
use std::path::Path;

/// Options after which the next word names a local file or directory, or a version or
/// feature, never a package (`pip install -r requirements.txt`, `cargo add x -F derive`).
const NON_PACKAGE_OPTIONS: &[&str] = &[
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "--path",
    "--manifest-path",
    "-C",
    "--cwd",
    "--prefix",
    "--target",
    "-t",
    "--root",
    "--dir",
    "--directory",
    "-F",
    "--features",
    "--version",
    "--vers",
    "--rename",
    "-p",
    "--package",
];

impl Analysis<'_> {
    /// The packages simple command `prog args…` installs (`sinks.install_commands`) or
    /// fetches and runs (`sinks.run_package_commands`).
    pub(super) fn installs(&self, prog: &str, args: &[&Word], here: Option<&Path>, f: &mut Facts) {
        let lits: Vec<String> = args.iter().map(|w| w.squeezed()).collect();
        let prog = program_family(prog);
        let found = |list: &[String]| {
            list.iter()
                .filter_map(|p| prefix_end(p, &prog, &lits))
                .max()
        };
        if let Some(at) = found(&self.sinks.install_commands) {
            let mut skip = false;
            for a in &lits[at..] {
                if std::mem::take(&mut skip) {
                    continue;
                }
                if a.starts_with('-') {
                    skip = NON_PACKAGE_OPTIONS.contains(&a.as_str());
                    continue;
                }
                if !is_local(a, here) {
                    push(&mut f.installs, a.clone());
                }
            }
        } else if let Some(at) = found(&self.sinks.run_package_commands) {
            let mut rest = lits[at..].iter();
            while let Some(a) = rest.next() {
                if a == "-p" || a == "--package" {
                    if let Some(p) = rest.next() {
                        push(&mut f.installs, p.clone());
                    }
                    continue;
                }
                if a.starts_with('-') {
                    continue;
                }
                // A program the project already installed (`npx tsc`) is not fetched.
                let local = here.is_some_and(|h| h.join("node_modules/.bin").join(a).exists());
                if !local && !is_local(a, here) {
                    push(&mut f.installs, a.clone());
                }
                break;
            }
        }
    }
}

/// A program's name as install prefixes name it: `pip3.11` → `pip`, `python3` → `python`.
pub(super) fn program_family(prog: &str) -> String {
    let base = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    match base {
        "pip" | "python" => base.to_string(),
        _ => prog.to_string(),
    }
}

/// Where the words of `prefix` (`python -m pip install`) end in `args` of `prog`, options
/// between them skipped: the index of the first argument after the prefix, or `None`.
pub(super) fn prefix_end(prefix: &str, prog: &str, args: &[String]) -> Option<usize> {
    let mut want = prefix.split_whitespace();
    if want.next() != Some(prog) {
        return None;
    }
    let mut i = 0;
    for w in want {
        loop {
            let a = args.get(i)?;
            i += 1;
            if a == w {
                break;
            }
            if !a.starts_with('-') {
                return None;
            }
        }
    }
    Some(i)
}

/// Whether an install argument names something of the project rather than a package: a
/// path starting with `.`, or one that exists relative to `here`.
fn is_local(a: &str, here: Option<&Path>) -> bool {
    a.starts_with('.') || here.is_some_and(|h| !a.contains("://") && h.join(a).exists())
}
