//! [`Ledger::prove_label`]: an offline label proof (`spec/label-proof.md`) for one entry.

use super::prove::StoreSource;
use super::{Ledger, LedgerError};
use crate::lineage::effects_index::{Effect, IndexCommitment, Lookup, Subject};
use crate::lineage::label_proof::{LabelProof, ProvedEntry};
use crate::log::{prove_inclusion, VerifiedCheckpoint};
use crate::record::{EntryId, Kind};
use crate::store::Store;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

impl<S: Store> Ledger<S> {
    /// A label proof for `id` against a checkpoint of the current tree that signs the
    /// effects index ([`Ledger::indexed_checkpoint`]): the entry, its whole ancestry, every
    /// effect about an ancestor, a writer of one or a flag on one, each with its inclusion
    /// proof, and the effects-index lookups that show no other effect about them exists
    /// (`spec/label-proof.md` §2). Cost: O(ancestry + effects about it) store reads and
    /// inclusion proofs, O(log effects) per lookup; nothing proportional to the log.
    ///
    /// # Errors
    /// [`LedgerError::UnknownEntry`]; [`LedgerError::EffectsIndexMismatch`]; store, decode,
    /// tree and checkpoint errors.
    pub fn prove_label(&mut self, id: &EntryId) -> Result<LabelProof, LedgerError> {
        let c = self.indexed_checkpoint()?;
        let mut entries: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        let mut subjects: BTreeSet<Subject> = BTreeSet::new();
        let mut seen = HashSet::from([*id]);
        let mut queue = VecDeque::from([*id]);
        while let Some(x) = queue.pop_front() {
            let e = self.get(&x)?;
            let index = self.index_of(&x).ok_or(LedgerError::UnknownEntry(x))?;
            if e.writer() != self.state.log_key() {
                subjects.insert(Subject::Key(e.writer()));
            }
            subjects.insert(Subject::Target(x));
            for p in &e.entry().parents {
                if seen.insert(p.id) {
                    queue.push_back(p.id);
                }
            }
            entries.insert(index, e.cose().to_vec());
        }
        let mut lookups: Vec<Lookup> = Vec::new();
        let mut flags = Vec::new();
        for s in subjects {
            let effects = self.look_up(s, &mut lookups, &mut entries)?;
            flags.extend(
                effects
                    .iter()
                    .filter(|e| matches!(e.kind, Kind::Quarantine | Kind::QuarantineStrong))
                    .map(|e| Subject::Target(e.id)),
            );
        }
        for f in flags {
            if !lookups.iter().any(|l| l.subject == f) {
                self.look_up(f, &mut lookups, &mut entries)?;
            }
        }
        lookups.sort_by_key(|l| l.subject);
        let mut proved = Vec::with_capacity(entries.len());
        for (index, cose) in entries {
            let path = prove_inclusion(c.size(), index, &StoreSource(&self.store))?.path;
            proved.push(ProvedEntry { index, cose, path });
        }
        let subject = self.index_of(id).ok_or(LedgerError::UnknownEntry(*id))?;
        Ok(LabelProof {
            subject,
            entries: proved,
            lookups,
            checkpoint: c.note().to_vec(),
        })
    }

    /// Looks `subject` up in the effects index, keeps the lookup and the bytes of its effects
    /// (checked against their ids), and returns the effects.
    fn look_up(
        &mut self,
        subject: Subject,
        lookups: &mut Vec<Lookup>,
        entries: &mut BTreeMap<u64, Vec<u8>>,
    ) -> Result<Vec<Effect>, LedgerError> {
        let (lookup, effects) = self.state.effects_lookup(subject);
        for e in &effects {
            if entries.contains_key(&e.index) {
                continue;
            }
            let bytes = self
                .store
                .entry_bytes(e.index)?
                .ok_or(LedgerError::Missing(e.id))?;
            if EntryId::of_cose(&bytes) != e.id {
                return Err(LedgerError::NotTheEntry {
                    id: e.id,
                    index: e.index,
                });
            }
            entries.insert(e.index, bytes);
        }
        lookups.push(lookup);
        Ok(effects)
    }

    /// A verified checkpoint of the current tree that signs this handle's effects index
    /// (`spec/label-proof.md` §3.3): [`Ledger::checkpoint`]'s, or, when that one signs no
    /// index (signed by a PostgreSQL integrator, which keeps no lineage state, or by an older
    /// memlineage), a new one for the same size and root that does, stored like any other.
    ///
    /// # Errors
    /// [`LedgerError::EffectsIndexMismatch`] when the checkpoint signs another index; as
    /// [`Ledger::checkpoint`].
    pub fn indexed_checkpoint(&mut self) -> Result<VerifiedCheckpoint, LedgerError> {
        let c = self.checkpoint()?;
        let mine = self.state.effects_commitment();
        match IndexCommitment::from_extension(c.extension()) {
            Ok(Some(signed)) if signed == mine => Ok(c),
            Ok(None) => {
                self.writable()?;
                let note = self.sign_head(&c.root())?;
                let c = self.verifier()?.verify(&note)?;
                self.store.put_checkpoint(c.size(), c.note())?;
                self.checkpoint = Some(c.clone());
                Ok(c)
            }
            Ok(Some(_)) | Err(_) => Err(LedgerError::EffectsIndexMismatch { size: c.size() }),
        }
    }
}
