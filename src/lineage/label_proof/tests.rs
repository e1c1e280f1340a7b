//! The text form: round trip, strictness, and every `Display` message. Verification is tested
//! against real ledgers in `tests/label_proof.rs` and by the vectors of `tests/vectors/label-proof/`.

use super::*;
use crate::lineage::effects_index::LookupError;
use crate::lineage::WeakRule;
use crate::record::Weight;

fn sample() -> LabelProof {
    LabelProof {
        subject: 7,
        entries: vec![
            ProvedEntry {
                index: 2,
                cose: b"two".to_vec(),
                path: vec![[1; 32], [2; 32]],
            },
            ProvedEntry {
                index: 7,
                cose: b"seven".to_vec(),
                path: vec![],
            },
        ],
        lookups: vec![
            Lookup {
                subject: Subject::Key(KeyId([3; 32])),
                nodes: vec![(0, [4; 32]), (9, [5; 32])],
                end: LookupEnd::Found,
            },
            Lookup {
                subject: Subject::Target(EntryId([1; 32])),
                nodes: vec![],
                end: LookupEnd::Empty,
            },
            Lookup {
                subject: Subject::Target(EntryId([2; 32])),
                nodes: vec![(255, [6; 32])],
                end: LookupEnd::Other {
                    key: IndexKey([8; 32]),
                    effects: EffectsOf {
                        count: 3,
                        chain: [9; 32],
                    },
                },
            },
        ],
        checkpoint: b"o\n1\nAQ==\n\n- sig\n".to_vec(),
    }
}

#[test]
fn text_round_trips() {
    let p = sample();
    let t = p.to_text();
    assert!(t.starts_with("memlineage/label-proof@v1\nsubject 7\nentry 2 dHdv\n"));
    assert!(t.contains("\nlookup target AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI= other "));
    assert!(t.contains("\nnode 255 BgYGBgYGBgYGBgYGBgYGBgYGBgYGBgYGBgYGBgYGBgY=\n\no\n1\n"));
    assert_eq!(LabelProof::parse(t.as_bytes()), Ok(p));
}

#[test]
fn malformed_texts_name_their_line() {
    let t = sample().to_text();
    let lines: Vec<&str> = t.split('\n').collect();
    let with = |n: usize, line: &str| {
        let mut l = lines.clone();
        l[n] = line;
        l.join("\n")
    };
    let h = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
    let cases = [
        (with(0, "memlineage/label-proof@v2"), 1),
        (with(1, "subject 07"), 2),
        (with(1, "subject -1"), 2),
        (with(2, "entry 2 dHdv x"), 3),
        (with(2, "entry 02 dHdv"), 3),
        (with(2, "entry 9 dHdv"), 6),
        (with(3, "AQ=="), 4),
        (with(3, "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQF="), 4),
        (
            with(
                6,
                "lookup keys AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM= found",
            ),
            7,
        ),
        (
            with(
                6,
                "lookup key AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM= found x",
            ),
            7,
        ),
        (
            with(7, "node 256 BAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ="),
            8,
        ),
        (with(7, &format!("node 1{h}")), 8),
        (with(8, "node 9 BQU="), 9),
        (
            with(
                9,
                "lookup target AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE= empty x",
            ),
            10,
        ),
        // Lookups out of order, and a node before any lookup.
        (
            with(
                9,
                "lookup key AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM= found",
            ),
            10,
        ),
        (
            "memlineage/label-proof@v1\nsubject 1\nnode 1 AA==\n\ncp".into(),
            3,
        ),
        ("memlineage/label-proof@v1\nsubject 1\n\n".into(), 4),
        ("memlineage/label-proof@v1\nsubject 1\ncp".into(), 1),
        ("".into(), 1),
    ];
    for (text, line) in cases {
        let got = LabelProof::parse(text.as_bytes());
        assert!(
            matches!(got, Err(LabelProofError::Malformed { line: l, .. }) if l == line),
            "{text:?}: {got:?}"
        );
    }
    let long = vec![b'a'; MAX_LABEL_PROOF_BYTES + 1];
    assert!(matches!(
        LabelProof::parse(&long),
        Err(LabelProofError::TooLarge { .. })
    ));
    assert!(LabelProof::parse(&[0xff, b'\n', b'\n']).is_err());
    // No strict prefix of a proof parses (the checkpoint is then cut: checked at verify).
    for cut in 0..t.find("\n\n").unwrap_or(0) {
        assert!(LabelProof::parse(&t.as_bytes()[..cut]).is_err(), "{cut}");
    }
}

#[test]
fn display_messages() {
    let id = EntryId([0xab; 32]);
    let key = KeyId([0xcd; 32]);
    let policy = crate::lineage::LabelPolicy::default();
    let other = crate::lineage::LabelPolicy {
        tau: Weight::new(900_000).unwrap(),
        weak_rule: WeakRule::FailOpen,
    };
    let hex_id = "abababababababababababababababababababababababababababababababab";
    let hex_key = "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd";
    let cases: Vec<(LabelProofError, String)> = vec![
        (
            LabelProofError::TooLarge { got: 9, max: 8 },
            "label proof too large: 9 bytes, max 8".into(),
        ),
        (
            LabelProofError::Malformed { line: 2, want: "x" },
            "malformed label proof at line 2: want x".into(),
        ),
        (
            LabelProofError::Checkpoint(CheckpointError::UnknownKey),
            "checkpoint: no signature by the log key".into(),
        ),
        (
            LabelProofError::UnsignedParameters,
            "the checkpoint signs no labelling parameters (memlineage/label-policy@v1)".into(),
        ),
        (
            LabelProofError::Parameters(SignedPolicyError("x".into())),
            "the checkpoint's label-policy line \"x\" is malformed or repeated".into(),
        ),
        (
            LabelProofError::ParametersDiffer {
                signed: policy,
                expected: other,
            },
            "the checkpoint signs tau 0.500000 rule fail-closed, not the expected tau 0.900000 \
             rule fail-open"
                .into(),
        ),
        (
            LabelProofError::NoEffectsIndex,
            "the checkpoint signs no effects index (memlineage/effects-index@v1)".into(),
        ),
        (
            LabelProofError::IndexLine(IndexLineError("y".into())),
            "the checkpoint's effects-index line \"y\" is malformed or repeated".into(),
        ),
        (
            LabelProofError::MissingSubject { index: 4 },
            "the proof carries no entry at the subject's index 4".into(),
        ),
        (
            LabelProofError::Entry {
                index: 3,
                source: RecordError::BadSignature,
            },
            "entry 3: signature verification failed".into(),
        ),
        (
            LabelProofError::Proof {
                index: 3,
                source: ProofError::RootMismatch,
            },
            "entry 3: inclusion proof: proof does not lead to the checkpoint root".into(),
        ),
        (
            LabelProofError::DuplicateEntry { id },
            format!("entry {hex_id} appears twice"),
        ),
        (
            LabelProofError::MissingAncestor {
                child: id,
                parent: id,
            },
            format!("ancestor {hex_id} (a parent of {hex_id}) is missing"),
        ),
        (
            LabelProofError::ParentNotEarlier {
                child: id,
                parent: id,
            },
            format!("parent {hex_id} is not earlier in the log than {hex_id}"),
        ),
        (
            LabelProofError::MissingLookup(Subject::Key(key)),
            format!("no effects-index lookup for key {hex_key}"),
        ),
        (
            LabelProofError::ExtraneousLookup(Subject::Target(id)),
            format!("effects-index lookup for target {hex_id} is not needed"),
        ),
        (
            LabelProofError::Lookup {
                subject: Subject::Target(id),
                source: LookupError::RootMismatch,
            },
            format!(
                "effects of target {hex_id}: the lookup does not lead to the signed \
                 effects-index root"
            ),
        ),
        (
            LabelProofError::Extraneous { index: 5 },
            "entry 5 is neither an ancestor nor an effect that bears on one".into(),
        ),
        (
            LabelProofError::UnboundWriter {
                index: 6,
                writer: key,
            },
            format!("entry 6: writer {hex_key} is not bound before it"),
        ),
    ];
    for (e, want) in cases {
        assert_eq!(e.to_string(), want);
    }
}
