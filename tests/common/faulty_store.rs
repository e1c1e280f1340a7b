//! A [`Store`] wrapper that injects faults (shared by the crash and refresh tests): its
//! `fail_append_at`-th append fails, before writing anything or after committing (the
//! acknowledgement is lost but the data is durable); and a read of entry `fail_read_at` fails
//! once (a transient error). It also counts the rows it hands out (`reads`), for tests of what
//! opening a ledger reads.

#![allow(dead_code)]

use memlineage::record::{EntryId, Hash32};
use memlineage::store::{EntryMeta, NewEntry, Store, StoreError};
use std::cell::Cell;

pub struct Faulty<S: Store> {
    pub inner: S,
    pub calls: Cell<u64>,
    pub fail_append_at: Option<u64>,
    pub after_commit: bool,
    pub fail_read_at: Cell<Option<u64>>,
    /// Rows handed out by `metas_from`, entry bytes read, single-row lookups (`index_of`,
    /// `meta_at`, `meta_of`).
    pub scanned: Cell<u64>,
    pub bytes: Cell<u64>,
    pub lookups: Cell<u64>,
    /// How many more row counts (`entry_count`) are followed by one entry appended by someone
    /// else, as seen by the tree size and the next count (`grown`, not stored).
    pub moving: Cell<u64>,
    pub grown: Cell<u64>,
    /// Every entry read fails while set (a read failing at decision time).
    pub fail_bytes: Cell<bool>,
    /// Content with this hash reads as absent (removed by a writer the content epoch does not
    /// see).
    pub hidden: Cell<Option<Hash32>>,
    /// Whether the wrapped store's content epoch is passed through (`false`, the default: the
    /// store cannot tell, `None`).
    pub epoch: bool,
    /// `Some((i, j))`: the bytes stored at index `i` read as those stored at `j` (a store-only
    /// edit that puts another entry's bytes in a row).
    pub substitute: Cell<Option<(u64, u64)>>,
}

impl<S: Store> Faulty<S> {
    /// No fault injected yet.
    pub fn new(inner: S) -> Self {
        Faulty {
            inner,
            calls: Cell::new(0),
            fail_append_at: None,
            after_commit: false,
            fail_read_at: Cell::new(None),
            scanned: Cell::new(0),
            bytes: Cell::new(0),
            lookups: Cell::new(0),
            moving: Cell::new(0),
            grown: Cell::new(0),
            fail_bytes: Cell::new(false),
            hidden: Cell::new(None),
            epoch: false,
            substitute: Cell::new(None),
        }
    }

    /// `(rows scanned, entry bytes read, single-row lookups)` so far.
    pub fn reads(&self) -> (u64, u64, u64) {
        (self.scanned.get(), self.bytes.get(), self.lookups.get())
    }
}

fn bump(c: &Cell<u64>, n: u64) {
    c.set(c.get() + n);
}

impl<S: Store> Store for Faulty<S> {
    fn tree_size(&self) -> Result<u64, StoreError> {
        Ok(self.inner.tree_size()? + self.grown.get())
    }
    fn entry_count(&self) -> Result<u64, StoreError> {
        let n = self.inner.entry_count()? + self.grown.get();
        if self.moving.get() > 0 {
            self.moving.set(self.moving.get() - 1);
            bump(&self.grown, 1);
        }
        Ok(n)
    }
    fn append(&mut self, batch: &[NewEntry<'_>]) -> Result<(), StoreError> {
        let n = self.calls.get();
        self.calls.set(n + 1);
        if Some(n) == self.fail_append_at {
            if self.after_commit {
                self.inner.append(batch)?;
            }
            return Err(StoreError::Io(std::io::Error::other("injected fault")));
        }
        self.inner.append(batch)
    }
    fn entry_bytes(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        bump(&self.bytes, 1);
        if self.fail_bytes.get() {
            return Err(StoreError::Corrupt {
                reason: "injected read failure".into(),
            });
        }
        if self.fail_read_at.get() == Some(index) {
            self.fail_read_at.set(None);
            return Err(StoreError::Corrupt {
                reason: "transient read error".into(),
            });
        }
        match self.substitute.get() {
            Some((i, j)) if i == index => self.inner.entry_bytes(j),
            _ => self.inner.entry_bytes(index),
        }
    }
    fn index_of(&self, id: &EntryId) -> Result<Option<u64>, StoreError> {
        bump(&self.lookups, 1);
        self.inner.index_of(id)
    }
    fn metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError> {
        let rows = self.inner.metas_from(from)?;
        bump(&self.scanned, rows.len() as u64);
        Ok(rows)
    }
    fn meta_at(&self, index: u64) -> Result<Option<EntryMeta>, StoreError> {
        bump(&self.lookups, 1);
        self.inner.meta_at(index)
    }
    fn meta_of(&self, id: &EntryId) -> Result<Option<EntryMeta>, StoreError> {
        bump(&self.lookups, 1);
        self.inner.meta_of(id)
    }
    fn effect_metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError> {
        self.inner.effect_metas_from(from)
    }
    fn context_candidates(&self, context: &Hash32, below: u64) -> Result<Vec<u64>, StoreError> {
        let out = self.inner.context_candidates(context, below)?;
        bump(&self.scanned, out.len() as u64);
        Ok(out)
    }
    fn set_tags(
        &mut self,
        tags: &[(u64, [u8; 32])],
        key: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        self.inner.set_tags(tags, key, value)
    }
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, StoreError> {
        self.inner.read_hashes(indexes)
    }
    fn content_at(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.content_at(index)
    }
    fn content(&self, hash: &Hash32) -> Result<Option<Vec<u8>>, StoreError> {
        if self.hidden.get() == Some(*hash) {
            return Ok(None);
        }
        self.inner.content(hash)
    }
    fn content_epoch(&self) -> Result<Option<u64>, StoreError> {
        match self.epoch {
            true => self.inner.content_epoch(),
            false => Ok(None),
        }
    }
    fn redact(&mut self, hash: &Hash32) -> Result<bool, StoreError> {
        self.inner.redact(hash)
    }
    fn put_checkpoint(&mut self, size: u64, note: &[u8]) -> Result<(), StoreError> {
        self.inner.put_checkpoint(size, note)
    }
    fn latest_checkpoint(&self) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        self.inner.latest_checkpoint()
    }
    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.inner.meta(key)
    }
    fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.inner.set_meta(key, value)
    }
}
