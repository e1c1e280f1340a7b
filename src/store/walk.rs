//! Walking a range of the log in index order, a chunk of rows per store read
//! ([`Store::rows_from`]): one query per 1,024 entries on SQLite and PostgreSQL, where
//! reading each entry's row and bytes by index cost two (on PostgreSQL two round trips: a flag's
//! rescan at 10 million entries took 1,538 s, `spec/benchmarks.md`).

use super::{EntryMeta, Store, StoreError};

/// How many rows one store read of a [`RowWalk`] asks for: at most a few MiB of entry bytes
/// held at once.
pub(crate) const ROW_CHUNK: usize = 1024;

/// The rows of leaves `from..to` in index order, each with its stored (unverified) COSE bytes,
/// read 1,024 at a time. Yields exactly `to - from` rows or an error: a row missing
/// before `to` is [`StoreError::Corrupt`] (the store holds fewer entries than asked for), and
/// the walk ends after its first error. What the rows say is the store's: the caller checks
/// each against what it verified (ids, tags).
pub struct RowWalk<'s, S: Store + ?Sized> {
    store: &'s S,
    next: u64,
    to: u64,
    chunk: std::vec::IntoIter<(EntryMeta, Vec<u8>)>,
    failed: bool,
}

impl<'s, S: Store + ?Sized> RowWalk<'s, S> {
    /// A walk over leaves `from..to` (empty when `to <= from`).
    pub fn new(store: &'s S, from: u64, to: u64) -> Self {
        RowWalk {
            store,
            next: from,
            to,
            chunk: Vec::new().into_iter(),
            failed: false,
        }
    }
}

impl<S: Store + ?Sized> Iterator for RowWalk<'_, S> {
    type Item = Result<(EntryMeta, Vec<u8>), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.next >= self.to {
            return None;
        }
        if self.chunk.len() == 0 {
            let want = usize::try_from(self.to - self.next).map_or(ROW_CHUNK, |n| n.min(ROW_CHUNK));
            match self.store.rows_from(self.next, want) {
                Ok(rows) if !rows.is_empty() => self.chunk = rows.into_iter(),
                Ok(_) => {
                    self.failed = true;
                    return Some(Err(StoreError::Corrupt {
                        reason: format!("entry {} missing", self.next),
                    }));
                }
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
        let (meta, bytes) = self.chunk.next()?;
        if meta.index != self.next {
            self.failed = true;
            return Some(Err(StoreError::Corrupt {
                reason: format!(
                    "entries: index {} where {} was expected",
                    meta.index, self.next
                ),
            }));
        }
        self.next += 1;
        Some(Ok((meta, bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lineage::LabelPolicy;
    use crate::record::{Kind, ProvEntry, Role, WriterKey};
    use crate::store::MemoryStore;
    use crate::{Ledger, LogSigner};

    fn ledger(n: usize) -> Ledger<MemoryStore> {
        let signer =
            LogSigner::new("test.example/walk", WriterKey::for_label("walk/log")).expect("signer");
        let mut l =
            Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).expect("create");
        let user = WriterKey::for_label("walk/user");
        l.bind(user.key_id(), Role::User, "user").expect("bind");
        for i in 0..n {
            let text = format!("prompt {i}");
            let e = ProvEntry::new(user.key_id(), Kind::Prompt, text.as_bytes());
            l.append(e, &user, text.as_bytes()).expect("append");
        }
        l
    }

    /// Every row of a range comes once, in order, across chunk boundaries, with the bytes
    /// `entry_bytes` gives; asking past the end is an error, not a shorter walk.
    #[test]
    fn a_walk_gives_each_row_of_its_range_in_order() {
        let l = ledger(2 * ROW_CHUNK + 3);
        let store = l.store();
        let size = store.tree_size().expect("size");
        for (from, to) in [
            (0, size),
            (1, size),
            (ROW_CHUNK as u64 - 1, ROW_CHUNK as u64 + 1),
            (5, 5),
        ] {
            let rows: Vec<_> = RowWalk::new(store, from, to)
                .collect::<Result<_, _>>()
                .expect("walk");
            assert_eq!(rows.len() as u64, to - from);
            for ((m, bytes), i) in rows.iter().zip(from..) {
                assert_eq!(m.index, i);
                assert_eq!(Some(bytes.clone()), store.entry_bytes(i).expect("bytes"));
                assert_eq!(Some(*m), store.meta_at(i).expect("meta"));
            }
        }
        let past: Vec<_> = RowWalk::new(store, size - 1, size + 1).collect();
        assert_eq!(past.len(), 2);
        assert!(past[0].is_ok());
        assert!(
            matches!(&past[1], Err(StoreError::Corrupt { reason }) if reason.contains("missing"))
        );
    }
}
