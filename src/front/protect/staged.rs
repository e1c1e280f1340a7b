//! What `git add` and `git stash --include-untracked` put into the repository's objects
//! (`spec/hooks.md` §13.3, "Staged files"): every file their pathspecs match, untracked ones
//! included, from where a commit and a push to an opened remote (`git push origin`) send
//! them. Staging the signing key is reading it. Before, with the ledger in the project (as the
//! README's install put it), `git add -A` staged `.memlineage/agent.ledger.key` with exit 0 and
//! the next `git commit` and `git push origin` published it (the new-user trial of
//! 2026-12-07, `spec/eval/new-user-2026-12-07.md`).

use super::pattern::candidate;
use super::shell::Word;
use std::path::{Path, PathBuf};

/// The directories (or files) whose untracked files `git SUB REST…` run in `dir` stages, when
/// it stages any: `Some(None)` in the list for one only known when it runs (any directory).
/// `None`: the subcommand stages nothing untracked (`git add -u` stages tracked files only;
/// `git stash` without `-u`/`-a` stashes tracked changes only).
pub(super) fn staged(
    sub: &str,
    rest: &[Word],
    dir: Option<&Path>,
    home: Option<&Path>,
) -> Option<Vec<Option<PathBuf>>> {
    let lits: Vec<Option<String>> = rest.iter().map(Word::literal).collect();
    let has = |names: &[&str]| {
        lits.iter()
            .any(|l| l.as_deref().is_some_and(|l| names.contains(&l)))
    };
    let whole_tree = match sub {
        "add" if has(&["-u", "--update"]) && !has(&["-A", "--all"]) => return None,
        "add" => has(&["-A", "--all", "--no-ignore-removal"]),
        "stash" if has(&["-u", "--include-untracked", "-a", "--all"]) => true,
        _ => return None,
    };
    let specs: Vec<&Word> = rest
        .iter()
        .filter(|w| w.literal().is_none_or(|l| !l.starts_with('-')))
        .filter(|w| sub == "add" || w.literal().is_none_or(|l| l != "push" && l != "save"))
        .collect();
    if specs.is_empty() {
        // `git add -A` stages the whole working tree; plain `git add` stages nothing.
        return Some(match whole_tree {
            true => vec![Some(root(dir)?)],
            false => Vec::new(),
        });
    }
    Some(
        specs
            .into_iter()
            .map(|w| match w.literal() {
                // A pathspec with glob characters (`'*.key'`, `:(glob)**`) or magic matches at
                // any depth of the working tree.
                Some(l) if l.contains(['*', '?', '[', ':']) => root(dir),
                _ => candidate(w, dir, home).path(),
            })
            .collect(),
    )
}

/// The working tree's top directory that holds `dir`: the nearest ancestor with a `.git`; `dir`
/// itself when none has one (git then stages nothing, and nothing is lost by judging `dir`).
fn root(dir: Option<&Path>) -> Option<PathBuf> {
    let dir = dir?;
    Some(
        dir.ancestors()
            .find(|d| d.join(".git").exists())
            .unwrap_or(dir)
            .to_path_buf(),
    )
}
