//! The COSE_Sign1 envelope (RFC 9052 §4.2, tag 18) with alg EdDSA (-8, RFC 9053 §2.2).
//!
//! ```text
//! COSE_Sign1 = 18([ protected: bstr .cbor {1: -8, 4: kid}, unprotected: {}, payload: bstr,
//!                   signature: bstr .size 64 ])
//! Sig_structure = ["Signature1", protected, h'', payload]          (RFC 9052 §4.4)
//! ```
//! Signatures are checked by [`super::verify`] (`spec/record.md` §2.3: canonical encodings, no
//! small-order `A` or `R`, `S < L`, the cofactored equation), one at a time or in a batch.

use super::cbor::check_item;
use super::encode::{self, PROTECTED_PREFIX, TAG_COSE_SIGN1};
use super::reader::Reader;
use super::verify::{self, Batch, PublicKey};
use super::{EntryId, KeyId, ProvEntry, RecordError, WriterKey};

/// A decoded, signature-checked entry: the only way to hold one is [`SignedEntry::sign`] or
/// [`SignedEntry::decode`], so a value of this type always has valid, canonical bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedEntry {
    entry: ProvEntry,
    cose: Vec<u8>,
    id: EntryId,
}

impl SignedEntry {
    /// Signs `entry` with `key` and wraps it in COSE_Sign1.
    ///
    /// # Errors
    /// [`RecordError::WriterMismatch`] when `entry.writer` is not `key`'s id; any
    /// [`ProvEntry::check`] error.
    pub fn sign(entry: ProvEntry, key: &WriterKey) -> Result<Self, RecordError> {
        if entry.writer != key.key_id() {
            return Err(RecordError::WriterMismatch);
        }
        entry.check()?;
        // One buffer holds the Sig_structure with the payload encoded in place; the envelope
        // copies the protected header and payload out of it.
        let t = encode::to_sign(&entry);
        let signature = key.sign(&t.message);
        let cose = encode::envelope(&t.message[t.protected], &t.message[t.payload], &signature);
        let id = EntryId::of_cose(&cose);
        Ok(SignedEntry { entry, cose, id })
    }

    /// Decodes COSE_Sign1 bytes and verifies the signature (`spec/record.md` §2.3) under the
    /// key in `kid`. The bytes must be exactly the deterministic encoding (`spec/record.md` §6).
    ///
    /// # Errors
    /// A [`RecordError`] naming the first problem. Does not panic on any input.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        Self::decode_with_keys(bytes, |_| None)
    }

    /// [`SignedEntry::decode`] with writers' keys already checked and decompressed by the
    /// caller ([`KeyId::public_key`]), e.g. from a keyring: saves one Ed25519 point
    /// decompression (≈ 5 µs) per entry. `known(kid)` may return the key for `kid`; a key for
    /// another id is ignored.
    ///
    /// # Errors
    /// As [`SignedEntry::decode`]. Does not panic on any input.
    pub fn decode_with_keys(
        bytes: &[u8],
        known: impl Fn(&KeyId) -> Option<PublicKey>,
    ) -> Result<Self, RecordError> {
        let (entry, protected, payload, signature) = parse(bytes)?;
        let key = key_for(&entry.writer, &known, &mut Vec::new())?;
        verify::verify(&key, &sig_structure(protected, payload), &signature)?;
        Ok(SignedEntry {
            entry,
            cose: bytes.to_vec(),
            id: EntryId::of_cose(bytes),
        })
    }

    /// Decodes and verifies many entries with one batch signature check ([`Batch`]): the
    /// answers, in order, are exactly those of [`SignedEntry::decode_with_keys`] on each
    /// (which names a bad signature [`RecordError::BadSignature`] here too). Runs on the
    /// calling thread; callers split the work over cores. About 2× (batch of 8) to 4.5×
    /// (batch of 512) faster per entry than decoding one by one, when few writers signed.
    pub fn decode_batch(
        items: &[&[u8]],
        known: impl Fn(&KeyId) -> Option<PublicKey>,
    ) -> Vec<Result<Self, RecordError>> {
        let mut batch = Batch::new();
        let mut parsed: Vec<Result<ProvEntry, RecordError>> = Vec::with_capacity(items.len());
        // Keys `known` does not have are decompressed once per batch (a ledger has few writers,
        // and an audit meets the keyring entries in the same batch as their first uses).
        let mut decoded_here: Vec<PublicKey> = Vec::new();
        for bytes in items {
            let checked = parse(bytes).and_then(|(entry, protected, payload, signature)| {
                let key = key_for(&entry.writer, &known, &mut decoded_here)?;
                batch.queue(&key, sig_structure(protected, payload), &signature);
                Ok(entry)
            });
            if checked.is_err() {
                batch.queue_refused();
            }
            parsed.push(checked);
        }
        let signatures_ok = batch.verify();
        parsed
            .into_iter()
            .zip(signatures_ok)
            .zip(items)
            .map(|((entry, ok), bytes)| {
                let entry = entry?;
                if !ok {
                    return Err(RecordError::BadSignature);
                }
                Ok(SignedEntry {
                    entry,
                    cose: bytes.to_vec(),
                    id: EntryId::of_cose(bytes),
                })
            })
            .collect()
    }

    /// The signed provenance record.
    pub fn entry(&self) -> &ProvEntry {
        &self.entry
    }

    /// The COSE_Sign1 bytes (what the log commits to).
    pub fn cose(&self) -> &[u8] {
        &self.cose
    }

    /// The entry id, `SHA-256(0x00 || cose)`.
    pub fn id(&self) -> EntryId {
        self.id
    }

    /// The writer's key id.
    pub fn writer(&self) -> KeyId {
        self.entry.writer
    }
}

/// Fewest entries [`decode_on_all_cores`] splits over cores. Below it one batch on the calling
/// thread is faster on the 2-vCPU VM of `spec/benchmarks.md`: waking a pool thread costs about
/// what a batch of 4 saves (8 entries: 193–203 µs in one batch, 229–236 µs split; 32 entries:
/// 617–811 µs against 501–514 µs split).
pub const SPLIT_BATCH_MIN: usize = 32;

/// [`SignedEntry::decode_batch`] spread over the machine's cores: one batch per core over a
/// contiguous slice of `items`, answers in `items` order and equal to decoding each alone
/// with [`SignedEntry::decode_with_keys`]. The calling thread decodes the first slice itself
/// while rayon's pool threads (which live for the process: no thread is spawned per call, a
/// spawn costs ~90 µs on the 2-vCPU VM we measure on) take the others. Below
/// [`SPLIT_BATCH_MIN`] items, or on one core, one batch on the calling thread.
pub fn decode_on_all_cores(
    items: &[&[u8]],
    known: impl Fn(&KeyId) -> Option<PublicKey> + Sync,
) -> Vec<Result<SignedEntry, RecordError>> {
    let threads = rayon::current_num_threads();
    if items.len() < SPLIT_BATCH_MIN || threads < 2 {
        return SignedEntry::decode_batch(items, &known);
    }
    let per_core = items.len().div_ceil(threads);
    let mut parts: Vec<Vec<Result<SignedEntry, RecordError>>> = Vec::new();
    parts.resize_with(items.len().div_ceil(per_core), Vec::new);
    let known = &known;
    rayon::in_place_scope(|scope| {
        let mut slots = parts.iter_mut().zip(items.chunks(per_core));
        let first = slots.next();
        for (slot, part) in slots {
            scope.spawn(move |_| *slot = SignedEntry::decode_batch(part, known));
        }
        if let Some((slot, part)) = first {
            *slot = SignedEntry::decode_batch(part, known);
        }
    });
    parts.into_iter().flatten().collect()
}

/// The caller's key for `kid` when it has one, else one decompressed earlier into `decoded`,
/// else `kid` checked and decompressed now (and kept in `decoded`).
fn key_for(
    kid: &KeyId,
    known: &impl Fn(&KeyId) -> Option<PublicKey>,
    decoded: &mut Vec<PublicKey>,
) -> Result<PublicKey, RecordError> {
    let cached = known(kid)
        .filter(|k| k.id() == *kid)
        .or_else(|| decoded.iter().find(|k| k.id() == *kid).copied());
    if let Some(k) = cached {
        return Ok(k);
    }
    let k = kid.public_key()?;
    decoded.push(k);
    Ok(k)
}

/// The canonical protected header `{1: -8, 4: kid}` as bytes (`a2 01 27 04 58 20 ‖ kid`,
/// 38 bytes).
pub fn protected_header(kid: &KeyId) -> Vec<u8> {
    encode::protected(kid).to_vec()
}

/// The bytes that are signed: `["Signature1", protected, h'', payload]` (RFC 9052 §4.4).
pub fn sig_structure(protected: &[u8], payload: &[u8]) -> Vec<u8> {
    encode::sig_structure(protected, payload)
}

/// An entry, and its protected header, payload and signature as they lie in the envelope.
type Parsed<'a> = (ProvEntry, &'a [u8], &'a [u8], [u8; 64]);

/// Structural decoding without the signature check: the envelope is scanned
/// (`cbor::check_item`), its four items read in place (`reader.rs`), the payload decoded by
/// [`super::decode_payload`], and the bytes compared with the envelope re-encoded from what was
/// read.
fn parse(bytes: &[u8]) -> Result<Parsed<'_>, RecordError> {
    check_item(bytes)?;
    let mut r = Reader::at(bytes, 0);
    if r.tag()? != Some(TAG_COSE_SIGN1) {
        return Err(RecordError::WrongTag);
    }
    const FOUR: &str = "an array of 4 items";
    if r.array("COSE_Sign1", FOUR)? != 4 {
        return Err(RecordError::WrongType {
            field: "COSE_Sign1",
            want: FOUR,
        });
    }
    // Each item's offset; the types are checked in the order the format states them (byte
    // strings first, then the empty unprotected header).
    let mut at = [0usize; 4];
    for slot in &mut at {
        *slot = r.pos();
        r.skip()?;
    }
    const BSTRS: &str = "byte strings for protected, payload and signature";
    let bstr = |i: usize| Reader::at(bytes, at[i]).bytes("COSE_Sign1", BSTRS);
    let (protected, payload, signature) = (bstr(0)?, bstr(2)?, bstr(3)?);
    if Reader::at(bytes, at[1]).map("unprotected") != Ok(0) {
        return Err(RecordError::UnprotectedHeader);
    }
    let kid = parse_protected(protected)?;
    let signature: [u8; 64] = signature.try_into().map_err(|_| RecordError::WrongType {
        field: "signature",
        want: "a 64-byte byte string",
    })?;
    let entry = super::decode_payload(payload)?;
    if entry.writer != kid {
        return Err(RecordError::WriterMismatch);
    }
    if encode::envelope(protected, payload, &signature) != bytes {
        return Err(RecordError::NonCanonical);
    }
    Ok((entry, protected, payload, signature))
}

/// The `kid` of a protected header that is exactly `{1: -8, 4: kid}` in deterministic CBOR
/// (`a2 01 27 04 58 20 ‖ kid`): the only encoding [`encode::protected`] writes, so any other
/// bytes, whatever they decode to, are [`RecordError::BadProtectedHeader`].
fn parse_protected(protected: &[u8]) -> Result<KeyId, RecordError> {
    let kid: [u8; 32] = protected
        .get(PROTECTED_PREFIX.len()..)
        .filter(|_| protected.starts_with(&PROTECTED_PREFIX))
        .and_then(|kid| kid.try_into().ok())
        .ok_or(RecordError::BadProtectedHeader)?;
    let kid = KeyId(kid);
    if encode::protected(&kid)[..] != protected[..] {
        return Err(RecordError::BadProtectedHeader);
    }
    Ok(kid)
}

/// The entry `id` from `bytes` that this process verified before (signature included), parsed
/// as strictly as [`SignedEntry::decode`] without verifying the signature again: `None` when
/// `bytes` are not the entry's (their leaf hash is not `id`). Sound because `id` is the
/// RFC 6962 leaf hash of the very bytes that were verified (`spec/record.md` §1), so bytes with
/// that hash are those bytes; a caller must pass only ids it verified itself.
pub(crate) fn reparse_verified(
    bytes: &[u8],
    id: EntryId,
) -> Result<Option<SignedEntry>, RecordError> {
    if EntryId::of_cose(bytes) != id {
        return Ok(None);
    }
    let (entry, ..) = parse(bytes)?;
    Ok(Some(SignedEntry {
        entry,
        cose: bytes.to_vec(),
        id,
    }))
}

/// Parses COSE_Sign1 bytes as strictly as [`SignedEntry::decode`] but does NOT verify the
/// signature. Only for entries this crate already verified when they were appended (internal
/// recomputation of derived state such as quarantine reach); never for untrusted bytes.
pub(crate) fn parse_unverified(bytes: &[u8]) -> Result<ProvEntry, RecordError> {
    Ok(parse(bytes)?.0)
}
