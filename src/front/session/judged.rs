//! What a front judged of a session's reads, kept in the session's memo between decisions
//! (`spec/hooks.md` §4.7): which reads are untrusted (the composed rule, §15) and whether one
//! that is not the user's own secret was read (the secrecy rule, §16), so that a decision in a
//! long session judges only the reads that arrived since the last one.
//!
//! A judgement is kept only when it cannot change while the store's content epoch
//! ([`crate::store::Store::content_epoch`]) stays and this front's handle holds it: a label
//! this handle verified (Trusted, Derived-Trusted, Derived-Untrusted, or External from a
//! verified row) is fixed by the entry's signed bytes and ancestry. A read whose label this
//! handle could not settle (not in the log as far as it knows, or a row whose tag did not
//! verify) is judged again at every decision, as before. A store that cannot tell its epoch
//! keeps nothing.

use super::{Prefix, Session};
use crate::front::secret_flow::SecretWalk;
use crate::front::{Front, Keys};
use crate::lineage::Label;
use crate::record::EntryId;
use crate::store::Store;

/// The judgements of one session's reads by one front ([`Session::with_judged`]).
#[derive(Clone, Default)]
pub(in crate::front) struct Judged {
    /// The front (its index's instance) and the ledger handle ([`crate::Ledger`]'s instance)
    /// and content epoch they were made under.
    under: Option<(u64, (u64, u64))>,
    /// The untrusted reads of `reads[..labels.n]`.
    labels: Option<(Prefix, Untrusted)>,
    /// `reads[..n]` are all trusted or the user's own secrets, for the project named.
    trusted: Option<(Prefix, Option<String>)>,
    /// The secrecy rule's walk over `reads[..n]`, for the project named.
    secrets: Option<(Prefix, Option<String>, SecretWalk)>,
}

/// The reads labelled worse than Derived-Trusted (or unlabelled) among those judged.
#[derive(Clone, Default)]
struct Untrusted {
    /// The first one, by position, with its label.
    first: Option<(usize, EntryId, Option<Label>)>,
    /// How many of the settled reads are untrusted.
    settled: usize,
    /// The positions of the reads whose label this handle has not settled: judged again.
    unsettled: Vec<usize>,
}

impl Judged {
    /// The judgements for front `owner` under `epoch` (ledger handle, content epoch): emptied
    /// when either changed (or the epoch is unknown).
    fn under(&mut self, owner: u64, epoch: Option<(u64, u64)>) {
        let now = epoch.map(|e| (owner, e));
        if self.under != now || now.is_none() {
            *self = Judged {
                under: now,
                ..Judged::default()
            };
        }
    }
}

impl<S: Store, K: Keys> Front<S, K> {
    /// The ledger handle and the content epoch the judgements of this call are kept under: a
    /// judgement one handle settled is not another's (a ledger replaced under the front, or
    /// reopened, whose fresh connection reports the epoch the old one had).
    fn judged_epoch(&self) -> Option<(u64, u64)> {
        let epoch = self.ledger.store().content_epoch().ok().flatten()?;
        Some((self.ledger.instance(), epoch))
    }

    /// The session's reads labelled worse than Derived-Trusted or not labelled by this handle
    /// (`spec/hooks.md` §15): the first of them with its label, and how many there are.
    /// Judges only the reads not judged at the last call, and those whose label was not
    /// settled.
    pub(in crate::front) fn untrusted_reads(
        &self,
        session: &Session,
    ) -> (Option<(EntryId, Option<Label>)>, usize) {
        let owner = self.haystacks.instance();
        let epoch = self.judged_epoch();
        let reads = &session.reads;
        session.with_judged(|slot| {
            let judged = slot.get_or_insert_with(Judged::default);
            judged.under(owner, epoch);
            let (from, mut u) = match judged.labels.take() {
                Some((p, u)) if p.holds(owner, reads) => (p.n, u),
                _ => (0, Untrusted::default()),
            };
            // The reads not settled before are judged again; those now settled join the rest.
            let mut again = std::mem::take(&mut u.unsettled);
            again.extend(from..reads.len());
            let mut unsettled_untrusted: Vec<(usize, EntryId, Option<Label>)> = Vec::new();
            for at in again {
                let id = reads[at];
                let label = self.ledger.label(&id);
                let untrusted = label.is_none_or(|l| l > Label::DerivedTrusted);
                let settled = judged.under.is_some() && self.ledger.settled_label(&id).is_some();
                match (settled, untrusted) {
                    (true, true) => {
                        u.settled += 1;
                        if u.first.is_none_or(|(f, _, _)| at < f) {
                            u.first = Some((at, id, label));
                        }
                    }
                    (true, false) => {}
                    (false, _) => {
                        u.unsettled.push(at);
                        if untrusted {
                            unsettled_untrusted.push((at, id, label));
                        }
                    }
                }
            }
            let count = u.settled + unsettled_untrusted.len();
            let first = u
                .first
                .into_iter()
                .chain(unsettled_untrusted)
                .min_by_key(|(at, _, _)| *at)
                .map(|(_, id, l)| (id, l));
            if judged.under.is_some() {
                judged.labels = Some((Prefix::of(owner, reads), u));
            }
            (first, count)
        })
    }

    /// Whether every read of the session is labelled Derived-Trusted or better by this handle
    /// or is a secret only the user writes (`is_private`, `spec/hooks.md` §16): judges only
    /// the reads after the longest such prefix found before, and stops at the first that is
    /// neither.
    pub(in crate::front) fn reads_all_trusted(
        &mut self,
        session: &Session,
        mut is_private: impl FnMut(&mut Self, &EntryId) -> bool,
    ) -> bool {
        let owner = self.haystacks.instance();
        let epoch = self.judged_epoch();
        let project = self.project.clone();
        let reads = &session.reads;
        let mut from = session.with_judged(|slot| {
            let judged = slot.get_or_insert_with(Judged::default);
            judged.under(owner, epoch);
            match &judged.trusted {
                Some((p, pr)) if *pr == project && p.holds(owner, reads) => p.n,
                _ => 0,
            }
        });
        let mut all = true;
        while let Some(r) = reads.get(from) {
            let trusted = self
                .ledger
                .label(r)
                .is_some_and(|l| l <= Label::DerivedTrusted);
            // A label better than Derived-Trusted is only ever a settled one.
            if !trusted && !is_private(self, r) {
                all = false;
                break;
            }
            from += 1;
        }
        session.with_judged(|slot| {
            if let Some(j) = slot.as_mut().filter(|j| j.under.is_some()) {
                j.trusted = Some((Prefix::of(owner, &reads[..from]), project));
            }
        });
        all
    }

    /// The secrecy rule's walk kept for `session` under this front, its content epoch and
    /// `project` ([`Front::secret_reads`]), taken out of the memo; `None` when none fits.
    pub(in crate::front) fn kept_secret_walk(
        &self,
        session: &Session,
        project: &Option<String>,
    ) -> Option<SecretWalk> {
        let owner = self.haystacks.instance();
        let epoch = self.judged_epoch();
        session.with_judged(|slot| {
            let judged = slot.get_or_insert_with(Judged::default);
            judged.under(owner, epoch);
            match judged.secrets.take() {
                Some((p, pr, walk)) if pr == *project && p.holds(owner, &session.reads) => {
                    Some(walk)
                }
                _ => None,
            }
        })
    }

    /// Keeps `walk`, over the session's first `walk.n()` reads, for the next call.
    pub(in crate::front) fn keep_secret_walk(
        &self,
        session: &Session,
        project: Option<String>,
        walk: SecretWalk,
    ) {
        let owner = self.haystacks.instance();
        let Some(walked) = session.reads.get(..walk.n()) else {
            return;
        };
        let prefix = Prefix::of(owner, walked);
        session.with_judged(|slot| {
            if let Some(j) = slot.as_mut().filter(|j| j.under.is_some()) {
                j.secrets = Some((prefix, project, walk));
            }
        });
    }
}
