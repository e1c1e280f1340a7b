//! Forensics: expiring leases on reworking an entry (`spec/forensics.md` §5).
//!
//! A worker claims the rework of `target` by appending a [`Kind::Lease`] entry whose content is
//! the lease terms, `ttl_ms=<decimal>`; the lease runs from the entry's `time_ms` for `ttl_ms`
//! milliseconds. It finishes the rework by appending a [`Kind::Replacement`] of `target`. The
//! log is the arbiter: an append is checked against the state left by every earlier entry, and
//! appends are serialised by the store, so of two racing claims exactly one is accepted and a
//! replacement by anyone but the live holder is refused. Refused appends never reach the log.
//! Hence nothing is reworked twice (one replacement per leased target) and nothing is lost (an
//! expired lease can be taken over).
//!
//! Times are writer-asserted (milliseconds since the Unix epoch); workers are trusted
//! principals (agents), so a lease protects against crashes and races, not against a worker
//! lying about its clock.

use crate::record::{EntryId, KeyId, Kind, Role};
use std::collections::HashMap;

/// Longest lease accepted, in milliseconds (one day).
pub const MAX_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// The content of a lease entry for `ttl_ms`: `ttl_ms=<decimal>`, ASCII, no padding.
pub fn lease_terms(ttl_ms: u64) -> Vec<u8> {
    format!("ttl_ms={ttl_ms}").into_bytes()
}

/// Parses [`lease_terms`] strictly: the exact prefix, 1–20 ASCII digits without a leading
/// zero (except `0` itself is refused: a lease must last), at most [`MAX_TTL_MS`].
///
/// # Errors
/// [`LeaseError::BadTerms`] for anything else. Does not panic.
pub fn parse_lease_terms(content: &[u8]) -> Result<u64, LeaseError> {
    let digits = content
        .strip_prefix(b"ttl_ms=")
        .ok_or(LeaseError::BadTerms)?;
    if digits.is_empty() || digits.len() > 20 || digits[0] == b'0' {
        return Err(LeaseError::BadTerms);
    }
    if !digits.iter().all(u8::is_ascii_digit) {
        return Err(LeaseError::BadTerms);
    }
    let ttl: u64 = std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(LeaseError::BadTerms)?;
    if ttl > MAX_TTL_MS {
        return Err(LeaseError::BadTerms);
    }
    Ok(ttl)
}

/// Where the rework of one target stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseState {
    /// A worker holds (or held) the lease until `until_ms`.
    Held {
        /// The lease entry.
        lease: EntryId,
        /// The holder's key.
        holder: KeyId,
        /// Expiry, ms since the Unix epoch (exclusive). When the lease's terms are not at hand
        /// (content redacted, or not matching its signed hash) a ledger assumes the longest
        /// lease, [`MAX_TTL_MS`] (fail closed).
        until_ms: u64,
        /// Whether the terms were read and checked (`false`: `until_ms` is the fail-closed
        /// assumption).
        terms_known: bool,
    },
    /// The target has been replaced; no further lease or replacement is accepted.
    Done {
        /// The replacement entry.
        by: EntryId,
    },
}

/// A lease claim or replacement breaks the lease rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseError {
    /// A lease entry's content is not `ttl_ms=<1..=86400000>`.
    #[error("lease terms must be `ttl_ms=<decimal>` with 1 <= ttl_ms <= {MAX_TTL_MS}")]
    BadTerms,
    /// Another worker holds a live lease on the target.
    #[error("target {target} is leased to {holder} until {until_ms} ms")]
    Held {
        /// The target.
        target: EntryId,
        /// The current holder.
        holder: KeyId,
        /// When its lease expires.
        until_ms: u64,
    },
    /// The target was already replaced.
    #[error("target {target} was already replaced by {by}")]
    Done {
        /// The target.
        target: EntryId,
        /// The replacement.
        by: EntryId,
    },
    /// A replacement of a leased target by a writer that does not hold a live lease on it.
    #[error("replacement of {target} by a writer without a live lease on it")]
    NotHolder {
        /// The target.
        target: EntryId,
    },
    /// Lease entries are written by agent, user or system principals only.
    #[error("a lease must be written by an agent, user or system principal")]
    NotAuthorised,
    /// A replacement by a tool or external principal, or of a never-leased target by anyone
    /// but a user, system or log principal.
    #[error("a {role} principal may not replace {target}")]
    ReplacementNotAuthorised {
        /// The target.
        target: EntryId,
        /// The writer's role.
        role: &'static str,
    },
}

/// Lease and replacement state per target, derived from the log.
#[derive(Clone, Debug, Default)]
pub struct LeaseBook {
    by_target: HashMap<EntryId, LeaseState>,
    /// An auditor without lease contents cannot judge timing: it accepts what depends on
    /// unknown terms instead of assuming the longest lease.
    lenient_unknown_terms: bool,
}

impl LeaseBook {
    /// A book for an offline audit: where a lease's terms are unknown (no content given),
    /// claims and replacements that depend on them are accepted, not judged.
    pub fn for_audit() -> Self {
        LeaseBook {
            by_target: HashMap::new(),
            lenient_unknown_terms: true,
        }
    }

    /// Whether a lease's timing cannot be judged: its terms are unknown and this book accepts
    /// what depends on them (an audit without contents).
    fn unjudged(&self, terms_known: bool) -> bool {
        !terms_known && self.lenient_unknown_terms
    }

    /// The state of `target`, `None` if it was never leased or replaced.
    pub fn state(&self, target: &EntryId) -> Option<LeaseState> {
        self.by_target.get(target).copied()
    }

    /// Checks a claim on `target` by `writer` at `time_ms`: allowed when the target is free,
    /// its lease expired (`until_ms <= time_ms`), or `writer` already holds it (renewal).
    ///
    /// # Errors
    /// [`LeaseError::Held`] or [`LeaseError::Done`].
    pub fn check_claim(
        &self,
        target: &EntryId,
        writer: &KeyId,
        time_ms: u64,
    ) -> Result<(), LeaseError> {
        match self.by_target.get(target) {
            None => Ok(()),
            Some(LeaseState::Done { by }) => Err(LeaseError::Done {
                target: *target,
                by: *by,
            }),
            Some(LeaseState::Held {
                holder,
                until_ms,
                terms_known,
                ..
            }) => {
                if holder == writer || *until_ms <= time_ms || self.unjudged(*terms_known) {
                    Ok(())
                } else {
                    Err(LeaseError::Held {
                        target: *target,
                        holder: *holder,
                        until_ms: *until_ms,
                    })
                }
            }
        }
    }

    /// Checks a replacement of `target` by `writer` (of `role`) at `time_ms`: tool and external
    /// principals never replace; a target never leased may be replaced once by a user, system
    /// or log principal (healing); a leased one only by the holder of a live lease.
    ///
    /// # Errors
    /// [`LeaseError::ReplacementNotAuthorised`], [`LeaseError::Done`] or
    /// [`LeaseError::NotHolder`].
    pub fn check_replacement(
        &self,
        target: &EntryId,
        writer: &KeyId,
        role: Role,
        time_ms: u64,
    ) -> Result<(), LeaseError> {
        let refuse = || LeaseError::ReplacementNotAuthorised {
            target: *target,
            role: role.name(),
        };
        if role.is_untrusted() {
            return Err(refuse());
        }
        match self.by_target.get(target) {
            None if matches!(role, Role::User | Role::System | Role::Log) => Ok(()),
            None => Err(refuse()),
            Some(LeaseState::Done { by }) => Err(LeaseError::Done {
                target: *target,
                by: *by,
            }),
            Some(LeaseState::Held {
                holder,
                until_ms,
                terms_known,
                ..
            }) if holder == writer && (time_ms < *until_ms || self.unjudged(*terms_known)) => {
                Ok(())
            }
            Some(LeaseState::Held { .. }) => Err(LeaseError::NotHolder { target: *target }),
        }
    }

    /// Records an accepted lease or replacement entry. `ttl_ms` is the parsed and checked lease
    /// terms; `None` (content redacted or not matching its signed hash) is taken as the longest
    /// lease, [`MAX_TTL_MS`], so missing terms never free a live lease early. Other kinds: no-op.
    pub fn apply(
        &mut self,
        id: EntryId,
        kind: Kind,
        writer: KeyId,
        target: Option<EntryId>,
        time_ms: u64,
        ttl_ms: Option<u64>,
    ) {
        let Some(target) = target else { return };
        match kind {
            Kind::Lease
                if !matches!(self.by_target.get(&target), Some(LeaseState::Done { .. })) =>
            {
                self.by_target.insert(
                    target,
                    LeaseState::Held {
                        lease: id,
                        holder: writer,
                        until_ms: time_ms.saturating_add(ttl_ms.unwrap_or(MAX_TTL_MS)),
                        terms_known: ttl_ms.is_some(),
                    },
                );
            }
            Kind::Replacement => {
                self.by_target.insert(target, LeaseState::Done { by: id });
            }
            _ => {}
        }
    }
}
