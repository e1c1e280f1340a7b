//! Batch verification (`spec/record.md` §2.3–2.4): a batch gives, entry by entry, the answers
//! of checking each entry alone, including on entries whose signature encodings are bad, and the
//! cofactored rule accepts the two known-answer entries that only the key holder can make.
//!
//! Hostile inputs on which the batch paths (`SignedEntry::decode_batch`, `decode_on_all_cores`)
//! must give the one-by-one answers; every encoding of a small-order point as `R` or as the key,
//! which only the byte checks of steps 1–6 refuse (before these tests, removing the `y < p`
//! check on `R` or the x = 0 sign-bit check on keys from `src/record/verify.rs` passed the whole
//! suite).

use curve25519_dalek::edwards::CompressedEdwardsY;
use curve25519_dalek::Scalar;
use memlineage::record::decode_on_all_cores;
use memlineage::record::{encode_payload, protected_header, sig_structure};
use memlineage::record::{KeyId, Kind, ProvEntry, PublicKey, RecordError, SignedEntry, WriterKey};
use proptest::prelude::*;
use sha2::{Digest, Sha512};

#[path = "common/sig_support.rs"]
mod sig_support;

use sig_support::secret_scalar;

#[derive(serde::Deserialize)]
struct Vectors {
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    cose_hex: String,
    id_hex: String,
}

fn cofactored() -> Vec<(String, Vec<u8>, String)> {
    let text = include_str!("vectors/cofactored.json");
    let v: Vectors = serde_json::from_str(text).expect("cofactored.json parses");
    v.cases
        .into_iter()
        .map(|c| (c.name, hex::decode(c.cose_hex).expect("hex"), c.id_hex))
        .collect()
}

/// The vectors verify under the crate's rule, and `verify_strict` (cofactorless) rejects them:
/// they are exactly the signatures on which the two rules differ.
#[test]
fn cofactored_vectors_accepted_and_refused_by_verify_strict() {
    let cases = cofactored();
    assert_eq!(cases.len(), 2);
    for (name, cose, id_hex) in &cases {
        let e = SignedEntry::decode(cose).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(e.id().to_string(), *id_hex, "{name}");
        // The same bytes, checked with ed25519-dalek's verify_strict over the Sig_structure.
        let n = cose.len();
        let sig = ed25519_dalek::Signature::from_bytes(cose[n - 64..].try_into().unwrap());
        let vk = ed25519_dalek::VerifyingKey::from_bytes(&e.writer().0).unwrap();
        let protected = memlineage::record::protected_header(&e.writer());
        let payload = memlineage::record::encode_payload(e.entry());
        let msg = memlineage::record::sig_structure(&protected, &payload);
        assert!(vk.verify_strict(&msg, &sig).is_err(), "{name}");
        // In a batch, beside honest entries, they are accepted too.
        let honest = entries(6);
        let mut items: Vec<&[u8]> = honest.iter().map(Vec::as_slice).collect();
        items.insert(3, cose);
        let got = SignedEntry::decode_batch(&items, |_| None);
        assert!(got.iter().all(Result::is_ok), "{name}: {got:?}");
    }
}

fn writers() -> [WriterKey; 3] {
    ["batch/a", "batch/b", "batch/c"].map(WriterKey::for_label)
}

/// `n` honest entries by three writers.
fn entries(n: usize) -> Vec<Vec<u8>> {
    let w = writers();
    (0..n)
        .map(|i| {
            let k = &w[i % 3];
            let mut e = ProvEntry::new(k.key_id(), Kind::Fact, format!("fact {i}").as_bytes());
            e.time_ms = 1_700_000_000_000 + i as u64;
            SignedEntry::sign(e, k).unwrap().cose().to_vec()
        })
        .collect()
}

const L: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

/// The ways an entry's signature can be bad, applied to the 64 bytes at the end of the COSE.
fn mutate(cose: &[u8], how: u8) -> Vec<u8> {
    let mut c = cose.to_vec();
    let n = c.len();
    let (r, s) = (n - 64, n - 32);
    let set_r = |c: &mut Vec<u8>, hex32: &str| {
        c[r..s].copy_from_slice(&hex::decode(hex32).unwrap());
    };
    match how {
        0 => c[r + 5] ^= 0x10, // R bit flip
        1 => c[s + 7] ^= 0x01, // S bit flip
        2 => c[n / 2] ^= 0x01, // payload bit flip
        3 => {
            // S + L: the same signature, malleated (S >= L)
            let mut carry = 0u16;
            for i in 0..32 {
                let v = u16::from(c[s + i]) + u16::from(L[i]) + carry;
                c[s + i] = v as u8;
                carry = v >> 8;
            }
        }
        4 => set_r(
            &mut c,
            "0100000000000000000000000000000000000000000000000000000000000000",
        ),
        5 => set_r(
            &mut c,
            "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
        ),
        6 => set_r(
            &mut c,
            "f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        ),
        7 => set_r(
            &mut c,
            "0100000000000000000000000000000000000000000000000000000000000080",
        ),
        8 => set_r(
            &mut c,
            "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        ),
        9 => c.truncate(n - 1),
        // R of small order (the identity, canonical or with the sign bit set) and S = k·a:
        // a forgery that the cofactored equation alone accepts; steps 5–6 must refuse it.
        14 => forge_small_order_r(&mut c, 0x00),
        15 => forge_small_order_r(&mut c, 0x80),
        _ => {}
    }
    c
}

/// Replaces the signature by R = identity (top byte `sign`), S = k·a mod L, with the writer's
/// secret scalar a (RFC 8032 §5.1.5) and k = SHA-512(R ‖ A ‖ Sig_structure).
fn forge_small_order_r(cose: &mut [u8], sign: u8) {
    use curve25519_dalek::Scalar;
    use sha2::{Digest, Sha512};
    let e = SignedEntry::decode(cose).expect("an honest entry");
    let w = writers()
        .into_iter()
        .find(|w| w.key_id() == e.writer())
        .unwrap();
    let a = sig_support::secret_scalar(&w);
    let mut r = [0u8; 32];
    r[0] = 1;
    r[31] = sign;
    let protected = memlineage::record::protected_header(&e.writer());
    let payload = memlineage::record::encode_payload(e.entry());
    let msg = memlineage::record::sig_structure(&protected, &payload);
    let k = Scalar::from_hash(
        Sha512::new()
            .chain_update(r)
            .chain_update(e.writer().0)
            .chain_update(msg),
    );
    let n = cose.len();
    cose[n - 64..n - 32].copy_from_slice(&r);
    cose[n - 32..].copy_from_slice((k * a).as_bytes());
}

fn answer(r: &Result<SignedEntry, RecordError>) -> Result<String, RecordError> {
    r.as_ref().map(|e| e.id().to_string()).map_err(Clone::clone)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any mix of honest, mutated and cofactored-vector entries: the batch, the batch over
    /// all cores and one-by-one decoding give the same answer for every entry.
    #[test]
    fn batch_answers_equal_single_answers(
        picks in prop::collection::vec((0usize..40, 0u8..16), 0..72),
        cache_keys in any::<bool>(),
    ) {
        let honest = entries(40);
        let extra = cofactored();
        let items: Vec<Vec<u8>> = picks
            .iter()
            .map(|&(i, how)| match how {
                12 => extra[0].1.clone(),
                13 => extra[1].1.clone(),
                _ => mutate(&honest[i], how),
            })
            .collect();
        let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        let keys: Vec<PublicKey> = writers().iter().map(|w| w.key_id().public_key().unwrap()).collect();
        let known = |k: &KeyId| {
            if cache_keys { keys.iter().find(|p| p.id() == *k).copied() } else { None }
        };
        let single: Vec<_> = refs.iter().map(|b| answer(&SignedEntry::decode(b))).collect();
        let cached: Vec<_> =
            refs.iter().map(|b| answer(&SignedEntry::decode_with_keys(b, known))).collect();
        let batch: Vec<_> = SignedEntry::decode_batch(&refs, known).iter().map(answer).collect();
        let cores: Vec<_> = decode_on_all_cores(&refs, known).iter().map(answer).collect();
        prop_assert_eq!(&single, &cached);
        prop_assert_eq!(&single, &batch);
        prop_assert_eq!(&single, &cores);
        // The mutations are really bad, the honest and cofactored entries really good.
        for ((&(_, how), a), b) in picks.iter().zip(&single).zip(&items) {
            prop_assert_eq!(a.is_ok(), (10..14).contains(&how), "mutation {} of {} bytes", how, b.len());
        }
    }
}

/// COSE_Sign1 bytes for `entry` (any writer, valid or not) with the 64 signature bytes `sig`.
fn envelope(entry: &ProvEntry, sig: &[u8; 64]) -> Vec<u8> {
    let protected = protected_header(&entry.writer);
    let payload = encode_payload(entry);
    let mut out = vec![0xd2, 0x84, 0x58, 0x26];
    out.extend_from_slice(&protected);
    out.push(0xa0);
    match payload.len() {
        n if n < 24 => out.push(0x40 | n as u8),
        n if n < 256 => out.extend_from_slice(&[0x58, n as u8]),
        n => {
            out.push(0x59);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    out.extend_from_slice(&payload);
    out.extend_from_slice(&[0x58, 0x40]);
    out.extend_from_slice(sig);
    out
}

/// The Sig_structure of `entry`.
fn message(entry: &ProvEntry) -> Vec<u8> {
    sig_structure(&protected_header(&entry.writer), &encode_payload(entry))
}

fn k_of(r: &[u8; 32], kid: &KeyId, msg: &[u8]) -> Scalar {
    Scalar::from_hash(
        Sha512::new()
            .chain_update(r)
            .chain_update(kid.0)
            .chain_update(msg),
    )
}

fn hex32(s: &str) -> [u8; 32] {
    hex::decode(s).unwrap().try_into().unwrap()
}

/// Every encoding of a small-order point that a decoder may accept: the eight canonical ones
/// and the six non-canonical ones (y = p and y = p + 1 with either sign bit, and x = 0 with the
/// sign bit set: the identity and (0, -1)).
fn small_order_encodings() -> Vec<[u8; 32]> {
    let mut v: Vec<[u8; 32]> = [
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        // non-canonical
        "0100000000000000000000000000000000000000000000000000000000000080",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    ]
    .iter()
    .map(|h| hex32(h))
    .collect();
    // Sanity: each decompresses (curve25519-dalek accepts non-canonical encodings) to a point
    // of small order.
    for e in &v {
        let p = CompressedEdwardsY(*e).decompress().expect("a point");
        assert!(p.is_small_order(), "{}", hex::encode(e));
    }
    v.dedup();
    assert_eq!(v.len(), 14);
    v
}

fn fact(writer: KeyId, i: usize) -> ProvEntry {
    let mut e = ProvEntry::new(writer, Kind::Fact, format!("fact {i}").as_bytes());
    e.time_ms = 1_700_000_000_000 + i as u64;
    e
}

type Answers = Vec<Result<String, RecordError>>;

/// The answers of `decode` one by one, of one `decode_batch`, and of `decode_on_all_cores`.
fn three_ways(items: &[Vec<u8>]) -> [Answers; 3] {
    let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
    [
        refs.iter()
            .map(|b| answer(&SignedEntry::decode(b)))
            .collect(),
        SignedEntry::decode_batch(&refs, |_| None)
            .iter()
            .map(answer)
            .collect(),
        decode_on_all_cores(&refs, |_| None)
            .iter()
            .map(answer)
            .collect(),
    ]
}

/// Each encoding of a small-order `R`, with `S = k·a` (which the cofactored equation alone
/// accepts: `[8]R` is the identity), is refused by every path, alone and among honest entries.
#[test]
fn small_order_r_forgeries_refused_in_every_encoding() {
    let w = WriterKey::for_label("review/forger");
    let a = secret_scalar(&w);
    let mut items = Vec::new();
    for (i, r) in small_order_encodings().into_iter().enumerate() {
        let e = fact(w.key_id(), i);
        let k = k_of(&r, &w.key_id(), &message(&e));
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&r);
        sig[32..].copy_from_slice((k * a).as_bytes());
        let cose = envelope(&e, &sig);
        assert_eq!(
            SignedEntry::decode(&cose).unwrap_err(),
            RecordError::BadSignature,
            "R = {}",
            hex::encode(r)
        );
        items.push(cose);
        // And an honest entry between them, so that batches are mixed.
        items.push(
            SignedEntry::sign(fact(w.key_id(), 100 + i), &w)
                .unwrap()
                .cose()
                .to_vec(),
        );
    }
    let [single, batch, cores] = three_ways(&items);
    assert_eq!(single, batch);
    assert_eq!(single, cores);
    assert_eq!(single.iter().filter(|a| a.is_ok()).count(), 14);
}

/// Entries whose kid is invalid in each way (non-canonical, not a point, small order in any
/// encoding), duplicated entries, many distinct writers, empty input and sizes around the split
/// threshold: the batch paths give the one-by-one answers, with or without cached keys, and
/// with a `known` lookup that answers with the wrong key.
#[test]
fn batch_answers_equal_single_on_invalid_kids_duplicates_and_many_keys() {
    let honest: Vec<WriterKey> = (0..40)
        .map(|i| WriterKey::for_label(&format!("review/w{i}")))
        .collect();
    let signer = &honest[0];
    let mut bad_kids: Vec<[u8; 32]> = small_order_encodings();
    bad_kids.push(hex32(
        "0200000000000000000000000000000000000000000000000000000000000000",
    )); // y = 2: not a point
    bad_kids.push(hex32(
        "efffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    )); // y = p + 2
    bad_kids.push(hex32(
        "f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    )); // y = p + 3, sign bit set
    let mut pool: Vec<Vec<u8>> = Vec::new();
    for (i, kid) in bad_kids.iter().enumerate() {
        let e = fact(KeyId(*kid), i);
        let sig = signer.sign(&message(&e));
        pool.push(envelope(&e, &sig));
    }
    for (i, w) in honest.iter().enumerate() {
        pool.push(
            SignedEntry::sign(fact(w.key_id(), i), w)
                .unwrap()
                .cose()
                .to_vec(),
        );
        // A bad signature by the same writer.
        let mut bad = SignedEntry::sign(fact(w.key_id(), 1000 + i), w)
            .unwrap()
            .cose()
            .to_vec();
        let n = bad.len();
        bad[n - 40] ^= 1;
        pool.push(bad);
    }
    let cached: Vec<PublicKey> = honest
        .iter()
        .step_by(2)
        .map(|w| w.key_id().public_key().unwrap())
        .collect();
    let liar = honest[1].key_id().public_key().unwrap();
    // A deterministic shuffle with duplicates (xorshift).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    for len in [0usize, 1, 2, 3, 4, 5, 31, 32, 33, 64, 97, 150] {
        let items: Vec<&[u8]> = (0..len)
            .map(|_| pool[next(pool.len())].as_slice())
            .collect();
        let single: Vec<_> = items
            .iter()
            .map(|b| answer(&SignedEntry::decode(b)))
            .collect();
        for mode in 0..3 {
            let known = |k: &KeyId| match mode {
                0 => None,
                1 => cached.iter().find(|p| p.id() == *k).copied(),
                _ => Some(liar),
            };
            let batch: Vec<_> = SignedEntry::decode_batch(&items, known)
                .iter()
                .map(answer)
                .collect();
            let cores: Vec<_> = decode_on_all_cores(&items, known)
                .iter()
                .map(answer)
                .collect();
            assert_eq!(single, batch, "len {len} mode {mode}");
            assert_eq!(single, cores, "len {len} mode {mode}");
        }
    }
    // Every bad kid gives its class whatever path.
    for (kid, e) in bad_kids.iter().zip(&pool) {
        let got = SignedEntry::decode(e).unwrap_err();
        assert!(
            matches!(
                got,
                RecordError::WeakKey | RecordError::BadKey | RecordError::NonCanonicalKey
            ),
            "{}: {got:?}",
            hex::encode(kid)
        );
    }
}

/// A universal forgery under each encoding of a small-order key: `R = [r]B`, `S = r` satisfies
/// `[8][S]B = [8]R + [8][k]A` for every message when `[8]A` is the identity. Every encoding
/// must be refused as a key (`WeakKey`, or `NonCanonicalKey` for y >= p), alone and in a batch;
/// the two with x = 0 and the sign bit set are the ones the byte list alone does not catch.
#[test]
fn small_order_key_forgeries_refused_in_every_encoding() {
    let r = Scalar::from(0x1234_5678_9abc_def0u64);
    let big_r = (curve25519_dalek::constants::ED25519_BASEPOINT_POINT * r)
        .compress()
        .0;
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(&big_r);
    sig[32..].copy_from_slice(r.as_bytes());
    let mut items = Vec::new();
    let mut want = Vec::new();
    for (i, kid) in small_order_encodings().into_iter().enumerate() {
        let e = fact(KeyId(kid), i);
        items.push(envelope(&e, &sig));
        let y_ge_p =
            kid[0] >= 0xed && kid[1..31].iter().all(|&b| b == 0xff) && kid[31] & 0x7f == 0x7f;
        want.push(Err(if y_ge_p {
            RecordError::NonCanonicalKey
        } else {
            RecordError::WeakKey
        }));
    }
    let [single, batch, cores] = three_ways(&items);
    assert_eq!(batch, cores);
    for (i, kid) in small_order_encodings().iter().enumerate() {
        assert_eq!(single[i], want[i], "kid {}", hex::encode(kid));
    }
    assert_eq!(batch, want);
}
