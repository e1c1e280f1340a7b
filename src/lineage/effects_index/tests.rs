//! The effects index against a naive reference (the trie built from the sorted key set at
//! once), and every lookup under single changes.

use super::*;
use crate::record::{KeyBinding, Role};
use proptest::prelude::*;

fn entry(kind: Kind, subject: u8) -> ProvEntry {
    let mut e = ProvEntry {
        version: 1,
        writer: KeyId([9; 32]),
        kind,
        content_hash: crate::record::Hash32([0; 32]),
        source_hash: crate::record::Hash32([0; 32]),
        context_hash: crate::record::Hash32([0; 32]),
        parents: vec![],
        time_ms: 0,
        attribution: crate::record::Attribution::Coarse,
        target: None,
        binding: None,
    };
    if kind == Kind::Keyring {
        e.binding = Some(KeyBinding {
            key: KeyId([subject; 32]),
            role: Role::Tool,
            name: String::new(),
        });
    } else {
        e.target = Some(EntryId([subject; 32]));
    }
    e
}

fn subject_of(kind: Kind, s: u8) -> Subject {
    Subject::of(&entry(kind, s)).unwrap()
}

/// The root of the trie over `leaves` (key → effects), built at once from the sorted keys:
/// `spec/label-proof.md` §3.1 read as a recursive definition.
fn reference_root(leaves: &[(IndexKey, EffectsOf)]) -> [u8; 32] {
    fn build(sorted: &[(IndexKey, EffectsOf)]) -> [u8; 32] {
        if let [(k, v)] = sorted {
            return leaf_hash(k, v);
        }
        let (first, last) = (&sorted[0].0, &sorted[sorted.len() - 1].0);
        let bit = first.crit_bit(last).unwrap();
        let split = sorted.iter().position(|(k, _)| k.bit(bit) == 1).unwrap();
        node_hash(bit, &build(&sorted[..split]), &build(&sorted[split..]))
    }
    if leaves.is_empty() {
        return EMPTY_INDEX_ROOT;
    }
    let mut sorted = leaves.to_vec();
    sorted.sort_by_key(|(k, _)| *k);
    build(&sorted)
}

/// `(kind, subject byte)` pushed at leaf indexes 0, 1, …
fn build(items: &[(Kind, u8)]) -> EffectsIndex {
    let mut ix = EffectsIndex::default();
    for (i, (kind, s)) in items.iter().enumerate() {
        ix.push(i as u64, EntryId([i as u8; 32]), &entry(*kind, *s));
    }
    ix
}

fn leaves(items: &[(Kind, u8)]) -> Vec<(IndexKey, EffectsOf)> {
    let mut by: std::collections::BTreeMap<IndexKey, EffectsOf> = Default::default();
    for (i, (kind, s)) in items.iter().enumerate() {
        let e = Effect {
            index: i as u64,
            id: EntryId([i as u8; 32]),
            kind: *kind,
        };
        by.entry(subject_of(*kind, *s).index_key())
            .or_insert(EffectsOf::NONE)
            .push(&e);
    }
    by.into_iter().collect()
}

const KINDS: [Kind; 7] = [
    Kind::Keyring,
    Kind::Tombstone,
    Kind::Quarantine,
    Kind::QuarantineStrong,
    Kind::Release,
    Kind::Lease,
    Kind::Replacement,
];

fn items() -> impl Strategy<Value = Vec<(Kind, u8)>> {
    proptest::collection::vec((proptest::sample::select(KINDS.to_vec()), 0u8..24), 0..60)
}

proptest! {
    #[test]
    fn the_root_is_the_reference_root_and_every_lookup_verifies(items in items()) {
        let mut ix = build(&items);
        let c = ix.commitment();
        prop_assert_eq!(c.root, reference_root(&leaves(&items)));
        prop_assert_eq!(c.entries, items.len() as u64);
        for s in 0u8..26 {
            for kind in [Kind::Keyring, Kind::Tombstone] {
                let subject = subject_of(kind, s);
                let (lookup, effects) = ix.lookup(subject);
                let given = EffectsOf::over(&effects);
                prop_assert_eq!(verify_lookup(&c.root, &lookup, &given), Ok(()));
                let want: Vec<u64> = items.iter().enumerate()
                    .filter(|(_, (k, x))| subject_of(*k, *x) == subject)
                    .map(|(i, _)| i as u64).collect();
                prop_assert_eq!(effects.iter().map(|e| e.index).collect::<Vec<_>>(), want);
            }
        }
    }

    /// The trie of a set of keys is unique: subjects inserted in another order (each
    /// subject's own effects still in log order) give the same root.
    #[test]
    fn the_root_does_not_depend_on_the_order_of_subjects(items in items(), seed in any::<u64>()) {
        let mut by_subject: Vec<Vec<(usize, (Kind, u8))>> = Vec::new();
        for (i, it) in items.iter().enumerate() {
            let s = subject_of(it.0, it.1);
            match by_subject.iter_mut().find(|v| subject_of(v[0].1 .0, v[0].1 .1) == s) {
                Some(v) => v.push((i, *it)),
                None => by_subject.push(vec![(i, *it)]),
            }
        }
        let n = by_subject.len().max(1);
        by_subject.rotate_left((seed as usize) % n);
        let mut ix = EffectsIndex::default();
        for (i, (kind, s)) in by_subject.into_iter().flatten() {
            ix.push(i as u64, EntryId([i as u8; 32]), &entry(kind, s));
        }
        prop_assert_eq!(ix.commitment(), build(&items).commitment());
    }
}

#[test]
fn other_kinds_are_not_indexed() {
    let mut ix = EffectsIndex::default();
    for kind in [Kind::Prompt, Kind::Summary, Kind::Context, Kind::ToolResult] {
        let mut e = entry(Kind::Prompt, 1);
        e.kind = kind;
        ix.push(0, EntryId([1; 32]), &e);
    }
    assert_eq!(
        ix.commitment(),
        IndexCommitment {
            entries: 0,
            root: EMPTY_INDEX_ROOT
        }
    );
    let (lookup, effects) = ix.lookup(subject_of(Kind::Tombstone, 1));
    assert_eq!(lookup.end, LookupEnd::Empty);
    assert!(effects.is_empty());
    assert_eq!(
        verify_lookup(&EMPTY_INDEX_ROOT, &lookup, &EffectsOf::NONE),
        Ok(())
    );
}

/// A key and a target with the same 32 bytes are different subjects.
#[test]
fn keys_and_targets_are_separate_subjects() {
    let mut ix = build(&[(Kind::Keyring, 5)]);
    let root = ix.commitment().root;
    let (found, effects) = ix.lookup(subject_of(Kind::Keyring, 5));
    assert_eq!((found.end.clone(), effects.len()), (LookupEnd::Found, 1));
    let (other, none) = ix.lookup(subject_of(Kind::Tombstone, 5));
    assert!(matches!(other.end, LookupEnd::Other { .. }) && none.is_empty());
    assert_eq!(verify_lookup(&root, &other, &EffectsOf::NONE), Ok(()));
}

/// Every way of hiding, adding or changing an effect fails: the class each single change of a
/// lookup or of the effects given gets.
#[test]
fn changed_lookups_and_effects_are_refused() {
    let items: Vec<(Kind, u8)> = (0..40u8)
        .map(|i| match KINDS[usize::from(i) % 7] {
            Kind::Keyring => (Kind::Keyring, i),
            k => (k, i % 5),
        })
        .collect();
    let mut ix = build(&items);
    let root = ix.commitment().root;
    let flagged = subject_of(Kind::Quarantine, 2);
    let (lookup, effects) = ix.lookup(flagged);
    assert_eq!(lookup.end, LookupEnd::Found);
    assert!(effects.len() >= 3 && lookup.nodes.len() >= 2, "{lookup:?}");
    let given = EffectsOf::over(&effects);
    assert_eq!(verify_lookup(&root, &lookup, &given), Ok(()));
    // Dropped, added, reordered, re-kinded, moved effects.
    let mut variants: Vec<Vec<Effect>> = Vec::new();
    for i in 0..effects.len() {
        let mut v = effects.clone();
        v.remove(i);
        variants.push(v);
    }
    let mut v = effects.clone();
    v.push(Effect {
        index: 99,
        id: EntryId([99; 32]),
        kind: Kind::Release,
    });
    variants.push(v);
    let mut v = effects.clone();
    v.swap(0, 1);
    variants.push(v);
    let mut v = effects.clone();
    v[0].kind = Kind::Lease;
    variants.push(v);
    let mut v = effects.clone();
    v[1].index += 1;
    variants.push(v);
    for v in variants {
        let got = verify_lookup(&root, &lookup, &EffectsOf::over(&v));
        assert!(
            matches!(
                got,
                Err(LookupError::RootMismatch | LookupError::Count { .. })
            ),
            "{v:?}: {got:?}"
        );
    }
    // Every single-bit change of a sibling.
    for i in 0..lookup.nodes.len() {
        for b in 0..256 {
            let mut l = lookup.clone();
            l.nodes[i].1[b / 8] ^= 1 << (b % 8);
            assert_eq!(
                verify_lookup(&root, &l, &given),
                Err(LookupError::RootMismatch)
            );
        }
    }
    // A dropped node, a changed bit, swapped nodes.
    let mut l = lookup.clone();
    l.nodes.remove(0);
    assert_eq!(
        verify_lookup(&root, &l, &given),
        Err(LookupError::RootMismatch)
    );
    let mut l = lookup.clone();
    let last = l.nodes.len() - 1;
    l.nodes[last].0 += 1;
    assert_eq!(
        verify_lookup(&root, &l, &given),
        Err(LookupError::RootMismatch)
    );
    let mut l = lookup.clone();
    l.nodes.swap(0, 1);
    assert_eq!(
        verify_lookup(&root, &l, &given),
        Err(LookupError::NotASearchPath)
    );
    // Claiming the flagged subject has no effect: its own leaf shown as another's, or no end.
    let (absent, _) = ix.lookup(subject_of(Kind::Tombstone, 200));
    assert!(matches!(absent.end, LookupEnd::Other { .. }));
    assert_eq!(
        verify_lookup(&root, &absent, &EffectsOf::NONE),
        Ok(()),
        "a subject without effects"
    );
    let mut l = absent.clone();
    l.subject = flagged;
    assert!(verify_lookup(&root, &l, &EffectsOf::NONE).is_err());
    let l = Lookup {
        subject: flagged,
        nodes: lookup.nodes.clone(),
        end: LookupEnd::Other {
            key: flagged.index_key(),
            effects: given,
        },
    };
    assert_eq!(
        verify_lookup(&root, &l, &EffectsOf::NONE),
        Err(LookupError::NotASearchPath)
    );
    for end in [LookupEnd::Empty, LookupEnd::Found] {
        let l = Lookup {
            subject: flagged,
            nodes: vec![],
            end,
        };
        assert!(verify_lookup(&root, &l, &EffectsOf::NONE).is_err());
    }
    // The effects of a subject given while its lookup says it has none.
    assert_eq!(
        verify_lookup(&root, &absent, &given),
        Err(LookupError::Count {
            claimed: 0,
            given: given.count
        })
    );
}

#[test]
fn extension_lines_parse_strictly() {
    let c = IndexCommitment {
        entries: 12,
        root: [7; 32],
    };
    let line = c.extension_line();
    assert_eq!(
        line,
        "memlineage/effects-index@v1 entries=12 root=BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n"
    );
    let ext = format!("memlineage/label-policy@v1 tau=500000 rule=fail-closed\n{line}");
    assert_eq!(IndexCommitment::from_extension(&ext), Ok(Some(c)));
    assert_eq!(IndexCommitment::from_extension("other line\n"), Ok(None));
    let root = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";
    for bad in [
        format!("{line}{line}"),
        format!("memlineage/effects-index@v1 entries=012 root={root}"),
        format!("memlineage/effects-index@v1 entries=-1 root={root}"),
        format!("memlineage/effects-index@v1 root={root} entries=1"),
        format!("memlineage/effects-index@v1 entries=1 root={root} x=1"),
        "memlineage/effects-index@v1 entries=1 root=AAAA".to_string(),
        format!("memlineage/effects-index@v1 entries=1 root={}", &root[..43]),
        format!("memlineage/effects-index@v1x entries=1 root={root}"),
        format!("memlineage/effects-index@v1  entries=1 root={root}"),
    ] {
        assert!(
            IndexCommitment::from_extension(&bad).is_err(),
            "{bad:?} accepted"
        );
    }
}

#[test]
fn display_messages() {
    let cases = [
        (
            LookupError::RootMismatch.to_string(),
            "does not lead to the signed effects-index root",
        ),
        (
            LookupError::Count {
                claimed: 0,
                given: 2,
            }
            .to_string(),
            "claims 0 effects where the proof carries 2",
        ),
        (
            LookupError::NotASearchPath.to_string(),
            "is not a search path for the subject",
        ),
        (
            IndexLineError("x".into()).to_string(),
            "the checkpoint's effects-index line \"x\" is malformed or repeated",
        ),
        (
            Subject::Target(EntryId([0xab; 32])).to_string(),
            "target abababababababababababababababababababababababababababababababab",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}
