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

/// DDL and the sequencer function of a new ledger, run once in the creating transaction.
const SCHEMA: &str = include_str!("schema_pg.sql");
/// [`EFFECTS_PREDICATE`] as the leading condition of [`PgStore::metas_where`].
const EFFECTS_FILTER: &str = "kind BETWEEN 5 AND 11 AND";

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

/// What one [`PgStore::integrate`] call did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Integration {
    /// Another process holds the integrator lock of this ledger; nothing was done.
    Busy,
    /// Nothing was waiting; the tree has `size` leaves.
    Idle {
        /// The tree size.
        size: u64,
    },
    /// Leaves `old..new` were integrated and a checkpoint for `new` was stored and announced.
    Integrated {
        /// Tree size before.
        old: u64,
        /// Tree size after.
        new: u64,
        /// The new root, `MTH(D[new])`.
        root: RootHash,
        /// The signed checkpoint note stored for `new`.
        note: Vec<u8>,
    },
}

/// The log's part of an integration ([`PgStore::integrate`]), called inside the store's
/// transaction: the store reads and writes rows and decides nothing; hashing the tree and
/// signing checkpoints is the log's work ([`crate::ledger::Integrator`] does it with the log
/// key). Calls are CPU work only, on the store's worker thread.
pub trait IntegrationWork: Send + Sync + 'static {
    /// The stored-hash indexes whose hashes extending a tree of `old` leaves to `new` needs.
    ///
    /// # Errors
    /// [`StoreError::OutOfRange`] or [`StoreError::Corrupt`] for sizes the log cannot extend.
    fn reads(&self, old: u64, new: u64) -> Result<Vec<u64>, StoreError>;

    /// The tree of `old` leaves extended by `leaves`, from the hashes at [`Self::reads`] (in
    /// that order), and the signed checkpoint note for the new tree. `stored_root` is the root
    /// `tree_state` records for `old` leaves.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when `reads` do not give `stored_root` (or do not fit);
    /// [`StoreError::MissingHash`].
    fn extend(
        &self,
        old: u64,
        stored_root: &[u8; 32],
        reads: &[[u8; 32]],
        leaves: &[EntryId],
    ) -> Result<(Extension, Vec<u8>), StoreError>;
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
                        let _ = ready_tx.send(Err(StoreError::PgWorker(e.to_string())));
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
            .map_err(|e| StoreError::PgWorker(e.to_string()))?;
        let store = PgStore {
            jobs,
            worker: Some(worker),
            schema: ledger.to_string(),
            announced,
        };
        ready_rx
            .recv()
            .map_err(|_| StoreError::PgWorker("worker exited before connecting".into()))??;
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
        let poisoned = || StoreError::PgWorker("notification state poisoned".into());
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
                    return Err(StoreError::Corrupt(format!(
                        "entries: index {} where {want} was expected",
                        m.index
                    )));
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

impl Store for PgStore {
    /// `tree_state.size`: integrated entries.
    fn tree_size(&self) -> Result<u64, StoreError> {
        self.call(|c| async move { tree_size(&c).await })
    }

    /// Checks, stores and integrates a numbered, hashed batch in one transaction (locking
    /// `sequencer` then `tree_state`). Besides the checks every store makes, the given tree
    /// hashes must be the RFC 6962 hashes of the ids ([`StoreError::WrongHashes`]).
    fn append(&mut self, batch: &[NewEntry<'_>]) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let owned: Vec<OwnedEntry> = batch.iter().map(OwnedEntry::from).collect();
        self.call(move |c| async move { append_hashed(&c, owned).await })
    }

    fn entry_bytes(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Ok(idx) = i64::try_from(index) else {
            return Ok(None);
        };
        self.call(move |c| async move {
            let row = c
                .query_opt("SELECT cose FROM entries WHERE idx = $1", &[&idx])
                .await?;
            Ok(match row {
                Some(r) => Some(r.try_get::<_, Vec<u8>>(0)?),
                None => None,
            })
        })
    }

    fn index_of(&self, id: &EntryId) -> Result<Option<u64>, StoreError> {
        let id = id.0.to_vec();
        self.call(move |c| async move {
            let row = c
                .query_opt("SELECT idx FROM entries WHERE id = $1", &[&id])
                .await?;
            match row {
                Some(r) => Ok(Some(to_u64(r.try_get(0)?, "entries.idx")?)),
                None => Ok(None),
            }
        })
    }

    /// Integrated entries from `from` on, in one query; checks indexes are contiguous.
    fn metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError> {
        self.metas_where("", from, true)
    }

    /// An integrated entry by index.
    fn meta_at(&self, index: u64) -> Result<Option<EntryMeta>, StoreError> {
        let Ok(idx) = i64::try_from(index) else {
            return Ok(None);
        };
        self.one_meta("idx", idx)
    }

    /// An integrated entry by id (one lookup by the unique index on `id`).
    fn meta_of(&self, id: &EntryId) -> Result<Option<EntryMeta>, StoreError> {
        self.one_meta("id", id.0.to_vec())
    }

    /// Integrated entries with effects, from the partial index `entries_effects`.
    fn effect_metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError> {
        self.metas_where(EFFECTS_FILTER, from, false)
    }

    /// From the index `entries_context`, integrated rows only.
    fn context_candidates(&self, context: &Hash32, below: u64) -> Result<Vec<u64>, StoreError> {
        let below = i64::try_from(below).unwrap_or(i64::MAX);
        let context = context.0.to_vec();
        self.call(move |c| async move {
            let rows = c
                .query(
                    "SELECT idx FROM entries WHERE (context IS NULL OR context = $1) \
                     AND idx < $2 AND idx < (SELECT size FROM tree_state) ORDER BY idx",
                    &[&context, &below],
                )
                .await?;
            rows.iter()
                .map(|r| to_u64(r.try_get(0)?, "entries.idx"))
                .collect()
        })
    }

    /// One transaction: the tags (`UPDATE … FROM unnest`), then the setting.
    fn set_tags(
        &mut self,
        tags: &[(u64, [u8; 32])],
        key: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        let mut idx = Vec::with_capacity(tags.len());
        for (i, _) in tags {
            idx.push(to_i64(*i)?);
        }
        let tag: Vec<Vec<u8>> = tags.iter().map(|(_, t)| t.to_vec()).collect();
        let (key, value) = (key.to_string(), value.to_string());
        self.call(move |c| async move {
            transaction(&c, async {
                let n = c
                    .execute(
                        "UPDATE entries SET tag = t.tag \
                         FROM unnest($1::bigint[], $2::bytea[]) AS t(idx, tag) \
                         WHERE entries.idx = t.idx",
                        &[&idx, &tag],
                    )
                    .await?;
                if n != idx.len() as u64 {
                    return Err(StoreError::Corrupt(format!(
                        "set_tags: {n} of {} entries stored",
                        idx.len()
                    )));
                }
                c.execute(
                    "INSERT INTO meta (key, value) VALUES ($1, $2) \
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    &[&key, &value],
                )
                .await?;
                Ok(())
            })
            .await
        })
    }

    /// One query for all indexes (`idx = ANY($1)`).
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, StoreError> {
        let indexes = indexes.to_vec();
        self.call(move |c| async move { read_hashes(&c, &indexes).await })
    }

    fn content_at(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Ok(idx) = i64::try_from(index) else {
            return Ok(None);
        };
        self.call(move |c| async move {
            let row = c
                .query_opt(
                    "SELECT c.bytes FROM entries e JOIN content c ON c.hash = e.content_hash \
                     WHERE e.idx = $1",
                    &[&idx],
                )
                .await?;
            Ok(match row {
                Some(r) => Some(r.try_get::<_, Vec<u8>>(0)?),
                None => None,
            })
        })
    }

    fn content(&self, hash: &Hash32) -> Result<Option<Vec<u8>>, StoreError> {
        let h = hash.0.to_vec();
        self.call(move |c| async move {
            let row = c
                .query_opt("SELECT bytes FROM content WHERE hash = $1", &[&h])
                .await?;
            Ok(match row {
                Some(r) => Some(r.try_get::<_, Vec<u8>>(0)?),
                None => None,
            })
        })
    }

    /// Deletes the content row. PostgreSQL keeps the dead row version until `VACUUM` reclaims
    /// it (and WAL segments until they are recycled): unlike SQLite's `secure_delete`, bytes are
    /// not scrubbed at once.
    fn redact(&mut self, hash: &Hash32) -> Result<bool, StoreError> {
        let h = hash.0.to_vec();
        self.call(move |c| async move {
            let n = c
                .execute("DELETE FROM content WHERE hash = $1", &[&h])
                .await?;
            Ok(n > 0)
        })
    }

    fn put_checkpoint(&mut self, size: u64, note: &[u8]) -> Result<(), StoreError> {
        check_range(size)?;
        let size = to_i64(size)?;
        let note = note.to_vec();
        self.call(move |c| async move {
            c.execute(
                "INSERT INTO checkpoints (size, note) VALUES ($1, $2) \
                 ON CONFLICT (size) DO UPDATE SET note = excluded.note",
                &[&size, &note],
            )
            .await?;
            Ok(())
        })
    }

    fn latest_checkpoint(&self) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        self.call(|c| async move {
            let row = c
                .query_opt(
                    "SELECT size, note FROM checkpoints ORDER BY size DESC LIMIT 1",
                    &[],
                )
                .await?;
            match row {
                Some(r) => Ok(Some((
                    to_u64(r.try_get(0)?, "checkpoints.size")?,
                    r.try_get(1)?,
                ))),
                None => Ok(None),
            }
        })
    }

    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        let key = key.to_string();
        self.call(move |c| async move {
            let row = c
                .query_opt("SELECT value FROM meta WHERE key = $1", &[&key])
                .await?;
            Ok(match row {
                Some(r) => Some(r.try_get::<_, String>(0)?),
                None => None,
            })
        })
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        let (key, value) = (key.to_string(), value.to_string());
        self.call(move |c| async move {
            c.execute(
                "INSERT INTO meta (key, value) VALUES ($1, $2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&key, &value],
            )
            .await?;
            Ok(())
        })
    }
}

/// An `entries` row's `idx, id, kind, label, tag` columns.
fn meta_row(r: &tokio_postgres::Row) -> Result<EntryMeta, StoreError> {
    let index = to_u64(r.try_get(0)?, "entries.idx")?;
    let id = EntryId(bytes32(r.try_get(1)?, "entries.id")?);
    let kind_code: i16 = r.try_get(2)?;
    let kind = u64::try_from(kind_code)
        .ok()
        .and_then(Kind::from_code)
        .ok_or_else(|| StoreError::Corrupt(format!("entry {index}: kind {kind_code}")))?;
    let label_code: i16 = r.try_get(3)?;
    let label = u8::try_from(label_code)
        .ok()
        .and_then(Label::from_code)
        .ok_or_else(|| StoreError::Corrupt(format!("entry {index}: label {label_code}")))?;
    let tag = match r.try_get::<_, Option<Vec<u8>>>(4)? {
        Some(t) => Some(bytes32(t, "entries.tag")?),
        None => None,
    };
    Ok(EntryMeta {
        index,
        id,
        kind,
        label,
        tag,
    })
}

/// A [`NewEntry`] with owned bytes, to move into a job.
struct OwnedEntry {
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

impl From<&NewEntry<'_>> for OwnedEntry {
    fn from(e: &NewEntry<'_>) -> Self {
        OwnedEntry {
            index: e.index,
            id: e.id,
            cose: e.cose.to_vec(),
            kind: e.kind,
            label: e.label,
            content: e.content.map(|(h, b)| (h, b.to_vec())),
            hashes: e.hashes.clone(),
            tag: e.tag,
            context: e.context,
        }
    }
}

impl OwnedEntry {
    fn view(&self) -> NewEntry<'_> {
        NewEntry {
            index: self.index,
            id: self.id,
            cose: &self.cose,
            kind: self.kind,
            label: self.label,
            content: self.content.as_ref().map(|(h, b)| (*h, b.as_slice())),
            hashes: self.hashes.clone(),
            tag: self.tag,
            context: self.context,
        }
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

/// Creates the schema and ledger if absent (under an advisory lock), sets `search_path`,
/// checks the version.
async fn setup(c: &Client, schema: &str) -> Result<(), StoreError> {
    // `schema` is checked to be [a-z0-9_]+: safe to splice as a quoted identifier.
    c.batch_execute(&format!(
        "SET search_path TO \"{schema}\"; LISTEN \"memlineage_{schema}\""
    ))
    .await?;
    transaction(c, async {
        c.execute(
            "SELECT pg_advisory_xact_lock($1)",
            &[&lock_key("create", schema)],
        )
        .await?;
        // And one set-up (or reference build) at a time on the server: two transactions that
        // each create tables and then read the catalog (the views below) deadlocked, each
        // waiting for the other's new tables (seen with ledgers made in parallel).
        c.execute(
            "SELECT pg_advisory_xact_lock($1)",
            &[&super::pg_catalog::DDL_LOCK],
        )
        .await?;
        c.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .await?;
        let has_seq: bool = c
            .query_one("SELECT to_regclass('sequencer') IS NOT NULL", &[])
            .await?
            .try_get(0)?;
        if !has_seq {
            let tables: i64 = c
                .query_one(
                    "SELECT count(*) FROM pg_tables WHERE schemaname = $1",
                    &[&schema],
                )
                .await?
                .try_get(0)?;
            if tables != 0 {
                return Err(StoreError::Corrupt(format!(
                    "schema {schema} holds {tables} tables but no ledger"
                )));
            }
            c.batch_execute(SCHEMA).await?;
        }
        // Row tags (spec/lineage.md §5.1) for a ledger created before them, under the lock.
        let has_tag: bool = c
            .query_one(
                "SELECT count(*) = 1 FROM information_schema.columns \
                 WHERE table_schema = $1 AND table_name = 'entries' AND column_name = 'tag'",
                &[&schema],
            )
            .await?
            .try_get(0)?;
        if !has_tag {
            c.batch_execute(
                "ALTER TABLE entries ADD COLUMN tag bytea \
                   CHECK (tag IS NULL OR length(tag) = 32);",
            )
            .await?;
        }
        // The context index (spec/storage.md §4.5) for a ledger created before it: its rows
        // keep `context` NULL, candidates of every lookup.
        c.batch_execute(
            "ALTER TABLE entries ADD COLUMN IF NOT EXISTS context bytea \
               CHECK (context IS NULL OR length(context) = 32); \
             CREATE INDEX IF NOT EXISTS entries_context ON entries (context, idx);",
        )
        .await?;
        // The index of the entries with effects, without context rows (kind 12): a ledger
        // created before the context kind had `WHERE kind >= 5`.
        let current: bool = c
            .query_one(
                "SELECT count(*) = 1 FROM pg_indexes WHERE schemaname = $1 \
                 AND indexname = 'entries_effects' AND indexdef LIKE '%<= 11%'",
                &[&schema],
            )
            .await?
            .try_get(0)?;
        if !current {
            c.batch_execute(&format!(
                "DROP INDEX IF EXISTS entries_effects; \
                 CREATE INDEX entries_effects ON entries (idx) WHERE {EFFECTS_PREDICATE};"
            ))
            .await?;
        }
        Ok(())
    })
    .await?;
    let version: i32 = c
        .query_one("SELECT schema_version FROM sequencer", &[])
        .await?
        .try_get(0)?;
    if version != SCHEMA_VERSION {
        return Err(StoreError::SchemaVersion {
            got: i64::from(version),
            want: i64::from(SCHEMA_VERSION),
        });
    }
    super::pg_catalog::check(c, schema, SCHEMA).await
}

/// Drives the connection; passes each notification's payload (a tree size) to `heard`.
async fn drive<S, T>(mut conn: tokio_postgres::Connection<S, T>, heard: Arc<Announced>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    while let Some(msg) = std::future::poll_fn(|cx| conn.poll_message(cx)).await {
        match msg {
            Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                if let Ok(size) = n.payload().parse::<u64>() {
                    heard.raise(size);
                }
            }
            Ok(_) => {}
            Err(_) => break,
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

async fn sequence(c: &Client, batch: Vec<Submission>) -> Result<Vec<u64>, StoreError> {
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let n = batch.len();
    let mut ids = Vec::with_capacity(n);
    let mut coses = Vec::with_capacity(n);
    let mut kinds = Vec::with_capacity(n);
    let mut labels = Vec::with_capacity(n);
    let mut hashes = Vec::with_capacity(n);
    let mut contents = Vec::with_capacity(n);
    for s in &batch {
        ids.push(&s.id.0[..]);
        coses.push(s.cose.as_slice());
        kinds.push(kind_code(s.kind)?);
        labels.push(i16::from(s.label.code()));
        hashes.push(s.content.as_ref().map(|(h, _)| &h.0[..]));
        contents.push(s.content.as_ref().map(|(_, b)| b.as_slice()));
    }
    let row = c
        .query_one(
            "SELECT append_entries($1, $2, $3, $4, $5, $6)",
            &[&ids, &coses, &kinds, &labels, &hashes, &contents],
        )
        .await?;
    let out: Vec<i64> = row.try_get(0)?;
    if out.len() != n {
        return Err(StoreError::Corrupt(format!(
            "append_entries returned {} indexes for {n} entries",
            out.len()
        )));
    }
    // Every insert inserted: each entry is in this ledger's `entries` at the index the
    // sequencer gave (a function or table changed without the key could put it elsewhere).
    let found: i64 = c
        .query_one(
            "SELECT count(*) FROM entries e JOIN unnest($1::bytea[], $2::bigint[]) AS s(id, idx) \
             ON e.id = s.id AND e.idx = s.idx",
            &[&ids, &out],
        )
        .await?
        .try_get(0)?;
    if usize::try_from(found).ok() != Some(n) {
        return Err(StoreError::Corrupt(format!(
            "the sequencer stored {found} of {n} entries where it said: the ledger's schema \
             was changed without the key"
        )));
    }
    // The context index column (spec/storage.md §4.5), by id: a crash before this leaves the
    // rows without it, candidates of every lookup (fail closed, never hidden).
    let contexts: Vec<Option<&[u8]>> = batch
        .iter()
        .map(|s| s.context.as_ref().map(|h| &h.0[..]))
        .collect();
    c.execute(
        "UPDATE entries SET context = t.context \
         FROM unnest($1::bytea[], $2::bytea[]) AS t(id, context) \
         WHERE entries.id = t.id AND entries.context IS NULL",
        &[&ids, &contexts],
    )
    .await?;
    out.into_iter()
        .map(|i| to_u64(i, "append_entries"))
        .collect()
}

/// `Store::append`: check, store and integrate a caller-numbered, caller-hashed batch.
async fn append_hashed(c: &Client, batch: Vec<OwnedEntry>) -> Result<(), StoreError> {
    let (size, new) = transaction(c, async {
        let next = to_u64(
            c.query_one("SELECT next FROM sequencer FOR UPDATE", &[])
                .await?
                .try_get(0)?,
            "sequencer.next",
        )?;
        let (size, root) = lock_tree_state(c).await?;
        let views: Vec<NewEntry<'_>> = batch.iter().map(OwnedEntry::view).collect();
        if next != size {
            // Entries sequenced by `sequence` wait for the integrator: this batch is not next.
            let got = views.first().map_or(next, |e| e.index);
            return Err(StoreError::NotContiguous { got, want: next });
        }
        check_batch(size, &views)?;
        let ids: Vec<&[u8]> = batch.iter().map(|e| &e.id.0[..]).collect();
        let stored: HashSet<Vec<u8>> = c
            .query("SELECT id FROM entries WHERE id = ANY($1)", &[&ids])
            .await?
            .into_iter()
            .map(|r| r.try_get::<_, Vec<u8>>(0))
            .collect::<Result<_, _>>()?;
        if let Some(e) = batch.iter().find(|e| stored.contains(&e.id.0[..])) {
            return Err(StoreError::Duplicate(e.id));
        }
        let leaves: Vec<EntryId> = batch.iter().map(|e| e.id).collect();
        let ext = extension(c, size, &leaves).await?;
        check_root(size, &root, &ext.old_root)?;
        let given: Vec<[u8; 32]> = batch.iter().flat_map(|e| e.hashes.clone()).collect();
        if given != ext.hashes {
            // Name the first entry whose hashes differ.
            let mut at = 0;
            for e in &batch {
                let end = at + e.hashes.len();
                if ext.hashes.get(at..end) != Some(&e.hashes[..]) {
                    return Err(StoreError::WrongHashes { index: e.index });
                }
                at = end;
            }
            return Err(StoreError::WrongHashes { index: size });
        }
        insert_entries(c, &batch).await?;
        let new = size + batch.len() as u64;
        write_extension(c, size, new, &ext).await?;
        c.execute("UPDATE sequencer SET next = $1", &[&to_i64(new)?])
            .await?;
        Ok((size, new))
    })
    .await?;
    analyze_if_grown(c, size, new).await;
    Ok(())
}

async fn insert_entries(c: &Client, batch: &[OwnedEntry]) -> Result<(), StoreError> {
    let mut idx = Vec::with_capacity(batch.len());
    let mut kinds = Vec::with_capacity(batch.len());
    for e in batch {
        idx.push(to_i64(e.index)?);
        kinds.push(kind_code(e.kind)?);
    }
    let ids: Vec<&[u8]> = batch.iter().map(|e| &e.id.0[..]).collect();
    let coses: Vec<&[u8]> = batch.iter().map(|e| e.cose.as_slice()).collect();
    let labels: Vec<i16> = batch.iter().map(|e| i16::from(e.label.code())).collect();
    let chash: Vec<Option<&[u8]>> = batch
        .iter()
        .map(|e| e.content.as_ref().map(|(h, _)| &h.0[..]))
        .collect();
    let tags: Vec<Option<&[u8]>> = batch
        .iter()
        .map(|e| e.tag.as_ref().map(|t| &t[..]))
        .collect();
    let contexts: Vec<Option<&[u8]>> = batch
        .iter()
        .map(|e| e.context.as_ref().map(|h| &h.0[..]))
        .collect();
    c.execute(
        "INSERT INTO entries (idx, id, cose, kind, label, content_hash, tag, context) \
         SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[], $4::smallint[], \
                              $5::smallint[], $6::bytea[], $7::bytea[], $8::bytea[])",
        &[
            &idx, &ids, &coses, &kinds, &labels, &chash, &tags, &contexts,
        ],
    )
    .await?;
    // First bytes win, also within the batch: keep the first occurrence of each hash.
    let mut seen = HashSet::new();
    let (mut hs, mut bs): (Vec<&[u8]>, Vec<&[u8]>) = (Vec::new(), Vec::new());
    for (h, b) in batch.iter().filter_map(|e| e.content.as_ref()) {
        if seen.insert(*h) {
            hs.push(&h.0[..]);
            bs.push(b.as_slice());
        }
    }
    if !hs.is_empty() {
        c.execute(
            "INSERT INTO content (hash, bytes) SELECT * FROM unnest($1::bytea[], $2::bytea[]) \
             ON CONFLICT (hash) DO NOTHING",
            &[&hs, &bs],
        )
        .await?;
    }
    Ok(())
}

/// Locks and reads `tree_state`.
async fn lock_tree_state(c: &Client) -> Result<(u64, [u8; 32]), StoreError> {
    let row = c
        .query_one("SELECT size, root FROM tree_state FOR UPDATE", &[])
        .await?;
    Ok((
        to_u64(row.try_get(0)?, "tree_state.size")?,
        bytes32(row.try_get(1)?, "tree_state.root")?,
    ))
}

/// Recomputes the extension of the tree from `old` by `leaves` from the stored hashes, to
/// check a caller-hashed batch ([`Store::append`]) and derive its tiles.
async fn extension(c: &Client, old: u64, leaves: &[EntryId]) -> Result<Extension, StoreError> {
    let new = new_size(old, leaves)?;
    let at = extension_reads(old, new).map_err(log_err)?;
    let reads = read_hashes(c, &at).await?;
    extend(old, &reads, leaves).map_err(log_err)
}

/// The tree size after `leaves` join `old` leaves.
fn new_size(old: u64, leaves: &[EntryId]) -> Result<u64, StoreError> {
    let new = old
        .checked_add(leaves.len() as u64)
        .ok_or(StoreError::OutOfRange {
            got: u64::MAX,
            max: MAX_INDEX,
        })?;
    check_range(new)?;
    Ok(new)
}

/// [`StoreError::Corrupt`] unless `computed` (from the stored hashes) is the root `tree_state`
/// records for `size` leaves.
pub(crate) fn check_root(
    size: u64,
    stored: &[u8; 32],
    computed: &RootHash,
) -> Result<(), StoreError> {
    if *stored != computed.0 {
        return Err(StoreError::Corrupt(format!(
            "tree_state root for size {size} is not the root of the stored tree hashes"
        )));
    }
    Ok(())
}

/// Inserts the new stored hashes, upserts the tiles and updates `tree_state`.
async fn write_extension(
    c: &Client,
    old: u64,
    new: u64,
    ext: &Extension,
) -> Result<(), StoreError> {
    let start = crate::log::stored_hash_index(0, old);
    let idx: Vec<i64> = (start..)
        .take(ext.hashes.len())
        .map(to_i64)
        .collect::<Result<_, _>>()?;
    let hashes: Vec<&[u8]> = ext.hashes.iter().map(|h| &h[..]).collect();
    c.execute(
        "INSERT INTO tree_hashes (idx, hash) SELECT * FROM unnest($1::bigint[], $2::bytea[])",
        &[&idx, &hashes],
    )
    .await?;
    let mut levels = Vec::with_capacity(ext.tiles.len());
    let mut tidx = Vec::with_capacity(ext.tiles.len());
    let mut widths = Vec::with_capacity(ext.tiles.len());
    let mut data = Vec::with_capacity(ext.tiles.len());
    for (t, d) in &ext.tiles {
        levels.push(i16::from(t.level));
        tidx.push(to_i64(t.index)?);
        // width <= 256
        widths.push(i16::try_from(t.width).unwrap_or(i16::MAX));
        data.push(d.as_slice());
    }
    c.execute(
        "INSERT INTO tiles (level, idx, width, data) \
         SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::smallint[], $4::bytea[]) \
         ON CONFLICT (level, idx) DO UPDATE SET width = excluded.width, data = excluded.data",
        &[&levels, &tidx, &widths, &data],
    )
    .await?;
    c.execute(
        "UPDATE tree_state SET size = $1, root = $2",
        &[&to_i64(new)?, &&ext.new_root.0[..]],
    )
    .await?;
    Ok(())
}

async fn integrate(
    c: &Client,
    schema: &str,
    work: &dyn IntegrationWork,
    max: u64,
) -> Result<Integration, StoreError> {
    let done = transaction(c, async {
        let chosen: bool = c
            .query_one(
                "SELECT pg_try_advisory_xact_lock($1)",
                &[&lock_key("integrate", schema)],
            )
            .await?
            .try_get(0)?;
        if !chosen {
            return Ok(Integration::Busy);
        }
        let (old, root) = lock_tree_state(c).await?;
        let limit = to_i64(max.min(MAX_INDEX))?;
        let rows = c
            .query(
                "SELECT idx, id FROM entries WHERE idx >= $1 ORDER BY idx LIMIT $2",
                &[&to_i64(old)?, &limit],
            )
            .await?;
        let mut leaves = Vec::with_capacity(rows.len());
        for (want, r) in (old..).zip(&rows) {
            let idx = to_u64(r.try_get(0)?, "entries.idx")?;
            if idx != want {
                return Err(StoreError::Corrupt(format!(
                    "sequenced entries: index {idx} where {want} was expected"
                )));
            }
            leaves.push(EntryId(bytes32(r.try_get(1)?, "entries.id")?));
        }
        if leaves.is_empty() {
            return Ok(Integration::Idle { size: old });
        }
        let new = new_size(old, &leaves)?;
        let reads = read_hashes(c, &work.reads(old, new)?).await?;
        let (ext, note) = work.extend(old, &root, &reads, &leaves)?;
        write_extension(c, old, new, &ext).await?;
        c.execute(
            "INSERT INTO checkpoints (size, note) VALUES ($1, $2) \
             ON CONFLICT (size) DO UPDATE SET note = excluded.note",
            &[&to_i64(new)?, &note],
        )
        .await?;
        c.execute(
            "SELECT pg_notify($1, $2)",
            &[&format!("memlineage_{schema}"), &new.to_string()],
        )
        .await?;
        Ok(Integration::Integrated {
            old,
            new,
            root: ext.new_root,
            note,
        })
    })
    .await?;
    if let Integration::Integrated { old, new, .. } = &done {
        analyze_if_grown(c, *old, *new).await;
    }
    Ok(done)
}

async fn analyze(c: &Client) -> Result<(), StoreError> {
    c.batch_execute("ANALYZE entries, content, tree_hashes, tiles, checkpoints")
        .await?;
    Ok(())
}

/// `ANALYZE` when the tree crossed a power of two at or above [`ANALYZE_FROM`]; best effort
/// (statistics only: a failure changes no data).
async fn analyze_if_grown(c: &Client, old: u64, new: u64) {
    if new >= ANALYZE_FROM && (old < ANALYZE_FROM || new.ilog2() > old.ilog2()) {
        let _ = analyze(c).await;
    }
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
        Err(StoreError::BadLedgerName(name.to_string()))
    }
}

fn gone() -> StoreError {
    StoreError::PgWorker("worker thread gone".into())
}

/// A log failure while extending the stored tree: a missing hash stays typed, anything else
/// means the stored tree is not what it should be.
pub(crate) fn log_err(e: crate::log::LogError) -> StoreError {
    match e {
        crate::log::LogError::MissingHash(i) => StoreError::MissingHash(i),
        other => StoreError::Corrupt(other.to_string()),
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
    <[u8; 32]>::try_from(v)
        .map_err(|_| StoreError::Corrupt(format!("{what}: {len} bytes, want 32")))
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
                matches!(check_name(bad), Err(StoreError::BadLedgerName(_))),
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
