//! Forensics: rework of derived entries in dependency order under expiring leases
//! (`spec/forensics.md` §5).
//!
//! A *plan* is a set of entries to redo (typically the derived entries a flag quarantined).
//! Workers run [`rework`] on the same plan against the same ledger (threads or processes
//! sharing a store). Each target is done in log order (parents precede children, so log order
//! is a dependency order): a target waits until every planned parent has been replaced, then
//! a worker claims it with a lease ([`Ledger::claim_lease`]), runs the caller's work and appends
//! a [`Kind::Replacement`]. The lease rules of [`crate::lineage::lease`] make the log the arbiter: a live
//! lease refuses other workers, an expired one is taken over, and a replacement by anyone but
//! the live holder is refused, so each target is replaced exactly once.

use crate::ledger::{Ledger, LedgerError};
use crate::lineage::admission::AdmissionError;
use crate::lineage::lease::{LeaseError, LeaseState};
use crate::record::{EntryId, Kind, Parent, ProvEntry, WriterKey};
use crate::store::Store;
use std::collections::HashSet;

/// Worker settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReworkOptions {
    /// Lease length in milliseconds (how long a crashed worker blocks its target).
    pub ttl_ms: u64,
    /// Pause between rounds when every remaining target is leased or waiting, in ms.
    pub poll_ms: u64,
    /// Give up after this long without progress, in ms.
    pub give_up_after_ms: u64,
}

impl Default for ReworkOptions {
    /// 30 s leases, 100 ms polls, give up after 10 minutes without progress.
    fn default() -> Self {
        ReworkOptions {
            ttl_ms: 30_000,
            poll_ms: 100,
            give_up_after_ms: 600_000,
        }
    }
}

/// What one worker did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReworkReport {
    /// `(target, replacement)` for every target this worker replaced, in order.
    pub reworked: Vec<(EntryId, EntryId)>,
    /// Targets this worker took over from an expired lease of another worker.
    pub taken_over: Vec<EntryId>,
    /// Claims refused because another worker's lease was live.
    pub refused: u64,
}

/// A rework stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReworkError {
    /// A plan entry is not in the log.
    #[error("plan entry {0} is not in the log")]
    UnknownTarget(EntryId),
    /// The caller's work failed on a target (its lease will expire; another worker may retry).
    #[error("work on {target} failed: {msg}")]
    Work {
        /// The target.
        target: EntryId,
        /// The caller's error.
        msg: String,
    },
    /// This worker's work on `target` outlasted its own lease and nobody took over: a longer
    /// [`ReworkOptions::ttl_ms`] is needed (re-claiming would only redo the work and fill the
    /// log with leases).
    #[error("work on {target} outlasted its {ttl_ms} ms lease; raise the lease length")]
    LeaseTooShort {
        /// The target.
        target: EntryId,
        /// The lease length used.
        ttl_ms: u64,
    },
    /// No progress for [`ReworkOptions::give_up_after_ms`].
    #[error("no progress for {0} ms; {1} targets remain")]
    Stalled(u64, usize),
    /// Reading or appending failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Runs one worker over `plan` until every target is replaced (by this or another worker).
///
/// `now()` gives the writer time in ms since the Unix epoch, `sleep(ms)` pauses, and
/// `work(ledger, target, inputs)` produces the new content from the replacement's *inputs*:
/// `(id, content)` of each of its parents (content `None` when redacted). The inputs are the
/// target's parents with every planned parent swapped for its replacement and every
/// quarantined parent dropped; the target's own (possibly poisoned) content is not an input,
/// and the replacement has no edge to it, so what it is derived from is exactly what its
/// parents say.
///
/// # Errors
/// [`ReworkError`]; what was appended before the error stays (a claimed lease simply expires).
pub fn rework<S: Store, E: std::fmt::Display>(
    ledger: &mut Ledger<S>,
    plan: &[EntryId],
    key: &WriterKey,
    opts: ReworkOptions,
    now: impl Fn() -> u64,
    sleep: impl Fn(u64),
    mut work: impl FnMut(&Ledger<S>, &EntryId, &[(EntryId, Option<Vec<u8>>)]) -> Result<Vec<u8>, E>,
) -> Result<ReworkReport, ReworkError> {
    let mut order: Vec<(u64, EntryId)> = Vec::with_capacity(plan.len());
    for id in plan {
        let index = ledger.index_of(id).ok_or(ReworkError::UnknownTarget(*id))?;
        order.push((index, *id));
    }
    order.sort();
    order.dedup();
    let planned: HashSet<EntryId> = order.iter().map(|(_, id)| *id).collect();
    let mut report = ReworkReport::default();
    let mut last_progress = now();
    loop {
        ledger.refresh()?;
        let pending: Vec<EntryId> = order
            .iter()
            .map(|(_, id)| *id)
            .filter(|id| !is_done(ledger, id))
            .collect();
        if pending.is_empty() {
            return Ok(report);
        }
        let mut progressed = false;
        for target in pending {
            let parents = ledger.parents_of(&target)?;
            let blocked = parents
                .iter()
                .any(|p| planned.contains(&p.id) && !is_done(ledger, &p.id));
            if blocked || is_done(ledger, &target) {
                continue;
            }
            let before = ledger.leases().state(&target);
            match ledger.claim_lease(target, key, opts.ttl_ms, now()) {
                Ok(_) => {}
                Err(LedgerError::Admission(AdmissionError::Lease(LeaseError::Held { .. }))) => {
                    report.refused += 1;
                    continue;
                }
                Err(LedgerError::Admission(AdmissionError::Lease(LeaseError::Done { .. }))) => {
                    continue
                }
                Err(e) => return Err(e.into()),
            }
            if let Some(LeaseState::Held { holder, .. }) = before {
                if holder != key.key_id() {
                    report.taken_over.push(target);
                }
            }
            let new_parents = replacement_parents(ledger, &parents);
            let mut inputs = Vec::with_capacity(new_parents.len());
            for p in &new_parents {
                let e = ledger.get(&p.id)?;
                inputs.push((p.id, ledger.content(&e)?));
            }
            let content = work(ledger, &target, &inputs).map_err(|e| ReworkError::Work {
                target,
                msg: e.to_string(),
            })?;
            let mut e = ProvEntry::new(key.key_id(), Kind::Replacement, &content)
                .with_parents(new_parents)
                .with_time_ms(now());
            e.target = Some(target);
            match ledger.append(e, key, &content) {
                Ok(a) => {
                    report.reworked.push((target, a.id));
                    progressed = true;
                }
                // Our lease expired while working. If another worker took over, its
                // replacement counts and ours is refused (nothing is done twice); if nobody
                // did, re-claiming would only repeat the work: stop and say why.
                Err(LedgerError::Admission(AdmissionError::Lease(_))) => {
                    ledger.refresh()?;
                    let ours = matches!(
                        ledger.leases().state(&target),
                        Some(LeaseState::Held { holder, .. }) if holder == key.key_id()
                    );
                    if ours {
                        return Err(ReworkError::LeaseTooShort {
                            target,
                            ttl_ms: opts.ttl_ms,
                        });
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        if progressed {
            last_progress = now();
        } else {
            let idle = now().saturating_sub(last_progress);
            if idle >= opts.give_up_after_ms {
                let left = order.iter().filter(|(_, id)| !is_done(ledger, id)).count();
                return Err(ReworkError::Stalled(idle, left));
            }
            sleep(opts.poll_ms);
        }
    }
}

fn is_done<S: Store>(ledger: &Ledger<S>, id: &EntryId) -> bool {
    matches!(ledger.leases().state(id), Some(LeaseState::Done { .. }))
}

/// The target's parents with replaced ones swapped for their replacements and quarantined ones
/// dropped, sorted and without duplicates.
fn replacement_parents<S: Store>(ledger: &Ledger<S>, parents: &[Parent]) -> Vec<Parent> {
    let mut out: Vec<Parent> = parents
        .iter()
        .filter_map(|p| match ledger.leases().state(&p.id) {
            Some(LeaseState::Done { by }) => Some(Parent {
                id: by,
                weight: p.weight,
            }),
            _ if ledger.is_quarantined(&p.id) => None,
            _ => Some(*p),
        })
        .collect();
    out.sort();
    out.dedup_by_key(|p| p.id);
    out
}
