//! The store-only attacker against the caches and shortcuts added for speed (issue 32; attack
//! review 47): each test edits the ledger's files without a key, through a real SQLite file
//! and the real binary, and requires the edit to give a refusal, a worse label or an error,
//! never an allow.

#[path = "common/cli_support.rs"]
mod cli_support;
#[path = "common/recorded.rs"]
mod recorded;

use memlineage::record::Hash32;
use recorded::Recorded;

/// The session record of the fixture's session, beside the ledger.
fn record_of(r: &Recorded) -> std::path::PathBuf {
    let session = hex::encode(Hash32::digest(b"9a7e33f2-claude-injected").0);
    r.path(&format!("l.db.sessions/{session}.json"))
}

/// Catching a session up from its record's `seen` (`spec/hooks.md` §6) reads the entries by
/// leaf index. The attacker rolls the record back to before the injected bill (an older
/// sealed copy, which catch-up must make good) and stores, at the bill's index, the signed
/// bytes of another entry of the log (a keyring binding, whose context is not the session's):
/// every byte verifies, but they are not the entry the log holds at that index. Catch-up took
/// them as that index's entry, skipped it as another context's, and the bill's IBAN was
/// unsourced: both payments were allowed, in process and through the resident server.
#[test]
fn catch_up_never_takes_another_entrys_bytes_for_the_entry_at_an_index() {
    let r = Recorded::new_with(1);
    let record = record_of(&r);
    let before_bill = std::fs::read(&record).unwrap();
    assert_eq!(
        r.hook_in_process(&r.events[1]).status.code(),
        Some(0),
        "the bill"
    );
    r.assert_payments_refused_in_process("the bill recorded");
    std::fs::write(&record, &before_bill).unwrap();
    let moved = r.sql(
        "UPDATE entries SET cose = (SELECT cose FROM entries WHERE idx = 0) \
         WHERE kind = 1",
    );
    assert_eq!(moved, 1, "the bill's row");
    r.assert_payments_refused_in_process("the bill's bytes replaced");
    r.assert_payments_refused("served, the bill's bytes replaced");
}
