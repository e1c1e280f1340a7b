//! Witness cosignatures (C2SP tlog-cosignature v1) and quorum policies (`spec/log.md` §10),
//! against the `cosignature_v1` example of `tests/vectors/c2sp-checkpoint-example.json` and its
//! rejected note cases.

#[path = "common/log_support.rs"]
mod support;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use memlineage::log::{
    prove_consistency, tree_root, verify_cosigned, CheckpointError, CheckpointState, LogSigner,
    LogVerifier, Update, VerifiedCheckpoint, WitnessError, WitnessKeyError, WitnessPolicy,
    WitnessPolicyError, WitnessSigner, WitnessVerifier, ALG_COSIGNATURE_V1,
    MAX_COSIGNATURE_TIMESTAMP,
};
use memlineage::record::WriterKey;
use serde_json::Value;
use support::MemLog;

use support::{c2sp_example as example, json_str as s};

fn seed(hex32: &str) -> [u8; 32] {
    hex::decode(hex32).unwrap().try_into().unwrap()
}

fn log_verifier(v: &Value) -> LogVerifier {
    LogVerifier::from_vkey(s(v, &["log_key", "vkey"])).unwrap()
}

fn example_witness(v: &Value) -> WitnessSigner {
    let sd = seed(s(v, &["cosignature_v1", "ed25519_seed_hex"]));
    WitnessSigner::new(
        s(v, &["cosignature_v1", "witness_name"]),
        WriterKey::from_seed(&sd),
    )
    .unwrap()
}

fn w1_policy(v: &Value) -> WitnessPolicy {
    let w = WitnessVerifier::from_vkey(s(v, &["cosignature_v1", "vkey"])).unwrap();
    WitnessPolicy::new(vec![w], 1).unwrap()
}

/// The example checkpoint (8 leaves), verified.
fn example_cp(v: &Value) -> VerifiedCheckpoint {
    log_verifier(v)
        .verify(s(v, &["checkpoint", "signed_note"]).as_bytes())
        .unwrap()
}

#[test]
fn example_cosignature_verifies() {
    let v = example();
    let name = s(&v, &["cosignature_v1", "witness_name"]);
    let vkey = s(&v, &["cosignature_v1", "vkey"]);
    let w = WitnessVerifier::from_vkey(vkey).unwrap();
    assert_eq!(w.name(), name);
    assert_eq!(
        format!("{:08x}", w.key_id()),
        s(&v, &["cosignature_v1", "key_id_hex"])
    );
    assert_eq!(
        hex::encode(w.public_key()),
        s(&v, &["cosignature_v1", "ed25519_public_key_hex"])
    );
    assert_eq!(w.vkey(), vkey);
    assert_eq!(format!("{w:?}"), format!("WitnessVerifier({vkey})"));

    let cosigned = s(&v, &["cosignature_v1", "cosigned_checkpoint"]);
    let (cp, names) =
        verify_cosigned(&log_verifier(&v), &w1_policy(&v), cosigned.as_bytes()).unwrap();
    assert_eq!(names, [name]);
    assert_eq!((cp.size(), cp.note()), (8, cosigned.as_bytes()));

    // Independently of our code: the line is key id || u64 BE timestamp || Ed25519 signature
    // over the example's signed_message.
    let line = s(&v, &["cosignature_v1", "signature_line"]);
    let blob = BASE64
        .decode(line.trim_end().rsplit(' ').next().unwrap())
        .unwrap();
    assert_eq!(blob.len(), 76);
    assert_eq!(
        hex::encode(&blob[..4]),
        s(&v, &["cosignature_v1", "key_id_hex"])
    );
    let ts = u64::from_be_bytes(blob[4..12].try_into().unwrap());
    assert_eq!(Some(ts), v["cosignature_v1"]["timestamp"].as_u64());
    let msg = s(&v, &["cosignature_v1", "signed_message"]);
    assert_eq!(
        msg,
        format!(
            "cosignature/v1\ntime {ts}\n{}",
            s(&v, &["checkpoint", "note_text"])
        )
    );
    let pk = VerifyingKey::from_bytes(&w.public_key()).unwrap();
    let sig = Signature::from_slice(&blob[12..]).unwrap();
    pk.verify_strict(msg.as_bytes(), &sig).unwrap();
}

#[test]
fn signer_reproduces_the_example_exactly() {
    let v = example();
    let w = example_witness(&v);
    assert_eq!(w.vkey(), s(&v, &["cosignature_v1", "vkey"]));
    assert_eq!(
        format!("{:08x}", w.key_id()),
        s(&v, &["cosignature_v1", "key_id_hex"])
    );
    let cp = example_cp(&v);
    let ts = v["cosignature_v1"]["timestamp"].as_u64().unwrap();
    assert_eq!(
        w.cosignature_line(&cp, ts).unwrap(),
        s(&v, &["cosignature_v1", "signature_line"])
    );
    let cosigned = w.cosign(&cp, ts).unwrap();
    assert_eq!(
        String::from_utf8(cosigned.clone()).unwrap(),
        s(&v, &["cosignature_v1", "cosigned_checkpoint"])
    );
    // Cosigning again replaces the witness's own line instead of adding one.
    let cp2 = log_verifier(&v).verify(&cosigned).unwrap();
    let again = String::from_utf8(w.cosign(&cp2, ts + 60).unwrap()).unwrap();
    assert_eq!(again.matches("— witness.example.com/w1 ").count(), 1);
    assert!(!again.contains(s(&v, &["cosignature_v1", "signature_line"])));
    verify_cosigned(&log_verifier(&v), &w1_policy(&v), again.as_bytes()).unwrap();
}

/// Splits the base64 of a signature line, applies `f` to the raw bytes, re-encodes.
fn mutate_line(line: &str, f: impl FnOnce(&mut Vec<u8>)) -> String {
    let b64 = line.trim_end().rsplit(' ').next().unwrap();
    let mut raw = BASE64.decode(b64).unwrap();
    f(&mut raw);
    line.replace(b64, &BASE64.encode(raw))
}

/// `rejected_note_cases` applied to the cosigned example under a 1-of-1 policy of witness w1:
/// failures of the log's own signature or syntax are `Checkpoint(_)`, cosignature failures are
/// witness errors.
#[test]
fn rejected_note_cases() {
    let v = example();
    let log = log_verifier(&v);
    let policy = w1_policy(&v);
    let good = s(&v, &["cosignature_v1", "cosigned_checkpoint"]);
    let body = s(&v, &["checkpoint", "note_text"]);
    let log_line = s(&v, &["checkpoint", "signature_line"]);
    let w_line = s(&v, &["cosignature_v1", "signature_line"]);
    let w1 = || "witness.example.com/w1".to_owned();
    let cases = v["rejected_note_cases"].as_object().unwrap();
    let mut seen = 0;
    for name in cases.keys() {
        let variants: Vec<(String, WitnessError)> = match name.as_str() {
            "body altered (size 8 -> 9)" => vec![(
                good.replacen("\n8\n", "\n9\n", 1),
                CheckpointError::BadSignature.into(),
            )],
            "no blank line between text and signatures" => vec![(
                format!("{body}{log_line}{w_line}"),
                CheckpointError::MalformedNote.into(),
            )],
            "signature line missing final newline" => vec![(
                good.trim_end_matches('\n').to_owned(),
                CheckpointError::MalformedNote.into(),
            )],
            "ASCII hyphen instead of em dash" => vec![
                (
                    good.replacen("— ", "- ", 1),
                    CheckpointError::MalformedNote.into(),
                ),
                (
                    good.replace(w_line, &w_line.replacen("— ", "- ", 1)),
                    CheckpointError::MalformedNote.into(),
                ),
            ],
            "control character (TAB) in text" => vec![(
                good.replacen("ledger\n8", "ledger\t\n8", 1),
                CheckpointError::MalformedNote.into(),
            )],
            "only unknown-key signatures" => vec![(
                format!("{body}\n{w_line}"),
                CheckpointError::UnknownKey.into(),
            )],
            "key name right but key ID wrong (treated as unknown -> no known sig)" => vec![
                (
                    good.replace(log_line, &mutate_line(log_line, |r| r[0] ^= 0xff)),
                    CheckpointError::UnknownKey.into(),
                ),
                (
                    good.replace(w_line, &mutate_line(w_line, |r| r[0] ^= 0xff)),
                    WitnessError::QuorumNotMet { got: 0, want: 1 },
                ),
            ],
            "known key, corrupted signature" => vec![
                (
                    good.replace(log_line, &mutate_line(log_line, |r| r[10] ^= 0x01)),
                    CheckpointError::BadSignature.into(),
                ),
                (
                    good.replace(w_line, &mutate_line(w_line, |r| r[40] ^= 0x01)),
                    WitnessError::BadCosignature { witness: w1() },
                ),
            ],
            "cosignature timestamp altered" => vec![(
                // The last byte of the big-endian timestamp.
                good.replace(w_line, &mutate_line(w_line, |r| r[11] ^= 0x01)),
                WitnessError::BadCosignature { witness: w1() },
            )],
            other => panic!("unhandled rejected_note_case {other:?}"),
        };
        for (note, want) in variants {
            assert_ne!(note, good, "{name}");
            assert_eq!(
                verify_cosigned(&log, &policy, note.as_bytes()).unwrap_err(),
                want,
                "{name}"
            );
        }
        seen += 1;
    }
    assert_eq!(seen, cases.len());
}

/// No single-bit change of the cosigned example verifies under the 1-of-1 policy.
#[test]
fn every_bit_flip_is_rejected() {
    let v = example();
    let (log, policy) = (log_verifier(&v), w1_policy(&v));
    let good = s(&v, &["cosignature_v1", "cosigned_checkpoint"]).as_bytes();
    for i in 0..good.len() {
        for bit in [0x01, 0x02, 0x20, 0x80] {
            let mut b = good.to_vec();
            b[i] ^= bit;
            assert!(
                verify_cosigned(&log, &policy, &b).is_err(),
                "flip {bit:#x} at {i}"
            );
        }
    }
}

/// A log, three witnesses in a 2-of-3 policy, and a fourth witness outside it.
struct Quorum {
    signer: LogSigner,
    witnesses: Vec<WitnessSigner>,
    outsider: WitnessSigner,
    policy: WitnessPolicy,
    log: MemLog,
}

fn quorum() -> Quorum {
    let signer = support::test_signer();
    let witnesses: Vec<_> = (1..=3)
        .map(|i| {
            let name = format!("witness.example/w{i}");
            WitnessSigner::new(&name, WriterKey::for_label(&name)).unwrap()
        })
        .collect();
    let outsider = WitnessSigner::new("witness.example/w4", WriterKey::for_label("w4")).unwrap();
    let policy = WitnessPolicy::new(witnesses.iter().map(|w| w.verifier()).collect(), 2).unwrap();
    let log = MemLog::with_leaf_data((0..12u8).map(|i| vec![i]));
    Quorum {
        signer,
        witnesses,
        outsider,
        policy,
        log,
    }
}

impl Quorum {
    fn cp(&self, size: u64) -> VerifiedCheckpoint {
        support::checkpoint(&self.signer, size, tree_root(size, &self.log).unwrap().0)
    }

    /// The checkpoint of `size` cosigned by `by` (in order), at timestamps 1000, 1001, ...
    fn cosigned(&self, size: u64, by: &[&WitnessSigner]) -> Vec<u8> {
        let mut cp = self.cp(size);
        for (i, w) in by.iter().enumerate() {
            let note = w.cosign(&cp, 1000 + i as u64).unwrap();
            cp = self.signer.verifier().verify(&note).unwrap();
        }
        cp.note().to_vec()
    }

    fn verify(&self, note: &[u8]) -> Result<Vec<String>, WitnessError> {
        verify_cosigned(&self.signer.verifier(), &self.policy, note).map(|(_, names)| names)
    }
}

fn names(ws: &[&WitnessSigner]) -> Vec<String> {
    ws.iter().map(|w| w.name().to_owned()).collect()
}

#[test]
fn quorum_two_of_three() {
    let q = quorum();
    let [w1, w2, w3] = [&q.witnesses[0], &q.witnesses[1], &q.witnesses[2]];
    let not_met = |got| Err(WitnessError::QuorumNotMet { got, want: 2 });
    assert_eq!(q.verify(q.cp(7).note()), not_met(0));
    for one in [w1, w2, w3] {
        assert_eq!(q.verify(&q.cosigned(7, &[one])), not_met(1));
    }
    for two in [[w1, w2], [w2, w3], [w3, w1]] {
        let got = q.verify(&q.cosigned(7, &two)).unwrap();
        // Names come back in policy order, whatever the line order.
        let mut want = names(&two);
        want.sort();
        assert_eq!(got, want);
    }
    assert_eq!(
        q.verify(&q.cosigned(7, &[w3, w2, w1])),
        Ok(names(&[w1, w2, w3]))
    );
    // A witness outside the policy does not count, valid or not.
    assert_eq!(q.verify(&q.cosigned(7, &[w1, &q.outsider])), not_met(1));
    let forged_outsider = {
        let note = String::from_utf8(q.cosigned(7, &[w1, w2])).unwrap();
        let line = q.outsider.cosignature_line(&q.cp(7), 5).unwrap();
        format!("{note}{}", mutate_line(&line, |r| r[50] ^= 1))
    };
    assert_eq!(q.verify(forged_outsider.as_bytes()), Ok(names(&[w1, w2])));
}

#[test]
fn duplicate_cosignatures_count_once() {
    let q = quorum();
    let w1 = &q.witnesses[0];
    let cp = q.cp(9);
    let note = String::from_utf8(cp.note().to_vec()).unwrap();
    let l1 = w1.cosignature_line(&cp, 100).unwrap();
    let l2 = w1.cosignature_line(&cp, 200).unwrap();
    // The same line twice, and two valid lines with different timestamps.
    for dup in [format!("{note}{l1}{l1}"), format!("{note}{l1}{l2}")] {
        assert_eq!(
            q.verify(dup.as_bytes()),
            Err(WitnessError::QuorumNotMet { got: 1, want: 2 })
        );
    }
    let l3 = q.witnesses[2].cosignature_line(&cp, 300).unwrap();
    assert_eq!(
        q.verify(format!("{note}{l1}{l2}{l3}").as_bytes()),
        Ok(names(&[w1, &q.witnesses[2]]))
    );
    // A bad second line of a witness rejects the note even though its first line is good.
    let bad = mutate_line(&l2, |r| r[30] ^= 1);
    assert_eq!(
        q.verify(format!("{note}{l1}{bad}{l3}").as_bytes()),
        Err(WitnessError::BadCosignature {
            witness: w1.name().to_owned()
        })
    );
}

#[test]
fn cosignature_over_another_checkpoint_is_rejected() {
    let q = quorum();
    let [w1, w2] = [&q.witnesses[0], &q.witnesses[1]];
    let cp8 = q.cp(8);
    let note9 = String::from_utf8(q.cp(9).note().to_vec()).unwrap();
    // A cosignature of size 8 moved onto size 9; also onto another root for size 9.
    let moved = w1.cosignature_line(&cp8, 1).unwrap();
    let good = w2.cosignature_line(&q.cp(9), 1).unwrap();
    let bad = WitnessError::BadCosignature {
        witness: w1.name().to_owned(),
    };
    assert_eq!(
        q.verify(format!("{note9}{moved}{good}").as_bytes()),
        Err(bad.clone())
    );
    let other_root = support::checkpoint(&q.signer, 9, [9; 32]);
    let other_note = String::from_utf8(other_root.note().to_vec()).unwrap();
    let moved = w1.cosignature_line(&q.cp(9), 1).unwrap();
    assert_eq!(
        q.verify(format!("{other_note}{moved}").as_bytes()),
        Err(bad.clone())
    );
    // And onto the same tree of another log (another origin, same tree).
    let other_log = LogSigner::new("other.example/log", WriterKey::for_label("x")).unwrap();
    let cp_other = support::checkpoint(&other_log, 9, tree_root(9, &q.log).unwrap().0);
    let policy = q.policy.clone();
    let note = format!(
        "{}{moved}",
        String::from_utf8(cp_other.note().to_vec()).unwrap()
    );
    assert_eq!(
        verify_cosigned(&other_log.verifier(), &policy, note.as_bytes()),
        Err(bad)
    );
}

#[test]
fn malformed_cosignatures_of_known_witnesses() {
    let q = quorum();
    let w1 = &q.witnesses[0];
    let cp = q.cp(5);
    let note = String::from_utf8(cp.note().to_vec()).unwrap();
    let line = w1.cosignature_line(&cp, 7).unwrap();
    let name = || w1.name().to_owned();
    // Signature without the timestamp (64 bytes) and with a trailing byte (73).
    let short = mutate_line(&line, |r| {
        r.drain(4..12);
    });
    let long = mutate_line(&line, |r| r.push(0));
    for (l, len) in [(short, 64), (long, 73)] {
        assert_eq!(
            q.verify(format!("{note}{l}").as_bytes()),
            Err(WitnessError::MalformedCosignature {
                witness: name(),
                len
            })
        );
    }
    // Timestamp 2^63: out of range, whatever the signature.
    let big = mutate_line(&line, |r| {
        r[4..12].copy_from_slice(&(1u64 << 63).to_be_bytes())
    });
    assert_eq!(
        q.verify(format!("{note}{big}").as_bytes()),
        Err(WitnessError::TimestampOutOfRange {
            witness: name(),
            timestamp: 1 << 63
        })
    );
    // The signer refuses it too; 2^63 - 1 is fine.
    assert_eq!(
        w1.cosign(&cp, 1 << 63),
        Err(WitnessError::TimestampOutOfRange {
            witness: name(),
            timestamp: 1 << 63
        })
    );
    let max = w1.cosign(&cp, MAX_COSIGNATURE_TIMESTAMP).unwrap();
    let max = q.signer.verifier().verify(&max).unwrap();
    let both = q.witnesses[1].cosign(&max, 0).unwrap();
    assert_eq!(q.verify(&both), Ok(names(&[w1, &q.witnesses[1]])));
}

#[test]
fn the_log_signature_is_still_required() {
    let q = quorum();
    let full = String::from_utf8(q.cosigned(4, &[&q.witnesses[0], &q.witnesses[1]])).unwrap();
    let log_line = full
        .lines()
        .find(|l| l.starts_with(&format!("— {} ", q.signer.origin())))
        .unwrap();
    let stripped = full.replace(&format!("{log_line}\n"), "");
    assert_eq!(
        q.verify(stripped.as_bytes()),
        Err(WitnessError::Checkpoint(CheckpointError::UnknownKey))
    );
    // Under another log key the same note fails as a checkpoint.
    let other = LogSigner::new(q.signer.origin(), WriterKey::for_label("o")).unwrap();
    assert_eq!(
        verify_cosigned(&other.verifier(), &q.policy, full.as_bytes()),
        Err(WitnessError::Checkpoint(CheckpointError::UnknownKey))
    );
}

#[test]
fn witness_vkeys_are_parsed_strictly() {
    let v = example();
    let vkey = s(&v, &["cosignature_v1", "vkey"]);
    let (name, rest) = vkey.split_once('+').unwrap();
    let (id, key) = rest.split_once('+').unwrap();
    let raw = BASE64.decode(key).unwrap();
    assert_eq!(raw[0], ALG_COSIGNATURE_V1);
    let err = |s: &str| WitnessVerifier::from_vkey(s).unwrap_err();
    // A log key (type 0x01) is not a witness key.
    assert_eq!(
        err(s(&v, &["log_key", "vkey"])),
        WitnessKeyError::UnsupportedAlgorithm { alg: 0x01 }
    );
    assert_eq!(
        err(&format!("{name}+00000000+{key}")),
        WitnessKeyError::KeyIdMismatch {
            got: 0,
            want: u32::from_str_radix(id, 16).unwrap()
        }
    );
    // The id of the same key under another name does not match.
    assert!(matches!(
        err(&format!("witness.example.com/w2+{id}+{key}")),
        WitnessKeyError::KeyIdMismatch { .. }
    ));
    for bad in [
        "",
        "no-plus",
        "a+b",
        &format!("{name}+{}+{key}", id.to_uppercase()),
        &format!("{name}+{id}+{}", &key[..key.len() - 1]),
        &format!("{name}+{id}+{key}+"),
        &format!("{name}+{id}+{}", BASE64.encode(&raw[..32])),
        &format!("{name}+{id}+{}", BASE64.encode([4u8])),
        &format!("{name}+{id}+"),
    ] {
        assert!(
            matches!(
                err(bad),
                WitnessKeyError::MalformedVkey | WitnessKeyError::KeyIdMismatch { .. }
            ),
            "{bad:?}"
        );
    }
    assert_eq!(err(&format!("a b+{id}+{key}")), WitnessKeyError::BadName);
    // A small-order point (the identity) is refused.
    let mut ident = vec![ALG_COSIGNATURE_V1];
    ident.extend_from_slice(&{
        let mut b = [0u8; 32];
        b[0] = 1;
        b
    });
    let kid = key_id(name, &ident);
    assert_eq!(
        err(&format!("{name}+{kid:08x}+{}", BASE64.encode(&ident))),
        WitnessKeyError::BadKey
    );
}

/// `SHA-256(name || 0x0A || key)[:4]`, written out here rather than taken from the crate.
fn key_id(name: &str, key: &[u8]) -> u32 {
    use sha2::{Digest, Sha256};
    let h = Sha256::new()
        .chain_update(name.as_bytes())
        .chain_update(b"\n")
        .chain_update(key)
        .finalize();
    u32::from_be_bytes(h[..4].try_into().unwrap())
}

#[test]
fn policy_construction_errors() {
    let q = quorum();
    let ws: Vec<WitnessVerifier> = q.witnesses.iter().map(|w| w.verifier()).collect();
    assert_eq!(
        WitnessPolicy::new(ws.clone(), 0),
        Err(WitnessPolicyError::ZeroQuorum)
    );
    assert_eq!(
        WitnessPolicy::new(ws.clone(), 4),
        Err(WitnessPolicyError::QuorumTooLarge {
            quorum: 4,
            witnesses: 3
        })
    );
    assert_eq!(
        WitnessPolicy::new(Vec::new(), 1),
        Err(WitnessPolicyError::QuorumTooLarge {
            quorum: 1,
            witnesses: 0
        })
    );
    let mut dup = ws.clone();
    dup.push(ws[1].clone());
    assert_eq!(
        WitnessPolicy::new(dup, 2),
        Err(WitnessPolicyError::DuplicateName {
            name: "witness.example/w2".into()
        })
    );
    // One key under two names would count twice (the message does not commit to the name).
    let alias = WitnessSigner::new(
        "alias.example/w1",
        WriterKey::for_label("witness.example/w1"),
    )
    .unwrap();
    let mut shared = ws.clone();
    shared.push(alias.verifier());
    assert_eq!(
        WitnessPolicy::new(shared, 2),
        Err(WitnessPolicyError::DuplicateKey {
            first: "witness.example/w1".into(),
            second: "alias.example/w1".into()
        })
    );
    let p = WitnessPolicy::new(ws.clone(), 3).unwrap();
    assert_eq!((p.quorum(), p.witnesses()), (3, &ws[..]));
}

/// The client flow: verify the cosigned note under the policy, then offer it to the state.
#[test]
fn cosigned_checkpoints_feed_the_state() {
    let q = quorum();
    let [w1, w2] = [&q.witnesses[0], &q.witnesses[1]];
    let log = q.signer.verifier();
    let mut st = CheckpointState::new();
    let (cp, _) = verify_cosigned(&log, &q.policy, &q.cosigned(6, &[w1, w2])).unwrap();
    assert_eq!(st.update(&log, cp, None), Ok(Update::TrustedOnFirstUse));
    let (cp, _) = verify_cosigned(&log, &q.policy, &q.cosigned(11, &[w2, w1])).unwrap();
    let p = prove_consistency(6, 11, &q.log).unwrap();
    assert_eq!(
        st.update(&log, cp, Some(&p)),
        Ok(Update::Advanced {
            old_size: 6,
            new_size: 11
        })
    );
    // Same checkpoint, other cosignatures: unchanged.
    let (cp, _) = verify_cosigned(&log, &q.policy, &q.cosigned(11, &[w1, w2])).unwrap();
    assert_eq!(st.update(&log, cp, None), Ok(Update::Unchanged));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Arbitrary bytes, and arbitrary blobs in a line named after a policy witness, never panic;
    /// a random blob never counts as a cosignature.
    #[test]
    fn never_panics(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
        blob in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..120),
    ) {
        let q = quorum();
        let _ = q.verify(&bytes);
        let w1 = &q.witnesses[0];
        let mut raw = w1.key_id().to_be_bytes().to_vec();
        raw.extend_from_slice(&blob);
        let note = String::from_utf8(q.cosigned(3, &[&q.witnesses[1]])).unwrap();
        let line = format!("— {} {}\n", w1.name(), BASE64.encode(&raw));
        let got = q.verify(format!("{note}{line}").as_bytes());
        proptest::prop_assert!(got.is_err());
    }
}
