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
    /// Believe the labelling parameters the ledger file stores although no checkpoint signs
    /// them, and sign them with this checkpoint: for a ledger written before parameters were
    /// signed (spec/lineage.md §2.1). Run `memlineage verify --tau T --rule R` first: the
    /// store's settings are whatever the last writer of the file left.
    #[arg(long)]
    adopt_stored_parameters: bool,
}

/// Runs `memlineage checkpoint`.
pub fn run(a: Args) -> Res<ExitCode> {
    if a.vkey {
        say!("{}", stored_vkey(&existing_store(&a.ledger)?)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut l = if a.adopt_stored_parameters {
        crate::open::open_with(&a.ledger, true)?.0
    } else {
        let mut l = open(&a.ledger)?.0;
        // A checkpoint signed here pins what it signs, as one a hook signs.
        crate::open::sign_and_pin(&mut l, &a.ledger)?;
        l
    };
    let c = l.checkpoint()?;
    std::io::stdout().write_all(c.note())?;
    Ok(ExitCode::SUCCESS)
}
