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
    let after_bill = std::fs::read(&record).unwrap();
    std::fs::write(&record, &before_bill).unwrap();
    let moved = r.sql(
        "UPDATE entries SET cose = (SELECT cose FROM entries WHERE idx = 0) \
         WHERE kind = 1",
    );
    assert_eq!(moved, 1, "the bill's row");
    r.assert_payments_refused_in_process("the bill's bytes replaced");
    r.assert_payments_refused("served, the bill's bytes replaced");
    // The record that names the bill: its bytes are read by id, and are not the bill's.
    std::fs::write(&record, &after_bill).unwrap();
    r.assert_payments_refused_in_process("the bill named, its bytes replaced");
    r.assert_payments_refused("served, the bill named, its bytes replaced");
}

/// `event` with its session id replaced by `id`.
fn in_session(event: &recorded::Event, id: &str) -> recorded::Event {
    let mut v: serde_json::Value = serde_json::from_slice(&event.input).unwrap();
    v["session_id"] = id.into();
    recorded::Event {
        hook: event.hook.clone(),
        input: serde_json::to_vec(&v).unwrap(),
    }
}

/// `journal` with the value of `"field":` in its last line replaced by `value`.
fn with_last(journal: &str, field: &str, value: &str) -> String {
    let body = journal.trim_end_matches('\n');
    let (head, last) = body.rsplit_once('\n').unwrap_or(("", body));
    let key = format!("\"{field}\":");
    let at = last.find(&key).unwrap() + key.len();
    let end = at + last[at..].find([',', '}']).unwrap();
    let last = format!("{}{value}{}", &last[..at], &last[end..]);
    match head {
        "" => format!("{last}\n"),
        _ => format!("{head}\n{last}\n"),
    }
}

/// The session record's journal (`spec/hooks.md` §6.3) and catch-up from its `seen` (§6),
/// each edited without the key so that catch-up would skip the injected bill: the record from
/// before the bill with `seen` moved past it; another session's record (which never read the
/// bill) in its place; the record from before the bill followed by another session's delta
/// (its `at` made to fit). Each is refused as altered (the seal covers `seen` and the
/// session's id; a record of another session is an error), in process and through the
/// resident server that kept the record; the intact record put back is caught up.
#[test]
fn a_journal_moved_forward_or_taken_from_another_session_never_skips_a_read() {
    let r = Recorded::new_with(1);
    let record = record_of(&r);
    let before_bill = std::fs::read_to_string(&record).unwrap();
    assert_eq!(r.hook(&r.events[1]).status.code(), Some(0), "the bill");
    r.assert_payments_refused("the bill recorded");
    let size = r.sql("UPDATE entries SET kind = kind") as u64;
    let forward = with_last(&before_bill, "seen", &size.to_string());
    assert_ne!(forward, before_bill);
    // Another session, which read the prompt only: its record and its journal's lines.
    let other = "a47-other-session";
    for e in [&recorded::start(), &r.events[0]] {
        assert_eq!(r.hook(&in_session(e, other)).status.code(), Some(0));
    }
    let other_record = r.path(&format!(
        "l.db.sessions/{}.json",
        hex::encode(Hash32::digest(other.as_bytes()).0)
    ));
    let theirs = std::fs::read_to_string(&other_record).unwrap();
    let mut spliced = before_bill.clone();
    let count = serde_json::from_str::<serde_json::Value>(before_bill.lines().next().unwrap())
        .unwrap()["reads"]
        .as_array()
        .unwrap()
        .len()
        + before_bill
            .lines()
            .skip(1)
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["reads"]
                    .as_array()
                    .unwrap()
                    .len()
            })
            .sum::<usize>();
    for line in theirs.lines().skip(1) {
        spliced.push_str(&with_last(line, "at", &count.to_string()));
    }
    if theirs.lines().count() == 1 {
        // A whole record only: its values as one delta that adds no read.
        let v: serde_json::Value = serde_json::from_str(theirs.trim_end()).unwrap();
        let delta = serde_json::json!({
            "delta": 1, "at": count, "reads": [], "unrecorded": v["unrecorded"],
            "context": v.get("context"), "covered": v.get("covered").cloned().unwrap_or(0.into()),
            "seen": v["seen"], "started": v.get("started").cloned().unwrap_or(false.into()),
            "unseen": v.get("unseen"), "seal": v["seal"],
        });
        spliced.push_str(&format!("{delta}\n"));
    }
    for (what, bytes) in [
        ("seen moved past the bill", forward.as_str()),
        ("another session's record", theirs.as_str()),
        ("another session's delta spliced in", spliced.as_str()),
    ] {
        std::fs::write(&record, bytes).unwrap();
        r.assert_payments_refused_in_process(what);
        r.assert_payments_refused(what);
    }
    std::fs::write(&record, &before_bill).unwrap();
    r.assert_payments_refused_in_process("the record from before the bill");
    r.assert_payments_refused("the record from before the bill");
}

/// `memlineage hook HOOK l.db` through the resident server only (never in process).
fn served(r: &Recorded, e: &recorded::Event) -> std::process::Output {
    cli_support::run_command(
        std::process::Command::new(cli_support::BIN)
            .args(["hook", &e.hook, "l.db"])
            .current_dir(r.dir.path())
            .env("XDG_STATE_HOME", r.path(".state"))
            .env("MEMLINEAGE_HOOK_SERVER", "only"),
        Some(&e.input),
    )
}

/// The resident server answers a session from the record it kept while the file's identity
/// (device, inode, length, modification and status-change times) is the one it left
/// (`spec/hooks.md` §6.3 item 7). The attacker edits the record in place — same inode, same
/// length, one digit of a read changed — and sets its modification time back: only the
/// status-change time, which no one without root sets, tells; or renames a file of the same
/// length and time over it (another inode). The server reads the file again and refuses the
/// altered record; the intact bytes put back the same way are answered.
#[test]
fn a_record_edited_in_place_with_its_time_set_back_is_read_again_by_the_server() {
    use std::io::{Seek, Write};
    let r = Recorded::new_with(2);
    let record = record_of(&r);
    let bash = &r.events[4];
    let start = std::time::Instant::now();
    while served(&r, bash).status.code() != Some(0) {
        assert!(
            start.elapsed().as_secs() < 30,
            "the hook server did not come up"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let good = std::fs::read(&record).unwrap();
    let at = good
        .windows(10)
        .position(|w| w == br#""reads":[""#)
        .unwrap()
        + 10;
    let mut bad = good.clone();
    bad[at] = if bad[at] == b'0' { b'1' } else { b'0' };
    let in_place = |bytes: &[u8]| {
        let mtime = std::fs::metadata(&record).unwrap().modified().unwrap();
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&record)
            .unwrap();
        f.rewind().unwrap();
        f.write_all(bytes).unwrap();
        f.set_modified(mtime).unwrap();
    };
    // Renamed over the record: another inode, same length, the time set back.
    let renamed = |bytes: &[u8]| {
        let mtime = std::fs::metadata(&record).unwrap().modified().unwrap();
        let tmp = r.path("replacement");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&tmp)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        std::fs::rename(&tmp, &record).unwrap();
    };
    for (what, put) in [
        ("in place", &in_place as &dyn Fn(&[u8])),
        ("renamed", &renamed),
    ] {
        put(&bad);
        let out = served(&r, bash);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{what}: the edit was not seen: {out:?}"
        );
        put(&good);
        let out = served(&r, bash);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what}: the intact record: {out:?}"
        );
    }
    r.assert_payments_refused("after the record was put back");
}

/// The same catch-up with the injected bill's row deleted instead (its entry has no effects,
/// so opening a ledger reads nothing of it, and the resident server answers a PreToolUse while
/// its count of the rows runs, `spec/hooks.md` §11.3): the index that cannot be read counts
/// as a read that holds every value, or the store is refused; the payments stay refused, in
/// process and served.
#[test]
fn a_read_deleted_from_the_store_under_an_older_record_is_still_a_read() {
    let r = Recorded::new_with(1);
    let record = record_of(&r);
    let before_bill = std::fs::read(&record).unwrap();
    assert_eq!(r.hook(&r.events[1]).status.code(), Some(0), "the bill");
    r.assert_payments_refused("the bill recorded");
    // Another session writes after the bill, so that its row is not the last one.
    for e in [&recorded::start(), &r.events[0]] {
        assert_eq!(r.hook(&in_session(e, "a47-later")).status.code(), Some(0));
    }
    std::fs::write(&record, &before_bill).unwrap();
    let c = rusqlite::Connection::open(r.path("l.db")).unwrap();
    let (bill, last): (i64, i64) = c
        .query_row(
            "SELECT (SELECT idx FROM entries WHERE kind = 1), max(idx) FROM entries",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert!(
        bill < last,
        "the bill's row is not the last: {bill} of {last}"
    );
    assert_eq!(
        r.sql("DELETE FROM entries WHERE kind = 1"),
        1,
        "the bill's row"
    );
    r.assert_payments_refused_in_process("the bill's row deleted");
    r.assert_payments_refused("served, the bill's row deleted");
}
