//! Negative label-proof vectors made in the checkpoint's signature block, the one part of a
//! proof nobody signs: anyone can add a line there, so both verifiers must read each line the
//! same way (`spec/log.md` §4.3 steps 2–4; attack review 44). Used by
//! `examples/gen_label_proof_vectors.rs`.

use memlineage::lineage::label_proof::LabelProof;

/// A case: file name, description, the proof, the class it must fail with.
pub type Case = (&'static str, &'static str, LabelProof, &'static str);

/// `proof` with `line` (a signature line, without its newline) added after its checkpoint's
/// signatures.
fn with_line(proof: &LabelProof, line: &str) -> LabelProof {
    let mut q = proof.clone();
    q.checkpoint.extend_from_slice(line.as_bytes());
    q.checkpoint.push(b'\n');
    q
}

/// The three mutants of `proof` (an honest one) that a verifier once accepted and the
/// reference refused.
pub fn mutants(proof: &LabelProof, origin: &str) -> Vec<Case> {
    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    // The log key's own line, repeated with the signature zeroed: same name, same key id.
    let text = String::from_utf8_lossy(&proof.checkpoint).into_owned();
    let own = text
        .lines()
        .find(|l| l.starts_with(&format!("— {origin} ")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .and_then(|raw| raw.get(..4).map(<[u8]>::to_vec))
        .unwrap_or_default();
    let zero = [own, vec![0; 64]].concat();
    let witness = [vec![1, 2, 3, 4], vec![0; 64]].concat();
    vec![
        (
            "repeated-signature-invalid",
            "the log key's signature line followed by a second line of the same key whose \
             signature is zero: every line of the log key must verify",
            with_line(proof, &format!("— {origin} {}", b64(&zero))),
            "Checkpoint",
        ),
        (
            "cosignature-name-control",
            "a cosignature line whose key name holds a DEL (0x7F): a control character",
            with_line(proof, &format!("— w\u{7f}x {}", b64(&witness))),
            "Checkpoint",
        ),
        (
            "cosignature-name-too-long",
            "a cosignature line whose key name is 257 bytes (a key name is at most 256)",
            with_line(proof, &format!("— {} {}", "w".repeat(257), b64(&witness))),
            "Checkpoint",
        ),
    ]
}
