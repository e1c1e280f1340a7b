//! Reading a whole store one entry at a time: the reference that range reads and audits are
//! compared with (shared by the ledger and review_batch test files).

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
