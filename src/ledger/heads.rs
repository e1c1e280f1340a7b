//! The signed heads a live handle checks the store against at every refresh, as opening does
//! (`spec/lineage.md` §5.1, attack review 57): the store's newest checkpoint, the side file
//! and the notes the caller kept outside the store ([`Ledger::know_checkpoint`]). A store that
//! holds fewer entries than one of them was cut or rolled back below what the log key signed;
//! a handle that had not seen the entries cut (a flag another process appended) would
//! otherwise take it as current where a fresh handle refuses to open it.

use super::{Ledger, LedgerError};
use crate::log::VerifiedCheckpoint;
use crate::record::Hash32;
use crate::store::Store;
use std::collections::HashMap;

/// Most verified notes [`Heads`] remembers (cleared when full; they are verified again).
const MAX_HEADS: usize = 64;

/// Notes this handle verified under the log key, by the SHA-256 of their bytes, with their
/// tree size: a refresh reads the heads at every call and checks the signature of a note only
/// the first time it sees its bytes.
#[derive(Debug, Default)]
pub(super) struct Heads {
    verified: HashMap<Hash32, u64>,
    /// The notes of `known` given by [`Ledger::know_checkpoint`], with their sizes: the
    /// largest, and any of its size learned since (a smaller one is dropped from both).
    learned: Vec<(u64, Vec<u8>)>,
}

impl Heads {
    /// Remembers that `c`'s note verified under the log key (opening verified it).
    pub(super) fn remember(&mut self, c: &VerifiedCheckpoint) {
        if self.verified.len() < MAX_HEADS {
            self.verified.insert(Hash32::digest(c.note()), c.size());
        }
    }
}

impl<S: Store> Ledger<S> {
    /// Adds `note`, a checkpoint of this log kept where the store's writers cannot reach (a
    /// front's pin, `spec/hooks.md` §6.2), to the heads this handle checks the store against:
    /// from the next [`Ledger::refresh`] on, a store holding fewer entries than it signs is
    /// refused ([`LedgerError::BehindSignedCheckpoint`]), as [`Ledger::open_with`] refuses it
    /// given the note in [`crate::ledger::OpenOptions::checkpoints`]; and every checkpoint
    /// this handle signs must extend it.
    ///
    /// A pin only advances to a head that extends it, so a note learned this way replaces the
    /// smaller ones learned before it (those given on open stay): a server that learns every
    /// pin of a long life keeps one, not all.
    ///
    /// # Errors
    /// Checkpoint errors when `note` does not verify under the log key (nothing is added).
    pub fn know_checkpoint(&mut self, note: &[u8]) -> Result<(), LedgerError> {
        let size = self.signed_size(note)?;
        if self.known.iter().any(|k| k == note) {
            return Ok(());
        }
        let learned = std::mem::take(&mut self.heads.learned);
        self.known
            .retain(|k| !learned.iter().any(|(s, n)| n == k && *s < size));
        self.heads.learned = learned.into_iter().filter(|(s, _)| *s >= size).collect();
        self.heads.learned.push((size, note.to_vec()));
        self.known.push(note.to_vec());
        Ok(())
    }

    /// The size of the newest head the log key signed that this handle can find: the store's
    /// latest checkpoint, the side file, the notes it was given. Read before the store's tree
    /// size, so that a checkpoint another process commits meanwhile (after its entries) is
    /// never newer than the size read.
    ///
    /// # Errors
    /// Checkpoint errors for a note that does not verify (a forged head refuses, as on
    /// open); store errors.
    pub(super) fn newest_signed_size(&mut self) -> Result<u64, LedgerError> {
        let stored = [
            self.store.latest_checkpoint()?.map(|(_, n)| n),
            self.store.durable_checkpoint()?,
        ];
        let mut newest = 0;
        for note in stored.iter().flatten() {
            newest = newest.max(self.signed_size(note)?);
        }
        for i in 0..self.known.len() {
            let note = self.known[i].clone();
            newest = newest.max(self.signed_size(&note)?);
        }
        Ok(newest)
    }

    /// The tree size `note` signs, verified under the log key once per note bytes.
    fn signed_size(&mut self, note: &[u8]) -> Result<u64, LedgerError> {
        let digest = Hash32::digest(note);
        if let Some(size) = self.heads.verified.get(&digest) {
            return Ok(*size);
        }
        let size = self.signer.verifier().verify(note)?.size();
        if self.heads.verified.len() >= MAX_HEADS {
            self.heads.verified.clear();
        }
        self.heads.verified.insert(digest, size);
        Ok(size)
    }
}
