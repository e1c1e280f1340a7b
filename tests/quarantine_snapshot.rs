//! The quarantine snapshot (`spec/lineage.md` §5.3): a handle that opens a ledger with an
//! active flag restores the quarantined set a key holder stored instead of reading every entry
//! after the flag's source. The set it ends with must be exactly the one the full rescan gives
//! (a property test over random lineages, flags and releases on a real SQLite file), whatever a
//! store-only attacker does to the stored snapshot (forged, from another log key, replayed from
//! before a later flag or from an earlier size); and the open must read a bounded number of
//! entries however far back the flag's source lies.

#[path = "common/faulty_store.rs"]
mod faulty_store;

use faulty_store::Faulty;
use memlineage::lineage::quarantine::Reach;
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Parent, ProvEntry, Role, Weight, WriterKey};
use memlineage::store::{SqliteStore, Store};
use memlineage::Ledger;
use proptest::prelude::*;
use std::path::Path;

const META: &str = "quarantine_seal";

fn signer() -> LogSigner {
    LogSigner::new("test.example/qsnap", WriterKey::for_label("qsnap/log")).unwrap()
}

struct Keys {
    user: WriterKey,
    tool: WriterKey,
    agent: WriterKey,
}

fn keys() -> Keys {
    Keys {
        user: WriterKey::for_label("qsnap/user"),
        tool: WriterKey::for_label("qsnap/tool"),
        agent: WriterKey::for_label("qsnap/agent"),
    }
}

fn create(path: &Path) -> (Ledger<SqliteStore>, Keys) {
    let mut l = Ledger::create(
        SqliteStore::open(path).unwrap(),
        signer(),
        LabelPolicy::default(),
    )
    .unwrap();
    let k = keys();
    l.bind(k.user.key_id(), Role::User, "user").unwrap();
    l.bind(k.tool.key_id(), Role::Tool, "tool").unwrap();
    l.bind(k.agent.key_id(), Role::Agent, "agent").unwrap();
    (l, k)
}

/// One step of a random history.
#[derive(Clone, Debug)]
enum Step {
    /// A prompt (`true`) or a tool output.
    Leaf(bool),
    /// A memory of up to three earlier entries (by position modulo the count), each edge
    /// strong or weak.
    Memory(Vec<(usize, bool)>),
    /// A flag of an earlier entry, reach all (`true`) or strong.
    Flag(usize, bool),
    /// A release of an earlier active flag.
    Release(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => any::<bool>().prop_map(Step::Leaf),
        5 => prop::collection::vec((any::<usize>(), any::<bool>()), 1..4).prop_map(Step::Memory),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, a)| Step::Flag(i, a)),
        1 => any::<usize>().prop_map(Step::Release),
    ]
}

/// Plays `steps` into `l`; returns the ids of the content entries and the ledger's
/// (snapshot value, size) after each append.
fn play(l: &mut Ledger<SqliteStore>, k: &Keys, steps: &[Step]) -> (Vec<EntryId>, Vec<String>) {
    let mut ids: Vec<EntryId> = Vec::new();
    let mut flags: Vec<EntryId> = Vec::new();
    let mut saved = Vec::new();
    for (n, s) in steps.iter().enumerate() {
        match s {
            Step::Leaf(prompt) => {
                let text = format!("leaf {n}");
                let (key, kind) = if *prompt {
                    (&k.user, Kind::Prompt)
                } else {
                    (&k.tool, Kind::ToolResult)
                };
                let e = ProvEntry::new(key.key_id(), kind, text.as_bytes());
                ids.push(l.append(e, key, text.as_bytes()).unwrap().id);
            }
            Step::Memory(parents) if !ids.is_empty() => {
                let mut ps: Vec<Parent> = parents
                    .iter()
                    .map(|(i, strong)| Parent {
                        id: ids[i % ids.len()],
                        weight: if *strong {
                            Weight::ONE
                        } else {
                            Weight::new(100_000).unwrap()
                        },
                    })
                    .collect();
                ps.sort_by_key(|p| p.id);
                ps.dedup_by_key(|p| p.id);
                let text = format!("memory {n}");
                let e = ProvEntry::new(k.agent.key_id(), Kind::Summary, text.as_bytes())
                    .with_parents(ps);
                ids.push(l.append(e, &k.agent, text.as_bytes()).unwrap().id);
            }
            Step::Flag(i, all) if !ids.is_empty() => {
                let reach = if *all { Reach::All } else { Reach::Strong };
                let why = format!("advisory {n}");
                let f = l.flag(ids[i % ids.len()], reach, &k.user, &why).unwrap();
                flags.push(f.id);
            }
            Step::Release(i) if !flags.is_empty() => {
                let f = flags.remove(i % flags.len());
                l.release(f, &k.user, &format!("cleared {n}")).unwrap();
            }
            _ => continue,
        }
        if let Ok(Some(v)) = l.store().meta(META) {
            saved.push(v);
        }
    }
    (ids, saved)
}

/// The quarantined entries among `ids` by a handle of `path` that opens with the stored
/// snapshot as it is, and by one that opens with it removed (the full rescan).
fn quarantined(path: &Path, ids: &[EntryId]) -> (Vec<bool>, Vec<bool>) {
    let with = Ledger::open(SqliteStore::open(path).unwrap(), signer()).unwrap();
    let got: Vec<bool> = ids.iter().map(|id| with.is_quarantined(id)).collect();
    drop(with);
    let stored = SqliteStore::open(path).unwrap().meta(META).unwrap();
    let mut store = SqliteStore::open(path).unwrap();
    store.set_meta(META, "none").unwrap();
    let without = Ledger::open(store, signer()).unwrap();
    let want: Vec<bool> = ids.iter().map(|id| without.is_quarantined(id)).collect();
    drop(without);
    if let Some(v) = stored {
        SqliteStore::open(path).unwrap().set_meta(META, &v).unwrap();
    }
    (got, want)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The set restored from a snapshot (and from every snapshot the history stored, replayed
    /// by a store-only attacker) is the full rescan's.
    #[test]
    fn a_restored_quarantine_is_the_full_rescans(steps in prop::collection::vec(step(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.ledger");
        let (mut l, k) = create(&path);
        let (ids, saved) = play(&mut l, &k, &steps);
        drop(l);
        let (got, want) = quarantined(&path, &ids);
        prop_assert_eq!(&got, &want);
        for old in saved {
            SqliteStore::open(&path).unwrap().set_meta(META, &old).unwrap();
            let with = Ledger::open(SqliteStore::open(&path).unwrap(), signer()).unwrap();
            let replayed: Vec<bool> = ids.iter().map(|id| with.is_quarantined(id)).collect();
            prop_assert_eq!(&replayed, &want, "an older snapshot replayed: {}", old);
        }
    }
}

/// A ledger of `n` pages after an early page that is flagged (reach all) and a memory of it:
/// returns the flagged page, the memory and the last page.
fn flagged_early(path: &Path, n: usize) -> (EntryId, EntryId, EntryId) {
    let (mut l, k) = create(path);
    let text = b"advisory target";
    let e = ProvEntry::new(k.tool.key_id(), Kind::ToolResult, &text[..]);
    let bad = l.append(e, &k.tool, text).unwrap().id;
    let mut last = bad;
    for i in 0..n {
        let text = format!("page {i}");
        let e = ProvEntry::new(k.tool.key_id(), Kind::ToolResult, text.as_bytes());
        last = l.append(e, &k.tool, text.as_bytes()).unwrap().id;
    }
    l.flag(bad, Reach::All, &k.user, "advisory").unwrap();
    let text = b"memory of the flagged page";
    let e = ProvEntry::new(k.agent.key_id(), Kind::Summary, &text[..]).with_parents(vec![Parent {
        id: bad,
        weight: Weight::new(100_000).unwrap(),
    }]);
    let memory = l.append(e, &k.agent, text).unwrap().id;
    (bad, memory, last)
}

/// Opening reads a bounded number of entries, however many lie after the flagged source; with
/// the snapshot gone it reads every one of them (the full rescan), and both answer the same.
#[test]
fn an_open_with_an_early_flag_reads_a_bounded_number_of_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.ledger");
    let (bad, memory, last) = flagged_early(&path, 2_000);
    let open = || {
        let l = Ledger::open(Faulty::new(SqliteStore::open(&path).unwrap()), signer()).unwrap();
        assert!(l.is_quarantined(&bad) && l.is_quarantined(&memory));
        assert!(!l.is_quarantined(&last));
        l.store().reads().1
    };
    let read = open();
    assert!(read < 64, "the open read {read} entries' bytes");
    SqliteStore::open(&path)
        .unwrap()
        .set_meta(META, "none")
        .unwrap();
    let rescanned = open();
    assert!(
        rescanned > 2_000,
        "without a snapshot the open read {rescanned}"
    );
}

/// A snapshot forged without the key (an empty set, or another log key's) or taken under other
/// flags is not used: the flagged page and its memory stay quarantined.
#[test]
fn a_forged_or_stale_snapshot_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.ledger");
    let (bad, memory, _) = flagged_early(&path, 10);
    let stored = SqliteStore::open(&path)
        .unwrap()
        .meta(META)
        .unwrap()
        .unwrap();
    let check = |value: &str| {
        SqliteStore::open(&path)
            .unwrap()
            .set_meta(META, value)
            .unwrap();
        let l = Ledger::open(SqliteStore::open(&path).unwrap(), signer()).unwrap();
        assert!(l.is_quarantined(&bad), "source freed by {value}");
        assert!(l.is_quarantined(&memory), "memory freed by {value}");
    };
    // The same value with its entries cut out (count and hex) and the tag kept.
    let parts: Vec<&str> = stored.split(' ').collect();
    check(&format!(
        "v1 {} {} {} 0  {}",
        parts[1], parts[2], parts[3], parts[6]
    ));
    // Another log key's snapshot of an empty set under the same chain cannot be made without
    // that key either; one from another ledger's history is under other effects.
    let other = dir.path().join("other.ledger");
    let (mut o, k) = create(&other);
    let text = b"x";
    let e = ProvEntry::new(k.tool.key_id(), Kind::ToolResult, &text[..]);
    let x = o.append(e, &k.tool, text).unwrap().id;
    o.flag(x, Reach::Strong, &k.user, "other").unwrap();
    check(
        &SqliteStore::open(&other)
            .unwrap()
            .meta(META)
            .unwrap()
            .unwrap(),
    );
    // Garbage.
    check("v1 1 2 3");
    check(&stored.replace("v1", "v2"));
    // And the real one still gives the same answer.
    check(&stored);
}

/// Attack review 48: the snapshot binds its size and the effects chain, not which entries lie
/// below its size. Under an older seal (replayed: it verifies) the rows after it are verified
/// from their signed bytes, and their positions are only bound by a tag they may drop (and by
/// a signed checkpoint, when one covers them). A store-only attacker who swaps a memory of the
/// flagged page, appended after the snapshot, with a page below the snapshot's size, keeping
/// every row with effects in place, must not free the memory: the snapshot is only used when
/// the handle's seal covers it (the rows below it are then the key holder's, by their tags).
#[test]
fn a_row_moved_below_the_snapshot_under_an_older_seal_stays_quarantined() {
    swap_a_memory_below_the_snapshot(true);
}

/// The same swap under the current seal (held before the fix too): the page moved after the
/// snapshot's size carries no tag for its place, so the feed fails and every entry it cannot
/// place, the memory among them (its row does not verify either), counts as quarantined.
#[test]
fn a_row_moved_below_the_snapshot_under_the_seal_stays_quarantined() {
    swap_a_memory_below_the_snapshot(false);
}

/// Swaps a memory of a flagged page, appended after the stored snapshot, with a page below the
/// snapshot's size (tags dropped, checkpoints deleted), under an older seal (`older`) or the
/// current one; the memory must stay quarantined with and without the snapshot.
fn swap_a_memory_below_the_snapshot(older: bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.ledger");
    let (mut l, k) = create(&path);
    let text = b"advisory target";
    let e = ProvEntry::new(k.tool.key_id(), Kind::ToolResult, &text[..]);
    let bad = l.append(e, &k.tool, text).unwrap();
    let older_seal = l.store().meta("label_seal").unwrap().unwrap();
    let text = b"a page";
    let e = ProvEntry::new(k.tool.key_id(), Kind::ToolResult, &text[..]);
    let page = l.append(e, &k.tool, text).unwrap();
    l.flag(bad.id, Reach::All, &k.user, "advisory").unwrap();
    let snapshot = l.store().meta(META).unwrap().unwrap();
    let text = b"memory of the flagged page";
    let e = ProvEntry::new(k.agent.key_id(), Kind::Summary, &text[..]).with_parents(vec![Parent {
        id: bad.id,
        weight: Weight::ONE,
    }]);
    let memory = l.append(e, &k.agent, text).unwrap();
    // The memory came after the snapshot, which is still the stored one.
    assert_eq!(l.store().meta(META).unwrap().unwrap(), snapshot);
    assert!(l.is_quarantined(&memory.id));
    drop(l);
    assert!(page.index < memory.index);
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute_batch("DELETE FROM checkpoints").unwrap();
    if older {
        db.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'label_seal'",
            [&older_seal],
        )
        .unwrap();
    }
    // Swap the two rows (through a free index), without their tags.
    let (p, m) = (page.index as i64, memory.index as i64);
    db.execute(
        "UPDATE entries SET idx = 1000000, tag = NULL WHERE idx = ?1",
        [p],
    )
    .unwrap();
    db.execute(
        "UPDATE entries SET idx = ?1, tag = NULL WHERE idx = ?2",
        [p, m],
    )
    .unwrap();
    db.execute("UPDATE entries SET idx = ?1 WHERE idx = 1000000", [m])
        .unwrap();
    drop(db);
    // Without the snapshot, the full rescan quarantines the memory at its new place.
    let stored = SqliteStore::open(&path)
        .unwrap()
        .meta(META)
        .unwrap()
        .unwrap();
    SqliteStore::open(&path)
        .unwrap()
        .set_meta(META, "none")
        .unwrap();
    // Freed: an open that counts the memory not quarantined (one that refuses the store,
    // fail closed, frees nothing).
    let freed = |path: &Path| match Ledger::open(SqliteStore::open(path).unwrap(), signer()) {
        Ok(l) => !(l.is_quarantined(&bad.id) && l.is_quarantined(&memory.id)),
        Err(_) => false,
    };
    assert!(!freed(&path), "the rescan frees it");
    SqliteStore::open(&path)
        .unwrap()
        .set_meta(META, &stored)
        .unwrap();
    assert!(
        !freed(&path),
        "the memory of the flagged page moved below the snapshot is freed"
    );
    if older {
        // Under the older seal the store is read (the moved rows verify from their bytes).
        assert!(Ledger::open(SqliteStore::open(&path).unwrap(), signer()).is_ok());
    }
}

/// Attack review 48: a snapshot bound only to its size and the effects chain opened in a
/// copy of the ledger file that the key holder kept writing to (a fork: a backup restored, a
/// migration whose source stayed in use), which has the same rows with effects at the same
/// indexes but other entries below the snapshot's size: a memory of the flagged page written
/// to one fork only was freed there by the other's snapshot. The tag now binds the entry at
/// the snapshot's last leaf, as the opener believes it (below its seal, by its row tag).
#[test]
fn a_snapshot_from_a_fork_of_the_ledger_frees_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.ledger");
    let (bad, _, _) = flagged_early(&path, 2);
    let fork = dir.path().join("fork.ledger");
    std::fs::copy(&path, &fork).unwrap();
    let k = keys();
    let pages = |l: &mut Ledger<SqliteStore>, what: &str| {
        for i in 0..300 {
            let text = format!("{what} {i}");
            let e = ProvEntry::new(k.tool.key_id(), Kind::ToolResult, text.as_bytes());
            l.append(e, &k.tool, text.as_bytes()).unwrap();
        }
    };
    // The original goes on with pages and stores a snapshot past them.
    let mut a = Ledger::open(SqliteStore::open(&path).unwrap(), signer()).unwrap();
    pages(&mut a, "later page");
    drop(a);
    // The fork gets a memory of the flagged page, then as many pages.
    let mut b = Ledger::open(SqliteStore::open(&fork).unwrap(), signer()).unwrap();
    let text = b"the fork's memory of the flagged page";
    let e = ProvEntry::new(k.agent.key_id(), Kind::Summary, &text[..]).with_parents(vec![Parent {
        id: bad,
        weight: Weight::ONE,
    }]);
    let memory = b.append(e, &k.agent, text).unwrap().id;
    pages(&mut b, "fork page");
    assert!(b.is_quarantined(&memory));
    drop(b);
    let theirs = SqliteStore::open(&path)
        .unwrap()
        .meta(META)
        .unwrap()
        .unwrap();
    SqliteStore::open(&fork)
        .unwrap()
        .set_meta(META, &theirs)
        .unwrap();
    let l = Ledger::open(SqliteStore::open(&fork).unwrap(), signer()).unwrap();
    assert!(
        l.is_quarantined(&memory),
        "the other fork's snapshot freed the memory"
    );
}

/// Attack review 48 (held): two handles on one file, each appending in turn past the snapshot
/// interval (memories over strong and weak edges of a page one flags, pages, a strong flag, a
/// release by the other handle), each catching up with the other's rows: every snapshot
/// either stores, replayed, gives the full rescan's set, as does an open with the last one.
#[test]
fn snapshots_stored_by_two_handles_in_turn_give_the_full_rescans_set() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.ledger");
    let (mut a, k) = create(&path);
    let mut b = Ledger::open(SqliteStore::open(&path).unwrap(), signer()).unwrap();
    let mut ids = Vec::new();
    let mut saved = Vec::new();
    let mut flags = Vec::new();
    for n in 0..700usize {
        let l = if n % 3 == 0 { &mut a } else { &mut b };
        l.refresh().unwrap();
        let text = format!("entry {n}");
        let id = if n % 5 == 0 || ids.is_empty() {
            let e = ProvEntry::new(k.tool.key_id(), Kind::ToolResult, text.as_bytes());
            l.append(e, &k.tool, text.as_bytes()).unwrap().id
        } else {
            let mut ps = vec![
                Parent {
                    id: ids[(n * 7) % ids.len()],
                    weight: Weight::ONE,
                },
                Parent {
                    id: ids[(n * 13) % ids.len()],
                    weight: Weight::new(100_000).unwrap(),
                },
            ];
            ps.sort_by_key(|p| p.id);
            ps.dedup_by_key(|p| p.id);
            let e =
                ProvEntry::new(k.agent.key_id(), Kind::Summary, text.as_bytes()).with_parents(ps);
            l.append(e, &k.agent, text.as_bytes()).unwrap().id
        };
        ids.push(id);
        match n {
            40 => flags.push(l.flag(ids[3], Reach::All, &k.user, "a").unwrap().id),
            300 => flags.push(l.flag(ids[10], Reach::Strong, &k.user, "b").unwrap().id),
            450 => {
                let f = flags.remove(0);
                l.release(f, &k.user, "cleared").unwrap();
            }
            _ => {}
        }
        if let Ok(Some(v)) = l.store().meta(META) {
            if saved.last() != Some(&v) {
                saved.push(v);
            }
        }
    }
    drop((a, b));
    assert!(saved.len() > 3, "{} snapshots", saved.len());
    let (got, want) = quarantined(&path, &ids);
    assert!(want.iter().any(|q| *q) && want.iter().any(|q| !*q));
    assert_eq!(got, want);
    // The last snapshot is used (the open reads fewer entries than the rescan).
    let reads = || {
        let l = Ledger::open(Faulty::new(SqliteStore::open(&path).unwrap()), signer()).unwrap();
        l.store().reads().1
    };
    let last = SqliteStore::open(&path)
        .unwrap()
        .meta(META)
        .unwrap()
        .unwrap();
    let with = reads();
    SqliteStore::open(&path)
        .unwrap()
        .set_meta(META, "none")
        .unwrap();
    assert!(with < reads(), "the last snapshot was not used");
    SqliteStore::open(&path)
        .unwrap()
        .set_meta(META, &last)
        .unwrap();
    for old in saved {
        SqliteStore::open(&path)
            .unwrap()
            .set_meta(META, &old)
            .unwrap();
        let with = Ledger::open(SqliteStore::open(&path).unwrap(), signer()).unwrap();
        let replayed: Vec<bool> = ids.iter().map(|id| with.is_quarantined(id)).collect();
        assert_eq!(replayed, want, "an older snapshot replayed: {old}");
    }
}
