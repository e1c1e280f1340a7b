//! Building ledgers in integration tests (shared by the ledger and forensics test files).

use memlineage::record::{EntryId, Kind, Parent, ProvEntry, Weight, WriterKey};
use memlineage::store::Store;
use memlineage::Ledger;

/// Appends a `kind` entry with content `text` by `key`, parents given as (id, millionths).
pub fn put<S: Store>(
    l: &mut Ledger<S>,
    key: &WriterKey,
    kind: Kind,
    text: &str,
    parents: &[(EntryId, u64)],
) -> EntryId {
    let parents = parents
        .iter()
        .map(|(id, w)| Parent {
            id: *id,
            weight: Weight::new(*w).unwrap(),
        })
        .collect();
    let e = ProvEntry::new(key.key_id(), kind, text.as_bytes()).with_parents(parents);
    l.append(e, key, text.as_bytes()).unwrap().id
}
