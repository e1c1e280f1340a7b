//! `memlineage flag`: quarantine everything a bad source reached (`spec/forensics.md` §2).

use crate::append::now_ms;
use crate::io::say;
use crate::open::{open, principal_key, ADVISORY_ROLES};
use crate::Res;
use memlineage::lineage::quarantine::Reach;
use memlineage::record::{EntryId, Kind, ProvEntry, Role, SignedEntry};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Flag a bad source: quarantine everything that descends from it (spec/forensics.md §2).
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// The bad source's entry id (64 hex digits).
    source: String,
    /// Why (the advisory), recorded as the flag entry's content.
    #[arg(long)]
    reason: String,
    /// all: over every recorded edge; strong: over edges with w > τ only.
    #[arg(long, default_value = "all")]
    reach: String,
    /// The system principal signing the flag (created if absent).
    #[arg(long = "as", default_value = "advisory")]
    by: String,
}

/// Runs `memlineage flag`: quarantine everything the source reached.
pub fn run(a: Args) -> Res<ExitCode> {
    let reach = Reach::from_name(&a.reach)
        .ok_or_else(|| format!("reach is all or strong, not {}", a.reach))?;
    let source = EntryId::from_hex(&a.source)?;
    let (mut l, _) = open(&a.ledger)?;
    let key = principal_key(&a.ledger, &mut l, &a.by, &ADVISORY_ROLES, Role::System)?;
    let before = l.quarantine().len();
    let f = l.flag(source, reach, &key, &a.reason)?;
    crate::open::sign_and_pin(&mut l, &a.ledger)?;
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

/// Flags every source in `sources` (reach all) in one append batch: all are flagged or none.
/// Prints one JSON line per flag.
pub fn flag_many(ledger: &Path, sources: &[EntryId], reason: &str, by: &str) -> Res<ExitCode> {
    let (mut l, _) = open(ledger)?;
    let key = principal_key(ledger, &mut l, by, &ADVISORY_ROLES, Role::System)?;
    let mut batch = Vec::with_capacity(sources.len());
    for source in sources {
        let mut e = ProvEntry::new(key.key_id(), Kind::Quarantine, reason.as_bytes())
            .with_time_ms(now_ms());
        e.target = Some(*source);
        batch.push((SignedEntry::sign(e, &key)?, reason.as_bytes()));
    }
    let flags = l.append_signed(batch)?;
    crate::open::sign_and_pin(&mut l, ledger)?;
    for (f, source) in flags.iter().zip(sources) {
        say!(
            "{}",
            serde_json::json!({
                "flag": f.id.to_string(),
                "source": source.to_string(),
                "reach": "all",
                "quarantined": l.quarantine().len(),
            })
        );
    }
    Ok(ExitCode::SUCCESS)
}
