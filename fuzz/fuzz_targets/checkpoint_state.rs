//! Client checkpoint-state files and cosigned notes from hostile bytes: never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use memlineage::log::{verify_cosigned, CheckpointState, LogSigner, WitnessPolicy, WitnessSigner};
use memlineage::record::WriterKey;

fuzz_target!(|data: &[u8]| {
    let _ = CheckpointState::from_bytes(data);
    let log = LogSigner::new("fuzz.example/log", WriterKey::for_label("fuzz")).expect("origin");
    let w = WitnessSigner::new("fuzz.example/w", WriterKey::for_label("fuzz/w")).expect("name");
    if let Ok(policy) = WitnessPolicy::new(vec![w.verifier()], 1) {
        let _ = verify_cosigned(&log.verifier(), &policy, data);
    }
});
