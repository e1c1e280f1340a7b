//! Attack review 52: the store-only attacker, who writes every byte of the store and of the
//! files beside it but holds no key (`spec/gate.md` §7).
//!
//! - The `context` column of an entry's row is a copy of its signed context hash, kept for the
//!   context index (`spec/storage.md` §4.5): rewriting it hides the row from the lookup of its
//!   session, which is the open gap of `gate.md` §7 (with the session's record deleted, and no
//!   state directory). The spec says `memlineage verify`, which reads every row, is where such
//!   an edit shows; it compared the row's label, kind and id columns with the signed bytes,
//!   not this one, and said OK.
//! - A session whose record is gone (deleted beside the ledger, without the hooks' state
//!   directory) takes its reads from the context index, which lists the rows the store holds:
//!   a row deleted from the middle of the log (no effects, so the seal does not see it) was
//!   simply not a candidate, and the injected bill disappeared from the session. Catch-up of a
//!   session with a record reads every index and counts a missing one as a read that holds
//!   every value; the lookup of a session without one did not. Both payments were allowed,
//!   exit 0, in process and through a resident server that had counted the rows before.

use std::path::Path;

#[path = "common/cli_support.rs"]
mod cli_support;
#[path = "common/recorded.rs"]
mod recorded;
use cli_support::{fails, ok, run};
use recorded::Recorded;

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

/// The injected session's record deleted and the bill's row deleted from the middle of the
/// log (an entry appended after it, so the tree keeps its size and the seal its chain): the
/// in-process hook (what runs when the resident server is not up: the attacker removes its
/// socket and it exits) rebuilt the session from the context index, found no bill, and both
/// payments were allowed, exit 0.
#[test]
fn a_row_deleted_under_a_deleted_session_record_still_taints_the_session() {
    let r = Recorded::new();
    let line = br#"{"writer":"alice","role":"user","kind":"prompt","content":"later"}"#;
    ok(&run(&["append", "l.db"], r.dir.path(), Some(line)));
    r.assert_payments_refused_in_process("the bill recorded");
    r.assert_payments_refused("the bill recorded, served");
    let session = hex::encode(memlineage::record::Hash32::digest(b"9a7e33f2-claude-injected").0);
    let record = r.path(&format!("l.db.sessions/{session}.json"));
    std::fs::remove_file(&record).unwrap();
    r.assert_payments_refused_in_process("the record deleted");
    // That load saved the record it rebuilt (with the bill): deleted again below.
    let c = rusqlite::Connection::open(r.path("l.db")).unwrap();
    let (bill, size): (i64, i64) = c
        .query_row(
            "SELECT (SELECT idx FROM entries WHERE kind = 1), (SELECT max(idx) + 1 FROM entries)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert!(bill + 1 < size, "the bill is not the last entry");
    c.execute("DELETE FROM entries WHERE idx = ?1", [bill])
        .unwrap();
    drop(c);
    std::fs::remove_file(&record).unwrap();
    r.assert_payments_refused_in_process("the record and the bill's row deleted");
    // Through a resident server that counted the rows before they were deleted too.
    let _ = std::fs::remove_file(&record);
    r.assert_payments_refused("the record and the bill's row deleted, served");
    // Every row of the session deleted: the lookup finds nothing and the session looks new,
    // but it holds no start marker either, so its sensitive calls stay refused (`spec/hooks.md`
    // §3.1).
    let c = rusqlite::Connection::open(r.path("l.db")).unwrap();
    let context: Vec<u8> = c
        .query_row(
            "SELECT context FROM entries WHERE kind = 0 AND idx < ?1",
            [bill],
            |row| row.get(0),
        )
        .unwrap();
    c.execute("DELETE FROM entries WHERE context = ?1", [context])
        .unwrap();
    drop(c);
    let _ = std::fs::remove_file(&record);
    r.assert_payments_refused_in_process("every row of the session deleted");
}
