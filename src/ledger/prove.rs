//! Checkpoints and proofs: [`Ledger::checkpoint`], [`Ledger::prove_inclusion`],
//! [`Ledger::prove_consistency`], [`Ledger::prove`], and the store as a [`HashSource`].

use super::{Ledger, LedgerError};
use crate::log::{
    prove_inclusion, tree_root, ConsistencyProof, HashSource, InclusionProof, LogError,
    ProofBundle, RootHash, VerifiedCheckpoint,
};
use crate::record::EntryId;
use crate::store::{Store, StoreError};

/// How many times [`Ledger::checkpoint`] catches up with heads other handles signed meanwhile.
const MAX_CATCH_UP: usize = 16;

impl<S: Store> Ledger<S> {
    /// The root hash of the current tree.
    ///
    /// # Errors
    /// Store errors.
    pub fn root(&self) -> Result<RootHash, LedgerError> {
        Ok(tree_root(self.size, &StoreSource(&self.store))?)
    }

    /// A verified checkpoint for the current tree size: the stored one if it is current,
    /// otherwise a newly signed one, stored and verified before it is returned. A new head is
    /// signed only if the stored tree extends the last signed one (consistency proof). When
    /// another handle stored a checkpoint larger than this handle's tree, this handle first
    /// catches up ([`Ledger::refresh`]) so that it serves that head, verified, or one that
    /// extends it.
    ///
    /// # Errors
    /// [`LedgerError::TreeInconsistent`] when the stored tree hashes do not match the last
    /// signed checkpoint; [`LedgerError::Seal`] from catching up; store, tree and checkpoint
    /// errors.
    pub fn checkpoint(&mut self) -> Result<VerifiedCheckpoint, LedgerError> {
        if let Some(c) = &self.checkpoint {
            if c.size() == self.size {
                return Ok(c.clone());
            }
        }
        let mut attempt = 0;
        loop {
            match self.checkpoint_once()? {
                Some(c) => {
                    self.checkpoint = Some(c.clone());
                    return Ok(c);
                }
                // Another handle signed a head past this one meanwhile: catch up and try again.
                None if attempt < MAX_CATCH_UP => {
                    attempt += 1;
                    self.refresh()?;
                }
                None => {
                    return Err(LedgerError::BehindSignedCheckpoint {
                        signed: self.size.saturating_add(1),
                        stored: self.size,
                    })
                }
            }
        }
    }

    /// One attempt of [`Ledger::checkpoint`]; `None` when a head newer than this handle's
    /// tree was signed (by another handle) between reading the store and checking for forks.
    fn checkpoint_once(&mut self) -> Result<Option<VerifiedCheckpoint>, LedgerError> {
        let verifier = self.verifier()?;
        let latest = self.store.latest_checkpoint()?;
        if latest.as_ref().is_some_and(|(size, _)| *size > self.size) {
            // Another handle appended and signed a fresher head. Its entries were committed
            // before its checkpoint was stored, so catching up reaches at least its size: the
            // head is then served (verified below) or extended, never taken for a fork.
            self.refresh()?;
        }
        let root = self.root()?;
        let c = match latest {
            Some((size, note)) if size == self.size => {
                let c = verifier.verify(&note)?;
                // The stored hashes must still give the signed root, and the head served must
                // extend every signed head this handle knows (its pins too): a head the key
                // signed is served only as a continuation of what the caller has seen.
                if c.root() != root {
                    return Err(LedgerError::TreeInconsistent { signed_size: size });
                }
                super::signed::check_extends_notes(
                    &verifier,
                    self.known.iter().cloned(),
                    &c,
                    &StoreSource(&self.store),
                    true,
                )?;
                c
            }
            _ => {
                self.writable()?;
                let c = verifier.verify(&self.sign_head(&root)?)?;
                // Never sign a fork: the new head must extend the newest head the log key
                // signed that this handle can find (the store's, the side file's, the caller's
                // pin), else a corrupted or edited hash in the store, with the store's own
                // checkpoints deleted, would be signed into the log's history.
                if let Some(old) =
                    super::signed::newest_signed(&self.store, &verifier, &self.known)?
                {
                    let forked = || LedgerError::TreeInconsistent {
                        signed_size: old.size(),
                    };
                    if old.size() > self.size && self.size > 0 {
                        // Another handle signed a head past this one meanwhile: this head must
                        // be a prefix of it (a consistency proof from the stored hashes).
                        let proof = crate::log::prove_consistency(
                            self.size,
                            old.size(),
                            &StoreSource(&self.store),
                        );
                        match proof {
                            Ok(p) if c.verify_consistency(&old, &p).is_ok() => {}
                            Ok(_) => return Err(forked()),
                            // The stored hashes for the newer head are not there yet.
                            Err(_) => return Ok(None),
                        }
                    }
                    if old.size() == self.size && old.root() != root {
                        return Err(forked());
                    }
                    if old.size() > 0 && old.size() < self.size {
                        let proof = crate::log::prove_consistency(
                            old.size(),
                            self.size,
                            &StoreSource(&self.store),
                        )
                        .map_err(|_| forked())?;
                        old.verify_consistency(&c, &proof).map_err(|_| forked())?;
                    }
                }
                self.store.put_checkpoint(self.size, c.note())?;
                // Entries stored without a seal (a sequenced PostgreSQL batch, a crash between
                // an append and its seal) are verified by now: seal them, so that the next
                // open need not verify them again.
                self.seal_pending()?;
                c
            }
        };
        Ok(Some(c))
    }

    /// The signed note of this handle's tree (`root` of its `size` entries) with the
    /// extension lines a ledger signs: its labelling parameters (`spec/lineage.md` §2.1) and
    /// its effects index (`spec/label-proof.md` §3.3).
    pub(super) fn sign_head(&mut self, root: &RootHash) -> Result<Vec<u8>, LedgerError> {
        let extension = format!(
            "{}{}",
            self.label_policy().extension_line(),
            self.state.effects_commitment().extension_line()
        );
        Ok(self.signer.sign_with(self.size, root, &extension)?)
    }

    /// An inclusion proof for `id` against the tree of the current checkpoint.
    ///
    /// # Errors
    /// [`LedgerError::UnknownEntry`]; tree errors.
    pub fn prove_inclusion(
        &mut self,
        id: &EntryId,
    ) -> Result<(InclusionProof, VerifiedCheckpoint), LedgerError> {
        let c = self.checkpoint()?;
        let index = self.index_of(id).ok_or(LedgerError::UnknownEntry(*id))?;
        let proof = prove_inclusion(c.size(), index, &StoreSource(&self.store))?;
        Ok((proof, c))
    }

    /// A consistency proof from tree size `old_size` to the current checkpoint.
    ///
    /// # Errors
    /// Tree errors (e.g. `old_size` 0 or larger than the tree).
    pub fn prove_consistency(
        &mut self,
        old_size: u64,
    ) -> Result<(ConsistencyProof, VerifiedCheckpoint), LedgerError> {
        let c = self.checkpoint()?;
        let proof = crate::log::prove_consistency(old_size, c.size(), &StoreSource(&self.store))?;
        Ok((proof, c))
    }

    /// An offline proof bundle for `id` (entry, audit path, signed checkpoint).
    ///
    /// # Errors
    /// As [`Ledger::prove_inclusion`].
    pub fn prove(&mut self, id: &EntryId) -> Result<ProofBundle, LedgerError> {
        let (proof, c) = self.prove_inclusion(id)?;
        let entry = self.get(id)?;
        Ok(ProofBundle {
            entry: entry.cose().to_vec(),
            proof,
            checkpoint: c.note().to_vec(),
        })
    }
}

/// Adapts a [`Store`] to the log's [`HashSource`], so proofs can be built from any store
/// (e.g. by an auditor holding a copy of the ledger file).
pub struct StoreSource<'a, S: Store>(pub &'a S);

impl<S: Store> HashSource for StoreSource<'_, S> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError> {
        self.0.read_hashes(indexes).map_err(log_error)
    }
}

/// A store failure as the log sees it: a missing tree hash stays typed
/// ([`LogError::MissingHash`]); anything else is the source's message ([`LogError::Source`]).
/// Here, not in `log`, because verification knows nothing of stores.
fn log_error(e: StoreError) -> LogError {
    match e {
        StoreError::MissingHash(i) => LogError::MissingHash(i),
        e => LogError::Source {
            detail: e.to_string(),
        },
    }
}

/// Store hashes plus the not-yet-stored hashes of the batch being appended.
pub(super) struct Overlay<'a, S: Store> {
    pub(super) store: &'a S,
    pub(super) start: u64,
    pub(super) pending: Vec<[u8; 32]>,
}

impl<S: Store> HashSource for Overlay<'_, S> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError> {
        let stored: Vec<u64> = indexes
            .iter()
            .copied()
            .filter(|i| *i < self.start)
            .collect();
        // Within a batch most hashes are the batch's own: ask the store only when needed.
        let from_store = if stored.is_empty() {
            Vec::new()
        } else {
            StoreSource(self.store).read_hashes(&stored)?
        };
        let mut from_store = from_store.into_iter();
        indexes
            .iter()
            .map(|&i| {
                if i < self.start {
                    from_store.next().ok_or_else(|| LogError::Source {
                        detail: format!("hash {i} missing"),
                    })
                } else {
                    usize::try_from(i - self.start)
                        .ok()
                        .and_then(|k| self.pending.get(k).copied())
                        .ok_or_else(|| LogError::Source {
                            detail: format!("hash {i} missing"),
                        })
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_store_error() {
        assert_eq!(
            log_error(StoreError::MissingHash(5)),
            LogError::MissingHash(5)
        );
        assert!(matches!(
            log_error(StoreError::Corrupt { reason: "x".into() }),
            LogError::Source { .. }
        ));
    }
}
