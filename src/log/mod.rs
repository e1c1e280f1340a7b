//! The RFC 6962 / RFC 9162 Merkle log: tree hashing over stored hashes, signed C2SP
//! checkpoints, inclusion and consistency proofs, and offline proof bundles (`spec/log.md`).
//!
//! Verification here never touches a [`crate::store::Store`]: verifiers take bytes and keys.
//!
//! - Writing: for leaf `n` with leaf hash `id` (an [`crate::record::EntryId`]), store
//!   [`hashes_to_store`]`(n, id, src)` from [`stored_hash_index`]`(0, n)` on; sign
//!   [`tree_root`] with a [`LogSigner`].
//! - Proving: [`prove_inclusion`], [`prove_consistency`] read `O(log n)` stored hashes through a
//!   [`HashSource`].
//! - Verifying: [`LogVerifier::verify`] turns note bytes into a [`VerifiedCheckpoint`], the
//!   only source of a trusted tree size and root; proofs are checked against it. A
//!   [`ProofBundle`] packs an entry, its proof and a checkpoint into a C2SP tlog-proof file.
//!
//! Nothing in this module panics on any input; the `tlog_tiles` arithmetic it delegates to is
//! only reached with validated arguments.

mod bundle;
mod checkpoint;
mod proof;
mod state;
mod tiles;
mod tree;
mod witness;

pub use bundle::{BundleError, ProofBundle, TlogProof, MAX_BUNDLE_BYTES, TLOG_PROOF_HEADER};
pub use checkpoint::{
    CheckpointError, LogSigner, LogVerifier, VerifiedCheckpoint, MAX_CHECKPOINT_BYTES,
    MAX_ORIGIN_BYTES,
};
pub use proof::{prove_consistency, prove_inclusion, ConsistencyProof, InclusionProof, ProofError};
pub use state::{
    CheckpointState, ForkError, SplitViewEvidence, StateError, Update, MAX_STATE_BYTES,
    STATE_FORMAT,
};
pub use tiles::{
    export_tiles, extend, extension_reads, tiles_between, verify_from_tiles, ExportSummary,
    Extension, TileId, TileInclusion, TilesError, MAX_BUNDLED_ENTRY_BYTES, TILE_HEIGHT, TILE_WIDTH,
};
pub use tree::{
    hashes_to_store, stored_hash_count, stored_hash_index, tree_root, HashSource, RootHash,
    EMPTY_ROOT, MAX_TREE_SIZE,
};
pub use witness::{
    verify_cosigned, WitnessError, WitnessKeyError, WitnessPolicy, WitnessPolicyError,
    WitnessSigner, WitnessVerifier, ALG_COSIGNATURE_V1, MAX_COSIGNATURE_TIMESTAMP,
    MAX_WITNESS_NAME_BYTES,
};

/// Why a tree hash, root or proof could not be computed (the writing and proving side).
///
/// Inputs here come from the ledger, not from untrusted bytes; a corrupt or truncated store
/// shows up as [`LogError::MissingHash`], [`LogError::Source`] or [`LogError::WrongHashCount`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// A leaf index at or beyond the tree size (caller error; every index when the size is 0).
    #[error("leaf index {index} out of range for tree size {size}")]
    IndexOutOfRange {
        /// The requested leaf index.
        index: u64,
        /// The tree size.
        size: u64,
    },
    /// A consistency proof from tree size 0 was requested; there is none (caller error).
    #[error("no consistency proof from tree size 0")]
    OldSizeZero,
    /// A consistency proof from a larger to a smaller tree was requested (caller error).
    #[error("old tree size {old_size} exceeds new tree size {new_size}")]
    OldLarger {
        /// The requested older size.
        old_size: u64,
        /// The requested newer size.
        new_size: u64,
    },
    /// A tree size (or leaf index + 1) above [`MAX_TREE_SIZE`] (caller error).
    #[error("tree size {size} exceeds the maximum {max}")]
    SizeTooLarge {
        /// The size asked for.
        size: u64,
        /// [`MAX_TREE_SIZE`].
        max: u64,
    },
    /// The hash source has no hash at this stored-hash index (store truncated, or a size beyond
    /// what was appended).
    #[error("tree hash at stored index {0} missing")]
    MissingHash(u64),
    /// The hash source returned a different number of hashes than asked for (a broken
    /// [`HashSource`] implementation).
    #[error("hash source returned {got} hashes, want {want}")]
    WrongHashCount {
        /// Hashes returned.
        got: usize,
        /// Hashes asked for.
        want: usize,
    },
    /// The hash source failed (I/O, corrupt store), with its message.
    #[error("hash source: {detail}")]
    Source {
        /// The hash source's error message.
        detail: String,
    },
    /// `tlog_tiles` rejected inputs this module had validated (a bug here; never expected).
    #[error("internal error in {0}")]
    Internal(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_messages() {
        let cases = [
            (
                LogError::IndexOutOfRange { index: 3, size: 3 },
                "leaf index 3 out of range for tree size 3",
            ),
            (
                LogError::OldSizeZero,
                "no consistency proof from tree size 0",
            ),
            (
                LogError::OldLarger {
                    old_size: 4,
                    new_size: 2,
                },
                "old tree size 4 exceeds new tree size 2",
            ),
            (
                LogError::SizeTooLarge { size: 9, max: 8 },
                "tree size 9 exceeds the maximum 8",
            ),
            (
                LogError::MissingHash(7),
                "tree hash at stored index 7 missing",
            ),
            (
                LogError::WrongHashCount { got: 1, want: 2 },
                "hash source returned 1 hashes, want 2",
            ),
            (
                LogError::Source {
                    detail: "disk".into(),
                },
                "hash source: disk",
            ),
            (
                LogError::Internal("tree_hash"),
                "internal error in tree_hash",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }
}
