//! Hostile inputs (`spec/hostile-input.md`, found in the review of issue 13): each test is the
//! smallest input that broke the code before its fix. Byte inputs are in `tests/vectors/hostile/`
//! (origin in `tests/vectors/README.md`).

#[path = "common/sqlite_support.rs"]
mod sqlite_support;
use sqlite_support::sqlite_ledger;

use memlineage::log::LogSigner;
use memlineage::log::{
    CheckpointError, LogVerifier, WitnessKeyError, WitnessPolicy, WitnessVerifier,
};
use memlineage::record::{
    decode_payload, EntryId, Kind, ProvEntry, RecordError, Role, SignedEntry, WriterKey,
};
use memlineage::retrieve::Outcome;
use memlineage::store::SqliteStore;
use memlineage::store::Store;
use memlineage::{Ledger, LedgerError};

/// `(kind, vkey)` lines of a case file, comments and blank lines skipped.
fn vkeys(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once(char::is_whitespace))
        .map(|(k, v)| (k, v.trim()))
        .collect()
}

/// ED-04: a verifier key with y >= p is refused as entry keys are; the canonical encoding of
/// the same point is accepted, so a policy can hold the point once only.
#[test]
fn non_canonical_verifier_keys_are_refused() {
    let text = include_str!("vectors/hostile/ED-04-noncanonical-vkeys.txt");
    let keys = vkeys(text);
    assert_eq!(keys.len(), 3, "{keys:?}");
    let (_, log) = keys[0];
    assert_eq!(
        LogVerifier::from_vkey(log),
        Err(CheckpointError::NonCanonicalKey)
    );
    let (_, alias) = keys[1];
    assert_eq!(
        WitnessVerifier::from_vkey(alias),
        Err(WitnessKeyError::NonCanonicalKey)
    );
    let (_, canon) = keys[2];
    let w = WitnessVerifier::from_vkey(canon).expect("canonical encoding of the point");
    // One point, one witness: the only encoding that parses is the canonical one.
    let policy = WitnessPolicy::new(vec![w], 1).unwrap();
    assert_eq!(policy.quorum(), 1);
}

/// CBR-05: tags count toward the scan's depth limit, so nine tags before a payload map (and
/// 60,000 tags before anything) are a typed error on a 64 KiB stack in every profile, not a
/// stack overflow in the decoder.
#[test]
fn tags_count_toward_the_depth_limit_on_a_small_stack() {
    let hex_text = include_str!("vectors/hostile/CBR-05-entry-payload-9-tags.hex");
    let bytes = hex::decode(hex_text.trim()).unwrap();
    let t = std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(move || {
            let many = [vec![0xd1u8; 60_000], vec![0xa0]].concat();
            (
                SignedEntry::decode(&bytes).unwrap_err(),
                decode_payload(&many).unwrap_err(),
            )
        })
        .unwrap();
    let (nine, many) = t.join().expect("no stack overflow");
    assert_eq!(nine, RecordError::TooDeep { max: 8 });
    assert_eq!(many, RecordError::TooDeep { max: 8 });
}

fn log_signer() -> LogSigner {
    LogSigner::new("test.example/hostile", WriterKey::for_label("hostile/log")).unwrap()
}

/// Opens a second handle on the SQLite ledger at `path`.
fn handle(path: &std::path::Path) -> Ledger<SqliteStore> {
    Ledger::open(SqliteStore::open(path).unwrap(), log_signer()).unwrap()
}

fn note(l: &mut Ledger<SqliteStore>, key: &WriterKey, text: &str) -> EntryId {
    let e = ProvEntry::new(key.key_id(), Kind::Prompt, text.as_bytes());
    l.append(e, key, text.as_bytes()).unwrap().id
}

/// Two handles on one file: B appends and signs a checkpoint larger than A's tree; A's proofs
/// and retrievals are served against a checkpoint A verified, never a false `TreeInconsistent`.
#[test]
fn a_stale_handle_serves_proofs_after_another_handle_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let user = WriterKey::for_label("hostile/user");
    let mut b = sqlite_ledger(&path, log_signer());
    b.bind(user.key_id(), Role::User, "user").unwrap();
    let first = note(&mut b, &user, "first");
    let mut a = handle(&path);
    note(&mut b, &user, "second");
    b.checkpoint().unwrap();
    let bundle = a.prove(&first).expect("no false inconsistency");
    assert_eq!(Some(bundle.proof.index), a.index_of(&first));
    let outcomes = a.retrieve(&[first]).unwrap();
    assert!(matches!(outcomes[0], Outcome::Verified(_)), "{outcomes:?}");
    // The head A served is B's, verified: same size, same root.
    assert_eq!(
        a.checkpoint().unwrap().size(),
        b.checkpoint().unwrap().size()
    );
}

/// The same with a writer thread appending and checkpointing while the reader refreshes,
/// proves and retrieves (bounded rounds; before the fix some rounds failed).
#[test]
fn proofs_never_report_a_false_inconsistency_under_a_concurrent_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let user = WriterKey::for_label("hostile/user");
    let mut b = sqlite_ledger(&path, log_signer());
    b.bind(user.key_id(), Role::User, "user").unwrap();
    let first = note(&mut b, &user, "first");
    b.checkpoint().unwrap();
    let mut a = handle(&path);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let done = done.clone();
        std::thread::spawn(move || {
            for i in 0..150 {
                note(&mut b, &user, &format!("w{i}"));
                b.checkpoint().unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    let mut rounds = 0;
    while !done.load(std::sync::atomic::Ordering::SeqCst) || rounds < 20 {
        rounds += 1;
        if rounds % 2 == 0 {
            a.refresh().unwrap();
        }
        a.prove(&first)
            .unwrap_or_else(|e| panic!("round {rounds}: {e}"));
        let out = a.retrieve(&[first]).unwrap();
        assert!(
            matches!(out[0], Outcome::Verified(_)),
            "round {rounds}: {out:?}"
        );
        assert!(
            rounds < 1_000_000,
            "bounded (a warm retrieval takes microseconds)"
        );
    }
    writer.join().unwrap();
}

/// Silent loss after WAL corruption: A, B, C are appended and checkpointed; the process ends
/// without closing SQLite; one byte of B's WAL frame flips. SQLite then drops B's frame and
/// every later one, so the store holds less than the log signed: `Ledger::open` refuses (no
/// second root for a signed size), saying how to recover.
#[test]
fn a_store_behind_its_signed_checkpoint_is_refused_after_wal_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let user = WriterKey::for_label("hostile/user");
    let mut l = sqlite_ledger(&path, log_signer());
    l.bind(user.key_id(), Role::User, "user").unwrap();
    l.checkpoint().unwrap();
    note(&mut l, &user, "A");
    let b = note(&mut l, &user, "B: a note long enough to find in the WAL");
    note(&mut l, &user, "C");
    let signed = l.checkpoint().unwrap().size();
    let b_bytes = l.get(&b).unwrap().cose().to_vec();
    // Copy the files as a crash leaves them (database, WAL, side file; no shared-memory
    // index), while the connection is still open.
    let crashed = tempfile::tempdir().unwrap();
    let copy = crashed.path().join("l.db");
    for suffix in ["", "-wal", ".checkpoint"] {
        let from = dir.path().join(format!("l.db{suffix}"));
        std::fs::copy(&from, crashed.path().join(format!("l.db{suffix}")))
            .unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    }
    std::mem::forget(l);
    let wal_path = crashed.path().join("l.db-wal");
    let mut wal = std::fs::read(&wal_path).unwrap();
    let at = wal
        .windows(b_bytes.len())
        .position(|w| w == b_bytes.as_slice())
        .expect("B's entry is in the WAL");
    wal[at + b_bytes.len() / 2] ^= 0x01;
    std::fs::write(&wal_path, &wal).unwrap();
    let store = SqliteStore::open(&copy).unwrap();
    let stored = store.tree_size().unwrap();
    assert!(stored < signed, "SQLite kept {stored} of {signed}");
    match Ledger::open(store, log_signer()) {
        Err(e @ LedgerError::BehindSignedCheckpoint { .. }) => {
            assert!(e.to_string().contains("restoring the ledger file"), "{e}");
            assert!(
                matches!(e, LedgerError::BehindSignedCheckpoint { signed: s, stored: t } if s == signed && t == stored)
            );
        }
        Err(e) => panic!("other error: {e}"),
        Ok(_) => panic!("opened a store that lost signed entries"),
    }
}

/// Rename without directory fsync: `init` saves the key file by temporary file and rename;
/// the directory is then fsynced (seen with strace, when it is installed and may trace).
#[test]
fn the_key_file_rename_is_followed_by_a_directory_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.db");
    let trace = dir.path().join("trace.txt");
    let run = std::process::Command::new("strace")
        .args([
            "-f",
            "-e",
            "trace=rename,renameat,renameat2,openat,fsync",
            "-o",
        ])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_memlineage"))
        .arg("init")
        .arg(&ledger)
        .output();
    // CI sets MEMLINEAGE_REQUIRE_STRACE (.ci/run installs strace): there this test must run.
    let required = std::env::var_os("MEMLINEAGE_REQUIRE_STRACE").is_some();
    let Ok(out) = run else {
        assert!(
            !required,
            "strace is not installed (MEMLINEAGE_REQUIRE_STRACE is set)"
        );
        eprintln!("SKIPPED: strace is not installed");
        return;
    };
    if !out.status.success() || !trace.exists() {
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(
            !required,
            "strace could not trace (MEMLINEAGE_REQUIRE_STRACE is set): {why}"
        );
        eprintln!("SKIPPED: strace could not trace: {why}");
        return;
    }
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let renamed = lines
        .iter()
        .position(|l| l.contains("rename") && l.contains("l.db.key\""))
        .unwrap_or_else(|| panic!("no rename of the key file:\n{text}"));
    // The very next calls: open the directory, fsync it (not a later sync by SQLite).
    let dir_name = format!("\"{}\"", dir.path().display());
    let next: Vec<&str> = lines[renamed + 1..].iter().take(2).copied().collect();
    assert!(
        next.len() == 2 && next[0].contains("openat(") && next[0].contains(&dir_name),
        "directory not opened right after the rename:\n{text}"
    );
    let fd = next[0].rsplit("= ").next().unwrap_or_default().trim();
    assert!(
        next[1].contains(&format!("fsync({fd})")),
        "directory fd {fd} not fsynced right after the rename:\n{text}"
    );
}

fn cli(args: &[&std::ffi::OsStr], dir: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_memlineage"))
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// Fresh ledgers verify: `init` signs the empty tree's head, so `verify` succeeds at once; a
/// ledger with no checkpoint at all gets an error naming the command to run.
#[test]
fn a_fresh_ledger_verifies_and_one_without_a_checkpoint_says_what_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("l.db");
    let init = cli(&["init".as_ref(), l.as_os_str()], dir.path());
    assert!(init.status.success(), "{init:?}");
    let v = cli(&["verify".as_ref(), l.as_os_str()], dir.path());
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    // A ledger without a checkpoint (the library signs the empty tree's at creation; this
    // one lost it).
    let bare = dir.path().join("bare.db");
    let user = WriterKey::for_label("hostile/user");
    let mut b = sqlite_ledger(&bare, log_signer());
    b.bind(user.key_id(), Role::User, "user").unwrap();
    drop(b);
    rusqlite::Connection::open(&bare)
        .unwrap()
        .execute("DELETE FROM checkpoints", [])
        .unwrap();
    let v = cli(&["verify".as_ref(), bare.as_os_str()], dir.path());
    let err = String::from_utf8_lossy(&v.stderr);
    assert!(!v.status.success());
    assert!(
        err.contains(&format!("run `memlineage checkpoint {}`", bare.display())),
        "{err}"
    );
}

/// Only `init` creates a ledger: an empty file given as the ledger to a read command is a
/// clear error, a non-zero exit, and stays empty. Bad policy TOML is reported in bounded
/// size; `append --input MISSING` names the file.
#[test]
fn read_commands_never_turn_an_empty_file_into_a_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let e = empty.as_os_str();
    let id = "00".repeat(32);
    let cases: Vec<Vec<&std::ffi::OsStr>> = vec![
        vec!["export".as_ref(), e, "-o".as_ref(), "x".as_ref()],
        vec!["verify".as_ref(), e],
        vec!["explain".as_ref(), e, id.as_ref()],
        vec!["checkpoint".as_ref(), e],
        vec!["checkpoint".as_ref(), e, "--vkey".as_ref()],
        vec!["prove".as_ref(), e, id.as_ref()],
        vec!["append".as_ref(), e],
        vec!["export-tiles".as_ref(), e, "tiles".as_ref()],
    ];
    for args in cases {
        let out = cli(&args, dir.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains("is empty, not a ledger"), "{args:?}: {err}");
        assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0, "{args:?}");
        assert!(!dir.path().join("x").exists(), "{args:?}");
    }
    // A 200 KB TOML line is not repeated whole.
    let policy = dir.path().join("p.toml");
    std::fs::write(&policy, format!("x = \"{}\n", "a".repeat(200_000))).unwrap();
    let trace = dir.path().join("t.jsonl");
    std::fs::write(&trace, b"").unwrap();
    let out = cli(
        &[
            "replay".as_ref(),
            trace.as_os_str(),
            "--policy".as_ref(),
            policy.as_os_str(),
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(out.stderr.len() < 4096, "{} bytes", out.stderr.len());
    assert!(String::from_utf8_lossy(&out.stderr).contains("p.toml"));
    // `append --input MISSING` names the file.
    let l = dir.path().join("l.db");
    assert!(cli(&["init".as_ref(), l.as_os_str()], dir.path())
        .status
        .success());
    let out = cli(
        &[
            "append".as_ref(),
            l.as_os_str(),
            "--input".as_ref(),
            "missing.jsonl".as_ref(),
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("missing.jsonl"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `replay` of a trace file with no run in it (empty, or only blank lines) is an error naming
/// the file, not an empty table and exit 0 (issue 13); nothing is written to `--ledger`.
#[test]
fn replay_of_a_trace_file_without_runs_fails() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [("empty.jsonl", &b""[..]), ("blank.jsonl", &b"\n\n  \n"[..])] {
        let trace = dir.path().join(name);
        std::fs::write(&trace, body).unwrap();
        let out = cli(&["replay".as_ref(), trace.as_os_str()], dir.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{name}: exit 0, stdout {:?}",
            out.stdout
        );
        assert!(
            err.contains(name) && err.contains("no trace run"),
            "{name}: {err}"
        );
    }
}
