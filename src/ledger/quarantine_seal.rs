//! The quarantine snapshot (`spec/lineage.md` §5.3): the quarantined set as a holder of the log
//! key computed it at some tree size, kept in the store under the seal key, so that opening a
//! ledger with an active flag reads the entries after the snapshot instead of every entry after
//! the flag's source (19 s at 1M entries before).
//!
//! ```text
//! m    = number of quarantined entries; (id_i, bits_i) sorted by id, bits 1 (all), 2 (strong), 3
//! tag  = HMAC-SHA-256(K, "memlineage/quarantine-seal@v1" || u64be(s) || u64be(n) || e_n
//!                        || last || u64be(m) || id_1 || bits_1 || … || id_m || bits_m)
//! meta["quarantine_seal"] = "v1 <s> <n> <hex e_n> <m> <hex of id_1 || bits_1 || …> <hex tag>"
//! ```
//!
//! with `K`, `n` and `e_n` those of the label seal (`seal.rs`): the effects chain over the rows
//! with effects among the first `s` entries; `last` the id of the entry at leaf `s - 1`, not
//! stored: the opener puts in the id it believes there (a row below its seal whose tag
//! verifies), so that a snapshot of a fork of the ledger (a copy the key holder kept writing
//! to: same rows with effects, other entries) does not open in the other fork. The quarantined set is a function of the log's
//! entries and its flags and releases, which are rows with effects; so a snapshot whose chain
//! is the handle's whole chain was taken under the very flags and releases the handle has, and
//! feeding it the entries from `s` on gives what feeding every entry after the earliest source
//! gives. A snapshot that does not open (malformed, written without the key) or was taken under
//! other effects is not used: the handle rescans as before. It is an optimisation only: no
//! answer depends on whether it is there.

use super::seal::{fields, Chain, SealKey, SealStream};
use super::{Ledger, LedgerError};
use crate::record::EntryId;
use crate::store::Store;

/// The `meta` key the snapshot is kept under (`spec/storage.md` §4.4).
pub(crate) const META_QUARANTINE: &str = "quarantine_seal";

const DOMAIN: &[u8] = b"memlineage/quarantine-seal@v1";

/// Entries appended since the last snapshot after which a handle stores a new one (so that an
/// open feeds at most this many entries to the quarantine).
const SNAPSHOT_EVERY: u64 = 256;

/// The quarantined set at tree size `size`, under the effects chain `effects`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub(crate) size: u64,
    pub(crate) effects: Chain,
    /// The entry at leaf `size - 1` (bound by the tag, not stored).
    pub(crate) last: EntryId,
    /// Quarantined entries and their reach bits, sorted by id.
    pub(crate) reached: Vec<(EntryId, u8)>,
}

impl SealKey {
    fn snapshot_mac(
        &self,
        size: u64,
        effects: &Chain,
        last: &EntryId,
        reached: &[u8],
    ) -> SealStream {
        let mut m = self.stream(DOMAIN);
        m.update(&size.to_be_bytes());
        m.update(&effects.count.to_be_bytes());
        m.update(&effects.head);
        m.update(&last.0);
        m.update(&((reached.len() / 33) as u64).to_be_bytes());
        m.update(reached);
        m
    }

    /// The stored form of `s` (module docs).
    pub(crate) fn seal_snapshot(&self, s: &Snapshot) -> String {
        let mut records = Vec::with_capacity(s.reached.len() * 33);
        for (id, bits) in &s.reached {
            records.extend_from_slice(&id.0);
            records.push(*bits);
        }
        let tag = self
            .snapshot_mac(s.size, &s.effects, &s.last, &records)
            .finish();
        format!(
            "v1 {} {} {} {} {} {}",
            s.size,
            s.effects.count,
            hex::encode(s.effects.head),
            s.reached.len(),
            hex::encode(&records),
            hex::encode(tag)
        )
    }

    /// Parses and verifies a stored snapshot, with `last_of(s)` the id the opener believes at
    /// leaf `s - 1`; `None` when it is malformed, the opener believes no entry there, or its
    /// tag does not verify (compared in constant time).
    pub(crate) fn open_snapshot(
        &self,
        stored: &str,
        last_of: impl FnOnce(u64) -> Option<EntryId>,
    ) -> Option<Snapshot> {
        let ["v1", size, count, head, m, records, tag] = fields(stored)? else {
            return None;
        };
        let size: u64 = size.parse().ok()?;
        let count: u64 = count.parse().ok()?;
        let head: [u8; 32] = hex::decode(head).ok()?.try_into().ok()?;
        let m: usize = m.parse().ok()?;
        let records = hex::decode(records).ok()?;
        let tag = hex::decode(tag).ok()?;
        if records.len() != m.checked_mul(33)? {
            return None;
        }
        let effects = Chain { count, head };
        let last = last_of(size)?;
        if !self
            .snapshot_mac(size, &effects, &last, &records)
            .verifies(&tag)
        {
            return None;
        }
        let mut reached = Vec::with_capacity(m);
        for r in records.chunks_exact(33) {
            let id: [u8; 32] = r[..32].try_into().ok()?;
            if !(1..=3).contains(&r[32]) {
                return None;
            }
            reached.push((EntryId(id), r[32]));
        }
        Some(Snapshot {
            size,
            effects,
            last,
            reached,
        })
    }
}

impl<S: Store> Ledger<S> {
    /// Where a quarantine rescan that would feed the entries after leaf `from` can start
    /// instead: after restoring the stored snapshot, when one opens under the seal key, was
    /// taken under this handle's whole effects chain, lies within the handle's seal, and
    /// covers more than `from` does. Returns the leaf after which to feed entries (`None`:
    /// nothing to feed).
    ///
    /// Within the seal: the snapshot binds its size and chain, not which entries lie below its
    /// size. Rows below the seal carry row tags binding each id to its index, so the entries
    /// the handle believes below `s` are the ones the key holder had. Beyond the seal (an older
    /// seal replayed, or none) a row's position is only bound when it keeps its tag or a signed
    /// checkpoint covers it: a store-only attacker could move an entry appended after the
    /// snapshot below its size, where it is neither in the snapshot nor fed (attack review 48).
    /// The rescan, which feeds every entry in the order the handle believes, runs instead.
    pub(super) fn resume_quarantine(&mut self, from: u64) -> Option<u64> {
        let stored = match self.store.meta(META_QUARANTINE) {
            Ok(Some(v)) => v,
            _ => return Some(from),
        };
        let Some(s) = self
            .seal_key
            .open_snapshot(&stored, |size| self.sealed_id(size.checked_sub(1)?))
        else {
            return Some(from);
        };
        if s.effects != self.effects
            || s.size > self.size
            || s.size > self.sealed
            || s.size <= from.saturating_add(1)
        {
            return Some(from);
        }
        self.state.quarantine_mut().restore(&s.reached);
        self.quarantine_saved = Some((s.size, s.effects));
        (s.size < self.size).then(|| s.size - 1)
    }

    /// The id of the entry at leaf `index` when it lies below this handle's seal and its row
    /// tag verifies; `None` otherwise (or when it cannot be read).
    fn sealed_id(&self, index: u64) -> Option<EntryId> {
        if index >= self.sealed {
            return None;
        }
        let m = self.store.meta_at(index).ok()??;
        (m.index == index && self.seal_key.verifies(&m)).then_some(m.id)
    }

    /// Stores a snapshot of the quarantined set when a flag is active, no rescan is pending,
    /// and the last one this handle knows of was taken under other effects or more than
    /// [`SNAPSHOT_EVERY`] entries ago. A failed write changes nothing but the next open's cost.
    /// `last` is the entry at leaf `size - 1` (the batch's last).
    pub(super) fn save_quarantine(&mut self, last: EntryId) -> Result<(), LedgerError> {
        let q = self.state.quarantine();
        if !q.is_active() || self.pending_rescan.is_some() {
            return Ok(());
        }
        if self.quarantine_saved.is_some_and(|(size, effects)| {
            effects == self.effects && self.size.saturating_sub(size) < SNAPSHOT_EVERY
        }) {
            return Ok(());
        }
        let s = Snapshot {
            size: self.size,
            effects: self.effects,
            last,
            reached: q.reached_bits(),
        };
        self.store
            .set_meta(META_QUARANTINE, &self.seal_key.seal_snapshot(&s))?;
        self.quarantine_saved = Some((s.size, s.effects));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::LogSigner;
    use crate::record::{Kind, WriterKey};

    fn key(label: &str) -> SealKey {
        SealKey::of(&LogSigner::new("test.example/qseal", WriterKey::for_label(label)).unwrap())
    }

    fn snapshot() -> Snapshot {
        let mut effects = Chain::EMPTY;
        effects.push(4, &EntryId([9; 32]), Kind::Quarantine);
        Snapshot {
            size: 12,
            effects,
            last: EntryId([5; 32]),
            reached: vec![(EntryId([1; 32]), 1), (EntryId([2; 32]), 3)],
        }
    }

    #[test]
    fn snapshots_round_trip_and_refuse_other_keys_and_every_edit() {
        let k = key("q-a");
        let s = snapshot();
        let stored = k.seal_snapshot(&s);
        let last = |_| Some(EntryId([5; 32]));
        assert_eq!(k.open_snapshot(&stored, last), Some(s.clone()));
        assert_eq!(
            key("q-b").open_snapshot(&stored, last),
            None,
            "another log's key"
        );
        // Another entry believed at leaf s - 1 (a fork's), or none.
        assert_eq!(k.open_snapshot(&stored, |_| Some(EntryId([6; 32]))), None);
        assert_eq!(k.open_snapshot(&stored, |_| None), None);
        // Every single-character change (hex digit, number, separator) is refused or, where the
        // text still parses, fails its tag.
        for (i, c) in stored.char_indices() {
            for r in ['0', '1', 'f', ' ', 'x'] {
                if r == c {
                    continue;
                }
                let mut edited = stored.clone();
                edited.replace_range(i..i + c.len_utf8(), &r.to_string());
                assert_eq!(k.open_snapshot(&edited, last), None, "{edited}");
            }
        }
        // A truncated value, nothing, a part more.
        assert_eq!(k.open_snapshot(&stored[..stored.len() - 2], last), None);
        assert_eq!(k.open_snapshot("", last), None);
        assert_eq!(k.open_snapshot(&format!("{stored} extra"), last), None);
    }
}
