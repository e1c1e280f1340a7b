//! Occurrences of a value in a text, overlapping ones included (`spec/hooks.md` §4.3): the
//! search under the rules that look at what is around an occurrence (token boundaries, whole
//! words, digits not touching further digits).

use aho_corasick::AhoCorasick;

/// Whether `fits(start)` holds for the start of some occurrence of `needle` in `hay`,
/// overlapping ones included: `str::match_indices` gives occurrences that do not overlap, and
/// the one that fits can overlap an earlier one that does not (`4545 45454545` holds
/// `45454545` as a whole word at its second word only; `xfee-fee-fee` holds `fee-fee` at
/// token boundaries after its first dash only). Those are looked at first; when one was seen
/// and none fits, every occurrence is (an automaton that cannot be built counts as a fit: fail
/// closed). O(len(hay) + len(needle)) and the occurrences.
pub(super) fn at_some_occurrence(hay: &str, needle: &str, fits: impl Fn(usize) -> bool) -> bool {
    let mut seen = false;
    for (start, _) in hay.match_indices(needle) {
        if fits(start) {
            return true;
        }
        seen = true;
    }
    seen && match AhoCorasick::new([needle]) {
        Ok(ac) => ac
            .try_find_overlapping_iter(hay)
            .map_or(true, |mut all| all.any(|m| fits(m.start()))),
        Err(_) => true,
    }
}
