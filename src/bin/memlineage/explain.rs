//! `memlineage explain`: an entry's label and the lineage path that gives it.

use crate::io::say;
use crate::open::open;
use crate::Res;
use memlineage::record::EntryId;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Print an entry's label and the lineage path that gives it.
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// Entry id (64 hex digits).
    id: String,
}

/// Runs `memlineage explain`.
pub fn run(a: Args) -> Res<ExitCode> {
    explain(&a.ledger, &a.id)
}

/// Prints the label of entry `id` (hex) and its untrusted path, hop by hop.
pub fn explain(ledger: &Path, id: &str) -> Res<ExitCode> {
    let (l, _) = open(ledger)?;
    let id = EntryId::from_hex(id)?;
    let label = l.label(&id).ok_or_else(|| format!("unknown entry {id}"))?;
    say!(
        "entry {id}: {label}{}",
        if l.is_tombstoned(&id) {
            " (tombstoned)"
        } else {
            ""
        }
    );
    let path = l.untrusted_path(&id)?;
    if path.is_empty() {
        say!("no untrusted ancestor reaches it over propagating edges");
    }
    for (i, hop) in path.iter().enumerate() {
        let e = l.get(hop)?;
        let who = l
            .principal(&e.writer())
            .map(|(r, n)| format!("{n} ({})", r.name()))
            .unwrap_or_default();
        say!(
            "{}{} {} by {} [{}]",
            if i == 0 { "source " } else { "  -> " },
            hop.short(),
            e.entry().kind.name(),
            who,
            l.label(hop).map(|x| x.name()).unwrap_or("?")
        );
    }
    Ok(ExitCode::SUCCESS)
}
