//! `memlineage export-tiles`: a ledger as static C2SP tlog-tiles files (`spec/storage.md`
//! §11.5), from a SQLite file or, with the `postgres` feature, a PostgreSQL ledger.

use crate::io::say;
use crate::Res;
use memlineage::ledger::{stored_vkey, StoreSource};
use memlineage::log::{export_tiles, LogVerifier};
use memlineage::store::Store;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Write the latest stored checkpoint, its C2SP tlog-tiles hash tiles and entry bundles
/// as static files under DIR (servable by any web server).
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path (with --postgres: the PostgreSQL ledger name).
    ledger: String,
    /// Output directory.
    dir: PathBuf,
    /// Read the ledger from PostgreSQL at this URL.
    #[arg(long)]
    postgres: Option<String>,
}

/// Writes the latest stored checkpoint of the ledger (a SQLite file, or with `--postgres` the
/// name of a PostgreSQL ledger) and its tiles and entry bundles under the directory.
pub fn run(a: Args) -> Res<ExitCode> {
    match a.postgres.as_deref() {
        Some(url) => export_postgres(url, &a.ledger, &a.dir),
        None => {
            let path = Path::new(&a.ledger);
            if !path.is_file() {
                return Err(format!("no ledger at {}", a.ledger).into());
            }
            export_store(&crate::open::existing_store(path)?, &a.dir)
        }
    }
}

#[cfg(feature = "postgres")]
fn export_postgres(url: &str, ledger: &str, dir: &Path) -> Res<ExitCode> {
    export_store(&memlineage::store::PgStore::connect(url, ledger)?, dir)
}

#[cfg(not(feature = "postgres"))]
fn export_postgres(_url: &str, _ledger: &str, _dir: &Path) -> Res<ExitCode> {
    Err(crate::migrate::WITHOUT_POSTGRES.into())
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
    say!(
        "exported tree size {}: {} tiles, {} entry bundles, checkpoint in {}",
        summary.size,
        summary.tiles,
        summary.bundles,
        dir.join("checkpoint").display()
    );
    Ok(ExitCode::SUCCESS)
}
