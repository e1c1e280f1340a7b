//! The admission rule (`spec/record.md` §5.4, `spec/lineage.md` §5, `spec/forensics.md` §2.2
//! and §5): whether a verified entry may follow the log so far, and its label if so.
//!
//! One function, [`admit`], answers for both sides of the log: the ledger when it appends
//! (over its index and the batch admitted so far) and the audit when it replays the log
//! (over what it has recomputed from the entries before). Both see the log through an
//! [`AdmissionView`]; neither has a rule of its own, so the writer never accepts what the
//! audit rejects.

use crate::lineage::lease::{parse_lease_terms, LeaseBook, LeaseError};
use crate::lineage::quarantine::{Quarantine, QuarantineError};
use crate::lineage::{Label, LabelPolicy};
use crate::record::{EntryId, Hash32, KeyId, Kind, Role, SignedEntry};

/// What the admission rule needs to know about the log before an entry: bound keys, known
/// entries and their labels, the forensic state, the labelling parameters and the log key.
///
/// Implementations answer from verified entries only (or, for a ledger, from labels it
/// computed and stored itself); the rule trusts nothing else.
pub trait AdmissionView {
    /// The id of the log key, bound as [`Role::Log`] from the start; the only writer of
    /// keyring entries.
    fn log_key(&self) -> KeyId;

    /// The role `key` is bound to before the entry, if any.
    fn role_of(&self, key: &KeyId) -> Option<Role>;

    /// The label of an entry that precedes the entry in the log, if any.
    fn label_of(&self, id: &EntryId) -> Option<Label>;

    /// The flags and releases so far.
    fn quarantine(&self) -> &Quarantine;

    /// The leases and replacements so far.
    fn leases(&self) -> &LeaseBook;

    /// The labelling parameters (τ, weak-parent rule).
    fn policy(&self) -> LabelPolicy;
}

/// Decides whether `entry` (signature and encoding already verified) may follow the log that
/// `view` describes, and returns its label (`spec/lineage.md` §3).
///
/// `content` is the entry's content when at hand: a writer always gives it; an auditor gives
/// what the store holds, or `None` when the content was redacted. Given content must hash to
/// the entry's signed content hash, and a lease's terms are checked when its content is
/// given.
///
/// Checks, in this order (the first that fails is the answer):
/// 1. the writer is bound ([`AdmissionError::UnknownWriter`]);
/// 2. the content matches ([`AdmissionError::ContentMismatch`]);
/// 3. keyring entries are written by the log key ([`AdmissionError::NotLogKey`], §5.4 rule
///    1); tombstones by trusted principals ([`AdmissionError::UntrustedTombstone`]);
/// 4. a binding binds no second log key ([`AdmissionError::BindsLogRole`], rule 2) and no key
///    already bound ([`AdmissionError::Rebind`], rule 3);
/// 5. the target precedes the entry ([`AdmissionError::UnknownTarget`]);
/// 6. the quarantine rules ([`AdmissionError::Quarantine`], `spec/forensics.md` §2.2);
/// 7. the lease rules ([`AdmissionError::Lease`], §5): leases by agent, user or system
///    principals, with valid terms, on a target not leased to another or replaced;
///    replacements by the holder of a live lease (or, unleased, a user, system or log);
/// 8. every parent precedes the entry ([`AdmissionError::UnknownParent`]; so no cycle);
/// 9. the entry itself is not already in the log ([`AdmissionError::Duplicate`]).
///
/// # Errors
/// The [`AdmissionError`] of the first broken rule; untrusted input triggers every one.
/// Does not panic.
pub fn admit(
    view: &impl AdmissionView,
    entry: &SignedEntry,
    content: Option<&[u8]>,
) -> Result<Label, AdmissionError> {
    let e = entry.entry();
    let role = view
        .role_of(&e.writer)
        .ok_or(AdmissionError::UnknownWriter(e.writer))?;
    if content.is_some_and(|c| Hash32::digest(c) != e.content_hash) {
        return Err(AdmissionError::ContentMismatch);
    }
    match e.kind {
        Kind::Keyring if e.writer != view.log_key() => return Err(AdmissionError::NotLogKey),
        Kind::Tombstone if role.is_untrusted() => {
            return Err(AdmissionError::UntrustedTombstone(e.writer))
        }
        _ => {}
    }
    if let Some(b) = &e.binding {
        if b.role == Role::Log {
            return Err(AdmissionError::BindsLogRole(b.key));
        }
        if let Some(bound) = view.role_of(&b.key) {
            return Err(AdmissionError::Rebind { key: b.key, bound });
        }
    }
    if let Some(t) = &e.target {
        view.label_of(t).ok_or(AdmissionError::UnknownTarget(*t))?;
    }
    view.quarantine().check(e.kind, role, e.target.as_ref())?;
    match (e.kind, &e.target) {
        (Kind::Lease, Some(t)) => {
            if !matches!(role, Role::Agent | Role::User | Role::System) {
                return Err(LeaseError::NotAuthorised.into());
            }
            if let Some(c) = content {
                parse_lease_terms(c)?;
            }
            view.leases().check_claim(t, &e.writer, e.time_ms)?;
        }
        (Kind::Replacement, Some(t)) => {
            view.leases()
                .check_replacement(t, &e.writer, role, e.time_ms)?;
        }
        _ => {}
    }
    let mut parents = Vec::with_capacity(e.parents.len());
    for p in &e.parents {
        let label = view
            .label_of(&p.id)
            .ok_or(AdmissionError::UnknownParent(p.id))?;
        parents.push((p.weight, label));
    }
    if view.label_of(&entry.id()).is_some() {
        return Err(AdmissionError::Duplicate(entry.id()));
    }
    Ok(view.policy().label(role, parents))
}

/// Why an entry may not follow the log (`spec/record.md` §5.4, `spec/forensics.md` §2.2, §5).
/// The ledger refuses an append with it (`LedgerError::Admission`); the audit names a logged
/// entry with it (`Problem::Admission`). Every variant
/// can be triggered by untrusted input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdmissionError {
    /// The writer's key is not bound by a keyring entry before the entry.
    #[error("writer {0} is not bound in the keyring")]
    UnknownWriter(KeyId),
    /// The content does not hash to the entry's content hash.
    #[error("content does not match the entry's content hash")]
    ContentMismatch,
    /// A keyring entry not written by the log key (`spec/record.md` §5.4 rule 1).
    #[error("only the log key may write keyring entries")]
    NotLogKey,
    /// A tool or external principal wrote a tombstone.
    #[error("writer {0} (tool/external) may not write tombstones")]
    UntrustedTombstone(KeyId),
    /// A keyring entry binding a key to role `log` (there is one log key, `spec/record.md`
    /// §5.4 rule 2).
    #[error("key {0} may not be bound to role log")]
    BindsLogRole(KeyId),
    /// The key is already bound (a key is bound at most once, `spec/record.md` §5.4 rule 3;
    /// the first binding stays in force).
    #[error("key {key} already bound as {}", .bound.name())]
    Rebind {
        /// The key.
        key: KeyId,
        /// Its existing role.
        bound: Role,
    },
    /// The target (of a tombstone, flag, release, lease or replacement) does not precede the
    /// entry.
    #[error("unknown target {0}")]
    UnknownTarget(EntryId),
    /// A parent does not precede the entry (parents precede children, so no cycle can exist).
    #[error("unknown parent {0}")]
    UnknownParent(EntryId),
    /// The entry is already in the log (same bytes, same id).
    #[error("entry {0} already in the log")]
    Duplicate(EntryId),
    /// A flag or release breaks the quarantine rules (`spec/forensics.md` §2.2).
    #[error(transparent)]
    Quarantine(#[from] QuarantineError),
    /// A lease or replacement breaks the lease rules (`spec/forensics.md` §5).
    #[error(transparent)]
    Lease(#[from] LeaseError),
}
