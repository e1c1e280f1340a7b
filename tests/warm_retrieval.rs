//! Warm retrieval (`spec/log.md` §11): a handle answers an entry it already verified under
//! the same checkpoint from memory. It must give exactly the answers of a cold retrieval, ask
//! an entry's tombstone and quarantine afresh, and never render bytes a store-only attacker
//! rewrote: what it keeps is what it verified, and once the checkpoint moves the store's
//! bytes are checked again.

use memlineage::lineage::quarantine::Reach;
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Parent, ProvEntry, Role, WriterKey};
use memlineage::retrieve::Outcome;
use memlineage::store::SqliteStore;
use memlineage::{Ledger, LedgerError};
use std::path::Path;

fn signer() -> LogSigner {
    LogSigner::new("test.example/warm", WriterKey::for_label("warm/log")).unwrap()
}

struct World {
    dir: tempfile::TempDir,
    user: WriterKey,
    tool: WriterKey,
    /// Prompts, tool outputs and memories, in append order.
    ids: Vec<EntryId>,
}

impl World {
    fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("w.ledger")
    }

    fn open(&self) -> Ledger<SqliteStore> {
        Ledger::open(SqliteStore::open(&self.path()).unwrap(), signer()).unwrap()
    }
}

/// A ledger on a real SQLite file: 6 prompts, 6 tool outputs and a memory of each pair.
fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let user = WriterKey::for_label("warm/user");
    let tool = WriterKey::for_label("warm/tool");
    let agent = WriterKey::for_label("warm/agent");
    let mut l = Ledger::create(
        SqliteStore::open(&dir.path().join("w.ledger")).unwrap(),
        signer(),
        LabelPolicy::default(),
    )
    .unwrap();
    l.bind(user.key_id(), Role::User, "user").unwrap();
    l.bind(tool.key_id(), Role::Tool, "tool:web").unwrap();
    l.bind(agent.key_id(), Role::Agent, "agent").unwrap();
    let mut put = |key: &WriterKey, kind, text: String, parents: Vec<Parent>| {
        let e = ProvEntry::new(key.key_id(), kind, text.as_bytes()).with_parents(parents);
        l.append(e, key, text.as_bytes()).unwrap().id
    };
    let mut ids = Vec::new();
    for i in 0..6 {
        let p = put(&user, Kind::Prompt, format!("pay the rent {i}"), vec![]);
        let t = put(
            &tool,
            Kind::ToolResult,
            format!("page {i}: IBAN DE{i:02}1234"),
            vec![],
        );
        let m = format!("memory {i}");
        let m = put(
            &agent,
            Kind::Summary,
            m,
            vec![Parent::full(p), Parent::full(t)],
        );
        ids.extend([p, t, m]);
    }
    l.checkpoint().unwrap();
    drop(l);
    World {
        dir,
        user,
        tool,
        ids,
    }
}

fn answers(outcomes: &[Outcome]) -> Vec<String> {
    outcomes.iter().map(|o| format!("{o:?}")).collect()
}

fn sql(path: &Path, statement: &str, params: impl rusqlite::Params) -> usize {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute(statement, params)
        .unwrap()
}

#[test]
fn warm_retrieval_answers_as_cold_retrieval_live_tombstoned_quarantined_and_unknown() {
    let w = world();
    let mut l = w.open();
    l.tombstone(w.ids[0], &w.user, "wrong rent").unwrap();
    l.flag(w.ids[4], Reach::Strong, &w.user, "injected page")
        .unwrap();
    let mut ask = w.ids.clone();
    ask.insert(3, EntryId([0xee; 32]));
    let cold = answers(&l.retrieve(&ask).unwrap());
    assert!(cold.iter().any(|a| a.starts_with("Verified")), "{cold:?}");
    for want in ["Tombstoned", "Quarantined", "Rejected"] {
        assert!(
            cold.iter().any(|a| a.starts_with(want)),
            "no {want}: {cold:?}"
        );
    }
    let warm = answers(&l.retrieve(&ask).unwrap());
    assert_eq!(warm, cold, "warm");
    l.forget_verified();
    assert_eq!(answers(&l.retrieve(&ask).unwrap()), cold, "forgotten");
    assert_eq!(
        answers(&w.open().retrieve(&ask).unwrap()),
        cold,
        "a fresh handle"
    );
}

#[test]
fn an_entry_retrieved_warm_is_taken_out_by_a_later_tombstone_or_flag() {
    let w = world();
    let mut l = w.open();
    let ask = [w.ids[1], w.ids[2], w.ids[7]];
    assert!(l
        .retrieve(&ask)
        .unwrap()
        .iter()
        .all(|o| matches!(o, Outcome::Verified(_))));
    l.tombstone(w.ids[1], &w.user, "wrong page").unwrap();
    l.flag(w.ids[7], Reach::Strong, &w.user, "injected page")
        .unwrap();
    let got = l.retrieve(&ask).unwrap();
    assert!(
        matches!(got[0], Outcome::Tombstoned(id) if id == w.ids[1]),
        "{got:?}"
    );
    assert!(matches!(got[1], Outcome::Verified(_)), "{got:?}");
    assert!(
        matches!(got[2], Outcome::Quarantined(id) if id == w.ids[7]),
        "{got:?}"
    );
    // Another handle's tombstone reaches this one at its refresh.
    let mut other = w.open();
    other.tombstone(w.ids[2], &w.user, "stale memory").unwrap();
    other.checkpoint().unwrap();
    l.refresh().unwrap();
    assert!(
        matches!(l.retrieve(&ask[1..2]).unwrap()[0], Outcome::Tombstoned(_)),
        "another handle's tombstone"
    );
}

/// The store-only attacker rewrites an entry's signed bytes and another's content after the
/// handle retrieved them. Under the same checkpoint the handle answers what it verified or
/// refuses (the original text, never the forged one); once the checkpoint moves, both are
/// refused as a cold retrieval refuses them.
#[test]
fn bytes_rewritten_after_a_warm_retrieval_are_never_rendered() {
    let w = world();
    let mut l = w.open();
    let (page, memory) = (w.ids[4], w.ids[5]);
    let before = answers(&l.retrieve(&[page, memory]).unwrap());
    let path = w.path();
    let mut cose: Vec<u8> = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT cose FROM entries WHERE id = ?1",
            [page.0.to_vec()],
            |r| r.get(0),
        )
        .unwrap();
    *cose.last_mut().unwrap() ^= 1;
    assert_eq!(
        sql(
            &path,
            "UPDATE entries SET cose = ?1 WHERE id = ?2",
            rusqlite::params![cose, page.0.to_vec()]
        ),
        1
    );
    assert_eq!(
        sql(
            &path,
            "UPDATE content SET bytes = ?1 WHERE bytes = ?2",
            rusqlite::params![b"forged".to_vec(), b"memory 1".to_vec()]
        ),
        1
    );
    // Under the same checkpoint: what was verified, or (the store's content epoch moved with
    // the other connection's writes) the refusals of a cold retrieval; never the forged text.
    let again = answers(&l.retrieve(&[page, memory]).unwrap());
    for (a, b) in again.iter().zip(&before) {
        assert!(a == b || a.starts_with("Rejected"), "{a}");
        assert!(!a.contains("forged"), "{a}");
    }
    let text = b"one more page";
    l.append(
        ProvEntry::new(w.tool.key_id(), Kind::ToolResult, text),
        &w.tool,
        text,
    )
    .unwrap();
    let after = l.retrieve(&[page, memory]).unwrap();
    assert!(
        matches!(after[0], Outcome::Rejected(id, _) if id == page),
        "{after:?}"
    );
    assert!(
        matches!(after[1], Outcome::Rejected(id, LedgerError::ContentTampered(_)) if id == memory),
        "{after:?}"
    );
    // A fresh handle, which never verified them, refuses them alike.
    let cold = w.open().retrieve(&[page, memory]).unwrap();
    assert!(
        cold.iter().all(|o| matches!(o, Outcome::Rejected(..))),
        "{cold:?}"
    );
}

/// Content removed from the store by another handle (a redaction, which leaves the log and its
/// checkpoint as they were: `spec/storage.md` §4.2) is not rendered again from memory: the
/// store's content epoch moved (third review, finding 2).
#[test]
fn content_redacted_by_another_handle_after_a_warm_retrieval_is_not_rendered() {
    use memlineage::store::Store;
    let w = world();
    let mut l = w.open();
    let page = w.ids[4];
    let text = |o: &Outcome| match o {
        Outcome::Verified(r) => r.text.clone(),
        other => panic!("not verified: {other:?}"),
    };
    assert!(text(&l.retrieve(&[page]).unwrap()[0]).is_some());
    assert!(text(&l.retrieve(&[page]).unwrap()[0]).is_some(), "warm");
    let hash = l.get(&page).unwrap().entry().content_hash;
    let mut other = SqliteStore::open(&w.path()).unwrap();
    assert!(other.redact(&hash).unwrap());
    drop(other);
    assert_eq!(
        text(&l.retrieve(&[page]).unwrap()[0]),
        None,
        "rendered after redaction"
    );
    assert_eq!(text(&w.open().retrieve(&[page]).unwrap()[0]), None, "cold");
}
