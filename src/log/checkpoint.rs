//! Signed checkpoints: a C2SP tlog-checkpoint body carried in a C2SP signed-note with one
//! Ed25519 signature (signature type `0x01`) by the log key (`spec/log.md` §4).
//!
//! ```text
//! example.com/agent-memory-ledger
//! 8
//! XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=
//!
//! — example.com/agent-memory-ledger cyGizlMIQx4BH7B5UFUMyU1XHKFd54qLuFsQGqU5c2e7ychHDLo2qHU4kwT/41PY3ZxitkYIaPAr+9qq/zH6244DvA0=
//! ```
//!
//! Note syntax is parsed by `signed_note` and the body by `tlog_tiles::Checkpoint`; signatures
//! are checked here with ed25519-dalek's `verify_strict` (`signed_note`'s own verifier uses the
//! permissive `verify`).

use super::RootHash;
use crate::record::{KeyId, WriterKey};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use ed25519_dalek::VerifyingKey;
use signed_note::{Note, NoteError, VerificationError};
use std::fmt;

/// Largest signed checkpoint note a verifier reads, in bytes (64 KiB). Room for the body and
/// about 300 cosignature lines; `signed_note` itself caps a note at 100 signatures.
pub const MAX_CHECKPOINT_BYTES: usize = 64 * 1024;

/// Largest origin (log key name) accepted, in bytes.
pub const MAX_ORIGIN_BYTES: usize = 256;

/// C2SP signed-note signature type for Ed25519 (`c2sp.org/signed-note`, "Signature types").
const ALG_ED25519: u8 = 0x01;

/// The log's checkpoint signer: an origin (the log's key name) and the log's Ed25519 key.
///
/// The key is the same principal key that signs keyring entries (role `log`, `spec/record.md`
/// §5), so [`LogSigner::key_id`] is its 32-byte public key; the 4-byte signed-note key id is
/// [`LogSigner::note_key_id`].
#[derive(Debug)]
pub struct LogSigner {
    origin: String,
    key: WriterKey,
    note_id: u32,
}

impl LogSigner {
    /// A signer for the log named `origin`.
    ///
    /// `origin` is both the checkpoint's first line and the signed-note key name, so it must be a
    /// valid key name: non-empty, at most [`MAX_ORIGIN_BYTES`] bytes, no Unicode white space, no
    /// `+`, no control characters. It SHOULD be a schema-less URL such as
    /// `example.com/agent-memory-ledger` (C2SP tlog-checkpoint, "Note text", line 1).
    ///
    /// # Errors
    /// [`CheckpointError::BadOrigin`] when `origin` is not a valid key name. Does not panic.
    pub fn new(origin: &str, key: WriterKey) -> Result<Self, CheckpointError> {
        check_origin(origin)?;
        let note_id = note_key_id(origin, &key.verifying_key());
        Ok(LogSigner {
            origin: origin.to_owned(),
            key,
            note_id,
        })
    }

    /// The log's origin (and key name).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The log key's principal id: its 32-byte Ed25519 public key.
    pub fn key_id(&self) -> KeyId {
        self.key.key_id()
    }

    /// The C2SP signed-note key id: `SHA-256(origin || 0x0A || 0x01 || public key)[:4]`, as a
    /// big-endian `u32`.
    pub fn note_key_id(&self) -> u32 {
        self.note_id
    }

    /// The log's signing key.
    pub fn writer_key(&self) -> &WriterKey {
        &self.key
    }

    /// The C2SP signed-note verifier key, `<origin>+<8 hex key id>+<base64(0x01 || pubkey)>`,
    /// e.g. `example.com/agent-memory-ledger+7321a2ce+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4`.
    pub fn vkey(&self) -> String {
        signed_note::new_ed25519_verifier_key(&self.origin, &self.key.verifying_key())
    }

    /// The verifier for this signer's checkpoints.
    pub fn verifier(&self) -> LogVerifier {
        LogVerifier {
            origin: self.origin.clone(),
            key: self.key.verifying_key(),
            note_id: self.note_id,
        }
    }

    /// Signs the checkpoint for a tree of `size` leaves with root `root`, returning the full
    /// signed note: the body `<origin>\n<size>\n<base64 root>\n`, a blank line, and one
    /// signature line `— <origin> base64(key id || Ed25519 signature over the body)\n`.
    ///
    /// Ed25519 signing is deterministic, so equal inputs give equal bytes. Nothing here checks
    /// that `root` is the root of a tree of `size` leaves: sign only what [`super::tree_root`]
    /// computed. Does not panic.
    #[allow(clippy::expect_used)]
    pub fn sign(&self, size: u64, root: &RootHash) -> Vec<u8> {
        // INVARIANT: `origin` passed `check_origin` in `new` (non-empty, no white space, `+` or
        // control characters), so the body is a well-formed checkpoint and note text and the key
        // name is valid; the Ed25519 signer never fails. `try_sign` has no other error path.
        self.try_sign(size, root, "")
            .expect("checkpoint signing cannot fail for a validated origin")
    }

    /// [`LogSigner::sign`] with extension lines after the root (C2SP tlog-checkpoint: "zero or
    /// more ... non-empty lines" of application data): `extension` is empty or a sequence of
    /// non-empty lines, each ending in a newline. A memlineage ledger signs its labelling
    /// parameters this way (`spec/log.md` §4.2, `spec/lineage.md` §2.1).
    ///
    /// # Errors
    /// [`CheckpointError::MalformedBody`] when `extension` is not such a sequence (an empty
    /// line, no final newline) or holds a control character.
    pub fn sign_with(
        &self,
        size: u64,
        root: &RootHash,
        extension: &str,
    ) -> Result<Vec<u8>, CheckpointError> {
        if extension.chars().any(|c| c.is_control() && c != '\n') {
            return Err(CheckpointError::MalformedBody);
        }
        self.try_sign(size, root, extension)
            .map_err(|_| CheckpointError::MalformedBody)
    }

    fn try_sign(&self, size: u64, root: &RootHash, extension: &str) -> Result<Vec<u8>, NoteError> {
        let body =
            tlog_tiles::Checkpoint::new(&self.origin, size, tlog_tiles::Hash(root.0), extension)
                .map_err(|_| NoteError::MalformedNote)?
                .to_bytes();
        let mut note = Note::new(&body, &[])?;
        note.add_sigs(&[&NoteSigner(self)])?;
        Ok(note.to_bytes())
    }
}

/// Verifies checkpoints of one log under one Ed25519 key (signed-note type `0x01`).
///
/// What is wrong with a signed-note verifier key, before it is mapped to the caller's error.
pub(crate) enum VkeyFault {
    /// Not `<name>+<8 lowercase hex>+<base64>` of the right lengths, or not canonical.
    Malformed,
    /// Another signature type byte.
    Alg(u8),
    /// The key id is not `SHA-256(name || 0x0A || type || key)[:4]`.
    KeyId { got: u32, want: u32 },
    /// Not a curve point, or a small-order one.
    BadKey,
    /// The key bytes encode y >= p (RFC 8032 §5.1.3 "decoding fails"): the same rule as entry
    /// keys ([`crate::record::RecordError::NonCanonicalKey`]), so one point has one encoding.
    NonCanonicalKey,
}

/// Parses a C2SP signed-note verifier key `<name>+<8 lowercase hex id>+<base64(alg || key)>`
/// of signature type `alg` with an Ed25519 key (log keys, `0x01`; witness keys, `0x04`).
/// Checks in order: length, shape, `check_name(name)`, id digits, base64, type byte, key id,
/// key length, canonical encoding (y < p), point validity (not weak). The caller checks the string is canonical.
pub(crate) fn parse_vkey<E>(
    vkey: &str,
    max_name: usize,
    alg: u8,
    check_name: impl Fn(&str) -> Result<(), E>,
    fault: impl Fn(VkeyFault) -> E,
) -> Result<(&str, VerifyingKey, u32), E> {
    if vkey.len() > max_name + 64 {
        return Err(fault(VkeyFault::Malformed));
    }
    let (name, rest) = vkey
        .split_once('+')
        .ok_or_else(|| fault(VkeyFault::Malformed))?;
    let (id16, key64) = rest
        .split_once('+')
        .ok_or_else(|| fault(VkeyFault::Malformed))?;
    check_name(name)?;
    if id16.len() != 8 || !id16.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(fault(VkeyFault::Malformed));
    }
    let id = u32::from_str_radix(id16, 16).map_err(|_| fault(VkeyFault::Malformed))?;
    let key = BASE64
        .decode(key64)
        .map_err(|_| fault(VkeyFault::Malformed))?;
    match key.first() {
        Some(&a) if a == alg => {}
        Some(&a) => return Err(fault(VkeyFault::Alg(a))),
        None => return Err(fault(VkeyFault::Malformed)),
    }
    let want = signed_note::key_id(name, &key);
    if id != want {
        return Err(fault(VkeyFault::KeyId { got: id, want }));
    }
    let pk: [u8; 32] = key[1..]
        .try_into()
        .map_err(|_| fault(VkeyFault::Malformed))?;
    // One rule for every Ed25519 key (`spec/record.md` §2.3): `KeyId::public_key`'s.
    match crate::record::KeyId(pk).public_key() {
        Ok(_) => {}
        Err(crate::record::RecordError::NonCanonicalKey) => {
            return Err(fault(VkeyFault::NonCanonicalKey))
        }
        Err(_) => return Err(fault(VkeyFault::BadKey)),
    }
    let key = VerifyingKey::from_bytes(&pk).map_err(|_| fault(VkeyFault::BadKey))?;
    if key.is_weak() {
        return Err(fault(VkeyFault::BadKey));
    }
    Ok((name, key, id))
}

/// `Debug` prints the verifier key ([`LogVerifier::vkey`]).
#[derive(Clone, PartialEq, Eq)]
pub struct LogVerifier {
    origin: String,
    key: VerifyingKey,
    note_id: u32,
}

impl LogVerifier {
    /// Parses a C2SP signed-note verifier key `<name>+<id>+<base64 key>` where `<id>` is 8
    /// lowercase hex digits, the key is `0x01 || 32-byte Ed25519 public key`, and `<id>` is
    /// `SHA-256(name || 0x0A || key)[:4]`. The string must be exactly what [`LogVerifier::vkey`]
    /// would print (canonical base64, lowercase hex).
    ///
    /// # Errors
    /// [`CheckpointError::MalformedVkey`], [`CheckpointError::BadOrigin`],
    /// [`CheckpointError::UnsupportedAlgorithm`], [`CheckpointError::KeyIdMismatch`],
    /// [`CheckpointError::NonCanonicalKey`] (y >= p), [`CheckpointError::BadKey`] (not a point,
    /// or small order). Does not panic.
    pub fn from_vkey(vkey: &str) -> Result<Self, CheckpointError> {
        let (name, key, id) =
            parse_vkey(
                vkey,
                MAX_ORIGIN_BYTES,
                ALG_ED25519,
                check_origin,
                |f| match f {
                    VkeyFault::Malformed => CheckpointError::MalformedVkey,
                    VkeyFault::Alg(alg) => CheckpointError::UnsupportedAlgorithm { alg },
                    VkeyFault::KeyId { got, want } => CheckpointError::KeyIdMismatch { got, want },
                    VkeyFault::BadKey => CheckpointError::BadKey,
                    VkeyFault::NonCanonicalKey => CheckpointError::NonCanonicalKey,
                },
            )?;
        let v = LogVerifier {
            origin: name.to_owned(),
            key,
            note_id: id,
        };
        if v.vkey() != vkey {
            return Err(CheckpointError::MalformedVkey);
        }
        Ok(v)
    }

    /// This verifier's key in C2SP signed-note verifier-key form (see [`LogSigner::vkey`]).
    pub fn vkey(&self) -> String {
        signed_note::new_ed25519_verifier_key(&self.origin, &self.key)
    }

    /// The log's origin (the key name).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The log key's principal id: its 32-byte Ed25519 public key.
    pub fn key_id(&self) -> KeyId {
        KeyId(self.key.to_bytes())
    }

    /// Parses and verifies a signed checkpoint note (`spec/log.md` §4.3):
    ///
    /// 1. at most [`MAX_CHECKPOINT_BYTES`]; a well-formed signed note (UTF-8, no control
    ///    characters but newline, text ending in newline, a blank line, then 1 to 100 lines
    ///    `— <name> <base64(4-byte key id || signature)>\n`);
    /// 2. at least one signature line with this key's name and key id; every such line verifies
    ///    under `verify_strict` over the note text (signatures by other keys, e.g. witness
    ///    cosignatures, are ignored, as C2SP signed-note requires);
    /// 3. the text is a C2SP tlog-checkpoint body: origin, canonical decimal size, canonical
    ///    base64 of 32 bytes, then any extension lines (returned as they are:
    ///    [`VerifiedCheckpoint::extension`]);
    /// 4. the origin line equals this key's name.
    ///
    /// # Errors
    /// The [`CheckpointError`] of the first failed step. Untrusted bytes can trigger all of
    /// them. Does not panic.
    pub fn verify(&self, note: &[u8]) -> Result<VerifiedCheckpoint, CheckpointError> {
        if note.len() > MAX_CHECKPOINT_BYTES {
            return Err(CheckpointError::TooLarge {
                got: note.len(),
                max: MAX_CHECKPOINT_BYTES,
            });
        }
        let parsed = Note::from_bytes(note).map_err(|_| CheckpointError::MalformedNote)?;
        let lines = signature_lines(note)?;
        parsed.verify(&StrictVerifier(self)).map_err(|e| match e {
            NoteError::InvalidSignature { .. } => CheckpointError::BadSignature,
            NoteError::UnverifiedNote => CheckpointError::UnknownKey,
            _ => CheckpointError::MalformedNote,
        })?;
        // signed_note checks the first line of a key and skips its repetitions: every line of
        // this key must verify (`spec/log.md` §4.3 step 4), as every other verifier reads it.
        let mine = lines
            .iter()
            .filter(|s| s.name() == self.origin && s.id() == self.note_id);
        for s in mine {
            if !signed_note::Verifier::verify(&StrictVerifier(self), parsed.text(), s.signature()) {
                return Err(CheckpointError::BadSignature);
            }
        }
        // C2SP tlog-checkpoint: "The note text is a sequence of at least three non-empty lines
        // [...] The second line is the tree size, the ASCII decimal representation [...] with no
        // leading zeroes" -- enforced by tlog_tiles' strict parser (it re-prints the size).
        let body = tlog_tiles::Checkpoint::from_bytes(parsed.text())
            .map_err(|_| CheckpointError::MalformedBody)?;
        if body.to_bytes() != parsed.text() {
            return Err(CheckpointError::MalformedBody);
        }
        if body.origin() != self.origin {
            return Err(CheckpointError::OriginMismatch {
                got: body.origin().to_owned(),
                want: self.origin.clone(),
            });
        }
        Ok(VerifiedCheckpoint {
            origin: self.origin.clone(),
            size: body.size(),
            root: RootHash(body.hash().0),
            extension: body.extension().to_owned(),
            note: note.to_vec(),
        })
    }
}

impl fmt::Debug for LogVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LogVerifier({})", self.vkey())
    }
}

/// A checkpoint whose signature [`LogVerifier::verify`] checked. Only that function makes one,
/// so a tree size and root held in this type were signed by the log key (parse, don't validate).
///
/// Proofs are checked against it with [`VerifiedCheckpoint::verify_inclusion`] and
/// [`VerifiedCheckpoint::verify_consistency`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedCheckpoint {
    origin: String,
    size: u64,
    root: RootHash,
    extension: String,
    note: Vec<u8>,
}

impl VerifiedCheckpoint {
    /// The log's origin.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The tree size, in leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The root hash `MTH(D[size])`.
    pub fn root(&self) -> RootHash {
        self.root
    }

    /// The signed note exactly as verified (including any cosignature lines).
    pub fn note(&self) -> &[u8] {
        &self.note
    }

    /// The signed extension lines after the root, each ending in a newline (empty when there
    /// are none). A memlineage ledger's checkpoints carry its labelling parameters here.
    pub fn extension(&self) -> &str {
        &self.extension
    }
}

/// Why a checkpoint note, verifier key or origin was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The note is longer than [`MAX_CHECKPOINT_BYTES`]. Untrusted input can trigger it.
    #[error("checkpoint too large: {got} bytes, max {max}")]
    TooLarge {
        /// Input length in bytes.
        got: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// Not a C2SP signed-note: not UTF-8, a control character, no blank line before the
    /// signatures, a signature line without `— ` or final newline, bad base64, or more than 100
    /// signatures. Untrusted input can trigger it.
    #[error("malformed signed note")]
    MalformedNote,
    /// No signature line carries this log key's name and key id (only unknown keys signed).
    /// Untrusted input can trigger it.
    #[error("no signature by the log key")]
    UnknownKey,
    /// A signature line with this key's name and id does not verify (`verify_strict`). Opaque by
    /// design. Untrusted input can trigger it.
    #[error("checkpoint signature verification failed")]
    BadSignature,
    /// The signed text is not a C2SP tlog-checkpoint body (fewer than three lines, empty origin,
    /// non-canonical size or root, root not 32 bytes, empty extension line). Untrusted input
    /// signed by the log key can trigger it.
    #[error("malformed checkpoint body")]
    MalformedBody,
    /// The origin line differs from the verifier key's name. Untrusted input can trigger it.
    #[error("checkpoint origin {got:?}, want {want:?}")]
    OriginMismatch {
        /// The origin line found.
        got: String,
        /// The key name.
        want: String,
    },
    /// An origin or key name that is empty, longer than [`MAX_ORIGIN_BYTES`], or contains white
    /// space, `+` or a control character. A caller error in [`LogSigner::new`]; untrusted input
    /// in [`LogVerifier::from_vkey`].
    #[error("invalid origin (key name)")]
    BadOrigin,
    /// The verifier key is not `<name>+<8 lowercase hex>+<canonical base64>` of 33 bytes.
    /// Untrusted input can trigger it.
    #[error("malformed verifier key")]
    MalformedVkey,
    /// The verifier key's Ed25519 bytes encode y >= p, a second encoding of a point (RFC 8032
    /// §5.1.3), refused as entry keys are (`spec/record.md` §2.3). Untrusted input can trigger
    /// it.
    #[error("verifier key is a non-canonical Ed25519 encoding (y >= p)")]
    NonCanonicalKey,
    /// The verifier key's signature type is not Ed25519 (`0x01`). Untrusted input can trigger
    /// it.
    #[error("unsupported verifier key type 0x{alg:02x}, want 0x01 (Ed25519)")]
    UnsupportedAlgorithm {
        /// The type byte found.
        alg: u8,
    },
    /// The verifier key's id is not `SHA-256(name || 0x0A || key)[:4]`. Untrusted input can
    /// trigger it.
    #[error("verifier key id {got:08x}, want {want:08x}")]
    KeyIdMismatch {
        /// The id written in the key.
        got: u32,
        /// The id computed from name and key.
        want: u32,
    },
    /// The public key is not a valid Ed25519 point or has small order. Untrusted input can
    /// trigger it.
    #[error("verifier key is not a usable Ed25519 public key")]
    BadKey,
}

/// Checks that `origin` is a valid signed-note key name that can also be a checkpoint line.
fn check_origin(origin: &str) -> Result<(), CheckpointError> {
    let ok = origin.len() <= MAX_ORIGIN_BYTES
        && signed_note::is_key_name_valid(origin)
        && !origin.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(CheckpointError::BadOrigin)
    }
}

/// The signature lines of a note that [`Note::from_bytes`] parsed, held to `spec/log.md` §4.3
/// step 2 where signed_note is laxer: no control character but newline anywhere (signed_note
/// refuses C0 only, not DEL or C1), and every key name a valid one of at most
/// [`MAX_ORIGIN_BYTES`] (§4.1). Lines of other keys are unsigned: anyone can add them, so a
/// verifier that reads them differently would accept what another refuses.
fn signature_lines(note: &[u8]) -> Result<Vec<signed_note::Signature>, CheckpointError> {
    let text = std::str::from_utf8(note).map_err(|_| CheckpointError::MalformedNote)?;
    if text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(CheckpointError::MalformedNote);
    }
    let (_, sigs) = text
        .rsplit_once("\n\n")
        .ok_or(CheckpointError::MalformedNote)?;
    let sigs = sigs
        .strip_suffix('\n')
        .ok_or(CheckpointError::MalformedNote)?;
    sigs.split('\n')
        .map(
            |line| match signed_note::Signature::from_bytes(line.as_bytes()) {
                Ok(s) if s.name().len() <= MAX_ORIGIN_BYTES => Ok(s),
                _ => Err(CheckpointError::MalformedNote),
            },
        )
        .collect()
}

/// `SHA-256(name || 0x0A || 0x01 || pubkey)[:4]` as a big-endian `u32`.
fn note_key_id(name: &str, key: &VerifyingKey) -> u32 {
    let mut k = [0u8; 33];
    k[0] = ALG_ED25519;
    k[1..].copy_from_slice(key.as_bytes());
    signed_note::key_id(name, &k)
}

/// `signed_note::Signer` over the log's [`WriterKey`].
struct NoteSigner<'a>(&'a LogSigner);

impl signed_note::Signer for NoteSigner<'_> {
    fn name(&self) -> &str {
        &self.0.origin
    }

    fn key_id(&self) -> u32 {
        self.0.note_id
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, ed25519_dalek::ed25519::signature::Error> {
        Ok(self.0.key.sign(msg).to_vec())
    }
}

/// `signed_note::Verifier` (and a one-key `Verifiers`) using `verify_strict`.
struct StrictVerifier<'a>(&'a LogVerifier);

impl signed_note::Verifier for StrictVerifier<'_> {
    fn name(&self) -> &str {
        &self.0.origin
    }

    fn key_id(&self) -> u32 {
        self.0.note_id
    }

    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        let Ok(sig) = <[u8; 64]>::try_from(sig) else {
            return false;
        };
        let sig = ed25519_dalek::Signature::from_bytes(&sig);
        self.0.key.verify_strict(msg, &sig).is_ok()
    }
}

impl signed_note::Verifiers for StrictVerifier<'_> {
    fn verifier(
        &self,
        name: &str,
        id: u32,
    ) -> Result<&dyn signed_note::Verifier, VerificationError> {
        if name == self.0.origin && id == self.0.note_id {
            Ok(self)
        } else {
            Err(VerificationError::UnknownKey {
                name: name.to_owned(),
                id,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> LogSigner {
        LogSigner::new("example.com/log", WriterKey::for_label("log")).unwrap()
    }

    #[test]
    fn round_trip() {
        let s = signer();
        let v = LogVerifier::from_vkey(&s.vkey()).unwrap();
        assert_eq!(v, s.verifier());
        assert_eq!(v.key_id(), s.key_id());
        let note = s.sign(3, &RootHash([7; 32]));
        let cp = v.verify(&note).unwrap();
        assert_eq!(
            (cp.origin(), cp.size(), cp.root()),
            ("example.com/log", 3, RootHash([7; 32]))
        );
        assert_eq!(cp.note(), &note[..]);
    }

    #[test]
    fn bad_origins() {
        for o in [
            "",
            "a b",
            "a+b",
            "a\nb",
            "a\u{1}b",
            "a\u{7f}b",
            &"x".repeat(257),
        ] {
            assert_eq!(
                LogSigner::new(o, WriterKey::for_label("log")).unwrap_err(),
                CheckpointError::BadOrigin,
                "{o:?}"
            );
        }
    }

    #[test]
    fn display_messages() {
        let cases = [
            (
                CheckpointError::TooLarge { got: 9, max: 8 },
                "checkpoint too large: 9 bytes, max 8",
            ),
            (CheckpointError::MalformedNote, "malformed signed note"),
            (CheckpointError::UnknownKey, "no signature by the log key"),
            (
                CheckpointError::BadSignature,
                "checkpoint signature verification failed",
            ),
            (CheckpointError::MalformedBody, "malformed checkpoint body"),
            (
                CheckpointError::OriginMismatch {
                    got: "a".into(),
                    want: "b".into(),
                },
                "checkpoint origin \"a\", want \"b\"",
            ),
            (CheckpointError::BadOrigin, "invalid origin (key name)"),
            (CheckpointError::MalformedVkey, "malformed verifier key"),
            (
                CheckpointError::UnsupportedAlgorithm { alg: 4 },
                "unsupported verifier key type 0x04, want 0x01 (Ed25519)",
            ),
            (
                CheckpointError::KeyIdMismatch {
                    got: 1,
                    want: 0xabcdef01,
                },
                "verifier key id 00000001, want abcdef01",
            ),
            (
                CheckpointError::BadKey,
                "verifier key is not a usable Ed25519 public key",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }
}
