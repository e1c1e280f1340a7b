//! [`Integrator`]: the log's work when a PostgreSQL ledger integrates sequenced entries
//! (`spec/storage.md` §11.4): extend the stored tree by the new leaves (checking the old
//! edge hashes against the stored root) and sign the checkpoint of the new tree with the log
//! key. The store ([`PgStore::integrate`]) only reads and writes rows inside one transaction
//! and calls this for the rest, so no store holds the log key.

use super::{Ledger, LedgerError};
use crate::log::{extend, extension_reads, Extension};
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
    /// the handle's log key and labelling parameters ([`Ledger::policy`],
    /// `spec/lineage.md` §2.1). The handle should have its own connection
    /// ([`PgStore::connect`]) apart from the store passed to [`Integrator::integrate`].
    pub fn new(ledger: Ledger<PgStore>) -> Self {
        Integrator {
            work: Arc::new(TreeWork {
                ledger: Mutex::new(ledger),
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
}

impl TreeWork {
    fn ledger(&self) -> Result<std::sync::MutexGuard<'_, Ledger<PgStore>>, StoreError> {
        self.ledger
            .lock()
            .map_err(|_| StoreError::Corrupt("integrator: a previous integration panicked".into()))
    }
}

impl IntegrationWork for TreeWork {
    fn admit(&self, old: u64, rows: &[SequencedRow]) -> Result<usize, StoreError> {
        self.ledger()?
            .admit_sequenced(old, rows)
            .map_err(|e| match e {
                LedgerError::Store(s) => s,
                other => StoreError::Corrupt(format!("integrator's handle: {other}")),
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
            .sign_with(new, &ext.new_root, &ledger.policy().extension_line())
            .map_err(|e| StoreError::Corrupt(format!("checkpoint: {e}")))?;
        Ok((ext, note))
    }
}
