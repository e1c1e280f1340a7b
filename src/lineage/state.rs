//! The lineage state of a log and the one transition every entry enters it by
//! (`spec/lineage.md` §5.2): [`LineageState::admit`].
//!
//! The state is what the entries admitted so far have made true: which keys are bound to
//! which roles (the keyring), which entries are tombstoned, which flags are active and what
//! they reach (the quarantine), and who holds a lease on what. [`LineageState::admit`] judges
//! the next entry of the log by the admission rule ([`admission::admit`]), computes its label,
//! and applies what it does besides being stored. The ledger feeds it the rows it appends,
//! the rows it reads on open and on refresh (written by other processes), and the rows it
//! migrates; the audit feeds it every entry of the log. So the ledger and the auditor are the
//! same machine fed from different places, and no path of either applies an effect or a label
//! of its own.
//!
//! Labels of earlier entries are not kept here (a ledger reads them from tagged rows, an audit
//! from what it recomputed): the caller gives them through [`Known`].

use crate::lineage::admission::{self, AdmissionError, AdmissionView};
use crate::lineage::effects_index::{Effect, EffectsIndex, IndexCommitment, Lookup, Subject};
use crate::lineage::lease::{parse_lease_terms, LeaseBook};
use crate::lineage::quarantine::{Quarantine, Rescan};
use crate::lineage::{Label, LabelPolicy};
use crate::record::{EntryId, Hash32, KeyId, Kind, ProvEntry, PublicKey, Role, SignedEntry};
use std::collections::{HashMap, HashSet};

/// What the caller knows of the entries before the one being admitted.
pub trait Known {
    /// The label of an earlier entry, if it is in the log.
    fn label_of(&self, id: &EntryId) -> Option<Label>;
    /// The leaf index of an earlier entry, if it is in the log.
    fn index_of(&self, id: &EntryId) -> Option<u64>;
    /// The role a key is bound to by an entry admitted but not applied yet (the earlier
    /// entries of a batch being appended); `None` by default.
    fn pending_role(&self, _key: &KeyId) -> Option<Role> {
        None
    }
}

/// Where an entry's content comes from.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Content<'a> {
    /// Given by its writer (an append): it MUST hash to the signed content hash, else the
    /// entry is refused ([`AdmissionError::ContentMismatch`]).
    Given(&'a [u8]),
    /// Read from a store, which may have redacted it (`None`) or rewritten it: content that
    /// does not match is reported ([`Admitted::content_mismatch`]) and the entry is then
    /// judged as if redacted, so rewriting a content row cannot take away a signed entry's
    /// effects.
    Stored(Option<&'a [u8]>),
}

/// An entry the state admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admitted {
    /// Its label (`spec/lineage.md` §3).
    pub label: Label,
    /// Whether its stored content did not match the signed content hash
    /// ([`Content::Stored`] only).
    pub content_mismatch: bool,
    /// The leaf after which the quarantined set must be fed the log again
    /// ([`Quarantine::rescan`]): a flag or release changed what is reached. A ledger rescans
    /// from its store; an audit rebuilds the reach in a second pass.
    pub rescan: Option<u64>,
}

/// A bound principal.
#[derive(Clone, Debug)]
pub struct Principal {
    /// Its role.
    pub role: Role,
    /// Its name in the binding.
    pub name: String,
    /// Its key, decompressed once (`None` if the bytes are not a point; such a key verifies
    /// nothing). A cache: callers hand it to `SignedEntry::decode_with_keys`, which gives the
    /// same answers without it.
    pub key: Option<PublicKey>,
}

/// The lineage state of one log (module docs).
#[derive(Clone, Debug)]
pub struct LineageState {
    log_key: KeyId,
    policy: LabelPolicy,
    keyring: HashMap<KeyId, Principal>,
    tombstoned: HashSet<EntryId>,
    quarantine: Quarantine,
    leases: LeaseBook,
    effects: EffectsIndex,
}

impl LineageState {
    /// The state of an empty log whose key is `log_key` (bound as role `log` under
    /// `log_name` from the start), labelled under `policy`, judging leases with `leases`
    /// (an audit's book accepts what depends on redacted lease terms).
    pub fn new(log_key: KeyId, log_name: &str, policy: LabelPolicy, leases: LeaseBook) -> Self {
        let keyring = HashMap::from([(
            log_key,
            Principal {
                role: Role::Log,
                name: log_name.to_string(),
                key: log_key.public_key().ok(),
            },
        )]);
        LineageState {
            log_key,
            policy,
            keyring,
            tombstoned: HashSet::new(),
            quarantine: Quarantine::default(),
            leases,
            effects: EffectsIndex::default(),
        }
    }

    /// Admits `entry` (its signature and encoding already verified) as the entry at leaf
    /// `index`: the admission rule ([`LineageState::check`]), then its effects
    /// ([`LineageState::apply`]). Nothing changes when it is refused.
    ///
    /// # Errors
    /// The [`AdmissionError`] of the first broken rule; untrusted input triggers every one.
    /// Does not panic.
    pub fn admit(
        &mut self,
        known: &impl Known,
        index: u64,
        entry: &SignedEntry,
        content: Content<'_>,
    ) -> Result<Admitted, AdmissionError> {
        let (label, content_mismatch) = self.check(known, entry, content)?;
        // Content that does not match counts for nothing: `apply` takes lease terms only from
        // content hashing to the signed content hash.
        let content = match content {
            Content::Given(c) => Some(c),
            Content::Stored(c) => c,
        };
        let rescan = self.apply(known, index, entry.id(), entry.entry(), content);
        Ok(Admitted {
            label,
            content_mismatch,
            rescan,
        })
    }

    /// The admission rule alone ([`admission::admit`], in its documented order) and the label
    /// the entry gets, without changing the state (a batch is checked entry by entry before
    /// anything of it is stored, then applied). Returns the label and whether stored content
    /// did not match.
    ///
    /// # Errors
    /// As [`LineageState::admit`].
    pub fn check(
        &self,
        known: &impl Known,
        entry: &SignedEntry,
        content: Content<'_>,
    ) -> Result<(Label, bool), AdmissionError> {
        let view = Before { state: self, known };
        match content {
            Content::Given(c) => admission::admit(&view, entry, Some(c)).map(|l| (l, false)),
            Content::Stored(c) => match admission::admit(&view, entry, c) {
                Err(AdmissionError::ContentMismatch) => {
                    admission::admit(&view, entry, None).map(|l| (l, true))
                }
                other => other.map(|l| (l, false)),
            },
        }
    }

    /// The id of the log key (the principal of role `log`).
    pub fn log_key(&self) -> KeyId {
        self.log_key
    }

    /// Applies what the admitted entry `id` (`e`, at leaf `index`) does besides being stored:
    /// its keyring
    /// binding, tombstone, flag or release, lease or replacement, its place in the effects
    /// index (`spec/label-proof.md` §3), and the quarantine's propagation to it. `content` is
    /// its content when at hand: lease terms are read from it only when it hashes to the
    /// signed content hash (this is the one place that checks), and missing or unmatched terms
    /// are taken as the longest lease. Returns the leaf to rescan the quarantine from, if any.
    ///
    /// A flag is never dropped: when its source's index is not known (only a store-only
    /// attacker makes that, by hiding the source's row), the reach is taken from leaf 0
    /// (fail closed, `spec/lineage.md` §5.1).
    ///
    /// An entry is applied once, in log order, after it was admitted by this state or by a
    /// holder of the log key (a sealed row, `spec/lineage.md` §5.1).
    pub fn apply(
        &mut self,
        known: &impl Known,
        index: u64,
        id: EntryId,
        e: &ProvEntry,
        content: Option<&[u8]>,
    ) -> Option<u64> {
        self.effects.push(index, id, e);
        if let Some(b) = &e.binding {
            self.keyring.entry(b.key).or_insert_with(|| Principal {
                role: b.role,
                name: b.name.clone(),
                key: b.key.public_key().ok(),
            });
        }
        let rescan = match e.kind {
            Kind::Tombstone => {
                if let Some(t) = &e.target {
                    self.tombstoned.insert(*t);
                }
                None
            }
            Kind::Lease | Kind::Replacement => {
                // Terms count only if they are the signed ones.
                let ttl = content
                    .filter(|c| Hash32::digest(c) == e.content_hash)
                    .and_then(|c| parse_lease_terms(c).ok());
                self.leases
                    .apply(id, e.kind, e.writer, e.target, e.time_ms, ttl);
                None
            }
            Kind::Quarantine | Kind::QuarantineStrong | Kind::Release => {
                let source = e.target.as_ref().map(|t| known.index_of(t).unwrap_or(0));
                match self.quarantine.apply(id, index, e.kind, e.target, source) {
                    Rescan::From(i) => Some(i),
                    Rescan::No => None,
                }
            }
            _ => None,
        };
        self.quarantine.on_entry(&id, &e.parents, &self.policy);
        rescan
    }

    /// The labelling parameters.
    pub fn policy(&self) -> LabelPolicy {
        self.policy
    }

    /// The principal bound to `key`, if any.
    pub fn principal(&self, key: &KeyId) -> Option<&Principal> {
        self.keyring.get(key)
    }

    /// Every bound principal, in no particular order.
    pub fn principals(&self) -> impl Iterator<Item = &Principal> {
        self.keyring.values()
    }

    /// The role bound to `key`, if any.
    pub fn role_of(&self, key: &KeyId) -> Option<Role> {
        self.keyring.get(key).map(|p| p.role)
    }

    /// Whether `id` has been tombstoned.
    pub fn is_tombstoned(&self, id: &EntryId) -> bool {
        self.tombstoned.contains(id)
    }

    /// The flags and what they reach.
    pub fn quarantine(&self) -> &Quarantine {
        &self.quarantine
    }

    /// The quarantine, to rescan or rebuild its reach from the log.
    pub fn quarantine_mut(&mut self) -> &mut Quarantine {
        &mut self.quarantine
    }

    /// The leases and replacements.
    pub fn leases(&self) -> &LeaseBook {
        &self.leases
    }

    /// What a checkpoint of the log so far signs about its effects index
    /// (`spec/label-proof.md` §3.3). Hashes the nodes changed since the last call.
    pub fn effects_commitment(&mut self) -> IndexCommitment {
        self.effects.commitment()
    }

    /// The lookup of `subject` in the effects index of the log so far, and its effects in log
    /// order (`spec/label-proof.md` §3.2).
    pub fn effects_lookup(&mut self, subject: Subject) -> (Lookup, Vec<Effect>) {
        self.effects.lookup(subject)
    }
}

/// The log before an entry, as the admission rule sees it: the state and the caller's labels.
struct Before<'a, K: Known> {
    state: &'a LineageState,
    known: &'a K,
}

impl<K: Known> AdmissionView for Before<'_, K> {
    fn log_key(&self) -> KeyId {
        self.state.log_key
    }

    fn role_of(&self, key: &KeyId) -> Option<Role> {
        self.state
            .role_of(key)
            .or_else(|| self.known.pending_role(key))
    }

    fn label_of(&self, id: &EntryId) -> Option<Label> {
        self.known.label_of(id)
    }

    fn quarantine(&self) -> &Quarantine {
        &self.state.quarantine
    }

    fn leases(&self) -> &LeaseBook {
        &self.state.leases
    }

    fn policy(&self) -> LabelPolicy {
        self.state.policy
    }
}
