//! The entries of one context (one agent session): found by the store's context index and
//! believed only from their signed bytes (`spec/storage.md` §4.5, `spec/hooks.md` §6).

use super::{Ledger, LedgerError};
use crate::record::{Hash32, SignedEntry};
use crate::store::Store;

/// One candidate of [`Ledger::context_entries`]: the entry at a leaf index, or why it could
/// not be verified.
pub type ContextEntry = (u64, Result<SignedEntry, LedgerError>);

impl<S: Store> Ledger<S> {
    /// The entries at leaf indexes below `below` (and below the ledger's size) whose signed
    /// context hash (`spec/record.md` field 5) is `context`, in log order.
    ///
    /// The store's index ([`Store::context_candidates`]) names the candidate rows; each is
    /// read and verified — its signature, and that it is the entry this handle believes at
    /// that index (its row, found by id, is at that index and its tag verifies,
    /// `spec/lineage.md` §5.1) — and kept when its signed context hash is `context`. A
    /// candidate that does not verify is returned as an error in its place: it may be one of
    /// the context's entries, so a caller that derives what a session read from this list
    /// counts it as a read that holds every value (fail closed, `spec/gate.md` §7).
    ///
    /// Cost: one indexed query and one verified read per candidate (the context's entries and
    /// the rows stored without a context hash), independent of the ledger's size otherwise.
    ///
    /// # Note
    /// The index is data beside the signed entries: a store-only attacker who rewrites a
    /// row's `context` column hides that row from this lookup (a row set to NULL stays a
    /// candidate). What that leaves open is stated in `spec/hooks.md` §6.
    ///
    /// # Errors
    /// Store failures of the index query. A candidate that cannot be read is not an error of
    /// the call: it is returned as unverifiable.
    pub fn context_entries(
        &self,
        context: &Hash32,
        below: u64,
    ) -> Result<Vec<ContextEntry>, LedgerError> {
        let below = below.min(self.size);
        let mut out = Vec::new();
        for index in self.store.context_candidates(context, below)? {
            if index >= below {
                continue;
            }
            // `get_by_index` checks that the bytes are the entry believed at `index`.
            match self.get_by_index(index) {
                Ok(e) if e.entry().context_hash == *context => out.push((index, Ok(e))),
                Ok(_) => {}
                Err(err) => out.push((index, Err(err))),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::lineage::LabelPolicy;
    use crate::log::LogSigner;
    use crate::record::{Hash32, Kind, ProvEntry, WriterKey};
    use crate::store::MemoryStore;
    use crate::Ledger;

    #[test]
    fn finds_the_entries_of_one_context_and_nothing_else() {
        let signer = LogSigner::new("test.example/ctx", WriterKey::for_label("log")).unwrap();
        let mut l = Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).unwrap();
        let k = WriterKey::for_label("user");
        l.bind(k.key_id(), crate::record::Role::User, "user")
            .unwrap();
        let (a, b) = (Hash32::digest(b"a"), Hash32::digest(b"b"));
        let mut want = Vec::new();
        for (i, ctx) in [a, b, a, b, a].into_iter().enumerate() {
            let text = format!("entry {i}");
            let e = ProvEntry::new(k.key_id(), Kind::Prompt, text.as_bytes())
                .with_context_hash(ctx)
                .with_time_ms(i as u64);
            let out = l.append(e, &k, text.as_bytes()).unwrap();
            if ctx == a {
                want.push(out.index);
            }
        }
        let got: Vec<u64> = l
            .context_entries(&a, l.len())
            .unwrap()
            .into_iter()
            .map(|(i, e)| {
                assert_eq!(e.unwrap().entry().context_hash, a);
                i
            })
            .collect();
        assert_eq!(got, want);
        // `below` cuts the list; an unknown context has none.
        assert_eq!(l.context_entries(&a, want[1]).unwrap().len(), 1);
        assert!(l
            .context_entries(&Hash32::digest(b"c"), l.len())
            .unwrap()
            .is_empty());
    }
}
