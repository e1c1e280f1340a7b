//! The ledger explorer: a read-only web view of one SQLite ledger, for the operator who asks,
//! after an advisory, what the poison reached and why (`memlineage serve`, `spec/explorer.md`).
//!
//! Pages (`spec/explorer.md` §2): an overview (checkpoint, on-demand full audit with progress,
//! counts by label, active flags), a paged and filterable entry list, one page per entry (its
//! verified text, parents and children, label and explanation path, quarantine state, proof
//! bundle), the quarantine view of each flag (what it reached, as "N of SIZE", each entry's
//! receipt sentence and a server-rendered SVG of the reach) and the gate's decisions on the
//! ledger's tool-call entries.
//!
//! Everything shown is read through the verified [`Ledger`] API: labels from the sealed index
//! ([`Ledger::label`]), entries re-verified ([`Ledger::decode_many`], [`Ledger::get`]), content
//! checked against its signed hash ([`Ledger::content`]), receipts from
//! [`crate::forensics::receipt`], audits from [`crate::audit`]. What does not verify is shown
//! as `UNVERIFIED` and counted as External (fail closed). Nothing here writes to the store.
//!
//! Safety of the page (`spec/explorer.md` §4): every text comes from agents and tools and may
//! be hostile. All HTML is produced by [`maud`] templates, which escape every interpolation;
//! control and bidi characters are shown as visible escapes; no URL from an entry becomes a
//! link; every response carries a Content-Security-Policy without any script source. The
//! server binds to loopback unless an access token is given ([`Access`]).

use crate::gate::Policy;
use crate::ledger::{Ledger, LedgerError};
use crate::store::{SqliteStore, StoreError};
use std::borrow::Cow;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

mod calls;
mod entries;
mod entry;
mod find;
mod graph;
mod guard;
mod index;
mod landing;
mod lineage;
mod overview;
mod page;
mod poison;
mod quarantine;
mod routes;
mod verify;

pub use guard::{Access, Token, TokenError};
pub use index::EntryIndex;

/// How long a page that needs the whole index waits for it before saying it is still
/// indexing.
const INDEX_WAIT: Duration = Duration::from_secs(2);

/// Entries shown per page of the entry list, the quarantine lists and the gate decisions.
pub const PAGE_SIZE: usize = 100;

/// Threads rendering pages at most; past the read handles they wait for one.
const MAX_RENDER_THREADS: usize = 32;

/// The explorer could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExploreError {
    /// Opening or indexing the ledger failed (wrong key, broken seal, store error).
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// Reading the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A non-loopback address was asked for without an access token (`spec/explorer.md` §5).
    #[error(
        "refusing to serve on {0}, which is not a loopback address, without --token (anyone \
         who can reach it could read the ledger)"
    )]
    NotLoopback(SocketAddr),
    /// A second read handle ([`Explorer::add_reader`], [`Explorer::indexer`]) does not see
    /// the ledger the first one does: another process appended in between (start again).
    #[error(
        "the ledger changed while the explorer opened it (the first handle sees {indexed} \
         entries, another {seen}): start it again"
    )]
    Changed {
        /// Entries the first handle sees.
        indexed: u64,
        /// Entries the new handle sees.
        seen: u64,
    },
    /// Binding the listening socket or running the HTTP server failed.
    #[error("serving on {addr}: {source}")]
    Io {
        /// The address asked for.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
}

/// One ledger, opened for reading; the index the pages need is built in the background
/// ([`Indexer`]).
///
/// The explorer shows the ledger as it was when [`Explorer::open`] ran (entries appended later
/// by other processes appear after a restart); the on-demand audit reads the file as it is.
/// Pages are rendered by read handles of their own ([`Explorer::add_reader`]) sharing one
/// index, so that one slow page does not hold up the others. Until the index is complete, a
/// page verifies the entries it shows itself, and a page that needs the whole index says so
/// (`spec/explorer.md` §3.3).
pub struct Explorer {
    ledger: Ledger<SqliteStore>,
    path: PathBuf,
    policy: Arc<Policy>,
    head: Arc<overview::Head>,
    /// The complete index, once this handle has seen it published.
    indexed: Option<Arc<Indexed>>,
    indexing: Arc<Indexing>,
    readers: Vec<Ledger<SqliteStore>>,
}

/// What the background indexing makes: the verified index and what is poisoned.
struct Indexed {
    index: EntryIndex,
    poison: poison::Poison,
}

/// The state of the background indexing, shared by every read handle and the [`Indexer`].
#[derive(Default)]
struct Indexing {
    /// The complete index, published once.
    done: OnceLock<Arc<Indexed>>,
    /// Why indexing stopped (a store error), if it did.
    failed: OnceLock<String>,
    /// The rows-chain check ([`Ledger::check_rows_chain`]): `Ok` or the failure's sentence.
    rows: OnceLock<Result<(), String>>,
    /// Leaves read and verified so far.
    progress: AtomicU64,
    /// Signalled when `done` or `failed` is set.
    ended: (Mutex<bool>, Condvar),
    /// Receipt sentences already made.
    receipts: poison::ReceiptCache,
}

impl Indexing {
    /// Waits up to `timeout` for the index; `None` when it is not complete by then.
    fn wait(&self, timeout: Duration) -> Option<Arc<Indexed>> {
        let (m, cv) = &self.ended;
        let guard = lock(m);
        if !*guard {
            let _ = cv.wait_timeout_while(guard, timeout, |ended| !*ended);
        }
        self.done.get().cloned()
    }

    fn end(&self) {
        let (m, cv) = &self.ended;
        *lock(m) = true;
        cv.notify_all();
    }
}

impl Explorer {
    /// Opens the explorer over `ledger`, already opened with its log key, stored at `path`
    /// (the on-demand audit opens its own read connection there), deciding tool calls under
    /// `policy`. Reads no entry: verifies the latest stored checkpoint against the log key
    /// (O(log n) stored hashes for its root). The index is built by the [`Indexer`] that
    /// [`Explorer::indexer`] gives, on a handle of its own.
    pub fn open(ledger: Ledger<SqliteStore>, path: &Path, policy: Policy) -> Explorer {
        let head = overview::Head::read(&ledger);
        Explorer {
            ledger,
            path: path.to_path_buf(),
            policy: Arc::new(policy),
            head: Arc::new(head),
            indexed: None,
            indexing: Arc::new(Indexing::default()),
            readers: Vec::new(),
        }
    }

    /// Adds a read handle on the same file (opened as the first was, with its log key): pages
    /// are rendered on as many handles at once as the explorer has.
    ///
    /// # Errors
    /// [`ExploreError::Changed`] when the handle does not see the entries the first one does.
    pub fn add_reader(&mut self, ledger: Ledger<SqliteStore>) -> Result<(), ExploreError> {
        self.same_ledger(&ledger)?;
        self.readers.push(ledger);
        Ok(())
    }

    /// The indexer of this explorer, on `ledger`, a handle of its own on the same file (opened
    /// as the first was): run it on a thread of its own once the server is bound. Pages that
    /// need the whole index say "still indexing" until it has run.
    ///
    /// # Errors
    /// [`ExploreError::Changed`] when the handle does not see the entries the first one does.
    pub fn indexer(&self, ledger: Ledger<SqliteStore>) -> Result<Indexer, ExploreError> {
        self.same_ledger(&ledger)?;
        Ok(Indexer {
            ledger,
            indexing: Arc::clone(&self.indexing),
        })
    }

    fn same_ledger(&self, ledger: &Ledger<SqliteStore>) -> Result<(), ExploreError> {
        if ledger.len() != self.ledger.len() || ledger.vkey() != self.ledger.vkey() {
            return Err(ExploreError::Changed {
                indexed: self.ledger.len(),
                seen: ledger.len(),
            });
        }
        Ok(())
    }

    /// The complete index, or the page that says it is not complete yet.
    fn indexed(&self) -> Result<&Indexed, routes::PageError> {
        if let Some(ix) = &self.indexed {
            return Ok(ix);
        }
        use axum::http::StatusCode;
        Err(match self.indexing.failed.get() {
            Some(e) => routes::PageError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Indexing failed",
                format!("indexing the ledger failed, so this cannot be shown: {e}"),
            ),
            None => routes::PageError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "Still indexing",
                format!(
                    "still indexing: this needs every entry verified, which runs in the \
                     background since start-up ({} of {} entries verified so far). Reload in \
                     a moment.",
                    self.indexing.progress.load(Ordering::Relaxed),
                    self.ledger.len()
                ),
            ),
        })
    }

    /// Takes the complete index once it is published.
    fn catch_up(&mut self) {
        if self.indexed.is_none() {
            self.indexed = self.indexing.done.get().cloned();
        }
    }

    /// The row of leaf `i`: from the complete index, or else read and verified now
    /// ([`index::verify_rows`], the index's own door). `None` beyond the log; a leaf whose
    /// bytes cannot be read is a row that did not verify (fail closed).
    fn row(&self, i: u64) -> Option<Cow<'_, index::Row>> {
        if let Some(ix) = &self.indexed {
            return ix.index.row(i).map(Cow::Borrowed);
        }
        if i >= self.ledger.len() {
            return None;
        }
        let row = index::verify_rows(&self.ledger, i, i + 1)
            .ok()
            .and_then(|rows| rows.into_iter().next())
            .unwrap_or(index::Row {
                id: crate::record::EntryId::default(),
                shape: None,
            });
        Some(Cow::Owned(row))
    }

    /// The receipt of `id` as pieces, made once and kept (an error as its sentence).
    fn receipt(
        &self,
        id: &crate::record::EntryId,
    ) -> Result<Vec<crate::forensics::receipt::Piece>, String> {
        self.indexing.receipts.get(&self.ledger, id)
    }

    /// This explorer and one sibling per added reader, sharing the indexing.
    fn split(mut self) -> Vec<Explorer> {
        let readers = std::mem::take(&mut self.readers);
        let mut all = Vec::with_capacity(readers.len() + 1);
        for ledger in readers {
            all.push(Explorer {
                ledger,
                path: self.path.clone(),
                policy: Arc::clone(&self.policy),
                head: Arc::clone(&self.head),
                indexed: self.indexed.clone(),
                indexing: Arc::clone(&self.indexing),
                readers: Vec::new(),
            });
        }
        all.insert(0, self);
        all
    }
}

/// Builds the explorer's index on a read handle of its own (`spec/explorer.md` §3.3): checks
/// that the store's rows chain, reads and verifies every entry, computes what is poisoned and
/// publishes it to every page at once. Meant for a thread of its own, after the server is
/// bound and its address printed.
pub struct Indexer {
    ledger: Ledger<SqliteStore>,
    indexing: Arc<Indexing>,
}

/// What the [`Indexer`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexSummary {
    /// Leaves indexed.
    pub entries: u64,
    /// Leaves whose stored bytes did not verify (shown as `UNVERIFIED`).
    pub unverified: u64,
    /// Whether the store's rows chain ([`Ledger::check_rows_chain`]).
    pub rows_chain: bool,
}

impl Indexer {
    /// Runs the indexing to its end. Pages see the index as soon as it is complete.
    ///
    /// # Errors
    /// Store errors while reading entries (pages then say indexing failed). An entry that does
    /// not verify is no error: it is indexed as unverified.
    pub fn run(self) -> Result<IndexSummary, ExploreError> {
        let Indexer { ledger, indexing } = self;
        // However it ends (a store error, or a panic of this thread), pages stop waiting, and
        // say it failed rather than "still indexing" forever.
        let ended = Ended(&indexing);
        let rows = ledger.check_rows_chain().map_err(|e| e.to_string());
        let rows_chain = rows.is_ok();
        let _ = indexing.rows.set(rows);
        let index = EntryIndex::build(&ledger, &indexing.progress).inspect_err(|e| {
            let _ = indexing.failed.set(e.to_string());
        })?;
        let poison = poison::Poison::build(&ledger, &index);
        let summary = IndexSummary {
            entries: index.len(),
            unverified: index.label_counts().1,
            rows_chain,
        };
        let indexed = Arc::new(Indexed { index, poison });
        let _ = indexing.done.set(Arc::clone(&indexed));
        drop(ended);
        // The landing page's first rows are what everyone opens first: their receipts are
        // made now rather than on that first request.
        indexed.poison.warm(&ledger, &indexing.receipts, PAGE_SIZE);
        Ok(summary)
    }
}

/// Ends the indexing when dropped: marks it failed unless the index was published, and wakes
/// the pages waiting for it.
struct Ended<'a>(&'a Indexing);

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        if self.0.done.get().is_none() {
            let _ = self
                .0
                .failed
                .set("indexing stopped before it was complete".to_string());
        }
        self.0.end();
    }
}

/// A listening explorer: bound, not yet serving.
pub struct Server {
    listener: std::net::TcpListener,
    app: Arc<routes::App>,
    runtime: tokio::runtime::Runtime,
}

impl Server {
    /// Binds `addr` for `explorer` under `access`.
    ///
    /// # Errors
    /// [`ExploreError::NotLoopback`] when `addr` is not a loopback address and `access` has no
    /// token; [`ExploreError::Io`] when the socket cannot be bound or the runtime not built.
    pub fn bind(
        explorer: Explorer,
        addr: SocketAddr,
        access: Access,
    ) -> Result<Server, ExploreError> {
        if !addr.ip().is_loopback() && !access.has_token() {
            return Err(ExploreError::NotLoopback(addr));
        }
        let io = |source| ExploreError::Io { addr, source };
        let listener = std::net::TcpListener::bind(addr).map_err(io)?;
        listener.set_nonblocking(true).map_err(io)?;
        // Timers too: hyper's header-read timeout and axum's back-off after a failed `accept`
        // (too many open files) sleep on the runtime; without timers the first panics the
        // server and the second is off, so idle half-sent requests were held forever.
        // Pages render on the blocking pool, one per read handle at a time (routes::Pool); the
        // runtime's own thread only moves bytes, so /style.css never waits for a page.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(MAX_RENDER_THREADS)
            .build()
            .map_err(io)?;
        let app = Arc::new(routes::App::new(explorer.split(), access));
        Ok(Server {
            listener,
            app,
            runtime,
        })
    }

    /// The address actually bound (the port the system chose for port 0).
    ///
    /// # Errors
    /// [`ExploreError::Io`] when the socket cannot tell.
    pub fn local_addr(&self) -> Result<SocketAddr, ExploreError> {
        self.listener
            .local_addr()
            .map_err(|source| ExploreError::Io {
                addr: SocketAddr::from(([127, 0, 0, 1], 0)),
                source,
            })
    }

    /// Serves until the process ends.
    ///
    /// # Errors
    /// [`ExploreError::Io`] when the listener fails.
    pub fn run(self) -> Result<(), ExploreError> {
        let addr = self.local_addr()?;
        let io = |source| ExploreError::Io { addr, source };
        let Server {
            listener,
            app,
            runtime,
        } = self;
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).map_err(io)?;
            axum::serve(listener, routes::router(app)).await.map_err(io)
        })
    }
}

/// Locks `m` even if a page panicked while holding it: the explorer only reads, so the state
/// behind a poisoned lock is still the state it was.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}
