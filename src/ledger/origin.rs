//! What a handle keeps, between origin checks, of the entries it verified for them
//! (`spec/gate.md` §3.3): their edges, writer key and verified text with its search forms, and
//! the ancestries of justifying entries (dropped also when the handle's effects chain moves).
//!
//! An entry is immutable under its id (the leaf hash of its signed bytes, its content bound
//! by the signed content hash), so what this handle verified of it stays true of the log.
//! What can change is read afresh at every check ([`crate::Ledger`]'s `origin_entry`): the
//! label, the writer key's binding, tombstone and quarantine. Content can be removed (a
//! redaction, or anyone rewriting the store): everything kept is dropped whenever the
//! store's content epoch moves ([`crate::store::Store::content_epoch`], read once per check),
//! and nothing is kept on a store that cannot tell.

use crate::gate::{Ancestry, HeldText};
use crate::record::{EntryId, KeyId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most bytes (texts, their search forms and a fixed cost per entry) a handle keeps.
const MAX_BYTES: usize = 32 << 20;

/// What a handle verified of one entry, immutable under its id.
#[derive(Clone)]
pub(super) struct Kept {
    /// The key that signed it (bound or not: asked afresh).
    pub(super) writer: KeyId,
    /// Every recorded parent.
    pub(super) parents: Arc<[EntryId]>,
    /// Its text as verified against the signed content hash.
    pub(super) text: Arc<HeldText>,
}

/// The entries kept, under one content epoch. A poisoned lock only means keeping nothing.
#[derive(Default)]
pub(crate) struct OriginMemory(Mutex<Inner>);

#[derive(Default)]
struct Inner {
    epoch: Option<u64>,
    entries: HashMap<EntryId, Kept>,
    /// The effects this handle had admitted when the ancestries were built: a binding, a
    /// tombstone or a flag since changes the groups' writers, so they are built again.
    effects: Option<(u64, [u8; 32])>,
    ancestries: HashMap<EntryId, Arc<Ancestry>>,
    bytes: usize,
}

impl OriginMemory {
    /// Keeps what was verified while the store's content epoch is `epoch` only; nothing when
    /// the store cannot tell (`None`). Keeps ancestries while the handle's effects are
    /// `effects` (count and head of its effects chain) only.
    pub(super) fn under(&self, epoch: Option<u64>, effects: (u64, [u8; 32])) {
        if let Ok(mut m) = self.0.lock() {
            if m.epoch != epoch || epoch.is_none() {
                *m = Inner {
                    epoch,
                    ..Inner::default()
                };
            }
            if m.effects != Some(effects) {
                let dropped: usize = m.ancestries.values().map(|a| ancestry_cost(a)).sum();
                m.ancestries.clear();
                m.bytes = m.bytes.saturating_sub(dropped);
                m.effects = Some(effects);
            }
        }
    }

    /// Drops everything kept.
    pub(crate) fn forget(&self) {
        if let Ok(mut m) = self.0.lock() {
            let epoch = m.epoch;
            *m = Inner {
                epoch,
                ..Inner::default()
            };
        }
    }

    pub(super) fn ancestry(&self, id: &EntryId) -> Option<Arc<Ancestry>> {
        self.0.lock().ok()?.ancestries.get(id).cloned()
    }

    /// Keeps the ancestry of `id`, only under a known epoch and effects and when every entry
    /// of it is kept (when the memory is full, everything is dropped instead).
    pub(super) fn keep_ancestry(&self, id: EntryId, a: &Arc<Ancestry>) {
        let Ok(mut m) = self.0.lock() else {
            return;
        };
        // Only an ancestry all of whose entries are kept (verified, readable): then a check on
        // this handle reads nothing of it afresh, walking or not, and dropping a kept entry
        // (a full memory) drops the ancestry with it. An entry that is not kept is read
        // afresh at every check, which the ancestry's groups would skip (review 33, finding 2).
        if m.epoch.is_none() || m.effects.is_none() || !a.ids().all(|id| m.entries.contains_key(id))
        {
            return;
        }
        let cost = ancestry_cost(a);
        if m.bytes + cost > MAX_BYTES {
            // Full: everything goes, this ancestry too (its entries are no longer kept).
            m.entries.clear();
            m.ancestries.clear();
            m.bytes = 0;
            return;
        }
        if m.ancestries.insert(id, Arc::clone(a)).is_none() {
            m.bytes += cost;
        }
    }

    pub(super) fn get(&self, id: &EntryId) -> Option<Kept> {
        self.0.lock().ok()?.entries.get(id).cloned()
    }

    /// Keeps `kept` for `id` (only under a known epoch; cleared first when full).
    pub(super) fn keep(&self, id: EntryId, kept: &Kept) {
        let Ok(mut m) = self.0.lock() else {
            return;
        };
        if m.epoch.is_none() {
            return;
        }
        // The text, its normalised form and its haystack, roughly, and the edges.
        let cost = 128 + 4 * kept.text.len() + 32 * kept.parents.len();
        if m.bytes + cost > MAX_BYTES {
            m.entries.clear();
            m.ancestries.clear();
            m.bytes = 0;
        }
        if cost <= MAX_BYTES && m.entries.insert(id, kept.clone()).is_none() {
            m.bytes += cost;
        }
    }
}

/// Bytes an ancestry is counted for: its ids and a fixed cost.
fn ancestry_cost(a: &Ancestry) -> usize {
    128 + 40 * a.len()
}
