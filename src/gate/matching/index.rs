//! The haystacks of the texts a front has read, indexed by the keys they hold
//! (`spec/hooks.md` §4.7), so that matching a value against a session's reads searches only the
//! reads that could hold it instead of every one.

use super::keys::{key, pair_hasher, Clause, Key, Space};
use super::{Haystack, Needle};
use crate::record::EntryId;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Haystacks by entry id, with an inverted index from each [`Key`] to the haystacks that hold
/// it. Built incrementally: [`ReadIndex::insert`] indexes one haystack in O(its size). Memory:
/// the haystacks, plus about 4 bytes per distinct key of each and 40 per id.
#[derive(Debug, Default)]
pub struct ReadIndex {
    /// Each id's slot: its haystack's place in `haystacks`.
    slots: HashMap<EntryId, u32, BuildHasherDefault<IdHasher>>,
    /// The haystacks by slot.
    haystacks: Vec<Haystack>,
    /// The slots of the haystacks that hold each key. May hold a slot whose haystack was
    /// replaced since (an extra candidate, never a missing one).
    postings: HashMap<Key, Vec<u32>>,
    /// The slots of haystacks that match every value ([`Haystack::is_everything`]), and
    /// perhaps of some replaced since: candidates of every value.
    everything: Vec<u32>,
    /// The length in bytes of the longest word any haystack held (`Space::Word`): no longer
    /// substring of a value can be one. Never decreases.
    longest_word: usize,
}

impl ReadIndex {
    /// An empty index.
    pub fn new() -> Self {
        ReadIndex::default()
    }

    /// Sets `id`'s haystack (replacing any it had) and indexes it. An index that already holds
    /// 2^32 haystacks keeps none more (the id then has none: a source of every value).
    pub fn insert(&mut self, id: EntryId, haystack: Haystack) {
        let slot = match self.slots.get(&id) {
            Some(slot) => *slot,
            None => {
                let Ok(slot) = u32::try_from(self.haystacks.len()) else {
                    return;
                };
                self.haystacks.push(Haystack::default());
                self.slots.insert(id, slot);
                slot
            }
        };
        let (keys, longest) = haystack.keys();
        self.longest_word = self.longest_word.max(longest);
        for k in keys {
            let list = self.postings.entry(k).or_default();
            if list.last() != Some(&slot) {
                list.push(slot);
            }
        }
        if haystack.is_everything() {
            self.everything.push(slot);
        }
        if let Some(h) = self.haystacks.get_mut(slot as usize) {
            *h = haystack;
        }
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
        out.add_all(&self.everything);
        for clause in needle.clauses()? {
            match clause {
                // A haystack holding every key holds the rarest: its list is a superset.
                Clause::All(keys) => {
                    let rarest = keys
                        .iter()
                        .map(|k| self.postings.get(k).map_or(&[][..], Vec::as_slice))
                        .min_by_key(|list| list.len());
                    out.add_all(rarest.unwrap_or(&[]));
                }
                Clause::WordRun(normal) => self.word_runs(&normal, &mut out),
            }
        }
        Some(out)
    }

    /// Adds the slots that could hold `normal` as a run of whole consecutive words
    /// ([`Clause::WordRun`]): a run of one word is `normal` itself; a longer one starts with two
    /// words one right after the other, `normal[..p]` and `normal[p..q]`, each between
    /// character boundaries and at most `longest_word` bytes long, so the haystack holds that
    /// pair. Every such pair is looked up. When `normal` is too long for that
    /// ([`MAX_WORD_LOOKUPS`]), the words looked up are its prefixes (the run's first word).
    fn word_runs(&self, normal: &str, out: &mut Slots) {
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
        self.add_holders(key(Space::Word, normal), out);
        for p in boundaries(1, longest) {
            let mut h = pair_hasher(&normal[..p]);
            let mut from = p;
            for q in boundaries(p + 1, p + longest) {
                h = h.feed(&normal[from..q]);
                from = q;
                self.add_holders(h.key(), out);
            }
        }
    }

    /// Adds the slots holding `k`.
    fn add_holders(&self, k: Key, out: &mut Slots) {
        if let Some(list) = self.postings.get(&k) {
            out.add_all(list);
        }
    }
}

/// Most pair look-ups `ReadIndex::word_runs` makes for one normal form (about its length times
/// the longest word): beyond, it looks up its prefixes only.
pub const MAX_WORD_LOOKUPS: usize = 1 << 14;

/// A set of slots, as bits.
struct Slots(Vec<u64>);

impl Slots {
    fn new(n: usize) -> Self {
        Slots(vec![0; n.div_ceil(64)])
    }

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
