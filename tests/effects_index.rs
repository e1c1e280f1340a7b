//! The effects index a checkpoint signs (`spec/label-proof.md` §3.3): the one a ledger keeps
//! through appends, reopening and other handles' appends is the one an offline audit rebuilds
//! from the entries alone; a checkpoint that signs another is reported by the audit; a head
//! signed without one (an older memlineage, a PostgreSQL integrator) gets one when a label
//! proof needs it.

#[path = "common/forensics_support.rs"]
mod forensics_support;
#[path = "common/ledger_support.rs"]
mod ledger_support;

use forensics_support::{audit_with_content, signer, world};
use ledger_support::put;
use memlineage::lineage::effects_index::{IndexCommitment, EMPTY_INDEX_ROOT};
use memlineage::lineage::quarantine::Reach;
use memlineage::record::Kind;
use memlineage::store::{SqliteStore, Store};
use memlineage::Ledger;

fn signed(c: &memlineage::log::VerifiedCheckpoint) -> IndexCommitment {
    IndexCommitment::from_extension(c.extension())
        .unwrap()
        .expect("the checkpoint signs an index")
}

#[test]
fn the_signed_index_is_the_one_the_audit_rebuilds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (mut l, k) = world(SqliteStore::open(&path).unwrap());
    let first = signed(&l.checkpoint().unwrap());
    assert_eq!(first.entries, 5, "five bindings");
    let page = put(&mut l, &k.tool, Kind::ToolResult, "pay ZZ99", &[]);
    let memo = put(
        &mut l,
        &k.agent,
        Kind::Summary,
        "ZZ99",
        &[(page, 1_000_000)],
    );
    let flag = l.flag(page, Reach::All, &k.user, "injection").unwrap().id;
    let c = l.checkpoint().unwrap();
    let after = signed(&c);
    assert_eq!(after.entries, 6);
    assert_ne!(after.root, first.root);
    let r = audit_with_content(&mut l, true);
    assert!(r.is_clean());
    assert_eq!(
        (r.signed_index, r.effects_index),
        (Some(after), Some(after))
    );
    // Another handle appends a release and a tombstone; this one reopens: same index as the
    // writer's, and the audit's.
    let mut other = Ledger::open(SqliteStore::open(&path).unwrap(), signer()).unwrap();
    other.release(flag, &k.user, "fine").unwrap();
    other.tombstone(memo, &k.user, "forget").unwrap();
    let theirs = signed(&other.checkpoint().unwrap());
    drop(other);
    let mut reopened = Ledger::open(SqliteStore::open(&path).unwrap(), signer()).unwrap();
    l.refresh().unwrap();
    // The stored head is served as is; a handle that signs it anew signs the same index.
    assert_eq!(signed(&reopened.checkpoint().unwrap()), theirs);
    assert_eq!(signed(&l.indexed_checkpoint().unwrap()), theirs);
    assert_eq!(theirs.entries, 8);
    let r = audit_with_content(&mut reopened, true);
    assert_eq!(r.index_matches(), Some(true));
}

#[test]
fn an_empty_ledger_signs_the_empty_index() {
    let (mut l, _) = world(memlineage::store::MemoryStore::default());
    let c = l.store().latest_checkpoint().unwrap().unwrap();
    let first = l.verifier().unwrap().verify(&c.1).unwrap();
    // The store's first checkpoint is of the empty tree, signed at creation.
    assert_eq!(first.size(), 0);
    assert_eq!(
        signed(&first),
        IndexCommitment {
            entries: 0,
            root: EMPTY_INDEX_ROOT
        }
    );
    assert_eq!(signed(&l.checkpoint().unwrap()).entries, 5);
}

/// A checkpoint signed by the log key over the right tree but with another index is not
/// clean for the audit, and no label proof is made against it.
#[test]
fn a_checkpoint_with_another_index_is_reported_and_not_proved_against() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (mut l, k) = world(SqliteStore::open(&path).unwrap());
    let id = put(&mut l, &k.user, Kind::Prompt, "hello", &[]);
    let c = l.checkpoint().unwrap();
    let wrong = IndexCommitment {
        entries: 5,
        root: [7; 32],
    };
    let ext = format!(
        "{}{}",
        l.label_policy().extension_line(),
        wrong.extension_line()
    );
    let note = signer().sign_with(c.size(), &c.root(), &ext).unwrap();
    let items = (0..l.len()).map(|i| {
        Ok::<_, String>(memlineage::audit::AuditItem {
            cose: l.store().entry_bytes(i).unwrap().unwrap(),
            ..Default::default()
        })
    });
    let v = l.verifier().unwrap();
    let r = memlineage::audit::audit(items, &v, &note, l.label_policy(), v.key_id()).unwrap();
    assert_eq!(r.index_matches(), Some(false));
    assert!(!r.is_clean());
    drop(l);
    let mut store = SqliteStore::open(&path).unwrap();
    store.put_checkpoint(c.size(), &note).unwrap();
    let mut l = Ledger::open(store, signer()).unwrap();
    assert!(matches!(
        l.prove_label(&id),
        Err(memlineage::LedgerError::EffectsIndexMismatch { size }) if size == c.size()
    ));
}

/// A head signed without an index (here: the parameters' line alone, as memlineage before
/// the index, or a PostgreSQL integrator, signs it) is signed again, for the same size and
/// root, with the index, when a label proof needs it.
#[test]
fn a_head_without_an_index_is_signed_again_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let (mut l, k) = world(SqliteStore::open(&path).unwrap());
    let id = put(&mut l, &k.user, Kind::Prompt, "hello", &[]);
    let c = l.checkpoint().unwrap();
    let old = signer()
        .sign_with(c.size(), &c.root(), &l.label_policy().extension_line())
        .unwrap();
    drop(l);
    let mut store = SqliteStore::open(&path).unwrap();
    store.put_checkpoint(c.size(), &old).unwrap();
    let mut l = Ledger::open(store, signer()).unwrap();
    assert_eq!(l.checkpoint().unwrap().note(), old.as_slice());
    let p = l.prove_label(&id).unwrap();
    let again = l.verifier().unwrap().verify(&p.checkpoint).unwrap();
    assert_eq!((again.size(), again.root()), (c.size(), c.root()));
    assert_eq!(signed(&again), signed(&c));
    assert_eq!(
        l.store().latest_checkpoint().unwrap().unwrap().1,
        p.checkpoint
    );
}
