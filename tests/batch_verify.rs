//! M2 batch verification (`spec/record.md` §2.3–2.4): a batch gives, entry by entry, the answers
//! of checking each entry alone, including on entries whose signature encodings are bad, and the
//! cofactored rule accepts the two known-answer entries that only the key holder can make.

use memlineage::record::decode_on_all_cores;
use memlineage::record::{KeyId, Kind, ProvEntry, PublicKey, RecordError, SignedEntry, WriterKey};
use proptest::prelude::*;

#[path = "common/sig_support.rs"]
mod sig_support;

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
