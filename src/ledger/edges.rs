//! What the search for the untrusted path behind a label (`spec/lineage.md` §6) reads of an
//! entry — its signed parents and its kind — kept for the entries this handle verified, so a
//! refusal's explanation does not parse the same entries again at every decision.
//!
//! What is kept is a fact of the signed bytes of one entry: it is kept only from a
//! [`SignedEntry`] (decoded with its signature verified, or bytes that hash to an entry this
//! handle verified, [`crate::Ledger::get`]) and only under that entry's own id, the leaf hash
//! of those bytes. It is answered ([`crate::Ledger`]'s `edges`) only while `get` would answer
//! from the same bytes: the entry's row is believed, bytes are stored at its index, those bytes
//! hash to its id, and this handle still counts the id as verified. Otherwise the entry is read
//! and verified again, exactly as [`crate::Ledger::get`] does; an entry that cannot be read is
//! an error, never a kept answer.

use super::{Ledger, LedgerError};
use crate::record::{EntryId, Kind, Parent, SignedEntry};
use crate::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most parents (summed over the entries kept) a handle keeps, about 40 bytes each: the
/// memory is cleared when it would hold more, which only means parsing again.
const MAX_PARENTS: usize = 1 << 20;

/// Most entries kept, whatever their parents.
const MAX_ENTRIES: usize = 1 << 18;

/// The signed edges and kind of one entry, as the path search reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Edges {
    /// Its signed parents, in the order signed.
    pub(crate) parents: Arc<[Parent]>,
    /// Its kind.
    pub(crate) kind: Kind,
}

impl Edges {
    /// The edges `e` signs.
    pub(crate) fn of(e: &SignedEntry) -> Self {
        Edges {
            parents: e.entry().parents.clone().into(),
            kind: e.entry().kind,
        }
    }
}

/// The edges of entries a handle verified, by id. A poisoned lock only means keeping nothing.
#[derive(Default)]
pub(crate) struct EdgeMemory(Mutex<Inner>);

#[derive(Default)]
struct Inner {
    entries: HashMap<EntryId, Edges>,
    /// Parents held, summed over `entries`.
    parents: usize,
}

impl EdgeMemory {
    /// Keeps the edges of `e` under its own id ([`SignedEntry::id`], the leaf hash of its
    /// bytes): never under an id the caller names. Cleared first when full.
    pub(crate) fn keep(&self, e: &SignedEntry) {
        let Ok(mut m) = self.0.lock() else {
            return;
        };
        let n = e.entry().parents.len();
        if n > MAX_PARENTS {
            return;
        }
        if m.parents + n > MAX_PARENTS || m.entries.len() >= MAX_ENTRIES {
            *m = Inner::default();
        }
        if let Some(old) = m.entries.insert(e.id(), Edges::of(e)) {
            m.parents -= old.parents.len();
        }
        m.parents += n;
    }

    /// The edges kept for `id`, if any.
    pub(crate) fn get(&self, id: &EntryId) -> Option<Edges> {
        self.0.lock().ok()?.entries.get(id).cloned()
    }

    /// Drops everything kept.
    pub(crate) fn forget(&self) {
        if let Ok(mut m) = self.0.lock() {
            *m = Inner::default();
        }
    }
}

impl<S: Store> Ledger<S> {
    /// The signed parents and kind of `id`: exactly what [`Ledger::get`] returns of them, and
    /// the same errors, without parsing again an entry whose edges this handle kept
    /// (this module). A kept answer is given only when `get` would reparse these very bytes: the
    /// row is believed, the stored bytes hash to `id` and this handle counts `id` as verified;
    /// otherwise the entry goes through `get` (signature included) and its edges are kept.
    ///
    /// # Errors
    /// As [`Ledger::get`].
    pub(crate) fn edges(&self, id: &EntryId) -> Result<Edges, LedgerError> {
        let (index, bytes) = self.stored_bytes(id)?;
        if self.is_verified(id) {
            if let Some(kept) = self.edge_memory.get(id) {
                if EntryId::of_cose(&bytes) != *id {
                    return Err(LedgerError::NotTheEntry { id: *id, index });
                }
                return Ok(kept);
            }
        }
        let e = self.verify_stored(id, index, &bytes)?;
        self.edge_memory.keep(&e);
        Ok(Edges::of(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ProvEntry, Weight, WriterKey};

    /// A signed entry with `n` parents and its kind.
    fn signed(n: u8, kind: Kind) -> SignedEntry {
        let key = WriterKey::for_label("edges/test");
        let mut e = ProvEntry::new(key.key_id(), kind, &[n]);
        e.parents = (0..n)
            .map(|i| Parent {
                id: EntryId([i; 32]),
                weight: Weight::ONE,
            })
            .collect();
        SignedEntry::sign(e, &key).expect("signs")
    }

    #[test]
    fn answers_for_the_entry_kept_and_no_other() {
        let m = EdgeMemory::default();
        let a = signed(2, Kind::ToolResult);
        let b = signed(3, Kind::Context);
        assert_eq!(m.get(&a.id()), None, "nothing kept yet");
        m.keep(&a);
        assert_eq!(m.get(&a.id()), Some(Edges::of(&a)));
        assert_eq!(m.get(&b.id()), None, "b was never kept");
        m.keep(&b);
        assert_eq!(m.get(&b.id()), Some(Edges::of(&b)));
        assert_eq!(m.get(&a.id()), Some(Edges::of(&a)));
        assert_ne!(Edges::of(&a), Edges::of(&b));
        m.forget();
        assert_eq!(m.get(&a.id()), None);
        assert_eq!(m.get(&b.id()), None);
    }

    #[test]
    fn a_full_memory_starts_again() {
        let m = EdgeMemory::default();
        let a = signed(1, Kind::ToolResult);
        m.keep(&a);
        if let Ok(mut inner) = m.0.lock() {
            inner.parents = MAX_PARENTS;
        }
        let b = signed(2, Kind::ToolResult);
        m.keep(&b);
        assert_eq!(m.get(&a.id()), None, "cleared when full");
        assert_eq!(m.get(&b.id()), Some(Edges::of(&b)));
    }
}
