//! `memlineage prove`: an offline proof bundle (C2SP tlog-proof) for one entry.

use crate::io::write_out;
use crate::open::open;
use crate::Res;
use memlineage::record::EntryId;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Write an offline proof bundle (C2SP tlog-proof) for one entry.
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// Entry id (64 hex digits).
    id: String,
    /// Output file (default: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// Runs `memlineage prove`.
pub fn run(a: Args) -> Res<ExitCode> {
    prove(&a.ledger, &a.id, a.output)
}

/// Writes the proof bundle of entry `id` (hex) to `output` (default: standard output).
pub fn prove(ledger: &Path, id: &str, output: Option<PathBuf>) -> Res<ExitCode> {
    let (mut l, _) = open(ledger)?;
    let bundle = l.prove(&EntryId::from_hex(id)?)?;
    write_out(output, bundle.to_text().as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
