//! A SQLite file recognised as a ledger or created as one (`spec/storage.md` §4): its
//! application id, schema version and objects checked against `schema.sql` before anything is
//! read.

use super::rows::{corrupt, max_idx};
use super::{Mode, SqliteStore, BUSY_TIMEOUT};
use crate::store::memory::leaf_hash_index;
use crate::store::{Store, StoreError, EFFECTS_PREDICATE};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use std::path::Path;

/// DDL of a new ledger, run once in the creating transaction.
const SCHEMA: &str = include_str!("../schema.sql");

/// `PRAGMA application_id` of a memlineage ledger: ASCII `MLNG` (header offset 68, big-endian).
const APPLICATION_ID: i64 = 0x4D4C_4E47;

/// `PRAGMA user_version` of the schema this build reads and writes (header offset 60).
const SCHEMA_VERSION: i64 = 1;

/// Tables a ledger must have.
const TABLES: [&str; 5] = ["meta", "entries", "content", "tree_hashes", "checkpoints"];

impl SqliteStore {
    pub(super) fn setup(&mut self, path: &Path, mode: Mode) -> Result<(), StoreError> {
        // Connection-local settings: they write nothing to the file (though some read it).
        self.conn.busy_timeout(BUSY_TIMEOUT)?;
        self.conn.set_prepared_statement_cache_capacity(32);
        self.recognise_or_create(path, mode)?;
        self.add_row_tags()?;
        self.conn.pragma_update(None, "synchronous", "FULL")?;
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        // Redaction must not leave content bytes in free pages.
        self.conn.pragma_update(None, "secure_delete", "ON")?;
        // A 32 MiB page cache (SQLite's default is 2 MiB): the resident hook server's few id
        // lookups per event stay in memory on a million-entry ledger (5.8 -> 4.2 ms per hook
        // at 1M entries, spec/benchmarks.md "Hooks"). Pages are allocated only when read.
        self.conn.pragma_update(None, "cache_size", -32768)?;
        if let Mode::File { .. } = mode {
            // Persistent in the file header; a no-op when already WAL.
            let _mode: String =
                self.conn
                    .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
        }
        if let Mode::File { .. } = mode {
            self.check_file_size(path)?;
        }
        self.check_shape()
    }

    /// Gives a file written before row tags (memlineage 0.1) the `tag` column, a file
    /// written before the context index the `context` column and the `entries_context` index
    /// (its rows keep `context` NULL: candidates of every lookup, `spec/storage.md` §4.5), and
    /// a file whose `entries_effects` index predates the context kind (its predicate `kind >=
    /// 5` also holds context rows, code 12) the index of `src/store/schema.sql`, in one
    /// immediate transaction (a no-op, a few schema reads, when they are as expected).
    fn add_row_tags(&mut self) -> Result<(), StoreError> {
        let has_column = |c: &Connection, name: &str| -> Result<bool, StoreError> {
            Ok(c.query_row(
                "SELECT count(*) FROM pragma_table_info('entries') WHERE name = ?1",
                [name],
                |r| r.get::<_, i64>(0),
            )? == 1)
        };
        let has_tag = |c: &Connection| has_column(c, "tag");
        let has_context = |c: &Connection| -> Result<bool, StoreError> {
            Ok(has_column(c, "context")?
                && c.query_row(
                    "SELECT count(*) FROM sqlite_schema WHERE type = 'index' \
                     AND name = 'entries_context'",
                    [],
                    |r| r.get::<_, i64>(0),
                )? == 1)
        };
        let has_index = |c: &Connection| -> Result<bool, StoreError> {
            let sql: Option<String> = c
                .query_row(
                    "SELECT sql FROM sqlite_schema WHERE type = 'index' \
                     AND name = 'entries_effects'",
                    [],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(sql.is_some_and(|s| s.ends_with(&format!("WHERE {EFFECTS_PREDICATE}"))))
        };
        if has_tag(&self.conn)? && has_index(&self.conn)? && has_context(&self.conn)? {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if !has_tag(&tx)? {
            tx.execute_batch(
                "ALTER TABLE entries ADD COLUMN tag BLOB \
                   CHECK (tag IS NULL OR (typeof(tag) = 'blob' AND length(tag) = 32));",
            )?;
        }
        if !has_column(&tx, "context")? {
            tx.execute_batch(
                "ALTER TABLE entries ADD COLUMN context BLOB \
                   CHECK (context IS NULL \
                          OR (typeof(context) = 'blob' AND length(context) = 32));",
            )?;
        }
        if !has_context(&tx)? {
            tx.execute_batch(
                "CREATE INDEX IF NOT EXISTS entries_context ON entries (context, idx);",
            )?;
        }
        if !has_index(&tx)? {
            tx.execute_batch(&format!(
                "DROP INDEX IF EXISTS entries_effects; \
                 CREATE INDEX entries_effects ON entries (idx) WHERE {EFFECTS_PREDICATE};"
            ))?;
        }
        tx.commit()?;
        Ok(())
    }

    /// SQLite writes whole pages, so a file whose size is not a multiple of the page size was
    /// cut short (a cut at a page boundary is caught by SQLite itself, from the header's page
    /// count).
    fn check_file_size(&self, path: &Path) -> Result<(), StoreError> {
        let page: i64 = self
            .conn
            .pragma_query_value(None, "page_size", |r| r.get(0))?;
        let len = std::fs::metadata(path)?.len();
        match u64::try_from(page) {
            Ok(page) if page > 0 && len % page == 0 => Ok(()),
            _ => Err(StoreError::Corrupt {
                reason: format!(
                    "file is {len} bytes, not a whole number of {page}-byte pages (truncated?)"
                ),
            }),
        }
    }

    /// Reads the header; creates the schema only in a fresh (absent or empty) database.
    fn recognise_or_create(&mut self, path: &Path, mode: Mode) -> Result<(), StoreError> {
        if self.marker(path)? {
            return Ok(());
        }
        if let Mode::File { fresh: false } = mode {
            return Err(StoreError::NotALedger {
                path: path.to_path_buf(),
            });
        }
        // Synchronous FULL before the first write, so that creation is durable too.
        self.conn.pragma_update(None, "synchronous", "FULL")?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Re-check under the write lock: another process may have written the file meanwhile.
        // (Under the lock an empty database reports one page, so look at what it holds.)
        let app: i64 = tx.pragma_query_value(None, "application_id", |r| r.get(0))?;
        if app == APPLICATION_ID {
            drop(tx);
            return self.marker(path).map(|_| ());
        }
        let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let objects: i64 = tx.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
        if app != 0 || version != 0 || objects != 0 {
            return Err(StoreError::NotALedger {
                path: path.to_path_buf(),
            });
        }
        tx.execute_batch(SCHEMA)?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        tx.commit()?;
        Ok(())
    }

    /// Whether the header carries the ledger marker (`Ok(false)` only for a database with no
    /// pages, i.e. an absent or empty file).
    fn marker(&self, path: &Path) -> Result<bool, StoreError> {
        let app: i64 = self
            .conn
            .pragma_query_value(None, "application_id", |r| r.get(0))?;
        let pages: i64 = self
            .conn
            .pragma_query_value(None, "page_count", |r| r.get(0))?;
        if app != APPLICATION_ID {
            return if pages == 0 {
                Ok(false)
            } else {
                Err(StoreError::NotALedger {
                    path: path.to_path_buf(),
                })
            };
        }
        let version: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version != SCHEMA_VERSION {
            return Err(StoreError::SchemaVersion {
                got: version,
                want: SCHEMA_VERSION,
            });
        }
        Ok(true)
    }

    /// Checks the tables exist and `tree_hashes` holds `stored_hash_index(0, tree_size)` rows
    /// (by their largest index: O(log n), no scan).
    fn check_shape(&self) -> Result<(), StoreError> {
        // One read transaction: another process may commit between the two max() queries.
        self.conn.execute_batch("BEGIN DEFERRED")?;
        let out = self.check_shape_in_snapshot();
        let end = self.conn.execute_batch("COMMIT");
        out.and(end.map_err(StoreError::from))
    }

    /// Compares the file's schema (`sqlite_schema`) with `src/store/schema.sql`: the five
    /// tables and the effects index as memlineage creates them (comments and spacing aside;
    /// a file upgraded from memlineage 0.1 has the same `entries` once its `tag` column was
    /// added), SQLite's own indexes and statistics, and nothing else — no trigger, no view,
    /// no altered table (issue 25: a trigger could drop a flag as it is inserted, or delete
    /// each tool output's content as it is stored).
    fn check_schema(&self) -> Result<(), StoreError> {
        let expected = expected_schema();
        let mut stmt = self
            .conn
            .prepare_cached("SELECT type, name, tbl_name, sql FROM sqlite_schema")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let (kind, name): (String, String) = (row.get(0)?, row.get(1)?);
            let sql: Option<String> = row.get(3)?;
            let ok = match (kind.as_str(), sql.as_deref()) {
                ("index", None) => name.starts_with("sqlite_autoindex_"),
                ("table", _) if name.starts_with("sqlite_stat") => true,
                (_, Some(sql)) => expected
                    .get(name.as_str())
                    .is_some_and(|want| *want == normal_sql(sql)),
                _ => false,
            };
            if !ok {
                return Err(StoreError::Corrupt {
                    reason: format!(
                    "the file's schema has a {kind} `{name}` that memlineage did not create (or \
                     changed): refusing to use a store whose schema can change what it stores"
                ),
                });
            }
        }
        Ok(())
    }

    fn check_shape_in_snapshot(&self) -> Result<(), StoreError> {
        self.check_schema()?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
        )?;
        for table in TABLES {
            let n: i64 = stmt.query_row([table], |r| r.get(0))?;
            if n != 1 {
                return Err(StoreError::Corrupt {
                    reason: format!("table {table} missing"),
                });
            }
        }
        let size = self.tree_size()?;
        let want = leaf_hash_index(size)?;
        let got = match max_idx(&self.conn, "SELECT max(idx) FROM tree_hashes")? {
            Some(max) => max
                .checked_add(1)
                .ok_or_else(|| corrupt("tree_hashes.idx"))?,
            None => 0,
        };
        if got != want {
            return Err(StoreError::Corrupt {
                reason: format!("{got} tree hashes for {size} entries, want {want}"),
            });
        }
        Ok(())
    }
}

/// The objects of `src/store/schema.sql` by name, each `CREATE` statement in [`normal_sql`]
/// form (the entries table with its `tag` column, however it got it).
fn expected_schema() -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    for stmt in strip_comments(SCHEMA).split(';') {
        let s = normal_sql(stmt);
        let mut words = s.split([' ', '(']);
        let (Some("CREATE"), Some(_), Some(name)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        out.insert(name.to_string(), s.clone());
    }
    out
}

/// `sql` without `--` comments, white space runs as one space, none around `(`, `)` and `,`.
fn normal_sql(sql: &str) -> String {
    let flat = strip_comments(sql)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = String::with_capacity(flat.len());
    for c in flat.chars() {
        if c == ' ' && out.ends_with(['(', ')', ',']) {
            continue;
        }
        if matches!(c, '(' | ')' | ',') && out.ends_with(' ') {
            out.pop();
        }
        out.push(c);
    }
    out.trim().to_string()
}

fn strip_comments(sql: &str) -> String {
    sql.lines()
        .map(|l| l.split_once("--").map_or(l, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}
