//! Hostile inputs of issue 13, round 2 (`spec/hostile-input.md`): each test is the smallest
//! input that broke the code before its fix. Byte inputs are in `tests/vectors/hostile/`
//! (origin in `tests/vectors/README.md`).

use memlineage::log::{
    CheckpointError, LogVerifier, WitnessKeyError, WitnessPolicy, WitnessVerifier,
};
use memlineage::record::{decode_payload, RecordError, SignedEntry};

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

/// CBR-05: tags count toward the scan's depth limit, so nine tags before a payload map (and
/// 60,000 tags before anything) are a typed error on a 64 KiB stack in every profile, not a
/// stack overflow in the decoder.
#[test]
fn tags_count_toward_the_depth_limit_on_a_small_stack() {
    let hex_text = include_str!("vectors/hostile/CBR-05-entry-payload-9-tags.hex");
    let bytes = hex::decode(hex_text.trim()).unwrap();
    let t = std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(move || {
            let many = [vec![0xd1u8; 60_000], vec![0xa0]].concat();
            (
                SignedEntry::decode(&bytes).unwrap_err(),
                decode_payload(&many).unwrap_err(),
            )
        })
        .unwrap();
    let (nine, many) = t.join().expect("no stack overflow");
    assert_eq!(nine, RecordError::TooDeep { max: 8 });
    assert_eq!(many, RecordError::TooDeep { max: 8 });
}
