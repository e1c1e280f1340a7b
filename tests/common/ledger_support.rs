//! Building ledgers in integration tests (shared by the ledger and forensics test files).
// Each test file uses some of these helpers.
#![allow(dead_code)]

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

/// The parents a generated entry names: `picks` as (position among `ids` modulo their count,
/// weight in tenths), each id once, in the order picked; none when `ids` is empty.
pub fn picked_parents(ids: &[EntryId], picks: &[(usize, u8)]) -> Vec<Parent> {
    let mut parents: Vec<Parent> = Vec::new();
    if ids.is_empty() {
        return parents;
    }
    for (p, w) in picks {
        let id = ids[p % ids.len()];
        if parents.iter().all(|q| q.id != id) {
            parents.push(Parent {
                id,
                weight: Weight::from_f64(f64::from(*w) / 10.0).unwrap(),
            });
        }
    }
    parents
}
