//! Scale run (not part of the tests; `spec/benchmarks.md` "10 million entries"): builds an
//! N-entry ledger and reports write throughput, the cost of `Ledger::open`, the memory an open
//! handle holds, the gate with verified labels and the origin check (`spec/gate.md` §3) on a
//! fresh handle and on a warm one, and (SQLite) the offline audit, file size per entry and peak
//! memory. The same figures are taken on a 1k-entry ledger in the same run, and every cost is
//! also given as a multiple of one Ed25519 `verify_strict` timed in the same run, so that
//! "flat from 1k" is read as a ratio.
//!
//! ```text
//! cargo run --release --example scale -- 1000000 [DIR]            # SQLite, DIR/scale.ledger
//! DATABASE_URL=… cargo run --release --features postgres --example scale -- 1000000 --pg
//! ```
//!
//! Default N = 100000, DIR = a temporary directory; `--reuse` measures the ledgers an earlier
//! run left in DIR when they hold N entries and no flag (each run ends by flagging one). With `--pg` the ledgers are PostgreSQL
//! schemas named `scale_<N>_<pid>` in the database of `DATABASE_URL` (left there: drop them, or
//! use a throwaway cluster, `.ci/pg-throwaway.sh`), and the audit is not run (the offline audit
//! reads a SQLite file; `spec/storage.md` §11).
//!
//! Entries: a user prompt, a tool result and an agent summary of both (weights 1.0 and 0.9),
//! repeated; signed by their writers and appended with `append_signed` in batches of 999 (one
//! transaction each).

use memlineage::audit::audit;
use memlineage::gate::{Policy, ToolCall};
use memlineage::lineage::quarantine::Reach;
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Role, WriterKey};
use memlineage::store::{SqliteStore, Store};
use memlineage::Ledger;
use std::time::{Duration, Instant};

// The ledger builder and the raw primitive the benchmark examples share.
#[path = "common/bench.rs"]
#[allow(dead_code)]
mod bench;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Samples of each cost taken on a fresh handle (one `Ledger::open` each, untimed).
const FRESH_RUNS: usize = 21;
/// Repetitions of each cost on one warm handle.
const WARM_RUNS: usize = 2_001;
/// The IBAN every bill of the filled ledger asks a transfer to (`bench::fill`).
const BILL_IBAN: &str = "UK12345678901234567890";

/// Where the ledgers live.
enum Backend {
    Sqlite(std::path::PathBuf),
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres(String),
}

fn main() -> Res<()> {
    let mut n: u64 = 100_000;
    let mut dir = None;
    let mut pg = false;
    let mut reuse = false;
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--pg" => pg = true,
            "--reuse" => reuse = true,
            _ if a.starts_with("--") => return Err(format!("unknown option {a}").into()),
            _ if a.bytes().all(|b| b.is_ascii_digit()) => n = a.parse()?,
            _ => dir = Some(std::path::PathBuf::from(a)),
        }
    }
    let tmp = tempfile::tempdir()?;
    let backend = if pg {
        Backend::Postgres(std::env::var("DATABASE_URL").map_err(|_| "--pg needs DATABASE_URL")?)
    } else {
        Backend::Sqlite(dir.unwrap_or_else(|| tmp.path().to_path_buf()))
    };
    let verify_us = bench::verify_strict_us();
    println!("verify_strict: {verify_us:.1} µs (median, this run)");
    let small = run(&backend, 1_000, "1k", reuse)?;
    let large = run(&backend, n, "n", reuse)?;
    println!();
    println!(
        "| measured | 1k | / verify_strict | {} | / verify_strict | / 1k |",
        large.entries
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, a, b) in small
        .rows()
        .into_iter()
        .zip(large.rows())
        .map(|((k, a), (_, b))| (k, a, b))
    {
        println!(
            "| {name} | {a:.2} µs | {:.3} | {b:.2} µs | {:.3} | **{:.2}** |",
            a / verify_us,
            b / verify_us,
            b / a
        );
    }
    println!(
        "verify_strict at the end: {:.1} µs",
        bench::verify_strict_us()
    );
    Ok(())
}

/// Medians (µs) of one ledger size.
struct Figures {
    entries: u64,
    open: f64,
    gate_fresh: f64,
    gate_warm: f64,
    origin_fresh: f64,
    origin_warm: f64,
    deny_fresh: f64,
    deny_warm: f64,
    open_flagged: f64,
}

impl Figures {
    fn rows(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("`Ledger::open`", self.open),
            (
                "gate, 8 prompts, labels only: first call on a fresh handle",
                self.gate_fresh,
            ),
            ("… the same call again on that handle", self.gate_warm),
            (
                "gate with the origin check of 2 values: fresh handle",
                self.origin_fresh,
            ),
            ("… again", self.origin_warm),
            (
                "gate refusing (one summary of a bill), with its path: fresh handle",
                self.deny_fresh,
            ),
            ("… again", self.deny_warm),
            (
                "`Ledger::open` with a flag on the first prompt",
                self.open_flagged,
            ),
        ]
    }
}

fn signer() -> Res<LogSigner> {
    Ok(LogSigner::new(
        "scale.example/ledger",
        WriterKey::for_label("scale/log"),
    )?)
}

/// Builds a ledger of `n` entries on `backend`, prints what building, opening and auditing it
/// cost, and returns the medians of the decisions.
fn run(backend: &Backend, n: u64, tag: &str, reuse: bool) -> Res<Figures> {
    match backend {
        Backend::Sqlite(dir) => {
            let path = dir.join(format!("scale-{tag}.ledger"));
            let reusable = reuse
                && Ledger::open(SqliteStore::open(&path)?, signer()?)
                    .is_ok_and(|l| l.len() >= n && l.quarantine().is_empty());
            if !reusable {
                let _ = std::fs::remove_file(&path);
            }
            let figures = measure(n, || Ok(SqliteStore::open(&path)?))?;
            sqlite_audit(&path)?;
            Ok(figures)
        }
        #[cfg(feature = "postgres")]
        Backend::Postgres(url) => {
            let name = format!("scale_{n}_{}", std::process::id());
            println!("PostgreSQL ledger {name}");
            measure(n, || Ok(memlineage::store::PgStore::connect(url, &name)?))
        }
        #[cfg(not(feature = "postgres"))]
        Backend::Postgres(_) => Err("--pg needs the postgres feature".into()),
    }
}

/// Fills a ledger opened by `open` to `n` entries, then times `Ledger::open` and the gate.
fn measure<S: Store>(n: u64, open: impl Fn() -> Res<S>) -> Res<Figures> {
    let (user, tool, agent) = (
        WriterKey::for_label("scale/user"),
        WriterKey::for_label("scale/tool"),
        WriterKey::for_label("scale/agent"),
    );
    // A ledger of this size already there (a SQLite file kept by an earlier run, `--reuse`)
    // is measured as it is; otherwise one is made.
    let entries = match Ledger::open(open()?, signer()?) {
        Ok(l) if l.len() >= n && l.quarantine().is_empty() => {
            println!("entries: {} (reused)", l.len());
            l.len()
        }
        _ => {
            let mut l = Ledger::create(open()?, signer()?, LabelPolicy::default())?;
            l.bind(user.key_id(), Role::User, "user")?;
            l.bind(tool.key_id(), Role::Tool, "tool:read_file")?;
            l.bind(agent.key_id(), Role::Agent, "agent")?;
            let start = Instant::now();
            bench::fill(&mut l, [&user, &tool, &agent], n)?;
            let write = start.elapsed();
            l.checkpoint()?;
            let entries = l.len();
            println!("entries: {entries}");
            println!(
                "write: {:.1} s, {:.0} entries/s ({:.1} µs per entry, batches of 999, signing \
                 included)",
                write.as_secs_f64(),
                entries as f64 / write.as_secs_f64(),
                write.as_secs_f64() * 1e6 / entries as f64
            );
            entries
        }
    };

    let rss_before = rss_kib();
    let t = Instant::now();
    let first = Ledger::open(open()?, signer()?)?;
    let reopen = t.elapsed();
    let held = rss_kib().saturating_sub(rss_before);
    println!(
        "first open: {:.3} s; the open handle holds about {held} KiB: {:.1} bytes per entry",
        reopen.as_secs_f64(),
        held as f64 * 1024.0 / entries as f64
    );
    let (prompts, summary) = spread(&first, entries)?;
    drop(first);

    let policy = Policy::default();
    let call = |ids: &[EntryId]| ToolCall {
        tool: "send_money".into(),
        sensitive: false,
        args: vec![
            ("recipient".into(), ids[..4].to_vec()),
            ("amount".into(), ids[4..].to_vec()),
        ],
    };
    let allow = call(&prompts);
    let mut mixed = prompts.clone();
    mixed[7] = summary;
    let deny = call(&mixed);
    let values = serde_json::json!({"recipient": BILL_IBAN, "amount": 98.70});
    let values = values.as_object().ok_or("values")?.clone();

    let mut opens = Vec::with_capacity(FRESH_RUNS);
    for _ in 0..FRESH_RUNS {
        let store = open()?;
        let t = Instant::now();
        let l = Ledger::open(store, signer()?)?;
        opens.push(t.elapsed());
        drop(l);
    }
    // Times `f` on a handle opened for each sample (`fresh`) or on one handle (warm).
    let timed = |f: &dyn Fn(&Ledger<S>) -> bool, want: bool, fresh: bool| -> Res<f64> {
        let runs = if fresh { FRESH_RUNS } else { WARM_RUNS };
        let mut times = Vec::with_capacity(runs);
        let mut l = Ledger::open(open()?, signer()?)?;
        for _ in 0..runs {
            if fresh {
                l = Ledger::open(open()?, signer()?)?;
            }
            let t = Instant::now();
            let allowed = f(&l);
            times.push(t.elapsed());
            if allowed != want {
                return Err("the decision is not the expected one".into());
            }
        }
        Ok(median_us(&mut times))
    };
    let gate = |l: &Ledger<S>| l.gate(&policy, &allow).is_allow();
    let origin = |l: &Ledger<S>| l.gate_values(&policy, &allow, &values).is_allow();
    let refuse = |l: &Ledger<S>| l.gate(&policy, &deny).is_allow();
    let mut figures = Figures {
        entries,
        open: median_us(&mut opens),
        gate_fresh: timed(&gate, true, true)?,
        gate_warm: timed(&gate, true, false)?,
        origin_fresh: timed(&origin, true, true)?,
        origin_warm: timed(&origin, true, false)?,
        deny_fresh: timed(&refuse, false, true)?,
        deny_warm: timed(&refuse, false, false)?,
        open_flagged: 0.0,
    };

    // A flag on the first prompt (reach all): its append computes what it reaches from every
    // later entry, once; each open after it restores that from the quarantine snapshot
    // (`spec/lineage.md` §5.3) instead of reading them all again.
    let mut l = Ledger::open(open()?, signer()?)?;
    let t = Instant::now();
    l.flag(
        prompts[0],
        Reach::All,
        &user,
        "scale: an advisory about the first prompt",
    )?;
    println!(
        "a flag on the first prompt appended in {:.2} s (its reach computed over {} entries)",
        t.elapsed().as_secs_f64(),
        entries
    );
    drop(l);
    let mut opens = Vec::with_capacity(FRESH_RUNS);
    for _ in 0..FRESH_RUNS {
        let store = open()?;
        let t = Instant::now();
        let l = Ledger::open(store, signer()?)?;
        opens.push(t.elapsed());
        if !l.is_quarantined(&prompts[0]) || l.is_quarantined(&prompts[1]) {
            return Err("the flag's quarantine is not the expected one".into());
        }
    }
    figures.open_flagged = median_us(&mut opens);
    Ok(figures)
}

/// Eight prompts spread evenly over the ledger, and the last summary (derived from a bill: a
/// justification the gate refuses).
fn spread<S: Store>(l: &Ledger<S>, entries: u64) -> Res<(Vec<EntryId>, EntryId)> {
    let store = l.store();
    let nearest = |from: u64, kind: Kind| -> Res<EntryId> {
        (from..entries)
            .filter_map(|i| store.meta_at(i).ok().flatten())
            .find(|m| m.kind == kind)
            .map(|m| m.id)
            .ok_or_else(|| format!("no {kind:?} entry after {from}").into())
    };
    let prompts = (0..8)
        .map(|j| nearest(entries * j / 8 + 3, Kind::Prompt))
        .collect::<Res<Vec<_>>>()?;
    let summary = nearest(entries.saturating_sub(6), Kind::Summary)?;
    Ok((prompts, summary))
}

/// The offline audit of the SQLite ledger at `path`, the file's size and the peak memory.
fn sqlite_audit(path: &std::path::Path) -> Res<()> {
    let vkey = Ledger::open(SqliteStore::open(path)?, signer()?)?.vkey();
    let store = SqliteStore::open(path)?;
    let entries = store.tree_size()?;
    let note = store.latest_checkpoint()?.ok_or("no checkpoint")?.1;
    let verifier = memlineage::log::LogVerifier::from_vkey(&vkey)?;
    let t = Instant::now();
    let report = audit(
        store.audit_items(),
        &verifier,
        &note,
        LabelPolicy::default(),
        verifier.key_id(),
    )?;
    let audit_time = t.elapsed();
    let size = std::fs::metadata(path)?.len();
    println!(
        "offline audit: {:.1} s ({:.1} µs per entry), clean: {}",
        audit_time.as_secs_f64(),
        audit_time.as_secs_f64() * 1e6 / entries as f64,
        report.is_clean()
    );
    println!(
        "ledger file: {size} bytes, {:.0} bytes per entry",
        size as f64 / entries as f64
    );
    println!(
        "peak memory so far (whole process, includes the audit's maps): {} KiB",
        status_kib("VmHWM:")
    );
    Ok(())
}

/// The median of `times` in µs.
fn median_us(times: &mut [Duration]) -> f64 {
    bench::quantile(times, 0.5) * 1e3
}

/// Resident set size of this process in KiB (Linux), 0 elsewhere.
fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// A `/proc/self/status` line's value in KiB (Linux), 0 elsewhere.
fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}
