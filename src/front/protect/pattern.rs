//! Paths and path patterns of shell words (`spec/hooks.md` §13.3): a word whose characters
//! are all known is a path (made absolute against the working directory and normalised);
//! any other is a pattern in which `*` and `?` stand for characters other than `/` and an
//! unknown expansion for any characters at all.

use super::shell::{Piece, Word};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// One element of a path pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
#[non_exhaustive]
pub enum Candidate {
    /// A path, absolute and normalised, which the kernel reads as it is written (no `..`
    /// after a symbolic link).
    Path(PathBuf),
    /// A pattern over absolute paths.
    Pattern(Vec<Pat>),
}

impl Candidate {
    /// The path, when the word names one path (`None` for a pattern).
    pub fn path(self) -> Option<PathBuf> {
        match self {
            Candidate::Path(p) => Some(p),
            Candidate::Pattern(_) => None,
        }
    }
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
            Piece::Unknown | Piece::Param(_) => pats.push(Pat::Any),
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
    as_the_kernel_opens(pats, cwd)
}

/// The directory a process is in when it is started in `dir`, given relative to `base`
/// (Codex's `workdir`): `dir` as the kernel reads it ([`candidate`]: a `..` after a symbolic
/// link, `/proc/self/cwd`); `None` when that cannot be known.
pub fn entered(base: Option<&Path>, dir: &str) -> Option<PathBuf> {
    let word = Word {
        pieces: dir.chars().map(Piece::Lit).collect(),
    };
    candidate(&word, base, None).path()
}

/// What the kernel opens for the absolute pattern `pats` of a word run in `cwd`: a path when
/// every character is known, else a pattern.
///
/// The text is not what is opened where it goes through a symbolic link (attack review 37):
/// the kernel applies a `..` to the directory the path so far leads to (`/proc/self/cwd/..` is
/// the parent of the command's working directory; `L/..` the parent of the link's target), and
/// expands a pattern in the directory its literal part leads to (`/tmp/k/*.key` in the
/// target of `/tmp/k`); `/proc/self/` is the command's own process, not this one. So:
///
/// - `/proc/self/cwd` (and `thread-self`) is `cwd`, `/proc/self/root` is `/`; any other entry
///   of a process, and `/dev/fd/N`, may lead anywhere ([`Pat::Any`]);
/// - a pattern's literal directory is resolved through its links;
/// - where the text's own reading (what a tool that normalises paths lexically opens, as
///   Claude Code's file tools do) and the kernel's differ, what follows may be under any
///   directory: the pattern is [`Pat::Any`] and the components the two readings share at
///   their end, then the rest (fail closed: it matches both).
fn as_the_kernel_opens(pats: Vec<Pat>, cwd: Option<&Path>) -> Candidate {
    let mut segments = split_segments(pats);
    of_this_process(&mut segments, cwd);
    let literal = |s: &Vec<Pat>| s.iter().all(|p| matches!(p, Pat::Ch(_)));
    let n = segments
        .iter()
        .position(|s| !literal(s))
        .unwrap_or(segments.len());
    if n == 0 {
        return Candidate::Pattern(normalise_pattern(join_segments(segments)));
    }
    let text = join_segments(segments[..n].to_vec())
        .into_iter()
        .filter_map(|p| match p {
            Pat::Ch(c) => Some(c),
            _ => None,
        })
        .collect::<String>();
    let lexical = normalise(Path::new(&text));
    let kernel = physical(Path::new(&text));
    let rest = segments.split_off(n);
    if rest.is_empty() {
        if lexical == kernel {
            return Candidate::Path(lexical);
        }
        return Candidate::Pattern(normalise_pattern(diverged(&lexical, &kernel, Vec::new())));
    }
    let real = resolved(&kernel);
    let pats = if lexical != kernel {
        diverged(&lexical, &real, rest)
    } else if rest.len() > 1 && may_match_a_link(&real, &rest[0]) {
        // A directory the pattern expands to may be a link: what follows it may be anywhere.
        let mut segments = vec![vec![Pat::Any]];
        segments.extend(rest.into_iter().skip(1));
        join_segments(segments)
    } else {
        let mut dir = split_segments(real.to_string_lossy().chars().map(Pat::Ch).collect());
        if dir.last().is_some_and(Vec::is_empty) {
            dir.pop();
        }
        dir.extend(rest);
        join_segments(dir)
    };
    Candidate::Pattern(normalise_pattern(pats))
}

/// Most entries of a directory [`may_match_a_link`] reads; a larger directory may hold one.
const MAX_LINK_SCAN: usize = 4096;

/// Whether a name in the directory `dir` that the segment `seg` (a pattern without `/`)
/// matches is a symbolic link, which the kernel follows when the pattern goes on below it
/// (`/tmp/k*/*.key` with `/tmp/k` a link to the key's directory). A directory that cannot
/// be listed holds no name; one of more than [`MAX_LINK_SCAN`] entries may hold a link.
fn may_match_a_link(dir: &Path, seg: &[Pat]) -> bool {
    if seg.contains(&Pat::Any) {
        return true;
    }
    let (links, partial) = linked_entries(dir, seg, MAX_LINK_SCAN);
    partial || !links.is_empty()
}

/// The entries of `dir` that are symbolic links and whose names the segment `seg` matches,
/// among its first `most` entries, and whether it holds more than `most` (`true`: a link past
/// them may be missed). A directory that cannot be listed holds none.
fn linked_entries(dir: &Path, seg: &[Pat], most: usize) -> (Vec<PathBuf>, bool) {
    let mut links = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (links, false);
    };
    for (i, e) in entries.flatten().enumerate() {
        if i >= most {
            return (links, true);
        }
        if e.file_type().is_ok_and(|t| t.is_symlink())
            && matches(seg, &e.file_name().to_string_lossy())
        {
            links.push(e.path());
        }
    }
    (links, false)
}

/// Most entries of a directory [`links_matched`] reads; a larger one may hold a link that is
/// not seen ([`Links::partial`]).
const MAX_LAST_SCAN: usize = 1 << 16;

/// The symbolic links a pattern's last segment matches ([`links_matched`]).
#[derive(Debug, Default)]
pub struct Links {
    /// What the kernel opens for each link matched (its target resolved).
    pub targets: Vec<PathBuf>,
    /// The directory, when it holds more than 65,536 entries (`MAX_LAST_SCAN`): a link past them
    /// may be matched too.
    pub partial: Option<PathBuf>,
}

/// The targets of the symbolic links that the last segment of `pat` (a pattern over absolute
/// paths, as [`candidate`] gives it) matches in its directory, when that directory is all
/// literal (attack review 37): the kernel opens a link's target, whose name the pattern need
/// not match (`cat /tmp/kf*` with `/tmp/kf` a link to the signing key). Nothing for a last
/// segment that is literal (a path, resolved as one) or a directory that is not (`$d/*.md`:
/// judged by its last segment only, `spec/hooks.md` §13.3), nor for a directory that cannot
/// be listed.
pub fn links_matched(pat: &[Pat]) -> Links {
    let mut segments = split_segments(pat.to_vec());
    let Some(last) = segments.pop() else {
        return Links::default();
    };
    let literal_dir: Option<Vec<String>> = segments.iter().map(|s| literal_segment(s)).collect();
    let (Some(dir), false) = (literal_dir, literal_segment(&last).is_some()) else {
        return Links::default();
    };
    let dir = PathBuf::from(format!("{}/", dir.join("/")));
    let (links, partial) = linked_entries(&dir, &last, MAX_LAST_SCAN);
    Links {
        targets: links.iter().map(|l| resolved(l)).collect(),
        partial: partial.then_some(dir),
    }
}

/// The files `pat` (a pattern over absolute paths, as [`candidate`] gives it) matches now,
/// segment by segment as the shell expands a glob (`~/.aws/cred*`, `~/.aw*/cred*`,
/// `~/*/credentials`; attack review 45: a pattern in a directory segment was not expanded):
/// what the shell would expand it to if it ran now. `None` when a part is only known when it
/// runs, no segment is a pattern, or more than `most` entries would be listed.
pub(crate) fn entries_matched(pat: &[Pat], most: usize) -> Option<Vec<PathBuf>> {
    let segments = split_segments(pat.to_vec());
    if pat.contains(&Pat::Any) || segments.iter().all(|s| literal_segment(s).is_some()) {
        return None;
    }
    let mut found = vec![PathBuf::from("/")];
    let mut listed = 0;
    for seg in segments.iter().filter(|s| !s.is_empty()) {
        let mut next = Vec::new();
        for dir in &found {
            if let Some(lit) = literal_segment(seg) {
                next.push(dir.join(lit));
                continue;
            }
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in entries.flatten() {
                listed += 1;
                if listed > most {
                    return None;
                }
                if matches(seg, &e.file_name().to_string_lossy()) {
                    next.push(e.path());
                }
            }
        }
        found = next;
    }
    Some(found.into_iter().filter(|p| p.exists()).collect())
}

/// `pats` cut at each `/`.
fn split_segments(pats: Vec<Pat>) -> Vec<Vec<Pat>> {
    let mut segments: Vec<Vec<Pat>> = vec![Vec::new()];
    for p in pats {
        if p == Pat::Ch('/') {
            segments.push(Vec::new());
        } else if let Some(last) = segments.last_mut() {
            last.push(p);
        }
    }
    segments
}

fn join_segments(segments: Vec<Vec<Pat>>) -> Vec<Pat> {
    segments.join(&Pat::Ch('/'))
}

/// The segment `s` if it is all literal characters.
fn literal_segment(s: &[Pat]) -> Option<String> {
    s.iter()
        .map(|p| match p {
            Pat::Ch(c) => Some(*c),
            _ => None,
        })
        .collect()
}

/// Replaces a leading `/proc/self/cwd`, `/proc/self/root`, another entry of a process, or
/// `/dev/fd/N` by what the process that opens the path reaches through it
/// ([`as_the_kernel_opens`]).
fn of_this_process(segments: &mut Vec<Vec<Pat>>, cwd: Option<&Path>) {
    let at = |i: usize| segments.get(i).and_then(|s| literal_segment(s));
    if segments.len() < 4 || at(0).as_deref() != Some("") {
        return;
    }
    let anywhere = vec![vec![Pat::Any]];
    let by: Vec<Vec<Pat>> = match (at(1).as_deref(), at(2).as_deref(), at(3).as_deref()) {
        (Some("proc"), Some("self" | "thread-self"), Some("cwd")) => match cwd {
            Some(c) => split_segments(c.to_string_lossy().chars().map(Pat::Ch).collect()),
            None => anywhere,
        },
        (Some("proc"), Some("self" | "thread-self"), Some("root")) => vec![Vec::new()],
        (Some("proc"), _, _) | (Some("dev"), Some("fd"), _) => anywhere,
        _ => return,
    };
    let rest = segments.split_off(4);
    *segments = by;
    if segments.last().is_some_and(Vec::is_empty) && segments.len() > 1 {
        segments.pop();
    }
    segments.extend(rest);
}

/// `p` (absolute) as the kernel reads it: each `..` applied to the directory the path before
/// it leads to (its symbolic links followed), `.` removed, the rest kept as written.
pub fn physical(p: &Path) -> PathBuf {
    dots_applied(p, true)
}

/// A pattern that matches both `a` and `b` followed by `rest`: [`Pat::Any`], then the
/// components the two share at their end.
fn diverged(a: &Path, b: &Path, rest: Vec<Vec<Pat>>) -> Vec<Pat> {
    let ca: Vec<_> = a.components().collect();
    let cb: Vec<_> = b.components().collect();
    let shared = ca
        .iter()
        .rev()
        .zip(cb.iter().rev())
        .take_while(|(x, y)| x == y && matches!(x, Component::Normal(_)))
        .count();
    let mut segments = vec![vec![Pat::Any]];
    for c in &ca[ca.len() - shared..] {
        segments.push(
            c.as_os_str()
                .to_string_lossy()
                .chars()
                .map(Pat::Ch)
                .collect(),
        );
    }
    segments.extend(rest);
    join_segments(segments)
}

/// `pats` with `.` segments removed and `..` applied to the segment before it, as
/// [`normalise`] does for paths.
/// A `..` after a segment that is not all literal (`*/..`, `$D/..`) may lead anywhere: the
/// segment may match a symbolic link, whose parent the kernel then opens; what follows is
/// under any directory.
fn normalise_pattern(pats: Vec<Pat>) -> Vec<Pat> {
    let segments = split_segments(pats);
    let mut out: Vec<Vec<Pat>> = Vec::new();
    for (i, seg) in segments.into_iter().enumerate() {
        let dots = |n: usize| seg.len() == n && seg.iter().all(|p| *p == Pat::Ch('.'));
        if i > 0 && (seg.is_empty() || dots(1)) {
            continue;
        }
        if dots(2) {
            if out.len() > 1 {
                let popped = out.pop().unwrap_or_default();
                if literal_segment(&popped).is_none() {
                    out = vec![vec![Pat::Any]];
                }
            }
            continue;
        }
        out.push(seg);
    }
    join_segments(out)
}

/// `p` with `.` removed and `..` applied lexically (`/a/b/../c` is `/a/c`).
pub fn normalise(p: &Path) -> PathBuf {
    dots_applied(p, false)
}

/// `p` with `.` removed and each `..` applied to the path before it, resolved first through
/// its symbolic links when `follow` ([`physical`]), else as written ([`normalise`]).
fn dots_applied(p: &Path, follow: bool) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if follow {
                    if let Ok(real) = std::fs::canonicalize(&out) {
                        out = real;
                    }
                }
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
    Resolver::default().resolved(p)
}

/// [`resolved`] for the paths of one call's analysis, each prefix's canonical form asked of
/// the file system once (a command names the same directories many times). The file system
/// changes between calls, so a resolver lives for one analysis and is never shared.
#[derive(Debug, Default)]
pub struct Resolver {
    known: std::cell::RefCell<std::collections::HashMap<PathBuf, Option<PathBuf>>>,
}

impl Resolver {
    /// [`resolved`] of `p`, with what this resolver has seen remembered. The prefixes are
    /// tried from the shortest: once one does not resolve, no longer one does (resolving a
    /// path resolves each of its prefixes).
    pub fn resolved(&self, p: &Path) -> PathBuf {
        use std::path::Component;
        let chain: Vec<&Path> = p
            .ancestors()
            .filter(|a| !a.as_os_str().is_empty())
            .collect();
        let mut found: Option<(&Path, PathBuf)> = None;
        for prefix in chain.into_iter().rev() {
            let known = self.known.borrow().get(prefix).cloned();
            let canonical = match known {
                Some(c) => c,
                None => {
                    let c = self.canonical(prefix);
                    self.known
                        .borrow_mut()
                        .insert(prefix.to_path_buf(), c.clone());
                    c
                }
            };
            match canonical {
                Some(c) => found = Some((prefix, c)),
                None => break,
            }
        }
        let Some((prefix, mut out)) = found else {
            return p.to_path_buf();
        };
        let Ok(rest) = p.strip_prefix(prefix) else {
            return p.to_path_buf();
        };
        for c in rest.components() {
            match c {
                Component::Normal(n) => out.push(n),
                _ => return p.to_path_buf(),
            }
        }
        out
    }
}

impl Resolver {
    /// `std::fs::canonicalize(p)`, from its parent's remembered form where there is one: no
    /// path under a directory that does not exist exists, and an entry that is not a symbolic
    /// link resolves to its parent's form joined with its name (one `lstat`).
    fn canonical(&self, p: &Path) -> Option<PathBuf> {
        use std::path::Component;
        if let (Some(parent), Some(Component::Normal(name))) =
            (p.parent(), p.components().next_back())
        {
            let parent_known = self.known.borrow().get(parent).cloned();
            match parent_known {
                Some(None) => return None,
                Some(Some(pc)) => match std::fs::symlink_metadata(p) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
                    Ok(m) if !m.file_type().is_symlink() => return Some(pc.join(name)),
                    _ => {}
                },
                None => {}
            }
        }
        std::fs::canonicalize(p).ok()
    }
}

/// Whether `pattern` matches all of `path` (case-insensitively).
pub fn matches(pattern: &[Pat], path: &str) -> bool {
    let s: Vec<char> = path.chars().flat_map(char::to_lowercase).collect();
    // reach[j]: the first i pattern elements can match s[..j].
    let mut reach = vec![false; s.len() + 1];
    reach[0] = true;
    for p in pattern {
        reach = step(&reach, &s, p);
    }
    reach[s.len()]
}

/// Whether `pattern` may match a path in the directory `dir`, at any depth: whether some
/// non-empty `t` makes `matches(pattern, dir + "/" + t)` hold (case-insensitively). For a
/// directory too large to list (`spec/hooks.md` §13.3), whose every path counts as protected.
pub fn may_match_under(pattern: &[Pat], dir: &str) -> bool {
    let mut s: Vec<char> = dir.chars().flat_map(char::to_lowercase).collect();
    if s.last() != Some(&'/') {
        s.push('/');
    }
    let n = s.len();
    let mut reach = vec![false; n + 1];
    reach[0] = true;
    for p in pattern {
        // The elements so far match `dir/` whole and at least this one is left, which some
        // non-empty rest matches; or an `Any` under way goes on past `dir/` (a `*` cannot:
        // it stops at the `/`).
        if reach[n] || (*p == Pat::Any && reach.contains(&true)) {
            return true;
        }
        reach = step(&reach, &s, p);
    }
    false
}

/// One pattern element `p` applied to `reach` over `s` ([`matches()`]).
fn step(reach: &[bool], s: &[char], p: &Pat) -> Vec<bool> {
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
    next
}

/// The longest run of literal characters of `pat`, lower case: a path the pattern matches
/// contains it, a cheap test before [`matches()`].
pub fn literal_run(pat: &[Pat]) -> String {
    let mut best = String::new();
    let mut cur = String::new();
    for p in pat {
        match p {
            Pat::Ch(c) => cur.extend(c.to_lowercase()),
            _ => {
                if cur.len() > best.len() {
                    best = std::mem::take(&mut cur);
                }
                cur.clear();
            }
        }
    }
    if cur.len() > best.len() {
        best = cur;
    }
    best
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
mod tests;
