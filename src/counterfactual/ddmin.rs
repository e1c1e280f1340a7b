//! Delta debugging: find a 1-minimal set of candidate memories that still makes a run fail.
//!
//! This is the *ddmin* algorithm of A. Zeller and R. Hildebrandt, "Simplifying and Isolating
//! Failure-Inducing Input", IEEE Transactions on Software Engineering 28(2), 2002, §3.2
//! ("A Minimizing Algorithm"), with the test outcomes ✘ (fail), ✔ (pass) and ? (unresolved)
//! of §2. The caller supplies the candidates (for memlineage: the ids of
//! the memories in an agent's context) and a predicate answering "does this subset still
//! produce the wrong answer?"; [`ddmin`] returns a subset that fails and from which no single
//! candidate can be removed without the failure going away.
//!
//! Differences from the paper, none of which change the result it defines:
//! - the two preconditions `test(∅) = ✔` and `test(c_✘) = ✘` are *checked* (two predicate
//!   calls, counted) and violations are reported as their own results instead of assumed;
//! - outcomes are memoized per subset, so no subset is ever tested twice and
//!   [`Culprits::Minimal::calls`] counts real predicate invocations only;
//! - with `n = 2` the complements are the subsets themselves, so the complement pass is skipped.
//!
//! `spec/counterfactual.md` §1 specifies the algorithm step by step and derives the bounds on
//! the number of calls that the property tests check: at most `2·⌈log2 n⌉ + 2` for a single
//! culprit among `n` candidates and at most `3n(n + 1) + 2` for any predicate.
//!
//! Flagging: for entry-id candidates, [`Culprits::culprits`] is exactly the set of entries to
//! hand to quarantine.

use std::collections::HashMap;
use std::convert::Infallible;

/// One predicate answer, the test outcomes of Zeller & Hildebrandt 2002, §2.
///
/// Exhaustive: the three test outcomes of the ddmin algorithm (pass, fail, unresolved).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// ✘: the subset still produces the failure (the wrong answer).
    Fail,
    /// ✔: the subset does not produce the failure.
    Pass,
    /// ?: the run could not tell (e.g. the subset is inconsistent). Treated as "does not
    /// fail" by the search, as in the paper's ddmin.
    Unresolved,
}

/// What [`ddmin`] found.
///
/// Exhaustive: the two results ddmin can have (Zeller & Hildebrandt 2002); a caller handles
/// both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Culprits<T> {
    /// A 1-minimal failing subset: the predicate fails on `culprits`, and on every subset
    /// that leaves out exactly one of them it passes or is unresolved.
    Minimal {
        /// The culprits, in candidate order.
        culprits: Vec<T>,
        /// Their positions in the candidate slice, ascending.
        indices: Vec<usize>,
        /// Real predicate calls made, the two precondition checks included.
        calls: usize,
    },
    /// The predicate fails on the empty set: no candidate is needed for the failure, so none
    /// can be blamed (the cause lies outside the candidates). One call was made.
    FailsWithoutCandidates {
        /// Real predicate calls made (1).
        calls: usize,
    },
    /// The predicate does not fail on the full candidate set: there is nothing to minimize.
    NeverFails {
        /// The outcome on the full set ([`Outcome::Pass`] or [`Outcome::Unresolved`]).
        full: Outcome,
        /// Real predicate calls made (2, or 1 when there are no candidates).
        calls: usize,
    },
}

impl<T> Culprits<T> {
    /// The culprits when a minimal failing subset was found, else the empty slice. For
    /// entry-id candidates these are the entries to flag into quarantine.
    pub fn culprits(&self) -> &[T] {
        match self {
            Culprits::Minimal { culprits, .. } => culprits,
            _ => &[],
        }
    }

    /// Real predicate calls made, whichever the result.
    pub fn calls(&self) -> usize {
        match self {
            Culprits::Minimal { calls, .. }
            | Culprits::FailsWithoutCandidates { calls }
            | Culprits::NeverFails { calls, .. } => *calls,
        }
    }
}

/// Runs ddmin over `candidates` with an infallible predicate.
///
/// `predicate` receives subsets of `candidates` (cloned, in candidate order) and says whether
/// each still fails. It is called at most once per distinct subset. Duplicate candidates are
/// treated as distinct positions.
///
/// # Panics
/// None (the predicate may panic; that propagates).
pub fn ddmin<T: Clone>(
    candidates: &[T],
    mut predicate: impl FnMut(&[T]) -> Outcome,
) -> Culprits<T> {
    match try_ddmin(candidates, |s| Ok::<_, Infallible>(predicate(s))) {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

/// Runs ddmin with a predicate that can fail to run (an external command that cannot be
/// started, a replay that errors).
///
/// # Errors
/// The first error the predicate returns, which aborts the search.
pub fn try_ddmin<T: Clone, E>(
    candidates: &[T],
    predicate: impl FnMut(&[T]) -> Result<Outcome, E>,
) -> Result<Culprits<T>, E> {
    let mut probe = Probe {
        candidates,
        predicate,
        memo: HashMap::new(),
        calls: 0,
    };
    if probe.test(&[])? == Outcome::Fail {
        return Ok(Culprits::FailsWithoutCandidates { calls: probe.calls });
    }
    let all: Vec<usize> = (0..candidates.len()).collect();
    let full = probe.test(&all)?;
    if full != Outcome::Fail {
        return Ok(Culprits::NeverFails {
            full,
            calls: probe.calls,
        });
    }
    let indices = probe.minimize(all)?;
    Ok(Culprits::Minimal {
        culprits: indices.iter().map(|&i| candidates[i].clone()).collect(),
        indices,
        calls: probe.calls,
    })
}

/// The predicate with its memo table and call counter.
struct Probe<'a, T, F> {
    candidates: &'a [T],
    predicate: F,
    /// Outcome per subset, keyed by ascending candidate positions.
    memo: HashMap<Vec<usize>, Outcome>,
    calls: usize,
}

impl<T: Clone, E, F: FnMut(&[T]) -> Result<Outcome, E>> Probe<'_, T, F> {
    /// The predicate's outcome on the subset at positions `subset` (ascending), memoized.
    fn test(&mut self, subset: &[usize]) -> Result<Outcome, E> {
        if let Some(o) = self.memo.get(subset) {
            return Ok(*o);
        }
        // INVARIANT: positions come from 0..candidates.len(), so indexing cannot fail.
        let items: Vec<T> = subset.iter().map(|&i| self.candidates[i].clone()).collect();
        self.calls += 1;
        let o = (self.predicate)(&items)?;
        self.memo.insert(subset.to_vec(), o);
        Ok(o)
    }

    /// ddmin2 of the paper, as a loop. Requires `test(c) = Fail` and `test(∅) ≠ Fail`.
    fn minimize(&mut self, mut c: Vec<usize>) -> Result<Vec<usize>, E> {
        let mut n = 2usize;
        while c.len() >= 2 {
            let granularity = n.min(c.len());
            let parts = split(&c, granularity);
            // Reduce to subset: some Δi fails → ddmin2(Δi, 2).
            if let Some(part) = self.first_failing(parts.iter().cloned())? {
                c = part;
                n = 2;
                continue;
            }
            // Reduce to complement: some ∇i fails → ddmin2(∇i, max(n − 1, 2)).
            if granularity > 2 {
                let complements = (0..parts.len()).map(|i| complement(&parts, i));
                if let Some(comp) = self.first_failing(complements)? {
                    c = comp;
                    n = (granularity - 1).max(2);
                    continue;
                }
            }
            // Increase granularity, or stop: c is 1-minimal.
            if granularity < c.len() {
                n = (2 * granularity).min(c.len());
            } else {
                break;
            }
        }
        Ok(c)
    }

    fn first_failing(
        &mut self,
        subsets: impl Iterator<Item = Vec<usize>>,
    ) -> Result<Option<Vec<usize>>, E> {
        for s in subsets {
            if self.test(&s)? == Outcome::Fail {
                return Ok(Some(s));
            }
        }
        Ok(None)
    }
}

/// Splits `c` into `n` consecutive parts whose sizes differ by at most one, the larger first.
/// Requires `1 <= n <= c.len()`.
fn split(c: &[usize], n: usize) -> Vec<Vec<usize>> {
    let (base, extra) = (c.len() / n, c.len() % n);
    let mut parts = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let len = base + usize::from(i < extra);
        parts.push(c[start..start + len].to_vec());
        start += len;
    }
    parts
}

/// All parts but part `i`, concatenated (ascending, since the parts are).
fn complement(parts: &[Vec<usize>], i: usize) -> Vec<usize> {
    parts
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .flat_map(|(_, p)| p.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_even_and_covers() {
        let c: Vec<usize> = (0..7).collect();
        let parts = split(&c, 3);
        assert_eq!(parts, vec![vec![0, 1, 2], vec![3, 4], vec![5, 6]]);
        assert_eq!(complement(&parts, 1), vec![0, 1, 2, 5, 6]);
    }

    #[test]
    fn memo_counts_each_subset_once() {
        let mut seen = std::collections::HashSet::new();
        let r = ddmin(&[1, 2, 3, 4, 5, 6], |s| {
            assert!(seen.insert(s.to_vec()), "subset {s:?} tested twice");
            if s.contains(&2) && s.contains(&5) {
                Outcome::Fail
            } else {
                Outcome::Pass
            }
        });
        assert_eq!(r.culprits(), &[2, 5]);
        assert_eq!(r.calls(), seen.len());
    }

    #[test]
    fn errors_abort_the_search() {
        let mut calls = 0;
        let r: Result<Culprits<u8>, &str> = try_ddmin(&[1, 2, 3], |_| {
            calls += 1;
            if calls == 3 {
                Err("boom")
            } else if calls == 2 {
                Ok(Outcome::Fail)
            } else {
                Ok(Outcome::Pass)
            }
        });
        assert_eq!(r, Err("boom"));
    }
}
