//! `export-tiles` and `verify-tiles`: a ledger as static C2SP tlog-tiles files, and an
//! inclusion check that reads nothing but those files (`spec/storage.md` §11.5).

use memlineage::ledger::{stored_vkey, StoreSource};
use memlineage::log::{export_tiles, verify_from_tiles, LogVerifier};
use memlineage::store::{PgStore, Store};
use std::error::Error;
use std::path::Path;
use std::process::ExitCode;

type Res<T> = Result<T, Box<dyn Error>>;

/// Writes the latest stored checkpoint of `ledger` (a SQLite file, or with `postgres` the name
/// of a PostgreSQL ledger) and its tiles and entry bundles under `dir`.
pub fn export(ledger: &str, dir: &Path, postgres: Option<&str>) -> Res<ExitCode> {
    match postgres {
        Some(url) => export_store(&PgStore::connect(url, ledger)?, dir),
        None => {
            let path = Path::new(ledger);
            if !path.is_file() {
                return Err(format!("no ledger at {ledger}").into());
            }
            export_store(&super::existing_store(path)?, dir)
        }
    }
}

fn export_store<S: Store>(store: &S, dir: &Path) -> Res<ExitCode> {
    let verifier = LogVerifier::from_vkey(&stored_vkey(store)?)?;
    let (_, note) = store
        .latest_checkpoint()?
        .ok_or("the ledger has no checkpoint yet: run `memlineage checkpoint` first")?;
    let checkpoint = verifier.verify(&note)?;
    let summary = export_tiles(dir, &checkpoint, &StoreSource(store), |i| {
        store
            .entry_bytes(i)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "not stored".to_string())
    })?;
    crate::io::say!(
        "exported tree size {}: {} tiles, {} entry bundles, checkpoint in {}",
        summary.size,
        summary.tiles,
        summary.bundles,
        dir.join("checkpoint").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Checks the inclusion of leaf `index`, or of every leaf, from the files under `dir`.
pub fn verify(dir: &Path, log_key: &str, index: Option<u64>) -> Res<ExitCode> {
    let verifier = LogVerifier::from_vkey(log_key)?;
    let first = verify_from_tiles(dir, &verifier, index.unwrap_or(0))?;
    let size = first.checkpoint.size();
    let indexes = match index {
        Some(i) => i..i + 1,
        None => 0..size,
    };
    for i in indexes.clone().skip(1) {
        verify_from_tiles(dir, &verifier, i)?;
    }
    crate::io::say!(
        "ok: {} entries included in the checkpoint of size {size} (root {})",
        indexes.count(),
        first.checkpoint.root()
    );
    Ok(ExitCode::SUCCESS)
}
