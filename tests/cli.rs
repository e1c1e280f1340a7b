//! End-to-end tests of the `memlineage` binary: each test runs the real executable in a fresh
//! temporary directory and asserts exit codes and the exact pieces of output a user relies on.

use memlineage::record::{EntryId, SignedEntry};
use serde_json::Value as Json;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_memlineage");
const ORIGIN: &str = "memlineage.local/ledger";

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn init_creates_ledger_and_private_key_file_and_prints_log_key() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("mem.ledger");
    let out = ok(run(&["init".as_ref(), ledger.as_os_str()], None));
    let stdout = text(&out.stdout);
    assert!(ledger.is_file(), "ledger file missing");
    let key = key_file(&ledger);
    assert!(key.is_file(), "key file missing");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "key file mode {mode:o}");
    }
    let vkey = log_key_line(&stdout);
    assert!(vkey.starts_with(&format!("{ORIGIN}+")), "log key {vkey:?}");
    // <origin>+<8 hex key id>+<base64(0x01 || 32-byte Ed25519 key)> (C2SP signed-note).
    let parts: Vec<&str> = vkey.splitn(3, '+').collect();
    assert_eq!(parts.len(), 3, "log key {vkey:?} is not name+id+key");
    assert!(
        parts[1].len() == 8 && parts[1].bytes().all(|b| b.is_ascii_hexdigit()),
        "{vkey:?}"
    );
    use base64::Engine as _;
    let key = base64::engine::general_purpose::STANDARD
        .decode(parts[2])
        .unwrap();
    assert_eq!((key.len(), key[0]), (33, 0x01), "log key {vkey:?}");
    // The printed key is the one the ledger records.
    let recorded = ok(ml(&ledger, &["checkpoint", "--vkey"], None));
    assert_eq!(text(&recorded.stdout).trim(), vkey);
    // A fresh ledger has tree size 0.
    assert_eq!(tree_size(&ledger), 0);
}

#[test]
fn init_creates_the_missing_directory_of_the_ledger_private_to_the_user() {
    // README's first hooks command, in a project that has no `.memlineage/` yet.
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join(".memlineage/sub/agent.ledger");
    ok(run(&["init".as_ref(), ledger.as_os_str()], None));
    assert!(ledger.is_file() && key_file(&ledger).is_file());
    assert_eq!(tree_size(&ledger), 0);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        for d in [".memlineage", ".memlineage/sub"] {
            let mode = std::fs::metadata(dir.path().join(d))
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, 0o700, "{d}: mode {mode:o}");
        }
    }
    // A relative path in the current directory needs no directory at all.
    let out = Command::new(BIN)
        .args(["init", "here.ledger"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.path().join("here.ledger").is_file());
}

#[test]
fn second_init_fails_and_leaves_files_byte_identical() {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("mem.ledger");
    ok(run(&["init".as_ref(), ledger.as_os_str()], None));
    let before = (
        std::fs::read(&ledger).unwrap(),
        std::fs::read(key_file(&ledger)).unwrap(),
    );
    let out = run(&["init".as_ref(), ledger.as_os_str()], None);
    assert_eq!(
        out.status.code(),
        Some(1),
        "second init: {}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("already exists"),
        "stderr: {}",
        text(&out.stderr)
    );
    let after = (
        std::fs::read(&ledger).unwrap(),
        std::fs::read(key_file(&ledger)).unwrap(),
    );
    assert!(before.0 == after.0, "ledger file changed");
    assert!(before.1 == after.1, "key file changed");
    // A leftover key file alone also blocks init.
    let other = dir.path().join("other.ledger");
    std::fs::write(key_file(&other), b"{}").unwrap();
    let out = run(&["init".as_ref(), other.as_os_str()], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        !other.exists(),
        "init created a ledger beside a foreign key file"
    );
    assert_eq!(std::fs::read(key_file(&other)).unwrap(), b"{}");
}

#[test]
fn append_labels_follow_lineage() {
    let s = Scenario::build();
    assert_eq!(s.prompt.label, "TRUSTED");
    assert_eq!(s.derived.label, "DERIVED_TRUSTED");
    assert_eq!(s.tool.label, "EXTERNAL");
    assert_eq!(s.untrusted.label, "DERIVED_UNTRUSTED");
    // w = τ = 0.5 does not propagate the tool entry's label; the trusted parent at 1.0 does.
    assert_eq!(s.at_tau.label, "DERIVED_TRUSTED");
    // Indexes: a batch's new writers are bound (keyring entries) before its entries.
    assert_eq!(s.prompt.index, 1);
    assert_eq!(s.derived.index, 4);
    assert_eq!(s.tool.index, 5);
    assert_eq!(s.untrusted.index, 6);
    assert_eq!(s.at_tau.index, 7);
    assert_eq!(tree_size(&s.ledger), 8);
}

#[test]
fn append_weight_just_above_tau_propagates() {
    let s = Scenario::build();
    let line = summary(&[(&s.tool.id, 0.500001), (&s.prompt.id, 1.0)], "above tau");
    let got = s.append(&[line]);
    assert_eq!(got[0].label, "DERIVED_UNTRUSTED");
}

#[test]
fn append_batch_with_a_bad_line_appends_nothing() {
    let s = Scenario::build();
    let good = summary(&[(&s.prompt.id, 1.0)], "fine on its own");
    let unknown = "ab".repeat(32);
    let cases: [(&str, String, &[&str]); 4] = [
        (
            "unknown parent",
            summary(&[(&unknown, 1.0)], "dangling"),
            &["unknown parent", &unknown],
        ),
        (
            "weight 1.5",
            summary(&[(&s.prompt.id, 1.5)], "heavy"),
            &["weight out of range"],
        ),
        (
            "malformed JSON",
            r#"{"writer": "agent", "kind": "summary""#.to_string(),
            &["line 2"],
        ),
        (
            "unknown kind",
            r#"{"writer":"agent","kind":"memo","content":"x"}"#.to_string(),
            &["unknown kind memo"],
        ),
    ];
    for (what, bad, want) in cases {
        let before = snapshot(&s.ledger);
        let input = format!("{good}\n{bad}\n");
        let out = ml(&s.ledger, &["append"], Some(input.as_bytes()));
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{what}: stdout {}",
            text(&out.stdout)
        );
        for w in want {
            assert!(stderr.contains(w), "{what}: stderr {stderr:?} lacks {w:?}");
        }
        assert!(
            out.stdout.is_empty(),
            "{what}: printed {}",
            text(&out.stdout)
        );
        assert_unchanged(&s.ledger, &before, what);
    }
}

/// A failing batch that introduces a new writer must not leave that writer's keyring entry
/// behind either (all or nothing).
#[test]
fn append_failed_batch_with_new_writer_appends_nothing() {
    let s = Scenario::build();
    let before = snapshot(&s.ledger);
    let key_before = std::fs::read(key_file(&s.ledger)).unwrap();
    let bad = format!(
        r#"{{"writer":"bob","role":"user","kind":"prompt","content":"hi","parents":[{{"id":"{}","weight":1.0}}]}}"#,
        "cd".repeat(32)
    );
    let out = ml(&s.ledger, &["append"], Some(format!("{bad}\n").as_bytes()));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("unknown parent"),
        "{}",
        text(&out.stderr)
    );
    assert_unchanged(&s.ledger, &before, "new writer");
    assert_eq!(
        std::fs::read(key_file(&s.ledger)).unwrap(),
        key_before,
        "key file changed"
    );
}

#[test]
fn verify_good_ledger_prints_ok() {
    let s = Scenario::build();
    let out = ok(ml(&s.ledger, &["verify"], None));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().last(), Some("OK"), "stdout {stdout}");
    assert!(
        stdout.contains("entries: 8 read, 8 verified"),
        "stdout {stdout}"
    );
    assert!(
        stdout.contains("tree root at checkpoint size: matches"),
        "stdout {stdout}"
    );
    assert!(
        stdout.contains("effects index at checkpoint size: matches the signed one"),
        "stdout {stdout}"
    );
    // Labels of the scenario (plus 3 keyring entries, Trusted) recomputed from scratch.
    assert!(
        stdout.contains(
            "labels recomputed: trusted 4 derived_trusted 2 derived_untrusted 1 external 1"
        ),
        "stdout {stdout}"
    );
    assert!(out.stderr.is_empty(), "stderr {}", text(&out.stderr));
}

#[test]
fn verify_detects_flipped_cose_byte_and_names_the_entry() {
    let s = Scenario::build();
    let index = s.at_tau.index; // a leaf of the lineage graph: nothing depends on it
    let len = cose_of(&s.ledger, index).len();
    // One byte in the payload (inside h_content) and one in the signature.
    for (what, at) in [("payload", len / 2), ("signature", len - 10)] {
        let copy = copy_ledger(&s);
        let mut cose = cose_of(&copy.1, index);
        cose[at] ^= 0x01;
        set_cose(&copy.1, index, &cose);
        let out = ml(&copy.1, &["verify"], None);
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{what}: stdout {}",
            text(&out.stdout)
        );
        assert!(
            stderr.contains(&format!("entry {index} (")),
            "{what}: stderr {stderr}"
        );
        assert!(
            stderr.contains("entry does not verify"),
            "{what}: stderr {stderr}"
        );
        assert!(!text(&out.stdout).contains("\nOK"), "{what}: printed OK");
        assert!(
            text(&out.stdout).contains("MISMATCH"),
            "{what}: root still matches"
        );
    }
}

#[test]
fn verify_detects_changed_label_and_names_the_entry() {
    let s = Scenario::build();
    let index = s.untrusted.index;
    set_label(&s.ledger, index, 0); // DERIVED_UNTRUSTED -> TRUSTED
    let out = ml(&s.ledger, &["verify"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stdout {}", text(&out.stdout));
    assert!(
        stderr.contains(&format!(
            "entry {index} ({}): stored label TRUSTED differs from recomputed DERIVED_UNTRUSTED",
            s.untrusted.id
        )),
        "stderr {stderr}"
    );
    assert!(stderr.contains("FAILED: 1 problems"), "stderr {stderr}");
    // The root covers the entries, not the labels.
    assert!(text(&out.stdout).contains("matches"));
}

/// Changing a *parent's* stored label must name that entry only: its children's parents are
/// still earlier in the log, and their own stored labels are right.
#[test]
fn verify_changed_parent_label_names_only_that_entry() {
    let s = Scenario::build();
    let index = s.prompt.index; // parent of `derived` and `at_tau`
    set_label(&s.ledger, index, 3); // TRUSTED -> EXTERNAL
    let out = ml(&s.ledger, &["verify"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains(&format!("entry {index} (")),
        "stderr {stderr}"
    );
    assert!(
        !stderr.contains("is not earlier in the log"),
        "stderr {stderr}"
    );
    assert!(stderr.contains("FAILED: 1 problems"), "stderr {stderr}");
    assert!(
        text(&out.stdout).contains("entries: 8 read, 8 verified"),
        "{}",
        text(&out.stdout)
    );
}

/// Commands that only read a ledger must not create one at a mistyped path (which would then
/// block `init` there), and must fail.
#[test]
fn read_only_commands_on_a_missing_ledger_fail_and_create_nothing() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("typo.ledger");
    for args in [
        &["verify"][..],
        &["export"],
        &["checkpoint", "--vkey"],
        &["checkpoint"],
    ] {
        let out = ml(&missing, args, None);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: stdout {:?}",
            out.stdout
        );
        assert!(
            text(&out.stderr).starts_with("error: "),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(!missing.exists(), "{args:?} created {}", missing.display());
    }
    ok(run(&["init".as_ref(), missing.as_os_str()], None));
}

#[test]
fn export_is_a_cbor_sequence_of_exactly_the_entries() {
    let s = Scenario::build();
    let file = s.dir.path().join("entries.cbor");
    let out = ok(ml(
        &s.ledger,
        &["export", "-o", file.to_str().unwrap()],
        None,
    ));
    assert!(out.stdout.is_empty());
    let bytes = std::fs::read(&file).unwrap();
    let items = split_cbor_seq(&bytes);
    assert_eq!(items.len() as u64, tree_size(&s.ledger));
    assert_eq!(items.concat(), bytes, "items do not tile the file");
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item[0], 0xd2, "item {i} is not tag 18");
        let e = SignedEntry::decode(item).unwrap_or_else(|e| panic!("item {i}: {e}"));
        assert_eq!(e.id(), EntryId::of_cose(item));
        assert_eq!(
            item.as_slice(),
            cose_of(&s.ledger, i as u64).as_slice(),
            "item {i}"
        );
    }
    for a in s.all() {
        let e = SignedEntry::decode(&items[a.index as usize]).unwrap();
        assert_eq!(e.id().to_string(), a.id, "entry at index {}", a.index);
    }
    // To standard output: the same bytes.
    let out = ok(ml(&s.ledger, &["export"], None));
    assert_eq!(out.stdout, bytes);
}

#[test]
fn checkpoint_prints_a_c2sp_note() {
    let s = Scenario::build();
    let out = ok(ml(&s.ledger, &["checkpoint"], None));
    let note = text(&out.stdout);
    let lines: Vec<&str> = note.split('\n').collect();
    assert_eq!(lines.len(), 8, "note {note:?}"); // 7 lines and the final newline
    assert_eq!(lines[0], ORIGIN);
    assert_eq!(lines[1], "8");
    use base64::Engine as _;
    let root = base64::engine::general_purpose::STANDARD
        .decode(lines[2])
        .unwrap();
    assert_eq!(root.len(), 32);
    // The signed labelling parameters (spec/lineage.md §2.1).
    assert_eq!(
        lines[3],
        "memlineage/label-policy@v1 tau=500000 rule=fail-closed"
    );
    // The effects index (spec/label-proof.md §3.3): the scenario binds three keys.
    assert!(
        lines[4].starts_with("memlineage/effects-index@v1 entries=3 root="),
        "{:?}",
        lines[4]
    );
    assert_eq!(lines[5], "");
    assert!(
        lines[6].starts_with(&format!("— {ORIGIN} ")),
        "signature line {:?}",
        lines[6]
    );
    let sig = base64::engine::general_purpose::STANDARD
        .decode(lines[6].rsplit(' ').next().unwrap())
        .unwrap();
    assert_eq!(sig.len(), 4 + 64, "key id and Ed25519 signature");
    assert_eq!(lines[7], "");
    // Deterministic: asking again gives the same note.
    assert_eq!(ok(ml(&s.ledger, &["checkpoint"], None)).stdout, out.stdout);
    // The vkey form.
    let vk = ok(ml(&s.ledger, &["checkpoint", "--vkey"], None));
    assert_eq!(text(&vk.stdout).trim(), s.vkey);
}

#[test]
fn prove_then_verify_proof_offline() {
    let s = Scenario::build();
    let proof = s.dir.path().join("entry.proof");
    let out = ok(ml(
        &s.ledger,
        &["prove", &s.untrusted.id, "-o", proof.to_str().unwrap()],
        None,
    ));
    assert!(out.stdout.is_empty());
    let body = std::fs::read_to_string(&proof).unwrap();
    assert!(
        body.starts_with("c2sp.org/tlog-proof@v1\nextra "),
        "proof {body}"
    );
    assert!(
        body.contains(&format!("\nindex {}\n", s.untrusted.index)),
        "proof {body}"
    );
    // A directory with nothing but the proof file.
    let away = TempDir::new().unwrap();
    std::fs::copy(&proof, away.path().join("entry.proof")).unwrap();
    let out = ok(run_in(
        away.path(),
        &["verify-proof", "entry.proof", "--log-key", &s.vkey],
    ));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with(&format!("OK: entry {} (summary by ", s.untrusted.id)),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "is leaf {} of {ORIGIN} tree size 8 ",
            s.untrusted.index
        )),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_dir(away.path()).unwrap().count(),
        1,
        "verify-proof wrote files"
    );
}

/// `prove --label` writes a label proof that `verify-proof` checks in a directory holding
/// nothing else, printing the label, the lineage path, the quarantine and the tombstones
/// (`spec/label-proof.md`); other signed parameters, one changed character or a tlog-proof
/// option on it are errors.
#[test]
fn prove_label_then_verify_it_with_the_log_key_alone() {
    let s = Scenario::build();
    let proof = s.dir.path().join("entry.label-proof");
    ok(ml(
        &s.ledger,
        &[
            "prove",
            "--label",
            &s.untrusted.id,
            "-o",
            proof.to_str().unwrap(),
        ],
        None,
    ));
    let away = TempDir::new().unwrap();
    std::fs::copy(&proof, away.path().join("p")).unwrap();
    let verify = |extra: &[&str]| {
        let mut args = vec!["verify-proof", "p", "--log-key", &s.vkey];
        args.extend_from_slice(extra);
        run_in(away.path(), &args)
    };
    let stdout = text(&ok(verify(&[])).stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    assert!(lines[0].starts_with(&format!("OK: entry {} (summary by ", s.untrusted.id)));
    assert_eq!(
        lines[1],
        "label: DERIVED_UNTRUSTED (tau 0.500000, rule fail-closed, signed by the checkpoint; \
         2 entries of ancestry)"
    );
    assert!(
        lines[2].starts_with(&format!(
            "lineage: {} tool_result by `tool:read_file` (tool) [EXTERNAL] -> {} summary by \
             `agent` (agent) [DERIVED_UNTRUSTED]",
            &s.tool.id[..8],
            &s.untrusted.id[..8]
        )),
        "{stdout}"
    );
    assert_eq!(lines[3..], ["quarantined: no", "tombstoned: no"]);
    ok(verify(&["--tau", "0.5", "--rule", "fail-closed"]));
    let out = verify(&["--tau", "0.9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("the checkpoint signs tau 0.500000 rule fail-closed"));
    let body = std::fs::read_to_string(&proof).unwrap();
    let at = body.find("\nentry ").unwrap() + 20;
    let mut chars: Vec<char> = body.chars().collect();
    chars[at] = flip(chars[at]);
    std::fs::write(away.path().join("p"), chars.into_iter().collect::<String>()).unwrap();
    let out = verify(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stderr).starts_with("error: "));
    // A tlog-proof takes no --tau.
    let tlog = s.dir.path().join("entry.proof");
    ok(ml(
        &s.ledger,
        &["prove", &s.untrusted.id, "-o", tlog.to_str().unwrap()],
        None,
    ));
    let out = run_in(
        s.dir.path(),
        &[
            "verify-proof",
            tlog.to_str().unwrap(),
            "--log-key",
            &s.vkey,
            "--tau",
            "0.5",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn verify_proof_rejects_wrong_log_key() {
    let s = Scenario::build();
    let proof = s.dir.path().join("entry.proof");
    ok(ml(
        &s.ledger,
        &["prove", &s.prompt.id, "-o", proof.to_str().unwrap()],
        None,
    ));
    // Another ledger with the same origin: same key name, different key.
    let other = TempDir::new().unwrap();
    let other_ledger = other.path().join("other.ledger");
    let wrong = log_key_line(&text(
        &ok(run(&["init".as_ref(), other_ledger.as_os_str()], None)).stdout,
    ));
    assert_ne!(wrong, s.vkey);
    let out = run_in(
        s.dir.path(),
        &["verify-proof", proof.to_str().unwrap(), "--log-key", &wrong],
    );
    assert_eq!(out.status.code(), Some(1), "stdout {}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("checkpoint"),
        "stderr {}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    // A key that is not a vkey at all.
    let out = run_in(
        s.dir.path(),
        &[
            "verify-proof",
            proof.to_str().unwrap(),
            "--log-key",
            "nonsense",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error: "),
        "stderr {}",
        text(&out.stderr)
    );
}

#[test]
fn verify_proof_rejects_any_flipped_character() {
    let s = Scenario::build();
    let proof = s.dir.path().join("entry.proof");
    ok(ml(
        &s.ledger,
        &["prove", &s.untrusted.id, "-o", proof.to_str().unwrap()],
        None,
    ));
    let body = std::fs::read_to_string(&proof).unwrap();
    // One flip in the middle of every non-empty line: header, extra (the entry), index, each
    // path hash, and each checkpoint line (origin, size, root, signature).
    let lines: Vec<&str> = body.split('\n').collect();
    let mut tried = 0;
    for (n, line) in lines.iter().enumerate() {
        if line.is_empty() {
            continue;
        }
        let chars: Vec<char> = line.chars().collect();
        let at = chars.len() / 2;
        let mut flipped = chars.clone();
        flipped[at] = flip(chars[at]);
        let mut copy = lines.clone();
        let new_line: String = flipped.into_iter().collect();
        copy[n] = &new_line;
        let file = s.dir.path().join(format!("flip{n}.proof"));
        std::fs::write(&file, copy.join("\n")).unwrap();
        let out = run_in(
            s.dir.path(),
            &["verify-proof", file.to_str().unwrap(), "--log-key", &s.vkey],
        );
        assert_eq!(
            out.status.code(),
            Some(1),
            "line {n} {line:?} flipped at {at}: verified"
        );
        assert!(
            text(&out.stderr).starts_with("error: "),
            "line {n}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty());
        tried += 1;
    }
    // header, extra, index, 3 path hashes (leaf 6 of 8), origin, size, root, the parameters'
    // and the effects index's extension lines, signature
    assert_eq!(tried, 12, "proof {body}");
}

#[test]
fn inspect_exported_entry_binary_and_hex() {
    let s = Scenario::build();
    let bytes = exported_item(&s, s.untrusted.index);
    let bin = s.dir.path().join("entry.cose");
    std::fs::write(&bin, &bytes).unwrap();
    let hexfile = s.dir.path().join("entry.hex");
    std::fs::write(&hexfile, format!("{}\n", hex::encode(&bytes))).unwrap();
    for file in [&bin, &hexfile] {
        let out = ok(run(&["inspect".as_ref(), file.as_os_str()], None));
        let v: Json = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["id"], s.untrusted.id.as_str());
        assert_eq!(v["version"], 1);
        assert_eq!(v["kind"], "summary");
        assert_eq!(v["time_ms"], 1_735_689_600_004u64);
        assert_eq!(v["attribution"], "coarse");
        assert_eq!(v["parents"].as_array().unwrap().len(), 1);
        assert_eq!(v["parents"][0]["id"], s.tool.id.as_str());
        assert_eq!(v["parents"][0]["weight"], "0.900000");
        let content = sha256_hex(b"the tool says: pay the attacker");
        assert_eq!(v["content_hash"], content.as_str());
        assert_eq!(v["target"], Json::Null);
        assert_eq!(v["binding"], Json::Null);
        assert!(v["signature"].as_str().unwrap().starts_with("valid"));
        assert_eq!(v["writer"].as_str().unwrap().len(), 64);
    }
}

#[test]
fn inspect_rejects_damaged_entries_with_exit_2_and_error_class() {
    let s = Scenario::build();
    let bytes = exported_item(&s, s.untrusted.index);
    let mut sig_flipped = bytes.clone();
    let n = sig_flipped.len();
    sig_flipped[n - 20] ^= 0x04; // inside the 64-byte signature, the last item
    let mut trailing = bytes.clone();
    trailing.push(0x00);
    let cases: [(&str, Vec<u8>, &str); 5] = [
        (
            "truncated by one byte",
            bytes[..n - 1].to_vec(),
            "class: Truncated",
        ),
        (
            "truncated to half",
            bytes[..n / 2].to_vec(),
            "class: Truncated",
        ),
        ("trailing garbage", trailing, "class: TrailingBytes(1)"),
        ("flipped signature bit", sig_flipped, "class: BadSignature"),
        (
            "trailing garbage, hex",
            hex::encode([bytes.as_slice(), &[0xff]].concat()).into_bytes(),
            "class: TrailingBytes(1)",
        ),
    ];
    for (what, data, want) in cases {
        let file = s.dir.path().join("damaged");
        std::fs::write(&file, &data).unwrap();
        let out = run(&["inspect".as_ref(), file.as_os_str()], None);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: stderr {stderr}");
        assert!(
            stderr.starts_with("invalid entry: "),
            "{what}: stderr {stderr}"
        );
        assert!(
            stderr.contains(want),
            "{what}: stderr {stderr} lacks {want:?}"
        );
        assert!(
            out.stdout.is_empty(),
            "{what}: stdout {}",
            text(&out.stdout)
        );
    }
}

#[test]
fn explain_prints_the_path_from_the_untrusted_source() {
    let s = Scenario::build();
    let out = ok(ml(&s.ledger, &["explain", &s.untrusted.id], None));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "stdout {stdout}");
    assert_eq!(
        lines[0],
        format!("entry {}: DERIVED_UNTRUSTED", s.untrusted.id)
    );
    assert_eq!(
        lines[1],
        format!(
            "source {} tool_result by tool:read_file (tool) [EXTERNAL]",
            &s.tool.id[..8]
        )
    );
    assert_eq!(
        lines[2],
        format!(
            "  -> {} summary by agent (agent) [DERIVED_UNTRUSTED]",
            &s.untrusted.id[..8]
        )
    );
    // A trusted entry has no such path.
    let out = ok(ml(&s.ledger, &["explain", &s.at_tau.id], None));
    assert_eq!(
        text(&out.stdout),
        format!(
            "entry {}: DERIVED_TRUSTED\nno untrusted ancestor reaches it over propagating edges\n",
            s.at_tau.id
        )
    );
    // An unknown id fails.
    let out = ml(&s.ledger, &["explain", &"00".repeat(32)], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("unknown entry"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn replay_banking_json_figures() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/agentdojo/banking.jsonl");
    let out = ok(run(
        &["replay".as_ref(), fixture.as_os_str(), "--json".as_ref()],
        None,
    ));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "not one JSON line: {stdout}");
    let v: Json = serde_json::from_str(&stdout).unwrap();
    let suites = v.as_object().unwrap();
    assert_eq!(suites.keys().collect::<Vec<_>>(), ["banking"]);
    let banking = &v["banking"];
    let get = |mode: &str, config: &str, field: &str| -> u64 {
        banking[mode][config][field]
            .as_u64()
            .unwrap_or_else(|| panic!("banking.{mode}.{config}.{field} missing in {stdout}"))
    };
    for mode in ["direct", "via_memory"] {
        let attacks = get(mode, "memlineage", "attack_calls");
        assert!(attacks > 0, "{mode}: no attack calls");
        assert_eq!(
            get(mode, "memlineage", "attack_allowed"),
            0,
            "{mode}: memlineage let an attack through"
        );
        assert_eq!(
            get(mode, "no_defence", "attack_allowed"),
            get(mode, "no_defence", "attack_calls"),
            "{mode}"
        );
        let legit = get(mode, "no_defence", "legit_calls");
        assert!(legit > 0, "{mode}: no legitimate calls");
        for config in ["no_defence", "signatures_only", "memlineage"] {
            assert_eq!(get(mode, config, "legit_calls"), legit, "{mode} {config}");
            assert_eq!(
                get(mode, config, "attack_calls"),
                attacks,
                "{mode} {config}"
            );
        }
    }
    // Memory laundering defeats the signatures-only baseline.
    assert_eq!(
        get("via_memory", "signatures_only", "attack_allowed"),
        get("via_memory", "signatures_only", "attack_calls")
    );
}

#[test]
fn replay_reports_the_malformed_line() {
    let dir = TempDir::new().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/agentdojo/banking.jsonl");
    let first = std::fs::read_to_string(fixture)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let file = dir.path().join("bad.jsonl");
    std::fs::write(
        &file,
        format!("{first}\n{{\"suite\": \"banking\", \"user_task\": \n{first}\n"),
    )
    .unwrap();
    let out = run(
        &["replay".as_ref(), file.as_os_str(), "--json".as_ref()],
        None,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stdout {}", text(&out.stdout));
    assert!(
        stderr.starts_with("error: trace line 2: "),
        "stderr {stderr}"
    );
    assert!(out.stdout.is_empty(), "printed figures for a broken file");
}

// ---------------------------------------------------------------------------------------------
// The shared scenario
// ---------------------------------------------------------------------------------------------

/// One line `append` printed.
#[derive(Clone, Debug)]
struct Appended {
    id: String,
    index: u64,
    label: String,
}

/// A ledger with a user prompt, an agent summary of it, a tool result, a summary of the tool
/// result (w = 0.9) and a summary with the tool result at w = τ = 0.5 beside the prompt at 1.0.
struct Scenario {
    dir: TempDir,
    ledger: PathBuf,
    vkey: String,
    prompt: Appended,
    derived: Appended,
    tool: Appended,
    untrusted: Appended,
    at_tau: Appended,
}

impl Scenario {
    fn build() -> Self {
        let dir = TempDir::new().unwrap();
        let ledger = dir.path().join("mem.ledger");
        let init = ok(run(
            &[
                "init".as_ref(),
                ledger.as_os_str(),
                "--tau".as_ref(),
                "0.5".as_ref(),
            ],
            None,
        ));
        let vkey = log_key_line(&text(&init.stdout));
        let mut s = Scenario {
            dir,
            ledger,
            vkey,
            prompt: placeholder(),
            derived: placeholder(),
            tool: placeholder(),
            untrusted: placeholder(),
            at_tau: placeholder(),
        };
        let p = s.append(&[line("alice", Some("user"), "prompt", "pay my rent", &[], 0)]);
        s.prompt = p[0].clone();
        let batch = s.append(&[
            line(
                "agent",
                Some("agent"),
                "summary",
                "user wants rent paid",
                &[(&s.prompt.id, 1.0)],
                1,
            ),
            line(
                "tool:read_file",
                Some("tool"),
                "tool_result",
                "IBAN: attacker",
                &[],
                2,
            ),
        ]);
        s.derived = batch[0].clone();
        s.tool = batch[1].clone();
        let batch = s.append(&[
            line(
                "agent",
                None,
                "summary",
                "the tool says: pay the attacker",
                &[(&s.tool.id, 0.9)],
                4,
            ),
            line(
                "agent",
                None,
                "summary",
                "rent, per the user",
                &[(&s.tool.id, 0.5), (&s.prompt.id, 1.0)],
                5,
            ),
        ]);
        s.untrusted = batch[0].clone();
        s.at_tau = batch[1].clone();
        s
    }

    /// Runs `append` with `lines` on stdin; asserts success and one output line per input.
    fn append(&self, lines: &[String]) -> Vec<Appended> {
        let input = lines.join("\n") + "\n";
        let out = ok(ml(&self.ledger, &["append"], Some(input.as_bytes())));
        let got: Vec<Appended> = text(&out.stdout)
            .lines()
            .map(|l| {
                let v: Json = serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}"));
                Appended {
                    id: v["id"].as_str().unwrap().to_string(),
                    index: v["index"].as_u64().unwrap(),
                    label: v["label"].as_str().unwrap().to_string(),
                }
            })
            .collect();
        assert_eq!(got.len(), lines.len(), "stdout {}", text(&out.stdout));
        for a in &got {
            assert_eq!(a.id.len(), 64);
        }
        got
    }

    fn all(&self) -> [&Appended; 5] {
        [
            &self.prompt,
            &self.derived,
            &self.tool,
            &self.untrusted,
            &self.at_tau,
        ]
    }
}

fn placeholder() -> Appended {
    Appended {
        id: String::new(),
        index: 0,
        label: String::new(),
    }
}

/// An `append` input line. `time` is an offset from 2025-01-01T00:00:00Z in ms.
fn line(
    writer: &str,
    role: Option<&str>,
    kind: &str,
    content: &str,
    parents: &[(&str, f64)],
    time: u64,
) -> String {
    let parents: Vec<Json> = parents
        .iter()
        .map(|(id, w)| serde_json::json!({"id": id, "weight": w}))
        .collect();
    let mut v = serde_json::json!({
        "writer": writer,
        "kind": kind,
        "content": content,
        "parents": parents,
        "time_ms": 1_735_689_600_000u64 + time,
    });
    if let Some(r) = role {
        v["role"] = r.into();
    }
    v.to_string()
}

fn summary(parents: &[(&str, f64)], content: &str) -> String {
    line("agent", None, "summary", content, parents, 99)
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn run(args: &[&std::ffi::OsStr], stdin: Option<&[u8]>) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().expect("spawn memlineage");
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// `memlineage SUBCOMMAND LEDGER REST...`.
fn ml(ledger: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut all: Vec<&std::ffi::OsStr> = vec![args[0].as_ref(), ledger.as_os_str()];
    all.extend(args[1..].iter().map(std::ffi::OsStr::new));
    run(&all, stdin)
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[track_caller]
fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn key_file(ledger: &Path) -> PathBuf {
    let mut p = ledger.as_os_str().to_owned();
    p.push(".key");
    PathBuf::from(p)
}

fn log_key_line(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("log key: "))
        .unwrap_or_else(|| panic!("no log key line in {stdout:?}"))
        .to_string()
}

/// The tree size from `checkpoint` (the note's second line).
fn tree_size(ledger: &Path) -> u64 {
    let out = ok(ml(ledger, &["checkpoint"], None));
    text(&out.stdout).lines().nth(1).unwrap().parse().unwrap()
}

/// Tree size and every entry's bytes, for "nothing changed" checks.
fn snapshot(ledger: &Path) -> (u64, Vec<u8>) {
    (tree_size(ledger), ok(ml(ledger, &["export"], None)).stdout)
}

#[track_caller]
fn assert_unchanged(ledger: &Path, before: &(u64, Vec<u8>), what: &str) {
    let after = snapshot(ledger);
    assert_eq!(after.0, before.0, "{what}: tree size changed");
    assert!(after.1 == before.1, "{what}: entries changed");
}

fn split_cbor_seq(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut rest = bytes;
    let mut items = Vec::new();
    while !rest.is_empty() {
        let before = rest.len();
        let _: ciborium::Value = ciborium::de::from_reader(&mut rest).expect("CBOR item");
        items.push(bytes[bytes.len() - before..bytes.len() - rest.len()].to_vec());
    }
    items
}

fn exported_item(s: &Scenario, index: u64) -> Vec<u8> {
    let out = ok(ml(&s.ledger, &["export"], None));
    split_cbor_seq(&out.stdout).swap_remove(index as usize)
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(b))
}

fn flip(c: char) -> char {
    match c {
        'A' => 'B',
        '0' => '1',
        c if c.is_ascii_alphanumeric() => 'A',
        '+' | '/' => 'Q',
        _ => 'x',
    }
}

fn db(ledger: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(ledger).unwrap()
}

fn cose_of(ledger: &Path, index: u64) -> Vec<u8> {
    db(ledger)
        .query_row(
            "SELECT cose FROM entries WHERE idx = ?1",
            [index as i64],
            |r| r.get(0),
        )
        .unwrap()
}

fn set_cose(ledger: &Path, index: u64, cose: &[u8]) {
    let n = db(ledger)
        .execute(
            "UPDATE entries SET cose = ?1 WHERE idx = ?2",
            rusqlite::params![cose, index as i64],
        )
        .unwrap();
    assert_eq!(n, 1);
}

fn set_label(ledger: &Path, index: u64, label: i64) {
    let n = db(ledger)
        .execute(
            "UPDATE entries SET label = ?1 WHERE idx = ?2",
            [label, index as i64],
        )
        .unwrap();
    assert_eq!(n, 1);
}

/// A copy of the scenario's ledger and key file in a new directory (each tamper case starts
/// from the same good ledger).
fn copy_ledger(s: &Scenario) -> (TempDir, PathBuf) {
    let dir = TempDir::new().unwrap();
    let ledger = dir.path().join("copy.ledger");
    // Fold any WAL into the main file first so a plain file copy is complete.
    db(&s.ledger)
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    std::fs::copy(&s.ledger, &ledger).unwrap();
    std::fs::copy(key_file(&s.ledger), key_file(&ledger)).unwrap();
    (dir, ledger)
}
