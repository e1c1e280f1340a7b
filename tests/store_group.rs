//! Groups of writes (`spec/storage.md` §6.1, `spec/mcp.md` §6.9): appends made in a group are
//! stored all together when it is committed, are seen by no other handle before, and are lost
//! all together when the group is never committed (the process dies first); the side
//! checkpoint file never gets ahead of the entries a group has not committed yet.

#[path = "common/sqlite_support.rs"]
mod sqlite_support;
use sqlite_support::sqlite_ledger;

use memlineage::log::LogSigner;
use memlineage::record::{Kind, ProvEntry, Role, WriterKey};
use memlineage::store::{SqliteStore, Store};
use memlineage::Ledger;
use std::path::Path;

fn signer() -> LogSigner {
    LogSigner::new("group.example/ledger", WriterKey::for_label("group/log")).expect("signer")
}

fn agent() -> WriterKey {
    WriterKey::for_label("group/agent")
}

fn fact(l: &mut Ledger<SqliteStore>, text: &str) {
    let e = ProvEntry::new(agent().key_id(), Kind::Fact, text.as_bytes());
    l.append(e, &agent(), text.as_bytes()).expect("append");
}

/// A fresh ledger at `path` with the agent's key bound; its size.
fn fresh(path: &Path) -> u64 {
    let mut l = sqlite_ledger(path, signer());
    l.bind(agent().key_id(), Role::Agent, "agent")
        .expect("bind");
    l.len()
}

fn stored(path: &Path) -> u64 {
    SqliteStore::open(path)
        .expect("open")
        .tree_size()
        .expect("size")
}

/// A fresh ledger in `dir`, its path and size, and a handle on it with a group begun.
fn grouped(dir: &Path) -> (std::path::PathBuf, u64, Ledger<SqliteStore>) {
    let path = dir.join("l.db");
    let before = fresh(&path);
    let mut l = Ledger::open(SqliteStore::open(&path).expect("open"), signer()).expect("open");
    l.begin_group().expect("group");
    (path, before, l)
}

#[test]
fn a_committed_group_stores_every_append_at_once() {
    let dir = tempfile::tempdir().expect("dir");
    let (path, before, mut l) = grouped(dir.path());
    fact(&mut l, "one");
    fact(&mut l, "two");
    fact(&mut l, "three");
    assert_eq!(l.len(), before + 3, "the handle sees its own appends");
    assert_eq!(
        stored(&path),
        before,
        "another handle sees none before the commit"
    );
    l.end_group().expect("commit");
    assert_eq!(stored(&path), before + 3);
    // Outside a group, each append is durable by itself again.
    fact(&mut l, "four");
    assert_eq!(stored(&path), before + 4);
    drop(l);
    let again = Ledger::open(SqliteStore::open(&path).expect("open"), signer()).expect("reopen");
    assert_eq!(again.len(), before + 4);
}

#[test]
fn a_group_never_committed_stores_nothing_and_the_ledger_opens() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("l.db");
    let before = fresh(&path);
    let side = SqliteStore::side_checkpoint_path(&path);
    let mut l = Ledger::open(SqliteStore::open(&path).expect("open"), signer()).expect("open");
    let c = l.checkpoint().expect("checkpoint");
    let side_before = std::fs::read(&side).expect("side");
    l.begin_group().expect("group");
    fact(&mut l, "lost one");
    fact(&mut l, "lost two");
    // A checkpoint of the group's entries is kept back from the side file until the commit.
    let c2 = l.checkpoint().expect("checkpoint");
    assert!(c2.size() > c.size());
    assert_eq!(std::fs::read(&side).expect("side"), side_before);
    // The process dies: the handle goes without committing.
    drop(l);
    assert_eq!(stored(&path), before);
    let mut again =
        Ledger::open(SqliteStore::open(&path).expect("open"), signer()).expect("reopen");
    assert_eq!(again.len(), before);
    fact(&mut again, "after");
    assert_eq!(stored(&path), before + 1);
}

#[test]
fn a_failed_append_in_a_group_leaves_the_others() {
    let dir = tempfile::tempdir().expect("dir");
    let (path, before, mut l) = grouped(dir.path());
    fact(&mut l, "kept");
    // A key never bound: the ledger refuses the entry, and stores nothing of it.
    let stranger = WriterKey::for_label("group/stranger");
    let e = ProvEntry::new(stranger.key_id(), Kind::Fact, b"refused");
    assert!(l.append(e, &stranger, b"refused").is_err());
    fact(&mut l, "kept too");
    l.end_group().expect("commit");
    assert_eq!(stored(&path), before + 2);
    let again = Ledger::open(SqliteStore::open(&path).expect("open"), signer()).expect("reopen");
    assert_eq!(again.len(), before + 2);
}
