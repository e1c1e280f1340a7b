//! [`Integrator`]: the log's work when a PostgreSQL ledger integrates sequenced entries
//! (`spec/storage.md` §11.4): extend the stored tree by the new leaves (checking the old
//! edge hashes against the stored root) and sign the checkpoint of the new tree with the log
//! key. The store ([`PgStore::integrate`]) only reads and writes rows inside one transaction
//! and calls this for the rest, so no store holds the log key.

use super::signed::check_extends_signed;
use super::{Ledger, LedgerError, StoreSource};
use crate::log::{extend, extension_reads, stored_hash_index, Extension, HashSource, LogError};
use crate::record::EntryId;
use crate::store::{
    check_root, log_err, Integration, IntegrationWork, PgStore, SequencedRow, StoreError,
};
use std::sync::{Arc, Mutex};

/// Integrates a PostgreSQL ledger's sequenced entries into its tree, signing each new tree
/// head with the log key. Any number of processes may run one: the store's locks choose one
/// per ledger at a time ([`Integration::Busy`] for the others).
///
/// The log key signs only entries it admitted: before a tree head is signed, every new
/// entry is verified and passes the admission rule (`spec/lineage.md` §5.1) against the
/// integrated log, through a handle of the ledger the integrator holds. So sequenced rows a
/// store-only attacker wrote (another ledger's entries, an unbound writer, a forged
/// keyring entry) are never signed into a checkpoint (`spec/storage.md` §11.4).
#[derive(Clone)]
pub struct Integrator {
    work: Arc<dyn IntegrationWork>,
}

impl Integrator {
    /// An integrator working through `ledger`, a handle of the ledger to integrate (opened
    /// with its log key, [`Ledger::open`]): it admits the sequenced entries against the
    /// handle's lineage state (refreshed at each integration) and signs checkpoints with
    /// the handle's log key and labelling parameters ([`Ledger::label_policy`],
    /// `spec/lineage.md` §2.1). The handle should have its own connection
    /// ([`PgStore::connect`]) apart from the store passed to [`Integrator::integrate`].
    pub fn new(ledger: Ledger<PgStore>) -> Self {
        Integrator {
            work: Arc::new(TreeWork {
                ledger: Mutex::new(ledger),
                last: Mutex::new(None),
            }),
        }
    }

    /// Integrates up to `max` sequenced entries of `store` in one transaction
    /// ([`PgStore::integrate`]): the longest run of them the log admits.
    ///
    /// # Errors
    /// As [`PgStore::integrate`]: [`StoreError::NotAdmitted`] when the next sequenced entry
    /// is refused by admission (nothing is signed; integration stays stopped there until
    /// the row is mended); [`StoreError::Corrupt`] when the stored edge hashes do not give
    /// the stored root (nothing is signed over them), a gap in the sequenced indexes,
    /// malformed rows, or a handle that cannot catch up with the integrated log;
    /// [`StoreError::Postgres`].
    pub fn integrate(&self, store: &PgStore, max: u64) -> Result<Integration, StoreError> {
        store.integrate(&self.work, max)
    }

    /// [`Integrator::integrate`], awaiting instead of blocking.
    ///
    /// # Errors
    /// As [`Integrator::integrate`].
    pub async fn integrate_async(
        &self,
        store: &PgStore,
        max: u64,
    ) -> Result<Integration, StoreError> {
        store.integrate_async(&self.work, max).await
    }
}

/// The log's side of one integration step ([`IntegrationWork`]).
struct TreeWork {
    ledger: Mutex<Ledger<PgStore>>,
    /// The last head this integrator signed (a store-only attacker can delete it from the
    /// store; the next head must still extend it).
    last: Mutex<Option<Vec<u8>>>,
}

impl TreeWork {
    fn ledger(&self) -> Result<std::sync::MutexGuard<'_, Ledger<PgStore>>, StoreError> {
        self.ledger.lock().map_err(|_| poisoned())
    }
}

/// A lock of the integrator left poisoned by a panic during an earlier integration.
fn poisoned() -> StoreError {
    StoreError::Corrupt {
        reason: "integrator: a previous integration panicked".into(),
    }
}

impl IntegrationWork for TreeWork {
    fn admit(&self, old: u64, rows: &[SequencedRow]) -> Result<usize, StoreError> {
        self.ledger()?
            .admit_sequenced(old, rows)
            .map_err(|e| match e {
                LedgerError::Store(s) => s,
                other => StoreError::Corrupt {
                    reason: format!("integrator's handle: {other}"),
                },
            })
    }

    fn reads(&self, old: u64, new: u64) -> Result<Vec<u64>, StoreError> {
        extension_reads(old, new).map_err(log_err)
    }

    fn extend(
        &self,
        old: u64,
        stored_root: &[u8; 32],
        reads: &[[u8; 32]],
        leaves: &[EntryId],
    ) -> Result<(Extension, Vec<u8>), StoreError> {
        let ext = extend(old, reads, leaves).map_err(log_err)?;
        // Never sign a head over stored hashes that do not give the stored root.
        check_root(old, stored_root, &ext.old_root)?;
        let new = old + leaves.len() as u64;
        let ledger = self.ledger()?;
        let note = ledger
            .signer
            .sign_with(new, &ext.new_root, &ledger.label_policy().extension_line())
            .map_err(|e| StoreError::Corrupt {
                reason: format!("checkpoint: {e}"),
            })?;
        // Never sign a fork: the new head must extend every head the log key signed that the
        // integrator can find (the store's, the caller's pins, its own last one), with the
        // old tree's stored hashes, which the stored root alone does not vouch for (a
        // store-only attacker writes both). The note is published only if it does.
        let mut known = ledger.known.clone();
        let mut last = self.last.lock().map_err(|_| poisoned())?;
        known.extend(last.clone());
        let refused = |e: LedgerError| match e {
            LedgerError::Store(s) => s,
            e => StoreError::Corrupt {
                reason: format!(
                "integration refused, the stored tree does not extend what the log key signed: {e}"
            ),
            },
        };
        let verifier = ledger.verifier().map_err(refused)?;
        let head = verifier
            .verify(&note)
            .map_err(|e| refused(LedgerError::from(e)))?;
        let src = Overlay {
            store: StoreSource(&ledger.store),
            start: stored_hash_index(0, old),
            new: &ext.hashes,
        };
        check_extends_signed(&ledger.store, &verifier, &known, &head, &src).map_err(refused)?;
        *last = Some(note.clone());
        Ok((ext, note))
    }
}

/// The stored hashes of a tree being extended: the committed ones, and the new leaves' from
/// `start` on (written by the integration's own transaction, not yet visible to others).
struct Overlay<'a> {
    store: StoreSource<'a, PgStore>,
    start: u64,
    new: &'a [[u8; 32]],
}

impl HashSource for Overlay<'_> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError> {
        let stored: Vec<u64> = indexes
            .iter()
            .copied()
            .filter(|&i| i < self.start)
            .collect();
        let mut from_store = self.store.read_hashes(&stored)?.into_iter();
        indexes
            .iter()
            .map(|&i| match i.checked_sub(self.start) {
                Some(k) => usize::try_from(k)
                    .ok()
                    .and_then(|k| self.new.get(k).copied())
                    .ok_or(LogError::MissingHash(i)),
                None => from_store.next().ok_or(LogError::MissingHash(i)),
            })
            .collect()
    }
}
