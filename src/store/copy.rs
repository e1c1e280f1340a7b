//! [`copy_ledger`]: move a ledger between stores (e.g. SQLite to PostgreSQL) without changing
//! a byte of what was signed (`spec/storage.md` §11.8).

use super::{NewEntry, Store, StoreError, META_KEYS};
use crate::record::Hash32;

/// Copies the ledger in `from` into `to`, entry by entry in log order, `batch` entries per
/// [`Store::append`] (0 is taken as 1): COSE bytes, kind, stored label, content (when stored:
/// a redacted entry stays redacted) and the stored tree hashes; then the ledger settings
/// ([`META_KEYS`]) and the latest checkpoint note. Nothing is re-signed or
/// re-labelled, so ids, labels, roots and checkpoints are the same in both stores.
///
/// Resumable: copying starts at `to.tree_size()`; the entries already in `to` must be the
/// first entries of `from` (the last one's id is compared). Returns how many entries were
/// copied.
///
/// A store that checks hashes (`PgStore`) re-checks the whole tree while copying.
///
/// # Errors
/// [`StoreError::NotContiguous`] when `to` holds more entries than `from`;
/// [`StoreError::Corrupt`] when `to`'s last entry is not `from`'s entry at that index, or an
/// entry listed by `from` has no bytes; any error of either store. Entries copied before an
/// error stay copied (each batch is atomic); calling again resumes.
pub fn copy_ledger<S: Store, T: Store>(
    from: &S,
    to: &mut T,
    batch: usize,
) -> Result<u64, StoreError> {
    let start = to.tree_size()?;
    let size = from.tree_size()?;
    if start > size {
        return Err(StoreError::NotContiguous {
            got: start,
            want: size,
        });
    }
    if let Some(last) = start.checked_sub(1) {
        let theirs = to.metas_from(last)?;
        let ours = from.metas_from(last)?;
        if theirs.first().map(|m| m.id) != ours.first().map(|m| m.id) {
            return Err(StoreError::Corrupt {
                reason: format!(
                    "target entry {last} is not the source's: not a prefix of this ledger"
                ),
            });
        }
    }
    let metas = from.metas_from(start)?;
    for chunk in metas.chunks(batch.max(1)) {
        let mut owned = Vec::with_capacity(chunk.len());
        for m in chunk {
            let cose = from
                .entry_bytes(m.index)?
                .ok_or_else(|| StoreError::Corrupt {
                    reason: format!("entry {} has no bytes", m.index),
                })?;
            let content = from.content_at(m.index)?;
            let first = crate::log::stored_hash_index(0, m.index);
            let count = 1 + u64::from((m.index + 1).trailing_zeros());
            let hashes = from.read_hashes(&(first..first + count).collect::<Vec<_>>())?;
            owned.push((m, cose, content, hashes));
        }
        let views: Vec<NewEntry<'_>> = owned
            .iter()
            .map(|(m, cose, content, hashes)| NewEntry {
                index: m.index,
                id: m.id,
                cose,
                kind: m.kind,
                label: m.label,
                // Content is stored under its SHA-256 (the ledger computes the key).
                content: content.as_deref().map(|b| (Hash32::digest(b), b)),
                hashes: hashes.clone(),
                // The label seal is not copied (it is not among META_KEYS), so the target
                // relabels every row from its signed bytes on open; the tags are kept as data.
                tag: m.tag,
                // The index column is data copied out of the signed bytes; an entry that does
                // not decode is stored without it (a candidate of every lookup).
                context: crate::record::SignedEntry::decode(cose)
                    .ok()
                    .map(|e| e.entry().context_hash),
            })
            .collect();
        to.append(&views)?;
    }
    for key in META_KEYS {
        if let Some(v) = from.meta(key)? {
            to.set_meta(key, &v)?;
        }
    }
    if let Some((size, note)) = from.latest_checkpoint()? {
        to.put_checkpoint(size, &note)?;
    }
    Ok(metas.len() as u64)
}
