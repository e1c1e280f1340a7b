//! [`Ledger::submit_signed`]: the many-writer path of a PostgreSQL ledger
//! (`spec/storage.md` §11.6). Checks, keyring and labels happen at submission, exactly as in
//! [`Ledger::append_signed`]; numbering is the sequencer's and hashing the integrator's.

use super::{Admitted, Appended, Ledger, LedgerError};
use crate::lineage::state::Content;
use crate::record::SignedEntry;
use crate::store::{PgStore, SequencedRow, StoreError, Submission};

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
    /// ([`super::Integrator`]) and this handle calls [`Ledger::refresh`]. Parents must be
    /// integrated or submitted through this handle.
    ///
    /// Exactly-once: an entry the sequencer already holds (a retry after a crash or a lost
    /// reply) is not stored again and keeps its index, whether or not this handle knows it
    /// yet (a restarted writer whose handle already read the integrated entries gets their
    /// indexes and labels back, never `Duplicate`). Content given again for a known entry is
    /// not stored again.
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
        // A retry of entries this handle already holds (integrated, e.g. after the writer was
        // killed mid-batch and restarted, or submitted through it): each keeps its index.
        let known: Vec<Option<Appended>> = entries
            .iter()
            .map(|(s, _)| {
                let id = s.id();
                self.lookup(&id).ok().flatten().map(|m| Appended {
                    id,
                    index: m.index,
                    label: m.label,
                })
            })
            .collect();
        if known.iter().any(Option::is_some) {
            let fresh: Vec<(SignedEntry, &[u8])> = entries
                .iter()
                .zip(&known)
                .filter(|(_, k)| k.is_none())
                .map(|((s, c), _)| (s.clone(), *c))
                .collect();
            let mut stored = if fresh.is_empty() {
                Vec::new()
            } else {
                self.submit_signed(fresh)?
            }
            .into_iter();
            return known
                .into_iter()
                .map(|k| {
                    k.or_else(|| stored.next()).ok_or_else(|| {
                        crate::store::StoreError::Corrupt {
                            reason: "sequencer returned too few indexes".into(),
                        }
                        .into()
                    })
                })
                .collect();
        }
        let mut admitted = Admitted::default();
        let mut labels = Vec::with_capacity(entries.len());
        for (i, (s, content)) in entries.iter().enumerate() {
            // A provisional index: only the label matters for later entries of the batch.
            let index = self.size.saturating_add(i as u64);
            labels.push(self.admit(&mut admitted, index, s, Content::Given(content))?);
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
                context: Some(s.entry().context_hash),
            })
            .collect();
        self.writable()?;
        let indexes = self.store.sequence(batch)?;
        let mut out = Vec::with_capacity(entries.len());
        for (((s, content), label), index) in entries.iter().zip(labels).zip(indexes) {
            out.push(self.index_stored(s, index, label, Some(content), false));
        }
        Ok(out)
    }

    /// The log's admission of rows a PostgreSQL integration is about to sign into the tree
    /// (`spec/storage.md` §11.4): catches this handle up with the integrated log
    /// ([`Ledger::refresh`], which must then hold exactly `old` leaves), then verifies each
    /// row's signed bytes (the stored id and kind must be the signed ones) and admits it as
    /// [`Ledger::submit_signed`] does, against the log and the rows before it, with its
    /// content as stored. Changes nothing in the handle: the rows enter it at the next
    /// refresh, through the same door. Returns how many rows, a prefix, are admitted.
    ///
    /// # Errors
    /// [`StoreError::NotAdmitted`] (in [`LedgerError::Store`]) when the first row is refused;
    /// [`StoreError::Corrupt`] when the integrated log is not `old` leaves long; the errors
    /// of [`Ledger::refresh`].
    pub(crate) fn admit_sequenced(
        &mut self,
        old: u64,
        rows: &[SequencedRow],
    ) -> Result<usize, LedgerError> {
        self.refresh()?;
        if self.size != old {
            return Err(StoreError::Corrupt {
                reason: format!(
                    "integrating from {old} leaves, but the log holds {}",
                    self.size
                ),
            }
            .into());
        }
        // Signatures checked in batches on every core; answers as one by one.
        let items: Vec<&[u8]> = rows.iter().map(|r| r.cose.as_slice()).collect();
        let decoded = self.decode_many(&items);
        let mut admitted = Admitted::default();
        for (n, (r, s)) in rows.iter().zip(decoded).enumerate() {
            if let Err(e) = s
                .map_err(LedgerError::from)
                .and_then(|s| self.admit_row(&mut admitted, r, &s))
            {
                if n > 0 {
                    return Ok(n);
                }
                return Err(StoreError::NotAdmitted {
                    index: r.index,
                    reason: e.to_string(),
                }
                .into());
            }
        }
        Ok(rows.len())
    }

    /// One row of [`Ledger::admit_sequenced`].
    fn admit_row(
        &self,
        admitted: &mut Admitted,
        r: &SequencedRow,
        s: &SignedEntry,
    ) -> Result<(), LedgerError> {
        if s.id() != r.id || s.entry().kind != r.kind {
            return Err(LedgerError::NotTheEntry {
                id: r.id,
                index: r.index,
            });
        }
        self.admit(admitted, r.index, s, Content::Stored(r.content.as_deref()))?;
        Ok(())
    }
}
