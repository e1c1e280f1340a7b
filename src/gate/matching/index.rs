//! The haystacks of the texts a front has read, indexed by the keys they hold
//! (`spec/hooks.md` §4.7), so that matching a value against a session's reads searches only the
//! reads that could hold it instead of every one.

use super::keys::{key, pair_hasher, Clause, Key, KeyHasher, Space};
use super::{Haystack, Needle};
use crate::record::{EntryId, IdMap};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// Haystacks by entry id, with an inverted index from each [`Key`] to the haystacks that hold
/// it. Built incrementally: [`ReadIndex::insert`] indexes one haystack in O(its size). Memory:
/// the haystacks, plus about 16 bytes per key held by one haystack only (most keys of a tool
/// output: its numbers, IBANs, dates), 4 bytes per further haystack holding a key, and 40 per
/// id.
#[derive(Debug)]
pub struct ReadIndex {
    /// This index among every index of the process ([`ReadIndex::instance`]).
    instance: u64,
    /// Each id's slot: its haystack's place in `haystacks`.
    slots: HashMap<EntryId, u32, BuildHasherDefault<IdHasher>>,
    /// The haystacks by slot.
    haystacks: Vec<Haystack>,
    /// The id of each slot.
    ids: Vec<EntryId>,
    /// The slots of the haystacks that hold each key. May hold a slot whose haystack was
    /// replaced since (an extra candidate, never a missing one).
    postings: Postings,
    /// The slots of haystacks that match every value ([`Haystack::is_everything`]), and
    /// perhaps of some replaced since: candidates of every value.
    everything: Vec<u32>,
    /// The length in bytes of the longest word any haystack held (`Space::Word`): no longer
    /// substring of a value can be one. Never decreases.
    longest_word: usize,
}

impl Default for ReadIndex {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ReadIndex {
            instance: NEXT.fetch_add(1, Ordering::Relaxed),
            slots: HashMap::default(),
            haystacks: Vec::new(),
            ids: Vec::new(),
            postings: Postings::default(),
            everything: Vec::new(),
            longest_word: 0,
        }
    }
}

impl ReadIndex {
    /// An empty index.
    pub fn new() -> Self {
        ReadIndex::default()
    }

    /// A number no other index of this process has: what a session's memo names when it
    /// records that every one of its reads holds a haystack here (ids are never dropped).
    pub fn instance(&self) -> u64 {
        self.instance
    }

    /// Sets `id`'s haystack (replacing any it had) and indexes it; `false` when an index that
    /// already holds 2^31 haystacks keeps none more (the id then has none: a source of every
    /// value). An id, once held, is never dropped.
    pub fn insert(&mut self, id: EntryId, haystack: Haystack) -> bool {
        let slot = match self.slots.get(&id) {
            Some(slot) => *slot,
            None => {
                let slot = match u32::try_from(self.haystacks.len()) {
                    Ok(s) if s < MANY => s,
                    _ => return false,
                };
                self.haystacks.push(Haystack::default());
                self.ids.push(id);
                self.slots.insert(id, slot);
                slot
            }
        };
        let (keys, longest) = haystack.keys();
        self.longest_word = self.longest_word.max(longest);
        let mut posted = true;
        for k in keys {
            posted &= self.postings.add(k, slot);
        }
        // A key whose holders could not be listed would hide this haystack from the values
        // that hold it: it is then a candidate of every value instead (fail closed).
        if haystack.is_everything() || !posted {
            self.everything.push(slot);
        }
        if let Some(h) = self.haystacks.get_mut(slot as usize) {
            *h = haystack;
        }
        true
    }

    /// How many ids hold a haystack.
    pub fn len(&self) -> usize {
        self.haystacks.len()
    }

    /// Whether no id holds a haystack.
    pub fn is_empty(&self) -> bool {
        self.haystacks.is_empty()
    }

    /// `id`'s haystack, if it has one.
    pub fn get(&self, id: &EntryId) -> Option<&Haystack> {
        self.slots
            .get(id)
            .and_then(|s| self.haystacks.get(*s as usize))
    }

    /// Whether `id` has a haystack.
    pub fn contains_key(&self, id: &EntryId) -> bool {
        self.slots.contains_key(id)
    }

    /// The ids of `reads` whose haystack `needle` matches, or that have none, in the order of
    /// `reads`: exactly `reads` filtered by `get(id).is_none_or(|h| h.matches_needle(needle))`
    /// ([`ReadIndex::scan`]), but [`Haystack::matches_needle`] runs only on the reads that
    /// hold the keys of one of the needle's clauses ([`Needle::clauses`]) or match every
    /// value. A needle with no guaranteed key is matched against every read. O(reads) look-ups
    /// of an id, plus the rules on the candidates.
    pub fn matching(&self, reads: &[EntryId], needle: &Needle) -> Vec<EntryId> {
        let Some(candidates) = self.candidates(needle) else {
            return self.scan(reads, needle);
        };
        reads
            .iter()
            .filter(|id| match self.slots.get(id) {
                None => true,
                Some(slot) => {
                    candidates.holds(*slot)
                        && self
                            .haystacks
                            .get(*slot as usize)
                            .is_none_or(|h| h.matches_needle(needle))
                }
            })
            .copied()
            .collect()
    }

    /// [`ReadIndex::matching`] for reads that all hold a haystack here, given where each id
    /// stands among them (`position(id) == Some(i)` exactly when `reads[i] == id`, ids
    /// distinct): the candidates are ordered by their positions instead of the reads being
    /// walked, so the cost is O(candidates · log candidates) plus the rules on them, whatever
    /// the number of reads (`spec/hooks.md` §4.7). A needle with no guaranteed key walks the
    /// reads as [`ReadIndex::scan`] does. A candidate whose position does not name it among
    /// `reads` is not one of them. The caller vouches that every read holds a haystack (a read
    /// without one is a source of every value, which only the walk finds): the fronts keep
    /// that fact per session ([`crate::front::Session`]).
    pub fn matching_positioned(
        &self,
        reads: &[EntryId],
        position: impl Fn(&EntryId) -> Option<usize>,
        needle: &Needle,
    ) -> Vec<EntryId> {
        let Some(candidates) = self.candidate_list(needle) else {
            return self.scan(reads, needle);
        };
        let mut hits: Vec<(usize, EntryId)> = candidates
            .into_iter()
            .filter_map(|slot| {
                let id = self.ids.get(slot as usize)?;
                let at = position(id).filter(|i| reads.get(*i) == Some(id))?;
                let h = self.haystacks.get(slot as usize)?;
                h.matches_needle(needle).then_some((at, *id))
            })
            .collect();
        hits.sort_unstable_by_key(|(at, _)| *at);
        hits.into_iter().map(|(_, id)| id).collect()
    }

    /// [`ReadIndex::matching`] without the index: every read's haystack searched. The
    /// reference the index is tested against (`tests/read_index.rs`).
    pub fn scan(&self, reads: &[EntryId], needle: &Needle) -> Vec<EntryId> {
        reads
            .iter()
            .filter(|id| self.get(id).is_none_or(|h| h.matches_needle(needle)))
            .copied()
            .collect()
    }

    /// The slots that hold the keys of one of `needle`'s clauses; `None` when the needle has
    /// no guaranteed key.
    fn candidates(&self, needle: &Needle) -> Option<Slots> {
        let mut out = Slots::new(self.haystacks.len());
        self.gather(needle, &mut out)?;
        Some(out)
    }

    /// [`ReadIndex::candidates`] as a list of distinct slots, in slot order.
    fn candidate_list(&self, needle: &Needle) -> Option<Vec<u32>> {
        let mut out = SlotList(Vec::new(), self.haystacks.len());
        self.gather(needle, &mut out)?;
        let mut slots = out.0;
        slots.sort_unstable();
        slots.dedup();
        Some(slots)
    }

    /// Adds to `out` the slots that match every value and those that hold the keys of one of
    /// `needle`'s clauses; `None` when the needle has no guaranteed key.
    fn gather(&self, needle: &Needle, out: &mut impl SlotSink) -> Option<()> {
        out.add_all(&self.everything);
        for clause in needle.clauses()? {
            match clause {
                // A haystack holding every key holds the rarest: its list is a superset.
                Clause::All(keys) => {
                    let rarest = keys
                        .iter()
                        .map(|k| self.postings.get(k).unwrap_or(&[]))
                        .min_by_key(|list| list.len());
                    out.add_all(rarest.unwrap_or(&[]));
                }
                Clause::WordRun(normal) => self.word_runs(&normal, out),
            }
        }
        Some(())
    }

    /// Adds the slots that could hold `normal` as a run of whole consecutive words
    /// ([`Clause::WordRun`]): a run of one word is `normal` itself; a longer one starts with two
    /// words one right after the other, `normal[..p]` and `normal[p..q]`, each between
    /// character boundaries and at most `longest_word` bytes long, so the haystack holds that
    /// pair. Every such pair is looked up. When `normal` is too long for that
    /// ([`MAX_WORD_LOOKUPS`]), the words looked up are its prefixes (the run's first word).
    ///
    /// Whatever its first words, a run also has one word over each byte of `normal`: the
    /// haystacks holding a word `normal[s..e]` with `s <= x < e` are candidates too, for any
    /// byte `x` ([`ReadIndex::covering`]). When the holders of the first words are many (a
    /// value whose first words open every read, such as `question number 17 about …` among
    /// a session of such answers), the words over a few middle bytes are looked up as well and
    /// the fewest holders are taken: each set holds every haystack the run matches.
    fn word_runs(&self, normal: &str, out: &mut impl SlotSink) {
        let n = normal.len();
        if n == 0 {
            // Not made by `Needle::clauses` (normal forms of 8 characters or more); an empty
            // run is held anywhere two words meet.
            out.fill();
            return;
        }
        let longest = self.longest_word.min(n);
        let boundaries =
            |from: usize, to: usize| (from..=to.min(n)).filter(|i| normal.is_char_boundary(*i));
        if n.saturating_mul(longest) > MAX_WORD_LOOKUPS {
            for p in boundaries(1, longest) {
                self.add_holders(key(Space::Word, &normal[..p]), out);
            }
            return;
        }
        let mut lists: Vec<&[u32]> = Vec::new();
        self.push_holders(key(Space::Word, normal), &mut lists);
        for p in boundaries(1, longest) {
            // A haystack holding the pair holds its first word (`Haystack::keys`), and a key
            // once posted stays: a first word no haystack holds starts no pair. One look-up
            // then spares the `longest` of its pairs (most prefixes of a value are no word).
            if self.postings.get(&key(Space::Word, &normal[..p])).is_none() {
                continue;
            }
            let mut h = pair_hasher(&normal[..p]);
            let mut from = p;
            for q in boundaries(p + 1, p + longest) {
                h = h.feed(&normal[from..q]);
                from = q;
                self.push_holders(h.key(), &mut lists);
            }
        }
        let mut total: usize = lists.iter().map(|l| l.len()).sum();
        for x in probes(normal) {
            if total <= FEW_CANDIDATES {
                break;
            }
            if let Some(over) = self.covering(normal, x, longest) {
                let t: usize = over.iter().map(|l| l.len()).sum();
                if t < total {
                    (lists, total) = (over, t);
                }
            }
        }
        for l in lists {
            out.add_all(l);
        }
    }

    /// The posting lists over byte `x` (a character boundary of `normal`): a haystack holding
    /// `normal` as a run of whole words holds the run's word over `x`, some `normal[s..e]` with
    /// `s <= x < e`, both character boundaries, at most `longest` bytes long. For each such
    /// word some haystack holds, the lists of the pairs it forms with a neighbour in the run
    /// ([`ReadIndex::neighbours`], far rarer than the word), or the word's own list when it is
    /// the whole run or the pairs' budget is spent. `None` when the words alone are more than
    /// [`MAX_WORD_LOOKUPS`] look-ups.
    fn covering(&self, normal: &str, x: usize, longest: usize) -> Option<Vec<&[u32]>> {
        let n = normal.len();
        if longest == 0 || x >= n {
            return None;
        }
        let first = x.saturating_sub(longest - 1);
        let last = n.min(x.saturating_add(longest));
        if (x + 1 - first).saturating_mul(last - x) > MAX_WORD_LOOKUPS {
            return None;
        }
        let mut lists = Vec::new();
        let mut budget = MAX_WORD_LOOKUPS;
        for s in (first..=x).filter(|i| normal.is_char_boundary(*i)) {
            let mut h = KeyHasher::new(Space::Word).feed(&normal[s..x]);
            let mut from = x;
            for e in (x + 1..=last.min(s + longest)).filter(|i| normal.is_char_boundary(*i)) {
                h = h.feed(&normal[from..e]);
                from = e;
                let Some(word) = self.postings.get(&h.key()) else {
                    continue;
                };
                match self.neighbours(normal, s..e, longest, &mut budget) {
                    Some(pairs) => lists.extend(pairs),
                    None => lists.push(word),
                }
            }
        }
        Some(lists)
    }

    /// The posting lists of the `Space::Pair`s the word `normal[at]` forms in a run of whole
    /// words spelling `normal`: with the next word, `normal[at.end..f]`, when the word is not
    /// the run's last; with the word before, `normal[r..at.start]`, when it is (each
    /// neighbour at most `longest` bytes long, between character boundaries). A haystack
    /// holding the run holds one of these pairs (`Haystack::keys` posts every two consecutive
    /// words). `None` when the word is the whole run (it has no neighbour) or the look-ups
    /// would exceed `budget` (what is left of it is decreased).
    fn neighbours(
        &self,
        normal: &str,
        at: std::ops::Range<usize>,
        longest: usize,
        budget: &mut usize,
    ) -> Option<Vec<&[u32]>> {
        let n = normal.len();
        let word = normal.get(at.clone())?;
        let near: Vec<usize> = if at.end < n {
            (at.end + 1..=n.min(at.end + longest))
                .filter(|f| normal.is_char_boundary(*f))
                .collect()
        } else {
            (at.start.saturating_sub(longest)..at.start)
                .filter(|r| normal.is_char_boundary(*r))
                .collect()
        };
        if near.is_empty() || near.len() > *budget {
            return None;
        }
        *budget -= near.len();
        let mut lists = Vec::new();
        if at.end < n {
            let mut h = pair_hasher(word);
            let mut from = at.end;
            for f in near {
                h = h.feed(normal.get(from..f)?);
                from = f;
                self.push_holders(h.key(), &mut lists);
            }
        } else {
            for r in near {
                self.push_holders(
                    pair_hasher(normal.get(r..at.start)?).feed(word).key(),
                    &mut lists,
                );
            }
        }
        Some(lists)
    }

    /// Adds the posting list of `k`, if any, to `lists`.
    fn push_holders<'a>(&'a self, k: Key, lists: &mut Vec<&'a [u32]>) {
        if let Some(list) = self.postings.get(&k) {
            lists.push(list);
        }
    }

    /// Adds the slots holding `k`.
    fn add_holders(&self, k: Key, out: &mut impl SlotSink) {
        if let Some(list) = self.postings.get(&k) {
            out.add_all(list);
        }
    }
}

/// The flag of a [`Postings`] head that names a list of several slots (its other bits are the
/// list's index) rather than the one slot holding the key; slots are below it.
const MANY: u32 = 1 << 31;

/// The posting lists of [`ReadIndex`]: for each key, the slots of the haystacks holding it, in
/// the order they were added, without a slot repeated next to itself. A key held by one
/// haystack (most keys of a tool output: its numbers, dates, IBANs) is one `u32` beside the
/// key in the table, with no list allocated; a key held by several has a list in `lists`.
/// The table is seeded foldhash ([`IdMap`]): keys are hashes of text the agent read, which
/// its author chose.
#[derive(Debug, Default)]
struct Postings {
    heads: IdMap<Key, u32>,
    lists: Vec<Vec<u32>>,
}

impl Postings {
    /// Adds `slot` (below [`MANY`]) to the holders of `k`; `false` when `k` needs a list and
    /// 2^31 lists exist already (then `slot` is not added).
    fn add(&mut self, k: Key, slot: u32) -> bool {
        use std::collections::hash_map::Entry;
        match self.heads.entry(k) {
            Entry::Vacant(e) => {
                e.insert(slot);
                true
            }
            Entry::Occupied(mut e) => {
                let head = *e.get();
                if head & MANY == 0 {
                    if head == slot {
                        return true;
                    }
                    let Some(i) = u32::try_from(self.lists.len()).ok().filter(|i| *i < MANY) else {
                        return false;
                    };
                    self.lists.push(vec![head, slot]);
                    *e.get_mut() = MANY | i;
                    return true;
                }
                match self.lists.get_mut((head & !MANY) as usize) {
                    Some(list) => {
                        if list.last() != Some(&slot) {
                            list.push(slot);
                        }
                        true
                    }
                    None => false,
                }
            }
        }
    }

    /// The slots holding `k`, or `None` when no haystack was ever indexed with it.
    fn get(&self, k: &Key) -> Option<&[u32]> {
        let head = self.heads.get(k)?;
        if head & MANY == 0 {
            return Some(std::slice::from_ref(head));
        }
        // A head with the flag names a list `add` pushed, and lists are never removed.
        Some(
            self.lists
                .get((head & !MANY) as usize)
                .map_or(&[], Vec::as_slice),
        )
    }
}

/// Most pair look-ups `ReadIndex::word_runs` makes for one normal form (about its length times
/// the longest word): beyond, it looks up its prefixes only.
pub const MAX_WORD_LOOKUPS: usize = 1 << 14;

/// Candidates of a [`Clause::WordRun`] few enough that looking up the words over its middle
/// bytes would not pay.
const FEW_CANDIDATES: usize = 16;

/// The bytes of `normal` over which [`ReadIndex::word_runs`] looks up the covering words: the
/// character boundaries at or after a half, a quarter and three quarters of its length.
fn probes(normal: &str) -> impl Iterator<Item = usize> + '_ {
    let n = normal.len();
    [2, 1, 3].into_iter().filter_map(move |q| {
        let mut x = n * q / 4;
        while x < n && !normal.is_char_boundary(x) {
            x += 1;
        }
        (x < n).then_some(x)
    })
}

/// A set of slots, as bits.
struct Slots(Vec<u64>);

/// Where [`ReadIndex::gather`] puts candidate slots.
trait SlotSink {
    /// Adds every slot of the index.
    fn fill(&mut self);
    /// Adds `slots`.
    fn add_all(&mut self, slots: &[u32]);
}

impl SlotSink for Slots {
    fn fill(&mut self) {
        self.0.iter_mut().for_each(|w| *w = u64::MAX);
    }

    fn add_all(&mut self, slots: &[u32]) {
        for &s in slots {
            let s = s as usize;
            if let Some(w) = self.0.get_mut(s / 64) {
                *w |= 1 << (s % 64);
            }
        }
    }
}

/// Slots as a list, perhaps repeated, and the index's size (what [`SlotSink::fill`] adds).
struct SlotList(Vec<u32>, usize);

impl SlotSink for SlotList {
    fn fill(&mut self) {
        // Slots are u32 by construction (`ReadIndex::insert`).
        self.0
            .extend((0..self.1).filter_map(|s| u32::try_from(s).ok()));
    }

    fn add_all(&mut self, slots: &[u32]) {
        self.0.extend_from_slice(slots);
    }
}

impl Slots {
    fn new(n: usize) -> Self {
        Slots(vec![0; n.div_ceil(64)])
    }

    /// Whether `slot` is in the set; a slot beyond its size is (fail closed).
    fn holds(&self, slot: u32) -> bool {
        let s = slot as usize;
        self.0.get(s / 64).is_none_or(|w| w & (1 << (s % 64)) != 0)
    }
}

/// Hashes an [`EntryId`] by its first 8 bytes: an id is a SHA-256 output
/// ([`EntryId`]: the leaf hash of the signed entry), already uniform, and looking one up per
/// read of a session is on the path of every decision. The ids of entries signed by the
/// front's keys cannot be chosen; a store-only attacker can write chosen ids into a session
/// record (which then fails its seal, refusing every sensitive call), and ids that crowd a
/// bucket cost time, never an answer.
#[derive(Debug, Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut b = [0u8; 8];
        for (d, s) in b.iter_mut().zip(bytes) {
            *d = *s;
        }
        self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(b);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(i: usize) -> EntryId {
        let mut b = [0u8; 32];
        b[..8].copy_from_slice(&(i as u64).to_le_bytes());
        EntryId(b)
    }

    /// A value whose every word opens many reads (`bills`, `more` and `yaml` are in all of
    /// them, `51` in many) but whose consecutive words are in one read only: the candidates
    /// are that read and the few that share a pair of its words, not every read holding its
    /// words. Before the pairs of runs (`Space::RunPair`) and the pairs over the middle bytes
    /// (`ReadIndex::neighbours`), both clauses of this value let every read through.
    #[test]
    fn words_that_open_every_read_are_told_apart_by_their_pairs() {
        let mut index = ReadIndex::new();
        let mut ids = Vec::new();
        for i in 0..2000 {
            let text = format!(
                "{}\n- amount: {}.51\n  subject: invoice {i} 51\n",
                json!({"path": format!("bills/more-{i}.yaml")}),
                100 + i * 37 % 900
            );
            index.insert(id(i), Haystack::new(&text));
            ids.push(id(i));
        }
        for v in [json!("bills/more-51.yaml"), json!("BILLS MORE 51 YAML")] {
            let needle = Needle::new(&v);
            let candidates = index.candidate_list(&needle).expect("keys");
            assert!(
                candidates.len() <= 4,
                "{v}: {} candidates",
                candidates.len()
            );
            assert_eq!(index.matching(&ids, &needle), [id(51)], "{v}");
            assert_eq!(index.scan(&ids, &needle), [id(51)], "{v}");
        }
    }
}
