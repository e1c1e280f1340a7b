//! M5: retrieval. Before an entry reaches a prompt it is verified (signature and canonical
//! bytes, inclusion under the current signed checkpoint) and rendered with its label, e.g.
//! `[trust=DERIVED_UNTRUSTED id=1a2b3c4d writer=agent] text`.

use crate::ledger::{Ledger, LedgerError};
use crate::lineage::Label;
use crate::log::VerifiedCheckpoint;
use crate::record::{EntryId, Kind, SignedEntry};
use crate::store::Store;

/// A verified entry ready for a prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retrieved {
    /// Entry id.
    pub id: EntryId,
    /// Its label.
    pub label: Label,
    /// Kind of write.
    pub kind: Kind,
    /// The writer's keyring name (or its key id's first 8 hex digits if unbound).
    pub writer: String,
    /// The content as UTF-8 (lossy), `None` when it was redacted.
    pub text: Option<String>,
}

impl Retrieved {
    /// `[trust=LABEL id=XXXXXXXX writer=NAME] text` (`[redacted]` for redacted content).
    pub fn render(&self) -> String {
        format!(
            "[trust={} id={} writer={}] {}",
            self.label,
            self.id.short(),
            self.writer,
            self.text.as_deref().unwrap_or("[redacted]")
        )
    }
}

/// What retrieval did with one requested id.
#[derive(Debug)]
pub enum Outcome {
    /// Verified; ready for the prompt.
    Verified(Retrieved),
    /// Deleted by a tombstone: kept out of the prompt.
    Tombstoned(EntryId),
    /// Failed verification or not found: kept out of the prompt.
    Rejected(EntryId, LedgerError),
}

impl<S: Store> Ledger<S> {
    /// Verifies and renders `ids` against the current checkpoint (signed now if stale).
    /// Each id gets its own [`Outcome`]; one bad entry does not hide the others.
    ///
    /// # Errors
    /// Only when no checkpoint can be produced (store failure).
    pub fn retrieve(&mut self, ids: &[EntryId]) -> Result<Vec<Outcome>, LedgerError> {
        let _span =
            tracing::info_span!("memlineage.retrieve", memlineage.ids = ids.len()).entered();
        let checkpoint = self.checkpoint()?;
        // 1. Store reads: the bytes of every known, live entry.
        let fetched: Vec<Result<Option<Vec<u8>>, LedgerError>> =
            ids.iter().map(|id| self.fetch(id)).collect();
        // 2. Signatures, verified on all cores (the expensive part).
        let bytes: Vec<&[u8]> = fetched
            .iter()
            .filter_map(|f| f.as_ref().ok().and_then(|b| b.as_deref()))
            .collect();
        let mut decoded = self.decode_many(&bytes).into_iter();
        // 3. Inclusion, content and rendering, in request order.
        Ok(ids
            .iter()
            .zip(fetched)
            .map(|(id, f)| match f {
                Err(e) => Outcome::Rejected(*id, e),
                Ok(None) => Outcome::Tombstoned(*id),
                Ok(Some(_)) => match decoded.next() {
                    Some(Ok(entry)) => match self.finish(id, entry, &checkpoint) {
                        Ok(r) => Outcome::Verified(r),
                        Err(e) => Outcome::Rejected(*id, e),
                    },
                    Some(Err(e)) => Outcome::Rejected(*id, e.into()),
                    None => Outcome::Rejected(*id, LedgerError::Missing(*id)),
                },
            })
            .collect())
    }

    /// The stored bytes of `id`, or `None` when it is tombstoned.
    fn fetch(&self, id: &EntryId) -> Result<Option<Vec<u8>>, LedgerError> {
        let index = self.index_of(id).ok_or(LedgerError::UnknownEntry(*id))?;
        if self.is_tombstoned(id) {
            return Ok(None);
        }
        self.store()
            .entry_bytes(index)?
            .map(Some)
            .ok_or(LedgerError::Missing(*id))
    }

    /// Inclusion under `checkpoint`, content, rendering of a verified entry.
    fn finish(
        &self,
        id: &EntryId,
        entry: SignedEntry,
        checkpoint: &VerifiedCheckpoint,
    ) -> Result<Retrieved, LedgerError> {
        if entry.id() != *id {
            return Err(LedgerError::Missing(*id));
        }
        let label = self.label(id).ok_or(LedgerError::UnknownEntry(*id))?;
        let index = self.index_of(id).ok_or(LedgerError::UnknownEntry(*id))?;
        let proof = crate::log::prove_inclusion(
            checkpoint.size(),
            index,
            &crate::ledger::StoreSource(self.store()),
        )?;
        checkpoint.verify_inclusion(&entry.id(), &proof)?;
        let writer = match self.principal(&entry.writer()) {
            Some((_, name)) => name.to_string(),
            None => entry.writer().short(),
        };
        let text = self
            .content(&entry)?
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        Ok(Retrieved {
            id: *id,
            label,
            kind: entry.entry().kind,
            writer,
            text,
        })
    }
}
