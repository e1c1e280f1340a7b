//! Checkpoints against the C2SP example in `tests/vectors/c2sp-checkpoint-example.json`
//! (signed-note, tlog-checkpoint, tlog-cosignature and tlog-proof, cross-checked there against
//! Go's `golang.org/x/mod/sumdb/note`), plus tampering cases.

#[path = "common/log_support.rs"]
mod support;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use memlineage::log::{
    BundleError, CheckpointError, InclusionProof, LogSigner, LogVerifier, ProofBundle, ProofError,
    RootHash, TlogProof, MAX_CHECKPOINT_BYTES,
};
use memlineage::record::{EntryId, KeyId, WriterKey};
use serde_json::Value;
use signed_note::{Note, StandardSigner};

use support::{c2sp_example as example, json_str as s};

fn seed(v: &Value) -> [u8; 32] {
    hex::decode(s(v, &["log_key", "ed25519_seed_hex"]))
        .unwrap()
        .try_into()
        .unwrap()
}

fn example_signer(v: &Value) -> LogSigner {
    LogSigner::new(s(v, &["log_key", "name"]), WriterKey::from_seed(&seed(v))).unwrap()
}

fn example_verifier(v: &Value) -> LogVerifier {
    LogVerifier::from_vkey(s(v, &["log_key", "vkey"])).unwrap()
}

/// Signs arbitrary note text with the example log key through `signed_note`'s own signer (the
/// Go-format private key in the vectors), to build checkpoints our `LogSigner` never would.
fn sign_text(v: &Value, text: &str) -> Vec<u8> {
    let signer = StandardSigner::new(s(v, &["log_key", "go_x_mod_note_skey"])).unwrap();
    let mut note = Note::new(text.as_bytes(), &[]).unwrap();
    note.add_sigs(&[&signer]).unwrap();
    note.to_bytes()
}

fn root8(v: &Value) -> RootHash {
    RootHash(support::h32(s(v, &["checkpoint", "root_hex"])).unwrap())
}

#[test]
fn signer_reproduces_the_example_exactly() {
    let v = example();
    let signer = example_signer(&v);
    assert_eq!(signer.vkey(), s(&v, &["log_key", "vkey"]));
    assert_eq!(signer.origin(), "example.com/agent-memory-ledger");
    let pk = hex::decode(s(&v, &["log_key", "ed25519_public_key_hex"])).unwrap();
    assert_eq!(signer.key_id(), KeyId(pk.try_into().unwrap()));
    assert_eq!(
        format!("{:08x}", signer.note_key_id()),
        s(&v, &["log_key", "key_id_hex"])
    );
    let note = signer.sign(8, &root8(&v));
    assert_eq!(
        String::from_utf8(note.clone()).unwrap(),
        s(&v, &["checkpoint", "signed_note"])
    );
    // The signed message is exactly the body, and the signature line is the example's.
    let body = hex::decode(s(&v, &["checkpoint", "signed_message_bytes_hex"])).unwrap();
    assert_eq!(body, s(&v, &["checkpoint", "note_text"]).as_bytes());
    let sig = hex::decode(s(&v, &["checkpoint", "ed25519_signature_hex"])).unwrap();
    assert_eq!(signer.writer_key().sign(&body).to_vec(), sig);
    assert!(note.ends_with(s(&v, &["checkpoint", "signature_line"]).as_bytes()));
    // signed_note's standard signer (Go key format) gives the same bytes.
    assert_eq!(sign_text(&v, s(&v, &["checkpoint", "note_text"])), note);
}

#[test]
fn verifier_accepts_the_example() {
    let v = example();
    let verifier = example_verifier(&v);
    assert_eq!(verifier.vkey(), s(&v, &["log_key", "vkey"]));
    assert_eq!(verifier, example_signer(&v).verifier());
    let note = s(&v, &["checkpoint", "signed_note"]).as_bytes();
    let cp = verifier.verify(note).unwrap();
    assert_eq!(cp.origin(), "example.com/agent-memory-ledger");
    assert_eq!(cp.size(), 8);
    assert_eq!(cp.root(), root8(&v));
    assert_eq!(cp.note(), note);
    // A witness cosignature (type 0x04, a key we do not know) is ignored, as C2SP signed-note
    // requires of unknown signatures.
    let cosigned = s(&v, &["cosignature_v1", "cosigned_checkpoint"]).as_bytes();
    let cp2 = verifier.verify(cosigned).unwrap();
    assert_eq!((cp2.size(), cp2.root()), (8, root8(&v)));
    assert_eq!(cp2.note(), cosigned);
}

fn expect(v: &LogVerifier, note: &[u8], want: CheckpointError, case: &str) {
    assert_eq!(v.verify(note).unwrap_err(), want, "{case}");
}

/// `rejected_note_cases`, rebuilt from their descriptions.
#[test]
fn rejected_note_cases() {
    let v = example();
    let verifier = example_verifier(&v);
    let good = s(&v, &["checkpoint", "signed_note"]);
    let sig_line = s(&v, &["checkpoint", "signature_line"]);
    let body = s(&v, &["checkpoint", "note_text"]);
    let cases = v["rejected_note_cases"].as_object().unwrap();
    let mut seen = 0;
    for name in cases.keys() {
        let (note, want): (String, _) = match name.as_str() {
            "body altered (size 8 -> 9)" => (
                good.replacen("\n8\n", "\n9\n", 1),
                CheckpointError::BadSignature,
            ),
            "no blank line between text and signatures" => {
                (format!("{body}{sig_line}"), CheckpointError::MalformedNote)
            }
            "signature line missing final newline" => (
                good.trim_end_matches('\n').to_owned(),
                CheckpointError::MalformedNote,
            ),
            "ASCII hyphen instead of em dash" => {
                (good.replacen("— ", "- ", 1), CheckpointError::MalformedNote)
            }
            "control character (TAB) in text" => (
                good.replacen("ledger\n8", "ledger\t\n8", 1),
                CheckpointError::MalformedNote,
            ),
            "only unknown-key signatures" => {
                let witness = s(&v, &["cosignature_v1", "signature_line"]);
                (format!("{body}\n{witness}"), CheckpointError::UnknownKey)
            }
            "key name right but key ID wrong (treated as unknown -> no known sig)" => {
                let b64 = sig_line.rsplit(' ').next().unwrap().trim_end();
                let mut raw = BASE64.decode(b64).unwrap();
                raw[0] ^= 0xff;
                let line = sig_line.replace(b64, &BASE64.encode(raw));
                (format!("{body}\n{line}"), CheckpointError::UnknownKey)
            }
            "known key, corrupted signature" => {
                let b64 = sig_line.rsplit(' ').next().unwrap().trim_end();
                let mut raw = BASE64.decode(b64).unwrap();
                raw[10] ^= 0x01;
                let line = sig_line.replace(b64, &BASE64.encode(raw));
                (format!("{body}\n{line}"), CheckpointError::BadSignature)
            }
            "cosignature timestamp altered" => {
                // We verify only the log key; a witness cosignature is an unknown signature to
                // us, so tampering with it cannot change our result. (A witness policy, which
                // memlineage does not have, would reject it.)
                let cosigned = s(&v, &["cosignature_v1", "cosigned_checkpoint"]);
                let line = s(&v, &["cosignature_v1", "signature_line"]);
                let b64 = line.rsplit(' ').next().unwrap().trim_end();
                let mut raw = BASE64.decode(b64).unwrap();
                raw[11] ^= 0x01; // the last byte of the big-endian timestamp
                let tampered = cosigned.replace(b64, &BASE64.encode(raw));
                assert_ne!(tampered, cosigned);
                let cp = verifier.verify(tampered.as_bytes()).unwrap();
                assert_eq!(cp.size(), 8);
                seen += 1;
                continue;
            }
            other => panic!("unhandled rejected_note_case {other:?}"),
        };
        assert_ne!(note, good);
        expect(&verifier, note.as_bytes(), want, name);
        seen += 1;
    }
    assert_eq!(seen, cases.len());
}

/// `rejected_checkpoint_cases`: well-formed notes, validly signed by the log key, whose text
/// is not a valid checkpoint body.
#[test]
fn rejected_checkpoint_cases() {
    let v = example();
    let verifier = example_verifier(&v);
    let origin = s(&v, &["log_key", "name"]);
    let root = s(&v, &["checkpoint", "root_b64"]);
    let root31 = BASE64.encode(&root8(&v).0[..31]);
    let cases = v["rejected_checkpoint_cases"].as_object().unwrap();
    for name in cases.keys() {
        let text = match name.as_str() {
            "leading zero in size" => format!("{origin}\n08\n{root}\n"),
            "root 31 bytes" => format!("{origin}\n8\n{root31}\n"),
            "empty origin" => format!("\n8\n{root}\n"),
            "empty extension line" => format!("{origin}\n8\n{root}\n\n"),
            "negative size" => format!("{origin}\n-8\n{root}\n"),
            "size with plus sign" => format!("{origin}\n+8\n{root}\n"),
            "missing final newline" => {
                // A signed note's text always ends in a newline, so such a checkpoint cannot
                // even be signed: the note is malformed.
                let good = s(&v, &["checkpoint", "signed_note"]);
                let sig = s(&v, &["checkpoint", "signature_line"]);
                let note = format!("{origin}\n8\n{root}\n{sig}");
                assert_ne!(note, good);
                expect(
                    &verifier,
                    note.as_bytes(),
                    CheckpointError::MalformedNote,
                    name,
                );
                continue;
            }
            other => panic!("unhandled rejected_checkpoint_case {other:?}"),
        };
        let note = sign_text(&v, &text);
        expect(&verifier, &note, CheckpointError::MalformedBody, name);
    }
    // Further body cases.
    let bad_bodies = [
        (format!("{origin}\n8\n"), CheckpointError::MalformedBody),
        (
            format!("{origin}\n8\n{root} \n"),
            CheckpointError::MalformedBody,
        ),
        (
            format!("{origin}\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyh=\n"),
            {
                CheckpointError::MalformedBody // non-canonical base64 (trailing bits)
            },
        ),
        (
            format!("{origin}\n18446744073709551616\n{root}\n"),
            CheckpointError::MalformedBody,
        ),
    ];
    for (text, want) in bad_bodies {
        let note = sign_text(&v, &text);
        expect(&verifier, &note, want, &text);
    }
    // Extension lines are signed data, returned as they are (a memlineage ledger's labelling
    // parameters travel there, spec/log.md §4.1).
    let note = sign_text(&v, &format!("{origin}\n8\n{root}\nextension one\ntwo\n"));
    assert_eq!(
        verifier.verify(&note).unwrap().extension(),
        "extension one\ntwo\n"
    );
    // The largest size is fine.
    let note = sign_text(&v, &format!("{origin}\n18446744073709551615\n{root}\n"));
    assert_eq!(verifier.verify(&note).unwrap().size(), u64::MAX);
}

#[test]
fn tampering_and_wrong_keys() {
    let v = example();
    let signer = example_signer(&v);
    let verifier = signer.verifier();
    let note = String::from_utf8(signer.sign(8, &root8(&v))).unwrap();
    let root = s(&v, &["checkpoint", "root_b64"]);

    let tampered_root = note.replace(root, &BASE64.encode([0u8; 32]));
    expect(
        &verifier,
        tampered_root.as_bytes(),
        CheckpointError::BadSignature,
        "root",
    );
    let tampered_size = note.replacen("\n8\n", "\n7\n", 1);
    expect(
        &verifier,
        tampered_size.as_bytes(),
        CheckpointError::BadSignature,
        "size",
    );

    // Same origin, another key: the key id differs, so the line is an unknown signature.
    let other = LogSigner::new(signer.origin(), WriterKey::for_label("other")).unwrap();
    expect(
        &other.verifier(),
        note.as_bytes(),
        CheckpointError::UnknownKey,
        "wrong key",
    );
    // Same key, another name: a different key (name and id), also unknown.
    let renamed = LogSigner::new("example.com/other", WriterKey::from_seed(&seed(&v))).unwrap();
    expect(
        &renamed.verifier(),
        note.as_bytes(),
        CheckpointError::UnknownKey,
        "wrong name",
    );

    // Validly signed by the log key, but the origin line names another log.
    let foreign = sign_text(&v, &format!("example.com/another-log\n8\n{root}\n"));
    assert_eq!(
        verifier.verify(&foreign).unwrap_err(),
        CheckpointError::OriginMismatch {
            got: "example.com/another-log".into(),
            want: "example.com/agent-memory-ledger".into()
        }
    );

    // Size bound.
    let mut big = note.clone().into_bytes();
    big.resize(MAX_CHECKPOINT_BYTES + 1, b'a');
    assert!(matches!(
        verifier.verify(&big),
        Err(CheckpointError::TooLarge { .. })
    ));
    // Garbage never panics.
    for junk in [
        &b""[..],
        b"\n\n",
        b"\xff\xfe\n\n\xe2\x80\x94 a AAAA\n",
        b"a\n\n\xe2\x80\x94 \n",
    ] {
        assert!(verifier.verify(junk).is_err());
    }
}

#[test]
fn verifier_keys() {
    let v = example();
    let good = s(&v, &["log_key", "vkey"]);
    let (name, rest) = good.split_once('+').unwrap();
    let (id, key) = rest.split_once('+').unwrap();
    let cases: Vec<(String, CheckpointError)> = vec![
        (String::new(), CheckpointError::MalformedVkey),
        (name.to_owned(), CheckpointError::MalformedVkey),
        (format!("{name}+{id}"), CheckpointError::MalformedVkey),
        (
            format!("{name}+{}+{key}", id.to_uppercase()),
            CheckpointError::MalformedVkey,
        ),
        (
            format!("{name}+{id}0+{key}"),
            CheckpointError::MalformedVkey,
        ),
        (
            format!("{name}+{id}+{key}="),
            CheckpointError::MalformedVkey,
        ),
        (
            format!("{name}+{id}+{}", &key[..key.len() - 1]),
            CheckpointError::MalformedVkey,
        ),
        (
            format!("{name}+00000000+{key}"),
            CheckpointError::KeyIdMismatch {
                got: 0,
                want: 0x7321a2ce,
            },
        ),
        (format!("bad name+{id}+{key}"), CheckpointError::BadOrigin),
        (
            s(&v, &["cosignature_v1", "vkey"]).to_owned(),
            CheckpointError::UnsupportedAlgorithm { alg: 0x04 },
        ),
    ];
    for (vkey, want) in cases {
        assert_eq!(LogVerifier::from_vkey(&vkey).unwrap_err(), want, "{vkey:?}");
    }
    // A 32-byte key that is not a point (the first y = 2, 3, ... with no x), and the identity
    // point (small order).
    let not_point = (2u8..)
        .map(|y| {
            let mut pk = [0u8; 32];
            pk[0] = y;
            pk
        })
        .find(|pk| ed25519_dalek::VerifyingKey::from_bytes(pk).is_err())
        .unwrap();
    let mut identity = [0u8; 32];
    identity[0] = 1;
    for pk in [not_point, identity] {
        let mut k = vec![0x01];
        k.extend(pk);
        let vkey = format!(
            "{name}+{:08x}+{}",
            signed_note::key_id(name, &k),
            BASE64.encode(&k)
        );
        assert_eq!(
            LogVerifier::from_vkey(&vkey).unwrap_err(),
            CheckpointError::BadKey
        );
    }
}

/// The example tlog-proof (index 5 of the 8-leaf tree, cosigned checkpoint). Its leaf is raw
/// data, not a memlineage entry, and it has no `extra` line, so the parser and the inclusion
/// check are tested here and the full `ProofBundle` path in `log_bundle.rs`.
#[test]
fn tlog_proof_example() {
    let v = example();
    let text = s(&v, &["tlog_proof", "text"]);
    let proof = TlogProof::parse(text.as_bytes()).unwrap();
    assert_eq!(proof.extra, None);
    assert_eq!(proof.index, 5);
    assert_eq!(proof.path.len(), 3);
    assert_eq!(
        proof.checkpoint,
        s(&v, &["cosignature_v1", "cosigned_checkpoint"]).as_bytes()
    );
    assert_eq!(proof.to_text(), text);
    assert_eq!(
        ProofBundle::parse(text.as_bytes()).unwrap_err(),
        BundleError::MissingExtra
    );

    let leaf_data = hex::decode(s(&v, &["tlog_proof", "leaf_hex"])).unwrap();
    let leaf = EntryId::of_cose(&leaf_data);
    assert_eq!(hex::encode(leaf.0), s(&v, &["tlog_proof", "leaf_hash_hex"]));
    let cp = example_verifier(&v).verify(&proof.checkpoint).unwrap();
    let incl = InclusionProof {
        index: proof.index,
        path: proof.path.clone(),
    };
    cp.verify_inclusion(&leaf, &incl).unwrap();
    // ... and the same proof fails for a neighbour leaf or index.
    let wrong_leaf = EntryId::of_cose(b"\x40\x41\x42\x44");
    assert_eq!(
        cp.verify_inclusion(&wrong_leaf, &incl),
        Err(ProofError::RootMismatch)
    );
    let moved = InclusionProof {
        index: 4,
        ..incl.clone()
    };
    assert_eq!(
        cp.verify_inclusion(&leaf, &moved),
        Err(ProofError::RootMismatch)
    );
    let moved = InclusionProof { index: 8, ..incl };
    assert_eq!(
        cp.verify_inclusion(&leaf, &moved),
        Err(ProofError::IndexOutOfRange { index: 8, size: 8 })
    );
}

/// The signature block is the one part of a checkpoint nobody signs, so whoever hands one over
/// can add lines to it; every verifier must read them alike (`spec/log.md` §4.3; attack review
/// 44, where the Python reference refused these three and this verifier accepted them): every
/// line of the log key verifies, repeated ones too (signed_note skips repetitions); a key name
/// holds no control character (signed_note refuses C0 only) and has at most 256 bytes.
#[test]
fn every_line_of_the_signature_block_is_read_as_the_reference_reads_it() {
    let v = example();
    let verifier = example_verifier(&v);
    let good = s(&v, &["checkpoint", "signed_note"]);
    let own = s(&v, &["checkpoint", "signature_line"]);
    let raw = BASE64
        .decode(own.trim_end().rsplit(' ').next().unwrap())
        .unwrap();
    let line = |name: &str, sig: &[u8]| format!("— {name} {}\n", BASE64.encode(sig));
    let zeroed = [&raw[..4], &[0u8; 64][..]].concat();
    let witness = [&[1u8, 2, 3, 4][..], &[0u8; 64][..]].concat();
    let origin = "example.com/agent-memory-ledger";
    // The valid line first, then the same key's line with a zero signature.
    let repeated = format!("{good}{}", line(origin, &zeroed));
    expect(
        &verifier,
        repeated.as_bytes(),
        CheckpointError::BadSignature,
        "repeated",
    );
    // The same line twice verifies (both lines verify).
    assert!(verifier.verify(format!("{good}{own}").as_bytes()).is_ok());
    for (case, name) in [
        ("DEL", "w\u{7f}x".to_string()),
        ("C1", "w\u{80}x".to_string()),
        ("257 bytes", "w".repeat(257)),
    ] {
        let note = format!("{good}{}", line(&name, &witness));
        expect(
            &verifier,
            note.as_bytes(),
            CheckpointError::MalformedNote,
            case,
        );
    }
    // A 256-byte name is a key name: its line is ignored.
    let note = format!("{good}{}", line(&"w".repeat(256), &witness));
    assert!(verifier.verify(note.as_bytes()).is_ok());
}
