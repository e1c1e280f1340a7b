//! Attack review 52: the store-only attacker, who writes every byte of the store and of the
//! files beside it but holds no key (`spec/gate.md` §7).
//!
//! - The `context` column of an entry's row is a copy of its signed context hash, kept for the
//!   context index (`spec/storage.md` §4.5): rewriting it hides the row from the lookup of its
//!   session, which is the open gap of `gate.md` §7 (with the session's record deleted, and no
//!   state directory). The spec says `memlineage verify`, which reads every row, is where such
//!   an edit shows; it read neither the column nor anything but the label, kind and id, and
//!   said OK.

use std::path::Path;

#[path = "common/cli_support.rs"]
mod cli_support;
use cli_support::{fails, ok, run};

fn ledger_with_one_prompt(d: &Path) -> rusqlite::Connection {
    ok(&run(&["init", "l.db"], d, None));
    let line = br#"{"writer":"alice","role":"user","kind":"prompt","content":"pay bob 10"}"#;
    ok(&run(&["append", "l.db"], d, Some(line)));
    ok(&run(&["verify", "l.db"], d, None));
    rusqlite::Connection::open(d.join("l.db")).unwrap()
}

/// A row's `context` column rewritten to another hash (the signed bytes untouched) is named by
/// `memlineage verify`; one set to NULL (a row stored before the column existed: a candidate
/// of every lookup, so it hides nothing) is not.
#[test]
fn verify_names_a_row_whose_context_column_was_rewritten() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let c = ledger_with_one_prompt(d);
    c.execute(
        "UPDATE entries SET context = zeroblob(32) WHERE idx = 1",
        [],
    )
    .unwrap();
    let out = run(&["verify", "l.db"], d, None);
    fails(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "stored context {} differs from the signed context",
            "00".repeat(32)
        )),
        "{stderr}"
    );
    c.execute("UPDATE entries SET context = NULL WHERE idx = 1", [])
        .unwrap();
    drop(c);
    ok(&run(&["verify", "l.db"], d, None));
}
