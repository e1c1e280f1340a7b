//! Scale run (not part of the tests): builds an N-entry SQLite ledger and reports write
//! throughput, reopen time, offline audit time, file size per entry and peak memory.
//!
//! `cargo run --release --example scale -- 1000000 [DIR]` (default N = 100000, DIR = a temp dir)
//!
//! Entries: a user prompt, a tool result and an agent summary of both (weights 1.0 and 0.9),
//! repeated; signed by their writers and appended with `append_signed` in batches of 999 (one
//! SQLite transaction each).

use memlineage::audit::audit;
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{Role, WriterKey};
use memlineage::store::{SqliteStore, Store};
use memlineage::Ledger;
use std::time::Instant;

// The ledger builder the benchmark examples share; scale uses only its `fill`.
#[path = "common/bench.rs"]
#[allow(dead_code)]
mod bench;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(100_000);
    let tmp = tempfile::tempdir()?;
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let path = dir.join("scale.ledger");
    let signer = || LogSigner::new("scale.example/ledger", WriterKey::for_label("scale/log"));
    let (user, tool, agent) = (
        WriterKey::for_label("scale/user"),
        WriterKey::for_label("scale/tool"),
        WriterKey::for_label("scale/agent"),
    );
    let mut l = Ledger::create(SqliteStore::open(&path)?, signer()?, LabelPolicy::default())?;
    l.bind(user.key_id(), Role::User, "user")?;
    l.bind(tool.key_id(), Role::Tool, "tool:read_file")?;
    l.bind(agent.key_id(), Role::Agent, "agent")?;
    let start = Instant::now();
    bench::fill(&mut l, [&user, &tool, &agent], n)?;
    let write = start.elapsed();
    l.checkpoint()?;
    let entries = l.len();
    drop(l);
    let rss_before = rss_kib();
    let t = Instant::now();
    let l = Ledger::open(SqliteStore::open(&path)?, signer()?)?;
    let reopen = t.elapsed();
    let held = rss_kib().saturating_sub(rss_before);
    let vkey = l.vkey();
    drop(l);
    let store = SqliteStore::open(&path)?;
    let note = store.latest_checkpoint()?.ok_or("no checkpoint")?.1;
    let verifier = memlineage::log::LogVerifier::from_vkey(&vkey)?;
    let t = Instant::now();
    let items = store.audit_items();
    let report = audit(
        items,
        &verifier,
        &note,
        LabelPolicy::default(),
        verifier.key_id(),
    )?;
    let audit_time = t.elapsed();
    let size = std::fs::metadata(&path)?.len();
    let peak_kib = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(str::to_string)
        })
        .unwrap_or_default();
    println!("entries: {entries}");
    println!(
        "write: {:.1} s, {:.0} entries/s ({:.1} µs per entry, batches of 999, signing included)",
        write.as_secs_f64(),
        entries as f64 / write.as_secs_f64(),
        write.as_secs_f64() * 1e6 / entries as f64
    );
    println!(
        "reopen (label index and keyring from the store): {:.2} s",
        reopen.as_secs_f64()
    );
    println!(
        "open ledger holds about {held} KiB of RAM: {:.0} bytes per entry \
         (label index; tree and content stay in SQLite)",
        held as f64 * 1024.0 / entries as f64
    );
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
    println!("peak memory (whole process, includes the audit's maps): {peak_kib}");
    Ok(())
}

/// Resident set size of this process in KiB (Linux), 0 elsewhere.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}
