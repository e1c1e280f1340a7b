//! Forensics: quarantine of everything a flagged source reached (`spec/forensics.md` §2).
//!
//! A *flag* is a signed entry of kind [`Kind::Quarantine`] (reach over every recorded edge,
//! whatever its weight: provenance-complete) or [`Kind::QuarantineStrong`] (reach over strong
//! edges only, `w > τ`) whose `target` is the bad source. A *release* ([`Kind::Release`]) names a
//! flag entry and lifts it. The quarantined set is a pure function of the log, so an offline
//! verifier replaying the same entries reaches the same set ([`crate::audit`] does).
//!
//! Quarantined entries stay in the tree (nothing is deleted); they leave retrieval and cannot
//! justify a sensitive call ([`crate::gate::LineageView::quarantined`]).
//!
//! Memory: one hash-map slot (about 41 bytes) per *quarantined* entry, nothing for clean ones;
//! the per-append cost is one map lookup per parent, and zero while no flag is active.

use crate::lineage::LabelPolicy;
use crate::record::{EntryId, Kind, Parent, Role};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

/// How far a flag reaches from its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reach {
    /// Over every recorded edge, whatever its weight (provenance-complete).
    All,
    /// Over strong edges only (`w > τ`), the edges that carry labels (`spec/lineage.md`).
    Strong,
}

impl Reach {
    /// The entry kind that records a flag of this reach.
    pub fn kind(self) -> Kind {
        match self {
            Reach::All => Kind::Quarantine,
            Reach::Strong => Kind::QuarantineStrong,
        }
    }

    /// The reach a flag entry of `kind` has; `None` for other kinds.
    pub fn of_kind(kind: Kind) -> Option<Reach> {
        match kind {
            Kind::Quarantine => Some(Reach::All),
            Kind::QuarantineStrong => Some(Reach::Strong),
            _ => None,
        }
    }

    /// `all` or `strong`.
    pub fn name(self) -> &'static str {
        match self {
            Reach::All => "all",
            Reach::Strong => "strong",
        }
    }

    /// Parses [`Reach::name`].
    pub fn from_name(s: &str) -> Option<Reach> {
        match s {
            "all" => Some(Reach::All),
            "strong" => Some(Reach::Strong),
            _ => None,
        }
    }

    fn bit(self) -> u8 {
        match self {
            Reach::All => ALL,
            Reach::Strong => STRONG,
        }
    }
}

/// What [`Quarantine::apply`] asks of its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rescan {
    /// Nothing to recompute.
    No,
    /// Feed [`Quarantine::rescan`] every entry after this leaf index.
    From(u64),
}

/// One active flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag {
    /// The flag entry's id (what a release names).
    pub entry: EntryId,
    /// The flag entry's leaf index (log order among flags).
    pub index: u64,
    /// The flagged source.
    pub source: EntryId,
    /// The source's leaf index.
    pub source_index: u64,
    /// How far it reaches.
    pub reach: Reach,
}

/// Reached from an `All` flag source over any edges.
const ALL: u8 = 0b01;
/// Reached from a `Strong` flag source over strong edges.
const STRONG: u8 = 0b10;

/// The quarantine state derived from a log: active flags and the entries they reach.
#[derive(Clone, Debug, Default)]
pub struct Quarantine {
    /// Active flags by flag-entry id.
    flags: BTreeMap<EntryId, Flag>,
    /// Flag entries that have been released (a release is not repeated).
    released: HashSet<EntryId>,
    /// Active sources → reach bits.
    sources: HashMap<EntryId, u8>,
    /// Quarantined entries → reach bits (sources included).
    reached: HashMap<EntryId, u8>,
}

/// A flag or release breaks the forensics rules (`spec/forensics.md` §2.2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuarantineError {
    /// Only user, system and log principals may flag or release (an agent or tool could
    /// otherwise lift the quarantine of what poisoned it).
    #[error("a {kind} entry must be written by a user, system or log principal, not {role}")]
    NotAuthorised {
        /// The kind attempted (`quarantine`, `quarantine_strong`, `release`).
        kind: &'static str,
        /// The writer's role.
        role: &'static str,
    },
    /// A release names an entry that is not a flag.
    #[error("release target {0} is not a quarantine entry")]
    NotAFlag(EntryId),
    /// A release names a flag that was already released.
    #[error("quarantine {0} was already released")]
    AlreadyReleased(EntryId),
}

impl Quarantine {
    /// Whether any flag is active.
    pub fn is_active(&self) -> bool {
        !self.flags.is_empty()
    }

    /// Whether `id` is quarantined (a flagged source or reached from one). O(1).
    pub fn is_quarantined(&self, id: &EntryId) -> bool {
        self.reached.contains_key(id)
    }

    /// Number of quarantined entries.
    pub fn len(&self) -> usize {
        self.reached.len()
    }

    /// Whether no entry is quarantined.
    pub fn is_empty(&self) -> bool {
        self.reached.is_empty()
    }

    /// The quarantined entries, sorted by id.
    pub fn entries(&self) -> Vec<EntryId> {
        let mut v: Vec<EntryId> = self.reached.keys().copied().collect();
        v.sort();
        v
    }

    /// The quarantined entries with their reach bits (1: from an `all` flag, 2: from a
    /// `strong` one, 3: both), sorted by id: what a quarantine snapshot stores
    /// (`spec/lineage.md` §5.3).
    pub(crate) fn reached_bits(&self) -> Vec<(EntryId, u8)> {
        let mut v: Vec<(EntryId, u8)> = self.reached.iter().map(|(id, b)| (*id, *b)).collect();
        v.sort();
        v
    }

    /// Replaces the quarantined set by a snapshot's, taken under the same active flags (the
    /// caller checks that); the active sources are kept reached whatever it says.
    pub(crate) fn restore(&mut self, reached: &[(EntryId, u8)]) {
        self.reached = reached.iter().copied().collect();
        for (id, bits) in &self.sources {
            *self.reached.entry(*id).or_insert(0) |= bits;
        }
    }

    /// The active flags, by flag-entry id.
    pub fn flags(&self) -> impl Iterator<Item = &Flag> {
        self.flags.values()
    }

    /// The active flag with entry id `id`.
    pub fn flag(&self, id: &EntryId) -> Option<&Flag> {
        self.flags.get(id)
    }

    /// Whether `id` was the target of a flag entry (active or released).
    pub fn is_flag_entry(&self, id: &EntryId) -> bool {
        self.flags.contains_key(id) || self.released.contains(id)
    }

    /// Checks that a flag or release written by `role` about `target` is allowed. Other kinds
    /// pass. `is_flag` says whether `target` is a flag entry (active or released).
    ///
    /// # Errors
    /// [`QuarantineError`] naming the broken rule.
    pub fn check(
        &self,
        kind: Kind,
        role: Role,
        target: Option<&EntryId>,
    ) -> Result<(), QuarantineError> {
        if !matches!(
            kind,
            Kind::Quarantine | Kind::QuarantineStrong | Kind::Release
        ) {
            return Ok(());
        }
        if !matches!(role, Role::User | Role::System | Role::Log) {
            return Err(QuarantineError::NotAuthorised {
                kind: kind.name(),
                role: role.name(),
            });
        }
        if kind == Kind::Release {
            if let Some(t) = target {
                if self.released.contains(t) {
                    return Err(QuarantineError::AlreadyReleased(*t));
                }
                if !self.flags.contains_key(t) {
                    return Err(QuarantineError::NotAFlag(*t));
                }
            }
        }
        Ok(())
    }

    /// Propagates quarantine to a new entry from its parents: it is reached if a parent was
    /// reached from an `all` flag (any edge), or from a `strong` flag over an edge `w > τ`.
    /// Entries must be given in log order. No work while no flag is active.
    pub fn on_entry(&mut self, id: &EntryId, parents: &[Parent], policy: &LabelPolicy) {
        if self.reached.is_empty() {
            return;
        }
        let mut bits = self.sources.get(id).copied().unwrap_or(0);
        if bits == 0 {
            self.reached.remove(id);
        }
        for p in parents {
            if let Some(b) = self.reached.get(&p.id) {
                bits |= b & ALL;
                if policy.is_strong(p.weight) {
                    bits |= b & STRONG;
                }
            }
        }
        if bits != 0 {
            self.reached.insert(*id, bits);
        }
    }

    /// Records a flag or release entry (already checked) and says from which leaf the
    /// entries must be fed to [`Quarantine::rescan`] to bring the quarantined set up to date.
    /// A flag only adds reach, so the rescan starts at its source; a release starts over from
    /// the earliest remaining source. Other kinds: [`Rescan::No`].
    pub fn apply(
        &mut self,
        entry: EntryId,
        entry_index: u64,
        kind: Kind,
        target: Option<EntryId>,
        target_index: Option<u64>,
    ) -> Rescan {
        match (kind, target, target_index) {
            (Kind::Release, Some(t), _) if self.flags.remove(&t).is_some() => {
                self.released.insert(t);
                self.sources.clear();
                for f in self.flags.values() {
                    *self.sources.entry(f.source).or_insert(0) |= f.reach.bit();
                }
                self.reached = self.sources.clone();
                match self.rebuild_from() {
                    Some(i) => Rescan::From(i),
                    None => Rescan::No,
                }
            }
            (k, Some(source), Some(source_index)) => match Reach::of_kind(k) {
                Some(reach) => {
                    self.flags.insert(
                        entry,
                        Flag {
                            entry,
                            index: entry_index,
                            source,
                            source_index,
                            reach,
                        },
                    );
                    *self.sources.entry(source).or_insert(0) |= reach.bit();
                    *self.reached.entry(source).or_insert(0) |= reach.bit();
                    Rescan::From(source_index)
                }
                None => Rescan::No,
            },
            _ => Rescan::No,
        }
    }

    /// The leaf index of the earliest active source; `None` when no flag is active.
    pub fn rebuild_from(&self) -> Option<u64> {
        self.flags.values().map(|f| f.source_index).min()
    }

    /// Brings the quarantined set up to date after [`Quarantine::apply`] returned
    /// [`Rescan::From`]`(i)`: `entries` yields `(id, parents)` for every entry from leaf `i + 1`
    /// to the end of the log, in order.
    ///
    /// # Errors
    /// The first error `entries` yields (the set may then be incomplete; rescan again).
    pub fn rescan<E>(
        &mut self,
        entries: impl IntoIterator<Item = Result<(EntryId, Vec<Parent>), E>>,
        policy: &LabelPolicy,
    ) -> Result<(), E> {
        for item in entries {
            let (id, parents) = item?;
            self.on_entry(&id, &parents, policy);
        }
        Ok(())
    }

    /// Recomputes the quarantined set from the active flags alone. `entries` yields
    /// `(id, parents)` for every entry of the log from leaf 0, in order (the offline audit's
    /// second pass).
    ///
    /// # Errors
    /// The first error `entries` yields.
    pub fn rebuild<E>(
        &mut self,
        entries: impl IntoIterator<Item = Result<(EntryId, Vec<Parent>), E>>,
        policy: &LabelPolicy,
    ) -> Result<(), E> {
        self.sources.clear();
        for f in self.flags.values() {
            *self.sources.entry(f.source).or_insert(0) |= f.reach.bit();
        }
        self.reached = self.sources.clone();
        if self.sources.is_empty() {
            return Ok(());
        }
        self.rescan(entries, policy)
    }

    /// The shortest path from a flagged source to `id` over edges that carry one flag's reach
    /// (source first, `id` last), with that reach; `None` when `id` is not quarantined.
    /// `parents_of` reads an entry's parents. A path never mixes reaches: for reach all every
    /// hop is an edge between entries reached from an all-flag; for reach strong every hop is a
    /// strong edge between entries reached from a strong flag. Each reach is searched
    /// breadth-first from `id`, parents in ascending id order (the order they are stored in);
    /// the shorter path wins, reach all on a tie. Among equally short paths of one reach, the
    /// one whose hops have the smallest ids, nearest the tip first, is given.
    ///
    /// # Errors
    /// The first error of `parents_of`.
    pub fn path_to_source<E>(
        &self,
        id: &EntryId,
        policy: &LabelPolicy,
        mut parents_of: impl FnMut(&EntryId) -> Result<Vec<Parent>, E>,
    ) -> Result<Option<(Vec<EntryId>, Reach)>, E> {
        if !self.is_quarantined(id) {
            return Ok(None);
        }
        let mut best: Option<(Vec<EntryId>, Reach)> = None;
        for reach in [Reach::All, Reach::Strong] {
            if let Some(path) = self.search(id, reach, policy, &mut parents_of)? {
                if best.as_ref().is_none_or(|(b, _)| path.len() < b.len()) {
                    best = Some((path, reach));
                }
            }
        }
        Ok(best)
    }

    /// Breadth-first search for a path of one reach from a source of that reach to `id`.
    fn search<E>(
        &self,
        id: &EntryId,
        reach: Reach,
        policy: &LabelPolicy,
        parents_of: &mut impl FnMut(&EntryId) -> Result<Vec<Parent>, E>,
    ) -> Result<Option<Vec<EntryId>>, E> {
        let bit = reach.bit();
        let has = |x: &EntryId| self.reached.get(x).is_some_and(|b| b & bit != 0);
        if !has(id) {
            return Ok(None);
        }
        let mut prev: HashMap<EntryId, EntryId> = HashMap::new();
        let mut queue = VecDeque::from([*id]);
        let mut seen = HashSet::from([*id]);
        while let Some(cur) = queue.pop_front() {
            if self.sources.get(&cur).is_some_and(|b| b & bit != 0) {
                let mut path = vec![cur];
                let mut at = cur;
                while let Some(p) = prev.get(&at) {
                    path.push(*p);
                    at = *p;
                }
                return Ok(Some(path));
            }
            for p in parents_of(&cur)? {
                let carries = has(&p.id) && (reach == Reach::All || policy.is_strong(p.weight));
                if carries && seen.insert(p.id) {
                    prev.insert(p.id, cur);
                    queue.push_back(p.id);
                }
            }
        }
        Ok(None)
    }

    /// The active flags whose source is `source`, earliest in log order first.
    pub fn flags_on(&self, source: &EntryId) -> Vec<Flag> {
        let mut v: Vec<Flag> = self
            .flags
            .values()
            .filter(|f| f.source == *source)
            .copied()
            .collect();
        v.sort_by_key(|f| f.index);
        v
    }
}
