//! [`LedgerError`]: why a ledger operation failed.

use crate::lineage::lease::LeaseError;
use crate::lineage::quarantine::QuarantineError;
use crate::log::{CheckpointError, LogError, ProofError};
use crate::record::{EntryId, KeyId, RecordError, Role};
use crate::store::StoreError;

/// Why a ledger operation failed. Nothing already stored is lost by any of them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The writer's key is not bound by a keyring entry (caller or untrusted input).
    #[error("writer {0} is not bound in the keyring")]
    UnknownWriter(KeyId),
    /// A flag or release breaks the quarantine rules (`spec/forensics.md` §2.2).
    #[error(transparent)]
    Quarantine(#[from] QuarantineError),
    /// A lease or replacement breaks the lease rules (`spec/forensics.md` §5).
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// One batch holds two forensic entries (lease, replacement, flag, release) about the same
    /// target; append them in separate batches.
    #[error("batch holds two forensic entries about {0}")]
    BatchConflict(EntryId),
    /// A parent is not in the log (parents must precede children, so no cycle can exist).
    #[error("unknown parent {0}")]
    UnknownParent(EntryId),
    /// A tombstone names an entry that is not in the log.
    #[error("unknown target {0}")]
    UnknownTarget(EntryId),
    /// No entry with this id.
    #[error("unknown entry {0}")]
    UnknownEntry(EntryId),
    /// The index is not below the tree size.
    #[error("index {index} out of range for tree size {size}")]
    IndexOutOfRange {
        /// Requested index.
        index: u64,
        /// Tree size.
        size: u64,
    },
    /// The entry is already in the log (same bytes, same id).
    #[error("entry {0} already in the log")]
    Duplicate(EntryId),
    /// The content does not hash to the entry's content hash.
    #[error("content does not match the entry's content hash")]
    ContentMismatch,
    /// A keyring entry not written by the log key.
    #[error("only the log key may write keyring entries")]
    NotLogKey,
    /// A keyring entry binding a key to role `log` (there is one log key, `spec/record.md`
    /// §5.4 rule 2).
    #[error("key {0} may not be bound to role log")]
    BindsLogRole(KeyId),
    /// A tool or external principal tried to tombstone an entry.
    #[error("writer {0} (tool/external) may not write tombstones")]
    UntrustedTombstone(KeyId),
    /// The key is already bound (a key is bound at most once, `spec/record.md` §5.4 rule 3).
    #[error("key {key} already bound as {}", .bound.name())]
    Rebind {
        /// The key.
        key: KeyId,
        /// Its existing role.
        bound: Role,
    },
    /// `create` on a store that already holds a ledger.
    #[error("store already holds a ledger")]
    NotEmpty,
    /// The store has no ledger settings (not created by [`Ledger::create`]).
    #[error("store holds no ledger (missing settings)")]
    NotALedger,
    /// The log key given does not match the ledger's recorded verifier key.
    #[error("log key does not match this ledger")]
    WrongLogKey,
    /// An entry the index names is missing from the store (store damaged).
    #[error("entry {0} missing from the store")]
    Missing(EntryId),
    /// The store's labels, kinds or ids differ from what the log key sealed, or it holds
    /// fewer entries than sealed (`spec/lineage.md` §5; store tampered with or rolled back).
    #[error(transparent)]
    Seal(#[from] super::SealError),
    /// Stored content does not hash to the entry's signed content hash (store tampered with).
    #[error("content of entry {0} does not match its signed content hash")]
    ContentTampered(EntryId),
    /// The store's tree hashes do not extend the last signed checkpoint (store damaged or
    /// tampered with): no new checkpoint is signed.
    #[error(
        "stored tree does not extend the signed checkpoint of size {signed_size}; refusing to sign"
    )]
    TreeInconsistent {
        /// Size of the last signed checkpoint.
        signed_size: u64,
    },
    /// An empty batch.
    #[error("empty batch")]
    EmptyBatch,
    /// The entry is malformed or its stored bytes do not verify.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// Tree hashing or proving failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// An inclusion or consistency proof did not verify (store damaged or tampered with).
    #[error(transparent)]
    Proof(#[from] ProofError),
    /// Checkpoint signing or verification failed.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
