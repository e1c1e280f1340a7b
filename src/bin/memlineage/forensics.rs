//! Forensics subcommands (`spec/forensics.md`): flag, release, receipt, heal, rework.

use crate::{key_path, lock_key_file, now_ms, open, Res};
use memlineage::heal::{heal, HealOutcome};
use memlineage::quarantine::Reach;
use memlineage::receipt::{receipt, render_svg};
use memlineage::record::{EntryId, Role, WriterKey};
use memlineage::rework::{rework, ReworkOptions};
use memlineage::store::SqliteStore;
use memlineage::Ledger;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use crate::io::say;

/// The key of principal `name` with `role`, created in the key file and bound in the keyring
/// if new. Holds the key-file lock only while doing so.
fn principal_key(
    ledger: &Path,
    l: &mut Ledger<SqliteStore>,
    name: &str,
    role: Role,
) -> Res<WriterKey> {
    let _lock = lock_key_file(ledger)?;
    let mut ks = memlineage::keystore::KeyStore::load(&key_path(ledger))?;
    let (key, have, created) = ks.principal(name, Some(role))?;
    if have != role {
        return Err(format!(
            "principal {name} has role {}, not {}",
            have.name(),
            role.name()
        )
        .into());
    }
    if created {
        ks.save(&key_path(ledger))?;
    }
    l.refresh()?;
    if l.principal(&key.key_id()).is_none() {
        l.bind(key.key_id(), role, name)?;
    }
    Ok(key)
}

/// `memlineage flag`: quarantine everything `source` reached.
pub fn flag(ledger: &Path, source: &str, reason: &str, reach: &str, by: &str) -> Res<ExitCode> {
    let reach =
        Reach::from_name(reach).ok_or_else(|| format!("reach is all or strong, not {reach}"))?;
    let source = EntryId::from_hex(source)?;
    let (mut l, _) = open(ledger)?;
    let key = principal_key(ledger, &mut l, by, Role::System)?;
    let before = l.quarantine().len();
    let f = l.flag(source, reach, &key, reason)?;
    l.checkpoint()?;
    say!(
        "{}",
        serde_json::json!({
            "flag": f.id.to_string(),
            "source": source.to_string(),
            "reach": reach.name(),
            "quarantined": l.quarantine().len(),
            "newly_quarantined": l.quarantine().len().saturating_sub(before),
        })
    );
    Ok(ExitCode::SUCCESS)
}

/// `memlineage release`: lift the quarantine made by a flag entry.
pub fn release(ledger: &Path, flag: &str, reason: &str, by: &str) -> Res<ExitCode> {
    let flag = EntryId::from_hex(flag)?;
    let (mut l, _) = open(ledger)?;
    let key = principal_key(ledger, &mut l, by, Role::System)?;
    let r = l.release(flag, &key, reason)?;
    l.checkpoint()?;
    say!(
        "{}",
        serde_json::json!({"release": r.id.to_string(), "flag": flag.to_string(),
                           "quarantined": l.quarantine().len()})
    );
    Ok(ExitCode::SUCCESS)
}

/// `memlineage receipt`: the sentence (and DOT / SVG) for one entry, or for every quarantined
/// entry with `--all`.
pub fn receipts(
    ledger: &Path,
    id: Option<&str>,
    dot: Option<PathBuf>,
    svg: Option<PathBuf>,
) -> Res<ExitCode> {
    let (l, _) = open(ledger)?;
    let ids = match id {
        Some(h) => vec![EntryId::from_hex(h)?],
        None => l.quarantine().entries(),
    };
    if ids.len() != 1 && (dot.is_some() || svg.is_some()) {
        return Err("--dot and --svg draw one receipt: name one entry".into());
    }
    for id in &ids {
        let r = receipt(&l, id)?;
        say!("{}: {}", id, r.sentence());
        if let Some(p) = &dot {
            std::fs::write(p, r.to_dot())?;
        }
        if let Some(p) = &svg {
            std::fs::write(p, render_svg(&r.to_dot())?)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `memlineage heal`: rebuild a quarantined fact from clean, agreeing, independent sources.
/// Exits 3 when the fact stays quarantined.
pub fn heal_cmd(
    ledger: &Path,
    target: &str,
    support: &[String],
    prefix: &str,
    by: &str,
) -> Res<ExitCode> {
    let target = EntryId::from_hex(target)?;
    let support = support
        .iter()
        .map(|s| EntryId::from_hex(s))
        .collect::<Result<Vec<_>, _>>()?;
    let (mut l, _) = open(ledger)?;
    let key = principal_key(ledger, &mut l, by, Role::System)?;
    let claim = |c: &[u8]| {
        let text = std::str::from_utf8(c).ok()?;
        text.trim()
            .strip_prefix(prefix)
            .map(|s| s.trim().to_string())
    };
    let out = heal(&mut l, target, &support, claim, &key, now_ms())?;
    l.checkpoint()?;
    let tally = |t: &[memlineage::heal::Vote]| {
        t.iter()
            .map(|v| {
                serde_json::json!({"claim": v.claim, "votes": v.votes,
                "supporters": v.supporters.iter().map(|s| s.to_string()).collect::<Vec<_>>()})
            })
            .collect::<Vec<_>>()
    };
    match out {
        HealOutcome::Healed {
            replacement,
            tally: t,
        } => {
            say!(
                "{}",
                serde_json::json!({"healed": true, "replacement": replacement.id.to_string(),
                                   "label": replacement.label.name(), "tally": tally(&t)})
            );
            Ok(ExitCode::SUCCESS)
        }
        HealOutcome::StillQuarantined { why, tally: t } => {
            say!(
                "{}",
                serde_json::json!({"healed": false, "why": format!("{why:?}"), "tally": tally(&t)})
            );
            Ok(ExitCode::from(3))
        }
    }
}

/// `memlineage rework`: one worker redoing the quarantined derived entries (or `plan`) under
/// leases; the new content is the output of `sh -c EXEC` fed the old content on stdin.
pub fn rework_cmd(
    ledger: &Path,
    by: &str,
    exec: &str,
    ttl_ms: u64,
    plan: &[String],
) -> Res<ExitCode> {
    let (mut l, _) = open(ledger)?;
    let key = principal_key(ledger, &mut l, by, Role::Agent)?;
    let plan: Vec<EntryId> = if plan.is_empty() {
        // Every quarantined entry except the flagged sources themselves.
        let sources: std::collections::HashSet<EntryId> =
            l.quarantine().flags().map(|f| f.source).collect();
        l.quarantine()
            .entries()
            .into_iter()
            .filter(|id| !sources.contains(id))
            .collect()
    } else {
        plan.iter()
            .map(|s| EntryId::from_hex(s))
            .collect::<Result<_, _>>()?
    };
    let opts = ReworkOptions {
        ttl_ms,
        poll_ms: 50,
        ..ReworkOptions::default()
    };
    let report = rework(
        &mut l,
        &plan,
        &key,
        opts,
        now_ms,
        |ms| std::thread::sleep(std::time::Duration::from_millis(ms)),
        |_, _, old| run_exec(exec, old.unwrap_or_default()),
    )?;
    l.checkpoint()?;
    say!(
        "{}",
        serde_json::json!({
            "worker": by,
            "planned": plan.len(),
            "reworked": report.reworked.iter().map(|(t, r)| serde_json::json!({"target": t.to_string(), "replacement": r.to_string()})).collect::<Vec<_>>(),
            "taken_over": report.taken_over.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            "refused": report.refused,
        })
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs `sh -c exec` with `input` on stdin; its stdout is the result.
fn run_exec(exec: &str, input: &[u8]) -> Result<Vec<u8>, String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(exec)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("sh -c {exec}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input is fine.
        let _ = stdin.write_all(input);
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("`{exec}` exited with {}", out.status));
    }
    Ok(out.stdout)
}
