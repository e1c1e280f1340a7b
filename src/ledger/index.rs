//! The ledger's label index (`spec/lineage.md` §5.1): id → leaf index and label, looked up in
//! the store by id and believed only when the row's tag verifies under the log key; in memory
//! only what this handle read or wrote, so that opening a ledger does not read every row.

use crate::lineage::Label;
use crate::record::{EntryId, IdMap, Kind};
use std::sync::Mutex;

/// What the ledger knows about an entry it has verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Meta {
    pub(super) index: u64,
    pub(super) label: Label,
}

/// Most verified rows [`LabelIndex`] remembers (cleared when full; they are read again).
const MAX_REMEMBERED: usize = 1 << 20;

/// The label index of one ledger handle.
#[derive(Debug, Default)]
pub(super) struct LabelIndex {
    /// Rows read from the store whose tag verified, or that this handle stored with a tag.
    /// A poisoned lock only means reading the store again.
    read: Mutex<IdMap<EntryId, Meta>>,
    /// Entries this handle verified and labelled from their signed bytes that the store holds
    /// without a valid tag: rows after the stored seal, and this handle's own sequenced
    /// (PostgreSQL) entries. Never evicted: the store cannot vouch for them.
    unsealed: IdMap<EntryId, (Meta, Kind)>,
}

impl LabelIndex {
    /// What this handle already verified about `id`, without reading the store.
    pub(super) fn known(&self, id: &EntryId) -> Option<Meta> {
        if let Some((m, _)) = self.unsealed.get(id) {
            return Some(*m);
        }
        self.read.lock().ok().and_then(|r| r.get(id).copied())
    }

    /// Remembers a verified row.
    pub(super) fn remember(&self, id: EntryId, m: Meta) {
        if let Ok(mut r) = self.read.lock() {
            if r.len() >= MAX_REMEMBERED {
                r.clear();
            }
            r.insert(id, m);
        }
    }

    /// Records an entry the store holds without a valid tag.
    pub(super) fn insert_unsealed(&mut self, id: EntryId, m: Meta, kind: Kind) {
        self.unsealed.insert(id, (m, kind));
    }

    /// The unsealed entry `id`, if it is at leaf index `index`.
    pub(super) fn unsealed_at(&self, id: &EntryId, index: u64) -> bool {
        self.unsealed.get(id).is_some_and(|(m, _)| m.index == index)
    }

    /// The unsealed entries with leaf index in `from..to`, in index order, as
    /// `(index, id, kind, label)`; `None` unless every index of the range is there.
    pub(super) fn unsealed_range(
        &self,
        from: u64,
        to: u64,
    ) -> Option<Vec<(u64, EntryId, Kind, Label)>> {
        let mut rows: Vec<_> = self
            .unsealed
            .iter()
            .filter(|(_, (m, _))| (from..to).contains(&m.index))
            .map(|(id, (m, kind))| (m.index, *id, *kind, m.label))
            .collect();
        rows.sort_unstable_by_key(|r| r.0);
        let complete = rows.len() as u64 == to.saturating_sub(from)
            && rows.iter().zip(from..).all(|(r, i)| r.0 == i);
        complete.then_some(rows)
    }

    /// Moves the unsealed entries below leaf `size` to the verified rows (their tags are now
    /// stored).
    pub(super) fn sealed_below(&mut self, size: u64) {
        let now: Vec<EntryId> = self
            .unsealed
            .iter()
            .filter(|(_, (m, _))| m.index < size)
            .map(|(id, _)| *id)
            .collect();
        for id in now {
            if let Some((m, _)) = self.unsealed.remove(&id) {
                self.remember(id, m);
            }
        }
    }
}
