//! How a front writes for a session (`spec/lineage.md` §4.2): signs entries as its principals
//! and gives every agent write the parents of the session's reads. What one call writes — the
//! unknown-context marker, the context entries that fold reads, the entry itself, a tool call
//! and its result — is appended in one batch, all or nothing: a write the ledger refuses
//! (an unknown declared parent, a flag the rules refuse) leaves no entry behind (issue 24
//! review: each failed `ledger_append` used to leave an External marker).

use super::{now_ms, session_context, FOLD_AT};
use super::{Front, FrontError, Keys, Session, UNKNOWN_CONTEXT};
use crate::gate::ReadWeights;
use crate::ledger::{Appended, LedgerError};
use crate::lineage::admission::AdmissionError;
use crate::record::{
    EntryId, Kind, Parent, ProvEntry, Role, SignedEntry, Weight, WriterKey, MAX_PARENTS,
};
use crate::store::Store;

/// A parent of an entry of a batch: an entry of the ledger, or an earlier entry of the same
/// batch (by its position), whose id is known only once it is signed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ref {
    /// An entry already in the ledger.
    Entry(EntryId),
    /// The entry at this position of the batch.
    Batch(usize),
}

/// One entry of a batch ([`Front::write_batch`]).
#[derive(Clone, Debug)]
pub(super) struct Spec {
    /// The principal that signs it.
    pub(super) name: String,
    /// Its role (the key is bound with it on first use).
    pub(super) role: Role,
    /// The entry's kind.
    pub(super) kind: Kind,
    /// Its content (UTF-8).
    pub(super) text: String,
    /// Its parents, with weights.
    pub(super) parents: Vec<(Ref, Weight)>,
    /// What it is about (a flag's source, a tombstone's target).
    pub(super) target: Option<EntryId>,
}

impl Spec {
    /// An entry with no parents and no target.
    pub(super) fn new(name: &str, role: Role, kind: Kind, text: &str) -> Self {
        Spec {
            name: name.to_string(),
            role,
            kind,
            text: text.to_string(),
            parents: Vec::new(),
            target: None,
        }
    }

    /// With `parents` (each once; a parent named twice keeps its largest weight).
    pub(super) fn with_parents(mut self, parents: Vec<(Ref, Weight)>) -> Self {
        self.parents = parents;
        self
    }
}

/// What an agent write of a session is given (`spec/lineage.md` §4.2): the entries to write
/// before it (the unknown-context marker, context entries folding reads), its parents, and
/// how the session's record changes once the batch is stored.
#[derive(Debug, Default)]
pub(super) struct Lineage {
    /// Entries to write first, in order.
    pub(super) before: Vec<Spec>,
    /// The write's parents.
    pub(super) parents: Vec<(Ref, Weight)>,
    /// The position in `before` of the new context entry, when reads were folded, and how
    /// many reads it then covers.
    pub(super) folded: Option<(usize, u64)>,
}

impl<S: Store, K: Keys> Front<S, K> {
    /// Signs and appends one entry as principal `name`, binding its key on first use.
    pub(super) fn write(
        &mut self,
        session: &mut Session,
        spec: Spec,
    ) -> Result<Appended, FrontError> {
        let mut out = self.write_batch(session, vec![spec])?;
        out.pop().ok_or(FrontError::Ledger(LedgerError::EmptyBatch))
    }

    /// Signs `specs` (each by its principal, with the session's context hash and a writer time
    /// strictly increasing within this front) and appends them in one ledger batch: all are
    /// stored, or none (`spec/lineage.md` §4.2). Keys are bound first (a keyring entry per
    /// principal, once in the ledger's life, whatever happens to the batch). Returns what was
    /// appended, in order.
    ///
    /// # Errors
    /// Keys, a principal bound with another role, and every refusal of the ledger (unknown
    /// parent, a flag the rules refuse…); nothing of the batch is stored then.
    pub(super) fn write_batch(
        &mut self,
        session: &mut Session,
        specs: Vec<Spec>,
    ) -> Result<Vec<Appended>, FrontError> {
        let mut keys: Vec<WriterKey> = Vec::with_capacity(specs.len());
        for s in &specs {
            let (key, _) = self.keys.key(&s.name, s.role)?;
            keys.push(key);
        }
        for (s, key) in specs.iter().zip(&keys) {
            self.ledger.bind(key.key_id(), s.role, &s.name)?;
        }
        let fresh = session.is_fresh();
        let before = self.ledger.len();
        let context = session_context(&session.id);
        let mut attempt = 0;
        let out = loop {
            let mut signed: Vec<SignedEntry> = Vec::with_capacity(specs.len());
            for (s, key) in specs.iter().zip(&keys) {
                // Time is strictly increasing per front, so that the same text written twice
                // in one millisecond still makes two entries (an entry's id covers its time).
                self.last_ms = now_ms().max(self.last_ms + 1);
                let parents = s
                    .parents
                    .iter()
                    .map(|(r, weight)| {
                        let id = match r {
                            Ref::Entry(id) => Some(*id),
                            Ref::Batch(i) => signed.get(*i).map(SignedEntry::id),
                        };
                        id.map(|id| Parent {
                            id,
                            weight: *weight,
                        })
                    })
                    .collect::<Option<Vec<Parent>>>()
                    .ok_or(FrontError::BatchOrder)?;
                let mut entry = ProvEntry::new(key.key_id(), s.kind, s.text.as_bytes())
                    .with_parents(parents)
                    .with_context_hash(context)
                    .with_time_ms(self.last_ms);
                entry.target = s.target;
                signed.push(SignedEntry::sign(entry, key).map_err(LedgerError::from)?);
            }
            let batch = signed
                .into_iter()
                .zip(&specs)
                .map(|(e, s)| (e, s.text.as_bytes()))
                .collect();
            match self.ledger.append_signed(batch) {
                // Another process wrote the very same entry in the same millisecond.
                Err(LedgerError::Admission(AdmissionError::Duplicate(_))) if attempt < 3 => {
                    attempt += 1
                }
                other => break other?,
            }
        };
        for (a, s) in out.iter().zip(&specs) {
            self.index_mut()
                .insert(a.id, super::haystack_of(&s.name, &s.text));
        }
        if fresh {
            // Nothing before now is this session's (spec/hooks.md §6).
            session.seen = before;
        }
        // The session has seen everything up to its own new entries when nothing else came
        // in between (the caller holds the ledger's lock).
        if session.seen == before && self.ledger.len() == before + out.len() as u64 {
            session.seen = self.ledger.len();
        }
        Ok(out)
    }

    /// Writes `lineage.before` and then `last` (whose parents are `lineage.parents` followed by
    /// its own) in one batch ([`Front::write_batch`]), then records the new context entry in
    /// the session if reads were folded. Returns what was appended, `last` at the end.
    ///
    /// # Errors
    /// As [`Front::write_batch`]; the session is unchanged then.
    pub(super) fn write_after(
        &mut self,
        session: &mut Session,
        lineage: Lineage,
        last: Vec<Spec>,
    ) -> Result<Vec<Appended>, FrontError> {
        let Lineage {
            before,
            parents,
            folded,
        } = lineage;
        let offset = before.len();
        let mut specs = before;
        for (i, mut s) in last.into_iter().enumerate() {
            if i == 0 {
                let own = std::mem::take(&mut s.parents);
                s.parents = parents.clone();
                s.parents.extend(own);
            } else {
                // Later entries name earlier ones of `last` relative to it.
                for (r, _) in &mut s.parents {
                    if let Ref::Batch(j) = r {
                        *j += offset;
                    }
                }
            }
            specs.push(s);
        }
        let out = self.write_batch(session, specs)?;
        if let Some((at, covered)) = folded {
            session.context = out.get(at).map(|a| a.id);
            session.covered = covered;
        }
        Ok(out)
    }

    /// [`Front::write_after`] of one entry; returns it.
    ///
    /// # Errors
    /// As [`Front::write_batch`].
    pub(super) fn write_last(
        &mut self,
        session: &mut Session,
        lineage: Lineage,
        last: Spec,
    ) -> Result<Appended, FrontError> {
        let mut out = self.write_after(session, lineage, vec![last])?;
        out.pop().ok_or(FrontError::BatchOrder)
    }

    /// The lineage of an agent write of `session` (`spec/lineage.md` §4.2): the session's
    /// context entry, its uncovered reads (full weight, or the declared weight under
    /// `read_weights = "declared"`), an External [`UNKNOWN_CONTEXT`] entry when the write
    /// cannot be tied to verified reads (`intact` is whether the session's seal verified),
    /// then the declared parents that are not reads. Folds the uncovered reads into new
    /// context entries first when there are more than [`FOLD_AT`] of them (or too many for
    /// one entry). A parent named twice keeps its largest weight. Writes nothing: the caller
    /// writes the result with its entry ([`Front::write_after`]).
    pub(super) fn session_parents(
        &self,
        session: &Session,
        intact: bool,
        declared: Vec<Parent>,
    ) -> Lineage {
        let (reads, missing): (Vec<EntryId>, Vec<EntryId>) = session
            .uncovered()
            .iter()
            .partition(|id| self.ledger.index_of(id).is_some());
        let mut pending: Vec<Ref> = reads.into_iter().map(Ref::Entry).collect();
        let mut lineage = Lineage::default();
        // What cannot be tied to verified reads counts as External input (fail closed).
        let unknown = !session.is_tied()
            || !intact
            || session.unrecorded > 0
            || !missing.is_empty()
            || self.unseen_start(session);
        let mut marker = unknown.then(|| {
            lineage.before.push(Spec::new(
                UNKNOWN_CONTEXT,
                Role::External,
                Kind::Context,
                "",
            ));
            Ref::Batch(0)
        });
        let mut context = session.context.map(Ref::Entry);
        if pending.len() > FOLD_AT || pending.len() + declared.len() + 3 > MAX_PARENTS {
            pending.extend(marker.take());
            for chunk in pending.chunks(MAX_PARENTS - 1) {
                let parents = context
                    .into_iter()
                    .chain(chunk.iter().copied())
                    .map(|r| (r, Weight::ONE))
                    .collect();
                let agent = self.agent.clone();
                lineage
                    .before
                    .push(Spec::new(&agent, Role::Agent, Kind::Context, "").with_parents(parents));
                context = Some(Ref::Batch(lineage.before.len() - 1));
            }
            lineage.folded = Some((lineage.before.len() - 1, session.reads().len() as u64));
            pending.clear();
        }
        let lower = self.policy.read_weights == ReadWeights::Declared;
        let mut add = |r: Ref, w: Weight| match lineage.parents.iter_mut().find(|q| q.0 == r) {
            Some(q) => q.1 = q.1.max(w),
            None => lineage.parents.push((r, w)),
        };
        if let Some(c) = context {
            add(c, Weight::ONE);
        }
        for r in &pending {
            let weight = declared
                .iter()
                .filter(|p| lower && Ref::Entry(p.id) == *r)
                .map(|p| p.weight)
                .max()
                .unwrap_or(Weight::ONE);
            add(*r, weight);
        }
        if let Some(m) = marker {
            add(m, Weight::ONE);
        }
        for p in declared.into_iter().filter(|p| !session.has_read(&p.id)) {
            add(Ref::Entry(p.id), p.weight);
        }
        lineage
    }
}

#[cfg(test)]
mod tests {
    use crate::front::{DerivedKeys, Front, FrontError, Session};
    use crate::gate::Policy;
    use crate::ledger::LedgerError;
    use crate::lineage::admission::AdmissionError;
    use crate::lineage::quarantine::Reach;
    use crate::lineage::LabelPolicy;
    use crate::log::LogSigner;
    use crate::record::{EntryId, Kind, Parent, WriterKey};
    use crate::store::MemoryStore;
    use crate::Ledger;

    fn front() -> Front<MemoryStore, DerivedKeys> {
        let signer = LogSigner::new("test.example/w", WriterKey::for_label("w")).unwrap();
        let l = Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).unwrap();
        Front::new(l, Policy::default(), DerivedKeys("w".into()))
    }

    /// A write the ledger refuses leaves no entry: not the unknown-context marker an untied
    /// session's write needs, not the context entries that fold a long session's reads
    /// (issue 24 review: 256 failed appends used to leave 256 External markers).
    #[test]
    fn a_refused_write_leaves_nothing() {
        let mut f = front();
        let unknown = Parent::full(EntryId([9; 32]));
        // Untied: the marker would come first.
        let mut empty = Session::new("untied");
        f.remember(&mut empty, Kind::Summary, "warm up", vec![])
            .unwrap();
        let mut untied = Session::new("untied-2");
        let before = f.ledger().len();
        let err = f
            .remember(&mut untied, Kind::Summary, "x", vec![unknown])
            .unwrap_err();
        assert!(
            matches!(
                err,
                FrontError::Ledger(LedgerError::Admission(AdmissionError::UnknownParent(_)))
            ),
            "{err}"
        );
        assert_eq!(f.ledger().len(), before, "nothing of the batch is stored");
        assert_eq!(untied, Session::new("untied-2"), "the session is unchanged");
        // Tied, with more reads than FOLD_AT: the fold would come first.
        let mut long = Session::new("long");
        for i in 0..40 {
            f.record_prompt(&mut long, &format!("prompt {i}")).unwrap();
        }
        let kept = long.clone();
        let before = f.ledger().len();
        assert!(f
            .remember(&mut long, Kind::Fact, "y", vec![unknown])
            .is_err());
        assert_eq!(f.ledger().len(), before);
        assert_eq!(long, kept);
        // A flag the rules refuse (unknown source) and a tombstone of an unknown entry too.
        // (A principal's first write binds its key, once in the ledger's life, whatever
        // happens to the batch: the first refused flag binds `advisory`.)
        let flag = |f: &mut Front<MemoryStore, DerivedKeys>, s: &mut Session| {
            f.flag(s, "advisory", EntryId([8; 32]), Reach::All, "why")
        };
        assert!(flag(&mut f, &mut untied).is_err());
        let before = f.ledger().len();
        assert!(flag(&mut f, &mut untied).is_err());
        assert!(f.tombstone(&mut untied, EntryId([7; 32]), "why").is_err());
        assert_eq!(f.ledger().len(), before);
        // The same writes with known parents succeed, marker and fold included.
        let a = f.remember(&mut long, Kind::Fact, "y", vec![]).unwrap();
        assert!(long.context.is_some() && long.covered == 40);
        assert!(f.ledger().len() > a.index);
    }
}
