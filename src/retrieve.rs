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
        let checkpoint = self.checkpoint()?;
        Ok(ids
            .iter()
            .map(|id| match self.retrieve_one(id, &checkpoint) {
                Ok(Some(r)) => Outcome::Verified(r),
                Ok(None) => Outcome::Tombstoned(*id),
                Err(e) => Outcome::Rejected(*id, e),
            })
            .collect())
    }

    fn retrieve_one(
        &self,
        id: &EntryId,
        checkpoint: &VerifiedCheckpoint,
    ) -> Result<Option<Retrieved>, LedgerError> {
        let label = self.label(id).ok_or(LedgerError::UnknownEntry(*id))?;
        if self.is_tombstoned(id) {
            return Ok(None);
        }
        let entry: SignedEntry = self.get(id)?;
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
        Ok(Some(Retrieved {
            id: *id,
            label,
            kind: entry.entry().kind,
            writer,
            text,
        }))
    }
}
