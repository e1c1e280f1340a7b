//! Storage conformance (`spec/storage.md`): one generic suite, [`conformance`], run against every
//! [`Store`] backend, a self-test showing the suite catches broken stores, and SQLite file tests
//! (reopen, foreign files, truncation, crash-free rollback, corrupt rows).

use memlineage::lineage::Label;
use memlineage::record::{EntryId, Hash32, Kind};
#[cfg(feature = "postgres")]
use memlineage::store::PgStore;
use memlineage::store::{
    EntryMeta, MemoryStore, NewEntry, RowWalk, SqliteStore, Store, StoreError, FIRST_EFFECT_KIND,
    MAX_INDEX,
};
use sha2::{Digest, Sha256};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use tlog_tiles::{Hash, HashReader};

#[cfg(feature = "postgres")]
#[path = "common/pg_support.rs"]
mod pg_support;

// ------------------------------------------------------------------------------------------
// The suite
// ------------------------------------------------------------------------------------------

/// Runs every backend-independent check; each check takes fresh stores from `make`.
fn conformance<S: Store>(make: impl Fn() -> S) {
    check_append_and_read_back(&make);
    check_rejects_non_contiguous(&make);
    check_rejects_duplicates(&make);
    check_rejects_wrong_hash_count(&make);
    check_empty_batch(&make);
    check_content_dedup_and_redaction(&make);
    check_checkpoints(&make);
    check_meta(&make);
    check_context_candidates(&make);
}

/// `context_candidates` lists, in index order and below the bound, the rows stored with the
/// context hash asked for and the rows stored without one (`spec/storage.md` §4.5); a
/// backend may list more (the trait's default lists every row), never fewer.
fn check_context_candidates<S: Store>(make: &impl Fn() -> S) {
    let (s, model) = filled(make, 23);
    for ctx in [0u8, 1, 2] {
        let want_ctx = Hash32::digest(&[ctx]);
        for below in [0, 7, 23, 100] {
            let got = s.context_candidates(&want_ctx, below).unwrap();
            let must: Vec<u64> = model
                .entries
                .iter()
                .filter(|e| e.index < below && e.context.is_none_or(|c| c == want_ctx))
                .map(|e| e.index)
                .collect();
            assert!(got.windows(2).all(|w| w[0] < w[1]), "{got:?} not in order");
            assert!(got.iter().all(|i| *i < below), "{got:?} past {below}");
            assert!(
                must.iter().all(|i| got.contains(i)),
                "context {ctx} below {below}: {got:?} misses some of {must:?}"
            );
        }
    }
}

#[test]
fn conformance_memory() {
    conformance(MemoryStore::new);
}

#[test]
fn conformance_sqlite_in_memory() {
    conformance(|| SqliteStore::open_in_memory().unwrap());
}

#[test]
fn conformance_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let n = Cell::new(0u32);
    conformance(|| {
        n.set(n.get() + 1);
        SqliteStore::open(&dir.path().join(format!("ledger-{}.db", n.get()))).unwrap()
    });
}

/// The same suite on PostgreSQL (`DATABASE_URL`), one fresh ledger schema per store.
#[cfg(feature = "postgres")]
#[test]
fn conformance_postgres() {
    let url = pg_support::database_url("conformance_postgres");
    let base = pg_support::fresh_ledger("conf");
    let n = Cell::new(0u32);
    conformance(|| {
        n.set(n.get() + 1);
        PgStore::connect(&url, &format!("{base}_{}", n.get())).unwrap()
    });
}

/// PostgreSQL checks the given tree hashes against the ids (it integrates the batch itself):
/// a batch with the right number of wrong hashes is refused and changes nothing.
#[cfg(feature = "postgres")]
#[test]
fn postgres_refuses_wrong_hashes() {
    let url = pg_support::database_url("postgres_refuses_wrong_hashes");
    let mk = || PgStore::connect(&url, &pg_support::fresh_ledger("wronghash")).unwrap();
    let (mut s, model) = filled(&mk, 3);
    let mut batch = model.make(2, "wrong");
    batch[1].hashes[0][0] ^= 1;
    assert!(matches!(
        s.append(&lend(&batch)),
        Err(StoreError::WrongHashes { index: 4 })
    ));
    model.assert_same(&s);
    assert_absent(&s, &batch);
}

/// Opening refuses a bad ledger name, an unreachable server and a schema that holds other
/// tables, with typed errors and without touching the foreign tables; reopening a ledger
/// sees what was written.
#[cfg(feature = "postgres")]
#[test]
fn postgres_open_errors_and_reopen() {
    let url = pg_support::database_url("postgres_open_errors_and_reopen");
    assert!(matches!(
        PgStore::connect(&url, "Bad-Name"),
        Err(StoreError::BadLedgerName { .. })
    ));
    assert!(matches!(
        PgStore::connect("postgresql:///x?host=/nonexistent&port=1", "ok"),
        Err(StoreError::Postgres(_))
    ));
    let foreign = pg_support::fresh_ledger("foreign");
    let sql = format!("CREATE SCHEMA {foreign}; CREATE TABLE {foreign}.t (x int)");
    pg_support::run_ok(std::process::Command::new("psql").args([url.as_str(), "-qc", &sql]));
    assert!(matches!(
        PgStore::connect(&url, &foreign),
        Err(StoreError::Corrupt { .. })
    ));
    let name = pg_support::fresh_ledger("reopen");
    let (s, model) = filled(&|| PgStore::connect(&url, &name).unwrap(), 9);
    drop(s);
    model.assert_same(&PgStore::connect(&url, &name).unwrap());
}

/// Batches of several sizes; after each, everything reads back and the tree hash over the
/// stored hashes equals a naive RFC 6962 root over the entry ids.
fn check_append_and_read_back<S: Store>(make: &impl Fn() -> S) {
    let mut s = make();
    assert_eq!(s.tree_size().unwrap(), 0);
    assert_eq!(s.metas_from(0).unwrap(), vec![]);
    assert_eq!(s.entry_bytes(0).unwrap(), None);
    assert!(matches!(
        s.read_hashes(&[0]),
        Err(StoreError::MissingHash(0))
    ));
    assert_eq!(s.latest_checkpoint().unwrap(), None);

    let mut model = Model::default();
    for (round, n) in [1, 2, 3, 5, 7, 1, 13].into_iter().enumerate() {
        let batch = model.make(n, &format!("read-{round}"));
        s.append(&lend(&batch)).unwrap();
        model.commit(batch);
        model.assert_same(&s);
    }
    assert_eq!(s.tree_size().unwrap(), 32);
    // Out-of-order and repeated reads.
    let h = s.read_hashes(&[5, 0, 5, 1]).unwrap();
    assert_eq!(
        h,
        vec![
            model.hashes[5],
            model.hashes[0],
            model.hashes[5],
            model.hashes[1]
        ]
    );
}

/// Batches that skip or overlap indexes give `NotContiguous { got, want }` and change nothing.
fn check_rejects_non_contiguous<S: Store>(make: &impl Fn() -> S) {
    let mut empty = make();
    let batch = shifted(Model::default().make(2, "gap0"), 1);
    assert_eq!(
        kind_of(empty.append(&lend(&batch))),
        Got::NotContiguous { got: 1, want: 0 }
    );
    assert_eq!(empty.tree_size().unwrap(), 0);

    let (mut s, mut model) = filled(make, 5);
    let ahead: Mutate = |b| shifted(b, 1);
    let behind: Mutate = |b| shifted(b, -1);
    let gap: Mutate = |mut b| {
        b[1].index += 1;
        b
    };
    let cases = [
        ("ahead", ahead, Got::NotContiguous { got: 6, want: 5 }),
        ("behind", behind, Got::NotContiguous { got: 4, want: 5 }),
        ("gap", gap, Got::NotContiguous { got: 7, want: 6 }),
    ];
    for (name, mutate, want) in cases {
        let batch = mutate(model.make(3, name));
        assert_eq!(kind_of(s.append(&lend(&batch))), want, "{name}");
        model.assert_same(&s);
        assert_absent(&s, &batch);
    }
    append_more(&mut s, &mut model);
}

/// An id already stored, or repeated within the batch, gives `Duplicate(id)` and changes
/// nothing, wherever it sits in the batch.
fn check_rejects_duplicates<S: Store>(make: &impl Fn() -> S) {
    let (mut s, mut model) = filled(make, 6);
    let stored = model.entries[2].clone();

    // Second element repeats a stored entry: SQLite fails midway through the transaction.
    let mut batch = model.make(3, "dup-stored");
    batch[1].id = stored.id;
    batch[1].cose = stored.cose.clone();
    assert_eq!(kind_of(s.append(&lend(&batch))), Got::Duplicate(stored.id));
    model.assert_same(&s);
    assert_absent(&s, &[batch[0].clone(), batch[2].clone()]);

    // First element repeats the last stored entry.
    let last = model.entries[5].clone();
    let mut batch = model.make(1, "dup-last");
    batch[0].id = last.id;
    assert_eq!(kind_of(s.append(&lend(&batch))), Got::Duplicate(last.id));
    model.assert_same(&s);

    // Third element repeats the first element of the same batch.
    let mut batch = model.make(3, "dup-within");
    batch[2].id = batch[0].id;
    assert_eq!(
        kind_of(s.append(&lend(&batch))),
        Got::Duplicate(batch[0].id)
    );
    model.assert_same(&s);
    assert_absent(&s, &batch[..2]);

    append_more(&mut s, &mut model);
}

/// A batch entry with too few or too many tree hashes gives `HashCount` and changes nothing.
fn check_rejects_wrong_hash_count<S: Store>(make: &impl Fn() -> S) {
    let (mut s, mut model) = filled(make, 3);
    // Leaf 3 completes two subtrees: 3 hashes. Leaf 4 completes none: 1 hash.
    let mut batch = model.make(2, "count-short");
    assert_eq!((batch[0].hashes.len(), batch[1].hashes.len()), (3, 1));
    batch[0].hashes.pop();
    assert_eq!(
        kind_of(s.append(&lend(&batch))),
        Got::HashCount {
            index: 3,
            got: 2,
            want: 3
        }
    );
    model.assert_same(&s);

    let mut batch = model.make(2, "count-long");
    batch[1].hashes.push([7; 32]);
    assert_eq!(
        kind_of(s.append(&lend(&batch))),
        Got::HashCount {
            index: 4,
            got: 2,
            want: 1
        }
    );
    model.assert_same(&s);
    assert_absent(&s, &batch);

    let mut batch = model.make(1, "count-none");
    batch[0].hashes.clear();
    assert_eq!(
        kind_of(s.append(&lend(&batch))),
        Got::HashCount {
            index: 3,
            got: 0,
            want: 3
        }
    );
    model.assert_same(&s);
    append_more(&mut s, &mut model);
}

/// An empty batch is accepted and changes nothing.
fn check_empty_batch<S: Store>(make: &impl Fn() -> S) {
    let mut s = make();
    s.append(&[]).unwrap();
    assert_eq!(s.tree_size().unwrap(), 0);
    let (mut s, model) = filled(make, 4);
    s.append(&[]).unwrap();
    model.assert_same(&s);
}

/// Content is keyed by its hash (first bytes stored win); redaction removes the bytes and
/// nothing else; content appended again after redaction is stored again.
fn check_content_dedup_and_redaction<S: Store>(make: &impl Fn() -> S) {
    let mut s = make();
    let mut model = Model::default();
    let alpha = b"alpha: the same content written twice".to_vec();
    let beta = b"beta".to_vec();
    let (ha, hb) = (Hash32::digest(&alpha), Hash32::digest(&beta));
    let mut batch = model.make(5, "content");
    batch[0].content = Some((ha, alpha.clone()));
    batch[1].content = Some((ha, alpha.clone()));
    batch[2].content = Some((hb, beta.clone()));
    batch[3].content = None;
    // Same hash, other bytes: the store keeps the first bytes it saw for a hash.
    batch[4].content = Some((ha, b"not alpha".to_vec()));
    s.append(&lend(&batch)).unwrap();
    model.commit(batch);

    assert_eq!(s.content(&ha).unwrap(), Some(alpha.clone()));
    assert_eq!(s.content(&hb).unwrap(), Some(beta.clone()));
    assert_eq!(s.content(&Hash32::digest(b"never stored")).unwrap(), None);
    // Content beside each entry, by leaf index.
    let first = model.entries.len() as u64 - 5;
    assert_eq!(s.content_at(first).unwrap(), Some(alpha.clone()));
    assert_eq!(s.content_at(first + 2).unwrap(), Some(beta.clone()));
    assert_eq!(s.content_at(first + 3).unwrap(), None, "no content given");
    assert_eq!(
        s.content_at(first + 4).unwrap(),
        Some(alpha.clone()),
        "dedup: first bytes"
    );
    assert_eq!(s.content_at(u64::MAX).unwrap(), None);

    assert!(s.redact(&ha).unwrap());
    assert_eq!(s.content_at(first).unwrap(), None, "redacted");
    assert_eq!(s.content(&ha).unwrap(), None);
    assert!(!s.redact(&ha).unwrap(), "second redaction finds nothing");
    assert!(!s.redact(&Hash32::digest(b"never stored")).unwrap());
    assert_eq!(
        s.content(&hb).unwrap(),
        Some(beta),
        "other content untouched"
    );
    // Entries, metas and hashes are untouched (skip the content check for redacted `ha`).
    model.redacted.push(ha);
    model.assert_same(&s);

    let mut again = model.make(1, "content-again");
    again[0].content = Some((ha, alpha.clone()));
    s.append(&lend(&again)).unwrap();
    model.redacted.clear();
    model.commit(again);
    assert_eq!(s.content(&ha).unwrap(), Some(alpha));
}

/// `latest_checkpoint` is the largest size; `put_checkpoint` upserts by size.
fn check_checkpoints<S: Store>(make: &impl Fn() -> S) {
    let mut s = make();
    assert_eq!(s.latest_checkpoint().unwrap(), None);
    let note = |t: &str| t.as_bytes().to_vec();
    s.put_checkpoint(5, b"five").unwrap();
    s.put_checkpoint(3, b"three").unwrap();
    assert_eq!(s.latest_checkpoint().unwrap(), Some((5, note("five"))));
    s.put_checkpoint(10, b"ten").unwrap();
    assert_eq!(s.latest_checkpoint().unwrap(), Some((10, note("ten"))));
    s.put_checkpoint(10, b"ten, re-signed").unwrap();
    assert_eq!(
        s.latest_checkpoint().unwrap(),
        Some((10, note("ten, re-signed")))
    );
    s.put_checkpoint(0, b"").unwrap();
    assert_eq!(
        s.latest_checkpoint().unwrap(),
        Some((10, note("ten, re-signed")))
    );
    s.put_checkpoint(MAX_INDEX, b"max").unwrap();
    assert_eq!(
        s.latest_checkpoint().unwrap(),
        Some((MAX_INDEX, note("max")))
    );
    assert_eq!(
        kind_of(s.put_checkpoint(MAX_INDEX + 1, b"too big")),
        Got::OutOfRange(MAX_INDEX + 1)
    );
    assert_eq!(
        s.latest_checkpoint().unwrap(),
        Some((MAX_INDEX, note("max")))
    );
    assert_eq!(s.tree_size().unwrap(), 0, "checkpoints are not entries");
}

/// Settings: absent, set, overwritten, independent keys, empty and non-ASCII text.
fn check_meta<S: Store>(make: &impl Fn() -> S) {
    let mut s = make();
    assert_eq!(s.meta("origin").unwrap(), None);
    s.set_meta("origin", "example.com/log").unwrap();
    assert_eq!(
        s.meta("origin").unwrap().as_deref(),
        Some("example.com/log")
    );
    s.set_meta("origin", "example.com/other").unwrap();
    assert_eq!(
        s.meta("origin").unwrap().as_deref(),
        Some("example.com/other")
    );
    assert_eq!(s.meta("tau").unwrap(), None);
    s.set_meta("tau", "").unwrap();
    assert_eq!(s.meta("tau").unwrap().as_deref(), Some(""));
    s.set_meta("τ", "0.5 — ½").unwrap();
    assert_eq!(s.meta("τ").unwrap().as_deref(), Some("0.5 — ½"));
    assert_eq!(
        s.meta("origin").unwrap().as_deref(),
        Some("example.com/other")
    );
}

// ------------------------------------------------------------------------------------------
// The suite has teeth: broken stores fail it
// ------------------------------------------------------------------------------------------

/// Ways to break a [`MemoryStore`] from the outside.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Appends entry by entry: a failing batch leaves its prefix.
    PartialAppend,
    /// Returns the most recently stored checkpoint, not the largest.
    NewestCheckpoint,
    /// Reads the neighbouring stored hash.
    ShiftedHashes,
    /// Reports redaction without deleting.
    IgnoreRedact,
    /// Starts `metas_from` one entry early.
    MetasOffByOne,
    /// Forgets settings.
    ForgetMeta,
    /// Accepts an entry with any number of hashes by padding or truncating them.
    FixHashCount,
}

struct Faulty {
    inner: MemoryStore,
    fault: Fault,
    newest: Option<(u64, Vec<u8>)>,
}

impl Store for Faulty {
    fn tree_size(&self) -> Result<u64, StoreError> {
        self.inner.tree_size()
    }
    fn append(&mut self, batch: &[NewEntry<'_>]) -> Result<(), StoreError> {
        match self.fault {
            Fault::PartialAppend => {
                for e in batch {
                    self.inner.append(std::slice::from_ref(e))?;
                }
                Ok(())
            }
            Fault::FixHashCount => {
                let fixed: Vec<NewEntry<'_>> = batch
                    .iter()
                    .map(|e| {
                        let mut e = e.clone();
                        let want = 1 + (e.index + 1).trailing_zeros() as usize;
                        e.hashes.resize(want, [0; 32]);
                        e
                    })
                    .collect();
                self.inner.append(&fixed)
            }
            _ => self.inner.append(batch),
        }
    }
    fn entry_bytes(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.entry_bytes(index)
    }
    fn index_of(&self, id: &EntryId) -> Result<Option<u64>, StoreError> {
        self.inner.index_of(id)
    }
    fn metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError> {
        match self.fault {
            Fault::MetasOffByOne => self.inner.metas_from(from.saturating_sub(1)),
            _ => self.inner.metas_from(from),
        }
    }
    fn meta_at(&self, index: u64) -> Result<Option<EntryMeta>, StoreError> {
        match self.fault {
            Fault::MetasOffByOne => self.inner.meta_at(index.saturating_sub(1)),
            _ => self.inner.meta_at(index),
        }
    }
    fn set_tags(
        &mut self,
        tags: &[(u64, [u8; 32])],
        key: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        self.inner.set_tags(tags, key, value)
    }
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, StoreError> {
        match self.fault {
            Fault::ShiftedHashes => {
                let shifted: Vec<u64> = indexes.iter().map(|i| i ^ 1).collect();
                self.inner.read_hashes(&shifted)
            }
            _ => self.inner.read_hashes(indexes),
        }
    }
    fn content_at(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.content_at(index)
    }
    fn content(&self, hash: &Hash32) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.content(hash)
    }
    fn redact(&mut self, hash: &Hash32) -> Result<bool, StoreError> {
        match self.fault {
            Fault::IgnoreRedact => Ok(self.inner.content(hash)?.is_some()),
            _ => self.inner.redact(hash),
        }
    }
    fn put_checkpoint(&mut self, size: u64, note: &[u8]) -> Result<(), StoreError> {
        self.inner.put_checkpoint(size, note)?;
        self.newest = Some((size, note.to_vec()));
        Ok(())
    }
    fn latest_checkpoint(&self) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        match self.fault {
            Fault::NewestCheckpoint => Ok(self.newest.clone()),
            _ => self.inner.latest_checkpoint(),
        }
    }
    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        match self.fault {
            Fault::ForgetMeta => Ok(None),
            _ => self.inner.meta(key),
        }
    }
    fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.inner.set_meta(key, value)
    }
}

#[test]
fn conformance_catches_broken_stores() {
    let faults = [
        Fault::PartialAppend,
        Fault::NewestCheckpoint,
        Fault::ShiftedHashes,
        Fault::IgnoreRedact,
        Fault::MetasOffByOne,
        Fault::ForgetMeta,
        Fault::FixHashCount,
    ];
    for fault in faults {
        let run = catch_unwind(AssertUnwindSafe(|| {
            conformance(|| Faulty {
                inner: MemoryStore::new(),
                fault,
                newest: None,
            })
        }));
        assert!(
            run.is_err(),
            "conformance passed a store with fault {fault:?}"
        );
    }
}

// ------------------------------------------------------------------------------------------
// SQLite files
// ------------------------------------------------------------------------------------------

/// Everything written (entries, hashes, content, redaction, checkpoints, settings) reads back
/// the same after the store is dropped and the file opened again.
#[test]
fn sqlite_data_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let mut model = Model::default();
    let redacted;
    {
        let mut s = SqliteStore::open(&path).unwrap();
        for n in [3, 1, 9] {
            let batch = model.make(n, "reopen");
            s.append(&lend(&batch)).unwrap();
            model.commit(batch);
        }
        redacted = model.entries[0].content.as_ref().unwrap().0;
        assert!(s.redact(&redacted).unwrap());
        s.put_checkpoint(4, b"cp4").unwrap();
        s.put_checkpoint(13, b"cp13").unwrap();
        s.set_meta("origin", "reopen.example").unwrap();
    }
    model.redacted.push(redacted);
    for _ in 0..2 {
        let mut s = SqliteStore::open(&path).unwrap();
        model.assert_same(&s);
        assert_eq!(s.content(&redacted).unwrap(), None);
        assert_eq!(s.latest_checkpoint().unwrap(), Some((13, b"cp13".to_vec())));
        assert_eq!(s.meta("origin").unwrap().as_deref(), Some("reopen.example"));
        let batch = model.make(2, "after-reopen");
        s.append(&lend(&batch)).unwrap();
        model.commit(batch);
    }
}

/// A batch that fails midway (second element's id already stored) leaves nothing of itself in
/// the file, as seen by a fresh connection.
#[test]
fn sqlite_failed_batch_leaves_nothing_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let (batch, model) = {
        let mut s = SqliteStore::open(&path).unwrap();
        let mut model = Model::default();
        let base = model.make(4, "base");
        s.append(&lend(&base)).unwrap();
        model.commit(base);
        let mut batch = model.make(3, "doomed");
        batch[1].id = model.entries[1].id;
        assert_eq!(
            kind_of(s.append(&lend(&batch))),
            Got::Duplicate(model.entries[1].id)
        );
        (batch, model)
    };
    let s = SqliteStore::open(&path).unwrap();
    model.assert_same(&s);
    assert_absent(&s, &[batch[0].clone(), batch[2].clone()]);
    let db = rusqlite::Connection::open(&path).unwrap();
    let count = |t: &str| -> i64 {
        db.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count("entries"), 4);
    assert_eq!(
        count("tree_hashes") as u64,
        tlog_tiles::stored_hash_count(4)
    );
}

/// A file that is not SQLite is refused with `NotALedger` and left byte-identical, with no
/// side files created.
#[test]
fn sqlite_refuses_non_sqlite_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Vec<u8>); 4] = [
        ("text.txt", b"just some notes, not a database\n".repeat(200)),
        ("one-byte", vec![0x53]),
        ("zeros", vec![0; 8192]),
        ("fake-header", {
            let mut b = b"SQLite format 3\0".to_vec();
            b.extend_from_slice(&[0xff; 200]);
            b
        }),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let before = listing(dir.path());
        let got = kind_of(SqliteStore::open(&path));
        assert!(
            matches!(got, Got::NotALedger | Got::Corrupt),
            "{name}: got {got:?}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} modified");
        assert_eq!(listing(dir.path()), before, "{name}: side files");
    }
    // The plain text file is the typical case: it must be named precisely.
    assert_eq!(
        kind_of(SqliteStore::open(&dir.path().join("text.txt"))),
        Got::NotALedger
    );
}

/// A SQLite database without the ledger marker (with tables, or valid but empty) is refused
/// with `NotALedger` and left byte-identical.
#[test]
fn sqlite_refuses_foreign_database_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let with_tables = dir.path().join("app.db");
    {
        let db = rusqlite::Connection::open(&with_tables).unwrap();
        db.execute_batch(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
             INSERT INTO meta VALUES ('schema_version', '1');
             CREATE TABLE entries (idx INTEGER PRIMARY KEY, id BLOB);",
        )
        .unwrap();
    }
    let empty_db = dir.path().join("empty.db");
    {
        let db = rusqlite::Connection::open(&empty_db).unwrap();
        db.execute_batch("VACUUM").unwrap();
    }
    assert!(std::fs::metadata(&empty_db).unwrap().len() > 0);
    let wal_db = dir.path().join("wal.db");
    {
        let db = rusqlite::Connection::open(&wal_db).unwrap();
        db.pragma_update(None, "journal_mode", "WAL").unwrap();
        db.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    for path in [with_tables, empty_db, wal_db] {
        let bytes = std::fs::read(&path).unwrap();
        let before = listing(dir.path());
        assert_eq!(
            kind_of(SqliteStore::open(&path)),
            Got::NotALedger,
            "{path:?}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{path:?} modified");
        assert_eq!(listing(dir.path()), before, "{path:?}: side files");
    }
}

/// A ledger of another schema version is refused with `SchemaVersion` and left unchanged.
#[test]
fn sqlite_refuses_other_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    drop(SqliteStore::open(&path).unwrap());
    {
        let db = rusqlite::Connection::open(&path).unwrap();
        db.pragma_update(None, "user_version", 2).unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(
        kind_of(SqliteStore::open(&path)),
        Got::SchemaVersion { got: 2, want: 1 }
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

/// A ledger file cut short, at any of several lengths, is refused on open with `Corrupt`
/// (`NotALedger` when not even the SQLite magic is left), never a panic.
#[test]
fn sqlite_truncated_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let mut model = Model::default();
    {
        let mut s = SqliteStore::open(&path).unwrap();
        let mut batch = model.make(300, "trunc");
        for e in &mut batch {
            e.cose.resize(600, 0xa5);
        }
        s.append(&lend(&batch)).unwrap();
        model.commit(batch);
    }
    let full = std::fs::read(&path).unwrap();
    assert!(
        full.len() > 100_000,
        "ledger too small to cut: {}",
        full.len()
    );
    let len = full.len();
    let cuts = [
        1,
        50,
        99,
        100,
        4096,
        4097,
        len / 3,
        len / 2,
        len - 4096,
        len - 1000,
        len - 1,
    ];
    for cut in cuts {
        let p = dir.path().join(format!("cut-{cut}.db"));
        std::fs::write(&p, &full[..cut]).unwrap();
        let got = kind_of(SqliteStore::open(&p));
        let want = if cut < 50 {
            Got::NotALedger
        } else {
            Got::Corrupt
        };
        assert_eq!(got, want, "cut at {cut} of {len}");
    }
    // The uncut copy still opens and reads back.
    let p = dir.path().join("uncut.db");
    std::fs::write(&p, &full).unwrap();
    model.assert_same(&SqliteStore::open(&p).unwrap());
}

/// A zero-byte existing file (as `tempfile` creates) becomes a new ledger.
#[test]
fn sqlite_empty_file_becomes_ledger() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let mut s = SqliteStore::open(file.path()).unwrap();
    let mut model = Model::default();
    let batch = model.make(2, "empty-file");
    s.append(&lend(&batch)).unwrap();
    model.commit(batch);
    drop(s);
    model.assert_same(&SqliteStore::open(file.path()).unwrap());
}

/// The ledger is an ordinary SQLite file in WAL mode with the documented tables and marker.
#[test]
fn sqlite_file_is_plain_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let mut model = Model::default();
    {
        let mut s = SqliteStore::open(&path).unwrap();
        let batch = model.make(5, "plain");
        s.append(&lend(&batch)).unwrap();
        model.commit(batch);
        s.put_checkpoint(5, b"note").unwrap();
        s.set_meta("origin", "o").unwrap();
    }
    let db = rusqlite::Connection::open(&path).unwrap();
    let text = |sql: &str| -> String { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    let int = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(text("PRAGMA integrity_check"), "ok");
    assert_eq!(text("PRAGMA journal_mode"), "wal");
    assert_eq!(int("PRAGMA application_id"), 0x4D4C_4E47);
    assert_eq!(int("PRAGMA user_version"), 1);
    let columns = |t: &str| -> Vec<String> {
        let mut st = db.prepare(&format!("PRAGMA table_info({t})")).unwrap();
        st.query_map([], |r| r.get(1))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(columns("meta"), ["key", "value"]);
    assert_eq!(
        columns("entries"),
        [
            "idx",
            "id",
            "cose",
            "kind",
            "label",
            "content_hash",
            "tag",
            "context"
        ]
    );
    assert_eq!(columns("content"), ["hash", "bytes"]);
    assert_eq!(columns("tree_hashes"), ["idx", "hash"]);
    assert_eq!(columns("checkpoints"), ["size", "note"]);
    let e = &model.entries[3];
    let (id, kind, label): (Vec<u8>, i64, i64) = db
        .query_row(
            "SELECT id, kind, label FROM entries WHERE idx = 3",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(id, e.id.0);
    assert_eq!(kind as u64, e.kind.code());
    assert_eq!(label, i64::from(e.label.code()));
}

/// After `redact`, the content bytes are nowhere in the database or WAL file.
#[test]
fn sqlite_redaction_scrubs_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let secret = b"SECRET-7f3a9c: the user's medical record".repeat(50);
    let h = Hash32::digest(&secret);
    let mut s = SqliteStore::open(&path).unwrap();
    let mut model = Model::default();
    let mut batch = model.make(3, "scrub");
    batch[1].content = Some((h, secret.clone()));
    s.append(&lend(&batch)).unwrap();
    model.commit(batch);
    let needle = b"SECRET-7f3a9c";
    assert!(
        files_contain(dir.path(), needle),
        "secret not written at all"
    );
    assert!(s.redact(&h).unwrap());
    assert!(
        !files_contain(dir.path(), needle),
        "secret left in an open ledger's files"
    );
    drop(s);
    assert!(
        !files_contain(dir.path(), needle),
        "secret left after close"
    );
}

/// Two handles on one file: each sees the other's appends, and a stale writer is refused.
#[test]
fn sqlite_two_handles_share_one_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let mut a = SqliteStore::open(&path).unwrap();
    let mut b = SqliteStore::open(&path).unwrap();
    let mut model = Model::default();
    let first = model.make(3, "a");
    let stale = model.make(2, "b-stale");
    a.append(&lend(&first)).unwrap();
    model.commit(first);
    model.assert_same(&b);
    assert_eq!(
        kind_of(b.append(&lend(&stale))),
        Got::NotContiguous { got: 0, want: 3 }
    );
    let second = model.make(2, "b");
    b.append(&lend(&second)).unwrap();
    model.commit(second);
    model.assert_same(&a);
}

/// Environment variable naming the ledger [`sqlite_crash_child`] writes to.
const CRASH_LEDGER: &str = "MEMLINEAGE_CRASH_LEDGER";

/// A writer process killed (SIGKILL) in the middle of appending loses no acknowledged batch
/// and leaves a ledger that opens, reads back in full and hashes to the RFC 6962 root of its
/// entries (no half batch).
#[test]
fn sqlite_acknowledged_appends_survive_kill() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sqlite_crash_child", "--ignored", "--nocapture"])
        .env(CRASH_LEDGER, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = 0u64;
    for line in BufReader::new(stdout).lines() {
        if let Some(n) = line.unwrap().strip_prefix("ACK ") {
            acked = n.parse().unwrap();
            if acked >= 120 {
                break;
            }
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(acked >= 120, "child stopped early at {acked}");

    let s = SqliteStore::open(&path).unwrap();
    let size = s.tree_size().unwrap();
    assert!(size >= acked, "acknowledged {acked}, found {size}");
    assert_eq!(size % 3, 0, "half a batch of 3 stored: size {size}");
    let metas = s.metas_from(0).unwrap();
    assert_eq!(metas.len() as u64, size);
    for m in &metas {
        let cose = s.entry_bytes(m.index).unwrap().unwrap();
        assert_eq!(EntryId::of_cose(&cose), m.id, "entry {}", m.index);
    }
    let ids: Vec<[u8; 32]> = metas.iter().map(|m| m.id.0).collect();
    let root = tlog_tiles::tree_hash(size, &Reader(&s)).unwrap();
    assert_eq!(root.0, naive_root(&ids));
}

/// The writer killed by [`sqlite_acknowledged_appends_survive_kill`]; does nothing when run
/// on its own.
#[test]
#[ignore = "child process of sqlite_acknowledged_appends_survive_kill"]
fn sqlite_crash_child() {
    let Some(path) = std::env::var_os(CRASH_LEDGER) else {
        return;
    };
    let mut s = SqliteStore::open(Path::new(&path)).unwrap();
    let mut model = Model::default();
    for round in 0..10_000 {
        let batch = model.make(3, &format!("crash-{round}"));
        s.append(&lend(&batch)).unwrap();
        model.commit(batch);
        println!("ACK {}", model.entries.len());
    }
}

/// Rows that no writer produces (written behind the store's back) give `Corrupt`, not a panic.
#[test]
fn sqlite_corrupt_rows_are_rejected() {
    let cases: [(&str, &str); 9] = [
        ("unknown kind", "UPDATE entries SET kind = 99 WHERE idx = 2"),
        (
            "negative kind",
            "UPDATE entries SET kind = -1 WHERE idx = 2",
        ),
        (
            "unknown label",
            "UPDATE entries SET label = 4 WHERE idx = 2",
        ),
        ("huge label", "UPDATE entries SET label = 300 WHERE idx = 2"),
        (
            "text kind",
            "UPDATE entries SET kind = 'fact' WHERE idx = 2",
        ),
        ("short id", "UPDATE entries SET id = x'0102' WHERE idx = 2"),
        ("text id", "UPDATE entries SET id = 'abc' WHERE idx = 2"),
        ("gap", "DELETE FROM entries WHERE idx = 2"),
        (
            "short hash",
            "UPDATE tree_hashes SET hash = x'00' WHERE idx = 1",
        ),
    ];
    for (name, sql) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let mut model = Model::default();
        {
            let mut s = SqliteStore::open(&path).unwrap();
            let batch = model.make(5, "corrupt");
            s.append(&lend(&batch)).unwrap();
            model.commit(batch);
        }
        {
            let db = rusqlite::Connection::open(&path).unwrap();
            db.pragma_update(None, "ignore_check_constraints", true)
                .unwrap();
            db.execute_batch(sql).unwrap();
        }
        let got = SqliteStore::open(&path).and_then(|s| read_everything(&s, &model));
        assert_eq!(kind_of(got), Got::Corrupt, "{name}");
    }
}

/// Tree hashes missing at the end (or extra) are noticed on open.
#[test]
fn sqlite_hash_count_mismatch_is_noticed_on_open() {
    for sql in [
        "DELETE FROM tree_hashes WHERE idx = (SELECT max(idx) FROM tree_hashes)",
        "INSERT INTO tree_hashes VALUES (1000, zeroblob(32))",
        "DELETE FROM entries WHERE idx = 4",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        {
            let mut s = SqliteStore::open(&path).unwrap();
            let batch = Model::default().make(5, "count");
            s.append(&lend(&batch)).unwrap();
        }
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
        assert_eq!(kind_of(SqliteStore::open(&path)), Got::Corrupt, "{sql}");
    }
}

/// Every error message names its cause (each new `Display` text once).
#[test]
fn store_error_messages() {
    let msgs = [
        (
            StoreError::HashCount {
                index: 3,
                got: 2,
                want: 3,
            }
            .to_string(),
            "entry 3: 2 tree hashes, want 3",
        ),
        (
            StoreError::OutOfRange {
                got: u64::MAX,
                max: MAX_INDEX,
            }
            .to_string(),
            "value 18446744073709551615 out of range, max 9223372036854775807",
        ),
        (
            StoreError::NotALedger {
                path: PathBuf::from("/tmp/x.db"),
            }
            .to_string(),
            "/tmp/x.db: not a memlineage ledger",
        ),
        (
            StoreError::SchemaVersion { got: 2, want: 1 }.to_string(),
            "ledger schema version 2, this build reads 1",
        ),
        (
            StoreError::WrongHashes { index: 4 }.to_string(),
            "entry 4: tree hashes are not the RFC 6962 hashes of the log",
        ),
        (
            StoreError::BadLedgerName { name: "A-b".into() }.to_string(),
            "bad ledger name \"A-b\": want 1-52 bytes of [a-z0-9_], not starting with a digit",
        ),
        (
            StoreError::PgWorker {
                reason: "worker thread gone".into(),
            }
            .to_string(),
            "postgres worker: worker thread gone",
        ),
    ];
    for (got, want) in msgs {
        assert_eq!(got, want);
    }
}

// ------------------------------------------------------------------------------------------
// Test data and helpers
// ------------------------------------------------------------------------------------------

/// An entry the test owns; [`lend`] turns a batch into [`NewEntry`] values.
#[derive(Clone, Debug)]
struct Owned {
    index: u64,
    id: EntryId,
    cose: Vec<u8>,
    kind: Kind,
    label: Label,
    content: Option<(Hash32, Vec<u8>)>,
    hashes: Vec<[u8; 32]>,
    tag: Option<[u8; 32]>,
    context: Option<Hash32>,
}

fn lend(batch: &[Owned]) -> Vec<NewEntry<'_>> {
    batch
        .iter()
        .map(|e| NewEntry {
            index: e.index,
            id: e.id,
            cose: &e.cose,
            kind: e.kind,
            label: e.label,
            content: e.content.as_ref().map(|(h, b)| (*h, b.as_slice())),
            hashes: e.hashes.clone(),
            tag: e.tag,
            context: e.context,
        })
        .collect()
}

/// What a store should hold: entries and tree hashes in stored-hash order.
#[derive(Clone, Debug, Default)]
struct Model {
    entries: Vec<Owned>,
    hashes: Vec<[u8; 32]>,
    /// Content hashes redacted since stored (not checked for presence).
    redacted: Vec<Hash32>,
}

impl HashReader for Model {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        indexes
            .iter()
            .map(|&i| {
                self.hashes
                    .get(i as usize)
                    .map(|h| Hash(*h))
                    .ok_or(tlog_tiles::Error::IndexesNotInTree)
            })
            .collect()
    }
}

impl Model {
    /// `n` new entries following the model, with real RFC 6962 stored hashes (not added).
    fn make(&self, n: usize, tag: &str) -> Vec<Owned> {
        let mut scratch = self.clone();
        let mut out = Vec::with_capacity(n);
        for k in 0..n {
            let index = scratch.entries.len() as u64;
            let mut cose = format!("cose {tag} {k} ").into_bytes();
            cose.resize(cose.len() + (index as usize % 5) * 7, b'.');
            let id = EntryId::of_cose(&cose);
            let hashes = tlog_tiles::stored_hashes_for_record_hash(index, Hash(id.0), &scratch)
                .unwrap()
                .into_iter()
                .map(|h| h.0)
                .collect();
            let content = (index % 3 != 2).then(|| {
                let bytes = format!("content {tag} {k}").into_bytes();
                (Hash32::digest(&bytes), bytes)
            });
            let e = Owned {
                index,
                id,
                cose,
                kind: Kind::from_code(index % 7).unwrap(),
                label: Label::from_code((index % 4) as u8).unwrap(),
                content,
                hashes,
                tag: (index % 3 != 1).then_some([index as u8 ^ 0x5a; 32]),
                // Two contexts, and every fourth row stored without one.
                context: (index % 4 != 3).then(|| Hash32::digest(&[(index % 2) as u8])),
            };
            scratch.commit(vec![e.clone()]);
            out.push(e);
        }
        out
    }

    fn commit(&mut self, batch: Vec<Owned>) {
        for e in batch {
            assert_eq!(e.index as usize, self.entries.len());
            self.hashes.extend_from_slice(&e.hashes);
            self.entries.push(e);
        }
    }

    fn metas(&self) -> Vec<EntryMeta> {
        self.entries
            .iter()
            .map(|e| EntryMeta {
                index: e.index,
                id: e.id,
                kind: e.kind,
                label: e.label,
                tag: e.tag,
            })
            .collect()
    }

    /// Asserts `s` holds exactly this model (and that its hashes make the right tree).
    fn assert_same<S: Store>(&self, s: &S) {
        let size = self.entries.len() as u64;
        assert_eq!(s.tree_size().unwrap(), size, "tree_size");
        for e in &self.entries {
            assert_eq!(
                s.entry_bytes(e.index).unwrap().as_ref(),
                Some(&e.cose),
                "entry {}",
                e.index
            );
            assert_eq!(
                s.index_of(&e.id).unwrap(),
                Some(e.index),
                "index_of {}",
                e.index
            );
            if let Some((h, bytes)) = &e.content {
                if !self.redacted.contains(h) {
                    assert_eq!(
                        s.content(h).unwrap().as_ref(),
                        Some(bytes),
                        "content {}",
                        e.index
                    );
                }
            }
        }
        assert_eq!(s.entry_bytes(size).unwrap(), None, "entry past the end");
        assert_eq!(s.entry_bytes(u64::MAX).unwrap(), None);
        assert_eq!(s.index_of(&EntryId([0xee; 32])).unwrap(), None);
        let metas = self.metas();
        assert_eq!(s.metas_from(0).unwrap(), metas, "metas_from(0)");
        let half = size / 2;
        assert_eq!(
            s.metas_from(half).unwrap(),
            metas[half as usize..],
            "metas_from(half)"
        );
        assert_eq!(s.metas_from(size).unwrap(), vec![]);
        assert_eq!(s.metas_from(u64::MAX).unwrap(), vec![]);
        // One row by index and by id, tags as given; the rows with effects from an index on.
        for m in &metas {
            assert_eq!(s.meta_at(m.index).unwrap(), Some(*m), "meta_at {}", m.index);
            assert_eq!(s.meta_of(&m.id).unwrap(), Some(*m), "meta_of {}", m.index);
        }
        // Rows with their bytes in one read, from several places and of several lengths; a
        // read past the end is shorter, never padded.
        let row = |m: &EntryMeta| (*m, self.entries[m.index as usize].cose.clone());
        for from in [0, 1, half, size.saturating_sub(1), size, u64::MAX] {
            for limit in [0, 1, 3, 64, usize::MAX] {
                let start = usize::try_from(from).unwrap_or(usize::MAX).min(metas.len());
                let want: Vec<(EntryMeta, Vec<u8>)> =
                    metas[start..].iter().take(limit).map(row).collect();
                assert_eq!(
                    s.rows_from(from, limit).unwrap(),
                    want,
                    "rows_from({from}, {limit})"
                );
            }
        }
        let walked: Vec<(EntryMeta, Vec<u8>)> =
            RowWalk::new(s, 0, size).collect::<Result<_, _>>().unwrap();
        assert_eq!(walked, metas.iter().map(row).collect::<Vec<_>>(), "RowWalk");
        assert!(
            matches!(
                RowWalk::new(s, 0, size + 1).last(),
                Some(Err(StoreError::Corrupt { .. }))
            ),
            "a walk past the end is an error"
        );
        assert_eq!(s.meta_at(size).unwrap(), None, "meta_at past the end");
        assert_eq!(s.meta_at(u64::MAX).unwrap(), None);
        assert_eq!(s.meta_of(&EntryId([0xee; 32])).unwrap(), None);
        for from in [0, half, size] {
            let want: Vec<EntryMeta> = metas
                .iter()
                .filter(|m| m.index >= from && m.kind.code() >= FIRST_EFFECT_KIND)
                .copied()
                .collect();
            assert_eq!(
                s.effect_metas_from(from).unwrap(),
                want,
                "effect_metas_from({from})"
            );
        }
        let all: Vec<u64> = (0..self.hashes.len() as u64).collect();
        assert_eq!(s.read_hashes(&all).unwrap(), self.hashes, "stored hashes");
        assert_eq!(s.read_hashes(&[]).unwrap(), Vec::<[u8; 32]>::new());
        let past = self.hashes.len() as u64;
        assert!(matches!(s.read_hashes(&[0, past]), Err(StoreError::MissingHash(i)) if i == past));
        assert!(matches!(
            s.read_hashes(&[u64::MAX]),
            Err(StoreError::MissingHash(u64::MAX))
        ));
        if size > 0 {
            let root = tlog_tiles::tree_hash(size, &Reader(s)).unwrap();
            let ids: Vec<[u8; 32]> = self.entries.iter().map(|e| e.id.0).collect();
            assert_eq!(root.0, naive_root(&ids), "tree hash at size {size}");
        }
    }
}

/// Reads a store's hashes for `tlog_tiles`.
struct Reader<'a, S>(&'a S);

impl<S: Store> HashReader for Reader<'_, S> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
        self.0
            .read_hashes(indexes)
            .map(|v| v.into_iter().map(Hash).collect())
            .map_err(|e| tlog_tiles::Error::InvalidInput(e.to_string()))
    }
}

/// MTH(D[n]) of RFC 6962 §2.1 over leaf hashes, computed the slow, obvious way.
fn naive_root(leaves: &[[u8; 32]]) -> [u8; 32] {
    if leaves.len() == 1 {
        return leaves[0];
    }
    // k: the largest power of two smaller than n.
    let k = 1usize << (leaves.len() - 1).ilog2();
    let (l, r) = (naive_root(&leaves[..k]), naive_root(&leaves[k..]));
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(l);
    h.update(r);
    h.finalize().into()
}

/// A store holding `n` entries, and its model.
fn filled<S: Store>(make: &impl Fn() -> S, n: usize) -> (S, Model) {
    let mut s = make();
    let mut model = Model::default();
    let batch = model.make(n, "base");
    s.append(&lend(&batch)).unwrap();
    model.commit(batch);
    (s, model)
}

/// After rejections, a valid batch still appends and everything still matches.
fn append_more<S: Store>(s: &mut S, model: &mut Model) {
    let batch = model.make(4, "after-rejection");
    s.append(&lend(&batch)).unwrap();
    model.commit(batch);
    model.assert_same(s);
}

/// Asserts nothing of `entries` is stored: ids, indexes, content.
fn assert_absent<S: Store>(s: &S, entries: &[Owned]) {
    for e in entries {
        assert_eq!(
            s.index_of(&e.id).unwrap(),
            None,
            "id of rejected entry {}",
            e.index
        );
        if let Some((h, _)) = &e.content {
            assert_eq!(
                s.content(h).unwrap(),
                None,
                "content of rejected entry {}",
                e.index
            );
        }
    }
}

/// A change to a batch before it is offered to a store.
type Mutate = fn(Vec<Owned>) -> Vec<Owned>;

/// Moves a batch's indexes by `by`.
fn shifted(mut batch: Vec<Owned>, by: i64) -> Vec<Owned> {
    for e in &mut batch {
        e.index = e.index.checked_add_signed(by).unwrap();
    }
    batch
}

/// Reads every entry, meta, hash, content row and checkpoint of `s`.
fn read_everything<S: Store>(s: &S, model: &Model) -> Result<(), StoreError> {
    let size = s.tree_size()?;
    for i in 0..size {
        s.entry_bytes(i)?;
    }
    s.metas_from(0)?;
    RowWalk::new(s, 0, size).try_for_each(|r| r.map(drop))?;
    let all: Vec<u64> = (0..tlog_tiles::stored_hash_count(size)).collect();
    s.read_hashes(&all)?;
    for e in &model.entries {
        s.index_of(&e.id)?;
        if let Some((h, _)) = &e.content {
            s.content(h)?;
        }
    }
    s.latest_checkpoint()?;
    s.meta("origin")?;
    Ok(())
}

/// The class of an outcome, for exact assertions.
#[derive(Debug, PartialEq, Eq)]
enum Got {
    Ok,
    NotContiguous { got: u64, want: u64 },
    Duplicate(EntryId),
    HashCount { index: u64, got: usize, want: usize },
    OutOfRange(u64),
    MissingHash(u64),
    NotALedger,
    SchemaVersion { got: i64, want: i64 },
    Corrupt,
    Other(String),
}

fn kind_of<T>(r: Result<T, StoreError>) -> Got {
    match r {
        Ok(_) => Got::Ok,
        Err(StoreError::NotContiguous { got, want }) => Got::NotContiguous { got, want },
        Err(StoreError::Duplicate(id)) => Got::Duplicate(id),
        Err(StoreError::HashCount { index, got, want }) => Got::HashCount { index, got, want },
        Err(StoreError::OutOfRange { got, max }) => {
            assert_eq!(max, MAX_INDEX);
            Got::OutOfRange(got)
        }
        Err(StoreError::MissingHash(i)) => Got::MissingHash(i),
        Err(StoreError::NotALedger { .. }) => Got::NotALedger,
        Err(StoreError::SchemaVersion { got, want }) => Got::SchemaVersion { got, want },
        Err(StoreError::Corrupt { .. }) => Got::Corrupt,
        Err(other) => Got::Other(other.to_string()),
    }
}

/// File names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Whether any file in `dir` contains `needle`.
fn files_contain(dir: &Path, needle: &[u8]) -> bool {
    std::fs::read_dir(dir).unwrap().any(|e| {
        let bytes = std::fs::read(e.unwrap().path()).unwrap_or_default();
        bytes.windows(needle.len()).any(|w| w == needle)
    })
}
