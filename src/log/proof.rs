//! Inclusion proofs (audit paths, RFC 6962 §2.1.1) and consistency proofs (RFC 6962 §2.1.2):
//! built from stored hashes, verified against [`VerifiedCheckpoint`]s only (`spec/log.md` §3).
//!
//! Verification first checks the exact proof length implied by the sizes (RFC 9162 §2.1.3.2,
//! §2.1.4.2), then recomputes the roots with `tlog_tiles::check_record` / `check_tree`. A proof
//! of the right length cannot make those functions fail for any reason other than a root
//! mismatch, and none of their internal assertions can fire on validated inputs.

use super::tree::{check_size, unhash, Reader};
use super::{HashSource, LogError, VerifiedCheckpoint};
use crate::record::EntryId;
use tlog_tiles::Hash;

/// An inclusion proof (Merkle audit path) for leaf `index`: `PATH(index, D[n])`, RFC 6962
/// §2.1.1, ordered from the leaf's sibling up to the root's child.
///
/// The tree size `n` is not part of the proof: it comes from the [`VerifiedCheckpoint`] the
/// proof is checked against. For `0 <= index < n` the path has exactly
/// `bitlen(index XOR (n-1)) + popcount(index >> bitlen(index XOR (n-1)))` hashes (at most 64).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InclusionProof {
    /// The zero-based leaf index `m`.
    pub index: u64,
    /// The audit path, 32-byte SHA-256 node hashes.
    pub path: Vec<[u8; 32]>,
}

/// A consistency proof `PROOF(m, D[n])` (RFC 6962 §2.1.2) that the tree of `old_size = m`
/// leaves is a prefix of the tree of `n` leaves; `n` comes from the newer checkpoint.
///
/// Empty when `m == n`; otherwise, with `k = trailing_zeros(m)` and
/// `i = bitlen((m-1) XOR (n-1))`, exactly `[m != 2^k] + i - k + popcount((m-1) >> i)` hashes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsistencyProof {
    /// The older tree size `m`.
    pub old_size: u64,
    /// The proof nodes, 32-byte SHA-256 node hashes.
    pub path: Vec<[u8; 32]>,
}

/// Builds the inclusion proof `PATH(index, D[size])` (RFC 6962 §2.1.1) from stored hashes, with
/// one read of at most `2 log2(size)` hashes.
///
/// Requires `0 <= index < size <= MAX_TREE_SIZE` and that `src` holds the hashes of at least
/// `size` leaves.
///
/// # Errors
/// [`LogError::IndexOutOfRange`] when `index >= size` (so always for `size == 0`);
/// [`LogError::SizeTooLarge`]; any error of `src`; [`LogError::WrongHashCount`]. Does not panic.
pub fn prove_inclusion(
    size: u64,
    index: u64,
    src: &(impl HashSource + ?Sized),
) -> Result<InclusionProof, LogError> {
    check_size(size)?;
    if index >= size {
        return Err(LogError::IndexOutOfRange { index, size });
    }
    let reader = Reader::new(src);
    let r = tlog_tiles::prove_record(size, index, &reader);
    let path = unhash(reader.finish(r, "prove_record")?);
    Ok(InclusionProof { index, path })
}

/// Builds the consistency proof `PROOF(old_size, D[new_size])` (RFC 6962 §2.1.2) from stored
/// hashes. The proof for `old_size == new_size` is empty and reads nothing.
///
/// Requires `1 <= old_size <= new_size <= MAX_TREE_SIZE` (there is no proof from the empty
/// tree: a client with no earlier checkpoint needs none).
///
/// # Errors
/// [`LogError::OldSizeZero`], [`LogError::OldLarger`], [`LogError::SizeTooLarge`]; any error of
/// `src`; [`LogError::WrongHashCount`]. Does not panic.
pub fn prove_consistency(
    old_size: u64,
    new_size: u64,
    src: &(impl HashSource + ?Sized),
) -> Result<ConsistencyProof, LogError> {
    check_size(new_size)?;
    if old_size == 0 {
        return Err(LogError::OldSizeZero);
    }
    if old_size > new_size {
        return Err(LogError::OldLarger { old_size, new_size });
    }
    let reader = Reader::new(src);
    let r = tlog_tiles::prove_tree(new_size, old_size, &reader);
    let path = unhash(reader.finish(r, "prove_tree")?);
    Ok(ConsistencyProof { old_size, path })
}

impl VerifiedCheckpoint {
    /// Checks that `leaf` (an entry id, the RFC 6962 leaf hash `SHA-256(0x00 || cose)`) is leaf
    /// `proof.index` of this checkpoint's tree (RFC 6962 §2.1.1; steps in `spec/log.md` §3.1):
    ///
    /// 1. `proof.index < self.size()`;
    /// 2. `proof.path.len()` equals the length implied by `(index, size)`;
    /// 3. the root recomputed from `leaf` and the path equals `self.root()`.
    ///
    /// # Errors
    /// [`ProofError::IndexOutOfRange`], [`ProofError::WrongPathLength`],
    /// [`ProofError::RootMismatch`]. All can be triggered by untrusted proofs. Does not panic.
    ///
    /// # Note
    /// The hashes alone do not bind the tree size: a path for `(index, n)` can also verify for
    /// some other `(index', n')` with the same root. Sizes are trusted here only because they
    /// come from the signed checkpoint.
    pub fn verify_inclusion(
        &self,
        leaf: &EntryId,
        proof: &InclusionProof,
    ) -> Result<(), ProofError> {
        let (index, size) = (proof.index, self.size());
        if index >= size {
            return Err(ProofError::IndexOutOfRange { index, size });
        }
        let want = inclusion_path_len(index, size);
        if proof.path.len() != want {
            return Err(ProofError::WrongPathLength {
                got: proof.path.len(),
                want,
            });
        }
        let path: Vec<Hash> = proof.path.iter().copied().map(Hash).collect();
        tlog_tiles::check_record(&path, size, Hash(self.root().0), index, Hash(leaf.0))
            .map_err(|_| ProofError::RootMismatch)
    }

    /// Checks that this (older) checkpoint's tree is a prefix of `newer`'s (RFC 6962 §2.1.2;
    /// steps in `spec/log.md` §3.2), with `m = self.size()` and `n = newer.size()`:
    ///
    /// 1. both checkpoints have the same origin;
    /// 2. `proof.old_size == m`;
    /// 3. `m >= 1` and `m <= n`;
    /// 4. if `m == n`: the path is empty and the roots are equal;
    /// 5. otherwise the path has exactly the length implied by `(m, n)`, and the two roots
    ///    recomputed from it equal `self.root()` and `newer.root()`.
    ///
    /// # Errors
    /// [`ProofError::DifferentLogs`], [`ProofError::SizeMismatch`], [`ProofError::OldSizeZero`],
    /// [`ProofError::OldLarger`], [`ProofError::SameSizeNonEmptyPath`],
    /// [`ProofError::WrongPathLength`], [`ProofError::RootMismatch`]. All can be triggered by
    /// untrusted input. Does not panic.
    pub fn verify_consistency(
        &self,
        newer: &VerifiedCheckpoint,
        proof: &ConsistencyProof,
    ) -> Result<(), ProofError> {
        if self.origin() != newer.origin() {
            return Err(ProofError::DifferentLogs);
        }
        let (m, n) = (self.size(), newer.size());
        if proof.old_size != m {
            return Err(ProofError::SizeMismatch {
                got: proof.old_size,
                want: m,
            });
        }
        if m == 0 {
            return Err(ProofError::OldSizeZero);
        }
        if m > n {
            return Err(ProofError::OldLarger {
                old_size: m,
                new_size: n,
            });
        }
        if m == n {
            if !proof.path.is_empty() {
                return Err(ProofError::SameSizeNonEmptyPath {
                    len: proof.path.len(),
                });
            }
            return if self.root() == newer.root() {
                Ok(())
            } else {
                Err(ProofError::RootMismatch)
            };
        }
        let want = consistency_path_len(m, n);
        if proof.path.len() != want {
            return Err(ProofError::WrongPathLength {
                got: proof.path.len(),
                want,
            });
        }
        let path: Vec<Hash> = proof.path.iter().copied().map(Hash).collect();
        tlog_tiles::check_tree(&path, n, Hash(newer.root().0), m, Hash(self.root().0))
            .map_err(|_| ProofError::RootMismatch)
    }
}

/// Why an inclusion or consistency proof does not verify against its checkpoint(s).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProofError {
    /// The leaf index is not below the checkpoint's tree size (every index, for size 0).
    /// Untrusted input can trigger it.
    #[error("leaf index {index} out of range for tree size {size}")]
    IndexOutOfRange {
        /// The claimed leaf index.
        index: u64,
        /// The checkpoint's tree size.
        size: u64,
    },
    /// The path does not have the exact length the sizes imply (RFC 9162 §2.1.3.2, §2.1.4.2).
    /// Untrusted input can trigger it.
    #[error("wrong proof length: got {got} hashes, want {want}")]
    WrongPathLength {
        /// Hashes in the proof.
        got: usize,
        /// Hashes required.
        want: usize,
    },
    /// The root recomputed from the proof differs from the signed root (a wrong leaf, index,
    /// path hash or checkpoint). Untrusted input can trigger it.
    #[error("proof does not lead to the checkpoint root")]
    RootMismatch,
    /// A consistency proof from the empty tree: there is none (any tree extends it). Untrusted
    /// input can trigger it.
    #[error("consistency proof from tree size 0")]
    OldSizeZero,
    /// The "older" checkpoint is larger than the newer one. Untrusted input can trigger it.
    #[error("old tree size {old_size} exceeds new tree size {new_size}")]
    OldLarger {
        /// The older checkpoint's size.
        old_size: u64,
        /// The newer checkpoint's size.
        new_size: u64,
    },
    /// Equal sizes need an empty proof (RFC 6962 §2.1.2: `PROOF(n, D[n])` is empty). Untrusted
    /// input can trigger it.
    #[error("equal tree sizes but a proof of {len} hashes")]
    SameSizeNonEmptyPath {
        /// Hashes in the proof.
        len: usize,
    },
    /// The proof's `old_size` is not the older checkpoint's size. Untrusted input can trigger
    /// it.
    #[error("proof is for old size {got}, checkpoint has size {want}")]
    SizeMismatch {
        /// `old_size` in the proof.
        got: u64,
        /// The older checkpoint's size.
        want: u64,
    },
    /// The two checkpoints have different origins. Untrusted input can trigger it.
    #[error("checkpoints are from different logs")]
    DifferentLogs,
}

/// `|PATH(index, D[size])|` for `index < size`: `inner + border` of RFC 9162 §2.1.3.2.
fn inclusion_path_len(index: u64, size: u64) -> usize {
    let (inner, border) = decompose(index, size);
    (inner + border) as usize
}

/// `|PROOF(m, D[n])|` for `1 <= m < n` (RFC 9162 §2.1.4.2; transparency-dev/merkle
/// `VerifyConsistency`).
fn consistency_path_len(m: u64, n: u64) -> usize {
    let (inner, border) = decompose(m - 1, n);
    let shift = m.trailing_zeros();
    // inner > shift: the highest bit where m-1 and n-1 differ is 0 in m-1, and m-1's low `shift`
    // bits are all 1.
    let seed = u32::from(m != 1u64 << shift);
    (seed + inner - shift + border) as usize
}

/// `(inner, border)` of an audit path: `inner = bitlen(index XOR (size-1))` levels where the
/// path node is a left or right sibling inside the perfect part, `border = popcount(index >>
/// inner)` levels on the right border. Requires `index < size`.
fn decompose(index: u64, size: u64) -> (u32, u32) {
    let inner = 64 - (index ^ (size - 1)).leading_zeros();
    let border = index.checked_shr(inner).unwrap_or(0).count_ones();
    (inner, border)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_lengths_match_prover() {
        let mut store: Vec<[u8; 32]> = Vec::new();
        for i in 0..40u64 {
            let hs = super::super::hashes_to_store(i, &EntryId::of_cose(&[i as u8]), &store);
            store.extend(hs.unwrap());
        }
        for n in 1..=40u64 {
            for m in 0..n {
                let p = prove_inclusion(n, m, &store).unwrap();
                assert_eq!(p.path.len(), inclusion_path_len(m, n), "incl {m} {n}");
                if m > 0 {
                    let c = prove_consistency(m, n, &store).unwrap();
                    assert_eq!(c.path.len(), consistency_path_len(m, n), "cons {m} {n}");
                }
            }
        }
        // Extremes: no overflow in the shifts (inner can be 64).
        assert_eq!(inclusion_path_len(0, u64::MAX), 64);
        assert_eq!(inclusion_path_len(u64::MAX - 1, u64::MAX), 63);
        assert_eq!(consistency_path_len(u64::MAX - 1, u64::MAX), 64);
        assert_eq!(consistency_path_len(1, u64::MAX), 64);
    }

    #[test]
    fn prover_input_errors() {
        let v: Vec<[u8; 32]> = Vec::new();
        assert_eq!(
            prove_inclusion(0, 0, &v),
            Err(LogError::IndexOutOfRange { index: 0, size: 0 })
        );
        assert_eq!(prove_consistency(0, 3, &v), Err(LogError::OldSizeZero));
        assert_eq!(
            prove_consistency(4, 3, &v),
            Err(LogError::OldLarger {
                old_size: 4,
                new_size: 3
            })
        );
        assert!(matches!(
            prove_inclusion(u64::MAX, 0, &v),
            Err(LogError::SizeTooLarge { .. })
        ));
        assert_eq!(
            prove_consistency(3, 3, &v).unwrap().path,
            Vec::<[u8; 32]>::new()
        );
    }

    #[test]
    fn display_messages() {
        let cases = [
            (
                ProofError::IndexOutOfRange { index: 5, size: 5 },
                "leaf index 5 out of range for tree size 5",
            ),
            (
                ProofError::WrongPathLength { got: 2, want: 3 },
                "wrong proof length: got 2 hashes, want 3",
            ),
            (
                ProofError::RootMismatch,
                "proof does not lead to the checkpoint root",
            ),
            (
                ProofError::OldSizeZero,
                "consistency proof from tree size 0",
            ),
            (
                ProofError::OldLarger {
                    old_size: 4,
                    new_size: 3,
                },
                "old tree size 4 exceeds new tree size 3",
            ),
            (
                ProofError::SameSizeNonEmptyPath { len: 1 },
                "equal tree sizes but a proof of 1 hashes",
            ),
            (
                ProofError::SizeMismatch { got: 2, want: 3 },
                "proof is for old size 2, checkpoint has size 3",
            ),
            (
                ProofError::DifferentLogs,
                "checkpoints are from different logs",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }
}
