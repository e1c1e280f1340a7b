//! What a handle takes from the log key's signatures rather than from the rows: the newest
//! signed checkpoint it can find, and the labelling parameters that checkpoint signs
//! (`spec/lineage.md` §2.1). The store is untrusted: a setting in its `meta` table is believed
//! only when a checkpoint the log key signed says the same.

use super::LedgerError;
use crate::lineage::{LabelPolicy, SignedPolicyError, WeakRule};
use crate::log::{HashSource, LogVerifier, VerifiedCheckpoint};
use crate::record::Weight;
use crate::store::{Store, META_RULE, META_TAU};

/// Why a ledger's labelling parameters cannot be believed (`spec/lineage.md` §2.1). Each is
/// what a store-only attacker who edits the settings gets; the ledger is not opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParametersError {
    /// The store's settings differ from those the newest signed checkpoint signs.
    #[error(
        "the ledger's stored labelling parameters (tau {stored_tau}, rule {stored_rule}) \
         differ from those its log key signed (tau {signed_tau}, rule {signed_rule}): the \
         settings were changed without the key (run `memlineage verify`)",
        stored_tau = .stored.tau, stored_rule = .stored.weak_rule.name(),
        signed_tau = .signed.tau, signed_rule = .signed.weak_rule.name()
    )]
    Changed {
        /// What the checkpoint signs.
        signed: LabelPolicy,
        /// What the store says.
        stored: LabelPolicy,
    },
    /// No signed checkpoint carries parameters (a ledger written before they were signed, or
    /// one whose every checkpoint was deleted): the stored ones are not believed, the defaults
    /// no more than others (a ledger made with other parameters would otherwise be opened
    /// under the defaults by whoever deletes its checkpoints). `memlineage checkpoint
    /// --adopt-stored-parameters` signs them, after `memlineage verify --tau T --rule R`
    /// confirmed them.
    #[error(
        "the ledger's labelling parameters (tau {tau}, rule {rule}) are signed by no checkpoint \
         (a ledger older than signed parameters, or its checkpoints were deleted): check them \
         with `memlineage verify --tau T --rule R`, then sign them with `memlineage checkpoint \
         --adopt-stored-parameters`",
        tau = .stored.tau, rule = .stored.weak_rule.name()
    )]
    Unsigned {
        /// What the store says.
        stored: LabelPolicy,
    },
    /// A signed checkpoint's parameter line is malformed.
    #[error(transparent)]
    Malformed(#[from] SignedPolicyError),
}

/// The parameters a handle labels under: those the newest signed checkpoint (`newest`) signs,
/// which the store's settings must equal; else, when no checkpoint signs any, the stored ones
/// only when `adopt` (the operator's explicit upgrade of an older ledger).
///
/// # Errors
/// [`ParametersError`] as above; [`LedgerError::NotALedger`] when the settings are missing.
pub(super) fn parameters<S: Store>(
    store: &S,
    newest: Option<&VerifiedCheckpoint>,
    adopt: bool,
) -> Result<LabelPolicy, LedgerError> {
    let stored = stored_parameters(store)?;
    let signed = match newest {
        Some(c) => LabelPolicy::from_extension(c.extension()).map_err(ParametersError::from)?,
        None => None,
    };
    match signed {
        Some(signed) if signed == stored => Ok(signed),
        Some(signed) => Err(ParametersError::Changed { signed, stored }.into()),
        None if adopt => Ok(stored),
        None => Err(ParametersError::Unsigned { stored }.into()),
    }
}

/// The newest checkpoint, by tree size, among those the log key signed that the store and the
/// side file hold (and `known`, notes the caller kept elsewhere). Every note found must verify:
/// a forged one refuses.
///
/// # Errors
/// Checkpoint errors for a note that does not verify; store errors.
pub(super) fn newest_signed<S: Store>(
    store: &S,
    verifier: &LogVerifier,
    known: &[Vec<u8>],
) -> Result<Option<VerifiedCheckpoint>, LedgerError> {
    Ok(newest_of(&signed_heads(store, verifier, known)?))
}

/// The first of `heads` with the largest size.
pub(super) fn newest_of(heads: &[VerifiedCheckpoint]) -> Option<VerifiedCheckpoint> {
    let mut newest: Option<&VerifiedCheckpoint> = None;
    for c in heads {
        if newest.is_none_or(|n| c.size() > n.size()) {
            newest = Some(c);
        }
    }
    newest.cloned()
}

/// Every head the log key signed that a handle can find (the store's latest, its side file,
/// `known`), each verified.
///
/// # Errors
/// Checkpoint errors for a note that does not verify; store errors.
pub(super) fn signed_heads<S: Store>(
    store: &S,
    verifier: &LogVerifier,
    known: &[Vec<u8>],
) -> Result<Vec<VerifiedCheckpoint>, LedgerError> {
    let mut notes = vec![
        store.latest_checkpoint()?.map(|(_, n)| n),
        store.durable_checkpoint()?,
    ];
    notes.extend(known.iter().cloned().map(Some));
    notes
        .into_iter()
        .flatten()
        .map(|note| Ok(verifier.verify(&note)?))
        .collect()
}

/// Checks that `head` extends every head the log key signed that this handle can find (the
/// store's latest, its side file, `known`): none is larger, one of the same size has the same
/// root, and a smaller one is a prefix of `head` by a consistency proof from `src`
/// (RFC 9162 §2.1.4). A key holder checks this before it publishes `head`, so that hashes
/// a store-only attacker rewrote are never signed into the log's history (a fork).
///
/// # Errors
/// [`LedgerError::TreeInconsistent`] naming the signed head `head` does not extend (or one
/// whose proof cannot be built from `src`); checkpoint errors for a note that does not
/// verify; store errors.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(super) fn check_extends_signed<S: Store>(
    store: &S,
    verifier: &LogVerifier,
    known: &[Vec<u8>],
    head: &VerifiedCheckpoint,
    src: &(impl HashSource + ?Sized),
) -> Result<(), LedgerError> {
    let mut notes = vec![
        store.latest_checkpoint()?.map(|(_, n)| n),
        store.durable_checkpoint()?,
    ];
    notes.extend(known.iter().cloned().map(Some));
    check_extends_notes(verifier, notes.into_iter().flatten(), head, src, false)
}

/// [`check_extends_signed`] over the heads `notes`; a head larger than `head` is refused, or
/// skipped when `larger_ok` (a handle serving a stored head while others append: a newer
/// head is theirs, not a fork).
///
/// # Errors
/// As [`check_extends_signed`].
pub(super) fn check_extends_notes(
    verifier: &LogVerifier,
    notes: impl IntoIterator<Item = Vec<u8>>,
    head: &VerifiedCheckpoint,
    src: &(impl HashSource + ?Sized),
    larger_ok: bool,
) -> Result<(), LedgerError> {
    for note in notes {
        let old = verifier.verify(&note)?;
        let forked = LedgerError::TreeInconsistent {
            signed_size: old.size(),
        };
        let extends = match old.size() {
            0 => true,
            n if n > head.size() => larger_ok,
            n if n == head.size() => old.root() == head.root(),
            n => crate::log::prove_consistency(n, head.size(), src)
                .is_ok_and(|p| old.verify_consistency(head, &p).is_ok()),
        };
        if !extends {
            return Err(forked);
        }
    }
    Ok(())
}

/// The labelling parameters the store's settings say (not believed on their own).
///
/// # Errors
/// [`LedgerError::NotALedger`] when absent or malformed; store errors.
pub(super) fn stored_parameters<S: Store>(store: &S) -> Result<LabelPolicy, LedgerError> {
    let tau = store
        .meta(META_TAU)?
        .and_then(|s| s.parse::<u64>().ok())
        .and_then(|m| Weight::new(m).ok())
        .ok_or(LedgerError::NotALedger)?;
    let weak_rule = store
        .meta(META_RULE)?
        .and_then(|s| WeakRule::from_name(&s))
        .ok_or(LedgerError::NotALedger)?;
    Ok(LabelPolicy { tau, weak_rule })
}
