//! Fail closed (`spec/gate.md` §7, issue 19): no allow may rest on anything the deciding
//! process has not verified. Each test records the injected Claude Code session of
//! `tests/hooks/claude-injected.jsonl` through the real `memlineage hook` binary into a real
//! SQLite ledger file, then applies a documented remedy, or an edit a store-only attacker
//! (who can write every byte of the file but holds no key) can make, and requires that the
//! payment to the attacker's IBAN is still refused (exit 2).

#[path = "common/sqlite_support.rs"]
mod sqlite_support;
use sqlite_support::sqlite_ledger;

use memlineage::front::keystore::KeyStore;
use memlineage::record::Kind;
use memlineage::store::SqliteStore;
use memlineage::Ledger;
use rusqlite::Connection;
use serde_json::Value;
use std::path::Path;

#[path = "common/cli_support.rs"]
mod cli_support;
#[path = "common/landlord.rs"]
mod landlord;
#[path = "common/recorded.rs"]
mod recorded;
use cli_support::{ok, run};
use landlord::{landlord, pay, Landlord, Principals};
use recorded::{events, Event, Recorded};

#[test]
fn payments_are_refused_before_any_remedy() {
    let r = Recorded::new();
    r.assert_payments_refused("no remedy");
}

#[test]
fn flagging_the_injected_output_keeps_it_tainting() {
    for reach in ["all", "strong"] {
        let r = Recorded::new();
        let bill = r.first(Kind::ToolResult);
        r.cli(&[
            "flag", "l.db", &bill, "--reason", "advisory", "--reach", reach,
        ]);
        r.assert_payments_refused(&format!("flag --reach {reach}"));
        assert!(r.cli(&["verify", "l.db"]).contains("OK"));
    }
}

#[test]
fn releasing_then_reflagging_keeps_it_tainting() {
    let r = Recorded::new();
    let bill = r.first(Kind::ToolResult);
    r.cli(&["flag", "l.db", &bill, "--reason", "advisory"]);
    let flag = r.first(Kind::Quarantine);
    r.cli(&["release", "l.db", &flag, "--reason", "false alarm"]);
    r.assert_payments_refused("released");
    r.cli(&["flag", "l.db", &bill, "--reason", "advisory again"]);
    r.assert_payments_refused("flagged again");
}

#[test]
fn a_users_tombstone_of_the_injected_output_keeps_it_tainting() {
    let r = Recorded::new();
    let bill = memlineage::record::EntryId::from_hex(&r.first(Kind::ToolResult)).unwrap();
    {
        let mut keys = KeyStore::load(&r.path("l.db.key")).unwrap();
        let mut ledger = Ledger::open(
            SqliteStore::open(&r.path("l.db")).unwrap(),
            keys.log_signer().unwrap(),
        )
        .unwrap();
        let (user, _, _) = keys
            .principal("user", Some(memlineage::record::Role::User))
            .unwrap();
        ledger.tombstone(bill, &user, "forget that bill").unwrap();
        assert!(ledger.is_tombstoned(&bill));
    }
    r.assert_payments_refused("tombstoned");
}

#[test]
fn an_edited_content_row_makes_the_source_unverifiable_not_absent() {
    let r = Recorded::new();
    // The store-only attacker rewrites the stored text of the injected bill (no key needed).
    let n = r.sql(
        "UPDATE content SET bytes = CAST('Bill for December: 98.70' AS BLOB) \
         WHERE CAST(bytes AS TEXT) LIKE '%US1330000%'",
    );
    assert_eq!(n, 1);
    r.assert_payments_refused("edited content row");
}

#[test]
fn a_deleted_content_row_makes_the_source_unverifiable_not_absent() {
    let r = Recorded::new();
    let n = r.sql("DELETE FROM content WHERE CAST(bytes AS TEXT) LIKE '%US1330000%'");
    assert_eq!(n, 1);
    r.assert_payments_refused("deleted content row");
}

#[test]
fn a_ledger_rolled_back_under_a_live_session_refuses() {
    let dir = tempfile::tempdir().unwrap();
    ok(&run(&["init", "l.db"], dir.path(), None));
    let evs = events();
    let hook = |e: &Event| run(&["hook", &e.hook, "l.db"], dir.path(), Some(&e.input));
    assert_eq!(hook(&recorded::start()).status.code(), Some(0));
    assert_eq!(hook(&evs[0]).status.code(), Some(0));
    // A copy of the ledger taken before the injected tool output was recorded.
    let copy = snapshot(dir.path());
    assert_eq!(hook(&evs[1]).status.code(), Some(0));
    restore(dir.path(), &copy);
    for e in &evs[2..4] {
        let out = hook(e);
        assert_eq!(
            out.status.code(),
            Some(2),
            "rolled back: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The ledger file and its WAL side files, as bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    ["l.db", "l.db-wal", "l.db-shm"]
        .iter()
        .filter_map(|f| std::fs::read(dir.join(f)).ok().map(|b| (f.to_string(), b)))
        .collect()
}

fn restore(dir: &Path, files: &[(String, Vec<u8>)]) {
    for f in ["l.db", "l.db-wal", "l.db-shm"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

#[test]
fn a_flipped_label_is_refused_not_believed() {
    let r = Recorded::new();
    // The store-only attacker marks the injected bill Trusted (label code 0).
    assert_eq!(r.sql("UPDATE entries SET label = 0 WHERE kind = 1"), 1);
    r.assert_payments_refused("flipped label");
    let out = run(
        &["explain", "l.db", &r.first(Kind::ToolResult)],
        r.dir.path(),
        None,
    );
    let err = cli_support::fails(&out);
    assert!(err.contains("sealed"), "{err}");
}

#[test]
fn swapped_entry_rows_are_refused() {
    let r = Recorded::new();
    // Swap the prompt's row (Trusted, index 1 after the user's key binding) with the bill's.
    let c = Connection::open(r.path("l.db")).unwrap();
    let rows: Vec<(i64, i64)> = c
        .prepare("SELECT idx, kind FROM entries ORDER BY idx")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let prompt = rows.iter().find(|(_, k)| *k == 0).unwrap().0;
    let bill = rows.iter().find(|(_, k)| *k == 1).unwrap().0;
    c.execute_batch(&format!(
        "UPDATE entries SET idx = -1 WHERE idx = {prompt};
         UPDATE entries SET idx = {prompt} WHERE idx = {bill};
         UPDATE entries SET idx = {bill} WHERE idx = -1;"
    ))
    .unwrap_or_else(|_| {
        // The idx CHECK refuses -1 in some schemas: swap through a large free index.
        c.execute_batch(&format!(
            "UPDATE entries SET idx = 1000000 WHERE idx = {prompt};
             UPDATE entries SET idx = {prompt} WHERE idx = {bill};
             UPDATE entries SET idx = {bill} WHERE idx = 1000000;"
        ))
        .unwrap()
    });
    drop(c);
    r.assert_payments_refused("swapped rows");
}

/// A memory derived from a forum post over a weak edge is Derived-Trusted; after the post is
/// flagged (reach all) the memory is quarantined and cannot justify a payment. A store-only
/// attacker then hides the flag: by rewriting its kind, deleting its row, or removing or
/// replacing its row tag. Every way the ledger refuses to open (opening reads the rows with
/// effects and checks them against the seal, `spec/lineage.md` §5.1), so nothing is allowed on
/// that store.
#[test]
fn hidden_quarantine_state_is_refused() {
    use memlineage::gate::{LineageDecision, Policy};
    use memlineage::lineage::quarantine::Reach;

    use memlineage::log::LogSigner;
    use memlineage::record::WriterKey;
    for attack in [
        "UPDATE entries SET kind = 3 WHERE kind = 7",
        "DELETE FROM entries WHERE kind = 7",
        // Into another kind with effects (a tombstone): its row tag no longer verifies.
        "UPDATE entries SET kind = 5 WHERE kind = 7",
        // The flag's row tag removed, or copied from another row.
        "UPDATE entries SET tag = NULL WHERE kind = 7",
        "UPDATE entries SET tag = (SELECT tag FROM entries WHERE kind = 0) WHERE kind = 7",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.db");
        let log =
            || LogSigner::new("test.example/fail-closed", WriterKey::for_label("fc/log")).unwrap();
        let (memo, call) = {
            let mut l = sqlite_ledger(&path, log());
            let p = Principals::new("fc");
            let Landlord { post, memo, .. } = landlord(&mut l, &p);
            let call = pay(memo);
            assert_eq!(
                l.gate(&Policy::default(), &call),
                LineageDecision::Allow,
                "Derived-Trusted"
            );
            l.flag(post, Reach::All, &p.user, "advisory").unwrap();
            assert!(!l.gate(&Policy::default(), &call).is_allow(), "quarantined");
            (memo, call)
        };
        Connection::open(&path)
            .unwrap()
            .execute(attack, [])
            .unwrap();
        let Ok(store) = SqliteStore::open(&path) else {
            continue; // the store itself refuses to open: nothing can be allowed on it
        };
        match Ledger::open(store, log()) {
            Err(memlineage::LedgerError::Seal(_)) => {}
            Err(e) => panic!("{attack}: refused, but not by the seal: {e}"),
            Ok(l) => panic!(
                "{attack}: opened; memo quarantined: {}, gate: {:?}",
                l.is_quarantined(&memo),
                l.gate(&Policy::default(), &call)
            ),
        }
    }
}

/// The session file beside the ledger lists the session's reads, sealed under the log key
/// (`spec/hooks.md` §3). Removing the injected read from it (with or without the seal) must not
/// turn the refusal into an allow.
#[test]
fn a_read_removed_from_the_session_record_refuses() {
    for keep_seal in [true, false] {
        let r = Recorded::new();
        let bill = r.first(Kind::ToolResult);
        let dir = r.path("l.db.sessions");
        // The session's own file (the directory also holds the pruning stamp).
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| std::fs::read(p).is_ok_and(|b| b.starts_with(b"{")))
            .unwrap();
        // The record is a journal (spec/hooks.md §6.3): a whole record, then deltas. The bill
        // is removed from whichever line lists it, and the later deltas' `at` renumbered so
        // that the journal still parses: only the seal can tell.
        let text = std::fs::read_to_string(&file).unwrap();
        let mut lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let (mut removed, mut count) = (0, 0);
        for (i, line) in lines.iter_mut().enumerate() {
            if i > 0 {
                line["at"] = Value::from(count);
            }
            let reads = line["reads"].as_array_mut().unwrap();
            let before = reads.len();
            reads.retain(|id| id.as_str() != Some(bill.as_str()));
            removed += before - reads.len();
            count += reads.len();
            if !keep_seal {
                match i {
                    0 => drop(line.as_object_mut().unwrap().remove("seal")),
                    _ => line["seal"] = Value::Null,
                }
            }
        }
        assert_eq!(removed, 1, "the bill was a read");
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&file, text).unwrap();
        r.assert_payments_refused(&format!("read removed, seal kept: {keep_seal}"));
        // A later, benign tool output recorded in the altered session must not re-seal it.
        let mut later: Value = serde_json::from_slice(&r.events[1].input).unwrap();
        later["tool_response"] = Value::from("Weather in Zurich: sunny");
        later["tool_use_id"] = Value::from("toolu_99");
        let later = Event {
            hook: "post-tool-use".into(),
            input: serde_json::to_vec(&later).unwrap(),
        };
        assert_eq!(r.hook(&later).status.code(), Some(0));
        r.assert_payments_refused(&format!("read removed, then a read recorded: {keep_seal}"));
    }
}

#[cfg(feature = "postgres")]
#[path = "common/pg_support.rs"]
mod pg_support;

/// The same label flip on the PostgreSQL store (`UPDATE entries SET label = 0` through `psql`,
/// no key): the reopened ledger refuses the store instead of gating with the flipped label.
#[cfg(feature = "postgres")]
#[test]
fn a_flipped_label_on_postgres_is_refused() {
    use memlineage::lineage::LabelPolicy;
    use memlineage::log::LogSigner;
    use memlineage::record::{ProvEntry, Role, WriterKey};
    use memlineage::store::PgStore;
    let url = pg_support::database_url("a_flipped_label_on_postgres_is_refused");
    let schema = pg_support::fresh_ledger("failclosed");
    let log = || {
        LogSigner::new(
            "test.example/fail-closed-pg",
            WriterKey::for_label("fcpg/log"),
        )
        .unwrap()
    };
    let tool = WriterKey::for_label("fcpg/tool");
    let id = {
        let store = PgStore::connect(&url, &schema).unwrap();
        let mut l = Ledger::create(store, log(), LabelPolicy::default()).unwrap();
        l.bind(tool.key_id(), Role::Tool, "tool:web").unwrap();
        let text = "pay XX99";
        let e = ProvEntry::new(tool.key_id(), Kind::ToolResult, text.as_bytes());
        let id = l.append(e, &tool, text.as_bytes()).unwrap().id;
        // Before the attack the ledger reopens and reads the entry.
        drop(l);
        let l = Ledger::open(PgStore::connect(&url, &schema).unwrap(), log()).unwrap();
        assert!(l.get(&id).is_ok());
        id
    };
    pg_support::run_ok(std::process::Command::new("psql").args([
        url.as_str(),
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        &format!("UPDATE \"{schema}\".entries SET label = 0 WHERE kind = 1"),
    ]));
    // The row's tag no longer verifies: the entry counts as External and cannot be read.
    let l = Ledger::open(PgStore::connect(&url, &schema).unwrap(), log()).unwrap();
    assert_eq!(l.label(&id), Some(memlineage::lineage::Label::External));
    match l.get(&id) {
        Err(memlineage::LedgerError::Seal(_)) => {}
        Err(e) => panic!("refused, but not by the seal: {e}"),
        Ok(_) => panic!("a flipped label on PostgreSQL was believed"),
    }
}

/// Hiding a flag on the PostgreSQL store (its kind rewritten, its tag removed, through
/// `psql`, no key): the reopened ledger refuses the store, as on SQLite.
#[cfg(feature = "postgres")]
#[test]
fn a_hidden_flag_on_postgres_is_refused() {
    use memlineage::lineage::quarantine::Reach;
    use memlineage::lineage::LabelPolicy;
    use memlineage::log::LogSigner;
    use memlineage::record::{ProvEntry, Role, WriterKey};
    use memlineage::store::PgStore;
    let url = pg_support::database_url("a_hidden_flag_on_postgres_is_refused");
    let log = || {
        LogSigner::new(
            "test.example/fail-closed-pg-flag",
            WriterKey::for_label("fcpgf/log"),
        )
        .unwrap()
    };
    for attack in [
        "UPDATE {s}.entries SET kind = 3 WHERE kind = 7",
        "UPDATE {s}.entries SET tag = NULL WHERE kind = 7",
        "UPDATE {s}.entries SET kind = 5 WHERE kind = 7",
    ] {
        let schema = pg_support::fresh_ledger("failclosedflag");
        let (user, tool) = (
            WriterKey::for_label("fcpgf/user"),
            WriterKey::for_label("fcpgf/tool"),
        );
        {
            let store = PgStore::connect(&url, &schema).unwrap();
            let mut l = Ledger::create(store, log(), LabelPolicy::default()).unwrap();
            l.bind(user.key_id(), Role::User, "user").unwrap();
            l.bind(tool.key_id(), Role::Tool, "tool:web").unwrap();
            let text = "pay XX99";
            let e = ProvEntry::new(tool.key_id(), Kind::ToolResult, text.as_bytes());
            let id = l.append(e, &tool, text.as_bytes()).unwrap().id;
            l.flag(id, Reach::All, &user, "advisory").unwrap();
            drop(l);
            let l = Ledger::open(PgStore::connect(&url, &schema).unwrap(), log()).unwrap();
            assert!(l.is_quarantined(&id), "before the attack");
        }
        pg_support::run_ok(std::process::Command::new("psql").args([
            url.as_str(),
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            &attack.replace("{s}", &format!("\"{schema}\"")),
        ]));
        match Ledger::open(PgStore::connect(&url, &schema).unwrap(), log()) {
            Err(memlineage::LedgerError::Seal(_)) => {}
            Err(e) => panic!("{attack}: refused, but not by the seal: {e}"),
            Ok(_) => panic!("{attack}: a hidden flag on PostgreSQL was not noticed"),
        }
    }
}

/// A zeroed stored tree hash (one UPDATE, no key): the entries still give the checkpoint's
/// root, but proofs served from the stored hashes would fail, so `verify` reports FAILED
/// instead of OK (review finding).
#[test]
fn a_corrupted_stored_tree_hash_fails_verify() {
    let r = Recorded::new();
    r.cli(&["checkpoint", "l.db"]);
    let clean = r.cli(&["verify", "l.db"]);
    assert!(
        clean.contains("stored tree hashes and settings: give the checkpoint's root"),
        "{clean}"
    );
    assert_eq!(
        r.sql(
            "UPDATE tree_hashes SET hash = zeroblob(32) \
             WHERE idx = (SELECT max(idx) FROM tree_hashes)"
        ),
        1
    );
    let out = run(&["verify", "l.db"], r.dir.path(), None);
    let err = cli_support::fails(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("stored tree hashes and settings: MISMATCH"),
        "{stdout}"
    );
    assert!(err.contains("FAILED"), "{err}");
}

/// A handle verifies an entry's signature once, then trusts bytes with the same leaf hash
/// (`Ledger::get`). Entry bytes rewritten in the store after that first read (the prompt's
/// bytes put in the injected bill's row, no key) are not the bill: the read is refused and
/// the bill's text becomes unverifiable, which matches every value (fail closed), instead of
/// the prompt's text or nothing.
#[test]
fn entry_bytes_rewritten_after_a_verified_read_are_refused() {
    let r = Recorded::new();
    let bill = memlineage::record::EntryId::from_hex(&r.first(Kind::ToolResult)).unwrap();
    let keys = KeyStore::load(&r.path("l.db.key")).unwrap();
    let ledger = Ledger::open(
        SqliteStore::open(&r.path("l.db")).unwrap(),
        keys.log_signer().unwrap(),
    )
    .unwrap();
    // The first read verifies the signature and remembers the id.
    assert!(ledger.verified_text(&bill).unwrap().is_some());
    let swapped = r.sql(&format!(
        "UPDATE entries SET cose = (SELECT cose FROM entries WHERE kind = 0 LIMIT 1) \
         WHERE id = x'{bill}'"
    ));
    assert_eq!(swapped, 1);
    assert!(
        ledger.verified_text(&bill).is_err(),
        "bytes that are not the bill's must not be read as the bill"
    );
    assert!(
        matches!(
            ledger.get(&bill),
            Err(memlineage::LedgerError::NotTheEntry { id, .. }) if id == bill
        ),
        "another entry's bytes are not the bill, and not missing either"
    );
    // And the hooks, which open their own handle, refuse the payments.
    r.assert_payments_refused("entry bytes rewritten");
}

/// A hook that cannot finish still marks what it could not record (found while measuring long
/// sessions, issue 32): while another process holds the ledger's lock, the injected bill's
/// PostToolUse is answered closed by its watchdog — and its output is marked unrecorded apart
/// from the session's record, so the payment the bill asks for is refused because the
/// session saw an output the ledger does not hold, not waved through as a value the agent
/// composed. Before, the watchdog marked no session.
#[cfg(unix)]
#[test]
fn a_hook_stopped_by_its_watchdog_marks_its_output_unrecorded() {
    let r = recorded::Recorded::new_with(1);
    let (bill, payment) = (&r.events[1], &r.events[2]);
    assert_eq!(bill.hook, "post-tool-use");
    assert_eq!(payment.hook, "pre-tool-use");
    // Another process holds `LEDGER.key.lock` for longer than the watchdog waits.
    let mut holder = std::process::Command::new("flock")
        .args(["--no-fork", "l.db.key.lock", "sleep", "30"])
        .current_dir(r.dir.path())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = cli_support::run_command(
        std::process::Command::new(cli_support::BIN)
            .args(["hook", &bill.hook, "l.db"])
            .current_dir(r.dir.path())
            .env("MEMLINEAGE_HOOK_SERVER", "off")
            .env("MEMLINEAGE_HOOK_WATCHDOG_MS", "1500"),
        Some(&bill.input),
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("marked unrecorded apart"), "{said}");
    for pay in [r.hook_in_process(payment), r.hook(payment)] {
        assert_eq!(pay.status.code(), Some(2), "{pay:?}");
        let said = String::from_utf8_lossy(&pay.stderr);
        assert!(said.contains("could not be recorded"), "{said}");
    }
}
