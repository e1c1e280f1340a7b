//! Forensics: healing a quarantined fact by vote over clean, independent sources
//! (`spec/forensics.md` §4).
//!
//! Rule: among the candidate support entries, only *clean* ones vote: in the log, not
//! quarantined, not tombstoned, labelled Trusted or Derived-Trusted. Each clean entry's claim
//! is read from its content by a caller-supplied function. Entries are grouped into
//! *independent sources*: two supporters of the same claim are one vote when their root
//! ancestors (the parentless entries they descend from over any edge, themselves if
//! parentless; a replacement also reaches back through the entry it replaces) intersect — two
//! entries derived from the same document are one vote, not two.
//! A claim wins when it has at least [`MIN_VOTES`] votes and strictly more than every other
//! claim; the fact is then replaced by a new [`Kind::Replacement`] entry whose `target` is the
//! quarantined fact, whose parents are the winning supporters (weight 1.0) and whose content is
//! the claim. Otherwise nothing is appended and the fact stays quarantined.

use crate::ledger::{Appended, Ledger, LedgerError};
use crate::record::{EntryId, Kind, Parent, ProvEntry, WriterKey};
use crate::store::Store;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Fewest independent clean sources a claim needs to heal a fact.
pub const MIN_VOTES: usize = 2;

/// The votes for one claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vote {
    /// The claim, as read by the caller's claim function.
    pub claim: String,
    /// Independent sources (connected groups of supporters sharing a root ancestor).
    pub votes: usize,
    /// Clean supporters of the claim, sorted by id.
    pub supporters: Vec<EntryId>,
}

/// Why a fact was not healed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotHealed {
    /// No candidate is clean (or none has a readable claim).
    NoCleanSupport,
    /// The best claim has fewer than [`MIN_VOTES`] independent sources.
    TooFewVotes,
    /// Two or more claims share the most votes.
    Tie,
}

/// What [`heal`] did.
///
/// Exhaustive: each outcome sets the exit status of `memlineage heal`; a new one must be
/// handled by every caller, not fall into a wildcard arm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HealOutcome {
    /// A replacement was appended.
    Healed {
        /// The replacement entry.
        replacement: Appended,
        /// The tally, best claim first.
        tally: Vec<Vote>,
    },
    /// Nothing was appended; the fact stays quarantined.
    StillQuarantined {
        /// Why.
        why: NotHealed,
        /// The tally, best claim first.
        tally: Vec<Vote>,
    },
}

/// Healing could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HealError {
    /// Only quarantined facts are healed.
    #[error("entry {0} is not quarantined")]
    NotQuarantined(EntryId),
    /// Reading or appending failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Counts the votes of `support` (see the module docs), best claim first; ties in votes are
/// ordered by claim text.
///
/// # Errors
/// Ledger read errors (an unknown support entry is not an error: it is not clean).
pub fn tally<S: Store>(
    ledger: &Ledger<S>,
    support: &[EntryId],
    claim_of: impl Fn(&[u8]) -> Option<String>,
) -> Result<Vec<Vote>, LedgerError> {
    let mut by_claim: BTreeMap<String, Vec<EntryId>> = BTreeMap::new();
    let unique: HashSet<EntryId> = support.iter().copied().collect();
    let mut sorted: Vec<EntryId> = unique.into_iter().collect();
    sorted.sort();
    for id in sorted {
        if !is_clean(ledger, &id) {
            continue;
        }
        let e = ledger.get(&id)?;
        let Some(claim) = ledger.content(&e)?.and_then(|c| claim_of(&c)) else {
            continue;
        };
        by_claim.entry(claim).or_default().push(id);
    }
    let mut roots_cache: HashMap<EntryId, HashSet<EntryId>> = HashMap::new();
    let mut out = Vec::with_capacity(by_claim.len());
    for (claim, supporters) in by_claim {
        let mut roots = Vec::with_capacity(supporters.len());
        for s in &supporters {
            if !roots_cache.contains_key(s) {
                let r = root_ancestors(ledger, s)?;
                roots_cache.insert(*s, r);
            }
            roots.push(roots_cache.get(s).cloned().unwrap_or_default());
        }
        out.push(Vote {
            claim,
            votes: components(&roots),
            supporters,
        });
    }
    out.sort_by(|a, b| b.votes.cmp(&a.votes).then_with(|| a.claim.cmp(&b.claim)));
    Ok(out)
}

/// Heals the quarantined fact `target` from `support` if a claim wins the vote (module docs),
/// appending a replacement signed by `key` at writer time `now_ms`.
///
/// # Errors
/// [`HealError::NotQuarantined`]; ledger errors (the replacement may also be refused by the
/// lease rules if `target` is under rework).
pub fn heal<S: Store>(
    ledger: &mut Ledger<S>,
    target: EntryId,
    support: &[EntryId],
    claim_of: impl Fn(&[u8]) -> Option<String>,
    key: &WriterKey,
    now_ms: u64,
) -> Result<HealOutcome, HealError> {
    if !ledger.is_quarantined(&target) {
        return Err(HealError::NotQuarantined(target));
    }
    let tally = tally(ledger, support, claim_of)?;
    let why = match tally.as_slice() {
        [] => Some(NotHealed::NoCleanSupport),
        [best, ..] if best.votes < MIN_VOTES => Some(NotHealed::TooFewVotes),
        [best, second, ..] if second.votes == best.votes => Some(NotHealed::Tie),
        _ => None,
    };
    if let Some(why) = why {
        return Ok(HealOutcome::StillQuarantined { why, tally });
    }
    let Some(best) = tally.first() else {
        return Ok(HealOutcome::StillQuarantined {
            why: NotHealed::NoCleanSupport,
            tally,
        });
    };
    let parents = best.supporters.iter().map(|id| Parent::full(*id)).collect();
    let content = best.claim.clone().into_bytes();
    let mut e = ProvEntry::new(key.key_id(), Kind::Replacement, &content)
        .with_parents(parents)
        .with_time_ms(now_ms);
    e.target = Some(target);
    let replacement = ledger.append(e, key, &content)?;
    Ok(HealOutcome::Healed { replacement, tally })
}

/// Clean: known, not quarantined, not tombstoned, labelled Trusted or Derived-Trusted.
fn is_clean<S: Store>(ledger: &Ledger<S>, id: &EntryId) -> bool {
    ledger.label(id).is_some_and(|l| !l.is_untrusted())
        && !ledger.is_quarantined(id)
        && !ledger.is_tombstoned(id)
}

/// The parentless entries `id` descends from over any edge (itself if parentless). A
/// replacement also descends from the entry it replaces: a reworked or healed version of a
/// fact is not independent of the original.
fn root_ancestors<S: Store>(
    ledger: &Ledger<S>,
    id: &EntryId,
) -> Result<HashSet<EntryId>, LedgerError> {
    let mut roots = HashSet::new();
    let mut seen = HashSet::from([*id]);
    let mut stack = vec![*id];
    while let Some(cur) = stack.pop() {
        let e = ledger.get(&cur)?;
        let entry = e.entry();
        let mut up: Vec<EntryId> = entry.parents.iter().map(|p| p.id).collect();
        if let (Kind::Replacement, Some(t)) = (entry.kind, entry.target) {
            up.push(t);
        }
        if up.is_empty() {
            roots.insert(cur);
        }
        for p in up {
            if seen.insert(p) {
                stack.push(p);
            }
        }
    }
    Ok(roots)
}

/// Number of connected groups among sets, two sets being connected when they intersect.
fn components(sets: &[HashSet<EntryId>]) -> usize {
    let n = sets.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut owner: HashMap<EntryId, usize> = HashMap::new();
    for (i, set) in sets.iter().enumerate() {
        for root in set {
            match owner.get(root) {
                Some(&j) => {
                    let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                    parent[a] = b;
                }
                None => {
                    owner.insert(*root, i);
                }
            }
        }
    }
    (0..n).filter(|&i| find(&mut parent, i) == i).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(b: u8) -> EntryId {
        EntryId([b; 32])
    }

    #[test]
    fn components_merge_sets_that_share_a_root() {
        let a: HashSet<EntryId> = [id(1)].into();
        let b: HashSet<EntryId> = [id(1), id(2)].into();
        let c: HashSet<EntryId> = [id(3)].into();
        let d: HashSet<EntryId> = [id(2)].into();
        assert_eq!(components(&[a.clone(), c.clone()]), 2);
        assert_eq!(components(&[a.clone(), b.clone(), c.clone()]), 2);
        // a-b share 1, b-d share 2: transitively one group.
        assert_eq!(components(&[a, c, d, b]), 2);
        assert_eq!(components(&[]), 0);
    }
}
