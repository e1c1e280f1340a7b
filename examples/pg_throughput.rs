//! Append throughput, PostgreSQL beside SQLite, with 1, 4 and 16 writer processes and batches
//! of 1 and 32 entries (`spec/benchmarks.md`, "Scale-out"). Not part of the test suite.
//!
//! ```sh
//! DATABASE_URL=postgresql:///postgres?host=/tmp/pg&port=5432 \
//!     cargo run --release --example pg_throughput            # the whole matrix
//! ```
//!
//! Each writer process signs `ProvEntry` facts with its own key and appends them:
//! - SQLite: `Ledger::append_batch` on one shared file (WAL, `synchronous=FULL`; each batch is
//!   one fsynced transaction; writers serialise on the file lock and retry when another
//!   writer appended first);
//! - PostgreSQL: `PgStore::sequence` (one `append_entries` call per batch, autocommit), while
//!   this process integrates (`ledger::Integrator`, 4096 entries per transaction) until every
//!   entry is in the tree and checkpointed.
//!
//! Entries per second = entries appended / wall time from the writers' start to the last entry
//! acknowledged (SQLite) or integrated and checkpointed (PostgreSQL).

use memlineage::lineage::{Label, LabelPolicy};
use memlineage::log::LogSigner;
use memlineage::record::{Hash32, Kind, ProvEntry, Role, SignedEntry, WriterKey};
use memlineage::store::{Integration, PgStore, SqliteStore, Store, Submission};
use memlineage::{Draft, Ledger};
use std::process::Command;
use std::time::Instant;

fn log() -> LogSigner {
    LogSigner::new("bench.example/ledger", WriterKey::for_label("bench/log")).unwrap()
}

fn key(w: usize) -> WriterKey {
    WriterKey::for_label(&format!("bench/writer/{w}"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("child") {
        child(&args[2..]);
        return;
    }
    let url = std::env::var("DATABASE_URL").ok();
    let tmp = tempfile::tempdir().unwrap();
    println!("| store | writers | batch | entries | seconds | entries/s |");
    println!("|---|---|---|---|---|---|");
    for writers in [1usize, 4, 16] {
        for batch in [1usize, 32] {
            let per = if batch == 1 {
                3200 / writers
            } else {
                32_000 / writers
            };
            let total = writers * per;
            let run = format!("w{writers}_b{batch}_{}", std::process::id());
            // SQLite
            let path = tmp.path().join(format!("{run}.db"));
            let mut l = Ledger::create(
                SqliteStore::open(&path).unwrap(),
                log(),
                LabelPolicy::default(),
            )
            .unwrap();
            for w in 0..writers {
                l.bind(key(w).key_id(), Role::Agent, &format!("w{w}"))
                    .unwrap();
            }
            drop(l);
            let secs = spawn_writers(writers, &["sqlite", path.to_str().unwrap()], per, batch);
            row("SQLite", writers, batch, total, secs);
            // PostgreSQL
            let Some(url) = &url else { continue };
            let name = format!("bench_{run}");
            let mut l = Ledger::create(
                PgStore::connect(url, &name).unwrap(),
                log(),
                LabelPolicy::default(),
            )
            .unwrap();
            for w in 0..writers {
                l.bind(key(w).key_id(), Role::Agent, &format!("w{w}"))
                    .unwrap();
            }
            let store = PgStore::connect(url, &name).unwrap();
            let want = store.tree_size().unwrap() + total as u64;
            let start = Instant::now();
            let mut kids = start_writers(writers, &["pg", url, &name], per, batch);
            let integrator = memlineage::ledger::Integrator::new(
                Ledger::open(PgStore::connect(url, &name).unwrap(), log()).unwrap(),
            );
            loop {
                match integrator.integrate(&store, 4096).unwrap() {
                    Integration::Integrated { new, .. } if new >= want => break,
                    Integration::Integrated { .. } => {}
                    _ => std::thread::sleep(std::time::Duration::from_millis(2)),
                }
            }
            let secs = start.elapsed().as_secs_f64();
            for k in &mut kids {
                assert!(k.wait().unwrap().success());
            }
            row("PostgreSQL", writers, batch, total, secs);
        }
    }
}

fn row(store: &str, writers: usize, batch: usize, total: usize, secs: f64) {
    println!(
        "| {store} | {writers} | {batch} | {total} | {secs:.2} | {:.0} |",
        total as f64 / secs
    );
}

fn start_writers(
    writers: usize,
    target: &[&str],
    per: usize,
    batch: usize,
) -> Vec<std::process::Child> {
    (0..writers)
        .map(|w| {
            Command::new(std::env::current_exe().unwrap())
                .arg("child")
                .args(target)
                .args([w.to_string(), per.to_string(), batch.to_string()])
                .spawn()
                .unwrap()
        })
        .collect()
}

fn spawn_writers(writers: usize, target: &[&str], per: usize, batch: usize) -> f64 {
    let start = Instant::now();
    for mut k in start_writers(writers, target, per, batch) {
        assert!(k.wait().unwrap().success());
    }
    start.elapsed().as_secs_f64()
}

/// `child sqlite PATH W PER BATCH` or `child pg URL NAME W PER BATCH`.
fn child(args: &[String]) {
    let n = args.len();
    let (w, per, batch): (usize, usize, usize) = (
        args[n - 3].parse().unwrap(),
        args[n - 2].parse().unwrap(),
        args[n - 1].parse().unwrap(),
    );
    let k = key(w);
    let texts: Vec<String> = (0..per).map(|i| format!("writer {w} fact {i}")).collect();
    match args[0].as_str() {
        "sqlite" => {
            let store = SqliteStore::open(std::path::Path::new(&args[1])).unwrap();
            let mut l = Ledger::open(store, log()).unwrap();
            // Under heavy contention a writer can wait out SQLite's 5 s busy timeout (or run
            // out of NotContiguous retries): count those failures and try the batch again.
            let mut failed = 0u64;
            for chunk in texts.chunks(batch) {
                loop {
                    let drafts = chunk
                        .iter()
                        .map(|t| Draft {
                            entry: ProvEntry::new(k.key_id(), Kind::Fact, t.as_bytes()),
                            key: &k,
                            content: t.as_bytes(),
                        })
                        .collect();
                    match l.append_batch(drafts) {
                        Ok(_) => break,
                        Err(e) => {
                            failed += 1;
                            assert!(failed < 1000, "{e}");
                            let _ = l.refresh();
                        }
                    }
                }
            }
            if failed > 0 {
                eprintln!("sqlite writer {w}: {failed} failed attempts (busy or stale), retried");
            }
        }
        "pg" => {
            let store = PgStore::connect(&args[1], &args[2]).unwrap();
            for chunk in texts.chunks(batch) {
                let subs = chunk
                    .iter()
                    .map(|t| {
                        let e = ProvEntry::new(k.key_id(), Kind::Fact, t.as_bytes());
                        let s = SignedEntry::sign(e, &k).unwrap();
                        Submission {
                            id: s.id(),
                            cose: s.cose().to_vec(),
                            kind: Kind::Fact,
                            label: Label::Trusted,
                            content: Some((Hash32::digest(t.as_bytes()), t.as_bytes().to_vec())),
                            context: Some(s.entry().context_hash),
                        }
                    })
                    .collect();
                store.sequence(subs).unwrap();
            }
        }
        other => panic!("unknown target {other}"),
    }
}
