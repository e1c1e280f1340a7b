//! The rows-chain check (`spec/storage.md` §6.1 item 2; issue 25 class 9): nothing is written
//! into a store whose entry rows do not chain, i.e. one from which a store-only attacker
//! deleted a row in the middle (the tree hashes, the seal and every remaining row tag still
//! verify; the tree size, `max(idx) + 1`, is unchanged).
//!
//! # Why it is not flat
//! The check counts the rows: O(n). It cannot be made O(log n) soundly. The attacker writes
//! every byte of the store, so a check that reads data depending on fewer than all `n` rows
//! cannot tell the store from the same store with one row it did not read deleted: every
//! signed note, tag and tree hash it reads is unchanged. What can be flat is *when* it costs:
//! a long-lived front ([`RowsCheck::spawn`]) counts on a thread of its own, on a store handle
//! of its own, while it already answers, and [`Ledger::hold_writes`] refuses every write of
//! its handle until the count has passed. Reads need no wait: a deleted row's entry is absent,
//! and what cannot be found counts as the worst label (fail closed).

use super::{Ledger, LedgerError};
use crate::store::Store;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How many times [`check_rows_chain`] counts again when the log grew while it counted.
const ATTEMPTS: usize = 3;

/// Why a store's entry rows are not known to chain. All but [`RowsError::Pending`] are
/// kept for every later write of a handle that holds its writes ([`Ledger::hold_writes`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RowsError {
    /// The store holds another number of entry rows than the tree has leaves: rows were
    /// deleted (or inserted) without the key. Untrusted input (the store) triggers it.
    #[error(
        "the store holds {rows} entry rows for a log of {size}: rows were deleted without the \
         key (run `memlineage verify`); refusing to write into it or to rebuild a session from \
         it"
    )]
    Deleted {
        /// Rows counted.
        rows: u64,
        /// Tree size (`max(idx) + 1`) read before and after counting.
        size: u64,
    },
    /// The log grew while the rows were counted, `ATTEMPTS` times in a row (other processes
    /// appending): nothing is concluded, so nothing is written.
    #[error(
        "the log grew while its entry rows were counted, {ATTEMPTS} times; refusing to write \
         into it until they are counted"
    )]
    Moving,
    /// The store could not be read to count (its error, as text, kept for later writes).
    #[error("the store's entry rows could not be counted ({detail}); refusing to write into it")]
    Unread {
        /// The store's error message (or why the count stopped), kept as text so that the
        /// error can be cloned for every later write.
        detail: String,
    },
    /// The count started when the handle opened ([`RowsCheck`]) has not finished: this
    /// handle writes nothing until it has.
    #[error(
        "the store's entry rows are still being counted (started when the ledger was opened); \
         refusing to write into it until they are"
    )]
    Pending,
}

/// Checks that `store`'s entry rows chain: [`Store::entry_count`] equals
/// [`Store::tree_size`], read before and after counting (a count that saw rows appended
/// meanwhile is taken again, at most `ATTEMPTS` times). O(n).
///
/// # Errors
/// [`RowsError::Deleted`] when the counts differ; [`RowsError::Moving`]; store errors.
pub fn check_rows_chain<S: Store>(store: &S) -> Result<(), LedgerError> {
    for _ in 0..ATTEMPTS {
        let size = store.tree_size()?;
        let rows = store.entry_count()?;
        if store.tree_size()? != size {
            continue;
        }
        if rows != size {
            return Err(RowsError::Deleted { rows, size }.into());
        }
        return Ok(());
    }
    Err(RowsError::Moving.into())
}

/// A rows-chain check running on a thread of its own ([`RowsCheck::spawn`]); clones share
/// it. Hand it to [`Ledger::hold_writes`].
#[derive(Clone, Debug)]
pub struct RowsCheck(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    outcome: Mutex<Option<Result<(), RowsError>>>,
    done: Condvar,
}

impl RowsCheck {
    /// Starts [`check_rows_chain`] on a new thread, on the store `open` gives there (a handle
    /// of its own: the ledger's store need not be shareable between threads). A failure to
    /// open it is the check's failure ([`RowsError::Unread`]), as is a thread that ends
    /// without an answer.
    pub fn spawn<S, F>(open: F) -> Self
    where
        S: Store,
        F: FnOnce() -> Result<S, LedgerError> + Send + 'static,
    {
        let shared = Arc::new(Shared::default());
        let report = Report {
            shared: Arc::clone(&shared),
            outcome: None,
        };
        std::thread::spawn(move || {
            let r = open().and_then(|s| check_rows_chain(&s));
            report.finish(r.map_err(|e| match e {
                LedgerError::Rows(r) => r,
                e => RowsError::Unread {
                    detail: e.to_string(),
                },
            }));
        });
        RowsCheck(shared)
    }

    /// The check's outcome, waiting at most `timeout` for it: `Err(RowsError::Pending)` while
    /// it runs.
    ///
    /// # Errors
    /// The check's [`RowsError`], or [`RowsError::Pending`].
    pub fn wait(&self, timeout: Duration) -> Result<(), RowsError> {
        let Ok(outcome) = self.0.outcome.lock() else {
            return Err(RowsError::Unread {
                detail: "the check's lock was poisoned".into(),
            });
        };
        match self
            .0
            .done
            .wait_timeout_while(outcome, timeout, |o| o.is_none())
        {
            Ok((o, _)) => o.clone().unwrap_or(Err(RowsError::Pending)),
            Err(_) => Err(RowsError::Unread {
                detail: "the check's lock was poisoned".into(),
            }),
        }
    }

    /// A check that has already given `outcome` (for tests and for callers that counted
    /// themselves).
    pub fn done(outcome: Result<(), RowsError>) -> Self {
        let shared = Shared {
            outcome: Mutex::new(Some(outcome)),
            done: Condvar::new(),
        };
        RowsCheck(Arc::new(shared))
    }
}

/// Publishes the check's outcome when the thread ends, however it ends (a thread that
/// unwinds reports a failure, never leaves the check pending for ever).
struct Report {
    shared: Arc<Shared>,
    outcome: Option<Result<(), RowsError>>,
}

impl Report {
    /// Publishes `outcome` (by dropping `self`).
    fn finish(mut self, outcome: Result<(), RowsError>) {
        self.outcome = Some(outcome);
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        let outcome = self.outcome.take().unwrap_or_else(|| {
            Err(RowsError::Unread {
                detail: "the check stopped before it ended".into(),
            })
        });
        if let Ok(mut o) = self.shared.outcome.lock() {
            *o = Some(outcome);
        }
        self.shared.done.notify_all();
    }
}

impl<S: Store> Ledger<S> {
    /// Holds every write of this handle (appends, row tags, checkpoints) until `check` has
    /// passed: while it runs a write is refused with [`RowsError::Pending`] (nothing is
    /// stored), and once it failed every write is refused with its error. Reads are not held.
    /// A long-lived front opens flat and counts its store's rows beside its start-up
    /// ([`RowsCheck::spawn`]) instead of before it (`spec/storage.md` §6.1 item 2).
    pub fn hold_writes(&mut self, check: RowsCheck) {
        self.rows_hold = Some(check);
    }

    /// Waits at most `timeout` for the check [`Ledger::hold_writes`] holds this handle's
    /// writes for; `Ok` when writes are allowed (no check held, or it passed).
    ///
    /// # Errors
    /// [`RowsError::Pending`] while it runs; the check's error once it failed.
    pub fn await_writes(&mut self, timeout: Duration) -> Result<(), RowsError> {
        let Some(check) = &self.rows_hold else {
            return Ok(());
        };
        check.wait(timeout)?;
        self.rows_hold = None;
        Ok(())
    }

    /// [`Ledger::await_writes`] without waiting: called before every store write.
    pub(super) fn writable(&mut self) -> Result<(), LedgerError> {
        Ok(self.await_writes(Duration::ZERO)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spawned_check_reports_an_open_failure_as_unread() {
        let check =
            RowsCheck::spawn(|| -> Result<crate::MemoryStore, _> { Err(LedgerError::NotALedger) });
        let got = check.wait(Duration::from_secs(30));
        assert_eq!(
            got,
            Err(RowsError::Unread {
                detail: LedgerError::NotALedger.to_string()
            })
        );
    }

    #[test]
    fn a_check_whose_thread_panics_fails_rather_than_stays_pending() {
        let check = RowsCheck::spawn(|| -> Result<crate::MemoryStore, LedgerError> {
            panic!("the opener fails")
        });
        assert!(matches!(
            check.wait(Duration::from_secs(30)),
            Err(RowsError::Unread { .. })
        ));
    }

    #[test]
    fn every_message_names_the_refusal() {
        let deleted = RowsError::Deleted { rows: 2, size: 3 }.to_string();
        assert!(deleted.contains("2 entry rows for a log of 3"), "{deleted}");
        assert!(deleted.contains("rows were deleted"), "{deleted}");
        assert!(RowsError::Moving.to_string().contains("grew"));
        assert!(RowsError::Unread {
            detail: "disk".into()
        }
        .to_string()
        .contains("(disk)"));
        assert!(RowsError::Pending
            .to_string()
            .contains("still being counted"));
    }
}
