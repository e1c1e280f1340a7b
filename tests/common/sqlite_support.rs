//! Ledgers on real SQLite files in integration tests (shared by the suites that open one file
//! from several handles or edit it below the ledger: hostile.rs, refresh.rs, crash.rs, …).
// Each test file uses some of these helpers.
#![allow(dead_code)]

use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::store::SqliteStore;
use memlineage::Ledger;
use std::path::Path;

/// A new ledger in the SQLite file at `path` (created), signed by `signer`, under the default
/// labelling parameters (`spec/lineage.md` §2.1).
pub fn sqlite_ledger(path: &Path, signer: LogSigner) -> Ledger<SqliteStore> {
    Ledger::create(
        SqliteStore::open(path).expect("store"),
        signer,
        LabelPolicy::default(),
    )
    .expect("create")
}
