//! Label proofs from hostile files (`spec/label-proof.md`): parse and verify never panic, and
//! what parses prints back to the same text. Seeds: the `proof` strings of
//! `tests/vectors/label-proof/*.json`, whose log key is the one below.
#![no_main]
use libfuzzer_sys::fuzz_target;
use memlineage::lineage::label_proof::LabelProof;
use memlineage::log::{LogSigner, LogVerifier};
use memlineage::record::WriterKey;

fuzz_target!(|data: &[u8]| {
    let signer = LogSigner::new("example.com/agent-memory-ledger", WriterKey::for_label("log"))
        .expect("valid origin");
    let verifier: LogVerifier = signer.verifier();
    if let Ok(p) = LabelProof::parse(data) {
        assert_eq!(p.to_text().as_bytes(), data, "one accepted text per proof");
        let _ = p.verify(&verifier, None);
    }
});
