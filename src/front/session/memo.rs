//! What a process knows about a [`Session`] record beyond the record itself (`spec/hooks.md`
//! §4.7, §6): where each read stands, the seal's stream so far, how many reads a front's index
//! of texts holds, and what a front judged of the reads.

use super::judged;
use super::seal::SealMemo;
#[cfg(doc)]
use super::Session;
use crate::record::EntryId;
use std::collections::HashMap;

/// What a process knows about a [`Session`] record it holds beyond the record itself: where
/// each read stands in `reads`, the `v4` seal's HMAC over the reads fed so far
/// (`spec/hooks.md` §6), how many reads a front's index of texts holds, and what a front judged
/// of the reads so far (§4.7), so that a long session's next read, seal or decision costs what
/// its new reads cost, not what all of them do. Never serialized: a record loaded from storage
/// starts without it and is walked in full once. The reads change only through
/// [`Session::read`] (one more, which the memo follows) and [`Session::truncate_reads`],
/// [`Session::set_reads`] and `extend_reads` (which reset it), so the memo always describes
/// them; each part also checks the count of reads and the last one it saw. Equal to every
/// other memo, so it never makes two records differ.
#[derive(Default)]
pub(crate) struct SessionMemo(std::sync::Mutex<MemoState>);

#[derive(Clone, Default)]
pub(super) struct MemoState {
    /// Where each of `reads[..n]` stands.
    pub(super) positions: Option<Positions>,
    /// The `v4` seal's stream over its domain and `m` up to `reads[..fed]`, under the seal key
    /// whose check value is `key`; `last` is `reads[fed - 1]`.
    pub(super) seal: Option<SealMemo>,
    /// Every one of `reads[..n]` holds a haystack in the [`matching::ReadIndex`] of this
    /// instance (which never drops one).
    pub(super) indexed: Option<Prefix>,
    /// What a front judged of the reads so far ([`super::judged`]).
    pub(super) judged: Option<judged::Judged>,
}

/// A prefix of a session's reads: `reads[..n]`, `last` its last id, as seen by what `owner`
/// names (an index, a front).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Prefix {
    pub(super) owner: u64,
    pub(super) n: usize,
    pub(super) last: Option<EntryId>,
}

impl Prefix {
    /// `reads[..n]` of `owner`.
    pub(super) fn of(owner: u64, reads: &[EntryId]) -> Self {
        Prefix {
            owner,
            n: reads.len(),
            last: reads.last().copied(),
        }
    }

    /// Whether this is still a prefix of `reads` for `owner`.
    pub(super) fn holds(&self, owner: u64, reads: &[EntryId]) -> bool {
        self.owner == owner
            && self.n <= reads.len()
            && self.n.checked_sub(1).map(|i| reads[i]) == self.last
    }
}

/// Where each of a session's first `n` reads stands among them.
#[derive(Clone)]
pub(super) struct Positions {
    pub(super) n: usize,
    pub(super) at: HashMap<EntryId, usize>,
    /// No id occurs twice among them (a record the front wrote never repeats one).
    pub(super) distinct: bool,
}

impl Positions {
    fn of(reads: &[EntryId]) -> Self {
        let mut p = Positions {
            n: 0,
            at: HashMap::with_capacity(reads.len()),
            distinct: true,
        };
        p.extend(reads);
        p
    }

    /// Takes in `reads[self.n..]`.
    pub(super) fn extend(&mut self, reads: &[EntryId]) {
        for (i, id) in reads.iter().enumerate().skip(self.n) {
            if self.at.insert(*id, i).is_some() {
                self.distinct = false;
            }
        }
        self.n = reads.len();
    }

    /// Whether this describes `reads`: the same count, and its last id where it stands.
    fn fits(&self, reads: &[EntryId]) -> bool {
        self.n == reads.len()
            && reads
                .last()
                .is_none_or(|l| self.at.get(l) == Some(&(reads.len() - 1)))
    }
}

/// The memo's positions, made to describe `reads` first.
pub(super) fn positions<'s>(state: &'s mut MemoState, reads: &[EntryId]) -> &'s mut Positions {
    let p = state.positions.get_or_insert_with(|| Positions::of(&[]));
    if !(p.n <= reads.len() && p.fits(&reads[..p.n])) {
        *p = Positions::of(reads);
    } else if p.n < reads.len() {
        p.extend(reads);
    }
    p
}

impl SessionMemo {
    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, MemoState> {
        // A panic while the lock was held leaves only a cache behind: use it as it is.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Clone for SessionMemo {
    fn clone(&self) -> Self {
        SessionMemo(std::sync::Mutex::new(self.state().clone()))
    }
}

impl PartialEq for SessionMemo {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for SessionMemo {}

impl std::fmt::Debug for SessionMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionMemo(..)")
    }
}
