//! Records (`spec/record.md`): canonical CBOR round trips, known-answer vectors, rejection of
//! every non-canonical or malleable encoding class, and interop with an independent COSE
//! implementation (coset).

use ciborium::Value;
use memlineage::record::{
    decode_payload, encode_payload, protected_header, sig_structure, Attribution, EntryId, Hash32,
    KeyBinding, Kind, Parent, ProvEntry, RecordError, Role, SignedEntry, Weight, WriterKey,
};
use proptest::prelude::*;

fn key() -> WriterKey {
    WriterKey::for_label("tests/record")
}

fn sample() -> ProvEntry {
    let k = key();
    ProvEntry::new(
        k.key_id(),
        Kind::Summary,
        b"the bill is 98.70 to UK12345678901234567890",
    )
    .with_parents(vec![
        Parent {
            id: EntryId([7; 32]),
            weight: Weight::ONE,
        },
        Parent {
            id: EntryId([3; 32]),
            weight: Weight::new(250_000).unwrap(),
        },
    ])
    .with_time_ms(1_700_000_000_000)
    .with_source_hash(Hash32::digest(b"raw bill"))
    .with_context_hash(Hash32::digest(b"context"))
    .with_attribution(Attribution::LmSelfEval)
}

/// Wraps `payload` in a COSE_Sign1 validly signed by `k`, whatever the payload's encoding.
fn sign_raw(payload: &[u8], k: &WriterKey) -> Vec<u8> {
    let protected = protected_header(&k.key_id());
    let sig = k.sign(&sig_structure(&protected, payload));
    let v = Value::Tag(
        18,
        Box::new(Value::Array(vec![
            Value::Bytes(protected),
            Value::Map(vec![]),
            Value::Bytes(payload.to_vec()),
            Value::Bytes(sig.to_vec()),
        ])),
    );
    let mut out = Vec::new();
    ciborium::into_writer(&v, &mut out).unwrap();
    out
}

fn value_of(bytes: &[u8]) -> Value {
    ciborium::from_reader(bytes).unwrap()
}

fn encode(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(v, &mut out).unwrap();
    out
}

fn map_pairs(v: Value) -> Vec<(Value, Value)> {
    match v {
        Value::Map(m) => m,
        _ => panic!("payload is a map"),
    }
}

#[test]
fn sign_decode_round_trip() {
    let s = SignedEntry::sign(sample(), &key()).unwrap();
    let d = SignedEntry::decode(s.cose()).unwrap();
    assert_eq!(d, s);
    assert_eq!(
        d.entry().parents[0].id,
        EntryId([3; 32]),
        "parents sorted by id"
    );
    assert_eq!(s.id(), EntryId::of_cose(s.cose()));
    // The protected header is exactly {1: -8, 4: kid}.
    let mut want = vec![0xa2, 0x01, 0x27, 0x04, 0x58, 0x20];
    want.extend_from_slice(&key().key_id().0);
    assert_eq!(protected_header(&key().key_id()), want);
}

#[test]
fn known_answer_vectors() {
    let text = std::fs::read_to_string("tests/vectors/record.json").unwrap();
    let vectors: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = vectors["cases"].as_array().unwrap();
    assert!(cases.len() >= 3);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let cose = hex::decode(case["cose_hex"].as_str().unwrap()).unwrap();
        let payload = hex::decode(case["payload_hex"].as_str().unwrap()).unwrap();
        let e = SignedEntry::decode(&cose).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(
            e.id().to_string(),
            case["id_hex"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(encode_payload(e.entry()), payload, "{name}");
        // Re-signing the decoded entry with the vector's seed reproduces the bytes (Ed25519 is
        // deterministic, RFC 8032 §5.1.6).
        let seed: [u8; 32] = hex::decode(case["seed_hex"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let again = SignedEntry::sign(e.entry().clone(), &WriterKey::from_seed(&seed)).unwrap();
        assert_eq!(again.cose(), &cose[..], "{name}");
    }
}

#[test]
fn independent_cose_implementation_verifies() {
    use coset::{CborSerializable, TaggedCborSerializable};
    let k = key();
    let s = SignedEntry::sign(sample(), &k).unwrap();
    let parsed = coset::CoseSign1::from_tagged_slice(s.cose()).unwrap();
    assert_eq!(
        parsed.protected.header.alg,
        Some(coset::Algorithm::Assigned(coset::iana::Algorithm::EdDSA))
    );
    assert_eq!(parsed.protected.header.key_id, k.key_id().0.to_vec());
    let vk = k.verifying_key();
    parsed
        .verify_signature(b"", |sig, data| {
            let sig = ed25519_dalek::Signature::from_slice(sig).map_err(|e| e.to_string())?;
            vk.verify_strict(data, &sig).map_err(|e| e.to_string())
        })
        .unwrap();
    // And coset re-encodes to the same bytes.
    assert_eq!(parsed.to_tagged_vec().unwrap(), s.cose());
    let _ = coset::CoseSign1::from_slice(&s.cose()[1..]).unwrap();
}

fn payload_with(mutate: impl FnOnce(&mut Vec<(Value, Value)>)) -> Vec<u8> {
    let mut pairs = map_pairs(value_of(&encode_payload(&sample())));
    mutate(&mut pairs);
    encode(&Value::Map(pairs))
}

fn reject(payload: Vec<u8>) -> RecordError {
    let cose = sign_raw(&payload, &key());
    let direct = decode_payload(&payload).unwrap_err();
    let via_cose = SignedEntry::decode(&cose).unwrap_err();
    assert_eq!(direct, via_cose, "payload and envelope decoding agree");
    direct
}

#[test]
fn rejects_unsorted_keys() {
    let e = reject(payload_with(|p| p.swap(1, 2)));
    assert_eq!(e, RecordError::UnsortedKeys);
}

#[test]
fn rejects_duplicate_keys() {
    let e = reject(payload_with(|p| {
        let dup = p[2].clone();
        p.insert(3, dup);
    }));
    assert_eq!(e, RecordError::DuplicateKey(2));
}

#[test]
fn rejects_unknown_and_missing_fields() {
    let e = reject(payload_with(|p| {
        p.push((Value::Integer(11.into()), Value::Integer(0.into())))
    }));
    assert_eq!(e, RecordError::UnknownField { key: "11".into() });
    let e = reject(payload_with(|p| {
        p.remove(7);
    }));
    assert_eq!(e, RecordError::MissingField("time"));
    let e = reject(payload_with(|p| {
        p.insert(0, (Value::Text("v".into()), Value::Integer(1.into())))
    }));
    assert!(matches!(e, RecordError::UnknownField { .. }), "{e:?}");
}

#[test]
fn rejects_floats_and_wrong_types() {
    let e = reject(payload_with(|p| p[7].1 = Value::Float(1.0)));
    assert_eq!(e, RecordError::Float);
    let e = reject(payload_with(|p| p[7].1 = Value::Bool(true)));
    assert_eq!(e, RecordError::UnsupportedSimple);
    let e = reject(payload_with(|p| p[7].1 = Value::Integer((-1).into())));
    assert_eq!(
        e,
        RecordError::WrongType {
            field: "time",
            want: "an unsigned integer"
        }
    );
    let e = reject(payload_with(|p| p[3].1 = Value::Bytes(vec![0; 31])));
    assert_eq!(
        e,
        RecordError::WrongType {
            field: "content_hash",
            want: "a 32-byte byte string"
        }
    );
    let e = reject(payload_with(|p| p[2].1 = Value::Integer(99.into())));
    assert_eq!(
        e,
        RecordError::UnknownCode {
            what: "kind",
            code: 99
        }
    );
}

#[test]
fn rejects_weights_out_of_range_and_bad_parents() {
    let e = reject(payload_with(|p| {
        p[6].1 = Value::Array(vec![Value::Array(vec![
            Value::Bytes(vec![1; 32]),
            Value::Integer(1_000_001.into()),
        ])]);
    }));
    assert_eq!(
        e,
        RecordError::Weight(memlineage::record::WeightError { got: 1_000_001 })
    );
    let pair = |b: u8| Value::Array(vec![Value::Bytes(vec![b; 32]), Value::Integer(5.into())]);
    let e = reject(payload_with(|p| {
        p[6].1 = Value::Array(vec![pair(2), pair(1)])
    }));
    assert_eq!(e, RecordError::UnsortedParents);
    let e = reject(payload_with(|p| {
        p[6].1 = Value::Array(vec![pair(2), pair(2)])
    }));
    assert_eq!(e, RecordError::DuplicateParent(EntryId([2; 32])));
}

#[test]
fn rejects_non_shortest_integers_and_indefinite_lengths() {
    let good = encode_payload(&sample());
    assert_eq!(&good[..3], &[0xa9, 0x00, 0x01], "map(9), key 0, version 1");
    // version 1 written as 0x18 0x01 (one-byte argument where the head can hold it).
    let mut long_int = good.clone();
    long_int.splice(2..3, [0x18, 0x01]);
    assert_eq!(reject(long_int), RecordError::NonShortest);
    // The map written with an indefinite length (0xbf ... 0xff).
    let mut indefinite = good.clone();
    indefinite[0] = 0xbf;
    indefinite.push(0xff);
    assert_eq!(reject(indefinite), RecordError::IndefiniteLength);
    // A map length written in a 1-byte argument.
    let mut long_len = good.clone();
    long_len.splice(0..1, [0xb8, 0x09]);
    assert_eq!(reject(long_len), RecordError::NonShortest);
    // A byte string (the content hash) whose length is written in two bytes.
    let at = good
        .windows(3)
        .position(|w| w == [0x03, 0x58, 0x20])
        .unwrap()
        + 1;
    let mut long_bstr = good.clone();
    long_bstr.splice(at..at + 2, [0x59, 0x00, 0x20]);
    assert_eq!(reject(long_bstr), RecordError::NonShortest);
}

#[test]
fn rejects_trailing_bytes_and_truncation() {
    let s = SignedEntry::sign(sample(), &key()).unwrap();
    let mut trailing = s.cose().to_vec();
    trailing.push(0x00);
    assert_eq!(
        SignedEntry::decode(&trailing).unwrap_err(),
        RecordError::TrailingBytes(1)
    );
    for cut in [0, 1, 10, s.cose().len() / 2, s.cose().len() - 1] {
        let e = SignedEntry::decode(&s.cose()[..cut]).unwrap_err();
        assert_eq!(e, RecordError::Truncated, "cut {cut}");
    }
}

#[test]
fn hostile_nesting_and_lengths_fail_fast_on_a_small_stack() {
    // 64 KiB of stack is far less than a recursive decoder would need for 60,000 levels.
    let t = std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(|| {
            let deep = [vec![0x81u8; 60_000], vec![0x00]].concat();
            let nested_maps = [[0xa1u8, 0x00].repeat(30_000), vec![0x00]].concat();
            let huge_array = [0x9bu8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
            let huge_bytes = [0x5bu8, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00];
            (
                decode_payload(&deep).unwrap_err(),
                decode_payload(&nested_maps).unwrap_err(),
                SignedEntry::decode(&huge_array).unwrap_err(),
                SignedEntry::decode(&huge_bytes).unwrap_err(),
                SignedEntry::decode(&vec![0x80; 70 * 1024]).unwrap_err(),
            )
        })
        .unwrap();
    let (deep, maps, array, bytes, big) = t.join().unwrap();
    assert!(matches!(deep, RecordError::TooDeep { .. }), "{deep:?}");
    assert!(matches!(maps, RecordError::TooDeep { .. }), "{maps:?}");
    assert_eq!(array, RecordError::Truncated);
    assert_eq!(bytes, RecordError::Truncated);
    assert!(matches!(big, RecordError::TooLarge { .. }));
}

#[test]
fn rejects_envelope_mutations() {
    let k = key();
    let s = SignedEntry::sign(sample(), &k).unwrap();
    let Value::Tag(18, inner) = value_of(s.cose()) else {
        panic!()
    };
    let Value::Array(items) = *inner else {
        panic!()
    };
    let rebuild =
        |tag: u64, items: Vec<Value>| encode(&Value::Tag(tag, Box::new(Value::Array(items))));
    assert_eq!(
        SignedEntry::decode(&rebuild(98, items.clone())).unwrap_err(),
        RecordError::WrongTag
    );
    assert_eq!(
        SignedEntry::decode(&encode(&Value::Array(items.clone()))).unwrap_err(),
        RecordError::WrongTag
    );
    let mut unprot = items.clone();
    unprot[1] = Value::Map(vec![(Value::Integer(4.into()), Value::Bytes(vec![1]))]);
    assert_eq!(
        SignedEntry::decode(&rebuild(18, unprot)).unwrap_err(),
        RecordError::UnprotectedHeader
    );
    // alg ES256 (-7) instead of EdDSA.
    let mut alg = items.clone();
    let mut hdr = vec![0xa2, 0x01, 0x26, 0x04, 0x58, 0x20];
    hdr.extend_from_slice(&k.key_id().0);
    alg[0] = Value::Bytes(hdr);
    assert_eq!(
        SignedEntry::decode(&rebuild(18, alg)).unwrap_err(),
        RecordError::BadProtectedHeader
    );
    // Another writer's kid: payload writer no longer matches.
    let other = WriterKey::for_label("someone else");
    let mut kid = items.clone();
    kid[0] = Value::Bytes(protected_header(&other.key_id()));
    assert_eq!(
        SignedEntry::decode(&rebuild(18, kid)).unwrap_err(),
        RecordError::WriterMismatch
    );
    // A flipped signature bit, a flipped payload bit.
    let mut sig = items.clone();
    if let Value::Bytes(b) = &mut sig[3] {
        b[10] ^= 1;
    }
    assert_eq!(
        SignedEntry::decode(&rebuild(18, sig)).unwrap_err(),
        RecordError::BadSignature
    );
    let mut pay = items;
    if let Value::Bytes(b) = &mut pay[2] {
        let n = b.len();
        b[n - 1] ^= 1;
    }
    assert_eq!(
        SignedEntry::decode(&rebuild(18, pay)).unwrap_err(),
        RecordError::BadSignature
    );
}

#[test]
fn rejects_signature_with_s_not_reduced() {
    // S + L: same signature, malleated (RFC 8032 §5.1.7 requires S < L).
    let k = key();
    let s = SignedEntry::sign(sample(), &k).unwrap();
    let mut bytes = s.cose().to_vec();
    let n = bytes.len();
    let sig = &mut bytes[n - 64..];
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];
    let mut carry = 0u16;
    for i in 0..32 {
        let v = u16::from(sig[32 + i]) + u16::from(L[i]) + carry;
        sig[32 + i] = v as u8;
        carry = v >> 8;
    }
    assert_eq!(
        SignedEntry::decode(&bytes).unwrap_err(),
        RecordError::BadSignature
    );
}

/// Small-order points (RFC 8032 has no rule; `verify_strict` and we reject them) and
/// non-canonical encodings (y >= p), as `kid` and as keyring bindings.
#[test]
fn rejects_weak_and_non_canonical_keys() {
    let weak = [
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    ];
    let non_canonical = [
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    ];
    let k = key();
    let forge = |kid: [u8; 32]| {
        // Whatever the signature, decoding must refuse the key first.
        let mut e = sample();
        e.writer = memlineage::record::KeyId(kid);
        let payload = encode_payload(&e);
        let protected = protected_header(&e.writer);
        let v = Value::Tag(
            18,
            Box::new(Value::Array(vec![
                Value::Bytes(protected.clone()),
                Value::Map(vec![]),
                Value::Bytes(payload.clone()),
                Value::Bytes(k.sign(&sig_structure(&protected, &payload)).to_vec()),
            ])),
        );
        SignedEntry::decode(&encode(&v)).unwrap_err()
    };
    for h in weak {
        let kid: [u8; 32] = hex::decode(h).unwrap().try_into().unwrap();
        assert_eq!(forge(kid), RecordError::WeakKey, "{h}");
        let mut ring = ProvEntry::new(k.key_id(), Kind::Keyring, b"bind");
        ring.binding = Some(KeyBinding {
            key: memlineage::record::KeyId(kid),
            role: Role::User,
            name: "w".into(),
        });
        assert_eq!(
            SignedEntry::sign(ring, &k).unwrap_err(),
            RecordError::WeakKey,
            "{h}"
        );
    }
    for h in non_canonical {
        let kid: [u8; 32] = hex::decode(h).unwrap().try_into().unwrap();
        assert_eq!(forge(kid), RecordError::NonCanonicalKey, "{h}");
    }
    // y = 2 has no x on the curve: not a point at all.
    let mut not_point = [0u8; 32];
    not_point[0] = 2;
    assert_eq!(forge(not_point), RecordError::BadKey);
}

#[test]
fn structural_rules_on_signing() {
    let k = key();
    let mut e = sample();
    e.parents.push(e.parents[0]);
    e.parents.sort();
    assert!(matches!(
        SignedEntry::sign(e, &k),
        Err(RecordError::DuplicateParent(_))
    ));
    let mut t = ProvEntry::new(k.key_id(), Kind::Tombstone, b"gone");
    assert_eq!(
        SignedEntry::sign(t.clone(), &k).unwrap_err(),
        RecordError::MissingField("target")
    );
    t.target = Some(EntryId([1; 32]));
    SignedEntry::sign(t, &k).unwrap();
    let mut f = ProvEntry::new(k.key_id(), Kind::Fact, b"x");
    f.binding = Some(KeyBinding {
        key: k.key_id(),
        role: Role::User,
        name: "u".into(),
    });
    assert_eq!(
        SignedEntry::sign(f, &k).unwrap_err(),
        RecordError::UnexpectedField("binding")
    );
    let other = WriterKey::for_label("other");
    assert_eq!(
        SignedEntry::sign(sample(), &other).unwrap_err(),
        RecordError::WriterMismatch
    );
    assert!(Weight::new(1_000_001).is_err());
    assert_eq!(Weight::from_f64(0.25).unwrap().millionths(), 250_000);
    assert!(Weight::from_f64(f64::NAN).is_err());
}

#[test]
fn error_messages_read_well() {
    assert_eq!(
        RecordError::TrailingBytes(3).to_string(),
        "trailing bytes after the CBOR item: 3 bytes"
    );
    assert_eq!(
        RecordError::NonCanonical.to_string(),
        "not deterministically encoded (RFC 8949 §4.2.1)"
    );
    assert_eq!(
        RecordError::BadSignature.to_string(),
        "signature verification failed"
    );
}

fn arb_entry() -> impl Strategy<Value = ProvEntry> {
    (
        0u64..7,
        any::<[u8; 32]>(),
        proptest::collection::btree_map(any::<[u8; 32]>(), 0u64..=1_000_000, 0..8),
        any::<u64>(),
        0u64..4,
        any::<[u8; 32]>(),
    )
        .prop_map(|(kind, content, parents, time, attr, target)| {
            let k = key();
            let kind = Kind::from_code(kind).unwrap();
            let mut e = ProvEntry::new(k.key_id(), kind, &content)
                .with_parents(
                    parents
                        .into_iter()
                        .map(|(id, w)| Parent {
                            id: EntryId(id),
                            weight: Weight::new(w).unwrap(),
                        })
                        .collect(),
                )
                .with_time_ms(time)
                .with_attribution(Attribution::from_code(attr).unwrap());
            match kind {
                Kind::Tombstone => e.target = Some(EntryId(target)),
                Kind::Keyring => {
                    e.binding = Some(KeyBinding {
                        key: k.key_id(),
                        role: Role::Agent,
                        name: "agent é".into(),
                    })
                }
                _ => {}
            }
            e
        })
}

proptest! {
    #[test]
    fn round_trip_any_entry(e in arb_entry()) {
        let s = SignedEntry::sign(e.clone(), &key()).unwrap();
        let d = SignedEntry::decode(s.cose()).unwrap();
        prop_assert_eq!(d.entry(), &e);
        prop_assert_eq!(decode_payload(&encode_payload(&e)).unwrap(), e);
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = SignedEntry::decode(&bytes);
        let _ = decode_payload(&bytes);
    }

    #[test]
    fn any_single_bit_flip_is_rejected(e in arb_entry(), pos in any::<prop::sample::Index>(), bit in 0u8..8) {
        let s = SignedEntry::sign(e, &key()).unwrap();
        let mut b = s.cose().to_vec();
        let i = pos.index(b.len());
        b[i] ^= 1 << bit;
        prop_assert!(SignedEntry::decode(&b).is_err());
    }
}
