//! The untrusted path behind a label (`spec/lineage.md` §6) from a handle that keeps the signed
//! edges of the entries it verified (`Ledger::untrusted_path`, issue 32) against the same search
//! reading every entry afresh through `Ledger::get`: for any lineage, the same path or the same
//! error — after a store-only edit that puts another entry's bytes in a row (the kept edges
//! must not answer for bytes that are not the entry), while reads fail, and after the handle
//! forgets what it verified.

#[path = "common/faulty_store.rs"]
mod faulty_store;
use faulty_store::Faulty;
#[path = "common/ledger_support.rs"]
mod ledger_support;
use ledger_support::picked_parents;

use memlineage::lineage::path::{untrusted_path, PathView};
use memlineage::lineage::{Label, LabelPolicy};
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Parent, ProvEntry, Role, WriterKey};
use memlineage::store::MemoryStore;
use memlineage::{Ledger, LedgerError};
use proptest::prelude::*;

fn signer() -> LogSigner {
    LogSigner::new("test.example/path-kept", WriterKey::for_label("pk/log")).unwrap()
}

/// Writers and what they write: a user's prompt (trusted), an agent's summary (derived), a
/// tool's output and a tool's `context` stand-in (both External).
const WRITERS: &[(Role, &str, Kind)] = &[
    (Role::User, "user", Kind::Prompt),
    (Role::Agent, "agent", Kind::Summary),
    (Role::Tool, "tool:get_webpage", Kind::ToolResult),
    (Role::Tool, "tool:context", Kind::Context),
];

fn key(name: &str) -> WriterKey {
    WriterKey::for_label(&format!("pk/{name}"))
}

/// One entry: its writer and its parents (earlier entries by position modulo how many there
/// are, weights in tenths).
#[derive(Clone, Debug)]
struct Spec {
    writer: usize,
    parents: Vec<(usize, u8)>,
}

/// What happens between two rounds of paths.
#[derive(Clone, Debug)]
enum Change {
    /// Nothing.
    Nothing,
    /// The bytes stored at one position read as another's (or stop doing so).
    Substitute(Option<(usize, usize)>),
    /// Every entry read fails (or stops failing).
    FailReads(bool),
    /// The handle forgets every entry it verified.
    Forget,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0..WRITERS.len(),
        proptest::collection::vec((0usize..64, 1u8..=10), 0..3),
    )
        .prop_map(|(writer, parents)| Spec { writer, parents })
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        Just(Change::Nothing),
        proptest::option::of((0usize..64, 0usize..64)).prop_map(Change::Substitute),
        any::<bool>().prop_map(Change::FailReads),
        Just(Change::Forget),
    ]
}

fn build(specs: &[Spec]) -> (Ledger<Faulty<MemoryStore>>, Vec<EntryId>) {
    let store = Faulty::new(MemoryStore::default());
    let mut l = Ledger::create(store, signer(), LabelPolicy::default()).unwrap();
    for (role, name, _) in WRITERS {
        l.bind(key(name).key_id(), *role, name).unwrap();
    }
    let mut ids: Vec<EntryId> = Vec::new();
    for (n, s) in specs.iter().enumerate() {
        let (_, name, kind) = WRITERS[s.writer];
        let k = key(name);
        let mut parents = picked_parents(&ids, &s.parents);
        parents.sort_by_key(|p| p.id);
        let text = format!("entry {n} by {name}");
        let e = ProvEntry::new(k.key_id(), kind, text.as_bytes())
            .with_parents(parents)
            .with_time_ms(1_700_000_000_000 + n as u64);
        ids.push(l.append(e, &k, text.as_bytes()).unwrap().id);
    }
    l.checkpoint().unwrap();
    (l, ids)
}

/// The ledger's entries read afresh at every step: [`Ledger::get`], nothing kept.
struct Afresh<'a>(&'a Ledger<Faulty<MemoryStore>>);

impl PathView for Afresh<'_> {
    type Error = LedgerError;

    fn label_of(&self, id: &EntryId) -> Option<Label> {
        self.0.label(id)
    }

    fn parents_of(&self, id: &EntryId) -> Result<Vec<Parent>, LedgerError> {
        Ok(self.0.get(id)?.entry().parents.clone())
    }

    fn is_unknown_context(&self, id: &EntryId) -> bool {
        self.0
            .get(id)
            .is_ok_and(|e| e.entry().kind == Kind::Context)
    }
}

/// The search afresh, as `Ledger::untrusted_path` states it.
fn afresh(l: &Ledger<Faulty<MemoryStore>>, id: &EntryId) -> Result<Vec<EntryId>, String> {
    if l.label(id).is_none() {
        return Err(format!("{:?}", LedgerError::UnknownEntry(*id)));
    }
    untrusted_path(&Afresh(l), &l.label_policy(), id).map_err(|e| format!("{e:?}"))
}

fn kept(l: &Ledger<Faulty<MemoryStore>>, id: &EntryId) -> Result<Vec<EntryId>, String> {
    l.untrusted_path(id).map_err(|e| format!("{e:?}"))
}

/// Every entry's path, twice from the handle (the second from what the first kept) and once
/// afresh, in an order that alternates which one reads first.
fn compare(l: &Ledger<Faulty<MemoryStore>>, ids: &[EntryId], round: usize) {
    for (i, id) in ids.iter().enumerate() {
        let (a, b, c) = if (i + round).is_multiple_of(2) {
            let a = kept(l, id);
            (a, kept(l, id), afresh(l, id))
        } else {
            let c = afresh(l, id);
            (kept(l, id), kept(l, id), c)
        };
        assert_eq!(a, c, "entry {i}, round {round}: the kept path differs");
        assert_eq!(
            b, c,
            "entry {i}, round {round}: the path read again differs"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn the_kept_path_is_the_path_read_afresh(
        specs in proptest::collection::vec(spec(), 1..24),
        changes in proptest::collection::vec(change(), 1..6),
    ) {
        let (mut l, ids) = build(&specs);
        // An unknown id is an error both ways.
        let unknown = EntryId([0xEE; 32]);
        prop_assert_eq!(kept(&l, &unknown), afresh(&l, &unknown));
        compare(&l, &ids, 0);
        for (round, c) in changes.iter().enumerate() {
            match c {
                Change::Nothing => {}
                Change::Substitute(s) => {
                    // The tree's first entries are the four bindings: positions count from them.
                    let at = |p: usize| l.index_of(&ids[p % ids.len()]).unwrap();
                    l.store().substitute.set(s.map(|(i, j)| (at(i), at(j))));
                }
                Change::FailReads(on) => l.store().fail_bytes.set(*on),
                Change::Forget => l.forget_verified(),
            }
            compare(&l, &ids, round + 1);
        }
    }
}

/// The kept edges of an entry are not an answer for another entry's bytes: once the path has
/// been read (and the edges kept), a row made to hold another entry's bytes is not the entry,
/// as a fresh read says.
#[test]
fn kept_edges_do_not_answer_for_substituted_bytes() {
    let specs = [
        Spec {
            writer: 2,
            parents: vec![],
        },
        Spec {
            writer: 1,
            parents: vec![(0, 10)],
        },
        Spec {
            writer: 1,
            parents: vec![(1, 10)],
        },
    ];
    let (l, ids) = build(&specs);
    let path = kept(&l, &ids[2]).unwrap();
    assert_eq!(path, vec![ids[0], ids[1], ids[2]]);
    // The summary in the middle now reads as the page's bytes.
    let (mid, page) = (l.index_of(&ids[1]).unwrap(), l.index_of(&ids[0]).unwrap());
    l.store().substitute.set(Some((mid, page)));
    let fresh = afresh(&l, &ids[2]);
    assert!(fresh.is_err(), "a fresh read refuses the bytes: {fresh:?}");
    assert_eq!(kept(&l, &ids[2]), fresh);
    l.store().substitute.set(None);
    assert_eq!(kept(&l, &ids[2]), Ok(path));
}
