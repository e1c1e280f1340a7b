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
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

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
    /// A second read handle ([`Explorer::add_reader`]) does not see the ledger the first one
    /// indexed: another process appended in between (start again).
    #[error(
        "the ledger changed while the explorer opened it ({indexed} entries indexed, a reader \
         sees {seen}): start it again"
    )]
    Changed {
        /// Entries the index holds.
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

/// One ledger, opened for reading, with the index the pages need.
///
/// The explorer shows the ledger as it was when [`Explorer::open`] ran (entries appended later
/// by other processes appear after a restart); the on-demand audit reads the file as it is.
/// Pages are rendered by read handles of their own ([`Explorer::add_reader`]) sharing one
/// index, so that one slow page does not hold up the others.
pub struct Explorer {
    ledger: Ledger<SqliteStore>,
    path: PathBuf,
    policy: Arc<Policy>,
    index: Arc<EntryIndex>,
    head: Arc<overview::Head>,
    poison: Arc<poison::Poison>,
    readers: Vec<Ledger<SqliteStore>>,
}

impl Explorer {
    /// Opens the explorer over `ledger`, already opened with its log key, stored at `path`
    /// (the on-demand audit opens its own read connection there), deciding tool calls under
    /// `policy`. Verifies every entry's signature once (in batches over all cores) to build the
    /// index of kinds, writers, parents and children, verifies the latest stored checkpoint
    /// against the log key, and computes what is poisoned (each flag's reach size, each
    /// quarantined entry's receipt source) once.
    ///
    /// # Errors
    /// Store errors while reading entries. An entry that does not verify is no error: it is
    /// indexed as unverified.
    pub fn open(
        ledger: Ledger<SqliteStore>,
        path: &Path,
        policy: Policy,
    ) -> Result<Self, ExploreError> {
        let index = EntryIndex::build(&ledger)?;
        let head = overview::Head::read(&ledger);
        let poison = poison::Poison::build(&ledger, &index);
        // The landing page's first rows are what everyone opens first: their receipts are
        // made now rather than on that first request.
        poison.warm(&ledger, PAGE_SIZE);
        Ok(Explorer {
            ledger,
            path: path.to_path_buf(),
            policy: Arc::new(policy),
            index: Arc::new(index),
            head: Arc::new(head),
            poison: Arc::new(poison),
            readers: Vec::new(),
        })
    }

    /// Adds a read handle on the same file (opened as the first was, with its log key): pages
    /// are rendered on as many handles at once as the explorer has.
    ///
    /// # Errors
    /// [`ExploreError::Changed`] when the handle does not see the entries the index holds.
    pub fn add_reader(&mut self, ledger: Ledger<SqliteStore>) -> Result<(), ExploreError> {
        if ledger.len() != self.index.len() || ledger.vkey() != self.ledger.vkey() {
            return Err(ExploreError::Changed {
                indexed: self.index.len(),
                seen: ledger.len(),
            });
        }
        self.readers.push(ledger);
        Ok(())
    }

    /// The verified index of the ledger's entries.
    pub fn index(&self) -> &EntryIndex {
        &self.index
    }

    /// This explorer and one sibling per added reader, sharing the index.
    fn split(mut self) -> Vec<Explorer> {
        let readers = std::mem::take(&mut self.readers);
        let mut all = Vec::with_capacity(readers.len() + 1);
        for ledger in readers {
            all.push(Explorer {
                ledger,
                path: self.path.clone(),
                policy: Arc::clone(&self.policy),
                index: Arc::clone(&self.index),
                head: Arc::clone(&self.head),
                poison: Arc::clone(&self.poison),
                readers: Vec::new(),
            });
        }
        all.insert(0, self);
        all
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
