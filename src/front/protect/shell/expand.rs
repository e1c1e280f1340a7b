//! The expansions the lexer performs on a word itself, in bash's order (bash(1),
//! "EXPANSION"): brace expansion (`a{b,c}d` is `abd acd`, `{1..3}` is `1 2 3`), then tilde
//! expansion of each word it gives (`~`, `~+`, `~-`, `~NAME`). Both act only on unquoted
//! characters, which the lexer marks as *bare*; `${…}`, `$(…)` and quoted text are pieces of
//! their own and never open, separate or close a brace expansion.
//!
//! Brace expansion follows bash's `braces.c` (`brace_expand`, `brace_gobbler`,
//! `expand_seqterm`): the first `{` that a `}` closes with a `,` or a `..` between them at its
//! own level opens an expansion; text before it is a preamble, text after it a postamble
//! expanded in turn; a `{` first in the word and followed by `}` or the end is no expansion
//! (`{}`); a `{…}` whose text is neither alternatives nor a valid sequence stays as written;
//! words the expansion leaves empty are removed. An expansion over the bound (more than
//! [`MAX_WORDS`] words for one word, more than a text's budget, or more than
//! [`MAX_OPENS`] unquoted `{` in one word) is not spelled out: the word is given once, with
//! its braced part as any characters, and the text is marked (`Lexed::unexpanded`).
//!
//! Before attack review 55 the lexer read `{…}` as unknown characters: `mytool .e{nv,x}`
//! named a pattern, not `.env`, and passed with exit 0 in a session that had read nothing; so
//! did `~NAME/…` (`mytool ~root/.aws/credentials`).

use super::Piece;

/// Most words the brace expansion of one word gives before it counts as over the bound.
pub const MAX_WORDS: usize = 1024;

/// Most unquoted `{` in one word whose brace expansion is spelled out (the search for a closing
/// brace is quadratic in them, as bash's is).
const MAX_OPENS: usize = 16;

/// A character source of a word before its expansions: `bare` when it is an unquoted literal
/// character (only those open, separate and close braces, spell a sequence, or start a tilde
/// prefix).
#[derive(Clone, Debug)]
pub(super) struct Item {
    pub(super) piece: Piece,
    pub(super) bare: bool,
}

impl Item {
    /// Whether this is the unquoted character `c`.
    fn is(&self, c: char) -> bool {
        self.bare && self.piece == Piece::Lit(c)
    }
}

/// What the brace expansions of one lexed text may still give: words, and pieces (those of the
/// words given and of the words expanded, whose length bounds the work).
#[derive(Clone, Copy, Debug)]
pub(super) struct Budget {
    words: usize,
    pieces: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            words: 4 * MAX_WORDS,
            pieces: 1 << 18,
        }
    }
}

/// The words `items` gives after brace and tilde expansion, or `None` when its brace expansion
/// is over the bound (then [`cover`] is the word to use).
pub(super) fn words(items: &[Item], budget: &mut Budget) -> Option<Vec<Vec<Piece>>> {
    if !items.iter().any(|x| x.is('{')) {
        return Some(tilde_expanded(items));
    }
    // The word's length is charged whether or not it is spelled out: a text's work is bounded.
    if items.iter().filter(|x| x.is('{')).count() > MAX_OPENS || items.len() > budget.pieces {
        return None;
    }
    budget.pieces -= items.len();
    let limit = Budget {
        words: budget.words.min(MAX_WORDS),
        pieces: budget.pieces,
    };
    let expanded = expand(items, &limit)?;
    let pieces: usize = expanded.iter().map(Vec::len).sum();
    budget.words -= expanded.len().min(budget.words);
    budget.pieces -= pieces.min(budget.pieces);
    Some(
        expanded
            .into_iter()
            .filter(|w| !w.is_empty())
            .flat_map(|w| tilde_expanded(&w))
            .collect(),
    )
}

/// The word to use for `items` when its brace expansion is over the bound: its text from the
/// first unquoted `{` to the last unquoted `}` as any characters (a pattern every word of the
/// expansion matches), then tilde expansion.
pub(super) fn cover(items: &[Item]) -> Vec<Piece> {
    let first = items.iter().position(|x| x.is('{'));
    let last = items.iter().rposition(|x| x.is('}'));
    match (first, last) {
        (Some(a), Some(b)) if a < b => {
            let mut out = items[..a].to_vec();
            out.push(Item {
                piece: Piece::Unknown,
                bare: false,
            });
            out.extend_from_slice(&items[b + 1..]);
            tilde_expanded(&out).into_iter().next().unwrap_or_default()
        }
        _ => tilde_expanded(items).into_iter().next().unwrap_or_default(),
    }
}

/// The alternatives of a pattern group `(a|b)` (zsh's alternation, bash's `@(…)` and
/// `?(…)`), as the unquoted text of a brace expansion giving each as a word (`{a,b}`, with an
/// empty one when `optional`): `None` when the group holds what this reading does not follow
/// (quotes, escapes, expansions, nested groups, a `,` or a brace), or has only one
/// alternative and is not optional (then its text alone).
pub(super) fn alternation(inner: &str, optional: bool) -> Option<Vec<char>> {
    if inner.contains(['\'', '"', '\\', '$', '`', '(', ')', ',', '{', '}']) {
        return None;
    }
    let mut alts: Vec<&str> = inner.split('|').collect();
    if optional {
        alts.push("");
    }
    if alts.len() == 1 {
        return Some(inner.chars().collect());
    }
    let mut out = vec!['{'];
    out.extend(alts.join(",").chars());
    out.push('}');
    Some(out)
}

/// `~` and the text after it up to the first `/`, a tilde prefix (bash(1), "Tilde Expansion"),
/// as the directory it names, followed by the rest: `rest` is what follows the `~`.
///
/// - nothing: the home directory ([`Piece::Home`]);
/// - `+`, `-`: the working directory, the previous one (`$PWD`, `$OLDPWD`);
/// - `0`, `+0`: the top of the directory stack, which is the working directory (`$PWD`);
/// - other `N`, `+N`, `-N`: an entry of the directory stack, any directory
///   ([`Piece::Unknown`]);
/// - anything else (`~root`, `~$USER`, which zsh expands as a name): the home directory of a
///   user. Which user names are the agent's own cannot be told (a test's home is not its
///   passwd entry's), so any is read as the home directory (fail closed: `~NAME/.aws/…` is
///   judged as `~/.aws/…`). A word holds a second reading of it (`tilde_expanded`).
pub(crate) fn tilde(rest: &[Piece]) -> Vec<Piece> {
    let end = rest
        .iter()
        .position(|p| *p == Piece::Lit('/'))
        .unwrap_or(rest.len());
    let prefix: Option<String> = rest[..end]
        .iter()
        .map(|p| match p {
            Piece::Lit(c) => Some(*c),
            _ => None,
        })
        .collect();
    let head = match prefix.as_deref() {
        Some("+" | "0" | "+0") => Piece::Var("PWD".to_string()),
        Some("-") => Piece::Var("OLDPWD".to_string()),
        Some(p) if is_stack_entry(p) => Piece::Unknown,
        _ => Piece::Home,
    };
    std::iter::once(head)
        .chain(rest[end..].iter().cloned())
        .collect()
}

/// Whether a tilde prefix is `N`, `+N` or `-N` (bash's `dirs` entries).
fn is_stack_entry(p: &str) -> bool {
    let digits = p.strip_prefix(['+', '-']).unwrap_or(p);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

/// The words a word gives after brace expansion (one, or two for `~NAME`): its tilde prefix
/// expanded when it starts with an unquoted `~`, and zsh's `=name` (the path of the command `name`, option EQUALS, on by
/// default) read as the lexer reads it at a word's start when an alternative starts the word
/// with it (`{=curl,x}`): a directory only known when it runs, then `/name`.
///
/// `~NAME` is also, in zsh, a named directory (`hash -d NAME=DIR`) or the value of a
/// parameter holding an absolute path (`d=/x; … ~d/…`, `~PWD`). The word is then two: the
/// user's home directory's (as bash reads it, [`tilde`]) and the parameter's (`$NAME/…`,
/// [`Piece::Var`]: what an earlier assignment or the working directory makes it, else any
/// directory; [`Piece::Unknown`] for a name that cannot be a parameter's), each judged by
/// every rule. Before attack review 58 it was the home
/// directory's only, and `g=<ledger's directory>; rm -f ~g/*.ledger` deleted the ledger with
/// exit 0.
fn tilde_expanded(items: &[Item]) -> Vec<Vec<Piece>> {
    let pieces = |xs: &[Item]| xs.iter().map(|x| x.piece.clone()).collect::<Vec<_>>();
    match items {
        [first, rest @ ..] if first.is('~') => {
            let home = tilde(&pieces(rest));
            let name = rest
                .iter()
                .take_while(|x| x.piece != Piece::Lit('/'))
                .count();
            match home.first() {
                Some(Piece::Home) if name > 0 => {
                    let named: Option<String> = rest[..name]
                        .iter()
                        .map(|x| match x.piece {
                            Piece::Lit(c) if c.is_ascii_alphanumeric() || c == '_' => Some(c),
                            _ => None,
                        })
                        .collect();
                    let mut any = vec![match named {
                        Some(n) if !n.starts_with(|c: char| c.is_ascii_digit()) => Piece::Var(n),
                        _ => Piece::Unknown,
                    }];
                    any.extend(pieces(&rest[name..]));
                    vec![home, any]
                }
                _ => vec![home],
            }
        }
        [first, next, ..]
            if first.is('=')
                && matches!(next.piece, Piece::Lit(c) if c.is_alphanumeric() || c == '_' || c == '.') =>
        {
            let mut out = vec![Piece::Unknown, Piece::Lit('/')];
            out.extend(pieces(&items[1..]));
            vec![out]
        }
        _ => vec![pieces(items)],
    }
}

/// bash's `brace_expand` of `text`, or `None` over `limit`.
fn expand(text: &[Item], limit: &Budget) -> Option<Vec<Vec<Item>>> {
    let Some((open, close)) = group(text) else {
        return Some(vec![text.to_vec()]);
    };
    let (pre, amble, post) = (&text[..open], &text[open + 1..close], &text[close + 1..]);
    let tack = if amble.iter().any(|x| x.is(',')) {
        let mut alts = Vec::new();
        for part in alternatives(amble) {
            alts.extend(expand(part, limit)?);
            if alts.len() > limit.words {
                return None;
            }
        }
        alts
    } else {
        match sequence(amble, limit.words)? {
            Some(values) => values,
            // Neither alternatives nor a valid sequence: the braces as written.
            None => vec![text[open..=close].to_vec()],
        }
    };
    let posts = expand(post, limit)?;
    if tack.len().saturating_mul(posts.len()) > limit.words {
        return None;
    }
    let mut out = Vec::new();
    let mut size = 0usize;
    for t in &tack {
        for p in &posts {
            size += pre.len() + t.len() + p.len();
            if size > limit.pieces {
                return None;
            }
            out.push([pre, t.as_slice(), p.as_slice()].concat());
        }
    }
    Some(out)
}

/// The first brace expansion of `text`: the index of its `{` and of the `}` closing it.
fn group(text: &[Item]) -> Option<(usize, usize)> {
    let mut from = 0;
    loop {
        let open = (from..text.len()).find(|&k| {
            // A `{` first in the word followed by `}` or nothing is no expansion (`{}`).
            let alone = k == 0 && text.get(1).is_none_or(|n| n.is('}'));
            text[k].is('{') && !alone
        })?;
        if let Some(close) = closing(text, open + 1) {
            return Some((open, close));
        }
        from = open + 1;
    }
}

/// The `}` from `from` that closes a brace expansion: at the level it starts at, after a `,` or
/// a `..` (not `..}`) at that level (bash's `brace_gobbler` for `}`).
fn closing(text: &[Item], from: usize) -> Option<usize> {
    let (mut level, mut separators) = (0usize, 0usize);
    for k in from..text.len() {
        let x = &text[k];
        let dots = x.is('.')
            && text.get(k + 1).is_some_and(|y| y.is('.'))
            && !text.get(k + 2).is_some_and(|y| y.is('}'));
        if x.is('}') && level == 0 && separators > 0 {
            return Some(k);
        }
        if x.is('{') {
            level += 1;
        } else if x.is('}') && level > 0 {
            level -= 1;
        } else if level == 0 && (x.is(',') || dots) {
            separators += 1;
        }
    }
    None
}

/// The alternatives of a brace expansion's text: split at its own level's `,`.
fn alternatives(amble: &[Item]) -> Vec<&[Item]> {
    let mut out = Vec::new();
    let (mut level, mut start) = (0usize, 0usize);
    for (k, x) in amble.iter().enumerate() {
        if x.is('{') {
            level += 1;
        } else if x.is('}') && level > 0 {
            level -= 1;
        } else if x.is(',') && level == 0 {
            out.push(&amble[start..k]);
            start = k + 1;
        }
    }
    out.push(&amble[start..]);
    out
}

/// A sequence expression `X..Y[..INCR]` (bash's `expand_seqterm`): `Some(Some(values))`,
/// `Some(None)` when the text is not a valid one, `None` when it has more than `limit` values.
fn sequence(amble: &[Item], limit: usize) -> Option<Option<Vec<Vec<Item>>>> {
    let text: Option<String> = amble
        .iter()
        .map(|x| match &x.piece {
            Piece::Lit(c) if x.bare => Some(*c),
            _ => None,
        })
        .collect();
    let Some(seq) = text.as_deref().and_then(Seq::parse) else {
        return Some(None);
    };
    let count = seq.count();
    if count > limit as u128 {
        return None;
    }
    Some(Some(seq.values(count)))
}

/// A valid sequence expression: its first and last values, step and zero-padded width (0: not
/// padded), over letters (`chars`) or integers.
struct Seq {
    start: i64,
    end: i64,
    incr: i64,
    width: usize,
    chars: bool,
}

impl Seq {
    /// Parses `X..Y[..INCR]`: both integers or both single ASCII letters; `INCR` an integer.
    fn parse(text: &str) -> Option<Seq> {
        let (lhs, rest) = text.split_once("..")?;
        let (rhs, incr) = match rest.split_once("..") {
            Some((r, i)) => (r, Some(i)),
            None => (rest, None),
        };
        let incr = match incr {
            Some(i) => integer(i)?,
            None => 1,
        };
        let letter = |s: &str| {
            let mut cs = s.chars();
            match (cs.next(), cs.next()) {
                (Some(c), None) if c.is_ascii_alphabetic() => Some(c as i64),
                _ => None,
            }
        };
        if let (Some(a), Some(b)) = (letter(lhs), letter(rhs)) {
            return Some(Seq {
                start: a,
                end: b,
                incr,
                width: 0,
                chars: true,
            });
        }
        let (start, end) = (integer(lhs)?, integer(rhs)?);
        let padded = |s: &str| {
            let digits = s.strip_prefix('-').unwrap_or(s);
            digits.len() > 1 && digits.starts_with('0')
        };
        let width = if padded(lhs) || padded(rhs) {
            lhs.len().max(rhs.len())
        } else {
            0
        };
        Some(Seq {
            start,
            end,
            incr,
            width,
            chars: false,
        })
    }

    /// How many values the sequence has (at least one).
    fn count(&self) -> u128 {
        let span = (i128::from(self.end) - i128::from(self.start)).unsigned_abs();
        let step = i128::from(self.incr).unsigned_abs().max(1);
        span / step + 1
    }

    /// Its `count` values, each as the characters of a word.
    fn values(&self, count: u128) -> Vec<Vec<Item>> {
        let step = i128::from(self.incr).abs().max(1);
        let step = if self.end < self.start { -step } else { step };
        (0..count)
            .map(|k| {
                // INVARIANT: start + k * step lies between start and end, within i64.
                let n = i128::from(self.start) + k as i128 * step;
                let text = if self.chars {
                    u8::try_from(n).map(char::from).unwrap_or('?').to_string()
                } else {
                    format!("{:0width$}", n, width = self.width)
                };
                text.chars()
                    .map(|c| Item {
                        piece: Piece::Lit(c),
                        bare: false,
                    })
                    .collect()
            })
            .collect()
    }
}

/// A decimal integer with an optional sign (bash's `legal_number`), if it fits in 64 bits.
fn integer(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}
