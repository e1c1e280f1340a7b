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

/// A policy glob (`spec/hooks.md` §16.1) as a pattern over absolute paths: `~/` is `home`
/// (any characters when the home directory is unknown), a glob without a leading `/` or `~/`
/// matches at any depth, `**` stands for any characters, `*` and `?` for characters other
/// than `/`.
pub fn glob(text: &str, home: Option<&Path>) -> Vec<Pat> {
    let mut pats = Vec::new();
    let rest = if let Some(r) = text.strip_prefix("~/") {
        match home {
            Some(h) => pats.extend(h.to_string_lossy().chars().map(Pat::Ch)),
            None => pats.push(Pat::Any),
        }
        pats.push(Pat::Ch('/'));
        r
    } else if text.starts_with('/') {
        text
    } else {
        pats.push(Pat::Any);
        pats.push(Pat::Ch('/'));
        text
    };
    let chars: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                // `**` is any characters; `**/` also matches no directory at all, so its `/`
                // is dropped (`a/**/b` matches `a/b`, and also `a/xb`: wider, never narrower).
                pats.push(Pat::Any);
                i += 1;
                if chars.get(i + 1) == Some(&'/') {
                    i += 1;
                }
            }
            '*' => pats.push(Pat::Star),
            '?' => pats.push(Pat::One),
            c => pats.push(Pat::Ch(c)),
        }
        i += 1;
    }
    pats
}

/// Whether some path matches both `a` and `b` (case-insensitively): the intersection of two
/// patterns is not empty. A reachability search over pairs of positions, O(|a|·|b|).
pub fn overlaps(a: &[Pat], b: &[Pat]) -> bool {
    let star = |p: &Pat| matches!(p, Pat::Star | Pat::Any);
    // Whether one character can be produced by both elements.
    let joint = |x: &Pat, y: &Pat| match (x, y) {
        (Pat::Ch(c), Pat::Ch(d)) => c.to_lowercase().eq(d.to_lowercase()),
        (Pat::Ch(_), Pat::Any) | (Pat::Any, Pat::Ch(_)) => true,
        (Pat::Ch(c), _) | (_, Pat::Ch(c)) => *c != '/',
        _ => true,
    };
    let (n, m) = (a.len(), b.len());
    let mut seen = vec![false; (n + 1) * (m + 1)];
    let mut stack = vec![(0usize, 0usize)];
    while let Some((i, j)) = stack.pop() {
        if std::mem::replace(&mut seen[i * (m + 1) + j], true) {
            continue;
        }
        if i == n && j == m {
            return true;
        }
        let mut push = |i: usize, j: usize| {
            if !seen[i * (m + 1) + j] {
                stack.push((i, j));
            }
        };
        if i < n && star(&a[i]) {
            push(i + 1, j);
        }
        if j < m && star(&b[j]) {
            push(i, j + 1);
        }
        if i < n && j < m && joint(&a[i], &b[j]) {
            let ni = if star(&a[i]) { i } else { i + 1 };
            let nj = if star(&b[j]) { j } else { j + 1 };
            push(ni, nj);
        }
    }
    false
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

    #[test]
    fn policy_globs_match_at_any_depth_or_under_home() {
        let home = Some(Path::new("/home/u"));
        let aws = glob("~/.aws/**", home);
        assert!(matches(&aws, "/home/u/.aws/credentials"));
        assert!(!matches(&aws, "/home/v/.aws/credentials"));
        let env = glob(".env", home);
        assert!(matches(&env, "/p/q/.env"));
        assert!(!matches(&env, "/p/q/.env.example"));
        let pem = glob("*.pem", home);
        assert!(matches(&pem, "/etc/ssl/x.pem"));
        let deep = glob("/srv/**/secret", home);
        assert!(matches(&deep, "/srv/secret"));
        assert!(matches(&deep, "/srv/a/b/secret"));
        assert!(!matches(&deep, "/srv/a/b/secret2"));
    }

    #[test]
    fn patterns_overlap_when_one_path_matches_both() {
        let home = Some(Path::new("/home/u"));
        let aws = glob("~/.aws/**", home);
        let Candidate::Pattern(w) = candidate(&word("~/.aws/cred*"), None, home) else {
            panic!()
        };
        assert!(overlaps(&aws, &w));
        let Candidate::Pattern(x) = candidate(&word("$D/id_rsa"), None, home) else {
            panic!()
        };
        assert!(overlaps(&glob("id_rsa*", home), &x));
        assert!(!overlaps(&glob("*.pem", home), &glob("*.key", home)));
        let Candidate::Pattern(y) = candidate(&word("/tmp/*.txt"), None, home) else {
            panic!()
        };
        assert!(!overlaps(&aws, &y));
        // A `*` never crosses a `/`: `/a/*` and `/a/b/c` share no path.
        let star: Vec<Pat> = "/a/".chars().map(Pat::Ch).chain([Pat::Star]).collect();
        let abc: Vec<Pat> = "/a/b/c".chars().map(Pat::Ch).collect();
        assert!(!overlaps(&star, &abc));
        let any: Vec<Pat> = "/a/".chars().map(Pat::Ch).chain([Pat::Any]).collect();
        assert!(overlaps(&any, &abc));
    }
}
