//! PostgreSQL for tests: `DATABASE_URL` (CI sets it, see `.ci/run`), or a visible skip.

use std::io::Write;

/// `DATABASE_URL`, or `None` after printing a line that says the test was skipped. The line
/// goes straight to the process's stderr, so the test harness does not hide it.
pub fn database_url(test: &str) -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: DATABASE_URL is not set (.ci/run starts a throwaway PostgreSQL)"
            );
            None
        }
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
