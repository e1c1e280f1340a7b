//! Runners: programs that run a program their arguments name, after a subcommand and their own
//! options (`uv run`, `poetry run`, `bundle exec`, `npx`, `direnv exec DIR`), or that build and
//! run the project's own code (`cargo run`, `dotnet run`). `spec/hooks.md` §13.3, "Runners",
//! and §16.2: each is unwrapped as the wrappers are (`sudo`, `env`, `timeout`), so the program
//! it runs is the program every rule judges (`uv run git checkout -- .` is `git checkout --
//! .`, `poetry run python tools/k.py` runs `tools/k.py`), from the one table [`RUNNERS`].
//!
//! Each entry's options are those its documentation lists, named beside it. An option the
//! table does not know may take a value, and the word after it may or may not be the program:
//! the command is then code nobody reads here ([`Runs::Unknown`]), which the screen refuses
//! and the secrecy rule counts as reading any secret and sending it, as it does for a program
//! that cannot be named. So is an option that moves the project or the directory (`uv run
//! --directory`, `pnpm exec -C`), one that loads a file of variables (`uv run --env-file`) and
//! a runner whose code comes from files nothing here reads (`nix run`, `nix develop`,
//! `nix-shell`: a flake's or `shell.nix`'s `shellHook` is shell code of the project's).

use super::shell::Word;
use super::simple::basename;

/// What a runner runs after its subcommand and options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Its first operand is the program (or a script of the project's, `uv run mytask`), and
    /// the words after it are that program's.
    Program,
    /// Its last subcommand word is the program (`yarn node x.js` runs `node x.js`).
    Sub,
    /// Its operands up to `--` are tools, the program follows `--` (`mise exec node@20 --
    /// node x.js`); without `--` it starts a shell (reading the terminal): unknown.
    AfterDashDash,
    /// Its first operand is a directory whose `.envrc` it loads, then the program
    /// (`direnv exec DIR CMD`).
    Dir,
    /// The project's own code, built and run (`cargo run`, `dotnet run`): no program word;
    /// the project's files are read ([`Runner::files`]).
    Project,
    /// Code from files nothing here reads (`nix run`, `nix develop -c`, `nix-shell --run`).
    Unknown,
}

/// One runner: a program and the subcommand by which it runs another.
#[derive(Debug)]
pub(crate) struct Runner {
    /// The program's name.
    pub program: &'static str,
    /// The subcommand's words (none for `npx`, `bunx`).
    pub sub: &'static [&'static str],
    /// Its options that take the next word as their value (or `=VALUE`).
    pub valued: &'static [&'static str],
    /// Its options that take no value.
    pub flags: &'static [&'static str],
    /// What it runs.
    pub target: Target,
    /// The project files whose code it runs (looked for in the working directory and its
    /// parents, as the tool looks for its project): the scripts its target may name
    /// (`[tool.poetry.scripts]`, `[tool.pdm.scripts]`, a `Pipfile`'s `[scripts]`, a
    /// `deno.json`'s tasks), code it evaluates (a `Gemfile`, `setup.py`, `.envrc`), the
    /// variables it loads (pipenv's `.env`) or the sources it builds (`src/*.rs`: every `.rs`
    /// file under `src`, recursively).
    pub files: &'static [&'static str],
    /// Whether a target ending in `.py` is a Python script (`uv run tools/k.py` runs `python
    /// tools/k.py`) and `-` a Python program read from standard input.
    pub python_scripts: bool,
    /// Where its options are documented (the table's citation; checked by its tests).
    #[allow(dead_code)]
    pub doc: &'static str,
}

/// What a runner at a word runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runs {
    /// The program at this index of the words (their length: none, `poetry run` alone).
    Program(usize),
    /// The project's own code ([`Target::Project`]).
    Project,
    /// Code nobody reads here: an option the table does not know, a word that is not literal,
    /// or a [`Target::Unknown`] runner.
    Unknown,
}

pub(crate) use table::RUNNERS;

/// Whether `name` is the program of a runner.
pub(crate) fn is_runner(name: &str) -> bool {
    RUNNERS.iter().any(|r| r.program == name)
}

/// The runner at `words[at]` with its subcommand, and what it runs; `None` when that word is
/// not a runner's program followed by the subcommand (`uv pip list`, `cargo build`,
/// `poetry --version`).
pub(crate) fn runs(words: &[&Word], at: usize) -> Option<(&'static Runner, Runs)> {
    let name = words.get(at)?.literal()?;
    let name = basename(&name);
    RUNNERS
        .iter()
        .filter(|r| r.program == name)
        .find_map(|r| reading(r, words, at + 1).map(|runs| (r, runs)))
}

/// What runner `r` runs from `words[k..]` (after its program word), if its subcommand is
/// there.
fn reading(r: &'static Runner, words: &[&Word], mut k: usize) -> Option<Runs> {
    if !r.sub.is_empty() {
        // Options before the subcommand: the tool's global ones. One the table does not
        // know may take the next word as its value: when the subcommand follows somewhere,
        // the command is unknown.
        let mut unknown = false;
        while let Some(w) = words.get(k) {
            match w.literal() {
                Some(l) if l.starts_with('-') && l != "-" && l != "--" => match option(r, &l) {
                    Some(n) => k += n,
                    None => {
                        unknown = true;
                        k += 1;
                    }
                },
                // rustup's toolchain (`cargo +nightly run`).
                Some(l) if l.starts_with('+') && r.program == "cargo" => k += 1,
                Some(_) => break,
                None => {
                    unknown = true;
                    break;
                }
            }
        }
        let at_sub = r
            .sub
            .iter()
            .enumerate()
            .all(|(j, s)| words.get(k + j).and_then(|w| w.literal()).as_deref() == Some(s));
        if unknown {
            let later = words[k.min(words.len())..]
                .iter()
                .any(|w| w.literal().is_none_or(|l| l == r.sub[0]));
            return later.then_some(Runs::Unknown);
        }
        if !at_sub {
            return None;
        }
        k += r.sub.len();
        if r.target == Target::Sub {
            return Some(Runs::Program(k - 1));
        }
    }
    Some(match r.target {
        Target::Unknown => Runs::Unknown,
        _ => program(r, words, k),
    })
}

/// The program runner `r` runs, its options read from `words[k..]`.
fn program(r: &Runner, words: &[&Word], mut k: usize) -> Runs {
    let mut operands = 0;
    while let Some(w) = words.get(k) {
        let Some(l) = w.literal() else {
            return Runs::Unknown;
        };
        if l == "--" {
            return match r.target {
                Target::Dir if operands == 0 => Runs::Unknown,
                // The arguments of the project's program.
                Target::Project => Runs::Project,
                _ => Runs::Program(k + 1),
            };
        }
        if l.starts_with('-') && l != "-" {
            match option(r, &l) {
                Some(n) => k += n,
                None => return Runs::Unknown,
            }
            continue;
        }
        match r.target {
            // Tools before `--`.
            Target::AfterDashDash => k += 1,
            Target::Dir if operands == 0 => {
                operands += 1;
                k += 1;
            }
            // `cargo run` takes no operand: one is not read.
            Target::Project => return Runs::Unknown,
            _ => return Runs::Program(k),
        }
    }
    match r.target {
        // `mise exec` alone starts a shell; `direnv exec DIR` alone runs nothing.
        Target::AfterDashDash => Runs::Unknown,
        Target::Project => Runs::Project,
        _ => Runs::Program(words.len()),
    }
}

/// How many words option `o` of runner `r` takes (itself, and its value); `None` when the
/// table does not know it.
fn option(r: &Runner, o: &str) -> Option<usize> {
    if let Some((name, _)) = o.split_once('=') {
        return (r.valued.contains(&name) || r.flags.contains(&name)).then_some(1);
    }
    if r.valued.contains(&o) {
        return Some(2);
    }
    r.flags.contains(&o).then_some(1)
}

/// The index of the directory word of a [`Target::Dir`] runner at `words[at]` (`direnv exec
/// DIR`), whose `.envrc` it loads; `None` for other runners.
pub(crate) fn loaded_dir(words: &[&Word], at: usize) -> Option<usize> {
    let (r, _) = runs(words, at)?;
    (r.target == Target::Dir).then_some(at + 1 + r.sub.len())
}

mod table;

#[cfg(test)]
mod tests;
