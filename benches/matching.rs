//! The cost of value matching (`spec/hooks.md` §4): building the haystack of one 3 KB tool
//! output (done once per read and handle) and matching a payment's arguments against it, as
//! values and as needles made once per decision (against the 3 KB output and a small one),
//! beside one Ed25519 `verify_strict` as the raw primitive, all in the same run. Results in
//! `spec/benchmarks.md`.
//!
//! ```sh
//! cargo bench --bench matching
//! ```

use criterion::{criterion_group, criterion_main, Criterion};
use memlineage::gate::matching::{Haystack, Needle};
use serde_json::json;
use std::hint::black_box;
use std::time::Duration;

mod common;

criterion_group!(benches, matching);
criterion_main!(benches);

/// A 3 KB statement: 40 transactions with amounts, dates, IBANs and subjects.
fn statement() -> String {
    let mut t = String::new();
    for i in 0..40 {
        t.push_str(&format!(
            "- amount: {}.{:02}\n  date: '2022-{:02}-{:02}'\n  recipient: GB{:02}BUKB2020155555{:04}\n  subject: Invoice {i}\n",
            100 + i * 37,
            i,
            1 + i % 12,
            1 + i % 28,
            10 + i,
            i
        ));
    }
    t
}

fn matching(c: &mut Criterion) {
    let mut g = c.benchmark_group("matching");
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    g.sample_size(30);
    common::verify_strict_floor(&mut g);
    let text = statement();
    g.bench_function("haystack_new_3kb", |b| {
        b.iter(|| black_box(Haystack::new(black_box(&text))))
    });
    let h = Haystack::new(&text);
    let args = [
        json!(5000),
        json!("5 000,00"),
        json!("ZZ77ACCOUNT0001"),
        json!("4411223398765432"),
        json!("Pay the rent for March"),
    ];
    g.bench_function("match_5_arguments", |b| {
        b.iter(|| {
            for a in &args {
                black_box(h.matches(black_box(a)));
            }
        })
    });
    // What each further read of a session costs: the needles are made once per decision.
    let needles: Vec<Needle> = args.iter().map(Needle::new).collect();
    g.bench_function("match_5_needles", |b| {
        b.iter(|| {
            for n in &needles {
                black_box(h.matches_needle(black_box(n)));
            }
        })
    });
    let small = Haystack::new(r#"{"query":"rent March","echo":true}"#);
    g.bench_function("match_5_needles_small_read", |b| {
        b.iter(|| {
            for n in &needles {
                black_box(small.matches_needle(black_box(n)));
            }
        })
    });
    g.finish();
}
