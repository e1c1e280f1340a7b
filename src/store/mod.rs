//! Storage behind a [`crate::Ledger`]: entries, content, tree hashes, checkpoints.
//!
//! A `Store` keeps bytes; it decides nothing. Verification never reads a store (it takes bytes
//! and keys), so a store is trusted only for availability, never for integrity: everything read
//! back is re-checkable against a signed checkpoint.
//!
//! Tree hashes use the stored-hash layout of Crosby–Wallach / Go `sumdb/tlog`
//! ([`crate::log::stored_hash_index`]): appending leaf `n` stores its leaf hash and every
//! subtree hash it completes, at consecutive indexes starting at `stored_hash_index(0, n)`.

mod copy;
mod memory;
mod walk;
#[cfg(feature = "postgres")]
mod pg_catalog;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
pub mod durable;

pub use copy::copy_ledger;
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub(crate) use postgres::{check_root, log_err};
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::{
    Integration, IntegrationWork, PgStore, SequencedRow, Submission, DEFAULT_INTEGRATE_BATCH,
    MAX_SCHEMA_NAME,
};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use sqlite::{SqliteStore, StoredEntry};
pub use walk::RowWalk;

use crate::lineage::Label;
use crate::record::{EntryId, Hash32, Kind};

/// The largest leaf index, tree size or checkpoint size a store accepts: 2^63 - 1 (SQLite
/// integers are signed 64-bit). Larger values give [`StoreError::OutOfRange`].
pub const MAX_INDEX: u64 = i64::MAX as u64;

/// Setting key: the log's verifier key in C2SP signed-note form (`spec/storage.md` §4.4).
pub const META_VKEY: &str = "log_vkey";
/// Setting key: τ in millionths, decimal (`spec/storage.md` §4.4).
pub const META_TAU: &str = "tau_millionths";
/// Setting key: the weak-parent rule's name (`spec/storage.md` §4.4).
pub const META_RULE: &str = "weak_rule";

/// Every setting key a ledger keeps in its store's `meta` (`spec/storage.md` §4.4), for tools
/// that copy a ledger between stores ([`copy_ledger`]).
pub const META_KEYS: [&str; 3] = [META_VKEY, META_TAU, META_RULE];

/// A `u64` index or size as a database integer (SQLite and PostgreSQL store `i64`).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn to_i64(n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::OutOfRange {
        got: n,
        max: MAX_INDEX,
    })
}

/// A stored database integer that must be non-negative.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn to_u64(n: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(n).map_err(|_| StoreError::Corrupt {
        reason: format!("{what}: negative value {n}"),
    })
}

/// One entry as a batch append hands it to a store.
#[derive(Clone, Debug)]
pub struct NewEntry<'a> {
    /// Its leaf index; a batch's indexes are contiguous from [`Store::tree_size`].
    pub index: u64,
    /// Its id (leaf hash).
    pub id: EntryId,
    /// COSE_Sign1 bytes.
    pub cose: &'a [u8],
    /// Its kind (kept so that reopening can find keyring entries and tombstones cheaply).
    pub kind: Kind,
    /// The label computed at append.
    pub label: Label,
    /// `(content hash, content bytes)`, stored beside the entry, if given.
    pub content: Option<(Hash32, &'a [u8])>,
    /// Tree hashes to store from `stored_hash_index(0, index)` on (1 + completed subtrees).
    pub hashes: Vec<[u8; 32]>,
    /// The row tag binding `(index, id, kind, label)` under the log key's seal key
    /// (`spec/lineage.md` §5.1), if the writer computed one; stored as given.
    pub tag: Option<[u8; 32]>,
    /// The entry's signed context hash (`spec/record.md` field 5), stored beside it so that
    /// [`Store::context_candidates`] finds the entries of one session by an index
    /// (`spec/storage.md` §4.5); `None` stores the row without it (a candidate of every
    /// lookup).
    pub context: Option<Hash32>,
}

/// What a store keeps about an entry besides its bytes: its leaf index, id, kind, the label
/// computed at append and that label's row tag. All untrusted: a ledger believes a row only
/// when its tag verifies under the log key (`spec/lineage.md` §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryMeta {
    /// Leaf index.
    pub index: u64,
    /// Entry id.
    pub id: EntryId,
    /// Kind.
    pub kind: Kind,
    /// Label computed at append.
    pub label: Label,
    /// Row tag (`spec/lineage.md` §5.1); `None` for a row stored without one (a sequenced
    /// PostgreSQL entry before its handle sealed it, a ledger written by memlineage 0.1).
    pub tag: Option<[u8; 32]>,
}

/// The smallest kind code of the entries with effects besides being stored (tombstone 5,
/// keyring 6, quarantine 7, quarantine-strong 8, release 9, lease 10, replacement 11): what
/// [`Store::effect_metas_from`] selects (`spec/storage.md` §4.2), up to [`LAST_EFFECT_KIND`].
pub const FIRST_EFFECT_KIND: u64 = 5;
/// The largest kind code of the entries with effects ([`crate::Kind::has_effects`]); kinds
/// after it (context, 12) have none.
pub const LAST_EFFECT_KIND: u64 = 11;
/// The SQL condition on `entries.kind` of the rows with effects: the predicate of the partial
/// index `entries_effects` and of the query that uses it (`src/store/schema.sql`), written the
/// same in both so that SQLite's planner matches them.
pub const EFFECTS_PREDICATE: &str = "kind BETWEEN 5 AND 11";

/// A storage backend. Implementations: [`MemoryStore`], `SqliteStore` (feature `sqlite`),
/// `PgStore` (feature `postgres`).
///
/// Every method returns a [`StoreError`] instead of panicking. A failed `append` changes
/// nothing (all or nothing).
pub trait Store {
    /// Number of entries (the tree size).
    ///
    /// # Errors
    /// [`StoreError`] on I/O failure.
    fn tree_size(&self) -> Result<u64, StoreError>;

    /// How many entry rows the store holds: [`Store::tree_size`] when they chain (indexes
    /// `0..size`, none missing). O(n); the default reads every row's metadata, SQLite and
    /// PostgreSQL count.
    ///
    /// # Errors
    /// [`StoreError`] on I/O failure.
    fn entry_count(&self) -> Result<u64, StoreError> {
        Ok(self.metas_from(0).map_or(0, |m| m.len() as u64))
    }

    /// Appends a batch atomically. For `SqliteStore` the batch is durable when this returns.
    ///
    /// # Errors
    /// [`StoreError::NotContiguous`] when the first index is not [`Store::tree_size`] or indexes
    /// skip; [`StoreError::Duplicate`] when an id is already stored; I/O errors. On error,
    /// nothing of the batch is stored.
    fn append(&mut self, batch: &[NewEntry<'_>]) -> Result<(), StoreError>;

    /// Appends `batch` as [`Store::append`] does and sets the setting `key` to `value`, in one
    /// transaction where the backend has them (the label seal of `spec/lineage.md` §5 is
    /// written so). The default runs the two one after the other: a crash between them leaves
    /// the setting behind the entries, which readers of the seal tolerate (they re-verify what
    /// the seal does not cover).
    ///
    /// # Errors
    /// As [`Store::append`] and [`Store::set_meta`].
    fn append_with_meta(
        &mut self,
        batch: &[NewEntry<'_>],
        key: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        self.append(batch)?;
        self.set_meta(key, value)
    }

    /// Starts a *group* of writes (`spec/storage.md` §6.1): until [`Store::end_group`], every
    /// write method still stores all of what it is given or nothing, but none of them is
    /// durable, or seen by other handles, before the group ends, and then all of them are at
    /// once (one commit, one fsync). A backend without groups (the default) leaves every
    /// write durable when it returns, which is always correct. Starting a group inside one
    /// is a no-op.
    ///
    /// # Errors
    /// I/O errors (e.g. the database is locked); no group is started then, and writes stay
    /// durable one by one.
    fn begin_group(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Ends the group [`Store::begin_group`] started, committing every write of it; a no-op
    /// outside a group.
    ///
    /// # Errors
    /// I/O errors: then **none** of the group's writes is stored, though each returned `Ok`,
    /// and a handle that cached what they wrote (a [`crate::Ledger`]) must be dropped.
    fn end_group(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The COSE bytes of the entry at `index`, if stored.
    ///
    /// # Errors
    /// I/O errors.
    fn entry_bytes(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError>;

    /// The leaf index of `id`, if stored.
    ///
    /// # Errors
    /// I/O errors.
    fn index_of(&self, id: &EntryId) -> Result<Option<u64>, StoreError>;

    /// Metadata of all entries with index `>= from`, in index order.
    ///
    /// # Errors
    /// I/O errors; [`StoreError::Corrupt`] when a stored kind or label code is unknown.
    fn metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError>;

    /// Up to `limit` entry rows from leaf `from` on, in index order, each with its stored
    /// (unverified) COSE bytes: what a reader that walks the log in order takes (the quarantine
    /// rescan of `spec/lineage.md` §5.3), in one query per call on SQLite and PostgreSQL
    /// instead of two per entry. Fewer than `limit` rows means the store holds no more
    /// (PostgreSQL: no more integrated ones). The default reads [`Store::meta_at`] and
    /// [`Store::entry_bytes`] one index at a time. [`RowWalk`] walks a range with it.
    ///
    /// # Errors
    /// I/O errors; [`StoreError::Corrupt`] when indexes do not run contiguously from `from`, a
    /// row has no bytes, or a stored code or tag is malformed.
    fn rows_from(&self, from: u64, limit: usize) -> Result<Vec<(EntryMeta, Vec<u8>)>, StoreError> {
        let mut out = Vec::new();
        let mut index = from;
        while out.len() < limit && index <= MAX_INDEX {
            let Some(meta) = self.meta_at(index)? else {
                break;
            };
            let bytes = self
                .entry_bytes(index)?
                .ok_or_else(|| StoreError::Corrupt {
                    reason: format!("entry {index}: a row without bytes"),
                })?;
            out.push((meta, bytes));
            index += 1;
        }
        Ok(out)
    }

    /// Metadata of the entry at `index`, if stored (one indexed lookup).
    ///
    /// # Errors
    /// I/O errors; [`StoreError::Corrupt`] for unknown codes or a malformed tag.
    fn meta_at(&self, index: u64) -> Result<Option<EntryMeta>, StoreError>;

    /// Metadata of the entry `id`, if stored. The default is [`Store::index_of`] then
    /// [`Store::meta_at`]; the row returned may name another id (the store is untrusted), which
    /// the caller checks.
    ///
    /// # Errors
    /// As [`Store::meta_at`].
    fn meta_of(&self, id: &EntryId) -> Result<Option<EntryMeta>, StoreError> {
        match self.index_of(id)? {
            Some(i) => self.meta_at(i),
            None => Ok(None),
        }
    }

    /// Metadata of the entries with index `>= from` whose kind has effects
    /// ([`FIRST_EFFECT_KIND`]..=[`LAST_EFFECT_KIND`]), in index order: what a ledger reads on open instead of every row
    /// (`spec/lineage.md` §5.1). The default filters [`Store::metas_from`]; SQLite and
    /// PostgreSQL answer from a partial index, so the cost follows the number of such entries,
    /// not the ledger's size.
    ///
    /// # Errors
    /// As [`Store::metas_from`].
    fn effect_metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError> {
        let mut all = self.metas_from(from)?;
        all.retain(|m| m.kind.has_effects());
        Ok(all)
    }

    /// The leaf indexes below `below`, in index order, of the rows stored with context hash
    /// `context` and of the rows stored without one: the candidates for the entries of one
    /// session (`spec/storage.md` §4.5). Untrusted like every row: the caller reads and
    /// verifies each candidate and keeps those whose signed context hash is `context`. The
    /// default lists every index below `below` (every row is a candidate); SQLite and
    /// PostgreSQL answer from the index `entries_context`, O(k log n) for k candidates.
    ///
    /// # Errors
    /// I/O errors; [`StoreError::Corrupt`] for a malformed index.
    fn context_candidates(&self, context: &Hash32, below: u64) -> Result<Vec<u64>, StoreError> {
        let _ = context;
        Ok((0..below.min(self.tree_size()?)).collect())
    }

    /// Sets the row tags of stored entries (`(leaf index, tag)`) and the setting `key` to
    /// `value`, in one transaction where the backend has them: how a ledger seals rows that
    /// were stored without a tag.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when an index is not stored; I/O errors.
    fn set_tags(
        &mut self,
        tags: &[(u64, [u8; 32])],
        key: &str,
        value: &str,
    ) -> Result<(), StoreError>;

    /// The tree hashes at the given stored-hash indexes, in the same order.
    ///
    /// # Errors
    /// [`StoreError::MissingHash`] when one is absent; I/O errors.
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, StoreError>;

    /// The content stored beside the entry at `index` (by the content hash given at append), if
    /// stored and not redacted. Unchecked: callers compare it with the signed content hash.
    ///
    /// # Errors
    /// I/O errors.
    fn content_at(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError>;

    /// Content bytes by content hash, if stored and not redacted.
    ///
    /// # Errors
    /// I/O errors.
    fn content(&self, hash: &Hash32) -> Result<Option<Vec<u8>>, StoreError>;

    /// Deletes stored content (the entry and its hash stay in the log). Returns whether it was
    /// there.
    ///
    /// # Errors
    /// I/O errors.
    fn redact(&mut self, hash: &Hash32) -> Result<bool, StoreError>;

    /// Stores a signed checkpoint note for `size`.
    ///
    /// # Errors
    /// I/O errors.
    fn put_checkpoint(&mut self, size: u64, note: &[u8]) -> Result<(), StoreError>;

    /// The stored checkpoint note with the largest size, if any.
    ///
    /// # Errors
    /// I/O errors.
    fn latest_checkpoint(&self) -> Result<Option<(u64, Vec<u8>)>, StoreError>;

    /// The last signed checkpoint note kept outside the store's own transactions (a SQLite
    /// ledger's side file, `SqliteStore::side_checkpoint_path`), if the backend keeps one.
    /// [`crate::Ledger::open`] verifies it and refuses a store holding fewer entries than it
    /// states (`spec/storage.md` §6). Untrusted bytes, like everything read from a store.
    ///
    /// # Errors
    /// I/O errors.
    fn durable_checkpoint(&self) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(None)
    }

    /// A number that changes whenever content may have been removed from the store
    /// ([`Store::redact`], by this handle or any other), or `None` when the backend cannot
    /// tell: [`crate::Ledger::retrieve`] then reads content again at every retrieval instead
    /// of answering from what it verified (`spec/log.md` §11). The default is `None`.
    ///
    /// # Errors
    /// I/O errors.
    fn content_epoch(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    /// A ledger setting (log origin, verifier key, τ, rule), if set.
    ///
    /// # Errors
    /// I/O errors.
    fn meta(&self, key: &str) -> Result<Option<String>, StoreError>;

    /// Sets a ledger setting.
    ///
    /// # Errors
    /// I/O errors.
    fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError>;
}

/// Storage failures. None of them loses what was stored before.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The batch does not start at the tree size or is not contiguous (caller error).
    #[error("append not contiguous: got index {got}, want {want}")]
    NotContiguous {
        /// First offending index.
        got: u64,
        /// The index expected there.
        want: u64,
    },
    /// The entry id is already stored.
    #[error("entry {0} already stored")]
    Duplicate(EntryId),
    /// A tree hash the caller needs is absent (store corrupt or truncated).
    #[error("tree hash at stored index {0} missing")]
    MissingHash(u64),
    /// A sequenced PostgreSQL entry the log does not admit into its tree (its signature,
    /// writer, parents, content or a forensic rule: `reason`, `spec/lineage.md` §5.1); the
    /// integration signs nothing from `index` on (`spec/storage.md` §11.4). Untrusted input
    /// (rows a store-only attacker sequenced) triggers it.
    #[error("sequenced entry {index} not admitted: {reason}")]
    NotAdmitted {
        /// Leaf index of the refused row.
        index: u64,
        /// Why admission refused it.
        reason: String,
    },
    /// Stored bytes make no sense (unknown code, wrong length).
    #[error("store corrupt: {reason}")]
    Corrupt {
        /// What makes no sense, in words (which row or value, and what is wrong with it).
        reason: String,
    },
    /// A batch entry carries the wrong number of tree hashes (caller error). Leaf `index` carries
    /// its leaf hash plus one hash per subtree it completes: `1 + (index + 1).trailing_zeros()`.
    #[error("entry {index}: {got} tree hashes, want {want}")]
    HashCount {
        /// Leaf index of the offending entry.
        index: u64,
        /// Number of hashes given.
        got: usize,
        /// Number of hashes leaf `index` must carry.
        want: usize,
    },
    /// A size or index above [`MAX_INDEX`] (2^63 - 1), which SQLite cannot store (caller error).
    #[error("value {got} out of range, max {max}")]
    OutOfRange {
        /// The rejected value.
        got: u64,
        /// The largest accepted value, [`MAX_INDEX`].
        max: u64,
    },
    /// The file exists but is not a memlineage ledger: not a SQLite database, or a SQLite
    /// database without the ledger's `application_id`. Nothing was written to it. Untrusted
    /// input (any file) can trigger it.
    #[error("{}: not a memlineage ledger", .path.display())]
    NotALedger {
        /// The file given to `SqliteStore::open`.
        path: std::path::PathBuf,
    },
    /// The file is a memlineage ledger of a schema version this build does not read (written by
    /// a newer release, or a damaged header). Nothing was written to it.
    #[error("ledger schema version {got}, this build reads {want}")]
    SchemaVersion {
        /// The version found in the file (`PRAGMA user_version`).
        got: i64,
        /// The version this build reads and writes.
        want: i64,
    },
    /// SQLite failed (I/O, locking, file not a database).
    #[cfg(feature = "sqlite")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// File-system failure.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// PostgreSQL failed (connection, I/O, permissions, constraint), with the server's message.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[error("postgres: {}", pg_message(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// The `PgStore` worker thread could not start or has exited.
    #[error("postgres worker: {reason}")]
    PgWorker {
        /// What happened to the worker (it could not be spawned, exited, or its state is
        /// poisoned), in words or as the spawn error's message.
        reason: String,
    },
    /// A `PgStore` ledger name that is not 1 to 52 bytes of `[a-z0-9_]` starting with a
    /// letter or `_` (caller error).
    #[error("bad ledger name {name:?}: want 1-52 bytes of [a-z0-9_], not starting with a digit")]
    BadLedgerName {
        /// The name given.
        name: String,
    },
    /// A batch entry's tree hashes are not the RFC 6962 hashes of the ids (caller error;
    /// checked by `PgStore`, which integrates the batch itself).
    #[error("entry {index}: tree hashes are not the RFC 6962 hashes of the log")]
    WrongHashes {
        /// Leaf index of the first offending entry.
        index: u64,
    },
}

/// A PostgreSQL error with the server's message and detail when there is one.
#[cfg(feature = "postgres")]
fn pg_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => e.to_string(),
    }
}
