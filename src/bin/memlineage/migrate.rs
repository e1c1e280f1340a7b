//! `memlineage migrate`: copy a SQLite ledger into a PostgreSQL ledger (`spec/storage.md`
//! §11.8). Needs the `postgres` feature; without it the command says so and exits 1.

use crate::Res;
use std::path::PathBuf;
use std::process::ExitCode;

/// What `migrate` and `export-tiles --postgres` say in a build without PostgreSQL.
#[cfg(not(feature = "postgres"))]
pub const WITHOUT_POSTGRES: &str = "this memlineage was built without PostgreSQL support \
     (cargo feature `postgres`): cargo install memlineage --features postgres";

/// Copy a SQLite ledger into a PostgreSQL ledger (same bytes, labels, roots; resumable).
#[derive(clap::Args)]
pub struct Args {
    /// SQLite ledger path.
    ledger: PathBuf,
    /// PostgreSQL URL.
    #[arg(long)]
    postgres: String,
    /// PostgreSQL ledger (schema) name.
    #[arg(long)]
    to: String,
    /// Entries per transaction.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
}

/// Copies the SQLite ledger into PostgreSQL ledger `--to` at `--postgres`, `--batch` entries
/// per transaction, then runs `ANALYZE`. Resumes an interrupted copy.
#[cfg(feature = "postgres")]
pub fn run(a: Args) -> Res<ExitCode> {
    use memlineage::store::{copy_ledger, PgStore, Store};
    if !a.ledger.is_file() {
        return Err(format!("no ledger at {}", a.ledger.display()).into());
    }
    let from = crate::open::existing_store(&a.ledger)?;
    let mut target = PgStore::connect(&a.postgres, &a.to)?;
    let copied = copy_ledger(&from, &mut target, a.batch)?;
    target.analyze()?;
    crate::io::say!(
        "copied {copied} entries; PostgreSQL ledger {} has {} (keys stay in {}.key)",
        a.to,
        target.tree_size()?,
        a.ledger.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Refuses: this build has no PostgreSQL client.
#[cfg(not(feature = "postgres"))]
pub fn run(a: Args) -> Res<ExitCode> {
    let _ = (a.ledger, a.postgres, a.to, a.batch);
    Err(WITHOUT_POSTGRES.into())
}
