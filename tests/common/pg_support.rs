//! PostgreSQL for tests: `DATABASE_URL` (CI sets it, see `.ci/run`); a test that needs it fails
//! without it, so that it can never pass by not running.

/// `DATABASE_URL`.
///
/// # Panics
/// When it is unset or empty: the test `test` needs a PostgreSQL server. `.ci/run` and
/// `. .ci/pg-throwaway.sh; pg_up` start a throwaway one and set it.
pub fn database_url(test: &str) -> String {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "{test} needs PostgreSQL and DATABASE_URL is not set: run `. .ci/pg-throwaway.sh; \
             pg_up` first (.ci/run does), or leave out --features postgres"
        ),
    }
}

/// A ledger (PostgreSQL schema) name no other test run uses: `{prefix}_{pid}_{nanos}`.
pub fn fresh_ledger(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{prefix}_{}_{nanos}", std::process::id())
}

/// Runs `cmd` to completion and asserts it succeeded (its stderr in the message).
#[allow(dead_code)] // not every test file that includes this module runs commands
pub fn run_ok(cmd: &mut std::process::Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `sql` in ledger schema `schema` with `psql` (stopping at the first error), as a
/// store-only attacker or an operator would.
#[allow(dead_code)] // not every test file that includes this module runs SQL
pub fn psql(url: &str, schema: &str, sql: &str) {
    let sql = format!("SET search_path TO \"{schema}\"; {sql}");
    run_ok(std::process::Command::new("psql").args([
        url,
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        &sql,
    ]));
}
