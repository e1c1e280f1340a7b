//! Reading a whole store one entry at a time: the reference that range reads and audits are
//! compared with (shared by the ledger and audit test files).

#![allow(dead_code)]

use memlineage::lineage::Label;
use memlineage::store::{Store, StoredEntry};

/// Every entry of `store` in index order, read one at a time: `metas_from(0)`, then
/// `entry_bytes` and `content_at` per entry.
pub fn read_one_by_one<S: Store>(store: &S) -> Vec<StoredEntry> {
    store
        .metas_from(0)
        .unwrap()
        .into_iter()
        .map(|m| {
            (
                m,
                store.entry_bytes(m.index).unwrap().unwrap(),
                store.content_at(m.index).unwrap(),
            )
        })
        .collect()
}

/// Every entry of `store` as an audit's `(cose, stored label)` input, read one at a time.
pub fn labelled_entries<S: Store>(store: &S) -> Vec<(Vec<u8>, Option<Label>)> {
    read_one_by_one(store)
        .into_iter()
        .map(|(meta, cose, _)| (cose, Some(meta.label)))
        .collect()
}
