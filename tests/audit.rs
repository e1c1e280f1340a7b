//! The offline audit's reading of a log (`spec/lineage.md` §5): its pipelined chunks (keyring
//! order across chunks, read errors, progress reports) and the SQLite range read it uses
//! (`SqliteStore::audit_items`).

#[path = "common/sqlite_support.rs"]
mod sqlite_support;
use sqlite_support::sqlite_ledger;

#[path = "common/store_reads.rs"]
mod store_reads;

use memlineage::audit::{audit_with_progress, AuditError, AuditProgress, Problem, AUDIT_CHUNK};
use memlineage::lineage::admission::AdmissionError;
use memlineage::lineage::{Label, LabelPolicy};
use memlineage::log::LogSigner;
use memlineage::record::{Kind, ProvEntry, Role, SignedEntry, WriterKey};
use memlineage::store::MemoryStore;
use memlineage::{Draft, Ledger};

/// One audit source item: entry bytes and stored label, or a read error.
type Read = Result<(Vec<u8>, Option<Label>), String>;

#[derive(Default)]
struct Seen(Vec<u64>);

impl AuditProgress for Seen {
    fn entries_checked(&mut self, checked: u64) {
        self.0.push(checked);
    }
}

/// The audit's pipelined chunks: a key bound as the last entry of chunk 0 and first used in
/// chunk 1, a key bound and used in the same chunk, a key used one entry before its binding
/// (the only failure), a read error mid-way (an error, after the progress of whole chunks).
#[test]
fn audit_chunks_keep_keyring_order_and_read_errors() {
    let signer = LogSigner::new("review.example/log", WriterKey::for_label("review/log")).unwrap();
    let mut l = Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).unwrap();
    let agent = WriterKey::for_label("review/agent");
    l.bind(agent.key_id(), Role::Agent, "agent").unwrap();
    let filler = |l: &mut Ledger<MemoryStore>, upto: u64| {
        let texts: Vec<Vec<u8>> = (l.len()..upto)
            .map(|i| format!("filler {i}").into_bytes())
            .collect();
        if texts.is_empty() {
            return;
        }
        l.append_batch(
            texts
                .iter()
                .map(|c| Draft {
                    entry: ProvEntry::new(agent.key_id(), Kind::Fact, c),
                    key: &agent,
                    content: c,
                })
                .collect(),
        )
        .unwrap();
    };
    let c0 = AUDIT_CHUNK as u64;
    // x bound at index c0 - 1 (last of chunk 0), first used at c0 (first of chunk 1).
    let x = WriterKey::for_label("review/x");
    filler(&mut l, c0 - 1);
    l.bind(x.key_id(), Role::User, "x").unwrap();
    assert_eq!(l.len(), c0);
    let p = ProvEntry::new(x.key_id(), Kind::Prompt, b"x first");
    l.append(p, &x, b"x first").unwrap();
    // y bound and used inside chunk 1.
    let y = WriterKey::for_label("review/y");
    filler(&mut l, c0 + 10);
    l.bind(y.key_id(), Role::User, "y").unwrap();
    let p = ProvEntry::new(y.key_id(), Kind::Prompt, b"y first");
    l.append(p, &y, b"y first").unwrap();
    filler(&mut l, 2 * c0 + 5);
    let c = l.checkpoint().unwrap();
    let v = l.verifier().unwrap();
    let store = l.store();
    let mut items = store_reads::labelled_entries(store);
    let run = |items: Vec<Read>| {
        let mut seen = Seen::default();
        let r = audit_with_progress(items, &v, c.note(), l.label_policy(), v.key_id(), &mut seen);
        (r, seen.0)
    };
    let (r, seen) = run(items.iter().cloned().map(Ok).collect());
    let r = r.unwrap();
    assert!(r.is_clean(), "{:?}", r.failures);
    assert_eq!(seen, vec![c0, 2 * c0, l.len()]);
    // z used at one index, bound at the next (both in chunk 1): one UnknownWriter, then the
    // root no longer matches (the log was changed) but nothing else fails.
    let z = WriterKey::for_label("review/z");
    let use_z = SignedEntry::sign(ProvEntry::new(z.key_id(), Kind::Prompt, b"z"), &z).unwrap();
    let (bind_z, _) = l.binding_entry(z.key_id(), Role::User, "z").unwrap();
    let at = (c0 + 20) as usize;
    items[at] = (use_z.cose().to_vec(), Some(Label::Trusted));
    items[at + 1] = (bind_z.cose().to_vec(), Some(Label::Trusted));
    let (r, _) = run(items.iter().cloned().map(Ok).collect());
    let r = r.unwrap();
    let got: Vec<(u64, Problem)> = r
        .failures
        .iter()
        .map(|f| (f.index, f.problem.clone()))
        .collect();
    assert_eq!(
        got,
        vec![(
            at as u64,
            Problem::Admission(AdmissionError::UnknownWriter(z.key_id()))
        )]
    );
    // A read error in chunk 1: the audit fails with it, after reporting chunk 0 only.
    let mut with_error: Vec<Read> = items.iter().cloned().map(Ok).collect();
    with_error[c0 as usize + 7] = Err("disk on fire".into());
    let (r, seen) = run(with_error);
    assert!(
        matches!(r, Err(AuditError::Source { detail: ref s }) if s.contains("disk on fire")),
        "{r:?}"
    );
    assert_eq!(seen, vec![c0]);
}

/// A SQLite file whose `content` table was recreated without its key so that it holds a row
/// twice (a file not written by memlineage). `SqliteStore::open` compares the schema with
/// `src/store/schema.sql` and refuses it, naming the table (before, the range read reported a
/// false index gap).
#[test]
fn a_sqlite_file_whose_content_table_was_recreated_is_refused() {
    use memlineage::store::SqliteStore;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.ledger");
    let signer = LogSigner::new("review.example/dup", WriterKey::for_label("review/log")).unwrap();
    let mut l = sqlite_ledger(&path, signer);
    let agent = WriterKey::for_label("review/agent");
    l.bind(agent.key_id(), Role::Agent, "agent").unwrap();
    for i in 0..5 {
        let text = format!("fact {i}");
        l.append(
            ProvEntry::new(agent.key_id(), Kind::Fact, text.as_bytes()),
            &agent,
            text.as_bytes(),
        )
        .unwrap();
    }
    let (c, v, policy) = (
        l.checkpoint().unwrap(),
        l.verifier().unwrap(),
        l.label_policy(),
    );
    drop(l);
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute_batch(
        "ALTER TABLE content RENAME TO content_old;
         CREATE TABLE content (hash BLOB NOT NULL, bytes BLOB NOT NULL);
         INSERT INTO content SELECT hash, bytes FROM content_old;
         INSERT INTO content SELECT hash, bytes FROM content_old
             WHERE bytes = CAST('fact 2' AS BLOB);
         DROP TABLE content_old;",
    )
    .unwrap();
    drop(db);
    // A store whose schema memlineage did not write is refused before anything is read from
    // it (issue 25: a changed schema can change what is stored).
    let Err(e) = SqliteStore::open(&path) else {
        panic!("a changed schema was not refused")
    };
    assert!(
        e.to_string()
            .contains("`content` that memlineage did not create"),
        "{e}"
    );
    let _ = (c, v, policy);
}
