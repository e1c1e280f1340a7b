//! What the criterion benches share: the raw primitive every figure is a ratio of.

use criterion::measurement::WallTime;
use criterion::BenchmarkGroup;
use memlineage::record::WriterKey;
use std::hint::black_box;

/// Times one Ed25519 `verify_strict` of a 100-byte message as `ed25519_verify_strict` in `g`:
/// the floor the group's other figures are reported against (`spec/benchmarks.md`).
pub fn verify_strict_floor(g: &mut BenchmarkGroup<'_, WallTime>) {
    let key = WriterKey::for_label("bench-verify");
    let msg = [7u8; 100];
    let sig = ed25519_dalek::Signature::from_bytes(&key.sign(&msg));
    let vk = key.verifying_key();
    g.bench_function("ed25519_verify_strict", |b| {
        b.iter(|| black_box(vk.verify_strict(black_box(&msg), &sig)).expect("verifies"))
    });
}
