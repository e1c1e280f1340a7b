//! The label-proof vectors (`tests/vectors/label-proof/`, `spec/label-proof.md` §7): each
//! honest proof verifies with the log's verifier key alone and gives the recorded answer; each
//! mutated one fails with its class; and the checked-in generator still writes every file byte
//! for byte (so the files are what the code under test produces, not hand edits).

#[path = "../examples/gen_label_proof_vectors.rs"]
#[allow(dead_code)]
mod generator;

use memlineage::lineage::label_proof::{LabelProof, LabelProofError};
use memlineage::lineage::{LabelPolicy, WeakRule};
use memlineage::log::LogVerifier;
use memlineage::record::Weight;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::Path;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/label-proof");

fn vectors() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(DIR)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let v = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (name, v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The class of an error: its variant's name (`spec/label-proof.md` §4).
fn class(e: &LabelProofError) -> String {
    format!("{e:?}")
        .split(['(', ' ', '{'])
        .next()
        .unwrap_or_default()
        .to_string()
}

fn expected(v: &Value) -> Option<LabelPolicy> {
    let x = v.get("expect")?;
    Some(LabelPolicy {
        tau: Weight::new(x["tau"].as_u64()?).ok()?,
        weak_rule: WeakRule::from_name(x["rule"].as_str()?)?,
    })
}

#[test]
fn every_vector_gives_its_answer_or_its_class() {
    let all = vectors();
    assert!(all.len() >= 30, "{} vectors", all.len());
    let (mut honest, mut negative) = (0, 0);
    for (name, v) in &all {
        assert!(v["@generated"]
            .as_str()
            .is_some_and(|g| g.contains("@generated")));
        assert!(!v["desc"].as_str().unwrap_or_default().is_empty(), "{name}");
        let verifier = LogVerifier::from_vkey(v["vkey"].as_str().unwrap()).unwrap();
        let got = LabelProof::parse(v["proof"].as_str().unwrap().as_bytes())
            .and_then(|p| p.verify(&verifier, expected(v)));
        match (&v["want"], v["want_err"].as_str(), got) {
            (want, None, Ok(verdict)) if want.is_object() => {
                let seen = json!({
                    "label": verdict.label.name(),
                    "quarantined": verdict.quarantine.is_some(),
                    "tombstoned": !verdict.tombstones.is_empty(),
                    "path": verdict.path.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
                    "index": verdict.index(),
                    "ancestry": verdict.ancestry.len(),
                });
                assert_eq!(&seen, want, "{name}");
                honest += 1;
            }
            (_, Some(want), Err(e)) => {
                assert_eq!(class(&e), want, "{name}: {e}");
                negative += 1;
            }
            (_, want, got) => panic!("{name}: want {want:?}, got {got:?}"),
        }
    }
    assert!(
        honest >= 9 && negative >= 20,
        "{honest} honest, {negative} negative"
    );
}

#[test]
fn the_generator_writes_every_file_as_checked_in() {
    let cases = generator::cases().unwrap();
    let names: Vec<&str> = cases.iter().map(|(n, _)| n.as_str()).collect();
    let files: Vec<String> = vectors().into_iter().map(|(n, _)| n).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, files);
    for (name, v) in &cases {
        let file = Path::new(DIR).join(format!("{name}.json"));
        let text = std::fs::read_to_string(file).unwrap();
        assert_eq!(
            text,
            format!("{}\n", serde_json::to_string_pretty(v).unwrap()),
            "{name}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any one byte of an honest proof changed, or the proof cut short: parsing and verifying
    /// never panic, and never give a verdict (every byte of the text is bound: canonical
    /// encoding, entry signatures and ids, audit paths, lookups, the signed checkpoint).
    #[test]
    fn a_changed_or_cut_proof_never_verifies(pick in any::<prop::sample::Index>(),
                                             at in any::<prop::sample::Index>(),
                                             byte in any::<u8>(),
                                             cut in any::<bool>()) {
        let honest: Vec<(String, Value)> = vectors()
            .into_iter()
            .filter(|(_, v)| v["want"].is_object())
            .collect();
        let (name, v) = &honest[pick.index(honest.len())];
        let text = v["proof"].as_str().unwrap().as_bytes().to_vec();
        let i = at.index(text.len());
        let mutated = if cut {
            text[..i].to_vec()
        } else {
            let mut m = text.clone();
            m[i] = if m[i] == byte { byte.wrapping_add(1) } else { byte };
            m
        };
        let verifier = LogVerifier::from_vkey(v["vkey"].as_str().unwrap()).unwrap();
        let got = LabelProof::parse(&mutated).and_then(|p| p.verify(&verifier, expected(v)));
        prop_assert!(got.is_err(), "{} with byte {} changed (cut {}) verifies", name, i, cut);
    }
}
