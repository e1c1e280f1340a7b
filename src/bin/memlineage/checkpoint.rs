//! `memlineage checkpoint`: the latest signed checkpoint (C2SP signed note), or the log's
//! verifier key.

use crate::io::say;
use crate::open::{existing_store, open};
use crate::Res;
use memlineage::ledger::stored_vkey;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Print the latest signed checkpoint (signing a fresh one if the tree grew).
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// Print the log's verifier key (C2SP signed-note form) instead.
    #[arg(long)]
    vkey: bool,
}

/// Runs `memlineage checkpoint`.
pub fn run(a: Args) -> Res<ExitCode> {
    if a.vkey {
        say!("{}", stored_vkey(&existing_store(&a.ledger)?)?);
        return Ok(ExitCode::SUCCESS);
    }
    let (mut l, _) = open(&a.ledger)?;
    let c = l.checkpoint()?;
    std::io::stdout().write_all(c.note())?;
    Ok(ExitCode::SUCCESS)
}
