//! M5: retrieval. Before an entry reaches a prompt it is verified (signature and canonical
//! bytes, inclusion under the current signed checkpoint) and rendered with its label, e.g.
//! `[trust=DERIVED_UNTRUSTED id=1a2b3c4d writer=agent] text`.

use crate::ledger::{Ledger, LedgerError};
use crate::lineage::Label;
use crate::log::{InclusionProof, LogError, VerifiedCheckpoint};
use crate::record::{decode_on_all_cores, EntryId, Kind, SignedEntry};
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
///
/// Exhaustive: a caller that puts entries into a prompt must handle every outcome (only
/// `Verified` text may be shown as verified); a new one must break its build rather than fall into
/// a wildcard arm.
#[derive(Debug)]
pub enum Outcome {
    /// Verified; ready for the prompt.
    Verified(Retrieved),
    /// Deleted by a tombstone: kept out of the prompt.
    Tombstoned(EntryId),
    /// Quarantined by a flag (`spec/forensics.md` §2): kept out of the prompt, still stored.
    Quarantined(EntryId),
    /// Failed verification or not found: kept out of the prompt.
    Rejected(EntryId, LedgerError),
}

/// What the store phase of retrieval read for one live entry: its bytes, and its audit path
/// under the checkpoint (an error here is reported only after the signature is checked, so a
/// bad entry is named for its first problem in the order: signature, id, path, inclusion).
struct Fetched {
    bytes: Vec<u8>,
    proof: Result<InclusionProof, LogError>,
}

impl<S: Store> Ledger<S> {
    /// Verifies and renders `ids` against the current checkpoint (signed now if stale).
    /// Each id gets its own [`Outcome`]; one bad entry does not hide the others.
    ///
    /// Three phases: store reads in request order (entry bytes and audit paths: a store need
    /// not be shared between threads); then the checks that need no store: the signatures in
    /// one batch per core ([`decode_on_all_cores`]), the id and the audit path against the
    /// checkpoint; then content and rendering in request order. The answers are those of
    /// checking one entry at a time.
    ///
    /// # Errors
    /// Only when no checkpoint can be produced (store failure).
    pub fn retrieve(&mut self, ids: &[EntryId]) -> Result<Vec<Outcome>, LedgerError> {
        let _span =
            tracing::info_span!("memlineage.retrieve", memlineage.ids = ids.len()).entered();
        let checkpoint = self.checkpoint()?;
        // 1. Store reads: the bytes and audit path of every known, live entry.
        let fetched: Vec<Result<Option<Fetched>, LedgerError>> =
            ids.iter().map(|id| self.fetch(id, &checkpoint)).collect();
        // 2. Signature, id and inclusion: no store, so on all cores (the expensive part).
        let live: Vec<(&EntryId, &Fetched)> = ids
            .iter()
            .zip(&fetched)
            .filter_map(|(id, f)| f.as_ref().ok().and_then(|f| f.as_ref()).map(|f| (id, f)))
            .collect();
        let bytes: Vec<&[u8]> = live.iter().map(|(_, f)| f.bytes.as_slice()).collect();
        let decoded = decode_on_all_cores(&bytes, self.key_lookup());
        let mut checked = live
            .iter()
            .zip(decoded)
            .map(|((id, f), entry)| -> Result<SignedEntry, LedgerError> {
                let entry = entry?;
                if entry.id() != **id {
                    return Err(LedgerError::Missing(**id));
                }
                let proof = f.proof.as_ref().map_err(|e| LedgerError::from(e.clone()))?;
                checkpoint.verify_inclusion(&entry.id(), proof)?;
                Ok(entry)
            })
            .collect::<Vec<_>>()
            .into_iter();
        // 3. Label, content and rendering, in request order.
        Ok(ids
            .iter()
            .zip(fetched)
            .map(|(id, f)| match f {
                Err(e) => Outcome::Rejected(*id, e),
                Ok(None) if self.is_quarantined(id) => Outcome::Quarantined(*id),
                Ok(None) => Outcome::Tombstoned(*id),
                Ok(Some(_)) => match checked.next() {
                    Some(Ok(entry)) => match self.finish(id, entry) {
                        Ok(r) => Outcome::Verified(r),
                        Err(e) => Outcome::Rejected(*id, e),
                    },
                    Some(Err(e)) => Outcome::Rejected(*id, e),
                    None => Outcome::Rejected(*id, LedgerError::Missing(*id)),
                },
            })
            .collect())
    }

    /// The stored bytes and audit path of `id`, or `None` when it is tombstoned or
    /// quarantined.
    fn fetch(
        &self,
        id: &EntryId,
        checkpoint: &VerifiedCheckpoint,
    ) -> Result<Option<Fetched>, LedgerError> {
        let index = self.index_of(id).ok_or(LedgerError::UnknownEntry(*id))?;
        if self.is_tombstoned(id) || self.is_quarantined(id) {
            return Ok(None);
        }
        let bytes = self
            .store()
            .entry_bytes(index)?
            .ok_or(LedgerError::Missing(*id))?;
        let proof = crate::log::prove_inclusion(
            checkpoint.size(),
            index,
            &crate::ledger::StoreSource(self.store()),
        );
        Ok(Some(Fetched { bytes, proof }))
    }

    /// Label, content and rendering of an entry whose signature and inclusion verified.
    fn finish(&self, id: &EntryId, entry: SignedEntry) -> Result<Retrieved, LedgerError> {
        let label = self.label(id).ok_or(LedgerError::UnknownEntry(*id))?;
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

    /// The text of `id` whatever its forensic state (tombstoned, quarantined or live), for
    /// taint matching only (`spec/gate.md` §7): the entry's bytes are re-verified (signature
    /// and id) and its content checked against the signed content hash. `Ok(None)` when the
    /// content is redacted. Never use it to *render* an entry: retrieval refuses tombstoned
    /// and quarantined entries.
    ///
    /// # Errors
    /// [`LedgerError::UnknownEntry`], [`LedgerError::Record`] or
    /// [`LedgerError::ContentTampered`] when the entry cannot be verified; store errors.
    pub fn verified_text(&self, id: &EntryId) -> Result<Option<String>, LedgerError> {
        let entry = self.get(id)?;
        Ok(self
            .content(&entry)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }
}
