//! Random sequences of ledger operations (proptest: the stable-Rust twin of the `ledger_ops`
//! fuzz target). After every sequence the ledger agrees with a naive model of the lineage rules,
//! every proof verifies, and a full offline audit is clean. Invalid operations are typed errors
//! that change nothing.

use memlineage::audit::audit;
use memlineage::lineage::admission::AdmissionError;
use memlineage::lineage::{LabelPolicy, WeakRule};
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Parent, ProvEntry, Role, Weight, WriterKey};
use memlineage::store::{MemoryStore, Store};
use memlineage::{Ledger, LedgerError};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// Append by writer `w % 3` with parents `(i % len, weight)`.
    Append { w: u8, parents: Vec<(usize, u32)> },
    /// Tombstone entry `i % len` by the user.
    Tombstone { i: usize },
    /// Append naming a parent that does not exist.
    GhostParent,
    /// Prove entry `i % len` and check the proof.
    Prove { i: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u8>(), proptest::collection::vec((any::<usize>(), 0u32..=1_000_000), 0..4))
            .prop_map(|(w, parents)| Op::Append { w, parents }),
        1 => any::<usize>().prop_map(|i| Op::Tombstone { i }),
        1 => Just(Op::GhostParent),
        1 => any::<usize>().prop_map(|i| Op::Prove { i }),
    ]
}

/// The model: the rules of spec/lineage.md written as plainly as possible.
struct Model {
    tau: u32,
    fail_open: bool,
    /// (label code 0..=3, tombstoned) per appended non-keyring entry, by position.
    entries: Vec<(u8, bool)>,
}

impl Model {
    fn label(&self, untrusted_writer: bool, parents: &[(usize, u32)]) -> u8 {
        if untrusted_writer {
            return 3;
        }
        if parents.is_empty() {
            return 0;
        }
        let lift = |l: u8| if l <= 1 { 1 } else { 2 };
        let strong: Vec<u8> = parents
            .iter()
            .filter(|(_, w)| *w > self.tau)
            .map(|(i, _)| lift(self.entries[*i].0))
            .collect();
        match strong.iter().max() {
            Some(m) => *m,
            None if self.fail_open => 0,
            None => parents
                .iter()
                .map(|(i, _)| lift(self.entries[*i].0))
                .max()
                .unwrap_or(0),
        }
    }
}

fn run(ops: Vec<Op>, tau: u32, rule: WeakRule) {
    let policy = LabelPolicy {
        tau: Weight::new(u64::from(tau)).unwrap(),
        weak_rule: rule,
    };
    let signer = LogSigner::new("ops.example/log", WriterKey::for_label("ops/log")).unwrap();
    let mut l = Ledger::create(MemoryStore::default(), signer, policy).unwrap();
    let keys = [
        WriterKey::for_label("ops/user"),
        WriterKey::for_label("ops/agent"),
        WriterKey::for_label("ops/tool"),
    ];
    let roles = [Role::User, Role::Agent, Role::Tool];
    for (k, r) in keys.iter().zip(roles) {
        l.bind(k.key_id(), r, r.name()).unwrap();
    }
    let mut model = Model {
        tau,
        fail_open: rule == WeakRule::FailOpen,
        entries: Vec::new(),
    };
    let mut ids: Vec<EntryId> = Vec::new();
    for (n, op) in ops.into_iter().enumerate() {
        let before = l.len();
        match op {
            Op::Append { w, parents } => {
                let w = usize::from(w % 3);
                let mut ps: Vec<(usize, u32)> = if ids.is_empty() {
                    vec![]
                } else {
                    parents
                        .into_iter()
                        .map(|(i, wt)| (i % ids.len(), wt))
                        .collect()
                };
                ps.sort_by_key(|(i, _)| ids[*i]);
                ps.dedup_by_key(|(i, _)| *i);
                let text = format!("op {n}");
                let e = ProvEntry::new(keys[w].key_id(), Kind::Fact, text.as_bytes()).with_parents(
                    ps.iter()
                        .map(|(i, wt)| Parent {
                            id: ids[*i],
                            weight: Weight::new(u64::from(*wt)).unwrap(),
                        })
                        .collect(),
                );
                let a = l.append(e, &keys[w], text.as_bytes()).unwrap();
                let want = model.label(roles[w].is_untrusted(), &ps);
                assert_eq!(a.label.code(), want, "op {n}: parents {ps:?}");
                model.entries.push((want, false));
                ids.push(a.id);
            }
            Op::Tombstone { i } if !ids.is_empty() => {
                let i = i % ids.len();
                match l.tombstone(ids[i], &keys[0], &format!("forget {n}")) {
                    Ok(_) => model.entries[i].1 = true,
                    Err(e) => panic!("op {n}: {e}"),
                }
            }
            Op::Tombstone { .. } => {}
            Op::GhostParent => {
                let e = ProvEntry::new(keys[1].key_id(), Kind::Fact, b"ghost").with_parents(vec![
                    Parent {
                        id: EntryId([0xee; 32]),
                        weight: Weight::ONE,
                    },
                ]);
                assert!(matches!(
                    l.append(e, &keys[1], b"ghost"),
                    Err(LedgerError::Admission(AdmissionError::UnknownParent(_)))
                ));
                assert_eq!(l.len(), before);
            }
            Op::Prove { i } if !ids.is_empty() => {
                let id = ids[i % ids.len()];
                let (proof, c) = l.prove_inclusion(&id).unwrap();
                c.verify_inclusion(&id, &proof).unwrap();
            }
            Op::Prove { .. } => {}
        }
    }
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(l.label(id).map(|x| x.code()), Some(model.entries[i].0));
        assert_eq!(l.is_tombstoned(id), model.entries[i].1);
    }
    let c = l.checkpoint().unwrap();
    let v = l.verifier().unwrap();
    let store = l.store();
    let metas = store.metas_from(0).unwrap();
    let entries = metas
        .iter()
        .map(|m| Ok::<_, String>((store.entry_bytes(m.index).unwrap().unwrap(), Some(m.label))));
    let r = audit(entries, &v, c.note(), policy, v.key_id()).unwrap();
    assert!(r.is_clean(), "{:?}", r.failures);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn ledger_agrees_with_the_model(
        ops in proptest::collection::vec(op(), 1..40),
        tau in prop_oneof![Just(0u32), Just(500_000), Just(999_999), Just(1_000_000), 0u32..=1_000_000],
        open in any::<bool>(),
    ) {
        run(ops, tau, if open { WeakRule::FailOpen } else { WeakRule::FailClosed });
    }
}
