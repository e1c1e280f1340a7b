//! `memlineage prove`: an offline proof bundle (C2SP tlog-proof) for one entry, or with
//! `--label` a label proof (`spec/label-proof.md`) of its label, quarantine and tombstones.

use crate::io::write_out;
use crate::open::open;
use crate::Res;
use memlineage::record::EntryId;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Write an offline proof bundle (C2SP tlog-proof) for one entry, or a label proof.
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// Entry id (64 hex digits).
    id: String,
    /// Prove the entry's label, quarantine and tombstones too (`memlineage/label-proof@v1`):
    /// its ancestry and every effect on it, checkable with the log's verifier key alone.
    #[arg(long)]
    label: bool,
    /// Output file (default: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// Runs `memlineage prove`.
pub fn run(a: Args) -> Res<ExitCode> {
    if a.label {
        prove_label(&a.ledger, &a.id, a.output)
    } else {
        prove(&a.ledger, &a.id, a.output)
    }
}

/// Writes the proof bundle of entry `id` (hex) to `output` (default: standard output).
pub fn prove(ledger: &Path, id: &str, output: Option<PathBuf>) -> Res<ExitCode> {
    let (mut l, _) = open(ledger)?;
    let bundle = l.prove(&EntryId::from_hex(id)?)?;
    write_out(output, bundle.to_text().as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the label proof of entry `id` (hex) to `output` (default: standard output), after
/// checking it as a verifier would: a proof that does not verify is never written.
pub fn prove_label(ledger: &Path, id: &str, output: Option<PathBuf>) -> Res<ExitCode> {
    let (mut l, _) = open(ledger)?;
    let proof = l.prove_label(&EntryId::from_hex(id)?)?;
    proof.verify(&l.verifier()?, Some(l.label_policy()))?;
    write_out(output, proof.to_text().as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
