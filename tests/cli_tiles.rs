//! `memlineage export-tiles` / `verify-tiles` on a SQLite ledger (the PostgreSQL path of the
//! same library functions is covered by `tests/pg_scale.rs`).

use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memlineage"));
    cmd.args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn ok(args: &[&str], stdin: Option<&str>) -> String {
    let out = run(args, stdin);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn export_tiles_then_verify_from_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let l = ledger.to_str().unwrap();
    ok(&["init", l], None);
    // 300 entries (one key binding, 299 prompts): one full entry bundle and level-0 tile, and partial ones.
    let lines: String = (0..299)
        .map(|i| format!("{{\"writer\":\"alice\",\"role\":\"user\",\"kind\":\"prompt\",\"content\":\"note {i}\"}}\n"))
        .collect();
    ok(&["append", l], Some(&lines));
    ok(&["checkpoint", l], None);
    let vkey = ok(&["checkpoint", l, "--vkey"], None).trim().to_string();
    let out = dir.path().join("tiles");
    let o = out.to_str().unwrap();
    let said = ok(&["export-tiles", l, o], None);
    assert!(said.contains("tree size 300"), "{said}");
    for f in [
        "checkpoint",
        "tile/0/000",
        "tile/0/001.p/44",
        "tile/1/000.p/1",
        "tile/entries/000",
        "tile/entries/001.p/44",
    ] {
        assert!(Path::new(o).join(f).is_file(), "{f}");
    }
    let said = ok(&["verify-tiles", o, "--log-key", &vkey], None);
    assert!(said.starts_with("ok: 300 entries"), "{said}");

    // A changed entry in a bundle no longer matches its leaf hash.
    let bundle = out.join("tile/entries/001.p/44");
    let mut bytes = std::fs::read(&bundle).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&bundle, bytes).unwrap();
    let bad = run(
        &["verify-tiles", o, "--log-key", &vkey, "--index", "299"],
        None,
    );
    assert!(!bad.status.success());
    ok(
        &["verify-tiles", o, "--log-key", &vkey, "--index", "3"],
        None,
    );
    // Another log's key refuses the checkpoint.
    let other = "other.example/log+00000000+AacooFErf9ZnL/QpVuVu7o8VTRCNmvsoUlGmq1zKrD24";
    assert!(!run(&["verify-tiles", o, "--log-key", other], None)
        .status
        .success());
}
