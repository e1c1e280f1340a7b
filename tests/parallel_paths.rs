//! The parallel paths give the answers of the sequential ones: group commit signs its drafts on
//! all cores (`Ledger::append_batch`), retrieval checks signatures and audit paths on all cores
//! (`Ledger::retrieve`).

#[path = "common/sqlite_support.rs"]
mod sqlite_support;
use sqlite_support::sqlite_ledger;

use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Parent, ProvEntry, RecordError, Role, Weight, WriterKey};
use memlineage::retrieve::Outcome;
use memlineage::store::{MemoryStore, SqliteStore};
use memlineage::{Draft, Ledger, LedgerError};

/// Drafts per batch: well above `memlineage::ledger::PARALLEL_MIN`.
const N: usize = 24;

fn ledger() -> (Ledger<MemoryStore>, WriterKey) {
    let signer = LogSigner::new("test.example/parallel", WriterKey::for_label("par/log")).unwrap();
    let mut l = Ledger::create(MemoryStore::new(), signer, LabelPolicy::default()).unwrap();
    let user = WriterKey::for_label("par/user");
    l.bind(user.key_id(), Role::User, "user").unwrap();
    (l, user)
}

fn contents() -> Vec<Vec<u8>> {
    (0..N).map(|i| format!("prompt {i}").into_bytes()).collect()
}

fn draft<'k, 'c>(key: &'k WriterKey, content: &'c [u8], i: usize) -> Draft<'k, 'c> {
    Draft {
        entry: ProvEntry::new(key.key_id(), Kind::Prompt, content).with_time_ms(i as u64),
        key,
        content,
    }
}

#[test]
fn parallel_group_commit_equals_one_by_one() {
    let c = contents();
    let (mut batched, user) = ledger();
    let got = batched
        .append_batch((0..N).map(|i| draft(&user, &c[i], i)).collect())
        .unwrap();
    let (mut single, _) = ledger();
    let want: Vec<_> = (0..N)
        .map(|i| {
            let d = draft(&user, &c[i], i);
            single.append(d.entry, d.key, d.content).unwrap()
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(batched.root().unwrap(), single.root().unwrap());
}

#[test]
fn parallel_group_commit_reports_the_first_bad_draft_and_stores_nothing() {
    let c = contents();
    let (mut l, user) = ledger();
    let before = (l.len(), l.root().unwrap());
    let stranger = WriterKey::for_label("par/stranger");
    let mut drafts: Vec<Draft<'_, '_>> = (0..N).map(|i| draft(&user, &c[i], i)).collect();
    // Draft 7 names a writer other than its key; draft 15 has a duplicate parent.
    drafts[7].key = &stranger;
    let p = Parent {
        id: EntryId([7; 32]),
        weight: Weight::ONE,
    };
    drafts[15].entry.parents = vec![p, p];
    let err = l.append_batch(drafts).unwrap_err();
    assert!(
        matches!(err, LedgerError::Record(RecordError::WriterMismatch)),
        "{err:?}"
    );
    assert_eq!((l.len(), l.root().unwrap()), before);
}

#[test]
fn parallel_retrieval_names_each_bad_entry_like_single_retrieval() {
    let c = contents();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.ledger");
    let signer = || LogSigner::new("test.example/parallel", WriterKey::for_label("par/log"));
    let mut l = sqlite_ledger(&path, signer().unwrap());
    let user = WriterKey::for_label("par/user");
    l.bind(user.key_id(), Role::User, "user").unwrap();
    let appended = l
        .append_batch((0..N).map(|i| draft(&user, &c[i], i)).collect())
        .unwrap();
    l.checkpoint().unwrap();
    drop(l);
    // Entry 3's signature gets one flipped bit; entry 10's content is replaced.
    let (bad_sig, bad_content) = (appended[3], appended[10]);
    let db = rusqlite::Connection::open(&path).unwrap();
    let mut cose: Vec<u8> = db
        .query_row(
            "SELECT cose FROM entries WHERE idx = ?1",
            [bad_sig.index as i64],
            |r| r.get(0),
        )
        .unwrap();
    *cose.last_mut().unwrap() ^= 1;
    db.execute(
        "UPDATE entries SET cose = ?1 WHERE idx = ?2",
        rusqlite::params![cose, bad_sig.index as i64],
    )
    .unwrap();
    let n = db
        .execute(
            "UPDATE content SET bytes = ?1 WHERE bytes = ?2",
            rusqlite::params![b"forged".to_vec(), c[10].clone()],
        )
        .unwrap();
    assert_eq!(n, 1);
    drop(db);
    let mut l = Ledger::open(SqliteStore::open(&path).unwrap(), signer().unwrap()).unwrap();
    let unknown = EntryId([0xee; 32]);
    let mut ask: Vec<EntryId> = appended.iter().map(|a| a.id).collect();
    ask.insert(5, unknown);
    let all = l.retrieve(&ask).unwrap();
    assert_eq!(all.len(), ask.len());
    for (id, outcome) in ask.iter().zip(&all) {
        // One at a time (below the parallel threshold): the same outcome for each id.
        let one = l.retrieve(std::slice::from_ref(id)).unwrap();
        assert_eq!(format!("{outcome:?}"), format!("{:?}", one[0]), "{id}");
        match outcome {
            Outcome::Rejected(bad, LedgerError::UnknownEntry(_)) => assert_eq!(*bad, unknown),
            Outcome::Rejected(bad, LedgerError::Record(RecordError::BadSignature)) => {
                assert_eq!(*bad, bad_sig.id)
            }
            Outcome::Rejected(bad, LedgerError::ContentTampered(_)) => {
                assert_eq!(*bad, bad_content.id)
            }
            Outcome::Verified(r) => {
                assert!(r.id == *id && *id != bad_sig.id && *id != bad_content.id)
            }
            other => panic!("{id}: {other:?}"),
        }
    }
}
