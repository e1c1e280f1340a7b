//! [`LedgerError`]: why a ledger operation failed. One enum for the ledger's operations, with
//! the classes a caller handles differently nested in it (admission, seal, parameters, rows,
//! and the verification layers' own errors): every operation reads and verifies rows through
//! the same path, so each can meet every class (`spec/README.md` "Errors").

use crate::lineage::admission::AdmissionError;
use crate::log::{CheckpointError, LogError, ProofError};
use crate::record::{EntryId, RecordError};
use crate::store::StoreError;

/// Why a ledger operation failed. Nothing already stored is lost by any of them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The entry may not follow the log (writer, content, keyring, tombstone, quarantine and
    /// lease rules, parents and target known, not a duplicate): the one admission rule the
    /// audit applies too (untrusted input).
    #[error(transparent)]
    Admission(#[from] AdmissionError),
    /// One batch holds two forensic entries (lease, replacement, flag, release) about the same
    /// target; append them in separate batches.
    #[error("batch holds two forensic entries about {0}")]
    BatchConflict(EntryId),
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
    /// `create` on a store that already holds a ledger.
    #[error("store already holds a ledger")]
    NotEmpty,
    /// The store has no ledger settings (not created by [`Ledger::create`](super::Ledger::create)).
    #[error("store holds no ledger (missing settings)")]
    NotALedger,
    /// The log key given does not match the ledger's recorded verifier key.
    #[error("log key does not match this ledger")]
    WrongLogKey,
    /// An entry the index names has no bytes stored (store damaged).
    #[error("entry {0} missing from the store")]
    Missing(EntryId),
    /// The bytes stored at `index` are not entry `id` as the ledger's index records it: they
    /// are another entry's, or not the same kind, or (read by index) an entry the index puts
    /// elsewhere (store tampered with). Nothing is read from them.
    #[error("the bytes stored at index {index} are not entry {id} (store tampered with)")]
    NotTheEntry {
        /// The entry the read expected at `index`; for a read by index, the entry the bytes
        /// are, which the ledger's index does not put at `index`.
        id: EntryId,
        /// The leaf index whose stored bytes were read.
        index: u64,
    },
    /// The store's labels, kinds or ids differ from what the log key sealed, or it holds
    /// fewer entries than sealed (`spec/lineage.md` §5; store tampered with or rolled back).
    #[error(transparent)]
    Seal(#[from] super::SealError),
    /// The store's labelling parameters are not the signed ones, or no checkpoint signs them
    /// (`spec/lineage.md` §2.1; store tampered with): the ledger is not opened.
    #[error(transparent)]
    Parameters(#[from] super::ParametersError),
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
    /// The store holds fewer entries than the last checkpoint this log signed, kept outside
    /// the store (a SQLite ledger's `LEDGER.checkpoint`, `spec/storage.md` §6): acknowledged
    /// entries were lost (e.g. a WAL frame failed its checksum and SQLite dropped it and all
    /// after). The ledger is not opened, so nothing is appended or signed over the shorter
    /// tree, which would be a split view of the log's own making.
    #[error(
        "the store holds {stored} entries but this log already signed a checkpoint of \
         {signed} (kept in the store, in the side file beside the ledger, LEDGER.checkpoint, \
         or in a front's pin): entries were lost, e.g. to a corrupted WAL, or the file was \
         rolled back; refusing to append or sign. Recover by restoring the ledger file (and \
         its -wal) from a backup or replica holding at least {signed} entries; keep the side \
         file"
    )]
    BehindSignedCheckpoint {
        /// Size of the checkpoint kept outside the store.
        signed: u64,
        /// Entries the store holds.
        stored: u64,
    },
    /// The checkpoint signed for the current tree commits to another effects index than the
    /// one this handle rebuilt from the entries it verified (`spec/label-proof.md` §3.3): no
    /// label proof is made against it.
    #[error(
        "the checkpoint of size {size} signs an effects index this handle does not rebuild from \
         the log; no label proof is made against it (run `memlineage verify`)"
    )]
    EffectsIndexMismatch {
        /// The checkpoint's tree size.
        size: u64,
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
    /// The store's entry rows do not chain, or are not yet known to (`spec/storage.md` §6.1
    /// item 2): nothing is written (store tampered with, or a check still running).
    #[error(transparent)]
    Rows(#[from] super::RowsError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
