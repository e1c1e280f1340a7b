//! Entry decoding: never panics, and whatever decodes re-encodes to the same bytes
//! (decode → encode → compare enforces the deterministic encoding).
#![no_main]
use libfuzzer_sys::fuzz_target;
use memlineage::record::{decode_payload, encode_payload, SignedEntry};

fuzz_target!(|data: &[u8]| {
    if let Ok(e) = decode_payload(data) {
        assert_eq!(encode_payload(&e), data);
    }
    if let Ok(s) = SignedEntry::decode(data) {
        assert_eq!(s.cose(), data);
        assert_eq!(encode_payload(s.entry()), encode_payload(s.entry()));
    }
});
