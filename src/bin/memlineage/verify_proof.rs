//! `memlineage verify-proof`: a proof bundle checked with nothing but the file and the log key.

use crate::io::{read_capped, say};
use crate::Res;
use memlineage::log::{LogVerifier, ProofBundle};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Verify a proof bundle with nothing but the file and the log key.
#[derive(clap::Args)]
pub struct Args {
    /// Proof bundle file.
    file: PathBuf,
    /// The log's verifier key (C2SP vkey).
    #[arg(long)]
    log_key: String,
}

/// Runs `memlineage verify-proof`.
pub fn run(a: Args) -> Res<ExitCode> {
    verify_proof(&a.file, &a.log_key)
}

/// Verifies the bundle in `file` against the log key `log_key` (C2SP vkey) and prints what it
/// proves.
pub fn verify_proof(file: &Path, log_key: &str) -> Res<ExitCode> {
    let text = read_capped(
        file,
        memlineage::log::MAX_BUNDLE_BYTES as u64,
        "a proof bundle",
    )?;
    let verifier = LogVerifier::from_vkey(log_key)?;
    let bundle = ProofBundle::parse(&text)?;
    let (entry, c) = bundle.verify(&verifier)?;
    say!(
        "OK: entry {} ({} by {}) is leaf {} of {} tree size {} root {}",
        entry.id(),
        entry.entry().kind.name(),
        entry.writer().short(),
        bundle.proof.index,
        c.origin(),
        c.size(),
        c.root()
    );
    Ok(ExitCode::SUCCESS)
}
