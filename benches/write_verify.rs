//! Cost of memlineage's operations next to the raw primitive each one is built on, so that one
//! run shows the overhead ratio (`spec/benchmarks.md`).
//!
//! Groups (in memory, [`MemoryStore`], except `durable`):
//! - `write`: `ed25519_sign` (one Ed25519 signature over a Sig_structure of the same size as
//!   a summary entry's) vs `ledger_append/<size>` (build, sign, check, label, hash into the
//!   tree and store one summary entry with 2 parents);
//! - `verify`: `ed25519_verify_strict` vs `entry_verify_with_inclusion/<size>` (decode and
//!   verify the COSE_Sign1 bytes, then check a precomputed audit path against an
//!   already-verified checkpoint), with its two halves `entry_decode` and
//!   `verify_inclusion/<size>`, and two parts of `entry_decode` the raw primitive does not pay
//!   for: `kid_decompress` (Ed25519 point decompression of the `kid`) and `payload_decode`
//!   (CBOR payload to `ProvEntry`, with the canonical-form check);
//! - `gate`: `hashmap_get_8` (8 lookups in a 100k map: the floor) vs `decide_allow_8` and
//!   `decide_deny_8` (`Ledger::gate` on a call justified by 8 entries; the denial also computes
//!   the lineage path back to the tool output), and per ancestry depth 1, 5 and 20
//!   `decide_allow_8/<depth>` vs `origin_allow_8/<depth>` (`Ledger::gate` vs
//!   `Ledger::gate_values` with the origin check, `spec/gate.md` §3.1, on 8 tips of chains of
//!   that depth: every ancestor visited; repeated on one handle, the entries it verified are
//!   kept, `spec/gate.md` §3.3) and `origin_allow_8_cold/<depth>` (the same after `Ledger::forget_verified`:
//!   every ancestor read, verified and searched);
//! - `retrieve8`: `ed25519_verify_strict_x8` vs `ledger_retrieve/<size>` (cold) and
//!   `ledger_retrieve_warm/<size>` (`Ledger::retrieve`
//!   of 8 ids: fetch, decode and verify, prove and check inclusion, render), with the
//!   `prove_inclusion_x8/<size>` part of it.
//!
//! - `audit`: `ed25519_verify_strict_loop` (one `verify_strict` per entry of the 1k ledger, keys
//!   pre-decoded) vs `audit_1k` (`audit::audit` of the same entries: decode, batch signature
//!   checks on all cores, keyring and tombstone rules, labels, content hashes, the tree root);
//!   per element: throughput is the number of entries;
//! - `durable`: `sign_plus_fdatasync` vs `sqlite_append_1`, `sqlite_append_batch64` (sign
//!   and group-commit 64 entries; per element: throughput is set to 64) and
//!   `sqlite_append_signed64` (group-commit 64 entries signed beforehand, untimed).
//!
//! The size-dependent benches run at 1k and 100k entries, and also at 1M when the environment
//! variable `MEMLINEAGE_BENCH_1M` is set.
//!
//! Run: `cargo bench --bench write_verify` (about 2 minutes on 2 cores).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use memlineage::audit::AuditItem;
use memlineage::gate::{Policy, ToolCall};
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{
    decode_payload, encode_payload, protected_header, sig_structure, EntryId, KeyId, Kind, Parent,
    ProvEntry, PublicKey, Role, SignedEntry, Weight, WriterKey,
};
use memlineage::retrieve::Outcome;
use memlineage::store::{MemoryStore, Store};
use memlineage::Ledger;
use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Ledger sizes (entries, keyring entries included) the size-dependent benches run at.
const SIZES: [(u64, &str); 2] = [(1_000, "1k"), (100_000, "100k")];

/// The scale size, added to [`SIZES`] when the environment variable `MEMLINEAGE_BENCH_1M` is
/// set (building it signs a million entries: about a minute and 1 GiB of RAM on 2 cores).
const SCALE: (u64, &str) = (1_000_000, "1M");

/// Entries per `append_batch` call while pre-filling.
const CHUNK: u64 = 1_000;

/// Content of the benchmarked summary entry (the memory text; stored beside the entry).
const SUMMARY: &[u8] = b"The user asked to pay the December bill. The bill (read with read_file) \
lists Car Rental 98.70 and asks for a transfer to IBAN UK12345678901234567890. The user's \
saved payees include their landlord and the car rental company; no payment has been made \
yet this month. Next step: confirm the amount and recipient with the user before paying.";

/// 2025-01-01T00:00:00Z in ms.
const T0: u64 = 1_735_689_600_000;

criterion_group!(benches, all);
criterion_main!(benches);

fn all(c: &mut Criterion) {
    let mut sizes = SIZES.to_vec();
    if std::env::var_os("MEMLINEAGE_BENCH_1M").is_some() {
        sizes.push(SCALE);
    }
    let mut fixtures: Vec<(Fixture, &str)> = sizes
        .iter()
        .map(|&(n, name)| (Fixture::build(n), name))
        .collect();
    describe(&mut fixtures);
    verify(c, &mut fixtures);
    gate(c, &fixtures[1].0);
    retrieve8(c, &mut fixtures);
    audit(c, &mut fixtures[0].0);
    // Last: it appends to the fixtures.
    write(c, &mut fixtures);
    durable(c);
}

/// `durable`: one signature plus one `fdatasync` of a 350-byte record (the floor for any
/// durable signed append) vs `Ledger<SqliteStore>::append` (one transaction, WAL,
/// `synchronous=FULL`) and `append_batch` of 64 (group commit: one transaction for 64).
fn durable(c: &mut Criterion) {
    use std::io::Write as _;
    let mut g = c.benchmark_group("durable");
    configure(&mut g);
    let dir = tempfile::tempdir().expect("tempdir");
    let key = WriterKey::for_label("bench/agent");
    let msg = vec![0x5a; 300];
    let mut file = std::fs::File::create(dir.path().join("raw.log")).expect("raw file");
    g.throughput(Throughput::Elements(1));
    g.bench_function("sign_plus_fdatasync", |b| {
        b.iter(|| {
            let sig = key.sign(black_box(&msg));
            file.write_all(&msg).expect("write");
            file.write_all(&sig).expect("write");
            file.sync_data().expect("fdatasync");
        })
    });
    let signer =
        LogSigner::new("bench.example/durable", WriterKey::for_label("bench/log")).expect("origin");
    let store = memlineage::store::SqliteStore::open(&dir.path().join("d.ledger")).expect("open");
    let mut l = Ledger::create(store, signer, LabelPolicy::default()).expect("create");
    l.bind(key.key_id(), Role::Agent, "agent").expect("bind");
    let mut time = T0;
    let fact = |time: u64| ProvEntry::new(key.key_id(), Kind::Fact, SUMMARY).with_time_ms(time);
    g.bench_function("sqlite_append_1", |b| {
        b.iter(|| {
            time += 1;
            black_box(l.append(fact(time), &key, SUMMARY).expect("append"))
        })
    });
    // Group commit of entries their writers already signed: what the store itself adds.
    g.throughput(Throughput::Elements(64));
    g.bench_function("sqlite_append_signed64", |b| {
        b.iter_batched(
            || {
                (0..64)
                    .map(|_| {
                        time += 1;
                        SignedEntry::sign(fact(time), &key).expect("sign")
                    })
                    .collect::<Vec<_>>()
            },
            |signed| {
                let batch = signed.into_iter().map(|s| (s, SUMMARY)).collect();
                black_box(l.append_signed(batch).expect("batch"))
            },
            criterion::BatchSize::SmallInput,
        )
    });
    g.bench_function("sqlite_append_batch64", |b| {
        b.iter(|| {
            let drafts = (0..64)
                .map(|_| {
                    time += 1;
                    memlineage::Draft {
                        entry: fact(time),
                        key: &key,
                        content: SUMMARY,
                    }
                })
                .collect();
            black_box(l.append_batch(drafts).expect("batch"))
        })
    });
    g.finish();
}

/// Prints the sizes the numbers depend on (recorded in `spec/benchmarks.md`).
fn describe(fixtures: &mut [(Fixture, &str)]) {
    let fx = &fixtures[0].0;
    let sample = fx.sample_summary();
    eprintln!(
        "write_verify: summary content {} B, COSE_Sign1 {} B, Sig_structure {} B",
        SUMMARY.len(),
        sample.cose().len(),
        summary_sig_structure_len(fx)
    );
    for (fx, name) in fixtures.iter_mut() {
        let id = fx.summaries[fx.summaries.len() / 2];
        let (proof, _) = fx.ledger.prove_inclusion(&id).expect("proof");
        eprintln!(
            "write_verify: {name}: {} entries, verify proof for leaf {} has {} hashes",
            fx.ledger.len(),
            proof.index,
            proof.path.len()
        );
    }
}

/// `write`: one Ed25519 signature vs one ledger append.
fn write(c: &mut Criterion, fixtures: &mut [(Fixture, &str)]) {
    let mut g = c.benchmark_group("write");
    configure(&mut g);
    g.throughput(Throughput::Elements(1));
    let key = WriterKey::for_label("bench/agent");
    let msg = vec![0x5a; summary_sig_structure_len(&fixtures[0].0)];
    g.bench_function("ed25519_sign", |b| {
        b.iter(|| black_box(key.sign(black_box(&msg))))
    });
    let mut time = T0 + 10_000_000; // a fresh time per append keeps every entry distinct
    for (fx, name) in fixtures.iter_mut() {
        let base = fx.ledger.len();
        g.bench_function(BenchmarkId::new("ledger_append", *name), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    // Keep the 1k ledger between 1k and 2k entries (rebuilding is untimed); the
                    // 100k one is too slow to rebuild and grows during the run.
                    if base <= 1_000 && fx.ledger.len() >= 2 * base {
                        *fx = Fixture::build(base);
                    }
                    time += 1;
                    let start = Instant::now();
                    let entry = fx.summary(time);
                    let appended = fx.ledger.append(entry, &fx.agent, SUMMARY);
                    total += start.elapsed();
                    black_box(appended.expect("append"));
                }
                total
            })
        });
    }
    g.finish();
}

/// `verify`: verify_strict vs decode + inclusion against a verified checkpoint.
fn verify(c: &mut Criterion, fixtures: &mut [(Fixture, &str)]) {
    let mut g = c.benchmark_group("verify");
    configure(&mut g);
    g.throughput(Throughput::Elements(1));
    let sample = fixtures[0].0.sample_summary();
    let (vk, msg, sig) = raw_parts(&sample);
    g.bench_function("ed25519_verify_strict", |b| {
        b.iter(|| black_box(vk.verify_strict(black_box(&msg), &sig)).expect("verifies"))
    });
    g.bench_function("entry_decode", |b| {
        b.iter(|| black_box(SignedEntry::decode(black_box(sample.cose())).expect("decodes")))
    });
    let kid = sample.writer();
    g.bench_function("kid_decompress", |b| {
        b.iter(|| black_box(black_box(&kid).verifying_key().expect("key")))
    });
    let payload = encode_payload(sample.entry());
    g.bench_function("payload_decode", |b| {
        b.iter(|| black_box(decode_payload(black_box(&payload)).expect("payload")))
    });
    for (fx, name) in fixtures.iter_mut() {
        let id = fx.summaries[fx.summaries.len() / 2];
        let (proof, checkpoint) = fx.ledger.prove_inclusion(&id).expect("proof");
        let bytes = fx.ledger.get(&id).expect("entry").cose().to_vec();
        g.bench_function(BenchmarkId::new("verify_inclusion", *name), |b| {
            b.iter(|| {
                checkpoint
                    .verify_inclusion(black_box(&id), black_box(&proof))
                    .expect("included")
            })
        });
        // An offline verifier that holds the writers' keys (a keyring) decompresses each once.
        let keys: Vec<PublicKey> = [&fx.user, &fx.tool, &fx.agent]
            .iter()
            .map(|k| k.key_id().public_key().expect("key"))
            .collect();
        let known = |k: &KeyId| keys.iter().find(|p| p.id() == *k).copied();
        g.bench_function(
            BenchmarkId::new("entry_verify_with_inclusion_known_key", *name),
            |b| {
                b.iter(|| {
                    let e =
                        SignedEntry::decode_with_keys(black_box(&bytes), known).expect("decodes");
                    checkpoint
                        .verify_inclusion(&e.id(), black_box(&proof))
                        .expect("included");
                    black_box(e)
                })
            },
        );
        g.bench_function(
            BenchmarkId::new("entry_verify_with_inclusion", *name),
            |b| {
                b.iter(|| {
                    let e = SignedEntry::decode(black_box(&bytes)).expect("decodes");
                    checkpoint
                        .verify_inclusion(&e.id(), black_box(&proof))
                        .expect("included");
                    black_box(e)
                })
            },
        );
    }
    g.finish();
}

/// `gate`: a decision over 8 justifying entries on the 100k ledger.
fn gate(c: &mut Criterion, fx: &Fixture) {
    let mut g = c.benchmark_group("gate");
    configure(&mut g);
    let policy = Policy::default();
    let trusted: Vec<EntryId> = fx
        .prompts
        .iter()
        .step_by(fx.prompts.len() / 8)
        .take(8)
        .copied()
        .collect();
    let call = |ids: &[EntryId]| ToolCall {
        tool: "send_money".into(),
        sensitive: false,
        args: vec![
            ("recipient".into(), ids[..4].to_vec()),
            ("amount".into(), ids[4..].to_vec()),
        ],
    };
    let allow = call(&trusted);
    let mut mixed = trusted.clone();
    mixed[7] = *fx.summaries.last().expect("summaries"); // derived from a tool result: denied
    let deny = call(&mixed);
    assert!(fx.ledger.gate(&policy, &allow).is_allow());
    assert!(!fx.ledger.gate(&policy, &deny).is_allow());
    let map: HashMap<EntryId, u64> = fx
        .all
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, i as u64))
        .collect();
    g.bench_function("hashmap_get_8", |b| {
        b.iter(|| {
            for id in black_box(&trusted) {
                black_box(map.get(id));
            }
        })
    });
    g.bench_function("decide_allow_8", |b| {
        b.iter(|| black_box(fx.ledger.gate(&policy, black_box(&allow))))
    });
    g.bench_function("decide_deny_8", |b| {
        b.iter(|| black_box(fx.ledger.gate(&policy, black_box(&deny))))
    });
    for depth in [1usize, 5, 20] {
        let (mut l, tips) = origin_chains(depth);
        let call = call(&tips);
        let values: serde_json::Map<String, serde_json::Value> =
            serde_json::json!({"recipient": ORIGIN_IBAN, "amount": 1200})
                .as_object()
                .expect("object")
                .clone();
        assert!(l.gate_values(&policy, &call, &values).is_allow());
        g.bench_function(BenchmarkId::new("decide_allow_8", depth), |b| {
            b.iter(|| black_box(l.gate(&policy, black_box(&call))))
        });
        g.bench_function(BenchmarkId::new("origin_allow_8", depth), |b| {
            b.iter(|| black_box(l.gate_values(&policy, black_box(&call), black_box(&values))))
        });
        // Cold: the handle forgets every entry it verified first (signatures checked again,
        // texts read and searched again), as a fresh process would.
        g.bench_function(BenchmarkId::new("origin_allow_8_cold", depth), |b| {
            b.iter(|| {
                l.forget_verified();
                black_box(l.gate_values(&policy, black_box(&call), black_box(&values)))
            })
        });
    }
    g.finish();
}

/// The IBAN of the origin-check chains.
const ORIGIN_IBAN: &str = "GB29NWBK60161331926819";

/// A ledger of 8 chains, each a user prompt stating [`ORIGIN_IBAN`] and 1200, then `depth`
/// agent summaries repeating them (strong edges): the tips are justifying entries whose
/// ancestries hold `depth` entries, all searched before the prompt's authority is found.
fn origin_chains(depth: usize) -> (Ledger<MemoryStore>, Vec<EntryId>) {
    let signer =
        LogSigner::new("bench.example/origin", WriterKey::for_label("bench/log")).expect("origin");
    let mut l =
        Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).expect("create");
    let user = WriterKey::for_label("bench/user");
    let agent = WriterKey::for_label("bench/agent");
    l.bind(user.key_id(), Role::User, "user").expect("bind");
    l.bind(agent.key_id(), Role::Agent, "agent").expect("bind");
    let mut time = T0;
    let mut tips = Vec::new();
    for chain in 0..8 {
        let text = format!("Chain {chain}: pay 1200 to IBAN {ORIGIN_IBAN}.");
        time += 1;
        let e = ProvEntry::new(user.key_id(), Kind::Prompt, text.as_bytes()).with_time_ms(time);
        let mut at = l.append(e, &user, text.as_bytes()).expect("prompt").id;
        for hop in 0..depth {
            let text = format!("Chain {chain} hop {hop}: 1200 to {ORIGIN_IBAN}, as asked.");
            time += 1;
            let e = ProvEntry::new(agent.key_id(), Kind::Summary, text.as_bytes())
                .with_parents(vec![Parent {
                    id: at,
                    weight: Weight::ONE,
                }])
                .with_time_ms(time);
            at = l.append(e, &agent, text.as_bytes()).expect("summary").id;
        }
        tips.push(at);
    }
    (l, tips)
}

/// `retrieve8`: 8 × verify_strict vs `Ledger::retrieve` of 8 ids.
fn retrieve8(c: &mut Criterion, fixtures: &mut [(Fixture, &str)]) {
    let mut g = c.benchmark_group("retrieve8");
    configure(&mut g);
    g.throughput(Throughput::Elements(8));
    for (fx, name) in fixtures.iter_mut() {
        let ids: Vec<EntryId> = fx
            .all
            .iter()
            .step_by(fx.all.len() / 8)
            .take(8)
            .copied()
            .collect();
        let raw: Vec<_> = ids
            .iter()
            .map(|id| raw_parts(&fx.ledger.get(id).expect("entry")))
            .collect();
        let out = fx.ledger.retrieve(&ids).expect("retrieve");
        assert!(
            out.iter().all(|o| matches!(o, Outcome::Verified(_))),
            "{out:?}"
        );
        if *name == "1k" {
            g.bench_function("ed25519_verify_strict_x8", |b| {
                b.iter(|| {
                    for (vk, msg, sig) in black_box(&raw) {
                        vk.verify_strict(msg, sig).expect("verifies");
                    }
                })
            });
        }
        // Cold: as a fresh handle (every signature and audit path checked).
        g.bench_function(BenchmarkId::new("ledger_retrieve", *name), |b| {
            b.iter(|| {
                fx.ledger.forget_verified();
                black_box(fx.ledger.retrieve(black_box(&ids)).expect("retrieve"))
            })
        });
        // Warm: the same entries again under the same checkpoint (`spec/log.md` §11).
        g.bench_function(BenchmarkId::new("ledger_retrieve_warm", *name), |b| {
            b.iter(|| black_box(fx.ledger.retrieve(black_box(&ids)).expect("retrieve")))
        });
        // Part of retrieval the raw primitive does not pay for: building the 8 audit paths.
        g.bench_function(BenchmarkId::new("prove_inclusion_x8", *name), |b| {
            b.iter(|| {
                for id in black_box(&ids) {
                    black_box(fx.ledger.prove_inclusion(id).expect("proof"));
                }
            })
        });
    }
    g.finish();
}

/// `audit`: the offline audit of the 1k ledger against a loop of `verify_strict` over the same
/// entries (the baseline: "a loop of single `verify_strict` calls").
fn audit(c: &mut Criterion, fx: &mut Fixture) {
    let checkpoint = fx.ledger.checkpoint().expect("checkpoint");
    let verifier = fx.ledger.verifier().expect("verifier");
    let policy = fx.ledger.label_policy();
    let store = fx.ledger.store();
    let items: Vec<AuditItem> = store
        .metas_from(0)
        .expect("metas")
        .into_iter()
        .map(|m| AuditItem {
            cose: store.entry_bytes(m.index).expect("read").expect("entry"),
            stored_label: Some(m.label),
            stored_kind: Some(m.kind),
            stored_id: Some(m.id),
            stored_context: None,
            content: store.content_at(m.index).expect("read"),
        })
        .collect();
    let raw: Vec<_> = items
        .iter()
        .map(|it| raw_parts(&SignedEntry::decode(&it.cose).expect("entry")))
        .collect();
    let report = memlineage::audit::audit(
        items.iter().cloned().map(Ok::<_, String>),
        &verifier,
        checkpoint.note(),
        policy,
        verifier.key_id(),
    )
    .expect("audit");
    assert!(
        report.failures.is_empty() && report.root_matches,
        "{report:?}"
    );
    let mut g = c.benchmark_group("audit");
    configure(&mut g);
    g.sample_size(10);
    g.throughput(Throughput::Elements(items.len() as u64));
    g.bench_function("ed25519_verify_strict_loop", |b| {
        b.iter(|| {
            for (vk, msg, sig) in black_box(&raw) {
                vk.verify_strict(msg, sig).expect("verifies");
            }
        })
    });
    g.bench_function("audit_1k", |b| {
        b.iter_batched(
            || items.clone(),
            |items| {
                let r = memlineage::audit::audit(
                    items.into_iter().map(Ok::<_, String>),
                    &verifier,
                    checkpoint.note(),
                    policy,
                    verifier.key_id(),
                )
                .expect("audit");
                assert_eq!(r.verified, raw.len() as u64);
                black_box(r)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// Shared timing settings: keeps the whole run near 2 minutes on 2 cores.
fn configure(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    g.sample_size(30);
}

/// A ledger pre-filled to `size` entries: 3 keyring entries, then a repeating pattern of a
/// user prompt, a tool result, and an agent summary of both (prompt at weight 1.0, tool
/// result at 0.9, so the summary is Derived-Untrusted).
struct Fixture {
    ledger: Ledger<MemoryStore>,
    user: WriterKey,
    tool: WriterKey,
    agent: WriterKey,
    /// Every entry id in log order (keyring entries included).
    all: Vec<EntryId>,
    prompts: Vec<EntryId>,
    summaries: Vec<EntryId>,
}

impl Fixture {
    fn build(size: u64) -> Self {
        let signer = LogSigner::new(
            "bench.memlineage.local/log",
            WriterKey::for_label("bench/log"),
        )
        .expect("origin");
        let mut ledger =
            Ledger::create(MemoryStore::new(), signer, LabelPolicy::default()).expect("create");
        let (user, tool, agent) = (
            WriterKey::for_label("bench/user"),
            WriterKey::for_label("bench/tool"),
            WriterKey::for_label("bench/agent"),
        );
        let mut all = Vec::with_capacity(size as usize);
        for (key, role, name) in [
            (&user, Role::User, "user"),
            (&tool, Role::Tool, "tool:read_file"),
            (&agent, Role::Agent, "agent"),
        ] {
            all.push(
                ledger
                    .bind(key.key_id(), role, name)
                    .expect("bind")
                    .expect("new binding")
                    .id,
            );
        }
        let mut fx = Fixture {
            ledger,
            user,
            tool,
            agent,
            all,
            prompts: Vec::new(),
            summaries: Vec::new(),
        };
        while (fx.all.len() as u64) < size {
            let n = CHUNK.min(size - fx.all.len() as u64);
            fx.fill(n);
        }
        fx
    }

    /// Appends `n` entries in one batch; summaries name the prompt and tool result just
    /// before them (signed here, so their ids are known within the batch). Signing runs on
    /// all cores: prompts and tool results first, then the summaries that name them.
    fn fill(&mut self, n: u64) {
        use rayon::prelude::*;
        let start = self.all.len() as u64;
        let sign = |i: u64, parents: Option<(EntryId, EntryId)>| -> (SignedEntry, Vec<u8>) {
            let content = format!("memory {i}: {}", "x".repeat(80)).into_bytes();
            let (kind, key) = match i % 3 {
                0 => (Kind::Prompt, &self.user),
                1 => (Kind::ToolResult, &self.tool),
                _ => (Kind::Summary, &self.agent),
            };
            let mut e = ProvEntry::new(key.key_id(), kind, &content).with_time_ms(T0 + i);
            if let Some((p, t)) = parents {
                e = e.with_parents(vec![
                    Parent {
                        id: p,
                        weight: Weight::ONE,
                    },
                    Parent {
                        id: t,
                        weight: w(900_000),
                    },
                ]);
            }
            (SignedEntry::sign(e, key).expect("sign"), content)
        };
        // A summary with at least two entries of this batch before it names them.
        let has_parents = |k: u64| (start + k) % 3 == 2 && k >= 2;
        let mut slots: Vec<Option<(SignedEntry, Vec<u8>)>> = (0..n)
            .into_par_iter()
            .map(|k| (!has_parents(k)).then(|| sign(start + k, None)))
            .collect();
        let summaries: Vec<(usize, (SignedEntry, Vec<u8>))> = (0..n)
            .into_par_iter()
            .filter(|&k| has_parents(k))
            .map(|k| {
                let id = |j: u64| slots[j as usize].as_ref().expect("signed in pass 1").0.id();
                (k as usize, sign(start + k, Some((id(k - 2), id(k - 1)))))
            })
            .collect();
        for (k, signed) in summaries {
            slots[k] = Some(signed);
        }
        let batch: Vec<(SignedEntry, Vec<u8>)> = slots
            .into_iter()
            .map(|s| s.expect("every slot signed"))
            .collect();
        let signed: Vec<(SignedEntry, &[u8])> = batch
            .iter()
            .map(|(s, c)| (s.clone(), c.as_slice()))
            .collect();
        let appended = self.ledger.append_signed(signed).expect("append");
        for ((s, _), a) in batch.iter().zip(appended) {
            self.all.push(a.id);
            match s.entry().kind {
                Kind::Prompt => self.prompts.push(a.id),
                Kind::Summary if !s.entry().parents.is_empty() => self.summaries.push(a.id),
                _ => {}
            }
        }
    }

    /// The benchmarked entry: an agent summary with 2 parents (a prompt at 1.0 and the tool
    /// result after it at 0.3, below τ: Derived-Trusted) at time `time`.
    fn summary(&self, time: u64) -> ProvEntry {
        let p = self.prompts[self.prompts.len() / 2];
        let t = self.all[self.ledger.index_of(&p).expect("prompt") as usize + 1];
        ProvEntry::new(self.agent.key_id(), Kind::Summary, SUMMARY)
            .with_parents(vec![
                Parent {
                    id: p,
                    weight: Weight::ONE,
                },
                Parent {
                    id: t,
                    weight: w(300_000),
                },
            ])
            .with_time_ms(time)
    }

    /// A signed summary like the benchmarked one (not appended).
    fn sample_summary(&self) -> SignedEntry {
        SignedEntry::sign(self.summary(T0 - 1), &self.agent).expect("sign")
    }
}

fn summary_sig_structure_len(fx: &Fixture) -> usize {
    let e = fx.summary(T0);
    sig_structure(&protected_header(&e.writer), &encode_payload(&e)).len()
}

/// The verifying key, signed bytes (Sig_structure) and signature of `s`: what
/// `SignedEntry::decode` hands to `verify_strict`.
fn raw_parts(
    s: &SignedEntry,
) -> (
    ed25519_dalek::VerifyingKey,
    Vec<u8>,
    ed25519_dalek::Signature,
) {
    let e = s.entry();
    let msg = sig_structure(&protected_header(&e.writer), &encode_payload(e));
    let sig: [u8; 64] = s.cose()[s.cose().len() - 64..]
        .try_into()
        .expect("64 bytes");
    (
        e.writer.verifying_key().expect("key"),
        msg,
        ed25519_dalek::Signature::from_bytes(&sig),
    )
}

fn w(millionths: u64) -> Weight {
    Weight::new(millionths).expect("weight")
}
