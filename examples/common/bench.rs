//! What the benchmark examples share (`spec/benchmarks.md`): a ledger of a given size made
//! with the CLI and filled with pre-signed batches (also what `scale` fills its ledger with), quantiles, and the raw primitive the
//! ratios are taken against. Included by `#[path]`; not an example of its own.

use memlineage::front::keystore::KeyStore;
use memlineage::record::{Kind, Parent, ProvEntry, Role, SignedEntry, Weight, WriterKey};
use memlineage::store::{SqliteStore, Store};
use memlineage::Ledger;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Makes `dir/l.db` with `bin init` and fills it to `n` entries, unless it holds them.
pub fn build(bin: &Path, dir: &Path, n: u64) -> Res<()> {
    let path = dir.join("l.db");
    let keys_path = dir.join("l.db.key");
    if path.exists() {
        let keys = KeyStore::load(&keys_path)?;
        let l = Ledger::open(SqliteStore::open(&path)?, keys.log_signer()?)?;
        if l.len() >= n {
            return Ok(());
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let out = Command::new(bin)
        .args(["init", "l.db"])
        .current_dir(dir)
        .output()?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
    }
    let mut keys = KeyStore::load(&keys_path)?;
    let (user, _, _) = keys.principal("user", Some(Role::User))?;
    let (tool, _, _) = keys.principal("tool:read_file", Some(Role::Tool))?;
    let (agent, _, _) = keys.principal("agent", Some(Role::Agent))?;
    keys.save(&keys_path)?;
    let mut l = Ledger::open(SqliteStore::open(&path)?, keys.log_signer()?)?;
    l.bind(user.key_id(), Role::User, "user")?;
    l.bind(tool.key_id(), Role::Tool, "tool:read_file")?;
    l.bind(agent.key_id(), Role::Agent, "agent")?;
    let start = Instant::now();
    fill(&mut l, [&user, &tool, &agent], n)?;
    l.checkpoint()?;
    eprintln!(
        "built {} entries in {:.1} s",
        l.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Fills `l` to `n` entries (or a little past, in whole batches): triples of a prompt by
/// `user`, a tool result by `tool` and `agent`'s summary of both (weights 1.0 and 0.9), signed
/// by their writers and appended with `append_signed` in batches of 999 (one transaction each).
pub fn fill<S: Store>(l: &mut Ledger<S>, [user, tool, agent]: [&WriterKey; 3], n: u64) -> Res<()> {
    let mut i = 0u64;
    while l.len() < n {
        let mut batch = Vec::with_capacity(999);
        let mut texts = Vec::with_capacity(333);
        for _ in 0..333 {
            texts.push((
                format!("prompt {i}: pay the bill"),
                format!("bill {i}: 98.70 to UK12345678901234567890"),
                format!("memory {i}: the bill asks for 98.70 to UK12345678901234567890"),
            ));
            i += 1;
        }
        for (p, t, s) in &texts {
            let ps = SignedEntry::sign(
                ProvEntry::new(user.key_id(), Kind::Prompt, p.as_bytes()).with_time_ms(i),
                user,
            )?;
            let ts = SignedEntry::sign(
                ProvEntry::new(tool.key_id(), Kind::ToolResult, t.as_bytes()).with_time_ms(i),
                tool,
            )?;
            let se = ProvEntry::new(agent.key_id(), Kind::Summary, s.as_bytes())
                .with_parents(vec![
                    Parent {
                        id: ps.id(),
                        weight: Weight::ONE,
                    },
                    Parent {
                        id: ts.id(),
                        weight: Weight::new(900_000)?,
                    },
                ])
                .with_time_ms(i);
            let ss = SignedEntry::sign(se, agent)?;
            batch.push((ps, p.as_bytes()));
            batch.push((ts, t.as_bytes()));
            batch.push((ss, s.as_bytes()));
        }
        l.append_signed(batch)?;
    }
    Ok(())
}

/// The `q` quantile of `times`, in ms (sorts them).
pub fn quantile(times: &mut [Duration], q: f64) -> f64 {
    times.sort();
    let i = ((times.len() - 1) as f64 * q).round() as usize;
    times[i].as_secs_f64() * 1e3
}

/// The median cost of one Ed25519 `verify_strict` of a 100-byte message, in µs.
pub fn verify_strict_us() -> f64 {
    use ed25519_dalek::{Signer, SigningKey};
    let sk = SigningKey::from_bytes(&[7; 32]);
    let vk = sk.verifying_key();
    let msg = [42u8; 100];
    let sig = sk.sign(&msg);
    let mut rounds: Vec<f64> = (0..21)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..500 {
                assert!(vk.verify_strict(std::hint::black_box(&msg), &sig).is_ok());
            }
            t.elapsed().as_secs_f64() * 1e6 / 500.0
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[rounds.len() / 2]
}

/// One row of a table of four medians (`m`): the row's `key`, then the first median, its
/// multiple of one `verify_strict` (`per_verify`) and of `first[0]`, then each other median
/// beside its multiple of the same column of `first` (the row of the fewest reads).
#[allow(dead_code)] // the long-session examples only
pub fn four_row(key: usize, m: &[f64; 4], first: &[f64; 4], per_verify: f64) -> String {
    format!(
        "| {key} | {:.2} | {per_verify:.0}× | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
        m[0],
        m[0] / first[0],
        m[1],
        m[1] / first[1],
        m[2],
        m[2] / first[2],
        m[3],
        m[3] / first[3],
    )
}
