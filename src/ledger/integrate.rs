//! [`Integrator`]: the log's work when a PostgreSQL ledger integrates sequenced entries
//! (`spec/storage.md` §11.4): extend the stored tree by the new leaves (checking the old
//! edge hashes against the stored root) and sign the checkpoint of the new tree with the log
//! key. The store ([`PgStore::integrate`]) only reads and writes rows inside one transaction
//! and calls this for the rest, so no store holds the log key.

use crate::lineage::LabelPolicy;
use crate::log::{extend, extension_reads, Extension, LogSigner};
use crate::record::EntryId;
use crate::store::{check_root, log_err, Integration, IntegrationWork, PgStore, StoreError};
use std::sync::Arc;

/// Integrates a PostgreSQL ledger's sequenced entries into its tree, signing each new tree
/// head with the log key. Any number of processes may run one: the store's locks choose one
/// per ledger at a time ([`Integration::Busy`] for the others).
#[derive(Clone)]
pub struct Integrator {
    work: Arc<dyn IntegrationWork>,
}

impl Integrator {
    /// An integrator signing with `signer` (the ledger's log key; the checkpoints it signs are
    /// verified by anyone holding the verifier key) checkpoints that carry the ledger's
    /// labelling parameters `policy` ([`crate::Ledger::policy`], `spec/lineage.md` §2.1).
    pub fn new(signer: Arc<LogSigner>, policy: LabelPolicy) -> Self {
        Integrator {
            work: Arc::new(TreeWork { signer, policy }),
        }
    }

    /// Integrates up to `max` sequenced entries of `store` in one transaction
    /// ([`PgStore::integrate`]).
    ///
    /// # Errors
    /// As [`PgStore::integrate`]: [`StoreError::Corrupt`] when the stored edge hashes do not
    /// give the stored root (nothing is signed over them), a gap in the sequenced indexes or
    /// malformed rows; [`StoreError::Postgres`].
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
    signer: Arc<LogSigner>,
    policy: LabelPolicy,
}

impl IntegrationWork for TreeWork {
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
        let note = self
            .signer
            .sign_with(new, &ext.new_root, &self.policy.extension_line())
            .map_err(|e| StoreError::Corrupt(format!("checkpoint: {e}")))?;
        Ok((ext, note))
    }
}
