//! `memlineage export`: the entries in log order as a CBOR sequence (RFC 8742).

use crate::io::write_out;
use crate::open::existing_store;
use crate::Res;
use memlineage::store::Store;
use std::path::PathBuf;
use std::process::ExitCode;

/// Write the entries in log order as a CBOR sequence (RFC 8742).
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// Output file (default: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// Runs `memlineage export`.
pub fn run(a: Args) -> Res<ExitCode> {
    let store = existing_store(&a.ledger)?;
    let mut out = Vec::new();
    for i in 0..store.tree_size()? {
        out.extend(
            store
                .entry_bytes(i)?
                .ok_or_else(|| format!("entry {i} missing"))?,
        );
    }
    write_out(a.output, &out)?;
    Ok(ExitCode::SUCCESS)
}
