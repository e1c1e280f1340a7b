//! SQLite store: one ordinary SQLite 3 file in WAL mode (`spec/storage.md`).

use super::memory::{check_batch, check_range, leaf_hash_index};
use super::{to_i64, to_u64, EntryMeta, NewEntry, Store, StoreError, EFFECTS_PREDICATE};
use crate::audit::{AuditItem, AUDIT_CHUNK};
use crate::record::{EntryId, Hash32};
use rows::{blob, blob32, duplicate_or, int, meta_row, on_open, put_meta, tree_size_of};
use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod rows;
mod schema;

/// How long a statement waits for another connection's lock before failing with
/// [`StoreError::Sqlite`] (`SQLITE_BUSY`): 5 s.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a store lives.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// A file; `fresh` when it was absent or 0 bytes before opening.
    File { fresh: bool },
    /// Process memory.
    Memory,
}

/// The embedded default [`Store`]: one SQLite file (WAL), readable by any SQLite 3 client.
///
/// # Durability
/// On a file ([`SqliteStore::open`]) the connection runs `journal_mode=WAL` and
/// `synchronous=FULL`: every write method commits one transaction and the WAL is fsynced
/// before it returns `Ok`, so an acknowledged [`Store::append`], [`Store::put_checkpoint`],
/// [`Store::set_meta`] or [`Store::redact`] survives a process crash or power loss (given a
/// disk that honours fsync). A write that returns `Err`, or is interrupted by a crash, leaves
/// nothing: a batch is one transaction. [`SqliteStore::open_in_memory`] keeps nothing.
///
/// # Concurrency
/// Several connections (threads or processes on one host) may open the same file: readers do
/// not block the writer; writers serialise (`BEGIN IMMEDIATE`) and wait up to 5 s for the lock.
///
/// # Trust
/// Rows read back are checked for shape (32-byte ids and hashes, known kind and label codes,
/// contiguous indexes) and rejected with [`StoreError::Corrupt`]; their meaning is checked by
/// verification against a signed checkpoint, never by the store. No method panics.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    /// The side checkpoint file beside a file ledger ([`SqliteStore::side_checkpoint_path`]);
    /// `None` in memory.
    side: Option<PathBuf>,
    /// The group of writes open on `conn` ([`Store::begin_group`]), if any.
    group: Option<group::Group>,
    /// Content this handle removed ([`Store::content_epoch`]; others' show in
    /// `PRAGMA data_version`).
    redactions: u64,
}

mod group;

impl SqliteStore {
    /// Opens the ledger at `path`, creating it when the file is absent or empty (0 bytes).
    ///
    /// A new ledger gets the schema of `src/store/schema.sql`, `application_id` `0x4D4C4E47`
    /// and `user_version` 1 in one transaction. An existing file is only read until it is known
    /// to be a ledger: a foreign file is left byte-identical (SQLite may still roll back a hot
    /// rollback journal left by a crashed writer of that file, as any client would). Opening
    /// checks that the five
    /// tables exist and that the number of tree hashes matches the number of entries; it does
    /// not re-read entries or recompute any hash (`spec/storage.md` §4).
    ///
    /// # Errors
    /// - [`StoreError::NotALedger`]: the file is not a SQLite database, or is one without the
    ///   ledger `application_id` (including a valid but empty SQLite database);
    /// - [`StoreError::SchemaVersion`]: a ledger of another schema version;
    /// - [`StoreError::Corrupt`]: a ledger whose tables are missing, whose tree-hash count does
    ///   not match its entry count, whose size is not a whole number of pages, or which SQLite
    ///   reports as malformed (e.g. truncated at a page boundary);
    /// - [`StoreError::Io`]: the file's metadata cannot be read;
    /// - [`StoreError::Sqlite`]: cannot open or create the file, locked beyond the busy
    ///   timeout, I/O failure.
    ///
    /// Does not panic, whatever the file holds.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        // SQLite treats any file shorter than its header as an empty database: only a missing
        // or zero-byte file may become a new ledger.
        let fresh = match std::fs::metadata(path) {
            Ok(m) => m.len() == 0,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(StoreError::Io(e)),
        };
        let conn = Connection::open_with_flags(path, flags)?;
        Self::init(conn, path, Mode::File { fresh })
    }

    /// A new, empty ledger held in memory (for tests): same schema and checks as a file, lost
    /// on drop.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] when SQLite cannot allocate it. Does not panic.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::init(
            Connection::open_in_memory()?,
            Path::new(":memory:"),
            Mode::Memory,
        )
    }

    /// Sets connection pragmas, recognises or creates the ledger, then switches to WAL.
    fn init(conn: Connection, path: &Path, mode: Mode) -> Result<Self, StoreError> {
        let side = match mode {
            Mode::File { .. } => Some(Self::side_checkpoint_path(path)),
            Mode::Memory => None,
        };
        let mut store = SqliteStore {
            conn,
            side,
            group: None,
            redactions: 0,
        };
        store.setup(path, mode).map_err(|e| on_open(e, path))?;
        Ok(store)
    }

    /// Up to `limit` entries from index `from` on, in index order, each with its metadata, its
    /// COSE bytes and its stored content (`None` when redacted): what an offline audit reads
    /// (`memlineage verify`), in one query instead of two lookups per entry.
    ///
    /// # Errors
    /// I/O errors; [`StoreError::Corrupt`] when indexes do not run contiguously from `from` or a
    /// stored code is unknown.
    pub fn entries_from(&self, from: u64, limit: usize) -> Result<Vec<StoredEntry>, StoreError> {
        let rows = self.audit_rows_from(from, limit)?;
        Ok(rows.into_iter().map(|(entry, _)| entry).collect())
    }

    /// [`SqliteStore::entries_from`] with each row's `context` column (`None` when NULL), which
    /// the audit compares with the signed context hash (`spec/storage.md` §4.5).
    fn audit_rows_from(
        &self,
        from: u64,
        limit: usize,
    ) -> Result<Vec<(StoredEntry, Option<Hash32>)>, StoreError> {
        let (Ok(from_i), Ok(limit_i)) = (i64::try_from(from), i64::try_from(limit)) else {
            return Ok(Vec::new());
        };
        // One row per entry whatever the content table holds (a file not written by us may
        // repeat a hash): the first content row, as `content_at` reads it. NULL only when there
        // is none; a row with NULL bytes reads as 0, which `blob` refuses as `content_at` does.
        let mut stmt = self.conn.prepare_cached(
            "SELECT e.idx, e.id, e.kind, e.label, e.tag, e.cose, \
             (SELECT ifnull(c.bytes, 0) FROM content c WHERE c.hash = e.content_hash LIMIT 1), \
             e.context FROM entries e WHERE e.idx >= ?1 ORDER BY e.idx LIMIT ?2",
        )?;
        let mut rows = stmt.query([from_i, limit_i])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let meta = meta_row(row, from + out.len() as u64)?;
            let cose = blob(row.get_ref(5)?, "entries.cose")?.to_vec();
            let content = match row.get_ref(6)? {
                ValueRef::Null => None,
                v => Some(blob(v, "content.bytes")?.to_vec()),
            };
            let context = match row.get_ref(7)? {
                ValueRef::Null => None,
                v => Some(Hash32(blob32(v, "entries.context")?)),
            };
            out.push(((meta, cose, content), context));
        }
        Ok(out)
    }

    /// This ledger's entries as [`AuditItem`]s for [`crate::audit::audit`], in index order,
    /// read [`AUDIT_CHUNK`] at a time as [`SqliteStore::entries_from`] reads them, each with its
    /// `context` column (one query per chunk;
    /// the audit reads the next chunk while the pool checks the signatures of this one). A read
    /// error is the last item. The store reads for the audit; the audit never opens a store.
    pub fn audit_items(&self) -> impl Iterator<Item = Result<AuditItem, StoreError>> + '_ {
        let mut next = 0u64;
        let mut buffered = Vec::new().into_iter();
        let mut failed = false;
        std::iter::from_fn(move || {
            if failed {
                return None;
            }
            if buffered.len() == 0 {
                match self.audit_rows_from(next, AUDIT_CHUNK) {
                    Ok(rows) => {
                        next += rows.len() as u64;
                        buffered = rows.into_iter();
                    }
                    Err(e) => {
                        failed = true;
                        return Some(Err(e));
                    }
                }
            }
            buffered.next().map(|((meta, cose, content), context)| {
                Ok(AuditItem {
                    cose,
                    stored_label: Some(meta.label),
                    stored_kind: Some(meta.kind),
                    stored_id: Some(meta.id),
                    stored_context: context,
                    content,
                })
            })
        })
    }

    /// Reads one optional column of one optional row.
    fn one<T>(
        &self,
        sql: &str,
        key: impl rusqlite::Params,
        f: impl FnOnce(ValueRef<'_>) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut rows = stmt.query(key)?;
        match rows.next()? {
            Some(row) => f(row.get_ref(0)?).map(Some),
            None => Ok(None),
        }
    }
}

impl Store for SqliteStore {
    /// `max(idx) + 1` over `entries`: one indexed lookup, O(log n).
    fn tree_size(&self) -> Result<u64, StoreError> {
        tree_size_of(&self.conn)
    }

    /// `count(*)` over `entries`.
    fn entry_count(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM entries", [], |r| r.get(0))?;
        to_u64(n, "count(entries)")
    }

    /// Appends a batch in one `BEGIN IMMEDIATE` transaction, durable when it returns `Ok`.
    fn append(&mut self, batch: &[NewEntry<'_>]) -> Result<(), StoreError> {
        self.append_in_tx(batch, None)
    }

    fn append_with_meta(
        &mut self,
        batch: &[NewEntry<'_>],
        key: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        self.append_in_tx(batch, Some((key, value)))
    }

    fn entry_bytes(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Ok(idx) = i64::try_from(index) else {
            return Ok(None);
        };
        self.one("SELECT cose FROM entries WHERE idx = ?1", [idx], |v| {
            blob(v, "entries.cose").map(<[u8]>::to_vec)
        })
    }

    fn index_of(&self, id: &EntryId) -> Result<Option<u64>, StoreError> {
        self.one("SELECT idx FROM entries WHERE id = ?1", [&id.0[..]], |v| {
            to_u64(int(v, "entries.idx")?, "entries.idx")
        })
    }

    /// One query in index order; checks that indexes run contiguously from `from`.
    fn metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError> {
        let Ok(from_i) = i64::try_from(from) else {
            return Ok(Vec::new());
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT idx, id, kind, label, tag FROM entries WHERE idx >= ?1 ORDER BY idx",
        )?;
        let mut rows = stmt.query([from_i])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(meta_row(row, from + out.len() as u64)?);
        }
        Ok(out)
    }

    /// One query in index order (the primary key); checks that indexes run contiguously.
    fn rows_from(&self, from: u64, limit: usize) -> Result<Vec<(EntryMeta, Vec<u8>)>, StoreError> {
        let Ok(from_i) = i64::try_from(from) else {
            return Ok(Vec::new());
        };
        let limit_i = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self.conn.prepare_cached(
            "SELECT idx, id, kind, label, tag, cose FROM entries \
             WHERE idx >= ?1 ORDER BY idx LIMIT ?2",
        )?;
        let mut rows = stmt.query([from_i, limit_i])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let meta = meta_row(row, from + out.len() as u64)?;
            out.push((meta, blob(row.get_ref(5)?, "entries.cose")?.to_vec()));
        }
        Ok(out)
    }

    fn meta_at(&self, index: u64) -> Result<Option<EntryMeta>, StoreError> {
        let Ok(idx) = i64::try_from(index) else {
            return Ok(None);
        };
        let mut stmt = self
            .conn
            .prepare_cached("SELECT idx, id, kind, label, tag FROM entries WHERE idx = ?1")?;
        let mut rows = stmt.query([idx])?;
        match rows.next()? {
            Some(row) => meta_row(row, index).map(Some),
            None => Ok(None),
        }
    }

    /// One lookup by the `id` column's unique index.
    fn meta_of(&self, id: &EntryId) -> Result<Option<EntryMeta>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT idx, id, kind, label, tag FROM entries WHERE id = ?1")?;
        let mut rows = stmt.query([&id.0[..]])?;
        match rows.next()? {
            Some(row) => {
                let index = to_u64(int(row.get_ref(0)?, "entries.idx")?, "entries.idx")?;
                meta_row(row, index).map(Some)
            }
            None => Ok(None),
        }
    }

    /// From the index `entries_context`: the rows stored without a context hash (NULL sorts
    /// first), then those with `context`; O(k log n) for k candidates.
    fn context_candidates(&self, context: &Hash32, below: u64) -> Result<Vec<u64>, StoreError> {
        let below = i64::try_from(below).unwrap_or(i64::MAX);
        let mut stmt = self.conn.prepare_cached(
            "SELECT idx FROM entries WHERE context IS NULL AND idx < ?2 \
             UNION SELECT idx FROM entries WHERE context = ?1 AND idx < ?2 ORDER BY idx",
        )?;
        let mut rows = stmt.query(params![&context.0[..], below])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(to_u64(int(row.get_ref(0)?, "entries.idx")?, "entries.idx")?);
        }
        Ok(out)
    }

    /// From the partial index `entries_effects`: O(k log n) for k such entries.
    fn effect_metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError> {
        let Ok(from_i) = i64::try_from(from) else {
            return Ok(Vec::new());
        };
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT idx, id, kind, label, tag FROM entries \
                 WHERE {EFFECTS_PREDICATE} AND idx >= ?1 ORDER BY idx"
        ))?;
        let mut rows = stmt.query([from_i])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let index = to_u64(int(row.get_ref(0)?, "entries.idx")?, "entries.idx")?;
            out.push(meta_row(row, index)?);
        }
        Ok(out)
    }

    fn set_tags(
        &mut self,
        tags: &[(u64, [u8; 32])],
        key: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        let tx = group::WriteTx::begin(&mut self.conn, self.group.is_some())?;
        {
            let mut upd = tx.prepare_cached("UPDATE entries SET tag = ?2 WHERE idx = ?1")?;
            for (i, tag) in tags {
                if upd.execute(params![to_i64(*i)?, &tag[..]])? != 1 {
                    return Err(StoreError::Corrupt {
                        reason: format!("set_tags: entry {i} not stored"),
                    });
                }
            }
            put_meta(&tx, key, value)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// One cached statement executed per index.
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT hash FROM tree_hashes WHERE idx = ?1")?;
        let mut out = Vec::with_capacity(indexes.len());
        for &i in indexes {
            let Ok(idx) = i64::try_from(i) else {
                return Err(StoreError::MissingHash(i));
            };
            let mut rows = stmt.query([idx])?;
            match rows.next()? {
                Some(row) => out.push(blob32(row.get_ref(0)?, "tree_hashes.hash")?),
                None => return Err(StoreError::MissingHash(i)),
            }
        }
        Ok(out)
    }

    fn content_at(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Ok(idx) = i64::try_from(index) else {
            return Ok(None);
        };
        self.one(
            "SELECT c.bytes FROM entries e JOIN content c ON c.hash = e.content_hash \
             WHERE e.idx = ?1",
            [idx],
            |v| blob(v, "content.bytes").map(<[u8]>::to_vec),
        )
    }

    fn content(&self, hash: &Hash32) -> Result<Option<Vec<u8>>, StoreError> {
        self.one(
            "SELECT bytes FROM content WHERE hash = ?1",
            [&hash.0[..]],
            |v| blob(v, "content.bytes").map(<[u8]>::to_vec),
        )
    }

    /// Deletes the content row with `secure_delete` on (freed pages are zeroed), then
    /// checkpoints and truncates the WAL so that no copy of the bytes stays in the WAL file.
    /// The truncation is best effort: it is skipped while another connection reads.
    fn redact(&mut self, hash: &Hash32) -> Result<bool, StoreError> {
        let n = self
            .conn
            .prepare_cached("DELETE FROM content WHERE hash = ?1")?
            .execute([&hash.0[..]])?;
        if n > 0 {
            // Best effort, after the delete has committed: a failure or a busy reader only
            // delays the truncation to a later checkpoint, so its result is not an error.
            let _ = self
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    r.get::<_, i64>(0)
                });
        }
        if n > 0 {
            self.redactions += 1;
        }
        Ok(n > 0)
    }

    /// `PRAGMA data_version` (it changes when another connection commits, a redaction
    /// included) with this handle's own redactions.
    fn content_epoch(&self) -> Result<Option<u64>, StoreError> {
        let others: i64 = self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?;
        Ok(Some(
            (others as u64)
                .wrapping_mul(1 << 32)
                .wrapping_add(self.redactions),
        ))
    }

    fn put_checkpoint(&mut self, size: u64, note: &[u8]) -> Result<(), StoreError> {
        check_range(size)?;
        self.conn
            .prepare_cached(
                "INSERT INTO checkpoints (size, note) VALUES (?1, ?2) \
                 ON CONFLICT (size) DO UPDATE SET note = excluded.note",
            )?
            .execute(params![to_i64(size)?, note])?;
        // In a group, the side file waits for the commit: it must never get ahead of the
        // entries it covers.
        if let Some(g) = &mut self.group {
            g.defer_side(size, note);
            return Ok(());
        }
        self.write_side(size, note)
    }

    fn begin_group(&mut self) -> Result<(), StoreError> {
        if self.group.is_none() {
            self.group = Some(group::Group::begin(&self.conn)?);
        }
        Ok(())
    }

    fn end_group(&mut self) -> Result<(), StoreError> {
        match self.group.take() {
            None => Ok(()),
            Some(g) => match g.commit(&self.conn)? {
                Some((size, note)) => self.write_side(size, &note),
                None => Ok(()),
            },
        }
    }

    fn durable_checkpoint(&self) -> Result<Option<Vec<u8>>, StoreError> {
        match &self.side {
            Some(side) => read_side(side),
            None => Ok(None),
        }
    }

    fn latest_checkpoint(&self) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT size, note FROM checkpoints ORDER BY size DESC LIMIT 1")?;
        let mut rows = stmt.query([])?;
        match rows.next()? {
            Some(row) => {
                let size = to_u64(
                    int(row.get_ref(0)?, "checkpoints.size")?,
                    "checkpoints.size",
                )?;
                let note = blob(row.get_ref(1)?, "checkpoints.note")?.to_vec();
                Ok(Some((size, note)))
            }
            None => Ok(None),
        }
    }

    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.one(
            "SELECT value FROM meta WHERE key = ?1",
            [key],
            |v| match v {
                ValueRef::Text(t) => {
                    String::from_utf8(t.to_vec()).map_err(|_| StoreError::Corrupt {
                        reason: format!("meta {key}: not UTF-8"),
                    })
                }
                _ => Err(StoreError::Corrupt {
                    reason: format!("meta {key}: not text"),
                }),
            },
        )
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        put_meta(&self.conn, key, value)
    }
}

/// One row of [`SqliteStore::entries_from`]: metadata, COSE bytes, stored content (`None` when
/// redacted).
pub type StoredEntry = (EntryMeta, Vec<u8>, Option<Vec<u8>>);

/// Largest side checkpoint file read: a signed note is far smaller
/// ([`crate::log::MAX_CHECKPOINT_BYTES`]); a bigger file is read in part and fails to verify.
const MAX_SIDE_BYTES: u64 = 64 * 1024;

/// The side checkpoint file's bytes, `None` when it does not exist.
fn read_side(path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    // A regular file only, never waited on (a FIFO there hung every hook, issue 25).
    Ok(super::durable::read_regular(path, MAX_SIDE_BYTES)?)
}

/// The tree size a checkpoint note states (its second line), unverified: used only to keep
/// the side file from moving back, never to trust anything.
fn note_size(note: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(note).ok()?;
    text.lines().nth(1)?.parse().ok()
}

impl SqliteStore {
    /// Where the last signed checkpoint of the ledger at `path` is kept outside the database:
    /// `path` with `.checkpoint` appended to its file name (`LEDGER.checkpoint` for `LEDGER`),
    /// written atomically (temporary file, fsync, rename, directory fsync) whenever a
    /// checkpoint is stored. `spec/storage.md` §6.
    pub fn side_checkpoint_path(path: &Path) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(".checkpoint");
        PathBuf::from(name)
    }

    /// Writes `note` (of tree size `size`) to the side checkpoint file unless it already holds
    /// a larger one (`spec/storage.md` §6).
    fn write_side(&self, size: u64, note: &[u8]) -> Result<(), StoreError> {
        // Outside the database, so that what the WAL loses cannot take it along.
        if let Some(side) = &self.side {
            let kept = read_side(side)?.and_then(|n| note_size(&n));
            if kept.is_none_or(|k| k < size) {
                super::durable::write_atomic(side, note)?;
            }
        }
        Ok(())
    }

    /// [`Store::append`], and with `meta` also the setting write, in one immediate
    /// transaction: both are durable together or neither is.
    fn append_in_tx(
        &mut self,
        batch: &[NewEntry<'_>],
        meta: Option<(&str, &str)>,
    ) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let tx = group::WriteTx::begin(&mut self.conn, self.group.is_some())?;
        let size = tree_size_of(&tx)?;
        check_batch(size, batch)?;
        {
            let mut ins_entry = tx.prepare_cached(
                "INSERT INTO entries (idx, id, cose, kind, label, content_hash, tag, context) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            let mut ins_content = tx.prepare_cached(
                "INSERT INTO content (hash, bytes) VALUES (?1, ?2) ON CONFLICT (hash) DO NOTHING",
            )?;
            let mut ins_hash =
                tx.prepare_cached("INSERT INTO tree_hashes (idx, hash) VALUES (?1, ?2)")?;
            for e in batch {
                let content_hash = e.content.as_ref().map(|(h, _)| &h.0[..]);
                let n = ins_entry
                    .execute(params![
                        to_i64(e.index)?,
                        &e.id.0[..],
                        e.cose,
                        to_i64(e.kind.code())?,
                        i64::from(e.label.code()),
                        content_hash,
                        e.tag.as_ref().map(|t| &t[..]),
                        e.context.as_ref().map(|c| &c.0[..]),
                    ])
                    .map_err(|err| duplicate_or(err, e.id))?;
                // Every insert inserted: a trigger with RAISE(IGNORE) drops a row silently
                // (issue 25; the schema check refuses foreign triggers too).
                if n != 1 {
                    return Err(StoreError::Corrupt {
                        reason: format!(
                            "entry {} was not inserted ({n} rows): the schema was changed",
                            e.index
                        ),
                    });
                }
                if let Some((h, bytes)) = e.content {
                    ins_content.execute(params![&h.0[..], bytes])?;
                }
                // Leaf e.index's hashes go at consecutive indexes from stored_hash_index(0, n).
                for (at, h) in (leaf_hash_index(e.index)?..).zip(&e.hashes) {
                    if ins_hash.execute(params![to_i64(at)?, &h[..]])? != 1 {
                        return Err(StoreError::Corrupt {
                            reason: format!(
                                "tree hash {at} was not inserted: the schema was changed"
                            ),
                        });
                    }
                }
            }
        }
        if let Some((key, value)) = meta {
            put_meta(&tx, key, value)?;
        }
        tx.commit()?;
        Ok(())
    }
}
