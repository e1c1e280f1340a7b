//! Agent sessions (`spec/hooks.md` §3, §6): the record of what a session has read
//! ([`Session`]); how a front sees it begin ([`Front::sight`], `start`), loads it and catches
//! it up with the ledger ([`Front::catch_up`], `catch_up`), and tells whose reads came last
//! ([`Front::newest_reader`], `newest`); the memo of what a process computed about a record
//! (`memo`), the seal that makes a record trusted (`seal`) and what a front judged of its
//! reads (`judged`).

mod catch_up;
mod judged;
mod memo;
mod newest;
mod seal;
mod start;

#[cfg(doc)]
use super::Front;
use crate::gate::matching;
use crate::record::{EntryId, Hash32};
use memo::{positions, Prefix};
use serde::{Deserialize, Serialize};

pub(super) use memo::SessionMemo;
pub use newest::NewestReader;
pub use start::{Sighting, SESSION_START, UNSEEN_HISTORY};

/// What one agent session has read, as entry ids in the order read (`spec/hooks.md` §3).
/// Persisted by the hooks between invocations (JSON: `{"reads": [hex…], "unrecorded": n}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// The agent's session id (e.g. Claude Code's `session_id`); entries written for the
    /// session carry `H(id)` as their context hash (`spec/record.md` field 5).
    #[serde(default)]
    pub id: String,
    /// Entries whose text the session has seen, in the order read ([`Session::reads`]).
    /// Private: the memo describes them, so they change only through [`Session::read`] (one
    /// more), [`Session::truncate_reads`] and [`Session::set_reads`] (which reset the memo).
    #[serde(default, with = "hex_ids")]
    reads: Vec<EntryId>,
    /// Tool outputs the session saw that could not be recorded: while non-zero, sensitive
    /// calls are refused (their arguments may come from text the ledger does not know).
    #[serde(default)]
    pub unrecorded: u64,
    /// The session's newest context entry ([`crate::record::Kind::Context`], `spec/lineage.md` §4.2): it
    /// descends, at full weight, from `reads[..covered]`. `None` until the front first folds
    /// the reads into one.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "hex_id")]
    pub context: Option<EntryId>,
    /// How many of `reads`, from the first, `context` covers; the rest are named as parents
    /// of the agent's next write one by one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub covered: u64,
    /// How many of the ledger's first entries this record has taken into account: the entries
    /// at later leaf indexes that were written for the session (its context hash) are added
    /// to `reads` from the ledger itself when the session is next loaded
    /// ([`Front::catch_up`], `spec/hooks.md` §6), so a record that could not be saved, or an
    /// older copy of it, loses no read that the ledger holds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seen: u64,
    /// Whether the ledger holds this session's start marker: the hooks saw it start, at a
    /// `SessionStart` event with no earlier history ([`Front::sight`], `spec/hooks.md` §3.1).
    #[serde(default, skip_serializing_if = "is_false")]
    pub started: bool,
    /// The session's unseen-history entry, when the hooks first saw it anywhere but at its
    /// start (a forked, resumed or compacted conversation, a session that began before the
    /// hooks were installed): an External entry that is also one of `reads` and stands for
    /// the history nobody recorded, so it holds every value ([`Front::sight`],
    /// `spec/hooks.md` §3.1).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "hex_id")]
    pub unseen: Option<EntryId>,
    /// The count of unrecorded outputs when the record was last sealed (covered by the `v5`
    /// seal): `unrecorded` may grow past it without the key (a hook that cannot record marks
    /// an output), never fall below it; a record whose count fell is refused as altered
    /// (`spec/hooks.md` §6).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unrecorded_sealed: u64,
    /// The read set's seal: an HMAC under the log key over `id` and `reads`
    /// ([`Front::seal_session`], `spec/hooks.md` §3). A session with reads whose seal does not
    /// verify refuses every sensitive call: its record was altered outside memlineage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
    /// What this process already computed about the record (never stored).
    #[serde(skip)]
    pub(crate) memo: SessionMemo,
}

impl Session {
    /// An empty session named `id`.
    pub fn new(id: &str) -> Self {
        Session {
            id: id.to_string(),
            ..Session::default()
        }
    }

    /// The entries whose text the session has seen, in the order read.
    pub fn reads(&self) -> &[EntryId] {
        &self.reads
    }

    /// Keeps the first `len` reads only, and forgets what the memo knew (a read put back
    /// later is judged again, whatever the count and last read then are).
    pub fn truncate_reads(&mut self, len: usize) {
        if len < self.reads.len() {
            self.reads.truncate(len);
            self.memo = SessionMemo::default();
        }
    }

    /// Replaces the reads by `reads` as given (repeats kept), and forgets what the memo knew.
    /// For records built or edited by hand (tests, tools); a front adds reads with
    /// [`Session::read`].
    pub fn set_reads(&mut self, reads: Vec<EntryId>) {
        self.reads = reads;
        self.memo = SessionMemo::default();
    }

    /// Appends `ids` as given (repeats kept), and forgets what the memo knew: for a record
    /// being parsed (`spec/hooks.md` §6.3), which has no memo yet.
    pub(crate) fn extend_reads(&mut self, ids: impl IntoIterator<Item = EntryId>) {
        self.reads.extend(ids);
        self.memo = SessionMemo::default();
    }

    /// Adds `id` to the read set (once). Amortised O(1): where each read stands is kept in
    /// the session's memo (never stored).
    pub fn read(&mut self, id: EntryId) {
        let mut state = self.memo.state();
        let p = positions(&mut state, &self.reads);
        // A place the record no longer holds `id` at (reads rewritten under the memo) is not
        // taken for a read: the id is read again (a repeat only costs the positioned walk).
        if p.at.get(&id).and_then(|i| self.reads.get(*i)) != Some(&id) {
            self.reads.push(id);
            p.extend(&self.reads);
        }
    }

    /// Whether `id` is in the read set. Amortised O(1), as [`Session::read`].
    pub fn has_read(&self, id: &EntryId) -> bool {
        self.position(id).is_some()
    }

    /// Where `id` stands in the read set (its first place). Amortised O(1), as
    /// [`Session::read`]. Never a place `reads` does not hold `id` at: a memo that no longer
    /// describes the record (rewritten other than by appending) may answer `None` for a read,
    /// never a place for an id that is not one.
    pub fn position(&self, id: &EntryId) -> Option<usize> {
        let mut state = self.memo.state();
        let at = positions(&mut state, &self.reads).at.get(id).copied();
        at.filter(|i| self.reads.get(*i) == Some(id))
    }

    /// How many of the first reads hold a haystack in the index `instance`, as recorded by
    /// [`Session::all_indexed`]; 0 when nothing is recorded for it.
    pub(super) fn indexed_upto(&self, instance: u64) -> usize {
        match self.memo.state().indexed {
            Some(p) if p.holds(instance, &self.reads) => p.n,
            _ => 0,
        }
    }

    /// Records that every read holds a haystack in the index `instance`.
    pub(super) fn all_indexed(&self, instance: u64) {
        self.memo.state().indexed = Some(Prefix::of(instance, &self.reads));
    }

    /// The reads whose haystack in `index` `needle` matches, in read order: exactly
    /// [`matching::ReadIndex::matching`] over `reads`, walking only the index's candidates when
    /// every read is recorded as holding a haystack there ([`Session::all_indexed`]) and no id
    /// repeats, else the reads.
    pub(super) fn matching(
        &self,
        index: &matching::ReadIndex,
        needle: &matching::Needle,
    ) -> Vec<EntryId> {
        let mut state = self.memo.state();
        let indexed = state
            .indexed
            .is_some_and(|p| p.holds(index.instance(), &self.reads) && p.n == self.reads.len());
        let p = positions(&mut state, &self.reads);
        if indexed && p.distinct {
            let at = &p.at;
            index.matching_positioned(&self.reads, |id| at.get(id).copied(), needle)
        } else {
            index.matching(&self.reads, needle)
        }
    }

    /// Runs `f` on what a front judged of the reads (kept in the memo between calls).
    pub(super) fn with_judged<R>(&self, f: impl FnOnce(&mut Option<judged::Judged>) -> R) -> R {
        f(&mut self.memo.state().judged)
    }

    /// The reads the session's context entry does not cover yet, in read order.
    pub fn uncovered(&self) -> &[EntryId] {
        let from =
            usize::try_from(self.covered).map_or(self.reads.len(), |c| c.min(self.reads.len()));
        &self.reads[from..]
    }

    /// Whether this is a session nothing was recorded for yet (no read, no context, nothing
    /// seen).
    pub fn is_fresh(&self) -> bool {
        self.reads.is_empty()
            && self.context.is_none()
            && self.seen == 0
            && !self.started
            && self.unseen.is_none()
    }

    /// Whether the front can tie a write of this session to what it read: it has read
    /// something, or folded reads into a context entry (`spec/lineage.md` §4.2).
    pub fn is_tied(&self) -> bool {
        !self.reads.is_empty() || self.context.is_some()
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Entry ids as 64-hex strings in session files.
mod hex_ids {
    use crate::record::EntryId;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(ids: &[EntryId], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(ids.iter().map(EntryId::to_string))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<EntryId>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|h| EntryId::from_hex(h).map_err(serde::de::Error::custom))
            .collect()
    }
}

/// An optional entry id as a 64-hex string in session files.
mod hex_id {
    use crate::record::EntryId;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(id: &Option<EntryId>, s: S) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => s.serialize_str(&id.to_string()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<EntryId>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|h| EntryId::from_hex(&h).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// The context hash of the entries a front writes for session `id` (`spec/hooks.md` §3):
/// `H("memlineage/session/" || id)`.
pub fn session_context(id: &str) -> Hash32 {
    Hash32::digest(format!("memlineage/session/{id}").as_bytes())
}

#[cfg(test)]
mod tests;
