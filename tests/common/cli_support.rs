//! Running the `memlineage` binary from integration tests (shared by the CLI test files).
// Each test file uses some of these helpers.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_memlineage");

/// Runs the binary in `dir` with `args`, feeding `stdin` if given; waits for it.
/// `XDG_STATE_HOME` is the test's directory, so that the state `hook install` pins
/// (`spec/hooks.md` §6.2) stays in it.
pub fn run(args: &[&str], dir: &Path, stdin: Option<&[u8]>) -> Output {
    run_command(
        Command::new(BIN)
            .args(args)
            .current_dir(dir)
            .env("XDG_STATE_HOME", dir.join(".state")),
        stdin,
    )
}

/// Runs `command` with piped standard streams, feeding `stdin` if given; waits for it.
pub fn run_command(command: &mut Command, stdin: Option<&[u8]>) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        // The child may exit before reading everything (an error on line 1): not our failure.
        let _ = input.write_all(bytes);
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// Asserts success; returns stdout.
pub fn ok(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Asserts failure; returns stderr.
pub fn fails(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The `id` of each JSON line `memlineage append` printed, in order.
pub fn ids(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["id"].as_str().unwrap().to_string()
        })
        .collect()
}

/// Appends `lines` (one batch) to `dir/l.db` with `memlineage append`; returns their ids.
pub fn append(dir: &Path, lines: &[serde_json::Value]) -> Vec<String> {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    ids(&ok(&run(&["append", "l.db"], dir, Some(text.as_bytes()))))
}

/// The record a session file holds (`spec/hooks.md` §6.3), as JSON: line 1, then each delta's
/// reads appended and its other fields set; as line 1 writes it, a field at its default is
/// absent. `None` when a line is not JSON.
pub fn session_record(bytes: &[u8]) -> Option<serde_json::Value> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    let mut record: serde_json::Value = serde_json::from_str(lines.next()?).ok()?;
    for line in lines {
        let serde_json::Value::Object(mut delta) = serde_json::from_str(line).ok()? else {
            return None;
        };
        let more = delta.remove("reads")?;
        record["reads"]
            .as_array_mut()?
            .extend(more.as_array()?.iter().cloned());
        let fields = record.as_object_mut()?;
        for (k, v) in delta.into_iter().filter(|(k, _)| k != "delta" && k != "at") {
            let default = v.is_null() || v == 0 || v == false;
            match default && k != "unrecorded" {
                true => drop(fields.remove(&k)),
                false => drop(fields.insert(k, v)),
            }
        }
    }
    Some(record)
}
