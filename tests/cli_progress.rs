//! `memlineage verify`'s progress bar: drawn on a terminal for a long audit, and not a single
//! progress character when standard error is a pipe (scripts, CI logs).

#[path = "common/cli_support.rs"]
mod cli_support;
use cli_support::{ok, run, BIN};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use tempfile::TempDir;

/// Entries appended: more than two audit chunks (`memlineage::audit::AUDIT_CHUNK`), so the
/// audit reports progress three times and is long enough to get a bar on a terminal.
const PROMPTS: usize = 2 * memlineage::audit::AUDIT_CHUNK + 50;

/// A word of the bar's template (`src/bin/memlineage/progress.rs`).
const BAR_WORD: &str = "verifying";

#[test]
fn verify_without_a_terminal_draws_no_progress() {
    let dir = TempDir::new().unwrap();
    let ledger = long_ledger(dir.path());
    let out = run(&["verify", path(&ledger)], dir.path(), None);
    let stdout = ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout.lines().last(), Some("OK"), "stdout {stdout}");
    // Alice's keyring entry, then her prompts.
    let want = format!("entries: {n} read, {n} verified", n = PROMPTS + 1);
    assert!(stdout.contains(&want), "stdout {stdout}");
    assert!(stderr.is_empty(), "stderr {stderr:?}");
    for both in [&stdout[..], &stderr[..]] {
        assert!(!both.contains(BAR_WORD), "bar drawn: {both:?}");
        assert!(
            !both.contains(['\r', '\x1b', '█', '░', '#']),
            "progress characters in {both:?}"
        );
    }
}

/// The positive control: under a pseudo-terminal (`script(1)`) the same audit does draw the
/// bar (so the test above can tell a hidden bar from a missing one), then clears it.
#[test]
fn verify_on_a_terminal_draws_the_bar() {
    let dir = TempDir::new().unwrap();
    let ledger = long_ledger(dir.path());
    let cmd = format!("{BIN} verify {}", ledger.display());
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let screen = ok(&out);
    assert!(
        screen.contains(BAR_WORD),
        "no bar on a terminal: {screen:?}"
    );
    assert!(screen.contains('\x1b'), "bar never cleared: {screen:?}");
    assert!(screen.contains("OK"), "{screen:?}");
}

/// A fresh ledger holding [`PROMPTS`] user prompts, appended in one batch.
fn long_ledger(dir: &Path) -> PathBuf {
    let ledger = dir.join("long.ledger");
    ok(&run(&["init", path(&ledger)], dir, None));
    let input: String = (0..PROMPTS)
        .map(|i| {
            // The first line binds alice as a user; later ones name her only.
            let role = if i == 0 { r#""role":"user","# } else { "" };
            format!(
                "{{\"writer\":\"alice\",{role}\"kind\":\"prompt\",\
                 \"content\":\"prompt {i}\",\"time_ms\":{}}}\n",
                1_735_689_600_000u64 + i as u64
            )
        })
        .collect();
    ok(&run(
        &["append", path(&ledger)],
        dir,
        Some(input.as_bytes()),
    ));
    ledger
}

fn path(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}
