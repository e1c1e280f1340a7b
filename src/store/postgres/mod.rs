//! PostgreSQL store: one ledger per PostgreSQL schema, for many writer processes on many hosts
//! (`spec/storage.md` §11).
//!
//! A [`PgStore`] owns one connection, driven by a worker thread that runs its own
//! single-threaded tokio runtime. Every call is a job sent to that thread: the blocking API
//! ([`Store`], [`PgStore::sequence`], [`PgStore::integrate`]) waits on a standard channel, so it
//! is safe to call from inside an async runtime (it blocks the calling thread, never re-enters a
//! runtime); the async API ([`PgStore::sequence_async`], [`PgStore::integrate_async`],
//! [`PgStore::tree_size_async`]) awaits a oneshot channel instead.
//!
//! Like every store it stores and decides nothing: integration's log work (the new tree
//! hashes, the check against the stored root, the signed checkpoint) is done by the caller's
//! [`IntegrationWork`], the log key's [`crate::ledger::Integrator`].

use super::memory::{check_batch, check_range};
use super::{to_i64, to_u64, EntryMeta, NewEntry, Store, StoreError, EFFECTS_PREDICATE, MAX_INDEX};
use crate::lineage::Label;
use crate::log::{extend, extension_reads, Extension, RootHash};
use crate::record::{EntryId, Hash32, Kind};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::thread::JoinHandle;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::{Client, NoTls};

mod integrate;
mod rows;
mod setup;
mod write;

pub(crate) use integrate::check_root;
use integrate::*;
pub use integrate::{Integration, IntegrationWork, SequencedRow};
use rows::*;
use setup::*;
use write::*;

/// DDL and the sequencer function of a new ledger, run once in the creating transaction: the
/// tables of version 1 and the content epoch.
const SCHEMA: &str = concat!(
    include_str!("../schema_pg.sql"),
    include_str!("../schema_pg_epoch.sql")
);
/// The content epoch's table, function and triggers (`spec/storage.md` §11.2), added to a
/// ledger created before them when first connected.
const EPOCH_SCHEMA: &str = include_str!("../schema_pg_epoch.sql");
/// [`EFFECTS_PREDICATE`] as the leading condition of [`PgStore::metas_where`].
const EFFECTS_FILTER: &str = "kind BETWEEN 5 AND 11 AND";

/// Stores a setting (`$1` key, `$2` value), replacing an earlier value.
const UPSERT_META: &str = "INSERT INTO meta (key, value) VALUES ($1, $2) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// Stores a signed checkpoint note (`$1` tree size, `$2` note), replacing an earlier one of the
/// same size.
const UPSERT_CHECKPOINT: &str = "INSERT INTO checkpoints (size, note) VALUES ($1, $2) \
     ON CONFLICT (size) DO UPDATE SET note = excluded.note";

/// `sequencer.schema_version` this build reads and writes.
const SCHEMA_VERSION: i32 = 1;

/// Longest ledger (PostgreSQL schema) name: 52 bytes, so that its `NOTIFY` channel
/// `memlineage_<ledger>` fits PostgreSQL's 63-byte identifier limit.
pub const MAX_SCHEMA_NAME: usize = 52;

/// Entries an [`PgStore::integrate`] call takes at most by default.
pub const DEFAULT_INTEGRATE_BATCH: u64 = 4096;

/// Integration runs `ANALYZE` after it takes the tree past a power of two at or above this
/// size (1024, 2048, …): plans cached while the tables were small would otherwise keep
/// scanning them in full.
const ANALYZE_FROM: u64 = 1024;

type Job = Box<dyn FnOnce(Arc<Client>) -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// A ledger stored in PostgreSQL: the tables of `src/store/schema_pg.sql` in one schema.
///
/// # Two ways to append
/// - [`Store::append`] (what [`crate::Ledger::append`] uses): the caller numbers the batch and
///   computes its tree hashes; the store checks them, then stores the entries and integrates
///   them into the tree in one transaction. Like [`super::SqliteStore`], a writer whose view is
///   stale gets [`StoreError::NotContiguous`].
/// - [`PgStore::sequence`] (many writers): one call of the `append_entries` PL/pgSQL function
///   numbers the batch under the one-row `sequencer` lock, skipping ids already stored (their
///   existing index is returned, so a retried call is exactly-once). The entries enter the
///   tree when an integrator ([`PgStore::integrate`] with [`crate::ledger::Integrator`]) runs.
///
/// # Durability
/// Every write is one transaction, committed before the call returns: durable as the
/// server's `synchronous_commit` and `fsync` settings make commits (both on by default).
///
/// # Visibility
/// [`Store::tree_size`] and [`Store::metas_from`] report integrated entries only;
/// [`Store::entry_bytes`], [`Store::index_of`] and content reads also see entries that are
/// sequenced but not yet integrated.
///
/// # Trust
/// As every store: for availability only. Rows are checked for shape and rejected with
/// [`StoreError::Corrupt`]; no method panics.
#[derive(Debug)]
pub struct PgStore {
    jobs: mpsc::UnboundedSender<Job>,
    worker: Option<JoinHandle<()>>,
    schema: String,
    announced: Arc<Announced>,
}

/// The largest tree size announced on the ledger's `NOTIFY` channel, updated by the task that
/// drives the connection; waiters block on the condition variable.
#[derive(Debug, Default)]
struct Announced {
    size: std::sync::Mutex<Option<u64>>,
    changed: std::sync::Condvar,
}

impl Announced {
    fn raise(&self, size: u64) {
        if let Ok(mut g) = self.size.lock() {
            *g = Some(g.map_or(size, |s| s.max(size)));
            self.changed.notify_all();
        }
    }
}

/// One entry for [`PgStore::sequence`]: what [`NewEntry`] holds, without index and hashes
/// (the sequencer numbers it; the integrator hashes it).
#[derive(Clone, Debug)]
pub struct Submission {
    /// Its id (leaf hash, `SHA-256(0x00 || cose)`); the sequencer deduplicates by it.
    pub id: EntryId,
    /// COSE_Sign1 bytes.
    pub cose: Vec<u8>,
    /// Its kind.
    pub kind: Kind,
    /// The label the writer computed.
    pub label: Label,
    /// `(content hash, content bytes)`, if any (first bytes stored for a hash win).
    pub content: Option<(Hash32, Vec<u8>)>,
    /// Its signed context hash, for the context index (`spec/storage.md` §4.5).
    pub context: Option<Hash32>,
}

impl PgStore {
    /// Connects to `url` (a libpq-style URL or key=value string, e.g.
    /// `postgresql:///postgres?host=/tmp/pg&port=5432&user=postgres`) and opens the ledger kept
    /// in PostgreSQL schema `ledger`, creating schema, tables and the sequencer function in one
    /// transaction when the schema has no ledger yet (concurrent creators serialise on an
    /// advisory lock).
    ///
    /// `ledger` must be 1 to 52 bytes of `[a-z0-9_]`, starting with a letter or `_`.
    ///
    /// # Errors
    /// [`StoreError::BadLedgerName`]; [`StoreError::SchemaVersion`] when the schema holds a
    /// ledger of another version; [`StoreError::Corrupt`] when it holds tables but no ledger;
    /// [`StoreError::Postgres`] (cannot connect, permissions); [`StoreError::PgWorker`] when the
    /// worker thread cannot start.
    pub fn connect(url: &str, ledger: &str) -> Result<Self, StoreError> {
        check_name(ledger)?;
        let config: tokio_postgres::Config = url.parse().map_err(StoreError::from)?;
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel::<Result<(), StoreError>>(1);
        let announced = Arc::new(Announced::default());
        let heard = Arc::clone(&announced);
        let worker = std::thread::Builder::new()
            .name(format!("memlineage-pg-{ledger}"))
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(StoreError::PgWorker {
                            reason: e.to_string(),
                        }));
                        return;
                    }
                };
                rt.block_on(async move {
                    let client = match config.connect(NoTls).await {
                        Ok((client, conn)) => {
                            tokio::spawn(drive(conn, heard));
                            Arc::new(client)
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e.into()));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    while let Some(job) = queue.recv().await {
                        job(Arc::clone(&client)).await;
                    }
                });
            })
            .map_err(|e| StoreError::PgWorker {
                reason: e.to_string(),
            })?;
        let store = PgStore {
            jobs,
            worker: Some(worker),
            schema: ledger.to_string(),
            announced,
        };
        ready_rx.recv().map_err(|_| StoreError::PgWorker {
            reason: "worker exited before connecting".into(),
        })??;
        let schema = store.schema.clone();
        store.call(move |c| async move { setup(&c, &schema).await })?;
        Ok(store)
    }

    /// The ledger's PostgreSQL schema name.
    pub fn ledger_name(&self) -> &str {
        &self.schema
    }

    /// The `LISTEN` channel on which integration announces each new checkpoint (payload: the
    /// new tree size in decimal): `memlineage_<ledger>`.
    pub fn notify_channel(&self) -> String {
        format!("memlineage_{}", self.schema)
    }

    /// Waits until the tree has at least `size` leaves: returns at once if it has, else
    /// blocks until an integration (by any process) announces such a size on
    /// [`PgStore::notify_channel`] (this store `LISTEN`s from connection on), or until
    /// `timeout` passes. Returns the largest size known when it returns: `>= size` unless it
    /// timed out. Does not occupy the worker thread while waiting.
    ///
    /// # Errors
    /// [`StoreError::Postgres`] reading the tree size; [`StoreError::PgWorker`] when the
    /// connection is gone.
    pub fn wait_for_size(
        &self,
        size: u64,
        timeout: std::time::Duration,
    ) -> Result<u64, StoreError> {
        let now = self.tree_size()?;
        if now >= size {
            return Ok(now);
        }
        let poisoned = || StoreError::PgWorker {
            reason: "notification state poisoned".into(),
        };
        let guard = self.announced.size.lock().map_err(|_| poisoned())?;
        let (guard, _) = self
            .announced
            .changed
            .wait_timeout_while(guard, timeout, |s| s.is_none_or(|s| s < size))
            .map_err(|_| poisoned())?;
        Ok(guard.map_or(now, |s| s.max(now)))
    }

    /// Runs `f` on the worker thread and waits for its result (blocking).
    fn call<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Client>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.submit(move |c| async move {
            let _ = tx.send(f(c).await);
        })?;
        rx.recv().map_err(|_| gone())?
    }

    /// Runs `f` on the worker thread and awaits its result.
    async fn call_async<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Client>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + 'static,
    {
        let (tx, rx) = oneshot::channel();
        self.submit(move |c| async move {
            let _ = tx.send(f(c).await);
        })?;
        rx.await.map_err(|_| gone())?
    }

    fn submit<F, Fut>(&self, f: F) -> Result<(), StoreError>
    where
        F: FnOnce(Arc<Client>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let job: Job = Box::new(move |c| Box::pin(f(c)));
        self.jobs.send(job).map_err(|_| gone())
    }

    /// Sequences a batch in one round trip (the `append_entries` function, autocommit): each
    /// entry gets the next leaf index, gap-free, in batch order; an entry whose id is already
    /// stored (by an earlier call, a retry, or earlier in this batch) is not stored again and
    /// gets its existing index. Returns one index per entry. Durable when it returns. The
    /// entries enter the Merkle tree at the next [`PgStore::integrate`].
    ///
    /// The store does not check signatures, parents or labels: the writer's
    /// [`crate::Ledger`] does before signing, and verification re-checks everything.
    ///
    /// # Errors
    /// [`StoreError::Postgres`] (connection, constraint); [`StoreError::Corrupt`] when the
    /// function returns the wrong number of indexes. On error nothing of the batch is stored.
    pub fn sequence(&self, batch: Vec<Submission>) -> Result<Vec<u64>, StoreError> {
        self.call(move |c| async move { sequence(&c, batch).await })
    }

    /// [`PgStore::sequence`], awaiting instead of blocking.
    ///
    /// # Errors
    /// As [`PgStore::sequence`].
    pub async fn sequence_async(&self, batch: Vec<Submission>) -> Result<Vec<u64>, StoreError> {
        self.call_async(move |c| async move { sequence(&c, batch).await })
            .await
    }

    /// Integrates up to `max` sequenced entries into the tree, in one transaction, with
    /// `work` doing the log's part (which hashes to read, the new hashes, tiles and root, the
    /// signed checkpoint: [`crate::ledger::Integrator`]); the store reads and writes rows:
    ///
    /// 1. `pg_try_advisory_xact_lock` on the ledger's integrator key: if another process
    ///    holds it, return [`Integration::Busy`] (choice of integrator);
    /// 2. lock the one-row `tree_state` (`FOR UPDATE`): this, not the advisory lock, is what
    ///    makes two integrators safe;
    /// 3. read entries `size..` in index order (at most `max`) and check the indexes are
    ///    contiguous from `size`;
    /// 4. read the old tree's edge hashes `work` names ([`IntegrationWork::reads`]); `work`
    ///    checks they hash to the stored root and computes the new leaves' stored hashes, the
    ///    new root, the changed tlog-tiles tiles and the checkpoint note
    ///    ([`IntegrationWork::extend`]);
    /// 5. insert the hashes, upsert the tiles, update `tree_state`, store the checkpoint note
    ///    and `NOTIFY` [`PgStore::notify_channel`] with the new size;
    /// 6. commit. A process killed before the commit leaves nothing; any process's next call
    ///    redoes the work.
    ///
    /// After a commit that takes the tree past a power of two at or above 1024, runs
    /// `ANALYZE` on the ledger's tables.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] (gap in the sequenced indexes, malformed rows, and `work`'s
    /// errors: edge hashes that do not give the stored root); [`StoreError::Postgres`];
    /// [`StoreError::OutOfRange`].
    pub fn integrate(
        &self,
        work: &Arc<dyn IntegrationWork>,
        max: u64,
    ) -> Result<Integration, StoreError> {
        let (work, schema) = (Arc::clone(work), self.schema.clone());
        self.call(move |c| async move { integrate(&c, &schema, &*work, max).await })
    }

    /// [`PgStore::integrate`], awaiting instead of blocking.
    ///
    /// # Errors
    /// As [`PgStore::integrate`].
    pub async fn integrate_async(
        &self,
        work: &Arc<dyn IntegrationWork>,
        max: u64,
    ) -> Result<Integration, StoreError> {
        let (work, schema) = (Arc::clone(work), self.schema.clone());
        self.call_async(move |c| async move { integrate(&c, &schema, &*work, max).await })
            .await
    }

    /// Number of sequenced entries (integrated or not): the next index the sequencer hands out.
    ///
    /// # Errors
    /// [`StoreError::Postgres`], [`StoreError::Corrupt`].
    pub fn sequenced(&self) -> Result<u64, StoreError> {
        self.call(|c| async move {
            let row = c.query_one("SELECT next FROM sequencer", &[]).await?;
            to_u64(row.try_get(0)?, "sequencer.next")
        })
    }

    /// [`Store::tree_size`], awaiting instead of blocking.
    ///
    /// # Errors
    /// As [`Store::tree_size`].
    pub async fn tree_size_async(&self) -> Result<u64, StoreError> {
        self.call_async(|c| async move { tree_size(&c).await })
            .await
    }

    /// Runs `ANALYZE` on the ledger's tables (after a bulk load, so that the planner stops
    /// treating them as empty).
    ///
    /// # Errors
    /// [`StoreError::Postgres`].
    pub fn analyze(&self) -> Result<(), StoreError> {
        self.call(|c| async move { analyze(&c).await })
    }
}

impl Drop for PgStore {
    /// Closes the job queue and joins the worker (it finishes the job in progress, then
    /// closes the connection).
    fn drop(&mut self) {
        let (tx, _) = mpsc::unbounded_channel();
        drop(std::mem::replace(&mut self.jobs, tx));
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

impl PgStore {
    /// The integrated `entries` rows from index `from` on that also match `filter` (a fixed SQL
    /// condition followed by `AND`, or empty), in index order; with `contiguous`, indexes must
    /// run on from `from` without a gap.
    fn metas_where(
        &self,
        filter: &'static str,
        from: u64,
        contiguous: bool,
    ) -> Result<Vec<EntryMeta>, StoreError> {
        let Ok(from_i) = i64::try_from(from) else {
            return Ok(Vec::new());
        };
        self.call(move |c| async move {
            let sql = format!(
                "SELECT idx, id, kind, label, tag FROM entries \
                 WHERE {filter} idx >= $1 AND idx < (SELECT size FROM tree_state) ORDER BY idx"
            );
            let rows = c.query(&sql, &[&from_i]).await?;
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                let m = meta_row(&r)?;
                let want = from + out.len() as u64;
                if contiguous && m.index != want {
                    return Err(StoreError::Corrupt {
                        reason: format!("entries: index {} where {want} was expected", m.index),
                    });
                }
                out.push(m);
            }
            Ok(out)
        })
    }

    /// The integrated `entries` row whose `column` (`idx` or `id`) is `key`.
    fn one_meta<K>(&self, column: &'static str, key: K) -> Result<Option<EntryMeta>, StoreError>
    where
        K: tokio_postgres::types::ToSql + Sync + Send + 'static,
    {
        self.call(move |c| async move {
            let sql = format!(
                "SELECT idx, id, kind, label, tag FROM entries \
                 WHERE {column} = $1 AND idx < (SELECT size FROM tree_state)"
            );
            let row = c.query_opt(&sql, &[&key]).await?;
            row.as_ref().map(meta_row).transpose()
        })
    }
}

/// Runs `body` between `BEGIN` and `COMMIT` on the worker's connection; `ROLLBACK` when it
/// fails (the connection is then ready for the next job).
async fn transaction<T>(
    c: &Client,
    body: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    c.batch_execute("BEGIN").await?;
    match body.await {
        Ok(v) => {
            c.batch_execute("COMMIT").await?;
            Ok(v)
        }
        Err(e) => {
            // The error being reported matters more than a failed rollback (the server rolls
            // back anyway when the connection closes).
            let _ = c.batch_execute("ROLLBACK").await;
            Err(e)
        }
    }
}

async fn tree_size(c: &Client) -> Result<u64, StoreError> {
    let row = c.query_one("SELECT size FROM tree_state", &[]).await?;
    to_u64(row.try_get(0)?, "tree_state.size")
}

async fn read_hashes(c: &Client, indexes: &[u64]) -> Result<Vec<[u8; 32]>, StoreError> {
    if indexes.is_empty() {
        return Ok(Vec::new());
    }
    let mut keys = Vec::with_capacity(indexes.len());
    for &i in indexes {
        keys.push(i64::try_from(i).map_err(|_| StoreError::MissingHash(i))?);
    }
    let rows = c
        .query(
            "SELECT idx, hash FROM tree_hashes WHERE idx = ANY($1)",
            &[&keys],
        )
        .await?;
    let mut found = HashMap::with_capacity(rows.len());
    for r in rows {
        let idx = to_u64(r.try_get(0)?, "tree_hashes.idx")?;
        found.insert(idx, bytes32(r.try_get(1)?, "tree_hashes.hash")?);
    }
    indexes
        .iter()
        .map(|i| found.get(i).copied().ok_or(StoreError::MissingHash(*i)))
        .collect()
}

/// A 64-bit advisory-lock key for `purpose` on ledger `schema`: the first 8 bytes of
/// `SHA-256("memlineage/" || purpose || "/" || schema)`, big-endian, as `i64`.
fn lock_key(purpose: &str, schema: &str) -> i64 {
    let d = Sha256::digest(format!("memlineage/{purpose}/{schema}").as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    i64::from_be_bytes(b)
}

fn check_name(name: &str) -> Result<(), StoreError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_SCHEMA_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadLedgerName {
            name: name.to_string(),
        })
    }
}

fn gone() -> StoreError {
    StoreError::PgWorker {
        reason: "worker thread gone".into(),
    }
}

/// A log failure while extending the stored tree: a missing hash stays typed, anything else
/// means the stored tree is not what it should be.
pub(crate) fn log_err(e: crate::log::LogError) -> StoreError {
    match e {
        crate::log::LogError::MissingHash(i) => StoreError::MissingHash(i),
        other => StoreError::Corrupt {
            reason: other.to_string(),
        },
    }
}

fn kind_code(k: Kind) -> Result<i16, StoreError> {
    i16::try_from(k.code()).map_err(|_| StoreError::OutOfRange {
        got: k.code(),
        max: i16::MAX as u64,
    })
}

fn bytes32(v: Vec<u8>, what: &str) -> Result<[u8; 32], StoreError> {
    let len = v.len();
    <[u8; 32]>::try_from(v).map_err(|_| StoreError::Corrupt {
        reason: format!("{what}: {len} bytes, want 32"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_names() {
        for ok in ["a", "ledger_1", "_x", &"a".repeat(52)] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "1a", "A", "a-b", "a b", "a\"b", &"a".repeat(53), "é"] {
            assert!(
                matches!(check_name(bad), Err(StoreError::BadLedgerName { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn lock_keys_differ_by_purpose_and_ledger() {
        let k = lock_key("integrate", "a");
        assert_ne!(k, lock_key("create", "a"));
        assert_ne!(k, lock_key("integrate", "b"));
        assert_eq!(k, lock_key("integrate", "a"));
    }
}
