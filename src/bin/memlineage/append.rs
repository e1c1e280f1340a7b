//! `memlineage append`: entries given as JSON lines, appended as one all-or-nothing batch.

use crate::io::{capped_lines, say};
use crate::open::{key_path, lock_key_file, open};
use crate::Res;
use memlineage::record::{
    Attribution, EntryId, KeyId, Kind, Parent, ProvEntry, Role, SignedEntry, Weight, WriterKey,
};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Largest JSON line `append` reads (an entry's content travels inside it), in bytes.
const MAX_APPEND_LINE: u64 = 16 << 20;

/// Append entries given as JSON lines (one batch: all or nothing).
///
/// Kinds: prompt, tool_result, summary (or observation), fact, tool_call, tombstone, and the
/// forensic kinds quarantine, quarantine_strong, release, lease, replacement
/// (spec/forensics.md; the flag, release, heal and rework commands write them for you).
/// Roles: user, system, agent, tool, external (tool and external write EXTERNAL entries).
/// Each line: {"writer": NAME, "role": ROLE?, "kind": KIND, "content": TEXT,
/// "parents": [{"id": HEX, "weight": 0.0..1.0}]?, "attribution": "coarse"?, "time_ms": N?,
/// "target": HEX?}. A tombstone is {"kind": "tombstone", "target": ID, "content": REASON};
/// the forensic kinds carry a "target" too.
/// A writer not yet in the key file is created and bound with its "role".
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// JSON-lines file, or - for standard input.
    #[arg(long, default_value = "-")]
    input: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendLine {
    writer: String,
    role: Option<String>,
    kind: String,
    content: String,
    #[serde(default)]
    parents: Vec<ParentLine>,
    attribution: Option<String>,
    time_ms: Option<u64>,
    /// For a tombstone: the id of the entry it deletes.
    target: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ParentLine {
    id: String,
    weight: f64,
}

/// Runs `memlineage append`.
pub fn run(a: Args) -> Res<ExitCode> {
    append(&a.ledger, &a.input)
}

fn append(ledger: &Path, input: &str) -> Res<ExitCode> {
    if !ledger.is_file() {
        return Err(format!("no ledger at {}", ledger.display()).into());
    }
    // One appender at a time edits the key file: read, add writers, save, then commit.
    let _lock = lock_key_file(ledger)?;
    let (mut l, mut ks) = open(ledger)?;
    let reader: Box<dyn BufRead> = if input == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(input).map_err(|e| format!("--input {input}: {e}"))?;
        Box::new(std::io::BufReader::new(f))
    };
    let mut lines = Vec::new();
    for line in capped_lines(reader, MAX_APPEND_LINE) {
        let (n, line) = line?;
        let parsed: AppendLine =
            serde_json::from_str(&line).map_err(|e| format!("line {n}: {e}"))?;
        lines.push((n, parsed));
    }
    // Validate every line before anything is bound, signed or written.
    let mut keys = Vec::with_capacity(lines.len());
    let mut bindings: Vec<(KeyId, Role, String)> = Vec::new();
    let mut created = false;
    for (n, a) in &lines {
        let at = |e: &dyn std::fmt::Display| format!("line {n}: {e}");
        if a.writer.is_empty() {
            return Err(at(&"writer name is empty").into());
        }
        let role = a
            .role
            .as_deref()
            .map(|r| Role::from_name(r).ok_or(format!("unknown role {r}")))
            .transpose()
            .map_err(|e| at(&e))?;
        if role == Some(Role::Log) {
            return Err(
                at(&"role log cannot be bound: the log key is the only log principal").into(),
            );
        }
        let (key, role, new) = ks.principal(&a.writer, role).map_err(|e| at(&e))?;
        created |= new;
        if l.principal(&key.key_id()).is_none() && !bindings.iter().any(|b| b.0 == key.key_id()) {
            bindings.push((key.key_id(), role, a.writer.clone()));
        }
        keys.push(key);
    }
    let mut entries = Vec::with_capacity(bindings.len() + lines.len());
    for (key, role, name) in &bindings {
        entries.push(l.binding_entry(*key, *role, name)?);
    }
    let mut batch_ids = std::collections::HashSet::new();
    for (key, (n, a)) in keys.iter().zip(&lines) {
        let at = |e: &dyn std::fmt::Display| format!("line {n}: {e}");
        let entry = draft_from_line(key, a).map_err(|e| at(&e))?;
        for p in &entry.parents {
            if l.index_of(&p.id).is_none() && !batch_ids.contains(&p.id) {
                return Err(at(&format!("unknown parent {}", p.id)).into());
            }
        }
        let signed = SignedEntry::sign(entry, key).map_err(|e| at(&e))?;
        batch_ids.insert(signed.id());
        entries.push((signed, a.content.clone().into_bytes()));
    }
    if entries.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    // New writers' keys are saved before their bindings are committed: a key that ends up
    // unused is harmless, a bound key whose seed was lost is not.
    if created {
        ks.save(&key_path(ledger))?;
    }
    let batch = entries
        .iter()
        .map(|(s, c)| (s.clone(), c.as_slice()))
        .collect();
    let appended = l.append_signed(batch)?;
    crate::open::sign_and_pin_locked(&mut l, ledger)?;
    for a in appended.iter().skip(bindings.len()) {
        say!(
            "{}",
            serde_json::json!({"id": a.id.to_string(), "index": a.index, "label": a.label.name()})
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The unsigned entry a JSON line describes.
fn draft_from_line(key: &WriterKey, a: &AppendLine) -> Res<ProvEntry> {
    let kind = Kind::from_name(&a.kind).ok_or(format!("unknown kind {}", a.kind))?;
    let mut parents = Vec::with_capacity(a.parents.len());
    for p in &a.parents {
        parents.push(Parent {
            id: EntryId::from_hex(&p.id)?,
            weight: Weight::from_f64(p.weight)?,
        });
    }
    let name = a.attribution.as_deref().unwrap_or("coarse");
    let attribution =
        Attribution::from_name(name).ok_or_else(|| format!("unknown attribution {name}"))?;
    let mut entry = ProvEntry::new(key.key_id(), kind, a.content.as_bytes())
        .with_parents(parents)
        .with_attribution(attribution)
        .with_time_ms(a.time_ms.unwrap_or_else(now_ms));
    entry.target = a.target.as_deref().map(EntryId::from_hex).transpose()?;
    Ok(entry)
}

/// Milliseconds since the Unix epoch (0 if the clock is before it): the default entry time.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
