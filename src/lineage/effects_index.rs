//! The effects index (`spec/label-proof.md` §3): a Merkle crit-bit trie, keyed by *subject*,
//! over every entry of a log that has effects (keyring bindings, tombstones, flags, releases,
//! leases, replacements: `spec/record.md` §4.1 codes 5–11). The log key signs its root in each
//! checkpoint (`memlineage/effects-index@v1`), so that a verifier holding only a few entries
//! can check that it was shown *every* effect on a given entry or key: a lookup proves, in
//! O(log n) hashes, either the complete list of effects about a subject or that there is none.
//!
//! ```text
//! key(s)    = SHA-256("memlineage/effects-key@v1"  || tag(s) || bytes(s))   tag: 0x00 target, 0x01 key
//! c_0       = 32 zero bytes
//! c_{j+1}   = SHA-256("memlineage/effects-link@v1" || c_j || u64be(index) || id || u64be(kind))
//! leaf      = SHA-256("memlineage/effects-leaf@v1" || key || u64be(n) || c_n)
//! node      = SHA-256("memlineage/effects-node@v1" || u8(bit) || left || right)
//! empty     = 32 zero bytes
//! ```
//!
//! A subject is the target of a tombstone, flag, release, lease or replacement (field 9) or
//! the key a keyring entry binds (field 10). Each leaf holds the chain over its subject's
//! effects in log order. An inner node splits on the first bit (`bit`, 0 = the most
//! significant bit of byte 0) at which keys below it differ: keys with that bit 0 go left.
//! The trie of a set of keys is unique, so the root depends on the effects alone, not on the
//! order they were inserted in.
//!
//! [`EffectsIndex`] is the writer's side, kept by the lineage state (one door: every effect
//! enters it through [`crate::lineage::state::LineageState::apply`]); [`verify_lookup`] is the
//! verifier's, which never sees the trie.

use crate::record::{EntryId, KeyId, Kind, ProvEntry};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The tag of the checkpoint extension line that signs the index (`spec/label-proof.md` §3.3).
pub const INDEX_LINE: &str = "memlineage/effects-index@v1";

/// The root of the index of a log without effects.
pub const EMPTY_INDEX_ROOT: [u8; 32] = [0; 32];

const KEY_PREFIX: &[u8] = b"memlineage/effects-key@v1";
const LINK_PREFIX: &[u8] = b"memlineage/effects-link@v1";
const LEAF_PREFIX: &[u8] = b"memlineage/effects-leaf@v1";
const NODE_PREFIX: &[u8] = b"memlineage/effects-node@v1";

/// One more than the largest bit of a key: every bit is below it.
const ALL_BITS: u16 = 256;

/// What an effect is about: the entry it targets or the key it binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Subject {
    /// A key bound by a keyring entry (field 10, `binding.key`).
    Key(KeyId),
    /// The entry a tombstone, flag, release, lease or replacement names (field 9).
    Target(EntryId),
}

impl Subject {
    /// The subject of an entry with effects; `None` for other kinds.
    pub fn of(e: &ProvEntry) -> Option<Subject> {
        if !e.kind.has_effects() {
            return None;
        }
        match (&e.binding, &e.target) {
            (Some(b), _) => Some(Subject::Key(b.key)),
            (None, Some(t)) => Some(Subject::Target(*t)),
            (None, None) => None,
        }
    }

    /// `key` or `target`.
    pub fn name(&self) -> &'static str {
        match self {
            Subject::Key(_) => "key",
            Subject::Target(_) => "target",
        }
    }

    /// The subject's 32 bytes (a public key or an entry id).
    pub fn bytes(&self) -> &[u8; 32] {
        match self {
            Subject::Key(k) => &k.0,
            Subject::Target(t) => &t.0,
        }
    }

    /// Its key in the trie: `SHA-256("memlineage/effects-key@v1" || tag || bytes)`, tag `0x00`
    /// for a target and `0x01` for a key.
    pub fn index_key(&self) -> IndexKey {
        let tag: u8 = match self {
            Subject::Target(_) => 0,
            Subject::Key(_) => 1,
        };
        let mut h = Sha256::new();
        h.update(KEY_PREFIX);
        h.update([tag]);
        h.update(self.bytes());
        IndexKey(h.finalize().into())
    }
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.name(), hex::encode(self.bytes()))
    }
}

/// A key of the trie (the hash of a [`Subject`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexKey(pub [u8; 32]);

impl IndexKey {
    /// Bit `b` (0 = the most significant bit of byte 0).
    pub fn bit(&self, b: u8) -> usize {
        usize::from((self.0[usize::from(b / 8)] >> (7 - b % 8)) & 1)
    }

    /// The first bit at which two different keys differ; `None` when they are equal.
    fn crit_bit(&self, other: &IndexKey) -> Option<u8> {
        let (i, x) = self
            .0
            .iter()
            .zip(other.0)
            .enumerate()
            .find_map(|(i, (a, b))| (a ^ b != 0).then_some((i, a ^ b)))?;
        // i < 32 and leading_zeros < 8, so the bit is below 256.
        u8::try_from(i * 8 + x.leading_zeros() as usize).ok()
    }
}

/// One entry with effects, as its subject's chain links it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effect {
    /// Its leaf index.
    pub index: u64,
    /// Its entry id.
    pub id: EntryId,
    /// Its kind.
    pub kind: Kind,
}

/// The effects about one subject: how many, and the chain over them in log order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EffectsOf {
    /// Number of effects (`n`).
    pub count: u64,
    /// `c_n`.
    pub chain: [u8; 32],
}

impl EffectsOf {
    /// No effect.
    pub const NONE: EffectsOf = EffectsOf {
        count: 0,
        chain: [0; 32],
    };

    /// Links the next effect (in log order).
    pub fn push(&mut self, e: &Effect) {
        let mut h = Sha256::new();
        h.update(LINK_PREFIX);
        h.update(self.chain);
        h.update(e.index.to_be_bytes());
        h.update(e.id.0);
        h.update(e.kind.code().to_be_bytes());
        self.chain = h.finalize().into();
        self.count += 1;
    }

    /// The chain over `effects`, in the order given.
    pub fn over<'a>(effects: impl IntoIterator<Item = &'a Effect>) -> EffectsOf {
        let mut v = EffectsOf::NONE;
        for e in effects {
            v.push(e);
        }
        v
    }
}

fn leaf_hash(key: &IndexKey, v: &EffectsOf) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(LEAF_PREFIX);
    h.update(key.0);
    h.update(v.count.to_be_bytes());
    h.update(v.chain);
    h.finalize().into()
}

fn node_hash(bit: u8, left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(NODE_PREFIX);
    h.update([bit]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// What a checkpoint signs about the index: how many entries with effects it holds and its
/// root (`spec/label-proof.md` §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexCommitment {
    /// Entries with effects indexed.
    pub entries: u64,
    /// The trie's root.
    pub root: [u8; 32],
}

impl IndexCommitment {
    /// The checkpoint extension line: `memlineage/effects-index@v1 entries=<decimal>
    /// root=<base64>` and a newline.
    pub fn extension_line(&self) -> String {
        format!(
            "{INDEX_LINE} entries={} root={}\n",
            self.entries,
            BASE64.encode(self.root)
        )
    }

    /// The commitment a checkpoint's extension lines sign: `None` when no line starts with
    /// the `memlineage/effects-index@v1 ` tag (a checkpoint signed before the index existed,
    /// or by a PostgreSQL integrator, which keeps no lineage state).
    ///
    /// # Errors
    /// [`IndexLineError`] for a tagged line that does not parse exactly, or a second one.
    /// Only a holder of the log key can sign either. Does not panic.
    pub fn from_extension(extension: &str) -> Result<Option<IndexCommitment>, IndexLineError> {
        let mut found = None;
        for line in extension.lines() {
            let Some(rest) = line.strip_prefix(INDEX_LINE) else {
                continue;
            };
            let bad = || IndexLineError(line.into());
            let rest = rest.strip_prefix(' ').ok_or_else(bad)?;
            let (entries, root) = match rest.split(' ').collect::<Vec<_>>()[..] {
                [e, r] => (
                    e.strip_prefix("entries=").ok_or_else(bad)?,
                    r.strip_prefix("root=").ok_or_else(bad)?,
                ),
                _ => return Err(bad()),
            };
            let entries: u64 = entries.parse().map_err(|_| bad())?;
            let root: [u8; 32] = BASE64
                .decode(root)
                .ok()
                .and_then(|r| r.try_into().ok())
                .ok_or_else(bad)?;
            let c = IndexCommitment { entries, root };
            if c.extension_line() != format!("{line}\n") || found.replace(c).is_some() {
                return Err(bad());
            }
        }
        Ok(found)
    }
}

/// A checkpoint extension line tagged [`INDEX_LINE`] that does not parse, or a second one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the checkpoint's effects-index line {0:?} is malformed or repeated")]
pub struct IndexLineError(pub String);

/// How a lookup ends (`spec/label-proof.md` §3.2).
///
/// Exhaustive: the three ends the label-proof format has (`found`, `empty`, `other`); a new
/// one is a new format version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LookupEnd {
    /// The index is empty (and the path is too).
    Empty,
    /// The path ends at the subject's own leaf: its effects are the ones the proof carries.
    Found,
    /// The path ends at another subject's leaf: the subject has no effect.
    Other {
        /// That leaf's key.
        key: IndexKey,
        /// Its effects (count and chain), as hashed into it.
        effects: EffectsOf,
    },
}

/// A lookup of one subject in the index: the path from the root to where the subject's
/// search ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// The subject looked up.
    pub subject: Subject,
    /// The inner nodes on the path, root first: each one's bit and the hash of the child the
    /// search does not take.
    pub nodes: Vec<(u8, [u8; 32])>,
    /// Where the search ends.
    pub end: LookupEnd,
}

/// Why a lookup does not show what it claims (`spec/label-proof.md` §3.2). Untrusted input
/// triggers every variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LookupError {
    /// The path and the effects given for the subject do not lead to the signed root: an
    /// effect was dropped, added or changed, or the path is wrong.
    #[error("does not lead to the signed effects-index root")]
    RootMismatch,
    /// Effects of the subject were given but the lookup says it has none, or the reverse.
    #[error("claims {claimed} effects where the proof carries {given}")]
    Count {
        /// Effects the lookup's end claims (0 for `empty` or `other`).
        claimed: u64,
        /// Effects of the subject the proof carries.
        given: u64,
    },
    /// The path is not a search path: bits not strictly increasing from the root, an `empty`
    /// end with nodes, an `other` end at the subject's own key, or one that the subject's
    /// search would not reach.
    #[error("is not a search path for the subject")]
    NotASearchPath,
}

/// Checks `lookup` against the signed `root`, with `given` the effects about its subject that
/// the proof carries, in log order (`spec/label-proof.md` §3.2): `given` is then every effect
/// the index holds about that subject. O(nodes) hashes. Does not panic.
///
/// # Errors
/// [`LookupError`] naming what does not hold.
pub fn verify_lookup(
    root: &[u8; 32],
    lookup: &Lookup,
    given: &EffectsOf,
) -> Result<(), LookupError> {
    let key = lookup.subject.index_key();
    if lookup.nodes.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Err(LookupError::NotASearchPath);
    }
    let claimed = match &lookup.end {
        LookupEnd::Found => given.count.max(1),
        LookupEnd::Empty | LookupEnd::Other { .. } => 0,
    };
    if claimed != given.count {
        return Err(LookupError::Count {
            claimed,
            given: given.count,
        });
    }
    let mut at = match &lookup.end {
        LookupEnd::Empty if lookup.nodes.is_empty() => EMPTY_INDEX_ROOT,
        LookupEnd::Empty => return Err(LookupError::NotASearchPath),
        LookupEnd::Found => leaf_hash(&key, given),
        LookupEnd::Other {
            key: other,
            effects,
        } => {
            let reached = lookup
                .nodes
                .iter()
                .all(|(b, _)| other.bit(*b) == key.bit(*b));
            if *other == key || effects.count == 0 || !reached {
                return Err(LookupError::NotASearchPath);
            }
            leaf_hash(other, effects)
        }
    };
    for (bit, sibling) in lookup.nodes.iter().rev() {
        at = match key.bit(*bit) {
            0 => node_hash(*bit, &at, sibling),
            _ => node_hash(*bit, sibling, &at),
        };
    }
    if at == *root {
        Ok(())
    } else {
        Err(LookupError::RootMismatch)
    }
}

/// One node of the trie.
#[derive(Clone, Debug)]
enum Node {
    Leaf {
        key: IndexKey,
        value: EffectsOf,
        effects: Vec<Effect>,
        hash: Option<[u8; 32]>,
    },
    Inner {
        bit: u8,
        child: [usize; 2],
        hash: Option<[u8; 32]>,
    },
}

/// The writer's side of the index: the trie over every effect admitted so far, with each
/// subject's effects (module docs). Hashes are computed when asked for
/// ([`EffectsIndex::commitment`], [`EffectsIndex::lookup`]), so adding an effect costs a
/// walk of O(depth) and no hash. Memory: two nodes and one [`Effect`] (48 bytes) per entry
/// with effects.
#[derive(Clone, Debug, Default)]
pub struct EffectsIndex {
    nodes: Vec<Node>,
    root: Option<usize>,
    entries: u64,
}

impl EffectsIndex {
    /// Adds the entry `id` at leaf `index` if it has effects (every other kind is ignored).
    /// Entries must come in log order, each once.
    pub fn push(&mut self, index: u64, id: EntryId, e: &ProvEntry) {
        let Some(subject) = Subject::of(e) else {
            return;
        };
        let effect = Effect {
            index,
            id,
            kind: e.kind,
        };
        self.entries += 1;
        let key = subject.index_key();
        let leaf = self.nodes.len();
        let Some(root) = self.root else {
            self.nodes.push(new_leaf(key, effect));
            self.root = Some(leaf);
            return;
        };
        // The leaf the search for `key` reaches.
        let mut n = root;
        while let Node::Inner { bit, child, .. } = &self.nodes[n] {
            n = child[key.bit(*bit)];
        }
        let Node::Leaf { key: found, .. } = &self.nodes[n] else {
            return;
        };
        let Some(crit) = key.crit_bit(found) else {
            // The subject's own leaf: link the effect, forget the hashes above it.
            self.forget_path(&key, ALL_BITS);
            if let Node::Leaf { value, effects, .. } = &mut self.nodes[n] {
                value.push(&effect);
                effects.push(effect);
            }
            return;
        };
        // Insert a node splitting on `crit` above the first node whose bit is not below it.
        let (parent, at) = self.forget_path(&key, u16::from(crit));
        self.nodes.push(new_leaf(key, effect));
        let inner = self.nodes.len();
        let child = match key.bit(crit) {
            0 => [leaf, at],
            _ => [at, leaf],
        };
        self.nodes.push(Node::Inner {
            bit: crit,
            child,
            hash: None,
        });
        match parent {
            None => self.root = Some(inner),
            Some((p, dir)) => {
                if let Node::Inner { child, .. } = &mut self.nodes[p] {
                    child[dir] = inner;
                }
            }
        }
    }

    /// Forgets the hashes of the inner nodes the search for `key` passes whose bit is below
    /// `below` (at most [`ALL_BITS`]), and, when `below` is [`ALL_BITS`], of the leaf it
    /// reaches. Returns the last node passed with the direction taken (`None` for none) and
    /// the node the walk stopped at.
    fn forget_path(&mut self, key: &IndexKey, below: u16) -> (Option<(usize, usize)>, usize) {
        let mut parent = None;
        let mut n = self.root.unwrap_or(0);
        loop {
            match &mut self.nodes[n] {
                Node::Inner { bit, child, hash } if u16::from(*bit) < below => {
                    *hash = None;
                    let dir = key.bit(*bit);
                    parent = Some((n, dir));
                    n = child[dir];
                }
                Node::Leaf { hash, .. } if below == ALL_BITS => {
                    *hash = None;
                    return (parent, n);
                }
                _ => return (parent, n),
            }
        }
    }

    /// What a checkpoint signs: the number of entries with effects and the root.
    pub fn commitment(&mut self) -> IndexCommitment {
        IndexCommitment {
            entries: self.entries,
            root: match self.root {
                Some(r) => self.hash(r),
                None => EMPTY_INDEX_ROOT,
            },
        }
    }

    /// The lookup of `subject` and its effects in log order (empty when it has none).
    pub fn lookup(&mut self, subject: Subject) -> (Lookup, Vec<Effect>) {
        let key = subject.index_key();
        let mut nodes = Vec::new();
        let Some(mut n) = self.root else {
            let end = LookupEnd::Empty;
            return (
                Lookup {
                    subject,
                    nodes,
                    end,
                },
                Vec::new(),
            );
        };
        while let Node::Inner { bit, child, .. } = &self.nodes[n] {
            let (bit, child) = (*bit, *child);
            let dir = key.bit(bit);
            nodes.push((bit, self.hash(child[1 - dir])));
            n = child[dir];
        }
        let (end, effects) = match &self.nodes[n] {
            Node::Leaf {
                key: k, effects, ..
            } if *k == key => (LookupEnd::Found, effects.clone()),
            Node::Leaf { key: k, value, .. } => (
                LookupEnd::Other {
                    key: *k,
                    effects: *value,
                },
                Vec::new(),
            ),
            Node::Inner { .. } => (LookupEnd::Empty, Vec::new()),
        };
        (
            Lookup {
                subject,
                nodes,
                end,
            },
            effects,
        )
    }

    /// The hash of node `n`, computed (and kept) for the nodes below it that lost theirs.
    fn hash(&mut self, n: usize) -> [u8; 32] {
        let (bit, child) = match &self.nodes[n] {
            Node::Leaf { hash: Some(h), .. } | Node::Inner { hash: Some(h), .. } => return *h,
            Node::Leaf { key, value, .. } => {
                let h = leaf_hash(key, value);
                self.set_hash(n, h);
                return h;
            }
            Node::Inner { bit, child, .. } => (*bit, *child),
        };
        // Depth is at most 257 (bits strictly increase downwards): bounded recursion.
        let (l, r) = (self.hash(child[0]), self.hash(child[1]));
        let h = node_hash(bit, &l, &r);
        self.set_hash(n, h);
        h
    }

    fn set_hash(&mut self, n: usize, h: [u8; 32]) {
        match &mut self.nodes[n] {
            Node::Leaf { hash, .. } | Node::Inner { hash, .. } => *hash = Some(h),
        }
    }

    /// Entries with effects indexed.
    pub fn entries(&self) -> u64 {
        self.entries
    }
}

fn new_leaf(key: IndexKey, effect: Effect) -> Node {
    let mut value = EffectsOf::NONE;
    value.push(&effect);
    Node::Leaf {
        key,
        value,
        effects: vec![effect],
        hash: None,
    }
}

#[cfg(test)]
mod tests;
