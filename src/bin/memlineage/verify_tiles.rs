//! `memlineage verify-tiles`: inclusion checked from a static tiles directory alone
//! (`spec/storage.md` §11.5).

use crate::io::say;
use crate::Res;
use memlineage::log::{verify_from_tiles, LogVerifier};
use std::path::PathBuf;
use std::process::ExitCode;

/// Check inclusion proofs from a static tiles directory alone (every entry, or --index).
#[derive(clap::Args)]
pub struct Args {
    /// Directory written by export-tiles (or any tlog-tiles mirror).
    dir: PathBuf,
    /// The log's verifier key (C2SP vkey).
    #[arg(long)]
    log_key: String,
    /// Check only this leaf index.
    #[arg(long)]
    index: Option<u64>,
}

/// Checks the inclusion of leaf `--index`, or of every leaf, from the files under the
/// directory.
pub fn run(a: Args) -> Res<ExitCode> {
    let verifier = LogVerifier::from_vkey(&a.log_key)?;
    let first = verify_from_tiles(&a.dir, &verifier, a.index.unwrap_or(0))?;
    let size = first.checkpoint.size();
    let indexes = match a.index {
        Some(i) => i..i + 1,
        None => 0..size,
    };
    for i in indexes.clone().skip(1) {
        verify_from_tiles(&a.dir, &verifier, i)?;
    }
    say!(
        "ok: {} entries included in the checkpoint of size {size} (root {})",
        indexes.count(),
        first.checkpoint.root()
    );
    Ok(ExitCode::SUCCESS)
}
