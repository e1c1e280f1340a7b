//! Offline proof bundles in the C2SP tlog-proof@v1 text format (`spec/log.md` §5).
//!
//! ```text
//! c2sp.org/tlog-proof@v1
//! extra <base64 of the entry's COSE_Sign1 bytes>
//! index <leaf index>
//! <base64 audit-path hash>        (zero or more lines, leaf's sibling first)
//!
//! <signed checkpoint note, verbatim>
//! ```
//!
//! [`TlogProof`] is the generic format (the `extra` line is optional there); a [`ProofBundle`]
//! is a tlog-proof whose `extra` carries the logged entry, so that the file and the log's
//! verifier key are all an offline verifier needs.

use super::{CheckpointError, InclusionProof, LogVerifier, ProofError, VerifiedCheckpoint};
use crate::record::{EntryId, RecordError, SignedEntry};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

/// The first line of every proof: `c2sp.org/tlog-proof@v1`.
pub const TLOG_PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";

/// Largest proof text accepted, in bytes (160 KiB): the header, base64 of a
/// [`crate::record::MAX_ENTRY_BYTES`] entry, the index, 64 path lines and a
/// [`super::MAX_CHECKPOINT_BYTES`] note.
pub const MAX_BUNDLE_BYTES: usize = 160 * 1024;

/// Most path lines accepted: an audit path in a tree of at most `2^64 - 1` leaves has at most
/// 64 hashes.
const MAX_PATH: usize = 64;

/// A C2SP tlog-proof@v1: optional opaque `extra` data, a leaf index, an inclusion proof and a
/// checkpoint note. Parsing checks syntax only; nothing here is verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlogProof {
    /// The `extra` line's data, if the line is present (not authenticated by the proof).
    pub extra: Option<Vec<u8>>,
    /// The zero-based leaf index.
    pub index: u64,
    /// The audit path `PATH(index, D[n])`, RFC 6962 §2.1.1.
    pub path: Vec<[u8; 32]>,
    /// The checkpoint note, verbatim (including cosignatures).
    pub checkpoint: Vec<u8>,
}

impl TlogProof {
    /// The text form: header line, `extra <base64>` if any, `index <decimal>`, one base64 line
    /// per path hash, an empty line, then the checkpoint bytes verbatim. A checkpoint that is
    /// not UTF-8 (which no verifier accepts) is written with U+FFFD replacements.
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(128 + self.path.len() * 45 + self.checkpoint.len());
        s.push_str(TLOG_PROOF_HEADER);
        s.push('\n');
        if let Some(extra) = &self.extra {
            s.push_str("extra ");
            s.push_str(&BASE64.encode(extra));
            s.push('\n');
        }
        s.push_str(&format!("index {}\n", self.index));
        for h in &self.path {
            s.push_str(&BASE64.encode(h));
            s.push('\n');
        }
        s.push('\n');
        s.push_str(&String::from_utf8_lossy(&self.checkpoint));
        s
    }

    /// Parses the text form strictly (C2SP tlog-proof, "Format"):
    ///
    /// - at most [`MAX_BUNDLE_BYTES`] bytes of UTF-8;
    /// - "The first line MUST be the string `c2sp.org/tlog-proof@v1`";
    /// - an optional `extra <canonical base64>` line;
    /// - "The next line MUST start with the string `index` followed by a space (U+0020) and the
    ///   zero-based index [...] as an ASCII decimal with no leading zeroes";
    /// - zero to 64 lines of canonical base64 of exactly 32 bytes;
    /// - an empty line, then a non-empty checkpoint (checked later, by
    ///   [`LogVerifier::verify`]).
    ///
    /// The input must be exactly what [`TlogProof::to_text`] prints for the result.
    ///
    /// # Errors
    /// [`BundleError::TooLarge`], [`BundleError::Malformed`]. Does not panic.
    pub fn parse(text: &[u8]) -> Result<Self, BundleError> {
        if text.len() > MAX_BUNDLE_BYTES {
            return Err(BundleError::TooLarge {
                got: text.len(),
                max: MAX_BUNDLE_BYTES,
            });
        }
        let text = std::str::from_utf8(text).map_err(|_| malformed(1, "UTF-8 text"))?;
        let (head, checkpoint) = text
            .split_once("\n\n")
            .ok_or(malformed(1, "an empty line before the checkpoint"))?;
        let mut lines = head
            .split('\n')
            .enumerate()
            .map(|(i, l)| (i + 1, l))
            .peekable();
        match lines.next() {
            Some((_, TLOG_PROOF_HEADER)) => {}
            _ => return Err(malformed(1, "the line c2sp.org/tlog-proof@v1")),
        }
        let extra = match lines.next_if(|(_, l)| l.starts_with("extra ")) {
            // Slicing at 6 is on a char boundary: the line starts with the ASCII "extra ".
            Some((n, l)) => Some(decode_b64(
                &l["extra ".len()..],
                n,
                "canonical base64 extra",
            )?),
            None => None,
        };
        let index_line = if extra.is_some() { 3 } else { 2 };
        let (n, line) = lines.next().ok_or(malformed(index_line, "an index line"))?;
        let index = parse_index(line).ok_or(malformed(n, "index <decimal, no leading zeroes>"))?;
        let mut path = Vec::new();
        for (n, line) in lines {
            if path.len() == MAX_PATH {
                return Err(malformed(n, "at most 64 proof hashes"));
            }
            let h = decode_b64(line, n, "canonical base64 of a 32-byte hash")?;
            path.push(h.try_into().map_err(|_| malformed(n, "a 32-byte hash"))?);
        }
        let at = head.split('\n').count() + 2;
        if checkpoint.is_empty() {
            return Err(malformed(at, "a checkpoint"));
        }
        let proof = TlogProof {
            extra,
            index,
            path,
            checkpoint: checkpoint.as_bytes().to_vec(),
        };
        // Decode -> encode -> compare: one accepted text per proof.
        if proof.to_text() != text {
            return Err(malformed(1, "canonical encoding"));
        }
        Ok(proof)
    }
}

/// An offline proof that an entry is in the log: a C2SP tlog-proof@v1 whose `extra` line is the
/// base64 of the entry's COSE_Sign1 bytes (`spec/record.md`). The leaf hash is recomputed from
/// those bytes, `EntryId::of_cose(entry)`; `extra` is trusted only through that hash and the
/// entry's own signature.
///
/// Files SHOULD use the extension `.tlog-proof`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProofBundle {
    /// The entry's COSE_Sign1 bytes.
    pub entry: Vec<u8>,
    /// Inclusion proof of the entry's leaf hash at `proof.index`.
    pub proof: InclusionProof,
    /// The signed checkpoint note the proof leads to.
    pub checkpoint: Vec<u8>,
}

impl ProofBundle {
    /// The tlog-proof@v1 text (see [`TlogProof::to_text`]) with `extra` = the entry.
    pub fn to_text(&self) -> String {
        TlogProof {
            extra: Some(self.entry.clone()),
            index: self.proof.index,
            path: self.proof.path.clone(),
            checkpoint: self.checkpoint.clone(),
        }
        .to_text()
    }

    /// Parses a tlog-proof@v1 text strictly ([`TlogProof::parse`]) and requires the `extra`
    /// line. Nothing is verified yet.
    ///
    /// # Errors
    /// [`BundleError::TooLarge`], [`BundleError::Malformed`], [`BundleError::MissingExtra`].
    /// Does not panic.
    pub fn parse(text: &[u8]) -> Result<Self, BundleError> {
        let t = TlogProof::parse(text)?;
        let entry = t.extra.ok_or(BundleError::MissingExtra)?;
        Ok(ProofBundle {
            entry,
            proof: InclusionProof {
                index: t.index,
                path: t.path,
            },
            checkpoint: t.checkpoint,
        })
    }

    /// Everything an offline verifier does with only the file and the log's verifier key
    /// (`spec/log.md` §5.2):
    ///
    /// 1. decode the entry and verify its COSE_Sign1 signature ([`SignedEntry::decode`]);
    /// 2. verify the checkpoint under `verifier` ([`LogVerifier::verify`]);
    /// 3. check that `EntryId::of_cose(entry)` is leaf `proof.index` of the checkpoint's tree
    ///    ([`VerifiedCheckpoint::verify_inclusion`]).
    ///
    /// Returns the entry and the checkpoint. Whether the entry's writer is entitled to write it
    /// (the keyring) is not checked here: that needs the log.
    ///
    /// # Errors
    /// [`BundleError::Entry`], [`BundleError::Checkpoint`], [`BundleError::Proof`]: the first
    /// failed step. Untrusted input can trigger all of them. Does not panic.
    pub fn verify(
        &self,
        verifier: &LogVerifier,
    ) -> Result<(SignedEntry, VerifiedCheckpoint), BundleError> {
        let entry = SignedEntry::decode(&self.entry)?;
        let checkpoint = verifier.verify(&self.checkpoint)?;
        checkpoint.verify_inclusion(&EntryId::of_cose(&self.entry), &self.proof)?;
        Ok((entry, checkpoint))
    }
}

/// Why a proof bundle does not parse or verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// The text is longer than [`MAX_BUNDLE_BYTES`]. Untrusted input can trigger it.
    #[error("proof too large: {got} bytes, max {max}")]
    TooLarge {
        /// Input length in bytes.
        got: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The text breaks the tlog-proof@v1 syntax at `line` (1-based). Untrusted input can
    /// trigger it.
    #[error("malformed tlog-proof at line {line}: want {want}")]
    Malformed {
        /// The offending line, counting from 1.
        line: usize,
        /// What the format requires there.
        want: &'static str,
    },
    /// A well-formed tlog-proof without the `extra` line that carries the entry. Untrusted
    /// input can trigger it.
    #[error("tlog-proof has no extra line (the entry)")]
    MissingExtra,
    /// The entry does not decode or its signature does not verify. Untrusted input can trigger
    /// it.
    #[error("entry: {0}")]
    Entry(#[from] RecordError),
    /// The checkpoint does not verify under the log key. Untrusted input can trigger it.
    #[error("checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// The inclusion proof does not lead from the entry to the checkpoint root. Untrusted input
    /// can trigger it.
    #[error("inclusion proof: {0}")]
    Proof(#[from] ProofError),
}

fn malformed(line: usize, want: &'static str) -> BundleError {
    BundleError::Malformed { line, want }
}

fn decode_b64(s: &str, line: usize, want: &'static str) -> Result<Vec<u8>, BundleError> {
    BASE64.decode(s).map_err(|_| malformed(line, want))
}

/// `index <n>` with `n` canonical ASCII decimal (no sign, no leading zeroes unless `0`).
fn parse_index(line: &str) -> Option<u64> {
    let digits = line.strip_prefix("index ")?;
    let n: u64 = digits.parse().ok()?;
    (n.to_string() == digits).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::MAX_CHECKPOINT_BYTES;
    use crate::record::MAX_ENTRY_BYTES;

    #[test]
    fn bound_covers_worst_case() {
        let worst = TLOG_PROOF_HEADER.len()
            + 1
            + "extra \n".len()
            + MAX_ENTRY_BYTES.div_ceil(3) * 4
            + "index 18446744073709551615\n".len()
            + MAX_PATH * 45
            + 1
            + MAX_CHECKPOINT_BYTES;
        assert!(worst <= MAX_BUNDLE_BYTES, "{worst}");
    }

    #[test]
    fn round_trip_and_strictness() {
        let p = TlogProof {
            extra: Some(b"hello".to_vec()),
            index: 5,
            path: vec![[1; 32], [2; 32]],
            checkpoint: b"o\n1\nAQ==\n\n- sig\n".to_vec(),
        };
        let t = p.to_text();
        assert_eq!(TlogProof::parse(t.as_bytes()).unwrap(), p);
        let bad = [
            ("", 1),
            ("c2sp.org/tlog-proof@v2\nindex 0\n\ncp", 1),
            ("c2sp.org/tlog-proof@v1\nindex 01\n\ncp", 2),
            ("c2sp.org/tlog-proof@v1\nindex +1\n\ncp", 2),
            ("c2sp.org/tlog-proof@v1\nextra !!\nindex 1\n\ncp", 2),
            ("c2sp.org/tlog-proof@v1\nextra aGk=\n\ncp", 3),
            ("c2sp.org/tlog-proof@v1\nindex 1\nAQ==\n\ncp", 3),
            ("c2sp.org/tlog-proof@v1\nindex 1\n\n", 4),
            ("c2sp.org/tlog-proof@v1\nindex 1\ncp", 1),
        ];
        for (t, line) in bad {
            assert!(
                matches!(TlogProof::parse(t.as_bytes()), Err(BundleError::Malformed { line: l, .. }) if l == line),
                "{t:?}: {:?}",
                TlogProof::parse(t.as_bytes())
            );
        }
        let long = vec![b'a'; MAX_BUNDLE_BYTES + 1];
        assert!(matches!(
            TlogProof::parse(&long),
            Err(BundleError::TooLarge { .. })
        ));
        let no_extra = "c2sp.org/tlog-proof@v1\nindex 0\n\ncp";
        assert!(TlogProof::parse(no_extra.as_bytes())
            .unwrap()
            .extra
            .is_none());
        assert_eq!(
            ProofBundle::parse(no_extra.as_bytes()),
            Err(BundleError::MissingExtra)
        );
    }

    #[test]
    fn display_messages() {
        let cases = [
            (
                BundleError::TooLarge { got: 9, max: 8 },
                "proof too large: 9 bytes, max 8",
            ),
            (
                BundleError::Malformed { line: 2, want: "x" },
                "malformed tlog-proof at line 2: want x",
            ),
            (
                BundleError::MissingExtra,
                "tlog-proof has no extra line (the entry)",
            ),
            (
                BundleError::Entry(RecordError::BadSignature),
                "entry: signature verification failed",
            ),
            (
                BundleError::Checkpoint(CheckpointError::UnknownKey),
                "checkpoint: no signature by the log key",
            ),
            (
                BundleError::Proof(ProofError::RootMismatch),
                "inclusion proof: proof does not lead to the checkpoint root",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }
}
