//! How a front writes for a session (`spec/lineage.md` §4.2): signs entries as its principals
//! and gives every agent write the parents of the session's reads.

use super::{matching::Haystack, now_ms, session_context, FOLD_AT};
use super::{Front, FrontError, Keys, Session, UNKNOWN_CONTEXT};
use crate::gate::ReadWeights;
use crate::ledger::{Appended, LedgerError};
use crate::lineage::admission::AdmissionError;
use crate::record::{EntryId, Kind, Parent, ProvEntry, Role, Weight, MAX_PARENTS};
use crate::store::Store;
use std::collections::HashSet;

impl<S: Store, K: Keys> Front<S, K> {
    /// Signs and appends one entry as principal `name`, binding its key on first use.
    pub(super) fn write(
        &mut self,
        session: &mut Session,
        name: &str,
        role: Role,
        kind: Kind,
        text: &str,
        parents: Vec<Parent>,
    ) -> Result<Appended, FrontError> {
        self.write_about(session, name, role, kind, text, parents, None)
    }

    /// [`Front::write`] of an entry about `target` (a flag, a tombstone).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_about(
        &mut self,
        session: &mut Session,
        name: &str,
        role: Role,
        kind: Kind,
        text: &str,
        parents: Vec<Parent>,
        target: Option<EntryId>,
    ) -> Result<Appended, FrontError> {
        let (key, _) = self.keys.key(name, role)?;
        if session.is_fresh() {
            // Nothing before now is this session's (spec/hooks.md §6).
            session.seen = self.ledger.len();
        }
        let before = self.ledger.len();
        let bound = u64::from(self.ledger.bind(key.key_id(), role, name)?.is_some());
        let context = session_context(&session.id);
        let mut attempt = 0;
        let a = loop {
            // Time is strictly increasing per front, so that the same text written twice in
            // one millisecond still makes two entries (an entry's id covers its time).
            self.last_ms = now_ms().max(self.last_ms + 1);
            let mut entry = ProvEntry::new(key.key_id(), kind, text.as_bytes())
                .with_parents(parents.clone())
                .with_context_hash(context)
                .with_time_ms(self.last_ms);
            entry.target = target;
            match self.ledger.append(entry, &key, text.as_bytes()) {
                // Another process wrote the very same entry in the same millisecond.
                Err(LedgerError::Admission(AdmissionError::Duplicate(_))) if attempt < 3 => {
                    attempt += 1
                }
                other => break other?,
            }
        };
        self.haystacks.insert(a.id, Haystack::new(text));
        // The session has seen everything up to its own new entry when nothing else came in
        // between (the caller holds the ledger's lock).
        if session.seen == before && self.ledger.len() == before + bound + 1 {
            session.seen = self.ledger.len();
        }
        Ok(a)
    }

    /// The parents of an agent write of `session` (`spec/lineage.md` §4.2): the session's
    /// context entry, its uncovered reads (full weight, or the declared weight under
    /// `read_weights = "declared"`), an External [`UNKNOWN_CONTEXT`] entry when the write
    /// cannot be tied to verified reads (`intact` is whether the session's seal verified),
    /// then the declared parents that are not reads. Folds the uncovered reads into a new
    /// context entry first when there are more than [`FOLD_AT`] of them (or too many for one
    /// entry). A parent named twice keeps its largest weight.
    pub(super) fn session_parents(
        &mut self,
        session: &mut Session,
        intact: bool,
        declared: Vec<Parent>,
    ) -> Result<Vec<Parent>, FrontError> {
        let (mut pending, missing): (Vec<EntryId>, Vec<EntryId>) = session
            .uncovered()
            .iter()
            .partition(|id| self.ledger.index_of(id).is_some());
        // What cannot be tied to verified reads counts as External input (fail closed).
        let unknown =
            !session.is_tied() || !intact || session.unrecorded > 0 || !missing.is_empty();
        let mut marker = match unknown {
            true => Some(
                self.write(
                    session,
                    UNKNOWN_CONTEXT,
                    Role::External,
                    Kind::Context,
                    "",
                    Vec::new(),
                )?
                .id,
            ),
            false => None,
        };
        if pending.len() > FOLD_AT || pending.len() + declared.len() + 3 > MAX_PARENTS {
            pending.extend(marker.take());
            self.fold(session, &pending)?;
            pending.clear();
        }
        let lower = self.policy.read_weights == ReadWeights::Declared;
        let mut out: Vec<Parent> = Vec::new();
        let mut add = |p: Parent| match out.iter_mut().find(|q| q.id == p.id) {
            Some(q) => q.weight = q.weight.max(p.weight),
            None => out.push(p),
        };
        add_all(&mut add, session.context.map(Parent::full));
        for id in &pending {
            let weight = declared
                .iter()
                .filter(|p| lower && p.id == *id)
                .map(|p| p.weight)
                .max()
                .unwrap_or(Weight::ONE);
            add(Parent { id: *id, weight });
        }
        add_all(&mut add, marker.map(Parent::full));
        if !declared.is_empty() {
            let reads: HashSet<&EntryId> = session.reads.iter().collect();
            add_all(
                &mut add,
                declared.into_iter().filter(|p| !reads.contains(&p.id)),
            );
        }
        Ok(out)
    }

    /// Writes context entries (agent principal, `Kind::Context`, empty content) whose parents
    /// are the session's context entry and `reads`, at full weight, [`MAX_PARENTS`] at a
    /// time; the session's context then covers all its reads.
    pub(super) fn fold(
        &mut self,
        session: &mut Session,
        reads: &[EntryId],
    ) -> Result<(), FrontError> {
        let agent = self.agent.clone();
        for chunk in reads.chunks(MAX_PARENTS - 1) {
            let mut parents: Vec<Parent> = session.context.into_iter().map(Parent::full).collect();
            parents.extend(chunk.iter().copied().map(Parent::full));
            let c = self.write(session, &agent, Role::Agent, Kind::Context, "", parents)?;
            session.context = Some(c.id);
        }
        session.covered = session.reads.len() as u64;
        Ok(())
    }
}

fn add_all(add: &mut impl FnMut(Parent), parents: impl IntoIterator<Item = Parent>) {
    for p in parents {
        add(p);
    }
}
