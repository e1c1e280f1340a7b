//! Opening a ledger reads the label seal and the entries with effects, not every entry
//! (`spec/lineage.md` §5.1, issue 19): counted through a store wrapper, not timed. And a ledger
//! written before row tags (memlineage 0.1: no `tag` column, a `v1` seal) still opens, with
//! every row verified and labelled again from its signed bytes, and is sealed with row tags by
//! its next append.

#[path = "common/sqlite_support.rs"]
mod sqlite_support;
use sqlite_support::sqlite_ledger;

#[path = "common/faulty_store.rs"]
mod faulty_store;
#[path = "common/ledger_support.rs"]
mod ledger_support;

use faulty_store::Faulty as Counting;
use ledger_support::put;
use memlineage::ledger::META_SEAL;
use memlineage::lineage::quarantine::Reach;
use memlineage::lineage::Label;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Role, WriterKey};
use memlineage::store::SqliteStore;
use memlineage::Ledger;

fn log() -> LogSigner {
    LogSigner::new("test.example/flat-open", WriterKey::for_label("fo/log")).unwrap()
}

struct Keys {
    user: WriterKey,
    agent: WriterKey,
    tool: WriterKey,
}

/// A ledger at `path` with three bindings and `n` rounds of prompt, tool result and summary
/// (the summary a strong child of the tool result); returns the last round's ids.
fn build(path: &std::path::Path, n: usize) -> (Keys, [EntryId; 3]) {
    let k = Keys {
        user: WriterKey::for_label("fo/user"),
        agent: WriterKey::for_label("fo/agent"),
        tool: WriterKey::for_label("fo/tool"),
    };
    let mut l = sqlite_ledger(path, log());
    l.bind(k.user.key_id(), Role::User, "user").unwrap();
    l.bind(k.agent.key_id(), Role::Agent, "agent").unwrap();
    l.bind(k.tool.key_id(), Role::Tool, "tool:web").unwrap();
    let mut last = [EntryId([0; 32]); 3];
    for i in 0..n {
        let p = put(&mut l, &k.user, Kind::Prompt, &format!("prompt {i}"), &[]);
        let t = put(&mut l, &k.tool, Kind::ToolResult, &format!("page {i}"), &[]);
        let s = put(
            &mut l,
            &k.agent,
            Kind::Summary,
            &format!("summary {i}"),
            &[(p, 1_000_000), (t, 900_000)],
        );
        last = [p, t, s];
    }
    (k, last)
}

#[test]
fn opening_reads_the_entries_with_effects_not_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    for n in [10, 300] {
        let _ = std::fs::remove_file(&path);
        let (_, [prompt, page, summary]) = build(&path, n);
        let store = Counting::new(SqliteStore::open(&path).unwrap());
        let l = Ledger::open(store, log()).unwrap();
        assert_eq!(l.len(), 3 + 3 * n as u64);
        // The three bindings are read (and verified); nothing else.
        assert_eq!(l.store().reads(), (0, 3, 0), "open of {n} rounds");
        // A label is one lookup, the second time none.
        assert_eq!(l.label(&summary), Some(Label::DerivedUntrusted));
        assert_eq!(l.label(&summary), Some(Label::DerivedUntrusted));
        assert_eq!(l.label(&prompt), Some(Label::Trusted));
        assert_eq!(l.label(&page), Some(Label::External));
        assert_eq!(l.store().reads(), (0, 3, 3));
        assert_eq!(l.label(&EntryId([9; 32])), None);
    }
}

#[test]
fn refresh_reads_only_what_other_handles_appended() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (k, [_, page, _]) = build(&path, 50);
    let mut reader = Ledger::open(Counting::new(SqliteStore::open(&path).unwrap()), log()).unwrap();
    assert_eq!(reader.refresh().unwrap(), 0);
    assert_eq!(reader.store().reads(), (0, 3, 0));
    let mut writer = Ledger::open(SqliteStore::open(&path).unwrap(), log()).unwrap();
    let memo = put(
        &mut writer,
        &k.agent,
        Kind::Summary,
        "memo",
        &[(page, 1_000_000)],
    );
    assert_eq!(reader.refresh().unwrap(), 1);
    assert_eq!(
        reader.store().reads(),
        (0, 3, 0),
        "a sealed entry without effects"
    );
    assert_eq!(reader.label(&memo), Some(Label::DerivedUntrusted));
    // A flag is an entry with effects: read and applied; while it is active, new entries are
    // read for the quarantine's reach.
    writer.flag(page, Reach::All, &k.user, "advisory").unwrap();
    assert_eq!(reader.refresh().unwrap(), 1);
    assert!(reader.is_quarantined(&memo));
    let later = put(
        &mut writer,
        &k.agent,
        Kind::Summary,
        "later",
        &[(memo, 1_000_000)],
    );
    reader.refresh().unwrap();
    assert!(reader.is_quarantined(&later));
}

/// memlineage 0.1 files: no `tag` column, no `entries_effects` index, a `v1` chain seal.
#[test]
fn a_ledger_written_before_row_tags_opens_and_is_sealed_by_its_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (k, [prompt, page, summary]) = build(&path, 20);
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute_batch(
        "DROP INDEX entries_effects; DROP INDEX entries_context; \
         ALTER TABLE entries DROP COLUMN context; ALTER TABLE entries DROP COLUMN tag; \
         UPDATE meta SET value = 'v1 63 0000000000000000000000000000000000000000000000000000000000000000 0000000000000000000000000000000000000000000000000000000000000000' \
         WHERE key = 'label_seal';",
    )
    .unwrap();
    drop(db);
    {
        let store = Counting::new(SqliteStore::open(&path).unwrap());
        let mut l = Ledger::open(store, log()).unwrap();
        // Every row is verified and labelled again (the v1 seal is not believed).
        assert_eq!(l.store().reads().0, 63);
        assert_eq!(l.label(&prompt), Some(Label::Trusted));
        assert_eq!(l.label(&page), Some(Label::External));
        assert_eq!(l.label(&summary), Some(Label::DerivedUntrusted));
        put(&mut l, &k.user, Kind::Prompt, "after the upgrade", &[]);
    }
    let db = rusqlite::Connection::open(&path).unwrap();
    let untagged: i64 = db
        .query_row("SELECT count(*) FROM entries WHERE tag IS NULL", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(untagged, 0);
    let seal: String = db
        .query_row("SELECT value FROM meta WHERE key = ?1", [META_SEAL], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(seal.starts_with("v2 64 "), "{seal}");
    drop(db);
    let store = Counting::new(SqliteStore::open(&path).unwrap());
    let l = Ledger::open(store, log()).unwrap();
    assert_eq!(l.store().reads(), (0, 3, 0), "sealed now: flat again");
    assert_eq!(l.label(&summary), Some(Label::DerivedUntrusted));
}

/// Deletes the row of `id` from the ledger at `path`, as a store-only attacker can.
fn delete_row(path: &std::path::Path, id: &EntryId) {
    let db = rusqlite::Connection::open(path).unwrap();
    let n = db
        .execute("DELETE FROM entries WHERE id = ?1", [&id.0[..]])
        .unwrap();
    assert_eq!(n, 1);
}

/// A store-only attacker who deletes a row without effects (here a prompt) makes that entry
/// absent, never relabelled: it is not in the log for the handle, so it justifies nothing, and
/// its children keep their labels.
#[test]
fn a_deleted_row_is_absent_not_relabelled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (_, [prompt, _, summary]) = build(&path, 3);
    delete_row(&path, &prompt);
    let l = Ledger::open(SqliteStore::open(&path).unwrap(), log()).unwrap();
    assert_eq!(l.label(&prompt), None);
    assert!(l.get(&prompt).is_err());
    assert_eq!(l.label(&summary), Some(Label::DerivedUntrusted));
}

/// A label flipped in the store (the summary, Derived-Untrusted, rewritten to Trusted) is not
/// believed by any allow path: the gate refuses what it justifies, and a child appended from it
/// is labelled as a child of an External entry, never better than the signed log implies.
#[test]
fn a_flipped_label_justifies_nothing_and_labels_no_child_better() {
    use memlineage::gate::{Policy, ToolCall};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (k, [prompt, _, summary]) = build(&path, 2);
    let db = rusqlite::Connection::open(&path).unwrap();
    let n = db
        .execute(
            "UPDATE entries SET label = 0 WHERE id = ?1",
            [&summary.0[..]],
        )
        .unwrap();
    assert_eq!(n, 1);
    drop(db);
    let mut l = Ledger::open(SqliteStore::open(&path).unwrap(), log()).unwrap();
    assert_eq!(l.label(&summary), Some(Label::External));
    assert!(l.get(&summary).is_err());
    let pay = |id| ToolCall {
        tool: "send_money".into(),
        sensitive: true,
        args: vec![("recipient".into(), vec![id])],
    };
    assert!(
        l.gate(&Policy::default(), &pay(prompt)).is_allow(),
        "the prompt is intact"
    );
    assert!(!l.gate(&Policy::default(), &pay(summary)).is_allow());
    let child = put(
        &mut l,
        &k.agent,
        Kind::Summary,
        "child",
        &[(summary, 1_000_000)],
    );
    assert_eq!(l.label(&child), Some(Label::DerivedUntrusted));
    assert!(!l.gate(&Policy::default(), &pay(child)).is_allow());
}

/// Context entries (kind 12, a front's record of what a session read, `spec/lineage.md` §4.2)
/// have no effects: open does not read them, and a file whose `entries_effects` index predates
/// them (predicate `kind >= 5`) gets the index rebuilt without them.
#[test]
fn context_entries_are_not_read_on_open_and_an_older_effects_index_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (k, [prompt, page, _]) = build(&path, 5);
    {
        let mut l = Ledger::open(SqliteStore::open(&path).unwrap(), log()).unwrap();
        for i in 0..50 {
            let w = 1_000_000 - i;
            put(
                &mut l,
                &k.agent,
                Kind::Context,
                "",
                &[(prompt, w), (page, w)],
            );
        }
    }
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute_batch(
        "DROP INDEX entries_effects; \
         CREATE INDEX entries_effects ON entries (idx) WHERE kind >= 5;",
    )
    .unwrap();
    drop(db);
    let store = Counting::new(SqliteStore::open(&path).unwrap());
    let l = Ledger::open(store, log()).unwrap();
    assert_eq!(l.store().reads(), (0, 3, 0), "the three bindings only");
    drop(l);
    let db = rusqlite::Connection::open(&path).unwrap();
    let sql: String = db
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE name = 'entries_effects'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(sql.ends_with("WHERE kind BETWEEN 5 AND 11"), "{sql}");
}

/// A file of the release before the context index (`spec/storage.md` §4.5): no `context`
/// column, no `entries_context` index. It opens, gets both, keeps its rows without a context
/// hash (candidates of every lookup: found, never hidden), and indexes what is appended next.
#[test]
fn a_ledger_written_before_the_context_index_opens_and_its_rows_stay_findable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (k, [prompt, ..]) = build(&path, 4);
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute_batch("DROP INDEX entries_context; ALTER TABLE entries DROP COLUMN context;")
        .unwrap();
    drop(db);
    let mut l = Ledger::open(SqliteStore::open(&path).unwrap(), log()).unwrap();
    let ctx = l.get(&prompt).unwrap().entry().context_hash;
    let found: Vec<EntryId> = l
        .context_entries(&ctx, l.len())
        .unwrap()
        .into_iter()
        .map(|(_, e)| e.unwrap().id())
        .collect();
    assert_eq!(found, vec![prompt], "an old row is still a candidate");
    let after = put(&mut l, &k.user, Kind::Prompt, "after the upgrade", &[]);
    drop(l);
    let db = rusqlite::Connection::open(&path).unwrap();
    let (old, new): (i64, i64) = db
        .query_row(
            "SELECT count(*) FILTER (WHERE context IS NULL), \
                    count(*) FILTER (WHERE context IS NOT NULL) FROM entries",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (old, new),
        (15, 1),
        "old rows unindexed, the new one indexed"
    );
    drop(db);
    // Reopened: the schema check accepts the upgraded file.
    let l = Ledger::open(SqliteStore::open(&path).unwrap(), log()).unwrap();
    let ctx = l.get(&after).unwrap().entry().context_hash;
    assert_eq!(l.context_entries(&ctx, l.len()).unwrap().len(), 1);
}

/// Opening stays flat and the rows-chain check (issue 25 class 9) runs beside it
/// (`spec/storage.md` §6.1 item 2): a handle holding its writes for the count
/// (`Ledger::hold_writes`) writes nothing into a store from which a row was deleted — the
/// append is refused with the counts, the store is unchanged — and it still reads, with the
/// deleted entry absent.
#[test]
fn a_handle_holding_its_writes_for_the_rows_check_writes_nothing_after_a_deleted_row() {
    use memlineage::ledger::{RowsCheck, RowsError};
    use memlineage::record::ProvEntry;
    use memlineage::store::Store;
    use memlineage::LedgerError;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (k, [prompt, _, summary]) = build(&path, 3);
    delete_row(&path, &prompt);
    let mut l = Ledger::open(SqliteStore::open(&path).unwrap(), log()).unwrap();
    let size = l.len();
    let p = path.clone();
    l.hold_writes(RowsCheck::spawn(move || Ok(SqliteStore::open(&p)?)));
    let want = RowsError::Deleted {
        rows: size - 1,
        size,
    };
    assert_eq!(
        l.await_writes(std::time::Duration::from_secs(60)),
        Err(want.clone())
    );
    let text = b"a note";
    let e = ProvEntry::new(k.agent.key_id(), Kind::Summary, text);
    match l.append(e, &k.agent, text) {
        Err(LedgerError::Rows(got)) => assert_eq!(got, want),
        other => panic!("appended into a store with a deleted row: {other:?}"),
    }
    assert!(matches!(l.checkpoint(), Err(LedgerError::Rows(_)) | Ok(_)));
    assert_eq!(SqliteStore::open(&path).unwrap().tree_size().unwrap(), size);
    assert_eq!(l.label(&summary), Some(Label::DerivedUntrusted));
    assert_eq!(l.label(&prompt), None);
}

/// While the count has not finished, nothing is written either (`RowsError::Pending`, the
/// store unchanged); once it has passed, the same handle writes.
#[test]
fn writes_wait_for_a_rows_check_that_has_not_finished() {
    use memlineage::ledger::{RowsCheck, RowsError};
    use memlineage::record::ProvEntry;
    use memlineage::store::Store;
    use memlineage::LedgerError;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (k, [_, _, summary]) = build(&path, 2);
    let mut l = Ledger::open(SqliteStore::open(&path).unwrap(), log()).unwrap();
    let size = l.len();
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let p = path.clone();
    l.hold_writes(RowsCheck::spawn(move || {
        wait.recv().map_err(|_| LedgerError::NotALedger)?;
        Ok(SqliteStore::open(&p)?)
    }));
    let text = b"a note";
    let note = || ProvEntry::new(k.agent.key_id(), Kind::Summary, text);
    match l.append(note(), &k.agent, text) {
        Err(LedgerError::Rows(RowsError::Pending)) => {}
        other => panic!("appended before the rows were counted: {other:?}"),
    }
    assert_eq!(SqliteStore::open(&path).unwrap().tree_size().unwrap(), size);
    assert_eq!(l.label(&summary), Some(Label::DerivedUntrusted));
    go.send(()).unwrap();
    assert_eq!(l.await_writes(std::time::Duration::from_secs(60)), Ok(()));
    let a = l.append(note(), &k.agent, text).unwrap();
    assert_eq!(a.index, size);
}

/// The rows are counted between two reads of the tree size: a count after which the log grew
/// (another process appended) is taken again rather than read as a deleted row, a log that
/// keeps growing is refused (`RowsError::Moving`), and a deleted row is still found when the
/// log grows during the first count.
#[test]
fn the_rows_are_counted_again_when_the_log_grows_meanwhile() {
    use memlineage::ledger::{check_rows_chain, RowsError};
    use memlineage::LedgerError;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (_, [prompt, ..]) = build(&path, 2);
    let store = Counting::new(SqliteStore::open(&path).unwrap());
    store.moving.set(1);
    check_rows_chain(&store).unwrap();
    store.moving.set(3);
    match check_rows_chain(&store) {
        Err(LedgerError::Rows(RowsError::Moving)) => {}
        other => panic!("a log growing at every count: {other:?}"),
    }
    delete_row(&path, &prompt);
    let store = Counting::new(SqliteStore::open(&path).unwrap());
    store.moving.set(1);
    match check_rows_chain(&store) {
        Err(LedgerError::Rows(RowsError::Deleted { rows, size })) => assert_eq!(rows + 1, size),
        other => panic!("a deleted row not found: {other:?}"),
    }
}
