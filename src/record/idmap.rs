//! Hash maps keyed by SHA-256 outputs (entry ids, content hashes), which a ledger holds by the
//! hundred thousand: foldhash's fast hash, seeded from the operating system's randomness.
//!
//! The keys are hashes, but of bytes a hostile writer chooses, and some (a context hash, an id
//! named in a request) are any 32 bytes a writer likes: an identity hash, or any hash without a
//! secret seed, would let that writer grind keys into one bucket. The seeds here are secret:
//! 64 bits shared by the process and 64 bits per map, both drawn from the keys of
//! `std::hash::RandomState` (SipHash keys the standard library reads from the operating
//! system), so a writer who cannot read the process's memory cannot aim at a bucket. SipHash,
//! the standard library's default, was 8 % of an append's own work (outside the signature) on a
//! 100k-entry ledger, over the maps the append touches (`spec/benchmarks.md` run M).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;

/// The [`BuildHasher`] of [`IdMap`] and [`IdSet`]: foldhash (`fast`) with secret random seeds.
#[derive(Clone, Debug)]
pub(crate) struct IdHasher(foldhash::fast::SeedableRandomState);

impl Default for IdHasher {
    fn default() -> Self {
        static SHARED: OnceLock<foldhash::SharedSeed> = OnceLock::new();
        // 64 random bits each: `RandomState::new()` holds 128 bits from the operating system
        // (per thread, then incremented per map), and its SipHash of a constant is a PRF output
        // of them.
        let shared = SHARED.get_or_init(|| {
            foldhash::SharedSeed::from_u64(RandomState::new().hash_one(0x6d6c_6e67_u64))
        });
        let per_map = RandomState::new().hash_one(0x0069_646d_6170_u64);
        IdHasher(foldhash::fast::SeedableRandomState::with_seed(
            per_map, shared,
        ))
    }
}

impl BuildHasher for IdHasher {
    type Hasher = foldhash::fast::FoldHasher<'static>;

    fn build_hasher(&self) -> Self::Hasher {
        self.0.build_hasher()
    }
}

/// A `HashMap` keyed by ids or content hashes ([`IdHasher`]).
pub(crate) type IdMap<K, V> = HashMap<K, V, IdHasher>;

/// A `HashSet` of ids or content hashes ([`IdHasher`]).
pub(crate) type IdSet<K> = HashSet<K, IdHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::EntryId;

    #[test]
    fn maps_find_what_they_hold_and_seed_apart() {
        let mut m: IdMap<EntryId, u64> = IdMap::default();
        for i in 0..1000u64 {
            let mut id = [0u8; 32];
            id[..8].copy_from_slice(&i.to_le_bytes());
            m.insert(EntryId(id), i);
        }
        assert_eq!(m.len(), 1000);
        for (id, i) in &m {
            assert_eq!(u64::from_le_bytes(id.0[..8].try_into().unwrap()), *i);
            assert_eq!(m.get(id), Some(i));
        }
        // Two maps hash the same key differently (per-map seeds).
        let (a, b) = (IdHasher::default(), IdHasher::default());
        let id = EntryId([7; 32]);
        assert_ne!(a.hash_one(id), b.hash_one(id));
    }
}
