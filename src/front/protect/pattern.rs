//! Paths and path patterns of shell words (`spec/hooks.md` §13.3): a word whose characters
//! are all known is a path (made absolute against the working directory and normalised);
//! any other is a pattern in which `*` and `?` stand for characters other than `/` and an
//! unknown expansion for any characters at all.

use super::shell::{Piece, Word};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// One element of a path pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pat {
    /// This character (compared case-insensitively: macOS and Windows file systems are).
    Ch(char),
    /// Any characters but `/` (a glob `*`).
    Star,
    /// One character but `/` (a glob `?` or `[…]`).
    One,
    /// Any characters, `/` included (an expansion whose value is unknown).
    Any,
}

/// What a word names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// A path, absolute and lexically normalised.
    Path(PathBuf),
    /// A pattern over absolute paths.
    Pattern(Vec<Pat>),
}

/// The path or pattern `word` names when run in `cwd` (`None`: unknown, as after `cd $X`)
/// with home directory `home`.
pub fn candidate(word: &Word, cwd: Option<&Path>, home: Option<&Path>) -> Candidate {
    candidate_with(word, cwd, home, &HashMap::new())
}

/// [`candidate`] with the values of variables assigned earlier in the same command.
pub fn candidate_with(
    word: &Word,
    cwd: Option<&Path>,
    home: Option<&Path>,
    vars: &HashMap<String, String>,
) -> Candidate {
    let mut pats = Vec::new();
    let text = |p: &Path, pats: &mut Vec<Pat>| {
        pats.extend(p.to_string_lossy().chars().map(Pat::Ch));
    };
    for piece in &word.pieces {
        match piece {
            Piece::Lit(c) => pats.push(Pat::Ch(*c)),
            Piece::Star => pats.push(Pat::Star),
            Piece::One => pats.push(Pat::One),
            Piece::Var(v) if vars.contains_key(v) => {
                pats.extend(vars[v].chars().map(Pat::Ch));
            }
            Piece::Home | Piece::Var(_) => {
                let known = match piece {
                    Piece::Home => home,
                    Piece::Var(v) if v == "HOME" => home,
                    Piece::Var(v) if v == "PWD" => cwd,
                    _ => None,
                };
                match known {
                    Some(p) => text(p, &mut pats),
                    None => pats.push(Pat::Any),
                }
            }
            Piece::Unknown => pats.push(Pat::Any),
        }
    }
    if pats.first() != Some(&Pat::Ch('/')) && pats.first() != Some(&Pat::Any) {
        let mut abs = Vec::new();
        match cwd {
            Some(c) => text(c, &mut abs),
            None => abs.push(Pat::Any),
        }
        abs.push(Pat::Ch('/'));
        abs.extend(pats);
        pats = abs;
    }
    if pats.iter().all(|p| matches!(p, Pat::Ch(_))) {
        let s: String = pats
            .iter()
            .filter_map(|p| match p {
                Pat::Ch(c) => Some(*c),
                _ => None,
            })
            .collect();
        return Candidate::Path(normalise(Path::new(&s)));
    }
    Candidate::Pattern(normalise_pattern(pats))
}

/// `pats` with `.` segments removed and `..` applied to the segment before it, as
/// [`normalise`] does for paths.
fn normalise_pattern(pats: Vec<Pat>) -> Vec<Pat> {
    let mut segments: Vec<Vec<Pat>> = vec![Vec::new()];
    for p in pats {
        if p == Pat::Ch('/') {
            segments.push(Vec::new());
        } else if let Some(last) = segments.last_mut() {
            last.push(p);
        }
    }
    let mut out: Vec<Vec<Pat>> = Vec::new();
    for (i, seg) in segments.into_iter().enumerate() {
        let dots = |n: usize| seg.len() == n && seg.iter().all(|p| *p == Pat::Ch('.'));
        if i > 0 && (seg.is_empty() || dots(1)) {
            continue;
        }
        if dots(2) {
            if out.len() > 1 {
                out.pop();
            }
            continue;
        }
        out.push(seg);
    }
    out.join(&Pat::Ch('/'))
}

/// `p` with `.` removed and `..` applied lexically (`/a/b/../c` is `/a/c`).
pub fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `p` with symbolic links resolved in the longest prefix of it that exists (the rest kept):
/// what the file system would open. `p` itself when nothing of it resolves.
pub fn resolved(p: &Path) -> PathBuf {
    let mut prefix = p.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(&prefix) {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (
            prefix.file_name().map(|n| n.to_os_string()),
            prefix.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                prefix = parent.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// Whether `pattern` matches all of `path` (case-insensitively).
pub fn matches(pattern: &[Pat], path: &str) -> bool {
    let s: Vec<char> = path.chars().flat_map(char::to_lowercase).collect();
    // reach[j]: the first i pattern elements can match s[..j].
    let mut reach = vec![false; s.len() + 1];
    reach[0] = true;
    for p in pattern {
        let mut next = vec![false; s.len() + 1];
        match p {
            Pat::Ch(c) => {
                let lower: Vec<char> = c.to_lowercase().collect();
                for j in 0..s.len() {
                    if reach[j] && lower.len() == 1 && s[j] == lower[0] {
                        next[j + 1] = true;
                    }
                }
            }
            Pat::One => {
                for j in 0..s.len() {
                    if reach[j] && s[j] != '/' {
                        next[j + 1] = true;
                    }
                }
            }
            Pat::Star | Pat::Any => {
                let mut on = false;
                for j in 0..=s.len() {
                    on = on || reach[j];
                    next[j] = on;
                    if j < s.len() && *p == Pat::Star && s[j] == '/' {
                        on = false;
                    }
                }
            }
        }
        reach = next;
    }
    reach[s.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::protect::shell::{lex, Token};

    fn word(t: &str) -> Word {
        match lex(t).tokens.into_iter().next() {
            Some(Token::Word(w)) => w,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn literal_words_are_absolute_normalised_paths() {
        let c = candidate(&word("../s/./agent.key"), Some(Path::new("/p/q")), None);
        assert_eq!(c, Candidate::Path(PathBuf::from("/p/s/agent.key")));
        let h = candidate(
            &word("~/.claude/settings.json"),
            None,
            Some(Path::new("/home/u")),
        );
        assert_eq!(
            h,
            Candidate::Path(PathBuf::from("/home/u/.claude/settings.json"))
        );
    }

    #[test]
    fn globs_stay_in_one_directory_and_unknowns_cross_them() {
        let Candidate::Pattern(p) = candidate(&word("*.key"), Some(Path::new("/s")), None) else {
            panic!()
        };
        assert!(matches(&p, "/s/agent.ledger.key"));
        assert!(!matches(&p, "/s/sub/agent.ledger.key"));
        let Candidate::Pattern(q) = candidate(&word("$D/agent.ledger.KEY"), None, None) else {
            panic!()
        };
        assert!(matches(&q, "/deep/dir/agent.ledger.key"));
        assert!(!matches(&q, "/deep/dir/agent.ledger.key2"));
        let Candidate::Pattern(r) = candidate(&word("./x/../*.key"), Some(Path::new("/s")), None)
        else {
            panic!()
        };
        assert!(matches(&r, "/s/agent.ledger.key"));
    }
}
