//! What a text must hold for a value to match it (`spec/hooks.md` §4.7): the index keys of a
//! [`Haystack`] and the clauses of a [`Needle`], such that
//! `haystack.matches_needle(needle)` ⇒ the haystack holds every key of one of the needle's
//! clauses. A [`super::index::ReadIndex`] looks up those keys to skip the reads that cannot
//! match; it never decides a match. Each clause below names the rule of
//! [`Haystack::matches_needle`] it stands for and why that rule cannot hold without it.

use super::{Haystack, Needle, NumberNeedle, Rest, StrNeedle, MIN_NORMAL_CHARS};

/// One token of a text in one of the spaces (`Space`), hashed (FNV-1a, 64 bits). Two tokens may share
/// a key: a collision only makes a read a candidate that [`Haystack::matches_needle`] then
/// rejects, it never hides one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(u64);

/// What a needle requires of a haystack's keys: one clause at least must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Clause {
    /// The haystack holds every one of these keys (never empty).
    All(Vec<Key>),
    /// The haystack holds this normal form as a run of whole consecutive words: the normal form
    /// is one of its words (`Space::Word`), or the run's first two words, a prefix of it and
    /// what follows, are a `Space::Pair` of it.
    WordRun(String),
}

/// The kinds of token a text is indexed by; a key hashes the kind before the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Space {
    /// A maximal run of ASCII digits of one of the haystack's strings (for `contains`).
    Digits = 1,
    /// A maximal run of alphanumeric characters of one of the haystack's strings (for
    /// `at_boundaries` over `strings`).
    Run = 2,
    /// The same over the lower-cased strings (for e-mail addresses and hosts).
    LowerRun = 3,
    /// A word of the haystack's [`super::Words`] (fold, split at non-alphanumerics).
    Word = 4,
    /// An amount reading, canonical ([`super::amounts_in`]).
    Amount = 5,
    /// An IBAN token, closed up ([`super::iban_tokens`]).
    Iban = 6,
    /// A whole short field ([`super::add_fields`]).
    Field = 7,
    /// Two words of the haystack's [`super::Words`] one right after the other ([`pair_key`]).
    Pair = 8,
    /// Two maximal runs of ASCII digits of one of the haystack's strings with exactly one
    /// character between them, as written (`0.01`, `5,000`: [`digit_pairs`]).
    DigitPair = 9,
    /// A maximal run of alphanumeric characters of the [`super::fold`]ed strings (for e-mail
    /// addresses and hosts).
    FoldRun = 10,
    /// Two consecutive maximal runs of alphanumeric characters of one of the haystack's
    /// strings, with what stands between them, as written (`more-51`, `51.yaml`: [`run_pairs`];
    /// for `at_boundaries` over `strings`, far rarer than either run).
    RunPair = 11,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a over the space's byte, then the token's bytes, fed one at a time (so that the keys
/// of every prefix of a string cost one pass, [`Clause::WordRun`]).
#[derive(Clone, Copy)]
pub(crate) struct KeyHasher(u64);

impl KeyHasher {
    pub(crate) fn new(space: Space) -> Self {
        KeyHasher(FNV_OFFSET).byte(space as u8)
    }

    pub(crate) fn byte(self, b: u8) -> Self {
        KeyHasher((self.0 ^ u64::from(b)).wrapping_mul(FNV_PRIME))
    }

    pub(crate) fn feed(self, s: &str) -> Self {
        s.bytes().fold(self, KeyHasher::byte)
    }

    pub(crate) fn key(self) -> Key {
        Key(self.0)
    }
}

/// The key of `token` in `space`.
pub(crate) fn key(space: Space, token: &str) -> Key {
    token
        .bytes()
        .fold(KeyHasher::new(space), KeyHasher::byte)
        .key()
}

/// The key of the word `first` followed by the word `second` (`Space::Pair`): the bytes of
/// `first`, 0xFF (never in UTF-8), then those of `second`.
pub(crate) fn pair_key(first: &str, second: &str) -> Key {
    pair_hasher(first).feed(second).key()
}

/// The hasher of a `Space::Pair` key fed with `first` and the separator, ready for the
/// second word's bytes.
pub(crate) fn pair_hasher(first: &str) -> KeyHasher {
    KeyHasher::new(Space::Pair).feed(first).byte(0xFF)
}

/// The maximal runs of ASCII digits of `s`.
fn digit_runs(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|r| !r.is_empty())
}

/// Each two consecutive maximal runs of ASCII digits of `s` with exactly one character between
/// them, as the slice of `s` from the first run's start to the second's end (`"in 0.010s"` →
/// `0.010`; `"1,234,567"` → `1,234` and `234,567`).
pub(crate) fn digit_pairs(s: &str) -> impl Iterator<Item = &str> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in s.char_indices() {
        match (c.is_ascii_digit(), start) {
            (true, None) => start = Some(i),
            (false, Some(b)) => {
                runs.push((b, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(b) = start {
        runs.push((b, s.len()));
    }
    let pairs: Vec<&str> = runs
        .windows(2)
        .filter_map(|w| {
            let ((a, ae), (b, be)) = (w[0], w[1]);
            let gap = s.get(ae..b)?;
            (gap.chars().count() == 1).then(|| s.get(a..be)).flatten()
        })
        .collect();
    pairs.into_iter()
}

/// The maximal runs of alphanumeric characters of `s`.
fn alnum_runs(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|r| !r.is_empty())
}

/// Each two consecutive maximal runs of alphanumeric characters of `s`, as the slice of `s` from
/// the first run's start to the second's end, the characters between them included
/// (`"bills/more-51.yaml"` → `bills/more`, `more-51`, `51.yaml`). O(len(s)) slices.
fn run_pairs(s: &str) -> impl Iterator<Item = &str> {
    let base = s.as_ptr() as usize;
    let spans: Vec<(usize, usize)> = alnum_runs(s)
        .map(|r| {
            let at = r.as_ptr() as usize - base;
            (at, at + r.len())
        })
        .collect();
    let pairs: Vec<&str> = spans
        .windows(2)
        .filter_map(|w| s.get(w[0].0..w[1].1))
        .collect();
    pairs.into_iter()
}

impl Haystack {
    /// The keys this text holds, each once, and the length in bytes of its longest
    /// `Space::Word`. O(size of the haystack). A haystack that matches every value
    /// ([`Haystack::is_everything`]) holds none: an index keeps it a candidate of every value.
    pub fn keys(&self) -> (Vec<Key>, usize) {
        let mut keys = Vec::new();
        for s in &self.strings {
            keys.extend(digit_runs(s).map(|r| key(Space::Digits, r)));
            keys.extend(digit_pairs(s).map(|p| key(Space::DigitPair, p)));
            keys.extend(alnum_runs(s).map(|r| key(Space::Run, r)));
            keys.extend(run_pairs(s).map(|p| key(Space::RunPair, p)));
        }
        for s in &self.lower {
            keys.extend(alnum_runs(s).map(|r| key(Space::LowerRun, r)));
        }
        for s in &self.folded {
            keys.extend(alnum_runs(s).map(|r| key(Space::FoldRun, r)));
        }
        let mut longest = 0;
        for w in &self.normal {
            let mut previous: Option<&str> = None;
            // `starts` and `ends` are strictly increasing and pair up: every word is non-empty.
            for (&start, &end) in w.starts.iter().zip(&w.ends) {
                if let Some(word) = w.joined.get(start..end) {
                    longest = longest.max(word.len());
                    keys.push(key(Space::Word, word));
                    if let Some(p) = previous {
                        keys.push(pair_key(p, word));
                    }
                    previous = Some(word);
                }
            }
        }
        keys.extend(self.amounts.iter().map(|a| key(Space::Amount, a)));
        keys.extend(self.ibans.iter().map(|i| key(Space::Iban, i)));
        keys.extend(self.fields.iter().map(|f| key(Space::Field, f)));
        keys.sort_unstable();
        keys.dedup();
        (keys, longest)
    }

    /// Whether this haystack matches every value any text could match
    /// ([`Haystack::unverifiable`], [`Haystack::unknown`]).
    pub fn is_everything(&self) -> bool {
        self.everything
    }
}

impl Needle {
    /// What a haystack must hold for this needle to match it: `Some(clauses)`, one of which
    /// holds in every haystack it matches (no clause: it matches none, e.g. `null`), or `None`
    /// when no key is guaranteed (a string with no letter or digit), so that every read must
    /// be searched. Haystacks that match every value are not covered by the clauses.
    pub fn clauses(&self) -> Option<Vec<Clause>> {
        let mut out = Vec::new();
        self.clauses_into(&mut out)?;
        Some(out)
    }

    fn clauses_into(&self, out: &mut Vec<Clause>) -> Option<()> {
        match self {
            Needle::Never => Some(()),
            Needle::Number(n) => n.clauses_into(out),
            Needle::Str(s) => s.clauses_into(out),
            Needle::Any(items) => items.iter().try_for_each(|n| n.clauses_into(out)),
        }
    }
}

impl NumberNeedle {
    /// [`Haystack::matches_number`]'s three rules.
    fn clauses_into(&self, out: &mut Vec<Clause>) -> Option<()> {
        // `contains(h, r)`: `r` occurs in a string of the text with no ASCII digit right before
        // or after it, so each of its runs of ASCII digits is a maximal run of the text (one
        // inside `r` is bounded by `r`'s own non-digits).
        // With two runs or more, each separated by one character (`0.01`, `5,000.00`), each
        // consecutive two with the character between them is, likewise, a pair of consecutive
        // maximal runs of the text with that character between ([`Space::DigitPair`]): far
        // rarer than runs such as `0` or `01`.
        for r in &self.renderings {
            let pairs: Vec<&str> = digit_pairs(r).collect();
            if pairs.len() + 1 == digit_runs(r).count() && !pairs.is_empty() {
                out.push(Clause::All(
                    pairs.iter().map(|p| key(Space::DigitPair, p)).collect(),
                ));
            } else {
                out.push(all(digit_runs(r).map(|d| key(Space::Digits, d)))?);
            }
        }
        // `amounts.contains(c)`.
        if let Some(c) = &self.canonical {
            out.push(Clause::All(vec![key(Space::Amount, c)]));
        }
        // `Words::holds(d)`: a run of whole words spells `d`.
        if let Some(d) = &self.words {
            out.push(Clause::WordRun(d.clone()));
        }
        Some(())
    }
}

impl StrNeedle {
    /// [`Haystack::matches_str`]'s rules, in its order.
    fn clauses_into(&self, out: &mut Vec<Clause>) -> Option<()> {
        if let Some(n) = &self.number {
            n.clauses_into(out)?;
        }
        out.extend(
            self.readings
                .iter()
                .map(|a| Clause::All(vec![key(Space::Amount, a)])),
        );
        if self.digits {
            // `contains(h, raw)` with `raw` all ASCII digits: `raw` is a maximal digit run.
            out.push(Clause::All(vec![key(Space::Digits, &self.raw)]));
            if self.normal.len() >= MIN_NORMAL_CHARS {
                out.push(Clause::WordRun(self.normal.clone()));
            }
            return Some(());
        }
        if self.normal.chars().count() >= MIN_NORMAL_CHARS {
            out.push(Clause::WordRun(self.normal.clone()));
        }
        match &self.rest {
            Rest::Blank => {}
            // `fields.contains(t)`.
            Rest::Short(t) => out.push(Clause::All(vec![key(Space::Field, t)])),
            // `at_boundaries(h, l)` over the lower-cased strings: see `Rest::Text`.
            Rest::EmailOrHost { lower, folded } => {
                for l in lower {
                    out.push(all(alnum_runs(l).map(|r| key(Space::LowerRun, r)))?);
                }
                for f in folded {
                    out.push(all(alnum_runs(f).map(|r| key(Space::FoldRun, r)))?);
                }
            }
            Rest::Iban(iban) => {
                // `ibans.contains(iban)`, or `at_boundaries(h, iban)`: `iban` is one run of
                // ASCII letters and digits, see `Rest::Text`.
                out.push(Clause::All(vec![key(Space::Iban, iban)]));
                out.push(Clause::All(vec![key(Space::Run, iban)]));
            }
            // `at_boundaries(h, t)`: where `t` starts with a letter or digit, none is right
            // before it in `h`, and where it ends with one, none is right after; so each
            // alphanumeric run of `t` is a maximal run of `h` (one inside `t` is bounded by
            // `t`'s own characters). A `t` without letters or digits has no key. Two consecutive
            // runs of `t` are then two consecutive maximal runs of `h` with `t`'s characters
            // between them: a `Space::RunPair` of `h` (the rarest key is looked up).
            Rest::Text(t) => out.push(all(alnum_runs(t)
                .map(|r| key(Space::Run, r))
                .chain(run_pairs(t).map(|p| key(Space::RunPair, p))))?),
        }
        Some(())
    }
}

/// `Clause::All` of `keys`, or `None` when there is none (a clause without keys would hold in
/// every haystack: the caller must search them all).
fn all(keys: impl Iterator<Item = Key>) -> Option<Clause> {
    let keys: Vec<Key> = keys.collect();
    (!keys.is_empty()).then_some(Clause::All(keys))
}
