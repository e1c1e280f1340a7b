//! Batch signature checks (`spec/record.md` §2.3–2.4): for any list of byte strings, decoding
//! them as one batch (and spread over the cores) gives each the answer of decoding it alone.
//!
//! Input: the bytes are split at each `0xff 0xfe` pair into up to 64 items; three honest
//! entries by two writers are added after the fuzzer's items, so that every batch with a
//! valid fuzzer item runs the multiscalar equation with good and bad signatures mixed.
#![no_main]
use libfuzzer_sys::fuzz_target;
use memlineage::record::decode_on_all_cores;
use memlineage::record::{Kind, ProvEntry, SignedEntry, WriterKey};

fn honest() -> Vec<Vec<u8>> {
    let keys = [WriterKey::for_label("fuzz/a"), WriterKey::for_label("fuzz/b")];
    (0..3u64)
        .map(|i| {
            let k = &keys[(i % 2) as usize];
            let mut e = ProvEntry::new(k.key_id(), Kind::Fact, format!("fact {i}").as_bytes());
            e.time_ms = 1_700_000_000_000 + i;
            SignedEntry::sign(e, k).expect("sign").cose().to_vec()
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let mut items: Vec<&[u8]> = Vec::new();
    let mut rest = data;
    while items.len() < 64 {
        match rest.windows(2).position(|w| w == [0xff, 0xfe]) {
            Some(i) => {
                items.push(&rest[..i]);
                rest = &rest[i + 2..];
            }
            None => {
                items.push(rest);
                break;
            }
        }
    }
    let good = honest();
    items.extend(good.iter().map(Vec::as_slice));
    let answer = |r: &Result<SignedEntry, memlineage::record::RecordError>| {
        r.as_ref().map(|e| e.id()).map_err(|e| e.to_string())
    };
    let single: Vec<_> = items.iter().map(|b| answer(&SignedEntry::decode(b))).collect();
    let batch: Vec<_> = SignedEntry::decode_batch(&items, |_| None).iter().map(answer).collect();
    let cores: Vec<_> = decode_on_all_cores(&items, |_| None).iter().map(answer).collect();
    assert_eq!(single, batch);
    assert_eq!(single, cores);
});
