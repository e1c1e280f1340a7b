//! Witness cosignatures: C2SP tlog-cosignature v1 (Ed25519, signature type `0x04`) on a
//! checkpoint note, and a quorum policy over named witnesses (`spec/log.md` §10).
//!
//! ```text
//! example.com/agent-memory-ledger
//! 8
//! XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=
//!
//! — example.com/agent-memory-ledger cyGizlMIQx4BH7B5UFUMyU1XHKFd54qLuFsQGqU5c2e7ychHDLo2qHU4kwT/41PY3ZxitkYIaPAr+9qq/zH6244DvA0=
//! — witness.example.com/w1 lpmAzwAAAABlU/EAuPJjq1GMgXdb9HSf1RM7jc63wAN2LcdBZ6DDCsOg/UiyyjWauX3nBhOp6TOo41UtFuvtCpNT0gUNw5E8D9PQDQ==
//! ```
//!
//! A cosignature is a signed-note signature line whose 76 bytes are `key id (4) || timestamp
//! (u64 big-endian, 8) || Ed25519 signature (64)`, the signature being over
//! `"cosignature/v1\ntime <timestamp>\n" || checkpoint text`. It states that, at that time, the
//! witness had seen no checkpoint of the log inconsistent with this one; a quorum of independent
//! witnesses thus makes a split view (`spec/log.md` §9) visible to the log's clients.
//!
//! [`verify_cosigned`] checks the log signature ([`LogVerifier::verify`]) and then a
//! [`WitnessPolicy`]; [`WitnessSigner`] writes cosignatures (tests, and a future witness role).

use super::checkpoint::{parse_vkey, VkeyFault};
use super::{CheckpointError, LogVerifier, VerifiedCheckpoint, MAX_CHECKPOINT_BYTES};
use crate::record::WriterKey;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use ed25519_dalek::VerifyingKey;
use signed_note::{Note, Signature};
use std::fmt;

/// C2SP signed-note signature type of an Ed25519 tlog-cosignature/v1 (`c2sp.org/tlog-cosignature`,
/// "Format"): the byte after the name in the key id preimage and the first byte of the vkey.
pub const ALG_COSIGNATURE_V1: u8 = 0x04;

/// Largest cosignature timestamp, `2^63 - 1` seconds: "It MUST NOT exceed 2^63 - 1"
/// (c2sp.org/tlog-cosignature, "Format").
pub const MAX_COSIGNATURE_TIMESTAMP: u64 = (1 << 63) - 1;

/// Largest witness name accepted, in bytes (the same bound as a log origin,
/// [`super::MAX_ORIGIN_BYTES`]).
pub const MAX_WITNESS_NAME_BYTES: usize = super::MAX_ORIGIN_BYTES;

/// Bytes of a cosignature after the key id: an 8-byte timestamp and a 64-byte signature.
const COSIGNATURE_LEN: usize = 8 + 64;

/// Verifies and applies a witness policy to a cosigned checkpoint note (`spec/log.md` §10.3):
///
/// 1. `log.verify(note)` (`spec/log.md` §4.3): the log's own signature, the body, the origin;
/// 2. every signature line whose key name and key id equal those of a witness in `policy` MUST
///    be a valid cosignature: 72 bytes after the key id, a timestamp `<= 2^63 - 1`, and an
///    Ed25519 signature that passes `verify_strict` over
///    `"cosignature/v1\ntime <timestamp>\n" || text`; one bad line rejects the note, even if
///    another line of the same witness is good;
/// 3. lines of keys not in the policy are ignored ("clients MUST ignore unknown signatures",
///    C2SP signed-note);
/// 4. at least `policy.quorum()` distinct witnesses of the policy signed; several lines of one
///    witness (say, two timestamps) count once.
///
/// Returns the verified checkpoint and the names of the witnesses that cosigned it, in policy
/// order.
///
/// # Errors
/// [`WitnessError::Checkpoint`] (step 1), [`WitnessError::MalformedCosignature`],
/// [`WitnessError::TimestampOutOfRange`], [`WitnessError::BadCosignature`] (step 2),
/// [`WitnessError::QuorumNotMet`] (step 4). Untrusted input can trigger all of them. Does not
/// panic.
///
/// # Note
/// Timestamps are not compared with the clock: a cosignature from the future or from long ago
/// verifies. A client that wants freshness needs its own bound. Cosignatures cover the whole
/// text, so a cosignature over another checkpoint (another size or root) never verifies here.
pub fn verify_cosigned(
    log: &LogVerifier,
    policy: &WitnessPolicy,
    note: &[u8],
) -> Result<(VerifiedCheckpoint, Vec<String>), WitnessError> {
    let cp = log.verify(note)?;
    let (text, sigs) = split_note(note)?;
    let mut signed = vec![false; policy.witnesses.len()];
    for sig in &sigs {
        let found = policy
            .witnesses
            .iter()
            .position(|w| w.name == sig.name() && w.key_id == sig.id());
        if let Some(i) = found {
            policy.witnesses[i].verify_line(&text, sig.signature())?;
            signed[i] = true;
        }
    }
    let names: Vec<String> = policy
        .witnesses
        .iter()
        .zip(&signed)
        .filter(|(_, s)| **s)
        .map(|(w, _)| w.name.clone())
        .collect();
    if names.len() < policy.quorum {
        return Err(WitnessError::QuorumNotMet {
            got: names.len(),
            want: policy.quorum,
        });
    }
    Ok((cp, names))
}

/// Which witnesses a client trusts and how many of them must cosign a checkpoint.
///
/// INVARIANT: `1 <= quorum <= witnesses.len()`; witness names are pairwise distinct and so are
/// their public keys (so `quorum` counts distinct keys, not one key under several names: the
/// Ed25519 cosignature message does not commit to the name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WitnessPolicy {
    witnesses: Vec<WitnessVerifier>,
    quorum: usize,
}

impl WitnessPolicy {
    /// A policy requiring `quorum` of `witnesses` (a `quorum`-of-`witnesses.len()` policy).
    ///
    /// Requires `1 <= quorum <= witnesses.len()`, distinct names and distinct keys.
    ///
    /// # Errors
    /// [`WitnessPolicyError::ZeroQuorum`], [`WitnessPolicyError::QuorumTooLarge`],
    /// [`WitnessPolicyError::DuplicateName`], [`WitnessPolicyError::DuplicateKey`] (all caller errors). Does
    /// not panic.
    pub fn new(witnesses: Vec<WitnessVerifier>, quorum: usize) -> Result<Self, WitnessPolicyError> {
        if quorum == 0 {
            return Err(WitnessPolicyError::ZeroQuorum);
        }
        if quorum > witnesses.len() {
            return Err(WitnessPolicyError::QuorumTooLarge {
                quorum,
                witnesses: witnesses.len(),
            });
        }
        for (i, w) in witnesses.iter().enumerate() {
            for earlier in &witnesses[..i] {
                if earlier.name == w.name {
                    return Err(WitnessPolicyError::DuplicateName {
                        name: w.name.clone(),
                    });
                }
                if earlier.key == w.key {
                    return Err(WitnessPolicyError::DuplicateKey {
                        first: earlier.name.clone(),
                        second: w.name.clone(),
                    });
                }
            }
        }
        Ok(WitnessPolicy { witnesses, quorum })
    }

    /// The trusted witnesses, in the order given to [`WitnessPolicy::new`].
    pub fn witnesses(&self) -> &[WitnessVerifier] {
        &self.witnesses
    }

    /// How many distinct witnesses must cosign (`1 <= quorum <= witnesses().len()`).
    pub fn quorum(&self) -> usize {
        self.quorum
    }
}

/// One witness's public key: its name and an Ed25519 key of cosignature type `0x04`.
///
/// `Debug` prints the verifier key ([`WitnessVerifier::vkey`]).
#[derive(Clone, PartialEq, Eq)]
pub struct WitnessVerifier {
    name: String,
    key: VerifyingKey,
    key_id: u32,
}

impl WitnessVerifier {
    /// Parses a witness verifier key `<name>+<8 lowercase hex id>+<base64(0x04 || 32-byte
    /// Ed25519 public key)>`, where the id is `SHA-256(name || 0x0A || 0x04 || key)[:4]`
    /// (c2sp.org/tlog-cosignature: "Ed25519 public keys MAY be encoded as vkeys with signature
    /// type 0x04"). The string must be exactly what [`WitnessVerifier::vkey`] prints.
    ///
    /// # Errors
    /// [`WitnessKeyError::MalformedVkey`], [`WitnessKeyError::BadName`],
    /// [`WitnessKeyError::UnsupportedAlgorithm`] (a log key, type `0x01`, is one),
    /// [`WitnessKeyError::KeyIdMismatch`], [`WitnessKeyError::NonCanonicalKey`] (y >= p, so that
    /// one point is one witness), [`WitnessKeyError::BadKey`]. Does not panic.
    pub fn from_vkey(vkey: &str) -> Result<Self, WitnessKeyError> {
        let (name, key, _) = parse_vkey(
            vkey,
            MAX_WITNESS_NAME_BYTES,
            ALG_COSIGNATURE_V1,
            check_name,
            |f| match f {
                VkeyFault::Malformed => WitnessKeyError::MalformedVkey,
                VkeyFault::Alg(alg) => WitnessKeyError::UnsupportedAlgorithm { alg },
                VkeyFault::KeyId { got, want } => WitnessKeyError::KeyIdMismatch { got, want },
                VkeyFault::BadKey => WitnessKeyError::BadKey,
                VkeyFault::NonCanonicalKey => WitnessKeyError::NonCanonicalKey,
            },
        )?;
        let v = WitnessVerifier::new(name, key);
        if v.vkey() != vkey {
            return Err(WitnessKeyError::MalformedVkey);
        }
        Ok(v)
    }

    /// This witness's verifier key, `<name>+<8 hex key id>+<base64(0x04 || public key)>`, e.g.
    /// `witness.example.com/w1+969980cf+BCmsuuFBvMrwsi4alNNNC8c2HlJtC/4SyJeUvJMilm3X`.
    pub fn vkey(&self) -> String {
        format!(
            "{}+{:08x}+{}",
            self.name,
            self.key_id,
            BASE64.encode(typed_key(&self.key))
        )
    }

    /// The witness's name (its signed-note key name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The signed-note key id `SHA-256(name || 0x0A || 0x04 || public key)[:4]`, big-endian.
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// The witness's 32-byte Ed25519 public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    fn new(name: &str, key: VerifyingKey) -> Self {
        let key_id = signed_note::key_id(name, &typed_key(&key));
        WitnessVerifier {
            name: name.to_owned(),
            key,
            key_id,
        }
    }

    /// Checks one cosignature (the bytes after the key id) over the checkpoint `text`; returns
    /// its timestamp.
    fn verify_line(&self, text: &[u8], sig: &[u8]) -> Result<u64, WitnessError> {
        let Ok(sig) = <&[u8; COSIGNATURE_LEN]>::try_from(sig) else {
            return Err(WitnessError::MalformedCosignature {
                witness: self.name.clone(),
                len: sig.len(),
            });
        };
        let (ts, ed) = sig.split_at(8);
        // INVARIANT: `split_at(8)` of a 72-byte array gives 8 and 64 bytes.
        let ts = u64::from_be_bytes(ts.try_into().unwrap_or_default());
        if ts > MAX_COSIGNATURE_TIMESTAMP {
            return Err(WitnessError::TimestampOutOfRange {
                witness: self.name.clone(),
                timestamp: ts,
            });
        }
        let ed = ed25519_dalek::Signature::from_slice(ed).map_err(|_| self.bad())?;
        self.key
            .verify_strict(&cosigned_message(text, ts), &ed)
            .map_err(|_| self.bad())?;
        Ok(ts)
    }

    fn bad(&self) -> WitnessError {
        WitnessError::BadCosignature {
            witness: self.name.clone(),
        }
    }
}

impl fmt::Debug for WitnessVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WitnessVerifier({})", self.vkey())
    }
}

/// A witness's cosigning key: writes C2SP tlog-cosignature/v1 lines on checkpoints.
///
/// A witness MUST cosign only a checkpoint it verified and found consistent with every earlier
/// checkpoint of the log it cosigned (e.g. through a [`super::CheckpointState`]); this type only
/// signs, and takes a [`VerifiedCheckpoint`] so that at least the log signature was checked.
#[derive(Debug)]
pub struct WitnessSigner {
    name: String,
    key: WriterKey,
    key_id: u32,
}

impl WitnessSigner {
    /// A cosigner named `name` (a key name: 1 to [`MAX_WITNESS_NAME_BYTES`] bytes, no white
    /// space, `+` or control characters; it SHOULD be a schema-less URL such as
    /// `witness.example.com/w1`).
    ///
    /// A witness key MUST NOT also be used as a log key or under another witness name
    /// (c2sp.org/tlog-cosignature: the Ed25519 message "doesn't commit to the cosigner name").
    ///
    /// # Errors
    /// [`WitnessKeyError::BadName`] (caller error). Does not panic.
    pub fn new(name: &str, key: WriterKey) -> Result<Self, WitnessKeyError> {
        check_name(name)?;
        let key_id = signed_note::key_id(name, &typed_key(&key.verifying_key()));
        Ok(WitnessSigner {
            name: name.to_owned(),
            key,
            key_id,
        })
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The signed-note key id (see [`WitnessVerifier::key_id`]).
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// The verifier for this witness's cosignatures.
    pub fn verifier(&self) -> WitnessVerifier {
        WitnessVerifier::new(&self.name, self.key.verifying_key())
    }

    /// The verifier key (see [`WitnessVerifier::vkey`]).
    pub fn vkey(&self) -> String {
        self.verifier().vkey()
    }

    /// The cosignature line for `cp` at `timestamp` (POSIX seconds):
    /// `— <name> base64(key id || timestamp u64 BE || Ed25519 signature)\n`, the signature over
    /// `"cosignature/v1\ntime <timestamp>\n" || text`. Deterministic.
    ///
    /// # Errors
    /// [`WitnessError::TimestampOutOfRange`] when `timestamp > 2^63 - 1` (caller error). Does not
    /// panic.
    pub fn cosignature_line(
        &self,
        cp: &VerifiedCheckpoint,
        timestamp: u64,
    ) -> Result<String, WitnessError> {
        let (text, _) = split_note(cp.note())?;
        let sig = Signature::new(self.name.clone(), self.key_id, self.sign(&text, timestamp)?)
            .map_err(|_| CheckpointError::MalformedNote)?;
        Ok(String::from_utf8_lossy(&sig.to_bytes()).into_owned())
    }

    /// `cp`'s note with this witness's cosignature at `timestamp` added as the last line; an
    /// earlier line with this witness's name and key id is removed (as Go `note.Sign` does).
    ///
    /// # Errors
    /// [`WitnessError::TimestampOutOfRange`] (caller error); [`WitnessError::Checkpoint`] with
    /// [`CheckpointError::MalformedNote`] or [`CheckpointError::TooLarge`] when the note would
    /// no longer be accepted (more than 100 signature lines, or over
    /// [`MAX_CHECKPOINT_BYTES`]). Does not panic.
    pub fn cosign(&self, cp: &VerifiedCheckpoint, timestamp: u64) -> Result<Vec<u8>, WitnessError> {
        let (text, sigs) = split_note(cp.note())?;
        let mut lines: Vec<Signature> = sigs
            .into_iter()
            .filter(|s| !(s.name() == self.name && s.id() == self.key_id))
            .collect();
        let sig = Signature::new(self.name.clone(), self.key_id, self.sign(&text, timestamp)?)
            .map_err(|_| CheckpointError::MalformedNote)?;
        lines.push(sig);
        let note = Note::new(&text, &lines).map_err(|_| CheckpointError::MalformedNote)?;
        let bytes = note.to_bytes();
        if bytes.len() > MAX_CHECKPOINT_BYTES {
            return Err(CheckpointError::TooLarge {
                got: bytes.len(),
                max: MAX_CHECKPOINT_BYTES,
            }
            .into());
        }
        // Re-parse: `Note::to_bytes` does not enforce the 100-signature limit.
        Note::from_bytes(&bytes).map_err(|_| CheckpointError::MalformedNote)?;
        Ok(bytes)
    }

    /// `timestamp u64 BE || Ed25519(cosigned_message(text, timestamp))`.
    fn sign(&self, text: &[u8], timestamp: u64) -> Result<Vec<u8>, WitnessError> {
        if timestamp > MAX_COSIGNATURE_TIMESTAMP {
            return Err(WitnessError::TimestampOutOfRange {
                witness: self.name.clone(),
                timestamp,
            });
        }
        let mut out = Vec::with_capacity(COSIGNATURE_LEN);
        out.extend_from_slice(&timestamp.to_be_bytes());
        out.extend_from_slice(&self.key.sign(&cosigned_message(text, timestamp)));
        Ok(out)
    }
}

/// Why a cosigned checkpoint was rejected (and, for [`WitnessSigner`], why it could not be
/// cosigned).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WitnessError {
    /// The note fails the log's own checkpoint verification (`spec/log.md` §4.3). Untrusted
    /// input can trigger it.
    #[error("checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// A line with a policy witness's name and key id does not carry 72 bytes after the key id
    /// (8-byte timestamp and 64-byte Ed25519 signature). Untrusted input can trigger it.
    #[error("cosignature by {witness} is {len} bytes, want 72")]
    MalformedCosignature {
        /// The witness's name.
        witness: String,
        /// Bytes after the key id.
        len: usize,
    },
    /// A cosignature timestamp above `2^63 - 1` ([`MAX_COSIGNATURE_TIMESTAMP`]). Untrusted input
    /// can trigger it when verifying; a caller error in [`WitnessSigner`].
    #[error("cosignature by {witness} has timestamp {timestamp}, max 2^63-1")]
    TimestampOutOfRange {
        /// The witness's name.
        witness: String,
        /// The timestamp found or asked for.
        timestamp: u64,
    },
    /// A line with a policy witness's name and key id does not verify (`verify_strict`): a
    /// forged or altered cosignature, or one over another checkpoint. Opaque by design.
    /// Untrusted input can trigger it.
    #[error("invalid cosignature from known witness {witness}")]
    BadCosignature {
        /// The witness's name.
        witness: String,
    },
    /// Fewer distinct policy witnesses cosigned than the quorum. Untrusted input (a note with
    /// cosignatures stripped) can trigger it.
    #[error("{got} witness cosignatures, quorum is {want}")]
    QuorumNotMet {
        /// Distinct policy witnesses with a valid cosignature.
        got: usize,
        /// The policy's quorum.
        want: usize,
    },
}

/// Why a witness verifier key or name was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WitnessKeyError {
    /// The name is empty, longer than [`MAX_WITNESS_NAME_BYTES`], or has white space, `+` or a
    /// control character. A caller error in [`WitnessSigner::new`]; untrusted (configuration)
    /// input in [`WitnessVerifier::from_vkey`].
    #[error("invalid witness name (key name)")]
    BadName,
    /// Not `<name>+<8 lowercase hex>+<canonical base64>` of 33 bytes. Untrusted input can trigger
    /// it.
    #[error("malformed witness verifier key")]
    MalformedVkey,
    /// The key's signature type is not `0x04` (Ed25519 cosignature/v1); a log key (`0x01`) is
    /// one. Untrusted input can trigger it.
    #[error("unsupported witness key type 0x{alg:02x}, want 0x04 (Ed25519 cosignature/v1)")]
    UnsupportedAlgorithm {
        /// The type byte found.
        alg: u8,
    },
    /// The key id is not `SHA-256(name || 0x0A || 0x04 || key)[:4]`. Untrusted input can
    /// trigger it.
    #[error("witness key id {got:08x}, want {want:08x}")]
    KeyIdMismatch {
        /// The id written in the key.
        got: u32,
        /// The id computed from name and key.
        want: u32,
    },
    /// The public key is not a valid Ed25519 point or has small order. Untrusted input can
    /// trigger it.
    #[error("witness key is not a usable Ed25519 public key")]
    BadKey,
    /// The public key bytes encode y >= p, a second encoding of a point (RFC 8032 §5.1.3;
    /// `spec/record.md` §2.3). Refused so that a policy cannot count one point as two witnesses.
    /// Untrusted input can trigger it.
    #[error("witness key is a non-canonical Ed25519 encoding (y >= p)")]
    NonCanonicalKey,
}

/// Why a [`WitnessPolicy`] could not be built. All are caller (configuration) errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WitnessPolicyError {
    /// A quorum of 0 would accept a note with no cosignature at all.
    #[error("witness quorum must be at least 1")]
    ZeroQuorum,
    /// More cosignatures required than there are witnesses.
    #[error("witness quorum {quorum} exceeds the {witnesses} witnesses")]
    QuorumTooLarge {
        /// The quorum asked for.
        quorum: usize,
        /// Number of witnesses.
        witnesses: usize,
    },
    /// Two witnesses with the same name.
    #[error("witness {name} listed twice")]
    DuplicateName {
        /// The repeated name.
        name: String,
    },
    /// Two witness names with the same public key: one key would count twice towards the
    /// quorum.
    #[error("witnesses {first} and {second} share a public key")]
    DuplicateKey {
        /// The earlier name.
        first: String,
        /// The later name.
        second: String,
    },
}

/// `"cosignature/v1\ntime <timestamp>\n" || text` (c2sp.org/tlog-cosignature, "Ed25519 signed
/// message": "two newline (U+000A) terminated lines [...] followed by the whole note body").
fn cosigned_message(text: &[u8], timestamp: u64) -> Vec<u8> {
    let mut m = format!("cosignature/v1\ntime {timestamp}\n").into_bytes();
    m.extend_from_slice(text);
    m
}

/// `0x04 || public key`: the key material of the id and vkey.
fn typed_key(key: &VerifyingKey) -> [u8; 33] {
    let mut k = [0u8; 33];
    k[0] = ALG_COSIGNATURE_V1;
    k[1..].copy_from_slice(key.as_bytes());
    k
}

/// Splits a signed note into its text (with the final newline) and its parsed signature lines,
/// as `signed_note::Note::from_bytes` does (which keeps the lines private).
fn split_note(note: &[u8]) -> Result<(Vec<u8>, Vec<Signature>), CheckpointError> {
    Note::from_bytes(note).map_err(|_| CheckpointError::MalformedNote)?;
    let s = std::str::from_utf8(note).map_err(|_| CheckpointError::MalformedNote)?;
    let (text, sigs) = s
        .rsplit_once("\n\n")
        .ok_or(CheckpointError::MalformedNote)?;
    let sigs = sigs
        .strip_suffix('\n')
        .ok_or(CheckpointError::MalformedNote)?;
    let sigs = sigs
        .split('\n')
        .map(|l| Signature::from_bytes(l.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| CheckpointError::MalformedNote)?;
    Ok((format!("{text}\n").into_bytes(), sigs))
}

/// Checks that `name` is a signed-note key name of at most [`MAX_WITNESS_NAME_BYTES`] bytes
/// without control characters.
fn check_name(name: &str) -> Result<(), WitnessKeyError> {
    let ok = name.len() <= MAX_WITNESS_NAME_BYTES
        && signed_note::is_key_name_valid(name)
        && !name.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(WitnessKeyError::BadName)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_messages() {
        let w = || "w.example/1".to_owned();
        let cases: Vec<(Box<dyn std::error::Error>, &str)> = vec![
            (
                Box::new(WitnessError::Checkpoint(CheckpointError::BadSignature)),
                "checkpoint: checkpoint signature verification failed",
            ),
            (
                Box::new(WitnessError::MalformedCosignature {
                    witness: w(),
                    len: 64,
                }),
                "cosignature by w.example/1 is 64 bytes, want 72",
            ),
            (
                Box::new(WitnessError::TimestampOutOfRange {
                    witness: w(),
                    timestamp: u64::MAX,
                }),
                "cosignature by w.example/1 has timestamp 18446744073709551615, max 2^63-1",
            ),
            (
                Box::new(WitnessError::BadCosignature { witness: w() }),
                "invalid cosignature from known witness w.example/1",
            ),
            (
                Box::new(WitnessError::QuorumNotMet { got: 1, want: 2 }),
                "1 witness cosignatures, quorum is 2",
            ),
            (
                Box::new(WitnessKeyError::BadName),
                "invalid witness name (key name)",
            ),
            (
                Box::new(WitnessKeyError::MalformedVkey),
                "malformed witness verifier key",
            ),
            (
                Box::new(WitnessKeyError::UnsupportedAlgorithm { alg: 1 }),
                "unsupported witness key type 0x01, want 0x04 (Ed25519 cosignature/v1)",
            ),
            (
                Box::new(WitnessKeyError::KeyIdMismatch {
                    got: 0xab,
                    want: 0x969980cf,
                }),
                "witness key id 000000ab, want 969980cf",
            ),
            (
                Box::new(WitnessKeyError::BadKey),
                "witness key is not a usable Ed25519 public key",
            ),
            (
                Box::new(WitnessPolicyError::ZeroQuorum),
                "witness quorum must be at least 1",
            ),
            (
                Box::new(WitnessPolicyError::QuorumTooLarge {
                    quorum: 4,
                    witnesses: 3,
                }),
                "witness quorum 4 exceeds the 3 witnesses",
            ),
            (
                Box::new(WitnessPolicyError::DuplicateName { name: w() }),
                "witness w.example/1 listed twice",
            ),
            (
                Box::new(WitnessPolicyError::DuplicateKey {
                    first: "a".into(),
                    second: "b".into(),
                }),
                "witnesses a and b share a public key",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }

    #[test]
    fn message_layout() {
        assert_eq!(
            cosigned_message(b"o\n1\nr\n", 0),
            b"cosignature/v1\ntime 0\no\n1\nr\n"
        );
        assert_eq!(MAX_COSIGNATURE_TIMESTAMP, i64::MAX as u64);
    }

    #[test]
    fn bad_names() {
        for n in ["", "a b", "a+b", "a\u{1}b", &"x".repeat(257)] {
            assert_eq!(
                WitnessSigner::new(n, WriterKey::for_label("w")).unwrap_err(),
                WitnessKeyError::BadName,
                "{n:?}"
            );
        }
    }
}
