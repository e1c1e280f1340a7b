//! Hostile inputs of issue 13, round 2 (`spec/hostile-input.md`): each test is the smallest
//! input that broke the code before its fix. Byte inputs are in `tests/vectors/hostile/`
//! (origin in `tests/vectors/README.md`).

use memlineage::log::{
    CheckpointError, LogVerifier, WitnessKeyError, WitnessPolicy, WitnessVerifier,
};

/// `(kind, vkey)` lines of a case file, comments and blank lines skipped.
fn vkeys(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once(char::is_whitespace))
        .map(|(k, v)| (k, v.trim()))
        .collect()
}

/// ED-04: a verifier key with y >= p is refused as entry keys are; the canonical encoding of
/// the same point is accepted, so a policy can hold the point once only.
#[test]
fn non_canonical_verifier_keys_are_refused() {
    let text = include_str!("vectors/hostile/ED-04-noncanonical-vkeys.txt");
    let keys = vkeys(text);
    assert_eq!(keys.len(), 3, "{keys:?}");
    let (_, log) = keys[0];
    assert_eq!(
        LogVerifier::from_vkey(log),
        Err(CheckpointError::NonCanonicalKey)
    );
    let (_, alias) = keys[1];
    assert_eq!(
        WitnessVerifier::from_vkey(alias),
        Err(WitnessKeyError::NonCanonicalKey)
    );
    let (_, canon) = keys[2];
    let w = WitnessVerifier::from_vkey(canon).expect("canonical encoding of the point");
    // One point, one witness: the only encoding that parses is the canonical one.
    let policy = WitnessPolicy::new(vec![w], 1).unwrap();
    assert_eq!(policy.quorum(), 1);
}
