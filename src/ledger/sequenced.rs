//! [`Ledger::submit_signed`]: the many-writer path of a PostgreSQL ledger
//! (`spec/storage.md` §11.6). Checks, keyring and labels happen at submission, exactly as in
//! [`Ledger::append_signed`]; numbering is the sequencer's and hashing the integrator's.

use super::{Admitted, Appended, Ledger, LedgerError};
use crate::record::SignedEntry;
use crate::store::{PgStore, Submission};

#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
impl Ledger<PgStore> {
    /// Checks and labels signed entries as [`Ledger::append_signed`] does (writer bound,
    /// content hash, keyring rules, parents known, label computed), then hands them to the
    /// sequencer ([`PgStore::sequence`], one round trip) instead of hashing them into the tree.
    /// Returns each entry's id, sequenced index and label.
    ///
    /// The entries are durable and numbered when this returns, and known to this handle (a
    /// later batch may name them as parents, a binding in the batch binds its key at once);
    /// they enter the tree, and [`Ledger::len`], when an integrator runs
    /// ([`PgStore::integrate`]) and this handle calls [`Ledger::refresh`]. Parents must be
    /// integrated or submitted through this handle.
    ///
    /// Exactly-once: an entry the sequencer already holds (a retry after a crash or a lost
    /// reply, from any handle that does not know it yet) is not stored again and keeps its
    /// index. Submitting again through the handle that already knows it is
    /// [`LedgerError::Duplicate`], as for `append_signed`.
    ///
    /// # Errors
    /// As [`Ledger::append_signed`] for the checks; [`LedgerError::Store`] from the
    /// sequencer. On error nothing of the batch is stored or indexed.
    pub fn submit_signed(
        &mut self,
        entries: Vec<(SignedEntry, &[u8])>,
    ) -> Result<Vec<Appended>, LedgerError> {
        if entries.is_empty() {
            return Err(LedgerError::EmptyBatch);
        }
        let mut admitted = Admitted::default();
        let mut labels = Vec::with_capacity(entries.len());
        for (i, (s, content)) in entries.iter().enumerate() {
            // A provisional index: only the label matters for later entries of the batch.
            let index = self.size.saturating_add(i as u64);
            labels.push(self.admit(&mut admitted, index, s, content)?);
        }
        let batch = entries
            .iter()
            .zip(&labels)
            .map(|((s, content), label)| Submission {
                id: s.id(),
                cose: s.cose().to_vec(),
                kind: s.entry().kind,
                label: *label,
                content: Some((s.entry().content_hash, content.to_vec())),
            })
            .collect();
        let indexes = self.store.sequence(batch)?;
        let mut out = Vec::with_capacity(entries.len());
        for (((s, content), label), index) in entries.iter().zip(labels).zip(indexes) {
            out.push(self.index_stored(s, index, label, Some(content)));
        }
        Ok(out)
    }
}
