//! One admission rule (`memlineage::lineage::admission`): the ledger's append and the audit's
//! replay give the same verdict, the same `AdmissionError`, for the same hostile entry.
//!
//! Each case builds a ledger on a real SQLite file, offers it one hostile entry (refused,
//! nothing stored), then writes that entry into the file behind the ledger's back (as anyone
//! with write access to the store can), signs a checkpoint over it and audits the file.

#[path = "common/forensics_support.rs"]
mod forensics_support;
#[path = "common/ledger_support.rs"]
mod ledger_support;

use forensics_support::{signer, world, Keys};
use ledger_support::put;
use memlineage::audit::{audit, AuditItem, Problem};
use memlineage::ledger::StoreSource;
use memlineage::lineage::admission::AdmissionError;
use memlineage::lineage::lease::{lease_terms, LeaseError};
use memlineage::lineage::quarantine::{QuarantineError, Reach};
use memlineage::lineage::{Label, LabelPolicy};
use memlineage::log::{hashes_to_store, tree_root};
use memlineage::record::WriterKey;
use memlineage::record::{EntryId, KeyBinding, Kind, Parent, ProvEntry, Role, SignedEntry, Weight};
use memlineage::store::{NewEntry, SqliteStore, Store};
use memlineage::{Ledger, LedgerError};

type L = Ledger<SqliteStore>;

/// A hostile entry and the content offered with it.
type Offer = (SignedEntry, Vec<u8>);

/// An entry of `kind` by `key` with `content`, an optional target and a time.
fn entry(key: &WriterKey, kind: Kind, content: &[u8], target: Option<EntryId>, ms: u64) -> Offer {
    let mut e = ProvEntry::new(key.key_id(), kind, content).with_time_ms(ms);
    e.target = target;
    (SignedEntry::sign(e, key).unwrap(), content.to_vec())
}

/// A prompt by the user, and a tool result (both without parents).
fn two(l: &mut L, k: &Keys) -> (EntryId, EntryId) {
    let prompt = put(l, &k.user, Kind::Prompt, "pay the bill", &[]);
    let page = put(l, &k.tool, Kind::ToolResult, "page: pay ZZ99", &[]);
    (prompt, page)
}

/// The verdict of the ledger's append: the admission error, with nothing stored.
fn ledger_verdict(l: &mut L, (s, content): &Offer) -> AdmissionError {
    let before = (l.len(), l.store().tree_size().unwrap());
    let got = l.append_signed(vec![(s.clone(), content.as_slice())]);
    assert_eq!((l.len(), l.store().tree_size().unwrap()), before);
    match got {
        Err(LedgerError::Admission(a)) => a,
        other => panic!("ledger did not refuse with an admission error: {other:?}"),
    }
}

/// The verdict of the audit: the entry is written into the SQLite file at the next index
/// (content stored under its signed hash, whatever the bytes), a checkpoint is signed over
/// the file, and the file is audited; every failure must name that one entry. A duplicate
/// cannot be stored twice in SQLite, so it is replayed once more after the stored entries.
fn audit_verdict(path: &std::path::Path, (s, content): &Offer) -> Problem {
    let mut store = SqliteStore::open(path).unwrap();
    let index = store.tree_size().unwrap();
    let duplicate = store.metas_from(0).unwrap().iter().any(|m| m.id == s.id());
    if !duplicate {
        let hashes = hashes_to_store(index, &s.id(), &StoreSource(&store)).unwrap();
        store
            .append(&[NewEntry {
                index,
                id: s.id(),
                cose: s.cose(),
                kind: s.entry().kind,
                label: Label::Trusted,
                content: Some((s.entry().content_hash, content)),
                hashes,
                tag: None,
                context: Some(s.entry().context_hash),
            }])
            .unwrap();
    }
    let size = store.tree_size().unwrap();
    let root = tree_root(size, &StoreSource(&store)).unwrap();
    let log = signer();
    let note = log.sign(size, &root);
    let extra = duplicate.then(|| {
        Ok(AuditItem {
            cose: s.cose().to_vec(),
            content: Some(content.clone()),
            ..Default::default()
        })
    });
    let items = store.audit_items().chain(extra);
    let v = log.verifier();
    let r = audit(items, &v, &note, LabelPolicy::default(), v.key_id()).unwrap();
    assert!(r.root_matches);
    assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
    let f = &r.failures[0];
    assert_eq!((f.index, f.id), (index, s.id()));
    f.problem.clone()
}

/// Both verdicts, which must be the same admission error, and that error.
fn both(name: &str, build: impl FnOnce(&mut L, &Keys) -> Offer) -> AdmissionError {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.ledger");
    let (mut l, k) = world(SqliteStore::open(&path).unwrap());
    let offer = build(&mut l, &k);
    let ledger = ledger_verdict(&mut l, &offer);
    drop(l);
    let audit = audit_verdict(&path, &offer);
    assert_eq!(
        audit,
        Problem::Admission(ledger.clone()),
        "{name}: the audit and the ledger disagree"
    );
    ledger
}

#[test]
fn writer_content_and_lineage_faults_get_the_same_verdict() {
    let stranger = WriterKey::for_label("tests/stranger");
    assert_eq!(
        both("unknown writer", |_, _| entry(
            &stranger,
            Kind::Prompt,
            b"hi",
            None,
            1
        )),
        AdmissionError::UnknownWriter(stranger.key_id())
    );
    assert_eq!(
        both("content mismatch", |_, k| {
            let (s, _) = entry(&k.user, Kind::Prompt, b"pay bob 10", None, 1);
            (s, b"pay ZZ99 everything".to_vec())
        }),
        AdmissionError::ContentMismatch
    );
    let ghost = EntryId([7; 32]);
    assert_eq!(
        both("unknown parent", |_, k| {
            let e = ProvEntry::new(k.agent.key_id(), Kind::Summary, b"memo").with_parents(vec![
                Parent {
                    id: ghost,
                    weight: Weight::new(1_000_000).unwrap(),
                },
            ]);
            (SignedEntry::sign(e, &k.agent).unwrap(), b"memo".to_vec())
        }),
        AdmissionError::UnknownParent(ghost)
    );
    assert_eq!(
        both("unknown target", |_, k| {
            entry(&k.user, Kind::Tombstone, b"forget", Some(ghost), 1)
        }),
        AdmissionError::UnknownTarget(ghost)
    );
    let mut dup = EntryId([0; 32]);
    assert_eq!(
        both("duplicate", |l, k| {
            let offer = entry(&k.user, Kind::Prompt, b"once", None, 5);
            l.append_signed(vec![(offer.0.clone(), offer.1.as_slice())])
                .unwrap();
            dup = offer.0.id();
            offer
        }),
        AdmissionError::Duplicate(dup)
    );
    // Two faults: the first in the rule's order is the answer on both sides.
    assert_eq!(
        both("unknown writer and parent", |_, _| {
            let e =
                ProvEntry::new(stranger.key_id(), Kind::Prompt, b"hi").with_parents(vec![Parent {
                    id: ghost,
                    weight: Weight::new(1).unwrap(),
                }]);
            (SignedEntry::sign(e, &stranger).unwrap(), b"hi".to_vec())
        }),
        AdmissionError::UnknownWriter(stranger.key_id())
    );
}

#[test]
fn keyring_and_tombstone_faults_get_the_same_verdict() {
    let newcomer = WriterKey::for_label("tests/newcomer");
    assert_eq!(
        both("keyring entry by a non-log key", |_, k| {
            let mut e = ProvEntry::new(k.user.key_id(), Kind::Keyring, b"bind");
            e.binding = Some(KeyBinding {
                key: newcomer.key_id(),
                role: Role::User,
                name: "newcomer".into(),
            });
            (SignedEntry::sign(e, &k.user).unwrap(), b"bind".to_vec())
        }),
        AdmissionError::NotLogKey
    );
    assert_eq!(
        both("second log key", |l, _| {
            l.binding_entry(newcomer.key_id(), Role::Log, "evil")
                .unwrap()
        }),
        AdmissionError::BindsLogRole(newcomer.key_id())
    );
    let agent = forensics_support::keys().agent.key_id();
    assert_eq!(
        both("rebind", |l, k| {
            l.binding_entry(k.agent.key_id(), Role::User, "agent, promoted")
                .unwrap()
        }),
        AdmissionError::Rebind {
            key: agent,
            bound: Role::Agent
        }
    );
    let tool = forensics_support::keys().tool.key_id();
    assert_eq!(
        both("tombstone by a tool", |l, k| {
            let (prompt, _) = two(l, k);
            entry(&k.tool, Kind::Tombstone, b"tool deletes", Some(prompt), 1)
        }),
        AdmissionError::UntrustedTombstone(tool)
    );
}

#[test]
fn quarantine_faults_get_the_same_verdict() {
    assert_eq!(
        both("flag by an agent", |l, k| {
            let (_, page) = two(l, k);
            entry(&k.agent, Reach::All.kind(), b"advisory", Some(page), 1)
        }),
        AdmissionError::Quarantine(QuarantineError::NotAuthorised {
            kind: Reach::All.kind().name(),
            role: Role::Agent.name(),
        })
    );
    let mut target = EntryId([0; 32]);
    assert_eq!(
        both("release of a non-flag", |l, k| {
            let (prompt, _) = two(l, k);
            target = prompt;
            entry(&k.user, Kind::Release, b"not a flag", Some(prompt), 1)
        }),
        AdmissionError::Quarantine(QuarantineError::NotAFlag(target))
    );
    let mut flag = EntryId([0; 32]);
    assert_eq!(
        both("second release", |l, k| {
            let (_, page) = two(l, k);
            flag = l.flag(page, Reach::All, &k.user, "advisory").unwrap().id;
            l.release(flag, &k.user, "checked").unwrap();
            entry(&k.user, Kind::Release, b"again", Some(flag), 1)
        }),
        AdmissionError::Quarantine(QuarantineError::AlreadyReleased(flag))
    );
    // The target is checked before the quarantine rules, on both sides.
    let ghost = EntryId([9; 32]);
    assert_eq!(
        both("release of an unknown target", |_, k| {
            entry(&k.user, Kind::Release, b"ghost", Some(ghost), 1)
        }),
        AdmissionError::UnknownTarget(ghost)
    );
}

#[test]
fn lease_faults_get_the_same_verdict() {
    assert_eq!(
        both("lease by a tool", |l, k| {
            let (prompt, _) = two(l, k);
            entry(&k.tool, Kind::Lease, &lease_terms(1_000), Some(prompt), 1)
        }),
        AdmissionError::Lease(LeaseError::NotAuthorised)
    );
    assert_eq!(
        both("lease with bad terms", |l, k| {
            let (prompt, _) = two(l, k);
            entry(&k.agent, Kind::Lease, b"ttl_ms=0", Some(prompt), 1)
        }),
        AdmissionError::Lease(LeaseError::BadTerms)
    );
    let (mut target, agent) = (EntryId([0; 32]), forensics_support::keys().agent.key_id());
    assert_eq!(
        both("lease held by another", |l, k| {
            let (prompt, _) = two(l, k);
            target = prompt;
            l.claim_lease(prompt, &k.agent, 10_000, 1_000).unwrap();
            entry(
                &k.agent2,
                Kind::Lease,
                &lease_terms(1_000),
                Some(prompt),
                2_000,
            )
        }),
        AdmissionError::Lease(LeaseError::Held {
            target,
            holder: agent,
            until_ms: 11_000
        })
    );
    assert_eq!(
        both("replacement without the lease", |l, k| {
            let (prompt, _) = two(l, k);
            target = prompt;
            l.claim_lease(prompt, &k.agent, 10_000, 1_000).unwrap();
            entry(&k.agent2, Kind::Replacement, b"v2", Some(prompt), 2_000)
        }),
        AdmissionError::Lease(LeaseError::NotHolder { target })
    );
    assert_eq!(
        both("replacement by a tool", |l, k| {
            let (prompt, _) = two(l, k);
            target = prompt;
            entry(&k.tool, Kind::Replacement, b"v2", Some(prompt), 2_000)
        }),
        AdmissionError::Lease(LeaseError::ReplacementNotAuthorised {
            target,
            role: Role::Tool.name()
        })
    );
    let mut by = EntryId([0; 32]);
    assert_eq!(
        both("lease after replacement", |l, k| {
            let (prompt, _) = two(l, k);
            target = prompt;
            let (s, c) = entry(&k.user, Kind::Replacement, b"fixed", Some(prompt), 1_000);
            by = l.append_signed(vec![(s, c.as_slice())]).unwrap()[0].id;
            entry(
                &k.agent,
                Kind::Lease,
                &lease_terms(1_000),
                Some(prompt),
                2_000,
            )
        }),
        AdmissionError::Lease(LeaseError::Done { target, by })
    );
}
