//! `migrate`: copy a SQLite ledger into a PostgreSQL ledger (`spec/storage.md` §11.8).

use memlineage::store::{copy_ledger, PgStore, Store};
use std::error::Error;
use std::path::Path;
use std::process::ExitCode;

/// Copies the SQLite ledger at `ledger` into PostgreSQL ledger `to` at `url`, `batch` entries
/// per transaction, then runs `ANALYZE`. Resumes an interrupted copy.
pub fn run(ledger: &Path, url: &str, to: &str, batch: usize) -> Result<ExitCode, Box<dyn Error>> {
    if !ledger.is_file() {
        return Err(format!("no ledger at {}", ledger.display()).into());
    }
    let from = super::existing_store(ledger)?;
    let mut target = PgStore::connect(url, to)?;
    let copied = copy_ledger(&from, &mut target, batch)?;
    target.analyze()?;
    crate::io::say!(
        "copied {copied} entries; PostgreSQL ledger {to} has {} (keys stay in {}.key)",
        target.tree_size()?,
        ledger.display()
    );
    Ok(ExitCode::SUCCESS)
}
