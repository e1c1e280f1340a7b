//! What one hook event pays for the session record (`spec/hooks.md` §6.3, issue 32): a load
//! and a save of a session that has read 10 and 10,000 entries, beside one Ed25519
//! `verify_strict` measured in the same run.
//!
//! ```text
//! cargo run --release --example session_bench -- [--reads 10,10000] [--runs 201]
//! ```
//!
//! Each round adds one read and sets the seal, as a recorded tool output does, and times:
//!
//! - `kept`: `FileSessions::load` answered from the record it kept, then `save` appending one
//!   delta (one `write`, one `fsync`): what the resident server pays per event;
//! - `parsed`: a fresh `FileSessions` loading the file (parse of line 1 and the deltas): what a
//!   hook process, or a server after another process wrote the file, pays;
//! - `whole`: the record as before the journal: parsed whole, serialised whole and written
//!   whole (temporary, `fsync`, rename);
//! - `clone`: one `Session::clone` (reads and the memo's set), which a kept load pays.
//!
//! Medians in µs, and each as a multiple of `verify_strict` and of its value at the fewest
//! reads.

#[path = "common/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::{quantile, verify_strict_us};
use memlineage::front::hook::{FileSessions, Sessions};
use memlineage::front::Session;
use memlineage::record::EntryId;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A read id distinct for every `n`.
fn id(n: usize) -> EntryId {
    let mut b = [7u8; 32];
    b[..8].copy_from_slice(&(n as u64).to_be_bytes());
    EntryId(b)
}

fn main() -> Res<()> {
    let (mut reads, mut runs) = (vec![10usize, 10_000], 201usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--reads" => reads = v.split(',').map(str::parse).collect::<Result<_, _>>()?,
            "--runs" => runs = v.parse()?,
            _ => return Err(format!("unknown argument {a}").into()),
        }
    }
    let verify = verify_strict_us();
    let mut rows = Vec::new();
    for &n in &reads {
        rows.push((n, measure(n, runs)?));
    }
    println!("Ed25519 verify_strict (100-byte message), median: {verify:.1} µs");
    println!();
    println!(
        "| reads | kept load + append (µs) | / verify_strict | / first | parsed load (µs) | / first \
         | whole parse + rewrite (µs) | / first | clone (µs) | / first |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let first = rows.first().map(|r| r.1).unwrap_or([f64::NAN; 4]);
    for (n, m) in &rows {
        println!("{}", bench::four_row(*n, m, &first, m[0] / verify));
    }
    Ok(())
}

/// The medians (µs) of `kept`, `parsed`, `whole` and `clone` for a session of `n` reads.
fn measure(n: usize, runs: usize) -> Res<[f64; 4]> {
    let dir = tempfile::tempdir()?;
    let sid = format!("bench-{n}");
    let mut fs = FileSessions::new(dir.path().join("s"));
    let mut s = Session::new(&sid);
    for i in 0..n {
        s.read(id(i));
    }
    s.seen = n as u64;
    s.started = true;
    s.seal = Some("ab".repeat(32));
    fs.save(&s)?;
    let mut t: [Vec<Duration>; 4] = Default::default();
    let mut next = n;
    for _ in 0..runs {
        let start = Instant::now();
        let mut x = fs.load(&sid)?;
        next += 1;
        x.read(id(next));
        x.seal = Some(format!("{next:064x}"));
        fs.save(&x)?;
        t[0].push(start.elapsed());

        let start = Instant::now();
        let y = FileSessions::new(fs.dir().to_path_buf()).load(&sid)?;
        t[1].push(start.elapsed());

        let path = dir.path().join("whole.json");
        let start = Instant::now();
        if let Ok(bytes) = std::fs::read(&path) {
            let _: Session = serde_json::from_slice(&bytes)?;
        }
        memlineage::store::durable::write_atomic(&path, &serde_json::to_vec(&y)?)?;
        t[2].push(start.elapsed());

        let start = Instant::now();
        let z = std::hint::black_box(x.clone());
        t[3].push(start.elapsed());
        drop(z);
    }
    Ok(t.each_mut().map(|v| quantile(v, 0.5) * 1e3))
}
