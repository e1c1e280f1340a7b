//! Proof bundles and checkpoints from hostile files: parse and verify never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use memlineage::log::{LogSigner, LogVerifier, ProofBundle};
use memlineage::record::WriterKey;

fuzz_target!(|data: &[u8]| {
    let signer = LogSigner::new("fuzz.example/log", WriterKey::for_label("fuzz")).expect("valid origin");
    let verifier: LogVerifier = signer.verifier();
    let _ = verifier.verify(data);
    if let Ok(b) = ProofBundle::parse(data) {
        let _ = b.verify(&verifier);
        let _ = ProofBundle::parse(b.to_text().as_bytes());
    }
});
