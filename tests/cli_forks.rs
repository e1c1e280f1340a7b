//! `memlineage verify --state/--witness`: a verifier that remembers checkpoints detects a log
//! that rolls back or shows two different trees of the same size; witnesses' cosignatures are
//! required when asked for.

use memlineage::log::{LogVerifier, WitnessSigner};
use memlineage::record::WriterKey;
use std::path::Path;

#[path = "common/cli_support.rs"]
mod cli_support;
use cli_support::{fails, ok, run};

fn add(dir: &Path, ledger: &str, content: &str) {
    let line = format!(r#"{{"writer":"u","role":"user","kind":"prompt","content":"{content}"}}"#);
    ok(&run(&["append", ledger], dir, Some(line.as_bytes())));
}

#[test]
fn remembered_checkpoints_catch_rollback_and_split_view() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ok(&run(&["init", "a.db"], d, None));
    add(d, "a.db", "one");
    let old_note = ok(&run(&["checkpoint", "a.db"], d, None));
    std::fs::write(d.join("old.note"), &old_note).unwrap();
    let first = ok(&run(&["verify", "a.db", "--state", "st.json"], d, None));
    assert!(
        first.contains("trusting this checkpoint on first use"),
        "{first}"
    );
    // A fork: the same ledger and key copied, then each copy grows differently.
    for f in ["a.db", "a.db.key"] {
        std::fs::copy(d.join(f), d.join(f.replace("a.db", "b.db"))).unwrap();
    }
    add(d, "a.db", "two on a");
    add(d, "b.db", "two on b");
    let grown = ok(&run(&["verify", "a.db", "--state", "st.json"], d, None));
    assert!(
        grown.contains("consistent with remembered size 2, now 3"),
        "{grown}"
    );
    let again = ok(&run(&["verify", "a.db", "--state", "st.json"], d, None));
    assert!(again.contains("same checkpoint as remembered"), "{again}");
    let err = fails(&run(
        &[
            "verify",
            "a.db",
            "--checkpoint",
            "old.note",
            "--state",
            "st.json",
        ],
        d,
        None,
    ));
    assert!(
        err.contains("rollback: remembered size 3, got size 2"),
        "{err}"
    );
    // b.db has size 3 too, with another root: a split view, kept as evidence.
    let err = fails(&run(&["verify", "b.db", "--state", "st.json"], d, None));
    assert!(err.contains("split view"), "{err}");
    let state = std::fs::read_to_string(d.join("st.json")).unwrap();
    assert!(state.contains("split_view"), "{state}");
    // The state now refuses this log until an operator looks at the evidence.
    let err = fails(&run(&["verify", "a.db", "--state", "st.json"], d, None));
    assert!(err.contains("split view"), "{err}");
}

#[test]
fn a_grown_log_that_rewrote_history_fails_consistency() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ok(&run(&["init", "a.db"], d, None));
    add(d, "a.db", "one");
    for f in ["a.db", "a.db.key"] {
        std::fs::copy(d.join(f), d.join(f.replace("a.db", "b.db"))).unwrap();
    }
    add(d, "a.db", "two on a");
    ok(&run(&["verify", "a.db", "--state", "st.json"], d, None));
    add(d, "b.db", "two on b");
    add(d, "b.db", "three on b");
    let err = fails(&run(&["verify", "b.db", "--state", "st.json"], d, None));
    assert!(err.contains("consistency"), "{err}");
}

#[test]
fn witness_quorum_is_enforced() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ok(&run(&["init", "a.db"], d, None));
    add(d, "a.db", "one");
    let note = ok(&run(&["checkpoint", "a.db"], d, None));
    let vkey = ok(&run(&["checkpoint", "a.db", "--vkey"], d, None))
        .trim()
        .to_string();
    let cp = LogVerifier::from_vkey(&vkey)
        .unwrap()
        .verify(note.as_bytes())
        .unwrap();
    let w1 = WitnessSigner::new("witness.example/w1", WriterKey::for_label("w1")).unwrap();
    let w2 = WitnessSigner::new("witness.example/w2", WriterKey::for_label("w2")).unwrap();
    let cosigned = w1.cosign(&cp, 1_790_000_000).unwrap();
    std::fs::write(d.join("cosigned.note"), &cosigned).unwrap();
    let (v1, v2) = (w1.vkey(), w2.vkey());
    let args = |q: &'static str| {
        vec![
            "verify".to_string(),
            "a.db".into(),
            "--checkpoint".into(),
            "cosigned.note".into(),
            "--witness".into(),
            v1.clone(),
            "--witness".into(),
            v2.clone(),
            "--quorum".into(),
            q.into(),
        ]
    };
    let one: Vec<String> = args("1");
    let out = ok(&run(
        &one.iter().map(String::as_str).collect::<Vec<_>>(),
        d,
        None,
    ));
    assert!(
        out.contains("witnesses: witness.example/w1 cosigned (quorum 1)"),
        "{out}"
    );
    let two: Vec<String> = args("2");
    let err = fails(&run(
        &two.iter().map(String::as_str).collect::<Vec<_>>(),
        d,
        None,
    ));
    assert!(err.to_lowercase().contains("quorum"), "{err}");
}
