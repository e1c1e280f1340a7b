//! The provenance record ([`ProvEntry`]), its deterministic CBOR payload and its
//! COSE_Sign1 envelope ([`SignedEntry`]).
//!
//! Wire format: `spec/record.md`. An entry's id ([`EntryId`]) is its RFC 6962 leaf hash,
//! `SHA-256(0x00 || COSE_Sign1 bytes)` (RFC 6962 §2.1); nothing else names an entry.

mod cbor;
mod cose;
mod encode;
mod fields;
mod idmap;
mod keys;
#[cfg(test)]
mod oracle;
#[cfg(test)]
mod oracle_decode;
mod reader;
mod scan;
mod verify;

pub use cbor::{decode_payload, encode_payload};
pub use cose::{
    decode_on_all_cores, protected_header, sig_structure, SignedEntry, SPLIT_BATCH_MIN,
};
pub(crate) use cose::{parse_unverified, reparse_verified};
pub(crate) use idmap::{IdMap, IdSet};
pub use keys::{KeyBinding, KeyId, Role, WriterKey};
pub use verify::{verify, Batch, PublicKey};

use sha2::{Digest, Sha256};
use std::fmt;

/// Format version written in field 0 of every payload (`spec/record.md` §3).
pub const FORMAT_VERSION: u64 = 1;

/// Largest COSE_Sign1 entry accepted by a decoder, in bytes (64 KiB).
pub const MAX_ENTRY_BYTES: usize = 64 * 1024;

/// Largest number of parents one entry may name.
pub const MAX_PARENTS: usize = 1024;

/// Largest principal name in a keyring binding, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

/// A 32-byte SHA-256 digest of some bytes (content, raw source, or writer context).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Hash32(pub [u8; 32]);

impl Hash32 {
    /// SHA-256 of `bytes` (FIPS 180-4). Used for `h_content`, `h_src` and `h_ctx`.
    pub fn digest(bytes: &[u8]) -> Self {
        Hash32(Sha256::digest(bytes).into())
    }
}

/// An entry's id: its RFC 6962 leaf hash, `SHA-256(0x00 || cose_bytes)` (RFC 6962 §2.1).
///
/// Ids order bytewise; parents are sorted by this order (`spec/record.md` §3, field 6).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EntryId(pub [u8; 32]);

impl EntryId {
    /// The leaf hash of `cose_bytes`: `SHA-256(0x00 || cose_bytes)`.
    pub fn of_cose(cose_bytes: &[u8]) -> Self {
        let mut h = Sha256::new();
        h.update([0x00]);
        h.update(cose_bytes);
        EntryId(h.finalize().into())
    }

    /// Parses 64 lowercase or uppercase hex digits.
    ///
    /// # Errors
    /// [`ParseIdError`] when `s` is not exactly 32 bytes of hex. Does not panic.
    pub fn from_hex(s: &str) -> Result<Self, ParseIdError> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(s.trim(), &mut out).map_err(|_| ParseIdError)?;
        Ok(EntryId(out))
    }

    /// The first 8 hex digits, for human-facing text (receipts, rendering).
    pub fn short(&self) -> String {
        hex::encode(&self.0[..4])
    }
}

/// The string given to [`EntryId::from_hex`] was not 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an entry id is 64 hex digits (32 bytes)")]
pub struct ParseIdError;

macro_rules! hex_debug {
    ($t:ty) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&hex::encode(self.0))
            }
        }
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($t), hex::encode(self.0))
            }
        }
    };
}
hex_debug!(Hash32);
hex_debug!(EntryId);

/// An attribution weight `w(p, c)` in `[0, 1]`, as a fixed-point integer in millionths.
///
/// `Weight::ONE` is `1_000_000`. Fixed point makes `w > τ` exact and encodings deterministic
/// (`spec/lineage.md` §2).
// INVARIANT: self.0 <= 1_000_000.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Weight(u32);

impl Weight {
    /// Weight 0 (no influence).
    pub const ZERO: Weight = Weight(0);
    /// Weight 1.0 = 1_000_000 millionths (coarse attribution).
    pub const ONE: Weight = Weight(1_000_000);

    /// A weight of `millionths / 1_000_000`.
    ///
    /// # Errors
    /// [`WeightError`] when `millionths > 1_000_000`.
    pub fn new(millionths: u64) -> Result<Self, WeightError> {
        if millionths <= 1_000_000 {
            // Fits: checked just above.
            Ok(Weight(millionths as u32))
        } else {
            Err(WeightError { got: millionths })
        }
    }

    /// The weight closest to `x` (rounded to the nearest millionth). For CLI and JSON input only.
    ///
    /// # Errors
    /// [`WeightError`] when `x` is not a finite number in `[0, 1]`.
    pub fn from_f64(x: f64) -> Result<Self, WeightError> {
        if x.is_finite() && (0.0..=1.0).contains(&x) {
            Ok(Weight((x * 1_000_000.0).round() as u32))
        } else if x.is_finite() && x > 1.0 {
            // Rounded up so that anything above 1 reads above 1_000_000; the float-to-int
            // conversion saturates, and u64::MAX is kept for "negative or non-finite".
            Err(WeightError {
                got: ((x * 1_000_000.0).ceil() as u64).min(u64::MAX - 1),
            })
        } else {
            Err(WeightError { got: u64::MAX })
        }
    }

    /// The weight in millionths, `0..=1_000_000`.
    pub fn millionths(self) -> u32 {
        self.0
    }
}

impl fmt::Display for Weight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06}", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

/// A weight outside `0..=1_000_000` millionths (or a non-finite / out-of-range float).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("weight out of range: got {} millionths, want 0..=1000000", if *got == u64::MAX { "a negative or non-finite number of".to_string() } else { got.to_string() })]
pub struct WeightError {
    /// The rejected value in millionths (`u64::MAX` for a negative or non-finite float).
    pub got: u64,
}

/// One lineage edge from a parent entry to the entry that names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Parent {
    /// The parent's entry id; it must already be in the log.
    pub id: EntryId,
    /// The attribution weight `w(parent, child)`.
    pub weight: Weight,
}

impl Parent {
    /// An edge of full weight (`w = 1.0`, [`Weight::ONE`]) from `id`: what the fronts and the
    /// replay record when a tool call or its result follows from an entry as a whole.
    pub fn full(id: EntryId) -> Self {
        Parent {
            id,
            weight: Weight::ONE,
        }
    }
}

/// What kind of memory write an entry records (`spec/record.md` §4, registry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// A prompt from a user or system principal.
    Prompt,
    /// The output of a tool call.
    ToolResult,
    /// An observation or summary written by an agent (a derived memory).
    Summary,
    /// A fact the writer asserts.
    Fact,
    /// A tool call the agent made (or proposed).
    ToolCall,
    /// Deletion of `target`: the target leaves retrieval, stays in the tree.
    Tombstone,
    /// A keyring binding of a principal's key to a role, written by the log key.
    Keyring,
    /// Forensics: `target` is a bad source; everything that descends from it over any recorded
    /// edge is quarantined (`spec/forensics.md` §2, reach `all`).
    Quarantine,
    /// Forensics: as [`Kind::Quarantine`], but reaching only over strong edges (`w > τ`).
    QuarantineStrong,
    /// Forensics: lifts the quarantine made by `target` (a quarantine entry); content = reason.
    Release,
    /// Forensics: an expiring lease on reworking `target`; content = `ttl_ms=<decimal>`.
    Lease,
    /// Forensics: a new version of `target` (healed fact or reworked entry), built from its
    /// parents.
    Replacement,
    /// What an agent session had read when the agent wrote something (`spec/lineage.md` §4.2):
    /// written by a front, its parents are the session's previous context entry and the reads
    /// since, each at full weight; its content is empty. An agent write of the session names it
    /// as a parent, so that the write descends from everything the session read.
    Context,
}

impl Kind {
    /// The registry code written on the wire.
    pub fn code(self) -> u64 {
        match self {
            Kind::Prompt => 0,
            Kind::ToolResult => 1,
            Kind::Summary => 2,
            Kind::Fact => 3,
            Kind::ToolCall => 4,
            Kind::Tombstone => 5,
            Kind::Keyring => 6,
            Kind::Quarantine => 7,
            Kind::QuarantineStrong => 8,
            Kind::Release => 9,
            Kind::Lease => 10,
            Kind::Replacement => 11,
            Kind::Context => 12,
        }
    }

    /// The kind with wire code `code`, if registered.
    pub fn from_code(code: u64) -> Option<Self> {
        Some(match code {
            0 => Kind::Prompt,
            1 => Kind::ToolResult,
            2 => Kind::Summary,
            3 => Kind::Fact,
            4 => Kind::ToolCall,
            5 => Kind::Tombstone,
            6 => Kind::Keyring,
            7 => Kind::Quarantine,
            8 => Kind::QuarantineStrong,
            9 => Kind::Release,
            10 => Kind::Lease,
            11 => Kind::Replacement,
            12 => Kind::Context,
            _ => return None,
        })
    }

    /// Whether entries of this kind carry field 9 (`target`): tombstone, quarantine,
    /// quarantine_strong, release, lease and replacement (`spec/record.md` §3).
    pub fn has_target(self) -> bool {
        matches!(
            self,
            Kind::Tombstone
                | Kind::Quarantine
                | Kind::QuarantineStrong
                | Kind::Release
                | Kind::Lease
                | Kind::Replacement
        )
    }

    /// Whether entries of this kind change state beyond their own label (keyring, tombstone,
    /// quarantine, release, lease, replacement: codes 5–11, `spec/record.md` §4.1). A ledger
    /// reads these on open instead of every row (`spec/lineage.md` §5.1); every other kind,
    /// [`Kind::Context`] included, is only stored and labelled.
    pub fn has_effects(self) -> bool {
        matches!(
            self,
            Kind::Keyring
                | Kind::Tombstone
                | Kind::Quarantine
                | Kind::QuarantineStrong
                | Kind::Release
                | Kind::Lease
                | Kind::Replacement
        )
    }

    /// Lower-case name used in text output and JSON (`prompt`, `tool_result`, …).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Prompt => "prompt",
            Kind::ToolResult => "tool_result",
            Kind::Summary => "summary",
            Kind::Fact => "fact",
            Kind::ToolCall => "tool_call",
            Kind::Tombstone => "tombstone",
            Kind::Keyring => "keyring",
            Kind::Quarantine => "quarantine",
            Kind::QuarantineStrong => "quarantine_strong",
            Kind::Release => "release",
            Kind::Lease => "lease",
            Kind::Replacement => "replacement",
            Kind::Context => "context",
        }
    }

    /// Parses a name produced by [`Kind::name`] (`observation` is accepted for `summary`).
    pub fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "prompt" => Kind::Prompt,
            "tool_result" => Kind::ToolResult,
            "summary" | "observation" => Kind::Summary,
            "fact" => Kind::Fact,
            "tool_call" => Kind::ToolCall,
            "tombstone" => Kind::Tombstone,
            "keyring" => Kind::Keyring,
            "quarantine" => Kind::Quarantine,
            "quarantine_strong" => Kind::QuarantineStrong,
            "release" => Kind::Release,
            "lease" => Kind::Lease,
            "replacement" => Kind::Replacement,
            "context" => Kind::Context,
            _ => return None,
        })
    }
}

/// How the writer weighted its parents (paper §4.2; `spec/record.md` §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Attribution {
    /// Weight 1.0 for every entry that was in the writer's context.
    Coarse,
    /// A second model scored each context entry's influence.
    LmSelfEval,
    /// Weights from attention, supplied by the caller.
    Attention,
    /// Weights set by a person.
    Manual,
}

impl Attribution {
    /// The registry code written on the wire.
    pub fn code(self) -> u64 {
        match self {
            Attribution::Coarse => 0,
            Attribution::LmSelfEval => 1,
            Attribution::Attention => 2,
            Attribution::Manual => 3,
        }
    }

    /// Snake-case name: `coarse`, `lm_self_eval`, `attention`, `manual`.
    pub fn name(self) -> &'static str {
        match self {
            Attribution::Coarse => "coarse",
            Attribution::LmSelfEval => "lm_self_eval",
            Attribution::Attention => "attention",
            Attribution::Manual => "manual",
        }
    }

    /// Parses [`Attribution::name`].
    pub fn from_name(s: &str) -> Option<Self> {
        [
            Attribution::Coarse,
            Attribution::LmSelfEval,
            Attribution::Attention,
            Attribution::Manual,
        ]
        .into_iter()
        .find(|a| a.name() == s)
    }

    /// The method with wire code `code`, if registered.
    pub fn from_code(code: u64) -> Option<Self> {
        Some(match code {
            0 => Attribution::Coarse,
            1 => Attribution::LmSelfEval,
            2 => Attribution::Attention,
            3 => Attribution::Manual,
            _ => return None,
        })
    }
}

/// One memory write, before signing. The label is never a field: it is computed from the log.
///
/// Build with [`ProvEntry::new`] and the `with_*` methods; [`ProvEntry::check`] enforces the
/// structural rules of `spec/record.md` §3 (sorted unique parents, kind-specific fields).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvEntry {
    /// Field 0: format version, [`FORMAT_VERSION`].
    pub version: u64,
    /// Field 1: the writer's key id (its Ed25519 public key); equals the COSE `kid`.
    pub writer: KeyId,
    /// Field 2: what kind of write this is.
    pub kind: Kind,
    /// Field 3: SHA-256 of the content, which is stored beside the entry (redactable).
    pub content_hash: Hash32,
    /// Field 4: `h_src`, SHA-256 of the raw source the content came from.
    pub source_hash: Hash32,
    /// Field 5: `h_ctx`, SHA-256 of what was in the writer's context.
    pub context_hash: Hash32,
    /// Field 6: parents with weights, sorted by id, no duplicates.
    pub parents: Vec<Parent>,
    /// Field 7: writer-asserted time, milliseconds since the Unix epoch (UTC).
    pub time_ms: u64,
    /// Field 8: how the parent weights were obtained.
    pub attribution: Attribution,
    /// Field 9: the entry a tombstone, quarantine, release, lease or replacement is about
    /// (see [`Kind::has_target`]); absent for other kinds.
    pub target: Option<EntryId>,
    /// Field 10: for a keyring entry, the binding it makes; absent otherwise.
    pub binding: Option<KeyBinding>,
}

impl ProvEntry {
    /// A new entry of `kind` by `writer` over `content`, with no parents, time 0, coarse
    /// attribution, and `h_src = h_ctx = h_content` until set otherwise.
    pub fn new(writer: KeyId, kind: Kind, content: &[u8]) -> Self {
        let h = Hash32::digest(content);
        ProvEntry {
            version: FORMAT_VERSION,
            writer,
            kind,
            content_hash: h,
            source_hash: h,
            context_hash: h,
            parents: Vec::new(),
            time_ms: 0,
            attribution: Attribution::Coarse,
            target: None,
            binding: None,
        }
    }

    /// Sets the parents, sorting them by id. Duplicates are kept so that [`ProvEntry::check`]
    /// reports them.
    pub fn with_parents(mut self, mut parents: Vec<Parent>) -> Self {
        parents.sort();
        self.parents = parents;
        self
    }

    /// Sets the writer-asserted time in milliseconds since the Unix epoch.
    pub fn with_time_ms(mut self, time_ms: u64) -> Self {
        self.time_ms = time_ms;
        self
    }

    /// Sets `h_src`.
    pub fn with_source_hash(mut self, h: Hash32) -> Self {
        self.source_hash = h;
        self
    }

    /// Sets `h_ctx`.
    pub fn with_context_hash(mut self, h: Hash32) -> Self {
        self.context_hash = h;
        self
    }

    /// Sets the attribution method.
    pub fn with_attribution(mut self, a: Attribution) -> Self {
        self.attribution = a;
        self
    }

    /// Checks the structural rules of `spec/record.md` §3 that need no log.
    ///
    /// # Errors
    /// [`RecordError`] naming the first broken rule. Does not panic.
    pub fn check(&self) -> Result<(), RecordError> {
        if self.version != FORMAT_VERSION {
            return Err(RecordError::Version { got: self.version });
        }
        if self.parents.len() > MAX_PARENTS {
            return Err(RecordError::TooManyParents {
                got: self.parents.len(),
                max: MAX_PARENTS,
            });
        }
        for pair in self.parents.windows(2) {
            if pair[0].id == pair[1].id {
                return Err(RecordError::DuplicateParent(pair[0].id));
            }
            if pair[0].id > pair[1].id {
                return Err(RecordError::UnsortedParents);
            }
        }
        // Missing fields are reported before unexpected ones (`spec/record.md` §6.3 step 5).
        let (tomb, ring) = (self.kind.has_target(), self.kind == Kind::Keyring);
        if tomb && self.target.is_none() {
            return Err(RecordError::MissingField("target"));
        }
        if ring && self.binding.is_none() {
            return Err(RecordError::MissingField("binding"));
        }
        if !tomb && self.target.is_some() {
            return Err(RecordError::UnexpectedField("target"));
        }
        if !ring && self.binding.is_some() {
            return Err(RecordError::UnexpectedField("binding"));
        }
        if let Some(b) = &self.binding {
            // A binding of a key nobody can sign under (weak, non-canonical) is malformed.
            // `public_key` makes every check `verifying_key` makes (which calls it, then
            // decompresses the same bytes again for ed25519-dalek), for one decompression.
            b.key.public_key()?;
            if b.name.len() > MAX_NAME_BYTES {
                return Err(RecordError::NameTooLong {
                    got: b.name.len(),
                    max: MAX_NAME_BYTES,
                });
            }
        }
        Ok(())
    }
}

/// Why bytes are not a valid entry (decoding) or an entry is malformed (building).
///
/// Every variant can be triggered by untrusted input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The input is larger than [`MAX_ENTRY_BYTES`].
    #[error("entry too large: {got} bytes, max {max}")]
    TooLarge {
        /// Input length in bytes.
        got: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The bytes are not well-formed CBOR (reserved head values, stray break) or not the
    /// expected structure.
    #[error("malformed CBOR: {reason}")]
    Malformed {
        /// What is wrong with them, in words (or the CBOR decoder's message).
        reason: String,
    },
    /// The input ends inside an item, or declares a length longer than what remains.
    #[error("truncated CBOR: input ends inside an item or a declared length exceeds it")]
    Truncated,
    /// An indefinite-length string, array or map (RFC 8949 §4.2.1 forbids them).
    #[error("indefinite-length item (RFC 8949 §4.2.1)")]
    IndefiniteLength,
    /// An integer, length or tag argument not in its shortest form (RFC 8949 §4.2.1).
    #[error("argument not in shortest form (RFC 8949 §4.2.1)")]
    NonShortest,
    /// A floating-point value; the format has none.
    #[error("floating-point value where the format has none")]
    Float,
    /// A simple value (false, true, null, undefined, other); the format has none.
    #[error("simple value where the format has none")]
    UnsupportedSimple,
    /// `max` or more non-empty containers nested in one another (no memlineage structure
    /// nests more than 3).
    #[error("{max} or more nested containers")]
    TooDeep {
        /// The limit.
        max: usize,
    },
    /// Bytes remain after the first complete CBOR item.
    #[error("trailing bytes after the CBOR item: {0} bytes")]
    TrailingBytes(usize),
    /// Well-formed CBOR whose bytes differ from the deterministic re-encoding of what they
    /// decode to, for a reason no more specific variant names (defence in depth).
    #[error("not deterministically encoded (RFC 8949 §4.2.1)")]
    NonCanonical,
    /// Map keys are not in ascending order.
    #[error("map keys not in ascending order")]
    UnsortedKeys,
    /// A map key appears twice.
    #[error("duplicate map key {0}")]
    DuplicateKey(u64),
    /// A map key the format does not define.
    #[error("unknown field {key}")]
    UnknownField {
        /// The key: in decimal (a key binding's prefixed with `binding.`; a negative integer
        /// key too), or its CBOR major type when it is neither.
        key: String,
    },
    /// A required field is absent.
    #[error("missing field {0}")]
    MissingField(&'static str),
    /// A field that this kind of entry must not carry.
    #[error("field {0} not allowed for this kind")]
    UnexpectedField(&'static str),
    /// A field has the wrong CBOR type or size (e.g. a float, or a 31-byte hash).
    #[error("field {field}: {want}")]
    WrongType {
        /// The field's name.
        field: &'static str,
        /// What was expected.
        want: &'static str,
    },
    /// The COSE_Sign1 tag is absent or not 18 (RFC 9052 §4.2).
    #[error("not a tagged COSE_Sign1 (tag 18)")]
    WrongTag,
    /// The protected header is not exactly `{1: -8, 4: kid}` (alg EdDSA, 32-byte kid).
    #[error("protected header must be exactly {{1: -8 (EdDSA), 4: kid}}")]
    BadProtectedHeader,
    /// The unprotected header is not the empty map.
    #[error("unprotected header must be empty")]
    UnprotectedHeader,
    /// The payload's writer (field 1) differs from the COSE `kid`.
    #[error("payload writer differs from the COSE kid")]
    WriterMismatch,
    /// Unsupported format version.
    #[error("unsupported format version {got}")]
    Version {
        /// The version found.
        got: u64,
    },
    /// An unregistered kind, attribution method or role code.
    #[error("unregistered {what} code {code}")]
    UnknownCode {
        /// Which registry.
        what: &'static str,
        /// The code found.
        code: u64,
    },
    /// A weight outside `0..=1_000_000`.
    #[error(transparent)]
    Weight(#[from] WeightError),
    /// Parents are not sorted by id.
    #[error("parents not sorted by id")]
    UnsortedParents,
    /// A parent id appears twice.
    #[error("duplicate parent {0}")]
    DuplicateParent(EntryId),
    /// More than [`MAX_PARENTS`] parents.
    #[error("too many parents: {got}, max {max}")]
    TooManyParents {
        /// Number of parents found.
        got: usize,
        /// The limit.
        max: usize,
    },
    /// A keyring name longer than [`MAX_NAME_BYTES`].
    #[error("principal name too long: {got} bytes, max {max}")]
    NameTooLong {
        /// Length found, bytes.
        got: usize,
        /// The limit, bytes.
        max: usize,
    },
    /// The public key in `kid` is not a valid Ed25519 point encoding.
    #[error("kid is not a valid Ed25519 public key")]
    BadKey,
    /// The public key in `kid` is a non-canonical encoding (y >= p).
    #[error("kid is a non-canonical Ed25519 point encoding")]
    NonCanonicalKey,
    /// The public key in `kid` is a small-order (weak) point.
    #[error("kid is a small-order Ed25519 public key")]
    WeakKey,
    /// The signature fails `spec/record.md` §2.3 steps 4–8 (opaque by design).
    #[error("signature verification failed")]
    BadSignature,
}
