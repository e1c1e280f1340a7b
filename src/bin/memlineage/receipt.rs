//! `memlineage receipt`: the shortest lineage path of an entry as a sentence, and as a
//! Graphviz picture (`spec/forensics.md` §3).

use crate::io::say;
use crate::open::open;
use crate::Res;
use memlineage::forensics::receipt::{receipt, render_svg};
use memlineage::record::EntryId;
use std::path::PathBuf;
use std::process::ExitCode;

/// Print the receipt (shortest lineage path, as a sentence) of an entry, or of every
/// quarantined entry when no id is given. Graphviz: --dot FILE, --svg FILE (needs `dot`:
/// apt-get install graphviz).
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// Entry id; default: every quarantined entry.
    id: Option<String>,
    /// Write the receipt as Graphviz DOT.
    #[arg(long)]
    dot: Option<PathBuf>,
    /// Write the receipt as SVG (runs `dot -Tsvg`).
    #[arg(long)]
    svg: Option<PathBuf>,
}

/// Runs `memlineage receipt`: the sentence (and DOT / SVG) for one entry, or for every
/// quarantined entry when no id is given.
pub fn run(a: Args) -> Res<ExitCode> {
    let (l, _) = open(&a.ledger)?;
    let ids = match a.id.as_deref() {
        Some(h) => vec![EntryId::from_hex(h)?],
        None => l.quarantine().entries(),
    };
    if ids.len() != 1 && (a.dot.is_some() || a.svg.is_some()) {
        return Err("--dot and --svg draw one receipt: name one entry".into());
    }
    for id in &ids {
        let r = receipt(&l, id)?;
        say!("{}: {}", id, r.sentence());
        if let Some(p) = &a.dot {
            std::fs::write(p, r.to_dot())?;
        }
        if let Some(p) = &a.svg {
            std::fs::write(p, render_svg(&r.to_dot())?)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
