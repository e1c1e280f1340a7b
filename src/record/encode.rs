//! Direct deterministic CBOR encoder for the write path: the payload (`spec/record.md` §3),
//! the Sig_structure (RFC 9052 §4.4) and the COSE_Sign1 envelope (RFC 9052 §4.2), written
//! straight into byte buffers with no intermediate `ciborium::Value` tree.
//!
//! Every head is written in shortest form with a definite length (RFC 8949 §4.2.1, "Core
//! Deterministic Encoding Requirements"); map keys are the unsigned integers of
//! `spec/record.md` §3, written in ascending order (0..=23 are one byte each, so ascending
//! numeric order is also bytewise order). The output is byte-identical to what ciborium writes
//! for the equivalent `Value` (the previous encoder, kept as the test oracle in
//! `oracle.rs`, and compared on random entries by the tests below).
//!
//! Signing builds the Sig_structure once, in one buffer, with the payload encoded in place;
//! the envelope then copies the protected header and payload out of it (three allocations
//! per signed entry: the message, a head of at most 9 bytes, the envelope; the `Value` path
//! made dozens).

use super::fields::{
    K_ATTRIBUTION, K_BINDING, K_CONTENT, K_CONTEXT, K_KIND, K_PARENTS, K_SOURCE, K_TARGET, K_TIME,
    K_VERSION, K_WRITER,
};
use super::{KeyId, ProvEntry};
use std::ops::Range;

/// CBOR major type 0: unsigned integer (RFC 8949 §3.1).
pub(super) const MAJOR_UINT: u8 = 0;
/// Major type 2: byte string.
pub(super) const MAJOR_BYTES: u8 = 2;
/// Major type 3: text string.
pub(super) const MAJOR_TEXT: u8 = 3;
/// Major type 4: array.
pub(super) const MAJOR_ARRAY: u8 = 4;
/// Major type 5: map.
pub(super) const MAJOR_MAP: u8 = 5;
/// Major type 6: tag.
pub(super) const MAJOR_TAG: u8 = 6;

/// The protected header `{1: -8, 4: h'<32 bytes>'}` before the kid: map(2), key 1 (`alg`),
/// -8 (EdDSA, RFC 9053 §2.2), key 4 (`kid`), bstr head of length 32.
pub(super) const PROTECTED_PREFIX: [u8; 6] = [0xa2, 0x01, 0x27, 0x04, 0x58, 0x20];

/// Length of the protected header: prefix plus the 32-byte kid.
pub(crate) const PROTECTED_LEN: usize = PROTECTED_PREFIX.len() + 32;

/// The Sig_structure's opening: array(4), text(10) "Signature1" (RFC 9052 §4.4).
const SIG_STRUCTURE_PREFIX: &[u8] = b"\x84\x6aSignature1";

/// CBOR tag of COSE_Sign1 (RFC 9052 §2).
pub(super) const TAG_COSE_SIGN1: u64 = 18;

/// Appends a head of major type `major` with argument `n` in shortest form
/// (RFC 8949 §3 and §4.2.1).
fn head(out: &mut Vec<u8>, major: u8, n: u64) {
    let m = major << 5;
    // The casts below are exact: each arm bounds `n` to the target width.
    if n < 24 {
        out.push(m | n as u8);
    } else if n <= u64::from(u8::MAX) {
        out.extend_from_slice(&[m | 24, n as u8]);
    } else if n <= u64::from(u16::MAX) {
        out.push(m | 25);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else if n <= u64::from(u32::MAX) {
        out.push(m | 26);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn uint(out: &mut Vec<u8>, n: u64) {
    head(out, MAJOR_UINT, n);
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    head(out, MAJOR_BYTES, b.len() as u64);
    out.extend_from_slice(b);
}

fn text(out: &mut Vec<u8>, s: &str) {
    head(out, MAJOR_TEXT, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Appends the deterministic payload of `e` (`spec/record.md` §3): a map with keys 0..=8,
/// then 9 (`target`) and 10 (`binding`) when present.
pub(crate) fn payload_into(out: &mut Vec<u8>, e: &ProvEntry) {
    let fields = 9 + u64::from(e.target.is_some()) + u64::from(e.binding.is_some());
    head(out, MAJOR_MAP, fields);
    uint(out, K_VERSION);
    uint(out, e.version);
    uint(out, K_WRITER);
    bytes(out, &e.writer.0);
    uint(out, K_KIND);
    uint(out, e.kind.code());
    uint(out, K_CONTENT);
    bytes(out, &e.content_hash.0);
    uint(out, K_SOURCE);
    bytes(out, &e.source_hash.0);
    uint(out, K_CONTEXT);
    bytes(out, &e.context_hash.0);
    uint(out, K_PARENTS);
    head(out, MAJOR_ARRAY, e.parents.len() as u64);
    for p in &e.parents {
        head(out, MAJOR_ARRAY, 2);
        bytes(out, &p.id.0);
        uint(out, u64::from(p.weight.millionths()));
    }
    uint(out, K_TIME);
    uint(out, e.time_ms);
    uint(out, K_ATTRIBUTION);
    uint(out, e.attribution.code());
    if let Some(t) = &e.target {
        uint(out, K_TARGET);
        bytes(out, &t.0);
    }
    if let Some(b) = &e.binding {
        uint(out, K_BINDING);
        // The binding map: 1 key, 2 role, 3 name (`spec/record.md` §3).
        head(out, MAJOR_MAP, 3);
        uint(out, 1);
        bytes(out, &b.key.0);
        uint(out, 2);
        uint(out, b.role.code());
        uint(out, 3);
        text(out, &b.name);
    }
}

/// Payload bytes of a typical entry (2 parents, no binding) plus slack: one allocation.
const PAYLOAD_CAPACITY: usize = 320;

/// The deterministic payload of `e` as a new buffer.
pub(crate) fn payload(e: &ProvEntry) -> Vec<u8> {
    let mut out = Vec::with_capacity(PAYLOAD_CAPACITY);
    payload_into(&mut out, e);
    out
}

/// The protected header `{1: -8, 4: kid}` (`a2 01 27 04 58 20 ‖ kid`).
pub(crate) fn protected(kid: &KeyId) -> [u8; PROTECTED_LEN] {
    let mut out = [0u8; PROTECTED_LEN];
    out[..PROTECTED_PREFIX.len()].copy_from_slice(&PROTECTED_PREFIX);
    out[PROTECTED_PREFIX.len()..].copy_from_slice(&kid.0);
    out
}

/// `["Signature1", protected, h'', payload]` for given protected and payload bytes.
pub(crate) fn sig_structure(protected: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(SIG_STRUCTURE_PREFIX.len() + protected.len() + payload.len() + 8);
    out.extend_from_slice(SIG_STRUCTURE_PREFIX);
    bytes(&mut out, protected);
    bytes(&mut out, &[]);
    bytes(&mut out, payload);
    out
}

/// A Sig_structure built for signing `e`, with where its protected header and payload lie.
pub(crate) struct ToSign {
    /// The Sig_structure bytes (the Ed25519 message).
    pub(crate) message: Vec<u8>,
    /// The protected header's bytes within `message`.
    pub(crate) protected: Range<usize>,
    /// The payload's bytes within `message`.
    pub(crate) payload: Range<usize>,
}

/// The Sig_structure of `e` (kid = `e.writer`), with the payload encoded in place.
pub(crate) fn to_sign(e: &ProvEntry) -> ToSign {
    let mut message =
        Vec::with_capacity(SIG_STRUCTURE_PREFIX.len() + 2 + PROTECTED_LEN + 4 + PAYLOAD_CAPACITY);
    message.extend_from_slice(SIG_STRUCTURE_PREFIX);
    bytes(&mut message, &protected(&e.writer));
    let protected = message.len() - PROTECTED_LEN..message.len();
    bytes(&mut message, &[]);
    // The payload's length is known only once it is written: encode it in place, then insert
    // its shortest bstr head in front of it (a move of a few hundred bytes).
    let start = message.len();
    payload_into(&mut message, e);
    let len = message.len() - start;
    let mut bstr = Vec::with_capacity(9);
    head(&mut bstr, MAJOR_BYTES, len as u64);
    message.splice(start..start, bstr.iter().copied());
    let payload = start + bstr.len()..message.len();
    ToSign {
        message,
        protected,
        payload,
    }
}

/// The COSE_Sign1 envelope `18([protected, {}, payload, signature])`.
pub(crate) fn envelope(protected: &[u8], payload: &[u8], signature: &[u8; 64]) -> Vec<u8> {
    // Tag and array heads (2 bytes), three bstr heads (at most 3 bytes each here), the map.
    let mut out = Vec::with_capacity(protected.len() + payload.len() + signature.len() + 16);
    head(&mut out, MAJOR_TAG, TAG_COSE_SIGN1);
    head(&mut out, MAJOR_ARRAY, 4);
    bytes(&mut out, protected);
    head(&mut out, MAJOR_MAP, 0);
    bytes(&mut out, payload);
    bytes(&mut out, signature);
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::oracle;
    use super::super::{
        Attribution, EntryId, Hash32, KeyBinding, KeyId, Kind, Parent, ProvEntry, Role,
        SignedEntry, Weight, WriterKey,
    };
    use super::*;
    use ciborium::Value;
    use proptest::prelude::*;

    /// Heads at every width boundary equal ciborium's (major types 0, 2, 3, 4, 5, 6).
    #[test]
    fn heads_at_width_boundaries_match_ciborium() {
        let ns = [
            0,
            23,
            24,
            255,
            256,
            65_535,
            65_536,
            u64::from(u32::MAX),
            u64::from(u32::MAX) + 1,
            u64::MAX,
        ];
        for n in ns {
            let mut got = Vec::new();
            uint(&mut got, n);
            assert_eq!(got, oracle::encode(&Value::Integer(n.into())), "uint {n}");
            let mut got = Vec::new();
            head(&mut got, MAJOR_TAG, n);
            got.push(0x00);
            let want = oracle::encode(&Value::Tag(n, Box::new(Value::Integer(0.into()))));
            assert_eq!(got, want, "tag {n}");
        }
        for len in [0usize, 23, 24, 255, 256, 65_535, 65_536] {
            let b = vec![0xabu8; len];
            let mut got = Vec::new();
            bytes(&mut got, &b);
            assert_eq!(got, oracle::encode(&Value::Bytes(b.clone())), "bstr {len}");
            let s = "é".repeat(len / 2) + &"x".repeat(len % 2);
            let mut got = Vec::new();
            text(&mut got, &s);
            assert_eq!(got, oracle::encode(&Value::Text(s)), "tstr {len}");
            let items = vec![Value::Integer(1.into()); len.min(300)];
            let mut got = Vec::new();
            head(&mut got, MAJOR_ARRAY, items.len() as u64);
            for _ in &items {
                uint(&mut got, 1);
            }
            assert_eq!(got, oracle::encode(&Value::Array(items)), "array {len}");
            let pairs = vec![(Value::Integer(1.into()), Value::Integer(2.into())); len.min(300)];
            let mut got = Vec::new();
            head(&mut got, MAJOR_MAP, pairs.len() as u64);
            for _ in &pairs {
                uint(&mut got, 1);
                uint(&mut got, 2);
            }
            assert_eq!(got, oracle::encode(&Value::Map(pairs)), "map {len}");
        }
    }

    const KINDS: [Kind; 7] = [
        Kind::Prompt,
        Kind::ToolResult,
        Kind::Summary,
        Kind::Fact,
        Kind::ToolCall,
        Kind::Tombstone,
        Kind::Keyring,
    ];

    /// Makes `e` pass [`ProvEntry::check`] while keeping its random field values where the
    /// rules allow: version 1, parents sorted and unique, the kind's own field only, a
    /// binding of a real key with a name of at most `MAX_NAME_BYTES`.
    pub(in crate::record) fn make_valid(mut e: ProvEntry, writer: &WriterKey) -> ProvEntry {
        e.version = super::super::FORMAT_VERSION;
        e.writer = writer.key_id();
        e.parents.sort();
        e.parents.dedup_by_key(|p| p.id);
        if e.kind != Kind::Tombstone {
            e.target = None;
        } else if e.target.is_none() {
            e.target = Some(EntryId(e.content_hash.0));
        }
        if e.kind != Kind::Keyring {
            e.binding = None;
        } else {
            let mut b = e.binding.take().unwrap_or(KeyBinding {
                key: writer.key_id(),
                role: Role::User,
                name: String::new(),
            });
            b.key = WriterKey::for_label(&b.name).key_id();
            while b.name.len() > super::super::MAX_NAME_BYTES {
                b.name.pop();
            }
            e.binding = Some(b);
        }
        e
    }

    fn hash32() -> impl Strategy<Value = [u8; 32]> {
        any::<[u8; 32]>()
    }

    /// Any field values, valid or not: the encoders must agree on everything they are given.
    pub(in crate::record) fn entry() -> impl Strategy<Value = ProvEntry> {
        let kind = prop::sample::select(KINDS.to_vec());
        let attribution = prop::sample::select(vec![
            Attribution::Coarse,
            Attribution::LmSelfEval,
            Attribution::Attention,
            Attribution::Manual,
        ]);
        let role = prop::sample::select(vec![
            Role::Log,
            Role::User,
            Role::System,
            Role::Agent,
            Role::Tool,
            Role::External,
        ]);
        let parent = (hash32(), 0u64..=1_000_000).prop_map(|(id, w)| Parent {
            id: EntryId(id),
            // In range by construction.
            weight: Weight::new(w).unwrap_or(Weight::ONE),
        });
        let binding = (hash32(), role, ".{0,300}").prop_map(|(k, role, name)| KeyBinding {
            key: KeyId(k),
            role,
            name,
        });
        (
            (any::<u64>(), hash32(), kind, hash32(), hash32(), hash32()),
            prop::collection::vec(parent, 0..30),
            (any::<u64>(), attribution),
            prop::option::of(hash32()),
            prop::option::of(binding),
        )
            .prop_map(
                |((version, writer, kind, c, s, x), parents, (time_ms, attribution), t, b)| {
                    ProvEntry {
                        version,
                        writer: KeyId(writer),
                        kind,
                        content_hash: Hash32(c),
                        source_hash: Hash32(s),
                        context_hash: Hash32(x),
                        parents,
                        time_ms,
                        attribution,
                        target: t.map(EntryId),
                        binding: b,
                    }
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The direct encoder writes exactly the bytes of the ciborium-`Value` encoder, for the
        /// payload, the protected header, the Sig_structure and the envelope.
        #[test]
        fn direct_encoder_equals_value_encoder(e in entry(), sig in any::<[u8; 32]>()) {
            let want_payload = oracle::payload(&e);
            prop_assert_eq!(&payload(&e), &want_payload);
            let want_protected = oracle::protected_header(&e.writer);
            prop_assert_eq!(&protected(&e.writer)[..], &want_protected[..]);
            let want_msg = oracle::sig_structure(&want_protected, &want_payload);
            prop_assert_eq!(&sig_structure(&want_protected, &want_payload), &want_msg);
            let t = to_sign(&e);
            prop_assert_eq!(&t.message, &want_msg);
            prop_assert_eq!(&t.message[t.protected.clone()], &want_protected[..]);
            prop_assert_eq!(&t.message[t.payload.clone()], &want_payload[..]);
            let mut signature = [0u8; 64];
            signature[..32].copy_from_slice(&sig);
            signature[32..].copy_from_slice(&sig);
            prop_assert_eq!(
                envelope(&want_protected, &want_payload, &signature),
                oracle::envelope(&want_protected, &want_payload, &signature)
            );
        }

        /// A signed entry's COSE bytes equal the old path's (Ed25519 signing is
        /// deterministic, RFC 8032 §5.1.6), and decode back to the same entry.
        #[test]
        fn signed_entry_equals_value_path(e in entry(), seed in any::<u8>()) {
            let key = WriterKey::for_label(&format!("encode/{seed}"));
            let e = make_valid(e, &key);
            prop_assert_eq!(e.check(), Ok(()));
            let s = SignedEntry::sign(e.clone(), &key).map_err(|err| TestCaseError::fail(err.to_string()))?;
            let protected = oracle::protected_header(&e.writer);
            let payload = oracle::payload(&e);
            let signature = key.sign(&oracle::sig_structure(&protected, &payload));
            prop_assert_eq!(s.cose(), &oracle::envelope(&protected, &payload, &signature)[..]);
            let back = SignedEntry::decode(s.cose()).map_err(|err| TestCaseError::fail(err.to_string()))?;
            prop_assert_eq!(back.entry(), &e);
        }
    }
}
