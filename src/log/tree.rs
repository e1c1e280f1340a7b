//! RFC 6962 §2.1 Merkle tree hashing over *stored hashes* (`spec/log.md` §1–2).
//!
//! The tree is never held in memory. Appending leaf `n` stores its leaf hash and the hash of
//! every perfect subtree it completes, at consecutive indexes from `stored_hash_index(0, n)`
//! (Crosby–Wallach §3.3, the layout of Go `golang.org/x/mod/sumdb/tlog`). Roots and proofs then
//! read at most `O(log n)` stored hashes through a [`HashSource`]. The arithmetic is
//! `tlog_tiles`'s port of `sumdb/tlog`; this module validates every input first, so none of its
//! internal assertions can fire.

use super::LogError;
use crate::record::EntryId;
use std::cell::Cell;
use std::fmt;
use tlog_tiles::{Hash, HashReader};

/// Largest tree size this module hashes or proves over: `2^62` leaves.
///
/// The bound keeps every stored-hash index (`< 2^63 + 63`) and every intermediate of the
/// `sumdb/tlog` arithmetic inside `u64`. Verifiers have no such bound: a checkpoint may claim any
/// `u64` size.
pub const MAX_TREE_SIZE: u64 = 1 << 62;

/// A Merkle Tree Hash, `MTH(D[n])` (RFC 6962 §2.1): 32 bytes of SHA-256.
///
/// `Display` is lowercase hex; `Debug` is `RootHash(<hex>)`. Equality compares all 32 bytes
/// without an early exit.
#[derive(Clone, Copy, Default)]
pub struct RootHash(pub [u8; 32]);

/// The root of the empty tree, `MTH({}) = SHA-256()` (RFC 6962 §2.1):
/// `e3b0c442…7852b855`.
pub const EMPTY_ROOT: RootHash = RootHash(tlog_tiles::EMPTY_HASH.0);

impl PartialEq for RootHash {
    fn eq(&self, other: &Self) -> bool {
        // Fold every byte so the comparison time does not depend on where roots differ.
        let diff = self
            .0
            .iter()
            .zip(other.0.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

impl Eq for RootHash {}

impl std::hash::Hash for RootHash {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // Consistent with `eq`: equal roots have equal bytes.
        self.0.hash(state);
    }
}

impl fmt::Display for RootHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for RootHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RootHash({})", hex::encode(self.0))
    }
}

/// Where stored tree hashes come from. The ledger adapts its [`crate::store::Store`] to this;
/// tests use a `Vec<[u8; 32]>` indexed by stored-hash index.
///
/// A source is trusted for availability only: a wrong hash yields a wrong root or proof, which
/// verifiers then reject.
pub trait HashSource {
    /// The hashes at the given stored-hash indexes ([`stored_hash_index`]), in the same order.
    ///
    /// # Errors
    /// Any [`LogError`]; [`LogError::MissingHash`] when one is absent. Returning a vector of the
    /// wrong length is reported by the callers in this module as [`LogError::WrongHashCount`].
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError>;
}

impl HashSource for [[u8; 32]] {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError> {
        indexes
            .iter()
            .map(|&i| {
                usize::try_from(i)
                    .ok()
                    .and_then(|u| self.get(u))
                    .copied()
                    .ok_or(LogError::MissingHash(i))
            })
            .collect()
    }
}

impl HashSource for Vec<[u8; 32]> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError> {
        self.as_slice().read_hashes(indexes)
    }
}

/// The stored-hash index of the node at `level` whose leftmost leaf is `n << level`
/// (Crosby–Wallach §3.3; Go `tlog.StoredHashIndex`). Level 0 holds leaf hashes.
///
/// Level `L`'s `n`-th hash is stored right after level `L+1`'s `(2n+1)`-th hash, so appending
/// leaves writes hashes strictly in index order. `stored_hash_index(0, n) < 2n + 1`.
///
/// Defined for `level <= 62` and `(n + 1) << level <= 2^62` (every node of a tree of at most
/// [`MAX_TREE_SIZE`] leaves); outside that range it returns `u64::MAX`, which is never a valid
/// index. Does not panic.
pub fn stored_hash_index(level: u8, n: u64) -> u64 {
    if level > 62 || n >= (MAX_TREE_SIZE >> level) {
        return u64::MAX;
    }
    tlog_tiles::stored_hash_index(level, n)
}

/// The number of hashes stored for a tree of `size` leaves (Go `tlog.StoredHashCount`): the
/// stored-hash indexes in use are exactly `0..stored_hash_count(size)`.
///
/// Returns `u64::MAX` for `size > MAX_TREE_SIZE`. Does not panic.
pub fn stored_hash_count(size: u64) -> u64 {
    if size > MAX_TREE_SIZE {
        return u64::MAX;
    }
    tlog_tiles::stored_hash_count(size)
}

/// The hashes to store, at consecutive indexes from `stored_hash_index(0, index)`, when
/// appending leaf `index` whose leaf hash is `leaf` (the entry id, `SHA-256(0x00 || cose)`,
/// RFC 6962 §2.1).
///
/// The result is `[leaf, h_1, …, h_k]` where `k` is the number of trailing one bits of `index`
/// and `h_j` is the root of the perfect subtree of `2^j` leaves that leaf `index` completes. It
/// reads those `k <= 62` sibling subtree roots from `src` in one call.
///
/// Requires `0 <= index < MAX_TREE_SIZE` and that leaves `0..index` were appended the same way.
///
/// # Errors
/// [`LogError::SizeTooLarge`] when `index >= MAX_TREE_SIZE`; any error of `src`;
/// [`LogError::WrongHashCount`] when `src` returns the wrong number of hashes. Does not panic.
pub fn hashes_to_store(
    index: u64,
    leaf: &EntryId,
    src: &(impl HashSource + ?Sized),
) -> Result<Vec<[u8; 32]>, LogError> {
    check_size(index.saturating_add(1))?;
    let reader = Reader::new(src);
    let r = tlog_tiles::stored_hashes_for_record_hash(index, Hash(leaf.0), &reader);
    Ok(unhash(reader.finish(r, "stored_hashes_for_record_hash")?))
}

/// The root `MTH(D[size])` of the first `size` leaves (RFC 6962 §2.1), from at most
/// `1 + log2(size)` stored hashes read in one call. `tree_root(0, _)` is [`EMPTY_ROOT`] and reads
/// nothing.
///
/// Requires `size <= MAX_TREE_SIZE` and that `src` holds the hashes of at least `size` leaves.
///
/// # Errors
/// [`LogError::SizeTooLarge`]; any error of `src`; [`LogError::WrongHashCount`]. Does not
/// panic.
pub fn tree_root(size: u64, src: &(impl HashSource + ?Sized)) -> Result<RootHash, LogError> {
    check_size(size)?;
    let reader = Reader::new(src);
    let r = tlog_tiles::tree_hash(size, &reader);
    Ok(RootHash(reader.finish(r, "tree_hash")?.0))
}

/// Rejects sizes above [`MAX_TREE_SIZE`] before any `tlog_tiles` arithmetic runs.
pub(crate) fn check_size(size: u64) -> Result<(), LogError> {
    if size > MAX_TREE_SIZE {
        return Err(LogError::SizeTooLarge {
            size,
            max: MAX_TREE_SIZE,
        });
    }
    Ok(())
}

pub(crate) fn unhash(hashes: Vec<Hash>) -> Vec<[u8; 32]> {
    hashes.into_iter().map(|h| h.0).collect()
}

/// Adapts a [`HashSource`] to `tlog_tiles::HashReader`.
///
/// `tlog_tiles` asserts that a reader returns exactly as many hashes as asked; this adapter
/// turns a short or long answer into an error instead, and keeps the source's own error (which
/// `tlog_tiles::Error` cannot carry) to hand back from [`Reader::finish`].
pub(crate) struct Reader<'a, S: HashSource + ?Sized> {
    src: &'a S,
    err: Cell<Option<LogError>>,
}

impl<'a, S: HashSource + ?Sized> Reader<'a, S> {
    pub(crate) fn new(src: &'a S) -> Self {
        Reader {
            src,
            err: Cell::new(None),
        }
    }

    /// Maps a `tlog_tiles` result back to ours: the source's error if it failed, else
    /// [`LogError::Internal`] (validated inputs make other `tlog_tiles` errors unreachable).
    pub(crate) fn finish<T>(
        self,
        r: Result<T, tlog_tiles::Error>,
        what: &'static str,
    ) -> Result<T, LogError> {
        r.map_err(|_| self.err.take().unwrap_or(LogError::Internal(what)))
    }
}

impl<S: HashSource + ?Sized> HashReader for Reader<'_, S> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        let err = match self.src.read_hashes(indexes) {
            Ok(v) if v.len() == indexes.len() => return Ok(v.into_iter().map(Hash).collect()),
            Ok(v) => LogError::WrongHashCount {
                got: v.len(),
                want: indexes.len(),
            },
            Err(e) => e,
        };
        self.err.set(Some(err));
        Err(tlog_tiles::Error::IndexesNotInTree)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that returns one hash too few, to check the adapter never lets `tlog_tiles`
    /// assert.
    struct Short(Vec<[u8; 32]>);
    impl HashSource for Short {
        fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError> {
            let mut v = self.0.read_hashes(indexes)?;
            v.pop();
            Ok(v)
        }
    }

    fn build(n: u64) -> Vec<[u8; 32]> {
        let mut store = Vec::new();
        for i in 0..n {
            let leaf = EntryId::of_cose(&i.to_be_bytes());
            let hs = hashes_to_store(i, &leaf, &store).unwrap();
            assert_eq!(store.len() as u64, stored_hash_index(0, i));
            store.extend(hs);
            assert_eq!(store.len() as u64, stored_hash_count(i + 1));
        }
        store
    }

    #[test]
    fn empty_root_is_sha256_of_nothing() {
        use sha2::{Digest, Sha256};
        assert_eq!(EMPTY_ROOT.0, <[u8; 32]>::from(Sha256::digest(b"")));
        assert_eq!(tree_root(0, &Vec::new()).unwrap(), EMPTY_ROOT);
    }

    #[test]
    fn wrong_count_is_an_error_not_a_panic() {
        let store = build(7);
        let short = Short(store.clone());
        assert!(matches!(
            tree_root(7, &short),
            Err(LogError::WrongHashCount { got: 2, want: 3 })
        ));
        let leaf = EntryId::of_cose(b"x");
        assert!(matches!(
            hashes_to_store(7, &leaf, &short),
            Err(LogError::WrongHashCount { got: 2, want: 3 })
        ));
    }

    #[test]
    fn missing_hash_and_size_bounds() {
        let store = build(3);
        // MTH(D[4]) is the level-2 node, stored at index 6; a 3-leaf store has 0..4.
        assert_eq!(tree_root(4, &store), Err(LogError::MissingHash(6)));
        assert!(matches!(
            tree_root(MAX_TREE_SIZE + 1, &store),
            Err(LogError::SizeTooLarge { .. })
        ));
        assert!(matches!(
            tree_root(u64::MAX, &store),
            Err(LogError::SizeTooLarge { .. })
        ));
        let leaf = EntryId::of_cose(b"x");
        assert!(matches!(
            hashes_to_store(u64::MAX, &leaf, &store),
            Err(LogError::SizeTooLarge { .. })
        ));
    }

    #[test]
    fn stored_hash_index_saturates_out_of_range() {
        assert_eq!(stored_hash_index(0, 0), 0);
        assert_eq!(stored_hash_index(1, 0), 2);
        assert_eq!(stored_hash_index(0, MAX_TREE_SIZE - 1), {
            tlog_tiles::stored_hash_index(0, MAX_TREE_SIZE - 1)
        });
        assert_eq!(stored_hash_index(0, MAX_TREE_SIZE), u64::MAX);
        assert_eq!(stored_hash_index(63, 0), u64::MAX);
        assert_eq!(stored_hash_index(255, u64::MAX), u64::MAX);
        assert_eq!(stored_hash_count(u64::MAX), u64::MAX);
    }

    #[test]
    fn root_hash_formatting_and_eq() {
        let mut r = RootHash([0xab; 32]);
        assert_eq!(r.to_string(), "ab".repeat(32));
        assert_eq!(format!("{r:?}"), format!("RootHash({})", "ab".repeat(32)));
        let s = r;
        r.0[31] ^= 1;
        assert_ne!(r, s);
    }
}
