//! Crash safety, proven: a writer process killed at many points, and a store that fails each
//! write in turn (before or after committing). After each fault the ledger reopens, every
//! acknowledged entry is there, tombstones are in force, and a full audit — which recomputes
//! every signature, label and the tree root — is clean against a fresh signed checkpoint.

#[path = "common/sqlite_support.rs"]
mod sqlite_support;
use sqlite_support::sqlite_ledger;

#[path = "common/faulty_store.rs"]
mod faulty_store;

use faulty_store::Faulty;
use memlineage::audit::{audit, AuditReport};
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Parent, ProvEntry, Role, Weight, WriterKey};
use memlineage::store::{MemoryStore, SqliteStore, Store, StoreError};
use memlineage::{Ledger, LedgerError};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

const CHILD_LEDGER: &str = "MEMLINEAGE_CRASH_CHILD_LEDGER";

fn signer() -> LogSigner {
    LogSigner::new("crash.example/ledger", WriterKey::for_label("crash/log")).unwrap()
}

fn agent() -> WriterKey {
    WriterKey::for_label("crash/agent")
}

fn full_audit<S: Store>(l: &mut Ledger<S>) -> AuditReport {
    let c = l.checkpoint().unwrap();
    let v = l.verifier().unwrap();
    let store = l.store();
    let entries = (0..l.len()).map(|i| {
        let meta = store.metas_from(i).unwrap()[0];
        Ok::<_, String>((store.entry_bytes(i).unwrap().unwrap(), Some(meta.label)))
    });
    audit(entries, &v, c.note(), l.label_policy(), v.key_id()).unwrap()
}

/// One step of the writer's workload: facts chained on the previous one, and every 7th step a
/// tombstone of the entry 3 steps back. Deterministic in `step`, so ids are unique.
fn step<S: Store>(
    l: &mut Ledger<S>,
    key: &WriterKey,
    step: u64,
    prev: &mut Vec<EntryId>,
) -> Result<(EntryId, bool), LedgerError> {
    if step % 7 == 6 && prev.len() >= 3 {
        let target = prev[prev.len() - 3];
        let a = l.tombstone(target, key, &format!("forget {step}"))?;
        return Ok((a.id, true));
    }
    let text = format!("fact {step}");
    let parents = prev
        .last()
        .map(|p| {
            vec![Parent {
                id: *p,
                weight: Weight::ONE,
            }]
        })
        .unwrap_or_default();
    let e = ProvEntry::new(key.key_id(), Kind::Fact, text.as_bytes())
        .with_parents(parents)
        .with_time_ms(step);
    let a = l.append(e, key, text.as_bytes())?;
    prev.push(a.id);
    Ok((a.id, false))
}

#[test]
fn killed_writers_lose_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.ledger");
    {
        let mut l = sqlite_ledger(&path, signer());
        l.bind(agent().key_id(), Role::Agent, "agent").unwrap();
    }
    let mut acked: Vec<(EntryId, bool, Option<EntryId>)> = Vec::new();
    for round in 0..30u64 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash_child", "--ignored", "--nocapture"])
            .env(CHILD_LEDGER, &path)
            .env("MEMLINEAGE_CRASH_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill after a varying number of acknowledgements: often mid-commit.
        let stop_after = 3 + (round * 17) % 29;
        let mut seen = 0;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            let mut parts = line.split_whitespace();
            if parts.next() != Some("ACK") {
                continue;
            }
            let id = EntryId::from_hex(parts.next().unwrap()).unwrap();
            let tomb = parts.next() == Some("tombstone");
            let target = parts.next().map(|t| EntryId::from_hex(t).unwrap());
            acked.push((id, tomb, target));
            seen += 1;
            if seen >= stop_after {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let mut l = Ledger::open(SqliteStore::open(&path).unwrap(), signer()).unwrap();
        for (id, tomb, target) in &acked {
            assert!(
                l.index_of(id).is_some(),
                "round {round}: acknowledged {id} lost"
            );
            if *tomb {
                assert!(
                    l.is_tombstoned(&target.unwrap()),
                    "round {round}: tombstone not in force"
                );
            }
        }
        let r = full_audit(&mut l);
        assert!(r.is_clean(), "round {round}: {:?}", r.failures);
        assert_eq!(r.entries, l.len());
    }
}

/// The writer killed by [`killed_writers_lose_nothing_acknowledged`]; does nothing alone.
#[test]
#[ignore = "child process of killed_writers_lose_nothing_acknowledged"]
fn crash_child() {
    let Some(path) = std::env::var_os(CHILD_LEDGER) else {
        return;
    };
    let round: u64 = std::env::var("MEMLINEAGE_CRASH_ROUND")
        .unwrap()
        .parse()
        .unwrap();
    let mut l = Ledger::open(SqliteStore::open(Path::new(&path)).unwrap(), signer()).unwrap();
    let key = agent();
    let mut prev = Vec::new();
    for i in 0..10_000 {
        let s = round * 100_000 + i;
        let target = if s % 7 == 6 && prev.len() >= 3 {
            Some(prev[prev.len() - 3])
        } else {
            None
        };
        let (id, tomb) = step(&mut l, &key, s, &mut prev).unwrap();
        match (tomb, target) {
            (true, Some(t)) => println!("ACK {id} tombstone {t}"),
            _ => println!("ACK {id} fact"),
        }
    }
}

fn fault_run<S: Store>(inner: S, fail_at: u64, after_commit: bool) {
    let store = Faulty {
        fail_append_at: Some(fail_at),
        after_commit,
        ..Faulty::new(inner)
    };
    let mut l = Ledger::create(store, signer(), LabelPolicy::default()).unwrap();
    let key = agent();
    let mut prev = Vec::new();
    let mut failed = false;
    // Call 0 is the binding; a failure there is retried like any other.
    while l.bind(key.key_id(), Role::Agent, "agent").is_err() {
        failed = true;
    }
    for s in 0..25u64 {
        let before = l.len();
        if let Err(e) = step(&mut l, &key, s, &mut prev) {
            assert!(matches!(e, LedgerError::Store(StoreError::Io(_))), "{e}");
            // The injected fault: nothing half-applied in memory.
            failed = true;
            assert_eq!(
                l.len(),
                before,
                "fail_at {fail_at}: ledger advanced on a failed append"
            );
            // The next append (retried) succeeds, catching up if the data was committed.
            let (id, _) = step(&mut l, &key, s + 1000, &mut prev).unwrap();
            assert!(l.index_of(&id).is_some());
        }
    }
    assert!(
        failed || fail_at > 30,
        "fail_at {fail_at}: the fault was never hit"
    );
    let r = full_audit(&mut l);
    assert!(
        r.is_clean(),
        "fail_at {fail_at} after_commit {after_commit}: {:?}",
        r.failures
    );
}

#[test]
fn every_append_failing_in_turn_leaves_a_consistent_ledger() {
    for fail_at in 0..26 {
        for after_commit in [false, true] {
            fault_run(MemoryStore::default(), fail_at, after_commit);
            fault_run(
                SqliteStore::open_in_memory().unwrap(),
                fail_at,
                after_commit,
            );
        }
    }
}

#[test]
fn a_failed_append_is_reported_as_a_store_error() {
    let store = Faulty {
        fail_append_at: Some(1),
        ..Faulty::new(MemoryStore::default())
    };
    let mut l = Ledger::create(store, signer(), LabelPolicy::default()).unwrap();
    let key = agent();
    l.bind(key.key_id(), Role::Agent, "agent").unwrap();
    let e = ProvEntry::new(key.key_id(), Kind::Fact, b"x");
    let err = l.append(e, &key, b"x").unwrap_err();
    assert!(
        matches!(err, LedgerError::Store(StoreError::Io(_))),
        "{err}"
    );
    assert_eq!(err.to_string(), "io: injected fault");
}
