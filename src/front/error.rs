//! Errors of the front ([`super::Front`]).

use super::hook;
use crate::front::keystore::KeyStoreError;
use crate::ledger::LedgerError;

/// Errors of the front.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrontError {
    /// The ledger refused an append or a read (e.g. unknown parent, store failure).
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A principal's key could not be had (role mismatch, bad key file).
    #[error(transparent)]
    Keys(#[from] KeyStoreError),
    /// A session's read set could not be loaded or saved (its file, or pruned).
    #[error(transparent)]
    Session(#[from] hook::HookError),
    /// The agent asked to write a kind it may not write through the front.
    #[error("kind `{0}` cannot be written by the agent through the front")]
    Kind(&'static str),
    /// An entry of a batch the front writes names a later entry of the same batch (a bug of
    /// the front, never caused by input).
    #[error("an entry of a batch names a later entry of the batch")]
    BatchOrder,
}
