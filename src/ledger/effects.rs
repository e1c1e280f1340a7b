//! Forensic effects: what an accepted entry does besides being stored (keyring, tombstones,
//! flags and releases, leases), the quarantine rescan, and the forensic appends and queries
//! (`spec/forensics.md`).

use super::{Appended, Ledger, LedgerError};
use crate::lineage::lease::LeaseBook;
use crate::lineage::quarantine::{Quarantine, Reach};
#[cfg(doc)]
use crate::lineage::{admission::AdmissionError, lease::LeaseError, quarantine::QuarantineError};
use crate::record::{parse_unverified, EntryId, Kind, Parent, ProvEntry, WriterKey};
use crate::store::{RowWalk, Store};

impl<S: Store> Ledger<S> {
    /// Brings the quarantined set up to date by feeding it every entry after leaf `from`
    /// (parsed, not re-verified: this handle or another verified them at append).
    pub(super) fn rescan_quarantine(&mut self, from: u64) -> Result<(), LedgerError> {
        self.pending_rescan = Some(from);
        let (store, key, index, sealed) = (&self.store, &self.seal_key, &self.index, self.sealed);
        let rows = RowWalk::new(store, from.saturating_add(1), self.size);
        let entries = rows.map(|row| {
            let (m, bytes) = row?;
            let i = m.index;
            let e = parse_unverified(&bytes)?;
            // The parents are read unverified, so the bytes must be the sealed entry's: its
            // leaf hash is the id of a row this handle believes at `i` (else the rescan fails,
            // and every entry after `from` stays quarantined).
            let id = EntryId::of_cose(&bytes);
            let believed = if i < sealed {
                key.verifies(&m)
            } else {
                index.unsealed_at(&m.id, i)
            };
            if id != m.id || !believed {
                return Err(LedgerError::NotTheEntry { id: m.id, index: i });
            }
            Ok::<_, LedgerError>((id, e.parents))
        });
        let policy = self.state.policy();
        self.state.quarantine_mut().rescan(entries, &policy)?;
        self.pending_rescan = None;
        Ok(())
    }

    /// Deletes `target` by appending a tombstone signed by `key`: the target leaves retrieval,
    /// stays in the tree, and its descendants keep their labels.
    ///
    /// # Errors
    /// [`AdmissionError::UnknownTarget`]; [`AdmissionError::UntrustedTombstone`] for
    /// tool/external writers; append errors.
    pub fn tombstone(
        &mut self,
        target: EntryId,
        key: &WriterKey,
        reason: &str,
    ) -> Result<Appended, LedgerError> {
        let mut e = ProvEntry::new(key.key_id(), Kind::Tombstone, reason.as_bytes());
        e.target = Some(target);
        self.append(e, key, reason.as_bytes())
    }

    /// Forensics: flags `source` as bad (an advisory says so), quarantining everything that
    /// descends from it over `reach` edges (`spec/forensics.md` §2). Appends a signed
    /// [`Kind::Quarantine`] / [`Kind::QuarantineStrong`] entry whose content is `reason`.
    ///
    /// # Errors
    /// [`AdmissionError::UnknownTarget`]; [`QuarantineError::NotAuthorised`] unless `key` is a
    /// user, system or log principal; append errors. Nothing is changed on error.
    pub fn flag(
        &mut self,
        source: EntryId,
        reach: Reach,
        key: &WriterKey,
        reason: &str,
    ) -> Result<Appended, LedgerError> {
        let mut e = ProvEntry::new(key.key_id(), reach.kind(), reason.as_bytes());
        e.target = Some(source);
        self.append(e, key, reason.as_bytes())
    }

    /// Forensics: lifts the quarantine made by the flag entry `flag`, with a reason. Entries
    /// stay quarantined if another active flag still reaches them.
    ///
    /// # Errors
    /// [`QuarantineError::NotAFlag`], [`QuarantineError::AlreadyReleased`],
    /// [`QuarantineError::NotAuthorised`]; append errors.
    pub fn release(
        &mut self,
        flag: EntryId,
        key: &WriterKey,
        reason: &str,
    ) -> Result<Appended, LedgerError> {
        let mut e = ProvEntry::new(key.key_id(), Kind::Release, reason.as_bytes());
        e.target = Some(flag);
        self.append(e, key, reason.as_bytes())
    }

    /// The quarantine state (active flags, quarantined entries).
    pub fn quarantine(&self) -> &Quarantine {
        self.state.quarantine()
    }

    /// Whether `id` is quarantined. O(1). While a quarantine rescan is pending (a store read
    /// failed), every entry after the rescan point counts as quarantined, and so does one whose
    /// leaf cannot be found then (its row read fails too: fail closed).
    pub fn is_quarantined(&self, id: &EntryId) -> bool {
        self.state.quarantine().is_quarantined(id)
            || self
                .pending_rescan
                .is_some_and(|from| self.index_of(id).is_none_or(|i| i > from))
    }

    /// The shortest path from a flagged source to `id` over edges that carry the quarantine
    /// (source first); `None` when `id` is not quarantined. See
    /// [`Quarantine::path_to_source`] for the tie rule.
    ///
    /// # Errors
    /// Store and decode errors.
    pub fn quarantine_path(
        &self,
        id: &EntryId,
    ) -> Result<Option<(Vec<EntryId>, Reach)>, LedgerError> {
        self.state
            .quarantine()
            .path_to_source(id, &self.state.policy(), |x| self.parents_of(x))
    }

    /// The parents of `id` with their weights, read and verified from the store.
    ///
    /// # Errors
    /// [`LedgerError::UnknownEntry`]; store and decode errors.
    pub fn parents_of(&self, id: &EntryId) -> Result<Vec<Parent>, LedgerError> {
        Ok(self.get(id)?.entry().parents.clone())
    }

    /// The lease and replacement state of rework targets.
    pub fn leases(&self) -> &LeaseBook {
        self.state.leases()
    }

    /// Forensics: claims the rework of `target` for `ttl_ms` milliseconds from `now_ms`
    /// (`spec/forensics.md` §5), appending a signed [`Kind::Lease`] entry. Catches up with other
    /// writers first, so the claim is judged against the latest log.
    ///
    /// # Errors
    /// [`LeaseError::Held`] while another worker's lease is live; [`LeaseError::Done`] once
    /// the target was replaced; [`LeaseError::BadTerms`] for `ttl_ms` 0 or above
    /// [`crate::lineage::lease::MAX_TTL_MS`]; append errors.
    pub fn claim_lease(
        &mut self,
        target: EntryId,
        key: &WriterKey,
        ttl_ms: u64,
        now_ms: u64,
    ) -> Result<Appended, LedgerError> {
        self.refresh()?;
        let terms = crate::lineage::lease::lease_terms(ttl_ms);
        let mut e = ProvEntry::new(key.key_id(), Kind::Lease, &terms).with_time_ms(now_ms);
        e.target = Some(target);
        self.append(e, key, &terms)
    }
}

/// The earlier of two optional leaf indexes.
pub(super) fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use crate::lineage::LabelPolicy;
    use crate::log::LogSigner;
    use crate::record::{EntryId, Kind, ProvEntry, Role, WriterKey};
    use crate::{Ledger, MemoryStore};

    /// While a rescan is pending from leaf `from`, an entry after it is quarantined, one before
    /// it is not, and an id whose leaf cannot be found is (a row read that fails then must not
    /// make an entry look clean; fails when the lookup's failure reads as "not after").
    #[test]
    fn a_pending_rescan_quarantines_what_it_cannot_place() {
        let signer = LogSigner::new("test.example/rescan", WriterKey::for_label("rescan/log"))
            .expect("signer");
        let mut l =
            Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).expect("create");
        let user = WriterKey::for_label("rescan/user");
        l.bind(user.key_id(), Role::User, "user").expect("bind");
        let mut ids = Vec::new();
        for text in ["first", "second"] {
            let e = ProvEntry::new(user.key_id(), Kind::Prompt, text.as_bytes());
            ids.push(l.append(e, &user, text.as_bytes()).expect("append").id);
        }
        let first = l.index_of(&ids[0]).expect("first");
        assert!(!l.is_quarantined(&ids[0]) && !l.is_quarantined(&ids[1]));
        l.pending_rescan = Some(first);
        assert!(!l.is_quarantined(&ids[0]), "at the rescan point");
        assert!(l.is_quarantined(&ids[1]), "after it");
        assert!(l.is_quarantined(&EntryId([7; 32])), "cannot be placed");
    }
}
