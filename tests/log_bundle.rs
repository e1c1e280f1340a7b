//! Offline proof bundles end to end: real signed entries in a log, a checkpoint, the
//! tlog-proof@v1 text, and everything an offline verifier rejects.

#[path = "common/log_support.rs"]
mod support;

use memlineage::log::{
    prove_inclusion, tree_root, BundleError, CheckpointError, InclusionProof, LogSigner,
    ProofBundle, ProofError, TlogProof, MAX_BUNDLE_BYTES, TLOG_PROOF_HEADER,
};
use memlineage::record::{Kind, ProvEntry, SignedEntry, WriterKey};
use proptest::prelude::*;
use support::{test_signer, MemLog};

struct Fixture {
    signer: LogSigner,
    log: MemLog,
    entries: Vec<SignedEntry>,
}

fn fixture(n: u64) -> Fixture {
    let writer = WriterKey::for_label("agent");
    let mut log = MemLog::default();
    let mut entries = Vec::new();
    for i in 0..n {
        let content = format!("fact {i}");
        let e = ProvEntry::new(writer.key_id(), Kind::Fact, content.as_bytes()).with_time_ms(i);
        let signed = SignedEntry::sign(e, &writer).unwrap();
        log.append(signed.id());
        entries.push(signed);
    }
    Fixture {
        signer: test_signer(),
        log,
        entries,
    }
}

impl Fixture {
    fn bundle(&self, index: u64, size: u64) -> ProofBundle {
        let root = tree_root(size, &self.log).unwrap();
        ProofBundle {
            entry: self.entries[index as usize].cose().to_vec(),
            proof: prove_inclusion(size, index, &self.log).unwrap(),
            checkpoint: self.signer.sign(size, &root),
        }
    }
}

#[test]
fn round_trip_and_verify_every_leaf() {
    let f = fixture(11);
    let verifier = f.signer.verifier();
    for size in 1..=11 {
        for index in 0..size {
            let b = f.bundle(index, size);
            let text = b.to_text();
            assert!(text.starts_with(&format!("{TLOG_PROOF_HEADER}\nextra ")));
            assert!(text.contains(&format!("\nindex {index}\n")));
            let parsed = ProofBundle::parse(text.as_bytes()).unwrap();
            assert_eq!(parsed, b);
            let (entry, cp) = parsed.verify(&verifier).unwrap();
            assert_eq!(entry, f.entries[index as usize]);
            assert_eq!(
                (cp.size(), cp.root()),
                (size, tree_root(size, &f.log).unwrap())
            );
            // The generic parser sees the same proof, with the entry as `extra`.
            let t = TlogProof::parse(text.as_bytes()).unwrap();
            assert_eq!(t.extra.as_deref(), Some(b.entry.as_slice()));
            assert_eq!(t.to_text(), text);
        }
    }
}

#[test]
fn offline_verifier_rejects() {
    let f = fixture(11);
    let v = f.signer.verifier();
    let good = f.bundle(5, 11);
    good.verify(&v).unwrap();

    let mut b = good.clone();
    let last = b.entry.len() - 1;
    b.entry[last] ^= 1; // inside the signature
    assert_eq!(
        b.verify(&v).unwrap_err(),
        BundleError::Entry(memlineage::record::RecordError::BadSignature)
    );

    let mut b = good.clone();
    b.entry = f.entries[6].cose().to_vec(); // a valid entry, but not leaf 5
    assert_eq!(
        b.verify(&v).unwrap_err(),
        BundleError::Proof(ProofError::RootMismatch)
    );

    let mut b = good.clone();
    b.proof.index = 4;
    assert_eq!(
        b.verify(&v).unwrap_err(),
        BundleError::Proof(ProofError::RootMismatch)
    );

    let mut b = good.clone();
    b.proof.index = 11;
    assert_eq!(
        b.verify(&v).unwrap_err(),
        BundleError::Proof(ProofError::IndexOutOfRange {
            index: 11,
            size: 11
        })
    );

    let mut b = good.clone();
    b.proof.path[1][0] ^= 0x80;
    assert_eq!(
        b.verify(&v).unwrap_err(),
        BundleError::Proof(ProofError::RootMismatch)
    );

    let mut b = good.clone();
    b.proof.path.pop();
    assert!(matches!(
        b.verify(&v).unwrap_err(),
        BundleError::Proof(ProofError::WrongPathLength { got: 3, want: 4 })
    ));

    // The proof is for size 11; a (genuine) checkpoint for size 10 does not fit it.
    let mut b = good.clone();
    b.checkpoint = f.signer.sign(10, &tree_root(10, &f.log).unwrap());
    assert!(matches!(b.verify(&v).unwrap_err(), BundleError::Proof(_)));

    let other = LogSigner::new(f.signer.origin(), WriterKey::for_label("other")).unwrap();
    let mut b = good.clone();
    b.checkpoint = other.sign(11, &tree_root(11, &f.log).unwrap());
    assert_eq!(
        b.verify(&v).unwrap_err(),
        BundleError::Checkpoint(CheckpointError::UnknownKey)
    );

    let mut b = good.clone();
    let pos = b.checkpoint.iter().position(|&c| c == b'\n').unwrap() + 1;
    b.checkpoint[pos] = b'9'; // size line "11" -> "91"
    assert_eq!(
        b.verify(&v).unwrap_err(),
        BundleError::Checkpoint(CheckpointError::BadSignature)
    );
}

/// Every strict prefix of a bundle text and every single-byte change either fails to parse or
/// fails to verify; none panics.
#[test]
fn truncations_and_byte_flips_never_verify() {
    let f = fixture(6);
    let v = f.signer.verifier();
    let text = f.bundle(2, 6).to_text().into_bytes();
    for len in 0..text.len() {
        let got = ProofBundle::parse(&text[..len]).and_then(|b| b.verify(&v).map(|_| ()));
        assert!(got.is_err(), "prefix of {len} bytes verified");
    }
    for i in 0..text.len() {
        let mut t = text.clone();
        t[i] ^= 0x01;
        let got = ProofBundle::parse(&t).and_then(|b| b.verify(&v).map(|_| ()));
        assert!(got.is_err(), "byte {i} flipped and still verified");
    }
}

#[test]
fn size_bound() {
    let mut t = format!("{TLOG_PROOF_HEADER}\nindex 0\n\n").into_bytes();
    t.resize(MAX_BUNDLE_BYTES + 1, b'a');
    assert_eq!(
        ProofBundle::parse(&t).unwrap_err(),
        BundleError::TooLarge {
            got: MAX_BUNDLE_BYTES + 1,
            max: MAX_BUNDLE_BYTES
        }
    );
    // A bundle whose path is absurdly long for any tree is rejected by the parser.
    let b = ProofBundle {
        entry: vec![1],
        proof: InclusionProof {
            index: 0,
            path: vec![[0; 32]; 65],
        },
        checkpoint: b"x".to_vec(),
    };
    assert!(matches!(
        ProofBundle::parse(b.to_text().as_bytes()),
        Err(BundleError::Malformed { line: 68, .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary bytes: the parsers and the checkpoint verifier return, never panic.
    #[test]
    fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = TlogProof::parse(&bytes);
        let _ = ProofBundle::parse(&bytes);
        let _ = test_signer().verifier().verify(&bytes);
    }

    /// Arbitrary structurally valid tlog-proofs round-trip through the text form.
    #[test]
    fn tlog_proof_round_trip(
        extra in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
        index in any::<u64>(),
        path in proptest::collection::vec(any::<[u8; 32]>(), 0..=64),
        checkpoint in "[a-z./]{1,20}\n[0-9]{1,5}\n[A-Za-z0-9+/=]{4,44}\n\n\u{2014} [a-z]{1,8} [A-Za-z0-9+/=]{8,20}\n",
    ) {
        let p = TlogProof { extra, index, path, checkpoint: checkpoint.into_bytes() };
        let text = p.to_text();
        prop_assert_eq!(TlogProof::parse(text.as_bytes()).unwrap(), p);
    }
}
