//! `memlineage inspect`: one entry's bytes decoded and checked; exit 2 with the error class.

use crate::io::{read_capped, say};
use crate::Res;
use memlineage::record::SignedEntry;
use std::path::PathBuf;
use std::process::ExitCode;

/// Largest file `inspect` reads: a hex-encoded maximal entry with some slack, in bytes.
const MAX_INSPECT_BYTES: u64 = 4 * memlineage::record::MAX_ENTRY_BYTES as u64;

/// Decode and check one entry's bytes (COSE_Sign1, binary or hex).
#[derive(clap::Args)]
pub struct Args {
    /// Entry file.
    file: PathBuf,
}

/// Runs `memlineage inspect`.
pub fn run(a: Args) -> Res<ExitCode> {
    let raw = read_capped(&a.file, MAX_INSPECT_BYTES, "an entry")?;
    // Hex text (whitespace and a 0x prefix allowed) or raw bytes.
    let text: Option<String> = std::str::from_utf8(&raw).ok().map(|t| {
        let t: String = t.split_whitespace().collect();
        t.strip_prefix("0x").map(str::to_string).unwrap_or(t)
    });
    let bytes = match text {
        Some(t) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_hexdigit()) => {
            match hex::decode(&t) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("invalid entry: not hex: {e}");
                    eprintln!("class: NotHex");
                    return Ok(ExitCode::from(2));
                }
            }
        }
        _ => raw,
    };
    match SignedEntry::decode(&bytes) {
        Ok(s) => {
            let e = s.entry();
            let parents: Vec<_> = e
                .parents
                .iter()
                .map(
                    |p| serde_json::json!({"id": p.id.to_string(), "weight": p.weight.to_string()}),
                )
                .collect();
            let v = serde_json::json!({
                "id": s.id().to_string(),
                "version": e.version,
                "writer": e.writer.to_string(),
                "kind": e.kind.name(),
                "content_hash": e.content_hash.to_string(),
                "source_hash": e.source_hash.to_string(),
                "context_hash": e.context_hash.to_string(),
                "parents": parents,
                "time_ms": e.time_ms,
                "attribution": e.attribution.name(),
                "target": e.target.map(|t| t.to_string()),
                "binding": e.binding.as_ref().map(|b| serde_json::json!({"key": b.key.to_string(), "role": b.role.name(), "name": b.name})),
                "signature": "valid (spec/record.md §2.3 under the kid)",
            });
            say!("{}", serde_json::to_string_pretty(&v)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("invalid entry: {e}");
            eprintln!("class: {e:?}");
            Ok(ExitCode::from(2))
        }
    }
}
