//! The CLI against careless operators and hostile files: output files, closed pipes, huge
//! inputs, concurrent new writers, replay into real ledgers, misleading options.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

#[path = "common/cli_support.rs"]
mod cli_support;
use cli_support::{fails, ok, run, BIN};

fn ledger_with_one_prompt(d: &Path) -> String {
    ok(&run(&["init", "l.db"], d, None));
    let line = br#"{"writer":"alice","role":"user","kind":"prompt","content":"pay bob 10"}"#;
    let out = ok(&run(&["append", "l.db"], d, Some(line)));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    v["id"].as_str().unwrap().to_string()
}

#[test]
fn output_files_are_replaced_atomically_and_symlinks_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let id = ledger_with_one_prompt(d);
    // A neighbour named like the old temporary file is left alone.
    std::fs::write(d.join("out.tmp"), b"precious").unwrap();
    ok(&run(&["export", "l.db", "-o", "out.cbor"], d, None));
    assert_eq!(std::fs::read(d.join("out.tmp")).unwrap(), b"precious");
    assert!(!std::fs::read(d.join("out.cbor")).unwrap().is_empty());
    // A symlink is written through, not replaced.
    std::fs::write(d.join("real.proof"), b"old").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(d.join("real.proof"), d.join("link.proof")).unwrap();
        ok(&run(&["prove", "l.db", &id, "-o", "link.proof"], d, None));
        let meta = std::fs::symlink_metadata(d.join("link.proof")).unwrap();
        assert!(meta.file_type().is_symlink(), "the link survives");
        let text = std::fs::read_to_string(d.join("real.proof")).unwrap();
        assert!(text.starts_with("c2sp.org/tlog-proof@v1"), "{text}");
    }
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("memlineage-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_closed_stdout_does_not_turn_a_committed_append_into_a_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ledger_with_one_prompt(d);
    let mut child = Command::new(BIN)
        .args(["append", "l.db"])
        .current_dir(d)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader went away
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"writer":"alice","kind":"prompt","content":"second"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cp = ok(&run(&["checkpoint", "l.db"], d, None));
    assert_eq!(
        cp.lines().nth(1),
        Some("3"),
        "committed once and checkpointed: {cp}"
    );
}

#[test]
fn huge_inputs_are_refused_without_reading_them_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ledger_with_one_prompt(d);
    let big = vec![b'a'; 600 * 1024];
    std::fs::write(d.join("big"), &big).unwrap();
    let e = fails(&run(&["inspect", "big"], d, None));
    assert!(e.contains("too large for an entry"), "{e}");
    let vkey = ok(&run(&["checkpoint", "l.db", "--vkey"], d, None));
    let e = fails(&run(
        &["verify-proof", "big", "--log-key", vkey.trim()],
        d,
        None,
    ));
    assert!(e.contains("too large for a proof bundle"), "{e}");
    let e = fails(&run(&["verify", "l.db", "--checkpoint", "big"], d, None));
    assert!(e.contains("too large for a checkpoint"), "{e}");
    // One 17 MiB JSON line.
    let mut line = br#"{"writer":"alice","kind":"prompt","content":""#.to_vec();
    line.extend(std::iter::repeat_n(b'x', 17 << 20));
    let e = fails(&run(&["append", "l.db"], d, Some(&line)));
    assert!(e.contains("line 1: longer than"), "{e}");
}

#[test]
fn inspect_accepts_wrapped_hex_and_classes_bad_hex() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ledger_with_one_prompt(d);
    ok(&run(&["export", "l.db", "-o", "all.cbor"], d, None));
    // The export starts with the keyring entry; take the first item by decoding.
    let all = std::fs::read(d.join("all.cbor")).unwrap();
    let mut rest = all.as_slice();
    let _: ciborium::Value = ciborium::from_reader(&mut rest).unwrap();
    let first = &all[..all.len() - rest.len()];
    let hex = hex::encode(first);
    let wrapped: String = hex
        .as_bytes()
        .chunks(64)
        .map(|c| format!("{}\n", String::from_utf8_lossy(c)))
        .collect();
    std::fs::write(d.join("wrapped.hex"), format!("0x{wrapped}")).unwrap();
    let out = ok(&run(&["inspect", "wrapped.hex"], d, None));
    assert!(out.contains("\"kind\": \"keyring\""), "{out}");
    std::fs::write(d.join("odd.hex"), &hex[..hex.len() - 1]).unwrap();
    let out = run(&["inspect", "odd.hex"], d, None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("class: NotHex"));
}

#[test]
fn concurrent_new_writers_keep_their_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_path_buf();
    ok(&run(&["init", "c.db"], &d, None));
    let children: Vec<_> = (0..8)
        .map(|i| {
            let d = d.clone();
            std::thread::spawn(move || {
                let line = format!(
                    r#"{{"writer":"w{i}","role":"user","kind":"prompt","content":"hi {i}"}}"#
                );
                run(&["append", "c.db"], &d, Some(line.as_bytes()))
            })
        })
        .collect();
    for c in children {
        ok(&c.join().unwrap());
    }
    // Every writer can write again without re-binding: its key is in the key file.
    for i in 0..8 {
        let line = format!(r#"{{"writer":"w{i}","kind":"fact","content":"again {i}"}}"#);
        ok(&run(&["append", "c.db"], &d, Some(line.as_bytes())));
    }
    let v = ok(&run(&["verify", "c.db"], &d, None));
    assert!(
        v.contains("entries: 24 read, 24 verified"),
        "8 bindings, 16 entries: {v}"
    );
}

#[test]
fn replay_never_writes_into_an_existing_ledger() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ledger_with_one_prompt(d);
    let before = std::fs::read(d.join("l.db")).unwrap();
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/agentdojo/banking.jsonl");
    let e = fails(&run(
        &["replay", trace.to_str().unwrap(), "--ledger", "l.db"],
        d,
        None,
    ));
    assert!(e.contains("replay records only into a new ledger"), "{e}");
    assert_eq!(std::fs::read(d.join("l.db")).unwrap(), before);
}

#[test]
fn verify_says_what_it_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ledger_with_one_prompt(d);
    let e = fails(&run(&["verify", "l.db", "--quorum", "3"], d, None));
    assert!(e.contains("--quorum needs at least one --witness"), "{e}");
    let out = ok(&run(&["verify", "l.db"], d, None));
    assert!(
        out.contains("(read from the ledger file itself: pass --log-key"),
        "{out}"
    );
    let vkey = ok(&run(&["checkpoint", "l.db", "--vkey"], d, None));
    std::fs::write(
        d.join("old.note"),
        ok(&run(&["checkpoint", "l.db"], d, None)),
    )
    .unwrap();
    ok(&run(
        &["append", "l.db"],
        d,
        Some(br#"{"writer":"alice","kind":"prompt","content":"more"}"#),
    ));
    let out = ok(&run(
        &[
            "verify",
            "l.db",
            "--log-key",
            vkey.trim(),
            "--checkpoint",
            "old.note",
        ],
        d,
        None,
    ));
    assert!(out.contains("(given)"), "{out}");
    assert!(
        out.contains("note: entries 2..2 are beyond the checkpoint"),
        "{out}"
    );
}

#[test]
fn append_errors_name_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ledger_with_one_prompt(d);
    let ghost = "ee".repeat(32);
    let input = format!(
        "{}\n\n{}\n",
        r#"{"writer":"alice","kind":"prompt","content":"fine"}"#,
        format_args!(
            r#"{{"writer":"alice","kind":"fact","content":"x","parents":[{{"id":"{ghost}","weight":1.0}}]}}"#
        )
    );
    let e = fails(&run(&["append", "l.db"], d, Some(input.as_bytes())));
    assert!(
        e.contains(&format!("line 3: unknown parent {ghost}")),
        "{e}"
    );
    let e = fails(&run(
        &["append", "l.db"],
        d,
        Some(br#"{"writer":"root","role":"log","kind":"fact","content":"x"}"#),
    ));
    assert!(e.contains("line 1: role log cannot be bound"), "{e}");
    let e = fails(&run(
        &["append", "l.db"],
        d,
        Some(br#"{"writer":"","role":"user","kind":"fact","content":"x"}"#),
    ));
    assert!(e.contains("line 1: writer name is empty"), "{e}");
    let e = fails(&run(
        &["append", "l.db"],
        d,
        Some(format!(r#"{{"writer":"alice","kind":"fact","content":"x","parents":[{{"id":"{ghost}","weight":1.0000004}}]}}"#).as_bytes()),
    ));
    assert!(e.contains("got 1000001 millionths"), "{e}");
}

/// `verify-proof --tau` is what the caller expects the checkpoint to sign, taken exactly (in
/// millionths, as signed): a τ no checkpoint can sign is an error, never rounded to the one
/// the checkpoint signs (attack review 44: `--tau 0.4999996` passed a checkpoint signing 0.5,
/// under which an edge of weight 0.5 is weak where the caller's τ makes it strong).
#[test]
fn verify_proof_takes_the_expected_tau_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/label-proof/summary-quarantined-tombstoned.json"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    std::fs::write(d.join("p"), v["proof"].as_str().unwrap()).unwrap();
    let vkey = v["vkey"].as_str().unwrap();
    let verify = |tau: &str| {
        run(
            &["verify-proof", "p", "--log-key", vkey, "--tau", tau],
            d,
            None,
        )
    };
    for tau in ["0.5", "0.500000", "0.50000000"] {
        assert!(
            ok(&verify(tau)).contains("label: DERIVED_UNTRUSTED"),
            "{tau}"
        );
    }
    for tau in [
        "0.4999996",
        "0.5000004",
        "0.49999999",
        "-0",
        "5e-1",
        ".5",
        "0.",
        "NaN",
        "1.5",
        "",
    ] {
        let err = fails(&verify(tau));
        assert!(err.starts_with("error: "), "{tau}: {err}");
    }
    // The audit's --tau is read the same way.
    ledger_with_one_prompt(d);
    ok(&run(&["verify", "l.db", "--tau", "0.5"], d, None));
    let err = fails(&run(&["verify", "l.db", "--tau", "0.4999996"], d, None));
    assert!(err.contains("six decimals"), "{err}");
}

/// A label proof made before a flag still verifies after it, unquarantined, against its older
/// checkpoint (offline, nothing shows the flag came later: `spec/label-proof.md` §5). A
/// verifier that trusts a later checkpoint says so with `--min-size` and the older proof is
/// refused (attack review 44: before the option it could only read the size printed).
#[test]
fn a_label_proof_older_than_a_trusted_size_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let id = ledger_with_one_prompt(d);
    ok(&run(
        &["prove", "l.db", &id, "--label", "-o", "old"],
        d,
        None,
    ));
    let vkey = ok(&run(&["checkpoint", "l.db", "--vkey"], d, None));
    let vkey = vkey.trim();
    let verify = |extra: &[&str]| {
        let mut args = vec!["verify-proof", "old", "--log-key", vkey];
        args.extend_from_slice(extra);
        run(&args, d, None)
    };
    let before = ok(&verify(&[]));
    ok(&run(
        &["flag", "l.db", &id, "--reason", "injection"],
        d,
        None,
    ));
    let head = ok(&run(&["checkpoint", "l.db"], d, None));
    let size = head.lines().nth(1).unwrap().to_string();
    ok(&run(
        &["prove", "l.db", &id, "--label", "-o", "new"],
        d,
        None,
    ));
    // The old proof is what it was: not quarantined, as of its own size.
    assert_eq!(ok(&verify(&[])), before);
    assert!(before.contains("quarantined: no"), "{before}");
    let err = fails(&verify(&["--min-size", &size]));
    assert!(err.contains("older than the"), "{err}");
    let new = ok(&run(
        &[
            "verify-proof",
            "new",
            "--log-key",
            vkey,
            "--min-size",
            &size,
        ],
        d,
        None,
    ));
    assert!(new.contains("quarantined: yes"), "{new}");
}

/// `ledger_with_one_prompt` with a flag on the prompt (the last entry), and the SQLite file
/// open for a store-only attacker's edits.
fn flagged_ledger(d: &Path) -> (String, rusqlite::Connection) {
    let id = ledger_with_one_prompt(d);
    ok(&run(&["flag", "l.db", &id, "--reason", "x"], d, None));
    (id, rusqlite::Connection::open(d.join("l.db")).unwrap())
}

/// A store-only attacker cuts the last entry (a flag) out of the SQLite file with its tree
/// hashes and the checkpoints that cover it, leaving the side file beside it, which holds the
/// log key's checkpoint of the longer tree. The ledger refuses to open it (the seal), so no
/// label proof is made from it; `memlineage verify`, which needs only the verifier key, read
/// neither the seal (a holder of the secret key checks it) nor the side file, and said OK,
/// where a signed checkpoint beside the store shows that entries were cut (attack review 44).
/// It now compares the store with the side file's checkpoint.
#[test]
fn verify_reports_a_flag_cut_out_when_the_side_file_signs_the_longer_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (id, c) = flagged_ledger(d);
    let last: i64 = c
        .query_row("SELECT max(idx) FROM entries", [], |r| r.get(0))
        .unwrap();
    c.execute("DELETE FROM entries WHERE idx = ?1", [last])
        .unwrap();
    c.execute("DELETE FROM checkpoints WHERE size > ?1", [last])
        .unwrap();
    // The tree hashes of the cut leaf (what a tree of `last` leaves does not store).
    let keep = 2 * last - i64::from(last.count_ones() as u8);
    c.execute(
        "DELETE FROM tree_hashes WHERE rowid NOT IN \
         (SELECT rowid FROM tree_hashes ORDER BY rowid LIMIT ?1)",
        [keep],
    )
    .unwrap();
    drop(c);
    assert!(d.join("l.db.checkpoint").exists());
    let err = fails(&run(&["prove", "l.db", &id, "--label", "-o", "p"], d, None));
    assert!(
        err.contains("sealed") || err.contains("signed a checkpoint"),
        "{err}"
    );
    let out = run(&["verify", "l.db"], d, None);
    fails(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("side checkpoint: MISMATCH (the log key signed a tree of"),
        "{stdout}"
    );
    // The untouched ledger: the side file's checkpoint is a prefix of the store.
    let tmp = tempfile::tempdir().unwrap();
    ledger_with_one_prompt(tmp.path());
    let clean = ok(&run(&["verify", "l.db"], tmp.path(), None));
    assert!(clean.contains("side checkpoint: size "), "{clean}");
}

/// A store-only attacker turns the `kind` column of a flag's row into one without effects (the
/// signed bytes untouched). The ledger refuses to open the store (the seal's effects chain), so
/// `prove --label` makes no proof from it; `memlineage verify` recomputed everything from the
/// signed bytes, found the flag, and said OK (attack review 44), where `spec/lineage.md` §5.2
/// step 6 has it name what the row claims against the bytes: it now fails naming the row.
#[test]
fn verify_names_a_row_whose_kind_column_was_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (id, c) = flagged_ledger(d);
    c.execute(
        "UPDATE entries SET kind = 1 WHERE idx = (SELECT max(idx) FROM entries)",
        [],
    )
    .unwrap();
    drop(c);
    fails(&run(&["prove", "l.db", &id, "--label", "-o", "p"], d, None));
    let out = run(&["verify", "l.db"], d, None);
    fails(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stored kind tool_result differs from the signed kind quarantine"),
        "{stderr}"
    );
}

/// The same for the `id` column of an entry's row (a ledger looks entries up by it): verify
/// names the row whose stored id is not its bytes' leaf hash.
#[test]
fn verify_names_a_row_whose_id_column_was_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (_, c) = flagged_ledger(d);
    c.execute("UPDATE entries SET id = zeroblob(32) WHERE idx = 1", [])
        .unwrap();
    drop(c);
    let out = run(&["verify", "l.db"], d, None);
    fails(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "stored id {} is not the leaf hash of the entry's bytes",
            "00".repeat(32)
        )),
        "{stderr}"
    );
}
