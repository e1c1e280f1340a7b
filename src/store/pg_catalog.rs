//! The catalog check of `spec/storage.md` §6.1 for PostgreSQL: a ledger's schema must hold
//! exactly what `src/store/schema_pg.sql` creates, as SQLite's file must hold exactly
//! `schema.sql` (issue 25, class 8). A store-only attacker with the tables' rights can do more
//! than add a trigger, a rule or a view: turn on row-level security with a policy that hides
//! flags, point the sequencer function's `search_path` at tables of theirs (sequenced entries
//! then land there and never enter the log), make a table inherit rows from another, drop a
//! uniqueness constraint, or make a table unlogged. So the check compares a description of the
//! whole schema (relations, columns, constraints, indexes, triggers, rules, policies,
//! inheritance, functions with their settings and bodies, types, operators) with the
//! description of a reference schema built from `schema_pg.sql` in a transaction that is rolled
//! back: what differs is refused, whatever it is.
//!
//! The reference is built once per process and server version (a few milliseconds), so the
//! check costs one catalog query per connection.

use super::StoreError;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio_postgres::Client;

/// One line per catalog object of the schema named `$1`; names of the schema itself are
/// replaced by [`normalise`]. Objects in other schemas (the server's own) are not described.
const DESCRIBE: &str = "\
WITH ns AS (SELECT oid FROM pg_namespace WHERE nspname = $1), \
rel AS (SELECT c.oid AS coid, c.* FROM pg_class c WHERE c.relnamespace = (SELECT oid FROM ns)) \
SELECT 'relation ' || relname || ' kind=' || relkind::text \
  || ' persistence=' || relpersistence::text \
  || ' rls=' || relrowsecurity || '/' || relforcerowsecurity || ' partition=' || relispartition \
  || ' options=' || coalesce(array_to_string(reloptions, ','), '') FROM rel \
UNION ALL SELECT 'column ' || r.relname || '.' || a.attname || ' ' \
  || format_type(a.atttypid, a.atttypmod) || ' notnull=' || a.attnotnull \
  || ' generated=' || a.attgenerated::text || ' identity=' || a.attidentity::text \
  || ' default=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '') \
  FROM pg_attribute a JOIN rel r ON a.attrelid = r.coid \
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
  WHERE a.attnum > 0 AND NOT a.attisdropped \
UNION ALL SELECT 'constraint ' || r.relname || '.' || co.conname || ' ' \
  || pg_get_constraintdef(co.oid) || ' enforced=' || co.convalidated \
  FROM pg_constraint co JOIN rel r ON co.conrelid = r.coid \
UNION ALL SELECT 'constraint ' || co.conname || ' ' || pg_get_constraintdef(co.oid) \
  FROM pg_constraint co WHERE co.connamespace = (SELECT oid FROM ns) AND co.conrelid = 0 \
UNION ALL SELECT 'index ' || pg_get_indexdef(i.indexrelid) || ' valid=' || i.indisvalid \
  FROM pg_index i JOIN rel r ON i.indrelid = r.coid \
UNION ALL SELECT 'trigger ' || t.tgname || ' enabled=' || t.tgenabled::text \
  FROM pg_trigger t JOIN rel r ON t.tgrelid = r.coid WHERE NOT t.tgisinternal \
UNION ALL SELECT 'rule ' || ru.rulename FROM pg_rewrite ru JOIN rel r ON ru.ev_class = r.coid \
UNION ALL SELECT 'policy ' || p.polname FROM pg_policy p JOIN rel r ON p.polrelid = r.coid \
UNION ALL SELECT 'inherits ' || i.inhrelid::regclass::text || ' ' || i.inhparent::regclass::text \
  FROM pg_inherits i WHERE i.inhrelid IN (SELECT coid FROM rel) \
  OR i.inhparent IN (SELECT coid FROM rel) \
UNION ALL SELECT 'function ' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) \
  || ') returns ' || format_type(p.prorettype, NULL) || ' language=' || l.lanname \
  || ' kind=' || p.prokind::text || ' definer=' || p.prosecdef \
  || ' volatile=' || p.provolatile::text \
  || ' strict=' || p.proisstrict || ' leakproof=' || p.proleakproof \
  || ' config=' || coalesce(array_to_string(p.proconfig, ','), '') || ' body=' || md5(p.prosrc) \
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang \
  WHERE p.pronamespace = (SELECT oid FROM ns) \
UNION ALL SELECT 'type ' || t.typname || ' ' || t.typtype::text FROM pg_type t \
  WHERE t.typnamespace = (SELECT oid FROM ns) \
UNION ALL SELECT 'operator ' || o.oprname || ' ' || o.oprcode::text FROM pg_operator o \
  WHERE o.oprnamespace = (SELECT oid FROM ns) \
UNION ALL SELECT 'collation ' || collname FROM pg_collation \
  WHERE collnamespace = (SELECT oid FROM ns) \
UNION ALL SELECT 'conversion ' || conname FROM pg_conversion \
  WHERE connamespace = (SELECT oid FROM ns)";

/// The advisory-lock key that serialises the transactions of memlineage that create tables on
/// a server — reference builds here, ledger set-ups in `postgres.rs` — so that no two of them
/// wait for each other's new tables (`"mlrefcat"` as an integer).
pub(super) const DDL_LOCK: i64 = 0x6d6c_7265_6663_6174;

/// The reference descriptions already built, by server version.
static REFERENCE: Mutex<Option<HashMap<String, Vec<String>>>> = Mutex::new(None);

/// Refuses the ledger schema `schema` unless its catalog is exactly what `create` (the
/// contents of `schema_pg.sql`) makes in an empty schema (module docs).
///
/// # Errors
/// [`StoreError::Corrupt`] naming the first object that differs (untrusted input: anyone with
/// the tables' rights triggers it); [`StoreError::Postgres`].
pub(super) async fn check(c: &Client, schema: &str, create: &str) -> Result<(), StoreError> {
    let want = reference(c, create).await?;
    let got = describe(c, schema).await?;
    if got == want {
        return Ok(());
    }
    let extra = got.iter().find(|l| !want.contains(l));
    let missing = want.iter().find(|l| !got.contains(l));
    let what = match (extra, missing) {
        (Some(e), _) => format!("has `{e}`"),
        (None, Some(m)) => format!("lacks `{m}`"),
        (None, None) => "repeats an object".to_string(),
    };
    Err(StoreError::Corrupt {
        reason: format!(
            "schema {schema} {what}, which memlineage did not create: refusing to use a store \
         whose schema can change what it stores"
        ),
    })
}

/// The description of `schema`'s catalog ([`DESCRIBE`]), sorted.
async fn describe(c: &Client, schema: &str) -> Result<Vec<String>, StoreError> {
    let mut lines = Vec::new();
    for row in c.query(DESCRIBE, &[&schema]).await? {
        let line: Option<String> = row.try_get(0)?;
        lines.push(normalise(&line.unwrap_or_default(), schema));
    }
    lines.sort();
    Ok(lines)
}

/// The description of a schema made by `create` alone, built once per server version in a
/// scratch schema inside a transaction that is rolled back.
async fn reference(c: &Client, create: &str) -> Result<Vec<String>, StoreError> {
    let version: String = c
        .query_one("SELECT current_setting('server_version_num')", &[])
        .await?
        .try_get(0)?;
    if let Some(lines) = REFERENCE
        .lock()
        .ok()
        .and_then(|r| r.as_ref().and_then(|m| m.get(&version).cloned()))
    {
        return Ok(lines);
    }
    let mut nonce = [0u8; 8];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut nonce);
    let scratch = format!("memlineage_ref_{}", hex::encode(nonce));
    c.batch_execute("BEGIN").await?;
    let built = async {
        // One reference build at a time on a server: two at once, each holding its scratch
        // tables exclusively while describing, deadlocked (seen with two connections of one
        // process). The lock is the transaction's: the rollback below releases it.
        c.execute("SELECT pg_advisory_xact_lock($1)", &[&DDL_LOCK])
            .await?;
        // `scratch` is [a-z0-9_]+: safe to splice as a quoted identifier.
        c.batch_execute(&format!(
            "CREATE SCHEMA \"{scratch}\"; SET LOCAL search_path TO \"{scratch}\"; {create}"
        ))
        .await?;
        describe(c, &scratch).await
    }
    .await;
    // Nothing of the scratch schema survives; the session's search_path comes back too.
    let rolled = c.batch_execute("ROLLBACK").await;
    let lines = built?;
    rolled?;
    if let Ok(mut r) = REFERENCE.lock() {
        r.get_or_insert_with(HashMap::new)
            .insert(version, lines.clone());
    }
    Ok(lines)
}

/// `line` with the schema's own name, where the catalog prints it (`schema.table` in index
/// definitions, `search_path=schema` in function settings), replaced by `$S`.
fn normalise(line: &str, schema: &str) -> String {
    line.replace(&format!(" \"{schema}\"."), " $S.")
        .replace(&format!(" {schema}."), " $S.")
        .replace(&format!("search_path=\"{schema}\""), "search_path=$S")
        .replace(&format!("search_path={schema}"), "search_path=$S")
}

#[cfg(test)]
mod tests {
    use super::normalise;

    #[test]
    fn the_schema_name_is_replaced_where_the_catalog_prints_it() {
        assert_eq!(
            normalise("index CREATE INDEX e ON l1.entries USING btree (idx)", "l1"),
            "index CREATE INDEX e ON $S.entries USING btree (idx)"
        );
        assert_eq!(
            normalise("function f() config=search_path=\"l1\" body=x", "l1"),
            "function f() config=search_path=$S body=x"
        );
        assert_eq!(
            normalise("function f() config=search_path=l1 body=x", "l1"),
            "function f() config=search_path=$S body=x"
        );
        // Only where it names the schema: a column or table that contains it stays.
        assert_eq!(
            normalise("column l1x.l1 bytea", "l1"),
            "column l1x.l1 bytea"
        );
    }
}
