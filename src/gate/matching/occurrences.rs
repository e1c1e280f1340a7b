//! Occurrences of a value in a text, overlapping ones included (`spec/hooks.md` §4.3): the
//! search under the rules that look at what is around an occurrence (token boundaries, whole
//! words, digits not touching further digits).

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use std::cell::RefCell;
use std::rc::Rc;

/// Whether `fits(start)` holds for the start of some occurrence of `needle` in `hay`,
/// overlapping ones included: a substring search (`memchr::memmem`, as `str::match_indices`)
/// gives occurrences that do not overlap, and the one that fits can overlap an earlier one that does not (`4545 45454545` holds
/// `45454545` as a whole word at its second word only; `xfee-fee-fee` holds `fee-fee` at
/// token boundaries after its first dash only). Those are looked at first; when one was seen
/// and none fits, every occurrence is (an automaton that cannot be built counts as a fit: fail
/// closed). O(len(hay) + len(needle)) and the occurrences. A match of the needle's bytes starts
/// at a character boundary of `hay`: both are UTF-8, and the needle does not start with a
/// continuation byte.
pub(super) fn at_some_occurrence(hay: &str, needle: &str, fits: impl Fn(usize) -> bool) -> bool {
    if needle.is_empty() {
        // At every character boundary, as `str::match_indices` gives them (memmem would give
        // every byte).
        return hay.match_indices(needle).any(|(start, _)| fits(start));
    }
    let mut seen = false;
    for start in memchr::memmem::find_iter(hay.as_bytes(), needle.as_bytes()) {
        if fits(start) {
            return true;
        }
        seen = true;
    }
    seen && match overlapping(needle) {
        Some(ac) => ac
            .try_find_overlapping_iter(hay)
            .map_or(true, |mut all| all.any(|m| fits(m.start()))),
        None => true,
    }
}

/// How many automata [`overlapping`] keeps per thread.
const KEPT: usize = 8;

/// The longest needle, in bytes, whose automaton [`overlapping`] keeps (a longer one is built
/// for each search, so that what is kept stays a few hundred kilobytes).
const KEPT_NEEDLE: usize = 4096;

thread_local! {
    /// The automata [`overlapping`] built last on this thread, with their needles, newest last.
    static AUTOMATA: RefCell<Vec<(Box<str>, Rc<AhoCorasick>)>> = const { RefCell::new(Vec::new()) };
}

/// An automaton that finds every occurrence of `needle`, overlapping ones included (`None` when
/// it cannot be built). A decision searches one value in each read the index names
/// (`spec/hooks.md` §4.7), so the last [`KEPT`] automata built on the thread are kept; and the
/// kind built is a non-contiguous NFA: the kind `AhoCorasick::new` picks for one pattern, a
/// DFA, cost several times the search of a 3 KB text to build (`spec/benchmarks.md`).
fn overlapping(needle: &str) -> Option<Rc<AhoCorasick>> {
    AUTOMATA.with(|kept| {
        let mut kept = kept.try_borrow_mut().ok()?;
        if let Some((_, ac)) = kept.iter().find(|(n, _)| **n == *needle) {
            return Some(Rc::clone(ac));
        }
        let ac = AhoCorasick::builder()
            .kind(Some(AhoCorasickKind::NoncontiguousNFA))
            .build([needle])
            .ok()
            .map(Rc::new)?;
        if needle.len() <= KEPT_NEEDLE {
            if kept.len() >= KEPT {
                kept.remove(0);
            }
            kept.push((needle.into(), Rc::clone(&ac)));
        }
        Some(ac)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every start of `needle` in `hay`, overlapping ones included, by trying each byte.
    fn starts(hay: &str, needle: &str) -> Vec<usize> {
        (0..hay.len())
            .filter(|i| hay.is_char_boundary(*i) && hay[*i..].starts_with(needle))
            .collect()
    }

    /// Kept automata answer for their own needle only: more needles than are kept, searched in
    /// turn and again, each with a `fits` that holds only at its last (or second) start, which
    /// the non-overlapping pass can miss, give what trying every byte gives.
    #[test]
    fn kept_automata_answer_for_their_own_needle() {
        let hay = "4545 45454545 xfee-fee-fee aaaaaa abab-abab-abab 12121212 fee-fee";
        let needles: Vec<String> = [
            "45", "4545", "454545", "45454545", "fee", "fee-fee", "ee-f", "aa", "aaa", "aaaa",
            "abab", "ab-abab", "1212", "121212", "2121", "nothing",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(std::iter::once("x".repeat(KEPT_NEEDLE + 1)))
        .collect();
        for round in 0..3 {
            for needle in needles.iter().rev().skip(round) {
                let all = starts(hay, needle);
                for pick in [all.last().copied(), all.get(1).copied()] {
                    assert_eq!(
                        at_some_occurrence(hay, needle, |s| Some(s) == pick),
                        pick.is_some(),
                        "{needle:?} at {pick:?} in round {round}"
                    );
                }
            }
        }
    }
}
