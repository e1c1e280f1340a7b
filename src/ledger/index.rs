//! The ledger's in-memory label index: id → leaf index, label and tombstone flag.

use crate::lineage::Label;
use crate::record::EntryId;
use std::collections::HashMap;

/// What the ledger keeps in memory per entry: 16 bytes plus the map's key and overhead.
#[derive(Clone, Copy, Debug)]
pub(super) struct Meta {
    pub(super) index: u64,
    pub(super) label: Label,
    pub(super) tombstoned: bool,
}

/// The in-memory label index: id → leaf index in a hash map, and one byte per leaf holding the
/// label code (bits 0–1) and the tombstone flag (bit 2). About 41 bytes of hash-map slot per
/// entry plus 1 byte; label queries are O(1).
#[derive(Debug, Default)]
pub(super) struct LabelIndex {
    ids: HashMap<EntryId, u64>,
    // INVARIANT: flags.len() > every index in `ids`.
    flags: Vec<u8>,
}

const TOMBSTONED: u8 = 0b100;

impl LabelIndex {
    pub(super) fn get(&self, id: &EntryId) -> Option<Meta> {
        let index = *self.ids.get(id)?;
        let f = *self.flags.get(usize::try_from(index).ok()?)?;
        Some(Meta {
            index,
            label: Label::from_code(f & 0b11)?,
            tombstoned: f & TOMBSTONED != 0,
        })
    }

    pub(super) fn insert(&mut self, id: EntryId, m: Meta) {
        let Ok(i) = usize::try_from(m.index) else {
            return;
        };
        if self.flags.len() <= i {
            self.flags.resize(i + 1, 0);
        }
        self.flags[i] = m.label.code() | if m.tombstoned { TOMBSTONED } else { 0 };
        self.ids.insert(id, m.index);
    }

    pub(super) fn tombstone(&mut self, id: &EntryId) {
        let i = self.ids.get(id).and_then(|i| usize::try_from(*i).ok());
        if let Some(f) = i.and_then(|i| self.flags.get_mut(i)) {
            *f |= TOMBSTONED;
        }
    }

    pub(super) fn reserve(&mut self, n: usize) {
        self.ids.reserve(n);
        self.flags.reserve(n);
    }
}
