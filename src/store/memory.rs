//! In-memory store: vectors and hash maps, lost on drop.
//!
//! Also home of the batch checks both backends share ([`check_batch`], [`hash_count`],
//! [`leaf_hash_index`]), so that [`super::MemoryStore`] and `SqliteStore` reject the same
//! batches with the same [`StoreError`] variant.

use super::{EntryMeta, NewEntry, Store, StoreError, MAX_INDEX};
use crate::lineage::Label;
use crate::record::{EntryId, Hash32, IdMap, IdSet, Kind};
use std::collections::BTreeMap;

/// An in-memory [`Store`]: fast, lost on drop.
///
/// # Durability
/// None: everything lives in the process and is gone when the value is dropped or the process
/// exits. Use it for tests and short-lived ledgers; use `SqliteStore` (feature `sqlite`) to keep a log.
///
/// # Memory
/// Per entry: its COSE bytes, 32-byte id (stored twice: in the entry and in the id map), kind
/// and label. Per leaf about two 32-byte tree hashes on average, in one `Vec<[u8; 32]>` indexed
/// by stored-hash index. Content is stored once per distinct content hash.
///
/// # Redaction
/// [`Store::redact`] drops the content bytes (the allocation is freed, not scrubbed).
///
/// No method panics; errors are [`StoreError`] values.
#[derive(Debug, Default)]
pub struct MemoryStore {
    /// Entries by leaf index.
    entries: Vec<Stored>,
    /// Leaf index by entry id.
    ids: IdMap<EntryId, u64>,
    /// Tree hashes by stored-hash index.
    // INVARIANT: hashes.len() == stored_hash_index(0, entries.len()).
    hashes: Vec<[u8; 32]>,
    /// Content bytes by content hash (deduplicated).
    content: IdMap<Hash32, Box<[u8]>>,
    /// Checkpoint notes by tree size.
    checkpoints: BTreeMap<u64, Box<[u8]>>,
    /// Ledger settings.
    meta: BTreeMap<String, String>,
    /// Leaf indexes by stored context hash (`None`: stored without one), in index order.
    by_context: IdMap<Option<Hash32>, Vec<u64>>,
    /// Content removals so far ([`Store::content_epoch`]).
    redactions: u64,
}

/// One stored entry.
#[derive(Debug)]
struct Stored {
    id: EntryId,
    cose: Box<[u8]>,
    kind: Kind,
    label: Label,
    content_hash: Option<Hash32>,
    tag: Option<[u8; 32]>,
}

impl Stored {
    fn meta(&self, index: u64) -> EntryMeta {
        EntryMeta {
            index,
            id: self.id,
            kind: self.kind,
            label: self.label,
            tag: self.tag,
        }
    }
}

impl MemoryStore {
    /// An empty store (tree size 0).
    pub fn new() -> Self {
        Self::default()
    }
}

impl Store for MemoryStore {
    fn tree_size(&self) -> Result<u64, StoreError> {
        len_u64(self.entries.len())
    }

    /// Appends a batch atomically: the whole batch is checked before anything is stored.
    fn append(&mut self, batch: &[NewEntry<'_>]) -> Result<(), StoreError> {
        let size = self.tree_size()?;
        check_batch(size, batch)?;
        if let Some(e) = batch.iter().find(|e| self.ids.contains_key(&e.id)) {
            return Err(StoreError::Duplicate(e.id));
        }
        let want_hashes = leaf_hash_index(size)?;
        if len_u64(self.hashes.len())? != want_hashes {
            return Err(StoreError::Corrupt {
                reason: format!(
                    "memory store holds {} tree hashes for {size} entries, want {want_hashes}",
                    self.hashes.len()
                ),
            });
        }
        // Nothing below can fail: the batch is valid.
        self.entries.reserve(batch.len());
        self.hashes
            .reserve(batch.iter().map(|e| e.hashes.len()).sum());
        for e in batch {
            self.entries.push(Stored {
                id: e.id,
                cose: e.cose.into(),
                kind: e.kind,
                label: e.label,
                content_hash: e.content.as_ref().map(|(h, _)| *h),
                tag: e.tag,
            });
            self.ids.insert(e.id, e.index);
            self.by_context.entry(e.context).or_default().push(e.index);
            self.hashes.extend_from_slice(&e.hashes);
            if let Some((h, bytes)) = e.content {
                self.content.entry(h).or_insert_with(|| bytes.into());
            }
        }
        Ok(())
    }

    fn entry_bytes(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(slot(&self.entries, index).map(|e| e.cose.to_vec()))
    }

    fn index_of(&self, id: &EntryId) -> Result<Option<u64>, StoreError> {
        Ok(self.ids.get(id).copied())
    }

    fn metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError> {
        let start = usize::try_from(from).unwrap_or(usize::MAX);
        let Some(tail) = self.entries.get(start..) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(tail.len());
        for (index, e) in (from..).zip(tail) {
            out.push(e.meta(index));
        }
        Ok(out)
    }

    fn meta_at(&self, index: u64) -> Result<Option<EntryMeta>, StoreError> {
        Ok(slot(&self.entries, index).map(|e| e.meta(index)))
    }

    fn context_candidates(&self, context: &Hash32, below: u64) -> Result<Vec<u64>, StoreError> {
        let mut out: Vec<u64> = [None, Some(*context)]
            .iter()
            .filter_map(|k| self.by_context.get(k))
            .flatten()
            .copied()
            .filter(|i| *i < below)
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    fn set_tags(
        &mut self,
        tags: &[(u64, [u8; 32])],
        key: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        if let Some((i, _)) = tags.iter().find(|(i, _)| slot(&self.entries, *i).is_none()) {
            return Err(StoreError::Corrupt {
                reason: format!("set_tags: entry {i} not stored"),
            });
        }
        for (i, tag) in tags {
            if let Some(e) = usize::try_from(*i)
                .ok()
                .and_then(|i| self.entries.get_mut(i))
            {
                e.tag = Some(*tag);
            }
        }
        self.set_meta(key, value)
    }

    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, StoreError> {
        indexes
            .iter()
            .map(|&i| {
                slot(&self.hashes, i)
                    .copied()
                    .ok_or(StoreError::MissingHash(i))
            })
            .collect()
    }

    fn content_at(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let stored = usize::try_from(index)
            .ok()
            .and_then(|i| self.entries.get(i));
        match stored.and_then(|e| e.content_hash) {
            Some(h) => self.content(&h),
            None => Ok(None),
        }
    }

    fn content(&self, hash: &Hash32) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.content.get(hash).map(|b| b.to_vec()))
    }

    fn redact(&mut self, hash: &Hash32) -> Result<bool, StoreError> {
        let removed = self.content.remove(hash).is_some();
        self.redactions += u64::from(removed);
        Ok(removed)
    }

    fn content_epoch(&self) -> Result<Option<u64>, StoreError> {
        Ok(Some(self.redactions))
    }

    fn put_checkpoint(&mut self, size: u64, note: &[u8]) -> Result<(), StoreError> {
        check_range(size)?;
        self.checkpoints.insert(size, note.into());
        Ok(())
    }

    fn latest_checkpoint(&self) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        Ok(self
            .checkpoints
            .last_key_value()
            .map(|(&size, note)| (size, note.to_vec())))
    }

    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self.meta.get(key).cloned())
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.meta.insert(key.to_owned(), value.to_owned());
        Ok(())
    }
}

/// Checks what can be checked about a batch without looking at stored ids: indexes contiguous
/// from `size`, each entry carrying [`hash_count`] hashes, no id twice within the batch.
///
/// # Errors
/// [`StoreError::NotContiguous`], [`StoreError::OutOfRange`], [`StoreError::HashCount`] or
/// [`StoreError::Duplicate`] for the first offending entry, checked in that order over the
/// whole batch (contiguity and counts first, then repeats). Does not panic.
pub(super) fn check_batch(size: u64, batch: &[NewEntry<'_>]) -> Result<(), StoreError> {
    let mut want = size;
    for e in batch {
        if e.index != want {
            return Err(StoreError::NotContiguous { got: e.index, want });
        }
        check_range(e.index)?;
        let count = hash_count(e.index)?;
        if e.hashes.len() != count {
            return Err(StoreError::HashCount {
                index: e.index,
                got: e.hashes.len(),
                want: count,
            });
        }
        want = e.index.checked_add(1).ok_or(StoreError::OutOfRange {
            got: e.index,
            max: MAX_INDEX,
        })?;
    }
    let mut seen = IdSet::with_capacity_and_hasher(batch.len(), Default::default());
    match batch.iter().find(|e| !seen.insert(e.id)) {
        Some(e) => Err(StoreError::Duplicate(e.id)),
        None => Ok(()),
    }
}

/// The number of tree hashes appending leaf `n` stores: its leaf hash plus one per subtree it
/// completes, `1 + (n + 1).trailing_zeros()` (Crosby–Wallach §3.3; Go `sumdb/tlog`).
///
/// # Errors
/// [`StoreError::OutOfRange`] when `n > MAX_INDEX`. Does not panic.
pub(super) fn hash_count(n: u64) -> Result<usize, StoreError> {
    check_range(n)?;
    // n + 1 <= 2^63: no overflow; trailing_zeros <= 63 fits in usize.
    Ok(1 + (n + 1).trailing_zeros() as usize)
}

/// `stored_hash_index(0, n)`: where leaf `n`'s hashes start, which is also the number of tree
/// hashes stored for a tree of size `n`.
///
/// # Errors
/// [`StoreError::OutOfRange`] when `n > MAX_INDEX` (the index would overflow `u64`).
/// Does not panic.
pub(super) fn leaf_hash_index(n: u64) -> Result<u64, StoreError> {
    check_range(n)?;
    // stored_hash_index(0, n) = 2n - popcount(n) < 2^64 for n < 2^63: no overflow.
    Ok(tlog_tiles::stored_hash_index(0, n))
}

/// Rejects values above [`MAX_INDEX`].
///
/// # Errors
/// [`StoreError::OutOfRange`].
pub(super) fn check_range(n: u64) -> Result<(), StoreError> {
    if n <= MAX_INDEX {
        Ok(())
    } else {
        Err(StoreError::OutOfRange {
            got: n,
            max: MAX_INDEX,
        })
    }
}

/// The element at `index` of `v`, if any (`index` need not fit in `usize`).
fn slot<T>(v: &[T], index: u64) -> Option<&T> {
    usize::try_from(index).ok().and_then(|i| v.get(i))
}

/// A length as `u64`.
fn len_u64(n: usize) -> Result<u64, StoreError> {
    u64::try_from(n).map_err(|_| StoreError::OutOfRange {
        got: u64::MAX,
        max: MAX_INDEX,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_count_matches_tlog_layout() {
        for n in 0..1000u64 {
            let count = hash_count(n).unwrap() as u64;
            assert_eq!(
                leaf_hash_index(n).unwrap() + count,
                leaf_hash_index(n + 1).unwrap(),
                "leaf {n}"
            );
            assert_eq!(
                leaf_hash_index(n + 1).unwrap(),
                tlog_tiles::stored_hash_count(n + 1)
            );
        }
    }

    #[test]
    fn range_limits_do_not_panic() {
        assert!(hash_count(MAX_INDEX).is_ok());
        assert!(leaf_hash_index(MAX_INDEX).is_ok());
        assert!(matches!(
            hash_count(MAX_INDEX + 1),
            Err(StoreError::OutOfRange { got, max: MAX_INDEX }) if got == MAX_INDEX + 1
        ));
        assert!(matches!(
            leaf_hash_index(u64::MAX),
            Err(StoreError::OutOfRange { .. })
        ));
    }
}
