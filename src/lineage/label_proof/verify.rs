//! [`LabelProof::verify`]: the label, quarantine, tombstones and lineage path of an entry,
//! recomputed from a label proof and the log's verifier key (`spec/label-proof.md` §4).

use super::{LabelProof, LabelProofError};
use crate::lineage::effects_index::{verify_lookup, Effect, EffectsOf, IndexCommitment, Subject};
use crate::lineage::path::{untrusted_path, PathView};
use crate::lineage::quarantine::{Quarantine, Reach};
use crate::lineage::{Label, LabelPolicy};
use crate::log::{InclusionProof, LogVerifier, VerifiedCheckpoint};
use crate::record::{EntryId, KeyId, Kind, Parent, Role, SignedEntry};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// An entry of the ancestry, as the proof shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ancestor {
    /// Its id.
    pub id: EntryId,
    /// Its leaf index.
    pub index: u64,
    /// Its kind.
    pub kind: Kind,
    /// Its writer.
    pub writer: KeyId,
    /// The role its writer is bound to (the log key: [`Role::Log`]).
    pub role: Role,
    /// The name in the writer's binding (the log key: the log's origin). Chosen by whoever
    /// bound it: quote it before showing it (`crate::quote`).
    pub name: String,
    /// Its recomputed label.
    pub label: Label,
}

/// Why the subject is quarantined: an active flag that reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuarantineFinding {
    /// The earliest active flag entry, in log order, on the source with the reach of the path.
    pub flag: EntryId,
    /// How far that flag reaches.
    pub reach: Reach,
    /// The path from the flagged source to the subject (source first), along one reach
    /// (`spec/forensics.md` §3).
    pub path: Vec<EntryId>,
}

/// What a verified label proof shows about its subject, as of the checkpoint.
#[derive(Clone, Debug)]
pub struct LabelVerdict {
    /// The checkpoint every entry was proved against.
    pub checkpoint: VerifiedCheckpoint,
    /// The labelling parameters it signs.
    pub policy: LabelPolicy,
    /// The subject entry.
    pub entry: SignedEntry,
    /// Its label (`spec/lineage.md` §3–§4).
    pub label: Label,
    /// Its whole ancestry, itself included, in log order.
    pub ancestry: Vec<Ancestor>,
    /// The lineage path behind an untrusted label (`spec/lineage.md` §6), source first; empty
    /// when the label is trusted.
    pub path: Vec<EntryId>,
    /// The tombstones that delete the subject, in log order.
    pub tombstones: Vec<EntryId>,
    /// Why the subject is quarantined, `None` when it is not (`spec/forensics.md` §2).
    pub quarantine: Option<QuarantineFinding>,
}

impl LabelVerdict {
    /// The subject's leaf index.
    pub fn index(&self) -> u64 {
        self.ancestry.last().map_or(0, |a| a.index)
    }

    /// The ancestry entry `id`, if any.
    pub fn ancestor(&self, id: &EntryId) -> Option<&Ancestor> {
        self.ancestry.iter().find(|a| a.id == *id)
    }
}

impl LabelProof {
    /// Verifies the proof with nothing but the log's verifier key and recomputes what it
    /// says about its subject (`spec/label-proof.md` §4, in that order):
    ///
    /// 1. the checkpoint verifies under `verifier` and signs the labelling parameters (equal
    ///    to `expected` when given) and an effects index;
    /// 2. an entry is at the subject's index; every entry decodes and its signature verifies
    ///    (one batch); every inclusion proof leads to the checkpoint's root; no entry twice;
    /// 3. every parent of every entry of the ancestry is in the proof, earlier in the log;
    /// 4. exactly the needed subjects are looked up (each writer's key, each ancestor, each
    ///    flag on an ancestor), and each lookup shows the effects the proof carries about its
    ///    subject as all there are; no other entry is in the proof;
    /// 5. each ancestry entry's writer is bound (by the first keyring entry of the log key for
    ///    its key) before it;
    /// 6. labels, in log order; tombstones of the subject; the quarantine the active flags
    ///    on the ancestry give; the lineage path.
    ///
    /// Cost: one batch signature check over the entries, one inclusion proof each, one lookup
    /// (O(log effects) hashes) per subject. Does not panic.
    ///
    /// # Errors
    /// The [`LabelProofError`] of the first check that fails.
    pub fn verify(
        &self,
        verifier: &LogVerifier,
        expected: Option<LabelPolicy>,
    ) -> Result<LabelVerdict, LabelProofError> {
        let checkpoint = verifier.verify(&self.checkpoint)?;
        let policy = LabelPolicy::from_extension(checkpoint.extension())?
            .ok_or(LabelProofError::UnsignedParameters)?;
        if let Some(expected) = expected.filter(|e| *e != policy) {
            return Err(LabelProofError::ParametersDiffer {
                signed: policy,
                expected,
            });
        }
        let index = IndexCommitment::from_extension(checkpoint.extension())?
            .ok_or(LabelProofError::NoEffectsIndex)?;
        let subject_at = self
            .entries
            .iter()
            .position(|e| e.index == self.subject)
            .ok_or(LabelProofError::MissingSubject {
                index: self.subject,
            })?;
        let entries = self.checked_entries(&checkpoint)?;
        let by_id: HashMap<EntryId, usize> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id(), i))
            .collect();
        if by_id.len() != entries.len() {
            let mut seen = BTreeSet::new();
            let twice = entries.iter().find(|e| !seen.insert(e.id()));
            return Err(LabelProofError::DuplicateEntry {
                id: twice.map(|e| e.id()).unwrap_or_default(),
            });
        }
        let at = |i: usize| self.entries[i].index;
        let closure = ancestry(&entries, &by_id, subject_at, at)?;
        let log_key = verifier.key_id();
        let effects = self.check_effects(&entries, &closure, &index, log_key)?;
        let roles = roles(
            &entries,
            &closure,
            at,
            &effects,
            log_key,
            checkpoint.origin(),
        )?;
        let view = Recomputed::new(&entries, &closure, at, roles, &policy);
        let subject = entries[subject_at].id();
        let tombstones = effects
            .get(&Subject::Target(subject))
            .map(|es| {
                es.iter()
                    .filter(|e| e.kind == Kind::Tombstone)
                    .map(|e| e.id)
                    .collect()
            })
            .unwrap_or_default();
        let quarantine = quarantine(&entries, &closure, at, &effects, &policy, &subject);
        let path = untrusted_path(&view, &policy, &subject).unwrap_or_default();
        Ok(LabelVerdict {
            label: view.label(&subject),
            ancestry: view.ancestry,
            checkpoint,
            policy,
            entry: entries[subject_at].clone(),
            path,
            tombstones,
            quarantine,
        })
    }

    /// Step 2: every entry decoded and its signature verified (one batch), every inclusion
    /// proof checked against `checkpoint`.
    fn checked_entries(
        &self,
        checkpoint: &VerifiedCheckpoint,
    ) -> Result<Vec<SignedEntry>, LabelProofError> {
        let bytes: Vec<&[u8]> = self.entries.iter().map(|e| e.cose.as_slice()).collect();
        let decoded = SignedEntry::decode_batch(&bytes, |_| None);
        let mut out = Vec::with_capacity(decoded.len());
        for (e, d) in self.entries.iter().zip(decoded) {
            let index = e.index;
            out.push(d.map_err(|source| LabelProofError::Entry { index, source })?);
        }
        for (e, s) in self.entries.iter().zip(&out) {
            let proof = InclusionProof {
                index: e.index,
                path: e.path.clone(),
            };
            checkpoint
                .verify_inclusion(&s.id(), &proof)
                .map_err(|source| LabelProofError::Proof {
                    index: e.index,
                    source,
                })?;
        }
        Ok(out)
    }

    /// Step 4: the subjects that bear on the ancestry `closure` are exactly those looked up,
    /// each lookup verifies against the signed `index` with the effects the proof carries,
    /// and every entry is an ancestor or one of those effects. Returns the effects by subject.
    fn check_effects(
        &self,
        entries: &[SignedEntry],
        closure: &[usize],
        index: &IndexCommitment,
        log_key: KeyId,
    ) -> Result<BTreeMap<Subject, Vec<Effect>>, LabelProofError> {
        let mut by_subject: BTreeMap<Subject, Vec<Effect>> = BTreeMap::new();
        for (e, p) in entries.iter().zip(&self.entries) {
            if let Some(s) = Subject::of(e.entry()) {
                by_subject.entry(s).or_default().push(Effect {
                    index: p.index,
                    id: e.id(),
                    kind: e.entry().kind,
                });
            }
        }
        let mut needed = BTreeSet::new();
        for &i in closure {
            let e = entries[i].entry();
            needed.insert(Subject::Key(e.writer));
            needed.insert(Subject::Target(entries[i].id()));
        }
        needed.remove(&Subject::Key(log_key));
        let flags: Vec<Subject> = needed
            .iter()
            .flat_map(|s| by_subject.get(s).into_iter().flatten())
            .filter(|e| matches!(e.kind, Kind::Quarantine | Kind::QuarantineStrong))
            .map(|e| Subject::Target(e.id))
            .collect();
        needed.extend(flags);
        let looked: BTreeSet<Subject> = self.lookups.iter().map(|l| l.subject).collect();
        if let Some(s) = needed.difference(&looked).next() {
            return Err(LabelProofError::MissingLookup(*s));
        }
        if let Some(s) = looked.difference(&needed).next() {
            return Err(LabelProofError::ExtraneousLookup(*s));
        }
        for l in &self.lookups {
            let given = by_subject
                .get(&l.subject)
                .map_or(EffectsOf::NONE, |es| EffectsOf::over(es.iter()));
            verify_lookup(&index.root, l, &given).map_err(|source| LabelProofError::Lookup {
                subject: l.subject,
                source,
            })?;
        }
        by_subject.retain(|s, _| needed.contains(s));
        let used: BTreeSet<u64> = closure
            .iter()
            .map(|&i| self.entries[i].index)
            .chain(by_subject.values().flatten().map(|e| e.index))
            .collect();
        if let Some(e) = self.entries.iter().find(|e| !used.contains(&e.index)) {
            return Err(LabelProofError::Extraneous { index: e.index });
        }
        Ok(by_subject)
    }
}

/// Step 3: the ancestry of the entry at `subject` (positions in `entries`, itself included),
/// in log order: every parent of each one must be in the proof, earlier in the log.
fn ancestry(
    entries: &[SignedEntry],
    by_id: &HashMap<EntryId, usize>,
    subject: usize,
    at: impl Fn(usize) -> u64,
) -> Result<Vec<usize>, LabelProofError> {
    let mut seen = BTreeSet::from([subject]);
    let mut queue = VecDeque::from([subject]);
    while let Some(c) = queue.pop_front() {
        let child = entries[c].id();
        for p in &entries[c].entry().parents {
            let i = *by_id.get(&p.id).ok_or(LabelProofError::MissingAncestor {
                child,
                parent: p.id,
            })?;
            if at(i) >= at(c) {
                return Err(LabelProofError::ParentNotEarlier {
                    child,
                    parent: p.id,
                });
            }
            if seen.insert(i) {
                queue.push_back(i);
            }
        }
    }
    // Positions follow the proof's strictly ascending indexes: this is log order.
    Ok(seen.into_iter().collect())
}

/// Step 5: the role and name of each ancestry entry's writer (by position): the log key's
/// own, or those of the first keyring entry by the log key binding it, which must precede the
/// entry (`spec/record.md` §5.4 rules 1, 3 and 4).
fn roles(
    entries: &[SignedEntry],
    closure: &[usize],
    at: impl Fn(usize) -> u64,
    effects: &BTreeMap<Subject, Vec<Effect>>,
    log_key: KeyId,
    origin: &str,
) -> Result<HashMap<usize, (Role, String)>, LabelProofError> {
    let by_id: HashMap<EntryId, &SignedEntry> = entries.iter().map(|e| (e.id(), e)).collect();
    let mut out = HashMap::new();
    for &i in closure {
        let writer = entries[i].writer();
        if writer == log_key {
            out.insert(i, (Role::Log, origin.to_string()));
            continue;
        }
        let binding = effects
            .get(&Subject::Key(writer))
            .into_iter()
            .flatten()
            .filter_map(|e| Some((e.index, by_id.get(&e.id)?.entry())))
            .find(|(_, b)| b.kind == Kind::Keyring && b.writer == log_key)
            .and_then(|(index, b)| Some((index, b.binding.as_ref()?)));
        match binding {
            Some((bound_at, b)) if bound_at < at(i) => {
                out.insert(i, (b.role, b.name.clone()));
            }
            _ => {
                return Err(LabelProofError::UnboundWriter {
                    index: at(i),
                    writer,
                })
            }
        }
    }
    Ok(out)
}

/// Step 6: the quarantine of the subject: the flags on ancestry entries that no release in
/// the proof lifts, propagated over the ancestry in log order (`spec/forensics.md` §2.3) by
/// the same [`Quarantine`] a ledger keeps. Every path from a flagged source to the subject
/// lies inside its ancestry, so the answer is the whole log's.
fn quarantine(
    entries: &[SignedEntry],
    closure: &[usize],
    at: impl Fn(usize) -> u64,
    effects: &BTreeMap<Subject, Vec<Effect>>,
    policy: &LabelPolicy,
    subject: &EntryId,
) -> Option<QuarantineFinding> {
    let index_of: HashMap<EntryId, u64> =
        closure.iter().map(|&i| (entries[i].id(), at(i))).collect();
    // Flags on ancestors and releases of those flags, in log order.
    let mut forensic: Vec<&Effect> = effects
        .iter()
        .filter(|(s, _)| matches!(s, Subject::Target(_)))
        .flat_map(|(_, es)| es)
        .filter(|e| {
            matches!(
                e.kind,
                Kind::Quarantine | Kind::QuarantineStrong | Kind::Release
            )
        })
        .collect();
    forensic.sort_by_key(|e| e.index);
    let by_id: HashMap<EntryId, &SignedEntry> = entries.iter().map(|e| (e.id(), e)).collect();
    let mut q = Quarantine::default();
    for e in forensic {
        let target = by_id.get(&e.id).and_then(|s| s.entry().target);
        let source = target.and_then(|t| index_of.get(&t).copied());
        q.apply(e.id, e.index, e.kind, target, source);
    }
    let feed = closure.iter().map(|&i| {
        Ok::<_, std::convert::Infallible>((entries[i].id(), entries[i].entry().parents.clone()))
    });
    let _ = q.rebuild(feed, policy);
    let parents = |id: &EntryId| {
        Ok::<_, std::convert::Infallible>(
            by_id
                .get(id)
                .map(|e| e.entry().parents.clone())
                .unwrap_or_default(),
        )
    };
    let (path, reach) = q.path_to_source(subject, policy, parents).ok()??;
    let source = path.first()?;
    let flag = q
        .flags_on(source)
        .into_iter()
        .find(|f| f.reach == reach)?
        .entry;
    Some(QuarantineFinding { flag, reach, path })
}

/// The ancestry with its recomputed labels, as the path search reads it.
struct Recomputed<'a> {
    ancestry: Vec<Ancestor>,
    /// Position in `ancestry` by id.
    at: HashMap<EntryId, usize>,
    parents: HashMap<EntryId, &'a [Parent]>,
}

impl<'a> Recomputed<'a> {
    /// Labels every ancestry entry in log order (`spec/lineage.md` §3–§4, the same
    /// [`LabelPolicy::label`] a ledger labels with at append).
    fn new(
        entries: &'a [SignedEntry],
        closure: &[usize],
        at: impl Fn(usize) -> u64,
        mut roles: HashMap<usize, (Role, String)>,
        policy: &LabelPolicy,
    ) -> Self {
        let mut labels: HashMap<EntryId, Label> = HashMap::new();
        let mut ancestry = Vec::with_capacity(closure.len());
        let mut parents = HashMap::new();
        let mut at_pos = HashMap::new();
        for &i in closure {
            let (e, id) = (entries[i].entry(), entries[i].id());
            let (role, name) = roles.remove(&i).unwrap_or((Role::External, String::new()));
            // Every parent is earlier in the ancestry (step 3): labelled already.
            let label = policy.label(
                role,
                e.parents.iter().map(|p| {
                    (
                        p.weight,
                        labels.get(&p.id).copied().unwrap_or(Label::External),
                    )
                }),
            );
            labels.insert(id, label);
            parents.insert(id, e.parents.as_slice());
            at_pos.insert(id, ancestry.len());
            ancestry.push(Ancestor {
                id,
                index: at(i),
                kind: e.kind,
                writer: e.writer,
                role,
                name,
                label,
            });
        }
        Recomputed {
            ancestry,
            at: at_pos,
            parents,
        }
    }

    fn label(&self, id: &EntryId) -> Label {
        self.label_of(id).unwrap_or(Label::External)
    }
}

impl PathView for Recomputed<'_> {
    type Error = std::convert::Infallible;

    fn label_of(&self, id: &EntryId) -> Option<Label> {
        self.at.get(id).map(|&i| self.ancestry[i].label)
    }

    fn parents_of(&self, id: &EntryId) -> Result<Vec<Parent>, Self::Error> {
        Ok(self.parents.get(id).map(|p| p.to_vec()).unwrap_or_default())
    }

    fn is_unknown_context(&self, id: &EntryId) -> bool {
        self.at
            .get(id)
            .is_some_and(|&i| self.ancestry[i].kind == Kind::Context)
    }
}
