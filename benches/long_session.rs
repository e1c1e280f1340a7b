//! Decisions in long sessions (issue 32, `spec/hooks.md` §4.7): matching a payment's five
//! arguments against a session of 10 and of 10,000 reads of 3 KB, through the index of the
//! reads (`ReadIndex::matching`) and by the scan it replaced (`ReadIndex::scan`, every read
//! searched), and `Front::check` of the payment after 10 and 10,000 reads (and right after one
//! more read, as the Python bench's rounds do); beside one Ed25519
//! `verify_strict` as the raw primitive, in the same run. Results in `spec/benchmarks.md`.
//!
//! ```sh
//! cargo bench --bench long_session
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use memlineage::front::{DerivedKeys, Front, Session};
use memlineage::gate::matching::{Haystack, Needle, ReadIndex};
use memlineage::gate::Policy;
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, WriterKey};
use memlineage::store::MemoryStore;
use memlineage::Ledger;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::hint::black_box;

mod common;
#[path = "common/session.rs"]
#[allow(dead_code)]
mod session;

criterion_group!(benches, long_session);
criterion_main!(benches);

/// The session sizes compared.
const READS: [usize; 2] = [10, 10_000];

/// A 3 KB statement, different for each `seed`: 40 transactions with amounts, dates, IBANs and
/// subjects.
fn statement(seed: usize) -> String {
    let mut t = String::new();
    for i in 0..40 {
        let k = seed * 40 + i;
        t.push_str(&format!(
            "- amount: {}.{:02}\n  date: '2022-{:02}-{:02}'\n  recipient: GB{:02}BUKB{:014}\n  subject: Invoice {k} for order {}\n",
            100 + k * 37 % 90_000,
            k % 100,
            1 + k % 12,
            1 + k % 28,
            10 + k % 90,
            k * 7919,
            k * 31
        ));
    }
    t
}

/// A payment's arguments: an amount, an amount as a string, an IBAN, a card number, a subject.
fn payment() -> Map<String, Value> {
    let Value::Object(m) = json!({
        "amount": 5000,
        "amount_text": "5 000,00",
        "recipient": "ZZ77ACCOUNT0001",
        "card": "4411223398765432",
        "subject": "Pay the rent for March",
    }) else {
        unreachable!("an object");
    };
    m
}

fn id(i: usize) -> EntryId {
    let mut b = [0u8; 32];
    b[..8].copy_from_slice(&(i as u64).to_le_bytes());
    EntryId(b)
}

/// A front whose session read a prompt and `n - 1` statements.
fn front_after(n: usize) -> (Front<MemoryStore, DerivedKeys>, Session) {
    let signer = LogSigner::new("bench.example/long", WriterKey::for_label("bench-log"))
        .expect("log signer");
    let l = Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).expect("ledger");
    let policy = Policy::from_toml(
        "default_max_label = \"derived_trusted\"\nsensitive_tools = [\"send_money\"]\n",
    )
    .expect("policy");
    let mut f = Front::new(l, policy, DerivedKeys("bench".into()));
    let mut s = Session::new("s");
    f.record_prompt(&mut s, "Pay my bills").expect("prompt");
    for i in 1..n {
        f.record_tool_result(
            &mut s,
            "read_file",
            &json!({"path": format!("bills/{i}.yaml")}),
            &statement(i),
        )
        .expect("tool result");
    }
    (f, s)
}

fn long_session(c: &mut Criterion) {
    let mut g = c.benchmark_group("long_session");
    session::configure(&mut g);
    common::verify_strict_floor(&mut g);
    let args = payment();
    let needles: Vec<Needle> = args.values().map(Needle::new).collect();
    for n in READS {
        let mut index = ReadIndex::new();
        let ids: Vec<EntryId> = (0..n).map(id).collect();
        for (i, id) in ids.iter().enumerate() {
            index.insert(*id, Haystack::new(&statement(i)));
        }
        g.bench_with_input(BenchmarkId::new("match_5_indexed", n), &n, |b, _| {
            b.iter(|| {
                for nd in &needles {
                    black_box(index.matching(black_box(&ids), nd));
                }
            })
        });
        let at: HashMap<EntryId, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        g.bench_with_input(BenchmarkId::new("match_5_positioned", n), &n, |b, _| {
            b.iter(|| {
                for nd in &needles {
                    black_box(index.matching_positioned(
                        black_box(&ids),
                        |id| at.get(id).copied(),
                        nd,
                    ));
                }
            })
        });
        g.bench_with_input(BenchmarkId::new("match_5_scan", n), &n, |b, _| {
            b.iter(|| {
                for nd in &needles {
                    black_box(index.scan(black_box(&ids), nd));
                }
            })
        });
    }
    for n in READS {
        let (mut f, s) = front_after(n);
        let given = HashMap::new();
        g.bench_with_input(BenchmarkId::new("check_payment", n), &n, |b, _| {
            b.iter(|| black_box(f.check(&s, "send_money", &args, &given).expect("check")))
        });
    }
    // `check` of the payment right after one more 3 KB tool output was recorded, timed alone
    // (a round of `python/bench/long_session.py … tools`: one record, then one check, so each
    // check finds one read its memos have not seen).
    for n in READS {
        let mut grow = Growing::new(n);
        let given = HashMap::new();
        g.bench_with_input(BenchmarkId::new("check_after_a_read", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut total = std::time::Duration::ZERO;
                for _ in 0..iters {
                    grow.rebuild_when_due();
                    let (f, s) = grow.read_one();
                    let t = std::time::Instant::now();
                    black_box(f.check(s, "send_money", &args, &given).expect("check"));
                    total += t.elapsed();
                }
                total
            })
        });
    }
    // One more 3 KB tool output recorded (what a PostToolUse and the Python front's
    // `record_tool_result` do), timed alone.
    for n in READS {
        let mut grow = Growing::new(n);
        g.bench_with_input(BenchmarkId::new("record_tool_result", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut total = std::time::Duration::ZERO;
                for _ in 0..iters {
                    grow.rebuild_when_due();
                    let t = std::time::Instant::now();
                    black_box(grow.read_one());
                    total += t.elapsed();
                }
                total
            })
        });
    }
    g.finish();
}

/// A session that reads one more 3 KB statement at a time, each a new one (as
/// `python/bench/long_session.py … tools` does): rebuilt at `n` reads whenever it has grown by
/// `n` more (never by less than 4), so each figure is after `n` to `2n` reads. (Until
/// 2026-12-07 every read was the same statement, so each held the keys of all the reads before
/// it: the cost grew with the iterations criterion chose, and a faster build ran more of them and
/// measured a larger session, `spec/benchmarks.md` run O.)
struct Growing {
    n: usize,
    grown: usize,
    text: String,
    front: Front<MemoryStore, DerivedKeys>,
    session: Session,
}

impl Growing {
    fn new(n: usize) -> Self {
        let (front, session) = front_after(n);
        Growing {
            n,
            grown: 0,
            text: statement(n),
            front,
            session,
        }
    }

    /// Rebuilds the session at `n` reads when it has grown by `n`, and makes the next read's
    /// text (not to be timed).
    fn rebuild_when_due(&mut self) {
        if self.grown >= self.n.max(4) {
            (self.front, self.session) = front_after(self.n);
            self.grown = 0;
        }
        self.text = statement(self.n + self.grown);
    }

    /// Records one more statement and returns the front and session.
    fn read_one(&mut self) -> (&mut Front<MemoryStore, DerivedKeys>, &Session) {
        let args = json!({"path": format!("bills/more-{}.yaml", self.grown)});
        self.front
            .record_tool_result(&mut self.session, "read_file", &args, &self.text)
            .expect("tool result");
        self.grown += 1;
        (&mut self.front, &self.session)
    }
}
