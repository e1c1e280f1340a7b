//! Label proofs (`spec/label-proof.md`; issue 32 target: the label proof of an entry at depth
//! 20 verified in at most 25 × one Ed25519 `verify_strict`, and under 64 KiB).
//!
//! One ledger of 10 000 background entries (prompts, tool outputs and memories of them, 400
//! flags and 100 tombstones among them, so the effects index holds about 510 subjects) and
//! chains of agent memories, each derived (weight 1.0) from the one before it, from a flagged
//! tool output: the entry at depth `d` has `d` ancestors. Timed in the same run: one
//! `verify_strict` (the raw primitive, first and again last), and for depth 1, 5 and 20 the parse and verification of
//! the entry's label proof (`LabelProof::parse` + `verify`: every entry's signature in one
//! batch, every audit path, every effects-index lookup, labels, quarantine and path) and its
//! proving (`Ledger::prove_label`). The proofs' sizes are printed.
//!
//! ```sh
//! cargo bench --bench label_proof
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ed25519_dalek::{Signer, SigningKey};
use memlineage::lineage::label_proof::LabelProof;
use memlineage::lineage::quarantine::Reach;
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Parent, ProvEntry, Role, Weight, WriterKey};
use memlineage::store::MemoryStore;
use memlineage::Ledger;
use std::hint::black_box;
use std::time::Duration;

criterion_group!(benches, label_proof);
criterion_main!(benches);

const DEPTHS: [usize; 3] = [1, 5, 20];

fn put(
    l: &mut Ledger<MemoryStore>,
    key: &WriterKey,
    kind: Kind,
    text: &str,
    parents: &[EntryId],
) -> EntryId {
    let parents = parents
        .iter()
        .map(|id| Parent {
            id: *id,
            weight: Weight::ONE,
        })
        .collect();
    let e = ProvEntry::new(key.key_id(), kind, text.as_bytes()).with_parents(parents);
    l.append(e, key, text.as_bytes()).expect("append").id
}

/// The ledger and, for each depth, the entry at that depth.
fn ledger() -> (Ledger<MemoryStore>, Vec<EntryId>) {
    let signer = LogSigner::new(
        "bench.example/label-proof",
        WriterKey::for_label("bench-log"),
    )
    .expect("log signer");
    let mut l =
        Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).expect("ledger");
    let (user, agent, tool, advisory) = (
        WriterKey::for_label("bench-user"),
        WriterKey::for_label("bench-agent"),
        WriterKey::for_label("bench-tool"),
        WriterKey::for_label("bench-advisory"),
    );
    l.bind(user.key_id(), Role::User, "user").expect("bind");
    l.bind(agent.key_id(), Role::Agent, "agent").expect("bind");
    l.bind(tool.key_id(), Role::Tool, "tool:read_inbox")
        .expect("bind");
    l.bind(advisory.key_id(), Role::System, "advisory")
        .expect("bind");
    for i in 0..2_500 {
        let p = put(&mut l, &user, Kind::Prompt, &format!("task {i}"), &[]);
        let t = put(
            &mut l,
            &tool,
            Kind::ToolResult,
            &format!("output {i}"),
            &[p],
        );
        let m = put(
            &mut l,
            &agent,
            Kind::Summary,
            &format!("memory {i}"),
            &[p, t],
        );
        put(&mut l, &agent, Kind::Fact, &format!("fact {i}"), &[m]);
        if i % 6 == 0 {
            l.flag(t, Reach::All, &advisory, "injection").expect("flag");
        }
        if i % 25 == 0 {
            l.tombstone(m, &user, "forget").expect("tombstone");
        }
    }
    let mut tips = Vec::new();
    for depth in DEPTHS {
        let mut at = put(
            &mut l,
            &tool,
            Kind::ToolResult,
            &format!("source {depth}"),
            &[],
        );
        l.flag(at, Reach::All, &advisory, "injection")
            .expect("flag");
        for k in 0..depth {
            at = put(
                &mut l,
                &agent,
                Kind::Summary,
                &format!("hop {k} of {depth}"),
                &[at],
            );
        }
        tips.push(at);
    }
    (l, tips)
}

fn label_proof(c: &mut Criterion) {
    let (mut l, tips) = ledger();
    let verifier = l.verifier().expect("verifier");
    let mut g = c.benchmark_group("label_proof");
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(4));
    g.sample_size(40);
    let sk = SigningKey::from_bytes(&[7; 32]);
    let msg = [0x5au8; 200];
    let sig = sk.sign(&msg);
    let vk = sk.verifying_key();
    g.bench_function("ed25519_verify_strict", |b| {
        b.iter(|| black_box(vk.verify_strict(black_box(&msg), &sig)).expect("verifies"))
    });
    for (depth, tip) in DEPTHS.iter().zip(&tips) {
        let proof = l.prove_label(tip).expect("prove");
        let text = proof.to_text();
        let v = proof.verify(&verifier, None).expect("verifies");
        eprintln!(
            "depth {depth}: {} bytes, {} entries, {} lookups, {} ancestors, label {}, \
             quarantined {}; ledger {} entries",
            text.len(),
            proof.entries.len(),
            proof.lookups.len(),
            v.ancestry.len() - 1,
            v.label.name(),
            v.quarantine.is_some(),
            l.len()
        );
        g.bench_function(BenchmarkId::new("verify", depth), |b| {
            b.iter(|| {
                let p = LabelProof::parse(black_box(text.as_bytes())).expect("parses");
                black_box(p.verify(&verifier, None).expect("verifies"))
            })
        });
        g.bench_function(BenchmarkId::new("prove", depth), |b| {
            b.iter(|| black_box(l.prove_label(black_box(tip)).expect("proves")))
        });
    }
    // Again at the end: on a shared machine the primitive's cost drifts within one run, and
    // the ratio is reported against both.
    g.bench_function("ed25519_verify_strict_after", |b| {
        b.iter(|| black_box(vk.verify_strict(black_box(&msg), &sig)).expect("verifies"))
    });
    g.finish();
}
