//! Retrieval. Before an entry reaches a prompt it is verified (signature and canonical
//! bytes, inclusion under the current signed checkpoint) and rendered with its label, e.g.
//! `[trust=DERIVED_UNTRUSTED id=1a2b3c4d writer=agent] text`.

use crate::ledger::{Ledger, LedgerError};
use crate::lineage::Label;
use crate::log::{InclusionProof, LogError, RootHash, VerifiedCheckpoint};
use crate::record::{decode_on_all_cores, reparse_verified, EntryId, Kind, SignedEntry};
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
    index: u64,
    bytes: Vec<u8>,
    proof: Result<InclusionProof, LogError>,
}

impl Fetched {
    /// The bytes read are not entry `id`.
    fn not_entry(&self, id: EntryId) -> LedgerError {
        LedgerError::NotTheEntry {
            id,
            index: self.index,
        }
    }
}

/// Entries a handle's [`Ledger::retrieve`] verified, signature and inclusion, under one
/// checkpoint (`root`), rendered: retrieved again under that same checkpoint they need no
/// store read and no check (an inclusion proof that verified against a signed root stays
/// true of that root; labels, writers' names and content are immutable). Their forensic
/// state is asked afresh at every call. At most [`WARM_MAX_BYTES`] of text and ids; cleared
/// when full, whenever the checkpoint changes and whenever the store's content epoch does
/// (a redaction; kept not at all on a store that cannot tell, `spec/log.md` §11).
#[derive(Default)]
pub(crate) struct Warm {
    root: Option<RootHash>,
    /// The store's content epoch when the entries were verified ([`Store::content_epoch`]).
    epoch: Option<u64>,
    entries: crate::record::IdMap<EntryId, Retrieved>,
    bytes: usize,
}

/// Most bytes (texts plus a fixed cost per entry) [`Warm`] keeps.
const WARM_MAX_BYTES: usize = 16 << 20;

impl Warm {
    /// Keeps what was verified under `root` while the store's content epoch is `epoch`
    /// only; nothing when the store cannot tell (`epoch` `None`: content may have been
    /// removed at any time).
    fn under(&mut self, root: RootHash, epoch: Option<u64>) {
        if self.root != Some(root) || self.epoch != epoch || epoch.is_none() {
            *self = Warm {
                root: Some(root),
                epoch,
                ..Warm::default()
            };
        }
    }

    fn get(&self, id: &EntryId) -> Option<&Retrieved> {
        self.entries.get(id)
    }

    fn keep(&mut self, r: &Retrieved) {
        if self.epoch.is_none() {
            return;
        }
        let cost = 128 + r.writer.len() + r.text.as_ref().map_or(0, String::len);
        if self.bytes + cost > WARM_MAX_BYTES {
            self.entries.clear();
            self.bytes = 0;
        }
        if cost <= WARM_MAX_BYTES && self.entries.insert(r.id, r.clone()).is_none() {
            self.bytes += cost;
        }
    }
}

impl<S: Store> Ledger<S> {
    /// Verifies and renders `ids` against the current checkpoint (signed now if stale).
    /// Each id gets its own [`Outcome`]; one bad entry does not hide the others.
    ///
    /// Three phases: store reads in request order (entry bytes and audit paths: a store need
    /// not be shared between threads); then the checks that need no store: the signatures in
    /// one batch per core ([`decode_on_all_cores`]; bytes that hash to an entry this handle
    /// already verified are parsed only, [`Ledger::get`]), the id and the audit path against
    /// the checkpoint; then content and rendering in request order. The answers are those of
    /// checking one entry at a time.
    ///
    /// Warm retrieval (`spec/log.md` §11): a live entry this handle already retrieved under
    /// the same checkpoint is answered from memory, with no store read; its tombstone and
    /// quarantine are asked afresh. [`Ledger::forget_verified`] drops that memory.
    ///
    /// # Errors
    /// Only when no checkpoint can be produced (store failure).
    pub fn retrieve(&mut self, ids: &[EntryId]) -> Result<Vec<Outcome>, LedgerError> {
        let _span =
            tracing::info_span!("memlineage.retrieve", memlineage.ids = ids.len()).entered();
        let checkpoint = self.checkpoint()?;
        // Content removed since (a redaction, by any handle) must not be rendered again.
        let epoch = self.store().content_epoch()?;
        self.warm.under(checkpoint.root(), epoch);
        let warm: Vec<Option<Retrieved>> = ids.iter().map(|id| self.warm_hit(id)).collect();
        let cold: Vec<EntryId> = ids
            .iter()
            .zip(&warm)
            .filter(|(_, w)| w.is_none())
            .map(|(id, _)| *id)
            .collect();
        let mut answered = self.retrieve_cold(&cold, &checkpoint).into_iter();
        // `retrieve_cold` answers every id it is given, in order; one it did not would be
        // rejected, never rendered.
        Ok(ids
            .iter()
            .zip(warm)
            .map(|(id, w)| match w {
                Some(r) => Outcome::Verified(r),
                None => answered
                    .next()
                    .unwrap_or(Outcome::Rejected(*id, LedgerError::Missing(*id))),
            })
            .collect())
    }

    /// Forgets every entry this handle verified: the next [`Ledger::retrieve`] or
    /// [`Ledger::get`] of each reads the store and checks its signature (and inclusion) again,
    /// as a fresh handle would.
    pub fn forget_verified(&mut self) {
        self.warm = Warm::default();
        self.origin.forget();
        self.forget_verified_ids();
    }

    /// The remembered rendering of `id` when it is live and was verified under the current
    /// checkpoint.
    fn warm_hit(&self, id: &EntryId) -> Option<Retrieved> {
        if self.index_of(id).is_none() || self.is_tombstoned(id) || self.is_quarantined(id) {
            return None;
        }
        self.warm.get(id).cloned()
    }

    /// [`Ledger::retrieve`] of `ids` from the store, remembering each verified rendering.
    fn retrieve_cold(&mut self, ids: &[EntryId], checkpoint: &VerifiedCheckpoint) -> Vec<Outcome> {
        if ids.is_empty() {
            return Vec::new();
        }
        // 1. Store reads: the bytes and audit path of every known, live entry.
        let fetched: Vec<Result<Option<Fetched>, LedgerError>> =
            ids.iter().map(|id| self.fetch(id, checkpoint)).collect();
        // 2. Signature, id and inclusion: no store, so on all cores (the expensive part).
        // Bytes that hash to an entry this handle verified are those bytes: parsed only.
        let live: Vec<(&EntryId, &Fetched)> = ids
            .iter()
            .zip(&fetched)
            .filter_map(|(id, f)| f.as_ref().ok().and_then(|f| f.as_ref()).map(|f| (id, f)))
            .collect();
        let known: Vec<bool> = live.iter().map(|(id, _)| self.is_verified(id)).collect();
        let bytes: Vec<&[u8]> = live
            .iter()
            .zip(&known)
            .filter(|(_, k)| !**k)
            .map(|((_, f), _)| f.bytes.as_slice())
            .collect();
        let mut batch = decode_on_all_cores(&bytes, self.key_lookup()).into_iter();
        let decoded: Vec<Result<SignedEntry, LedgerError>> = live
            .iter()
            .zip(&known)
            .map(|((id, f), k)| match k {
                true => reparse_verified(&f.bytes, **id)?.ok_or_else(|| f.not_entry(**id)),
                false => Ok(batch.next().ok_or(LedgerError::Missing(**id))??),
            })
            .collect();
        let mut checked = live
            .iter()
            .zip(decoded)
            .map(|((id, f), entry)| -> Result<SignedEntry, LedgerError> {
                let entry = entry?;
                if entry.id() != **id {
                    return Err(f.not_entry(**id));
                }
                let proof = f.proof.as_ref().map_err(|e| LedgerError::from(e.clone()))?;
                checkpoint.verify_inclusion(&entry.id(), proof)?;
                Ok(entry)
            })
            .collect::<Vec<_>>()
            .into_iter();
        // 3. Label, content and rendering, in request order.
        let out: Vec<Outcome> = ids
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
            .collect();
        let verified = || {
            out.iter().filter_map(|o| match o {
                Outcome::Verified(r) => Some(r),
                _ => None,
            })
        };
        self.remember_verified(verified().map(|r| r.id));
        for r in verified() {
            self.warm.keep(r);
        }
        out
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
        Ok(Some(Fetched {
            index,
            bytes,
            proof,
        }))
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
