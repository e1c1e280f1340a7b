//! SQLite store (placeholder; being written).

/// The embedded default [`super::Store`]: one SQLite file (WAL).
#[derive(Debug)]
pub struct SqliteStore;
