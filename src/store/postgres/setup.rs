//! Creating a ledger's schema and driving the connection (`spec/storage.md` §11.1).

use super::*;

/// Creates the schema and ledger if absent (under an advisory lock), sets `search_path`,
/// checks the version.
pub(super) async fn setup(c: &Client, schema: &str) -> Result<(), StoreError> {
    // `schema` is checked to be [a-z0-9_]+: safe to splice as a quoted identifier.
    c.batch_execute(&format!(
        "SET search_path TO \"{schema}\"; LISTEN \"memlineage_{schema}\""
    ))
    .await?;
    transaction(c, async {
        c.execute(
            "SELECT pg_advisory_xact_lock($1)",
            &[&lock_key("create", schema)],
        )
        .await?;
        // And one set-up (or reference build) at a time on the server: two transactions that
        // each create tables and then read the catalog (the views below) deadlocked, each
        // waiting for the other's new tables (seen with ledgers made in parallel).
        c.execute(
            "SELECT pg_advisory_xact_lock($1)",
            &[&crate::store::pg_catalog::DDL_LOCK],
        )
        .await?;
        c.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .await?;
        let has_seq: bool = c
            .query_one("SELECT to_regclass('sequencer') IS NOT NULL", &[])
            .await?
            .try_get(0)?;
        if !has_seq {
            let tables: i64 = c
                .query_one(
                    "SELECT count(*) FROM pg_tables WHERE schemaname = $1",
                    &[&schema],
                )
                .await?
                .try_get(0)?;
            if tables != 0 {
                return Err(StoreError::Corrupt {
                    reason: format!("schema {schema} holds {tables} tables but no ledger"),
                });
            }
            c.batch_execute(SCHEMA).await?;
        }
        // Row tags (spec/lineage.md §5.1) for a ledger created before them, under the lock.
        let has_tag: bool = c
            .query_one(
                "SELECT count(*) = 1 FROM information_schema.columns \
                 WHERE table_schema = $1 AND table_name = 'entries' AND column_name = 'tag'",
                &[&schema],
            )
            .await?
            .try_get(0)?;
        if !has_tag {
            c.batch_execute(
                "ALTER TABLE entries ADD COLUMN tag bytea \
                   CHECK (tag IS NULL OR length(tag) = 32);",
            )
            .await?;
        }
        // The context index (spec/storage.md §4.5) for a ledger created before it: its rows
        // keep `context` NULL, candidates of every lookup. Only when it is missing: DDL takes
        // an exclusive lock on `entries` even when it changes nothing, and a connect must not
        // queue every reader of the ledger behind a running integration.
        let has_context: bool = c
            .query_one(
                "SELECT count(*) = 1 FROM pg_indexes WHERE schemaname = $1 \
                 AND indexname = 'entries_context'",
                &[&schema],
            )
            .await?
            .try_get(0)?;
        if !has_context {
            c.batch_execute(
                "ALTER TABLE entries ADD COLUMN IF NOT EXISTS context bytea \
                   CHECK (context IS NULL OR length(context) = 32); \
                 CREATE INDEX IF NOT EXISTS entries_context ON entries (context, idx);",
            )
            .await?;
        }
        // The content epoch (spec/storage.md §11.2) for a ledger created before it.
        let has_epoch: bool = c
            .query_one("SELECT to_regclass('content_epoch') IS NOT NULL", &[])
            .await?
            .try_get(0)?;
        if !has_epoch {
            c.batch_execute(EPOCH_SCHEMA).await?;
        }
        // The index of the entries with effects, without context rows (kind 12): a ledger
        // created before the context kind had `WHERE kind >= 5`.
        let current: bool = c
            .query_one(
                "SELECT count(*) = 1 FROM pg_indexes WHERE schemaname = $1 \
                 AND indexname = 'entries_effects' AND indexdef LIKE '%<= 11%'",
                &[&schema],
            )
            .await?
            .try_get(0)?;
        if !current {
            c.batch_execute(&format!(
                "DROP INDEX IF EXISTS entries_effects; \
                 CREATE INDEX entries_effects ON entries (idx) WHERE {EFFECTS_PREDICATE};"
            ))
            .await?;
        }
        Ok(())
    })
    .await?;
    let version: i32 = c
        .query_one("SELECT schema_version FROM sequencer", &[])
        .await?
        .try_get(0)?;
    if version != SCHEMA_VERSION {
        return Err(StoreError::SchemaVersion {
            got: i64::from(version),
            want: i64::from(SCHEMA_VERSION),
        });
    }
    crate::store::pg_catalog::check(c, schema, SCHEMA).await
}

/// Drives the connection; passes each notification's payload (a tree size) to `heard`.
pub(super) async fn drive<S, T>(mut conn: tokio_postgres::Connection<S, T>, heard: Arc<Announced>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    while let Some(msg) = std::future::poll_fn(|cx| conn.poll_message(cx)).await {
        match msg {
            Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                if let Ok(size) = n.payload().parse::<u64>() {
                    heard.raise(size);
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
}
