//! Offline label proofs (`spec/label-proof.md`, `memlineage/label-proof@v1`): a file from
//! which a verifier holding only the log's verifier key recomputes an entry's trust label,
//! whether it is quarantined or tombstoned, and the lineage path behind its label.
//!
//! ```text
//! memlineage/label-proof@v1
//! subject <leaf index>
//! entry <leaf index> <base64 COSE_Sign1>      every entry used, ascending index,
//! <base64 audit-path hash>                      each with PATH(index, D[n])
//! lookup <key|target> <base64 subject> found|empty|other <base64 key> <count> <base64 chain>
//! node <bit> <base64 hash>                     the effects-index path, root first
//!
//! <signed checkpoint note, verbatim>
//! ```
//!
//! The entries are the subject, its whole ancestry, and every effect (binding, flag, release,
//! tombstone, lease, replacement) about an ancestor, a writer or a flag; the lookups show in
//! the effects index the checkpoint signs that no other effect about them exists. Parsing
//! ([`LabelProof::parse`]) checks syntax; [`LabelProof::verify`] does the rest.
//!
//! Nothing here opens a store; the ledger builds proofs (`Ledger::prove_label`).

use crate::lineage::effects_index::{EffectsOf, IndexKey, IndexLineError, Lookup, LookupEnd};
use crate::lineage::effects_index::{LookupError, Subject};
use crate::lineage::{LabelPolicy, SignedPolicyError};
use crate::log::{CheckpointError, ProofError};
use crate::record::{EntryId, KeyId, RecordError};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

mod verify;

pub use verify::{Ancestor, LabelVerdict, QuarantineFinding};

/// The first line of every label proof.
pub const LABEL_PROOF_HEADER: &str = "memlineage/label-proof@v1";

/// Largest label proof accepted, in bytes (32 MiB): about 25 000 entries of a typical size.
/// An entry whose ancestry is larger cannot be proved in one file.
pub const MAX_LABEL_PROOF_BYTES: usize = 32 << 20;

/// Most audit-path lines after an entry (a tree of at most `2^64 - 1` leaves).
const MAX_PATH: usize = 64;

/// One logged entry in a label proof, with its inclusion proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvedEntry {
    /// Its leaf index.
    pub index: u64,
    /// Its COSE_Sign1 bytes (`spec/record.md`).
    pub cose: Vec<u8>,
    /// `PATH(index, D[n])`, RFC 6962 §2.1.1, leaf sibling first.
    pub path: Vec<[u8; 32]>,
}

/// A label proof (module docs). Build one with `Ledger::prove_label`, check it with
/// [`LabelProof::verify`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelProof {
    /// The leaf index of the entry whose label is proved.
    pub subject: u64,
    /// Every entry the verifier uses, by strictly ascending leaf index.
    pub entries: Vec<ProvedEntry>,
    /// The effects-index lookups, in [`Subject`] order (keys, then targets, by bytes).
    pub lookups: Vec<Lookup>,
    /// The signed checkpoint note every proof leads to, verbatim.
    pub checkpoint: Vec<u8>,
}

impl LabelProof {
    /// The text form (module docs). A checkpoint that is not UTF-8 (which no verifier accepts)
    /// is written with U+FFFD replacements.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let size: usize = self
            .entries
            .iter()
            .map(|e| 32 + e.cose.len() * 4 / 3 + 45 * e.path.len())
            .sum::<usize>()
            + self
                .lookups
                .iter()
                .map(|l| 200 + 55 * l.nodes.len())
                .sum::<usize>()
            + self.checkpoint.len()
            + 64;
        let mut s = String::with_capacity(size);
        // Writing to a String cannot fail.
        let _ = write!(s, "{LABEL_PROOF_HEADER}\nsubject {}\n", self.subject);
        for e in &self.entries {
            let _ = write!(s, "entry {} ", e.index);
            BASE64.encode_string(&e.cose, &mut s);
            s.push('\n');
            for h in &e.path {
                BASE64.encode_string(h, &mut s);
                s.push('\n');
            }
        }
        for l in &self.lookups {
            let _ = write!(s, "lookup {} ", l.subject.name());
            BASE64.encode_string(l.subject.bytes(), &mut s);
            match &l.end {
                LookupEnd::Found => s.push_str(" found\n"),
                LookupEnd::Empty => s.push_str(" empty\n"),
                LookupEnd::Other { key, effects } => {
                    s.push_str(" other ");
                    BASE64.encode_string(key.0, &mut s);
                    let _ = write!(s, " {} ", effects.count);
                    BASE64.encode_string(effects.chain, &mut s);
                    s.push('\n');
                }
            }
            for (bit, h) in &l.nodes {
                let _ = write!(s, "node {bit} ");
                BASE64.encode_string(h, &mut s);
                s.push('\n');
            }
        }
        s.push('\n');
        s.push_str(&String::from_utf8_lossy(&self.checkpoint));
        s
    }

    /// Parses the text form strictly (`spec/label-proof.md` §2): at most
    /// [`MAX_LABEL_PROOF_BYTES`] of UTF-8; the header; `subject`; entries by strictly
    /// ascending index, each with at most 64 path lines; lookups in strictly ascending subject
    /// order, each with nodes; an empty line and a non-empty checkpoint. Integers are canonical
    /// decimal, binary values canonical base64 of their exact size, and the input must be
    /// exactly what [`LabelProof::to_text`] prints for the result. Nothing is verified yet.
    ///
    /// # Errors
    /// [`LabelProofError::TooLarge`], [`LabelProofError::Malformed`]. Does not panic.
    pub fn parse(text: &[u8]) -> Result<Self, LabelProofError> {
        if text.len() > MAX_LABEL_PROOF_BYTES {
            return Err(LabelProofError::TooLarge {
                got: text.len(),
                max: MAX_LABEL_PROOF_BYTES,
            });
        }
        let text = std::str::from_utf8(text).map_err(|_| malformed(1, "UTF-8 text"))?;
        let (head, checkpoint) = text
            .split_once("\n\n")
            .ok_or(malformed(1, "an empty line before the checkpoint"))?;
        let mut lines = head.split('\n').zip(1..).peekable();
        if lines.next().map(|(l, _)| l) != Some(LABEL_PROOF_HEADER) {
            return Err(malformed(1, "the line memlineage/label-proof@v1"));
        }
        let (line, n) = lines.next().ok_or(malformed(2, "a subject line"))?;
        let subject = line
            .strip_prefix("subject ")
            .and_then(decimal)
            .ok_or(malformed(n, "subject <decimal, no leading zeroes>"))?;
        let mut proof = LabelProof {
            subject,
            entries: Vec::new(),
            lookups: Vec::new(),
            checkpoint: Vec::new(),
        };
        while let Some((line, n)) = lines.next_if(|(l, _)| l.starts_with("entry ")) {
            let e = parse_entry(line, n)?;
            if proof.entries.last().is_some_and(|p| p.index >= e.index) {
                return Err(malformed(n, "entries by strictly ascending index"));
            }
            proof.entries.push(e);
            while let Some((line, n)) = lines.next_if(|(l, _)| !l.contains(' ')) {
                let last = proof.entries.len() - 1;
                let path = &mut proof.entries[last].path;
                if path.len() == MAX_PATH {
                    return Err(malformed(n, "at most 64 proof hashes"));
                }
                path.push(b64_32(line).ok_or(malformed(n, "a base64 32-byte hash"))?);
            }
        }
        for (line, n) in lines.by_ref() {
            if let Some(bits) = line.strip_prefix("node ") {
                let Some(l) = proof.lookups.last_mut() else {
                    return Err(malformed(n, "a lookup before its nodes"));
                };
                l.nodes
                    .push(parse_node(bits).ok_or(malformed(n, "node <bit> <base64>"))?);
                continue;
            }
            let l = parse_lookup(line).ok_or(malformed(n, "lookup <kind> <subject> <end>"))?;
            if proof.lookups.last().is_some_and(|p| p.subject >= l.subject) {
                return Err(malformed(n, "lookups in strictly ascending subject order"));
            }
            proof.lookups.push(l);
        }
        if checkpoint.is_empty() {
            return Err(malformed(head.split('\n').count() + 2, "a checkpoint"));
        }
        proof.checkpoint = checkpoint.as_bytes().to_vec();
        // Decode -> encode -> compare: one accepted text per proof.
        if proof.to_text() != text {
            return Err(malformed(1, "canonical encoding"));
        }
        Ok(proof)
    }
}

fn parse_entry(line: &str, n: usize) -> Result<ProvedEntry, LabelProofError> {
    let bad = || malformed(n, "entry <decimal index> <base64 entry>");
    let rest = line.strip_prefix("entry ").ok_or_else(bad)?;
    let (index, cose) = rest.split_once(' ').ok_or_else(bad)?;
    Ok(ProvedEntry {
        index: decimal(index).ok_or_else(bad)?,
        cose: BASE64.decode(cose).map_err(|_| bad())?,
        path: Vec::new(),
    })
}

fn parse_lookup(line: &str) -> Option<Lookup> {
    let mut words = line.strip_prefix("lookup ")?.split(' ');
    let (kind, bytes) = (words.next()?, b64_32(words.next()?)?);
    let subject = match kind {
        "key" => Subject::Key(KeyId(bytes)),
        "target" => Subject::Target(EntryId(bytes)),
        _ => return None,
    };
    let end = match (words.next()?, words.next()) {
        ("found", None) => LookupEnd::Found,
        ("empty", None) => LookupEnd::Empty,
        ("other", Some(key)) => LookupEnd::Other {
            key: IndexKey(b64_32(key)?),
            effects: EffectsOf {
                count: decimal(words.next()?)?,
                chain: b64_32(words.next()?)?,
            },
        },
        _ => return None,
    };
    match words.next() {
        None => Some(Lookup {
            subject,
            nodes: Vec::new(),
            end,
        }),
        Some(_) => None,
    }
}

fn parse_node(s: &str) -> Option<(u8, [u8; 32])> {
    let (bit, h) = s.split_once(' ')?;
    let bit = u8::try_from(decimal(bit)?).ok()?;
    Some((bit, b64_32(h)?))
}

/// Canonical ASCII decimal: no sign, no leading zeroes (`0` for zero).
fn decimal(s: &str) -> Option<u64> {
    let n: u64 = s.parse().ok()?;
    (n.to_string() == s).then_some(n)
}

/// Base64 of exactly 32 bytes (canonical: the re-encoding check of `parse` rejects others).
fn b64_32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 44 {
        return None;
    }
    let mut out = [0u8; 33];
    match BASE64.decode_slice(s, &mut out) {
        Ok(32) => out[..32].try_into().ok(),
        _ => None,
    }
}

fn malformed(line: usize, want: &'static str) -> LabelProofError {
    LabelProofError::Malformed { line, want }
}

/// Why a label proof does not parse or verify (`spec/label-proof.md` §4). Every variant can
/// be triggered by untrusted input except [`LabelProofError::ParametersDiffer`], which also
/// needs the caller's expectation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LabelProofError {
    /// The text is longer than [`MAX_LABEL_PROOF_BYTES`].
    #[error("label proof too large: {got} bytes, max {max}")]
    TooLarge {
        /// Input length in bytes.
        got: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The text breaks the syntax at `line` (1-based).
    #[error("malformed label proof at line {line}: want {want}")]
    Malformed {
        /// The offending line, counting from 1.
        line: usize,
        /// What the format requires there.
        want: &'static str,
    },
    /// The checkpoint does not verify under the log key.
    #[error("checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// The checkpoint signs no labelling parameters (`spec/lineage.md` §2.1): labels cannot be
    /// recomputed without guessing τ and the rule.
    #[error("the checkpoint signs no labelling parameters (memlineage/label-policy@v1)")]
    UnsignedParameters,
    /// The checkpoint's parameter line is malformed or repeated.
    #[error(transparent)]
    Parameters(#[from] SignedPolicyError),
    /// The checkpoint signs other parameters than the caller expects.
    #[error(
        "the checkpoint signs tau {} rule {}, not the expected tau {} rule {}",
        .signed.tau, .signed.weak_rule.name(), .expected.tau, .expected.weak_rule.name()
    )]
    ParametersDiffer {
        /// What the checkpoint signs.
        signed: LabelPolicy,
        /// What the caller expected.
        expected: LabelPolicy,
    },
    /// The checkpoint signs no effects index (`spec/label-proof.md` §3.3): that no flag,
    /// tombstone or binding was left out cannot be checked.
    #[error("the checkpoint signs no effects index (memlineage/effects-index@v1)")]
    NoEffectsIndex,
    /// The checkpoint's effects-index line is malformed or repeated.
    #[error(transparent)]
    IndexLine(#[from] IndexLineError),
    /// No entry of the proof is at the subject's index.
    #[error("the proof carries no entry at the subject's index {index}")]
    MissingSubject {
        /// The subject's leaf index.
        index: u64,
    },
    /// An entry does not decode or its signature does not verify.
    #[error("entry {index}: {source}")]
    Entry {
        /// Its leaf index in the proof.
        index: u64,
        /// Why.
        source: RecordError,
    },
    /// An entry's inclusion proof does not lead to the checkpoint's root.
    #[error("entry {index}: inclusion proof: {source}")]
    Proof {
        /// Its leaf index in the proof.
        index: u64,
        /// Why.
        source: ProofError,
    },
    /// The same entry at two leaf indexes (an honest log never holds one twice).
    #[error("entry {id} appears twice")]
    DuplicateEntry {
        /// Its id.
        id: EntryId,
    },
    /// A parent of an entry of the ancestry is not in the proof.
    #[error("ancestor {parent} (a parent of {child}) is missing")]
    MissingAncestor {
        /// The entry naming it.
        child: EntryId,
        /// The missing parent.
        parent: EntryId,
    },
    /// A parent is not earlier in the log than its child.
    #[error("parent {parent} is not earlier in the log than {child}")]
    ParentNotEarlier {
        /// The child.
        child: EntryId,
        /// The parent.
        parent: EntryId,
    },
    /// A subject whose effects bear on the label has no lookup.
    #[error("no effects-index lookup for {0}")]
    MissingLookup(Subject),
    /// A lookup of a subject that bears on nothing the proof shows.
    #[error("effects-index lookup for {0} is not needed")]
    ExtraneousLookup(Subject),
    /// A lookup does not show the effects the proof carries as every effect on its subject:
    /// a flag, release, tombstone or binding was dropped, added or changed.
    #[error("effects of {subject}: the lookup {source}")]
    Lookup {
        /// The subject.
        subject: Subject,
        /// Why.
        source: LookupError,
    },
    /// An entry that is neither in the ancestry nor an effect of a subject looked up.
    #[error("entry {index} is neither an ancestor nor an effect that bears on one")]
    Extraneous {
        /// Its leaf index.
        index: u64,
    },
    /// An entry of the ancestry whose writer no earlier keyring entry binds.
    #[error("entry {index}: writer {writer} is not bound before it")]
    UnboundWriter {
        /// The entry's leaf index.
        index: u64,
        /// Its writer.
        writer: KeyId,
    },
}

#[cfg(test)]
mod tests;
