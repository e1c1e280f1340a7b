//! Fork detection with `CheckpointState` (`spec/log.md` §9): two logs under one key that share a
//! prefix and then diverge, rollbacks, split views kept as evidence, honest growth only with a
//! valid consistency proof, forged proofs, and the state file (round trip, corruption).

#[path = "common/log_support.rs"]
mod support;

use memlineage::log::{
    prove_consistency, tree_root, CheckpointError, CheckpointState, ConsistencyProof, ForkError,
    LogSigner, LogVerifier, ProofError, StateError, Update, VerifiedCheckpoint, EMPTY_ROOT,
    MAX_STATE_BYTES, STATE_FORMAT,
};
use memlineage::record::{EntryId, WriterKey};
use support::{test_signer, MemLog};

/// Leaves shared by both logs.
const PREFIX: u64 = 5;
/// Leaves each log has in total.
const TOTAL: u64 = 16;

/// Two logs signed by one key: the same `PREFIX` leaves, then different ones.
struct Forks {
    signer: LogSigner,
    verifier: LogVerifier,
    honest: MemLog,
    fork: MemLog,
}

fn forks() -> Forks {
    let mut honest = MemLog::default();
    let mut fork = MemLog::default();
    for i in 0..TOTAL {
        let leaf = format!("entry {i}");
        honest.append(EntryId::of_cose(leaf.as_bytes()));
        let other = if i < PREFIX {
            leaf
        } else {
            format!("fork {i}")
        };
        fork.append(EntryId::of_cose(other.as_bytes()));
    }
    let signer = test_signer();
    let verifier = signer.verifier();
    Forks {
        signer,
        verifier,
        honest,
        fork,
    }
}

impl Forks {
    fn cp(&self, log: &MemLog, size: u64) -> VerifiedCheckpoint {
        support::checkpoint(&self.signer, size, tree_root(size, log).unwrap().0)
    }

    fn honest(&self, size: u64) -> VerifiedCheckpoint {
        self.cp(&self.honest, size)
    }

    fn forked(&self, size: u64) -> VerifiedCheckpoint {
        self.cp(&self.fork, size)
    }

    /// A state that remembers honest checkpoint `size`.
    fn state_at(&self, size: u64) -> CheckpointState {
        let mut st = CheckpointState::new();
        let got = st.update(&self.verifier, self.honest(size), None).unwrap();
        assert_eq!(got, Update::TrustedOnFirstUse);
        st
    }

    fn remembered(&self, st: &CheckpointState) -> VerifiedCheckpoint {
        st.latest(&self.verifier).unwrap().clone()
    }
}

#[test]
fn the_logs_fork_after_the_prefix() {
    let f = forks();
    for n in 1..=PREFIX {
        assert_eq!(f.honest(n), f.forked(n), "size {n}");
    }
    for n in PREFIX + 1..=TOTAL {
        assert_ne!(f.honest(n).root(), f.forked(n).root(), "size {n}");
    }
}

#[test]
fn honest_growth_is_accepted_only_with_a_valid_proof() {
    let f = forks();
    let mut st = f.state_at(3);
    assert_eq!(
        st.update(&f.verifier, f.honest(3), None),
        Ok(Update::Unchanged)
    );
    let mut m = 3;
    for n in [4, 7, 8, 13, TOTAL] {
        let before = st.to_bytes();
        assert_eq!(
            st.update(&f.verifier, f.honest(n), None),
            Err(ForkError::MissingProof {
                remembered: m,
                got: n
            })
        );
        assert_eq!(st.to_bytes(), before, "state advanced without a proof");
        let proof = prove_consistency(m, n, &f.honest).unwrap();
        assert_eq!(
            st.update(&f.verifier, f.honest(n), Some(&proof)),
            Ok(Update::Advanced {
                old_size: m,
                new_size: n
            })
        );
        assert_eq!(f.remembered(&st), f.honest(n));
        m = n;
    }
    // A proof that is unneeded (same checkpoint) is ignored.
    let p = prove_consistency(3, TOTAL, &f.honest).unwrap();
    assert_eq!(
        st.update(&f.verifier, f.honest(TOTAL), Some(&p)),
        Ok(Update::Unchanged)
    );
}

#[test]
fn growth_from_the_empty_tree_needs_no_proof() {
    let f = forks();
    let empty = f.honest(0);
    assert_eq!(empty.root(), EMPTY_ROOT);
    let mut st = CheckpointState::new();
    assert_eq!(
        st.update(&f.verifier, empty, None),
        Ok(Update::TrustedOnFirstUse)
    );
    assert_eq!(
        st.update(&f.verifier, f.honest(4), None),
        Ok(Update::Advanced {
            old_size: 0,
            new_size: 4
        })
    );
}

#[test]
fn rollback_is_detected() {
    let f = forks();
    let mut st = f.state_at(9);
    for n in [0, 1, 5, 8] {
        assert_eq!(
            st.update(&f.verifier, f.honest(n), None),
            Err(ForkError::Rollback {
                remembered: 9,
                got: n
            })
        );
        // With a proof in the right direction it is still a rollback.
        if n > 0 {
            let p = prove_consistency(n, 9, &f.honest).unwrap();
            assert!(matches!(
                st.update(&f.verifier, f.honest(n), Some(&p)),
                Err(ForkError::Rollback { .. })
            ));
        }
        assert_eq!(f.remembered(&st), f.honest(9));
    }
    assert_eq!(st.evidence().count(), 0);
}

#[test]
fn split_view_is_detected_and_both_notes_kept() {
    let f = forks();
    let mut st = f.state_at(8);
    let (honest, forked) = (f.honest(8), f.forked(8));
    assert_eq!(
        st.update(&f.verifier, forked.clone(), None),
        Err(ForkError::SplitView {
            size: 8,
            remembered_root: honest.root(),
            got_root: forked.root(),
        })
    );
    assert_eq!(f.remembered(&st), honest, "state must not move to the fork");
    let ev: Vec<_> = st.evidence().collect();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].vkey(), f.verifier.vkey());
    assert_eq!(ev[0].size(), 8);
    assert_eq!(ev[0].remembered().note(), honest.note());
    assert_eq!(ev[0].got().note(), forked.note());
    // The evidence stands on its own: both notes verify under the log key, same size, two roots.
    let a = f.verifier.verify(ev[0].remembered().note()).unwrap();
    let b = f.verifier.verify(ev[0].got().note()).unwrap();
    assert_eq!(a.size(), b.size());
    assert_ne!(a.root(), b.root());

    // The log is frozen: nothing more is accepted, not even honest growth with a valid proof.
    let p = prove_consistency(8, 12, &f.honest).unwrap();
    for (cp, proof) in [
        (f.honest(12), Some(&p)),
        (f.honest(8), None),
        (f.forked(8), None),
    ] {
        assert_eq!(
            st.update(&f.verifier, cp, proof),
            Err(ForkError::KnownSplitView { size: 8 })
        );
    }
    assert_eq!(st.evidence().count(), 1);

    // The evidence survives a save and load.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    st.save(&path).unwrap();
    let loaded = CheckpointState::load(&path).unwrap();
    assert_eq!(loaded, st);
    let ev: Vec<_> = loaded.evidence().collect();
    assert_eq!(ev[0].got().note(), forked.note());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&json_str(honest.note())));
    assert!(text.contains(&json_str(forked.note())));
}

/// A client that saw only the shared prefix cannot tell the logs apart; once it follows one
/// branch, the other branch cannot extend its view.
#[test]
fn fork_growth_is_rejected_after_the_fork_point() {
    let f = forks();
    // Before the fork point: the fork's growth is consistent with what the client saw.
    let mut st = f.state_at(PREFIX);
    let p = prove_consistency(PREFIX, 9, &f.fork).unwrap();
    assert!(matches!(
        st.update(&f.verifier, f.forked(9), Some(&p)),
        Ok(Update::Advanced { .. })
    ));
    // ... and from then on the honest branch is a split view.
    assert!(matches!(
        st.update(&f.verifier, f.honest(9), None),
        Err(ForkError::SplitView { size: 9, .. })
    ));

    // After the fork point no proof can take an honest client to the fork.
    let mut st = f.state_at(7);
    for n in 8..=TOTAL {
        for proof in [
            prove_consistency(7, n, &f.fork).unwrap(),
            prove_consistency(7, n, &f.honest).unwrap(),
        ] {
            assert_eq!(
                st.update(&f.verifier, f.forked(n), Some(&proof)),
                Err(ForkError::ConsistencyFailed {
                    remembered: 7,
                    got: n,
                    source: ProofError::RootMismatch
                }),
                "size {n}"
            );
        }
        assert_eq!(f.remembered(&st), f.honest(7));
    }
}

#[test]
fn forged_consistency_proofs_are_rejected() {
    let f = forks();
    let mut st = f.state_at(6);
    let good = prove_consistency(6, 13, &f.honest).unwrap();
    let fail = |st: &mut CheckpointState, p: &ConsistencyProof| {
        let before = st.to_bytes();
        let r = st.update(&f.verifier, f.honest(13), Some(p));
        assert_eq!(st.to_bytes(), before, "failed update changed the state");
        match r {
            Err(ForkError::ConsistencyFailed {
                remembered: 6,
                got: 13,
                source,
            }) => source,
            other => panic!("{other:?}"),
        }
    };
    for i in 0..good.path.len() {
        for bit in [0x01, 0x80] {
            let mut p = good.clone();
            p.path[i][i % 32] ^= bit;
            assert_eq!(fail(&mut st, &p), ProofError::RootMismatch);
        }
    }
    let mut short = good.clone();
    short.path.pop();
    let mut long = good.clone();
    long.path.push([0; 32]);
    let empty = ConsistencyProof {
        old_size: 6,
        path: Vec::new(),
    };
    for p in [short, long, empty] {
        assert!(matches!(
            fail(&mut st, &p),
            ProofError::WrongPathLength { .. }
        ));
    }
    let other = prove_consistency(5, 13, &f.honest).unwrap();
    assert_eq!(
        fail(&mut st, &other),
        ProofError::SizeMismatch { got: 5, want: 6 }
    );
    let mut swapped = good.clone();
    swapped.path.reverse();
    assert_eq!(fail(&mut st, &swapped), ProofError::RootMismatch);
    // The genuine proof still works afterwards.
    assert_eq!(
        st.update(&f.verifier, f.honest(13), Some(&good)),
        Ok(Update::Advanced {
            old_size: 6,
            new_size: 13
        })
    );
}

#[test]
fn logs_are_keyed_by_verifier_key() {
    let f = forks();
    // Same origin, another key: a different log as far as the state is concerned.
    let other = LogSigner::new(f.signer.origin(), WriterKey::for_label("other log key")).unwrap();
    let other_cp = support::checkpoint(&other, 8, tree_root(8, &f.fork).unwrap().0);
    let mut st = f.state_at(8);
    // Offered under the wrong key: a caller error, and nothing changes.
    assert_eq!(
        st.update(&f.verifier, other_cp.clone(), None),
        Err(ForkError::WrongLog(CheckpointError::UnknownKey))
    );
    assert_eq!(st.len(), 1);
    assert_eq!(
        st.update(&other.verifier(), other_cp.clone(), None),
        Ok(Update::TrustedOnFirstUse)
    );
    assert_eq!(st.len(), 2);
    assert_eq!(st.latest(&other.verifier()), Some(&other_cp));
    assert_eq!(st.latest(&f.verifier), Some(&f.honest(8)));
    assert_eq!(st.evidence().count(), 0);
}

/// A state with two logs, one of them with split-view evidence.
fn sample_state(f: &Forks) -> CheckpointState {
    let mut st = f.state_at(7);
    let other = LogSigner::new("other.example/log", WriterKey::for_label("other")).unwrap();
    let cp = support::checkpoint(&other, 3, [3; 32]);
    st.update(&other.verifier(), cp, None).unwrap();
    let forked = support::checkpoint(&other, 3, [4; 32]);
    assert!(st.update(&other.verifier(), forked, None).is_err());
    st
}

#[test]
fn state_file_round_trip() {
    let f = forks();
    let st = sample_state(&f);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checkpoints.json");
    assert_eq!(
        CheckpointState::load(&path),
        Err(StateError::Io {
            op: "read",
            kind: std::io::ErrorKind::NotFound
        })
    );
    st.save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes, st.to_bytes());
    assert!(bytes.starts_with(format!("{{\n  \"format\": \"{STATE_FORMAT}\"").as_bytes()));
    let loaded = CheckpointState::load(&path).unwrap();
    assert_eq!(loaded, st);
    assert_eq!(loaded.len(), 2);
    assert_eq!(loaded.evidence().count(), 1);
    // Overwrite with a newer state; no temporary file is left behind.
    let mut newer = loaded;
    let p = prove_consistency(7, 11, &f.honest).unwrap();
    newer.update(&f.verifier, f.honest(11), Some(&p)).unwrap();
    newer.save(&path).unwrap();
    assert_eq!(CheckpointState::load(&path).unwrap(), newer);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["checkpoints.json"]);
    // Saving into a missing directory is an I/O error, not a panic.
    let bad = dir.path().join("missing").join("state.json");
    assert!(matches!(
        newer.save(&bad),
        Err(StateError::Io { op: "write", .. })
    ));
}

#[test]
fn truncated_state_files_are_errors() {
    let f = forks();
    let bytes = sample_state(&f).to_bytes();
    for len in 0..bytes.len() {
        assert_eq!(
            CheckpointState::from_bytes(&bytes[..len]),
            Err(StateError::Truncated),
            "prefix of {len} bytes"
        );
    }
    // Also through the file system: an empty file is not an empty state.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    std::fs::write(&path, b"").unwrap();
    assert_eq!(CheckpointState::load(&path), Err(StateError::Truncated));
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert_eq!(CheckpointState::load(&path), Err(StateError::Truncated));
    // An oversized (sparse) file is refused before parsing.
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(MAX_STATE_BYTES + 1).unwrap();
    assert_eq!(
        CheckpointState::load(&path),
        Err(StateError::TooLarge {
            max: MAX_STATE_BYTES
        })
    );
}

#[test]
fn corrupt_state_files_are_typed_errors() {
    let f = forks();
    let st = f.state_at(7);
    let text = String::from_utf8(st.to_bytes()).unwrap();
    let root_b64 = text.split("\\n").nth(2).unwrap().to_owned();
    let load = |s: &str| CheckpointState::from_bytes(s.as_bytes());

    assert!(matches!(
        load("garbage\n"),
        Err(StateError::Malformed { .. })
    ));
    assert!(matches!(
        CheckpointState::from_bytes(b"{\"format\": \"\xff\"}\n"),
        Err(StateError::Malformed { .. })
    ));
    assert!(matches!(
        load(&text.replacen("\"logs\"", "\"extra\": 1,\n  \"logs\"", 1)),
        Err(StateError::Malformed { .. })
    ));
    assert!(matches!(
        load(&text.replacen("\"vkey\"", "\"vkey2\"", 1)),
        Err(StateError::Malformed { .. })
    ));
    assert_eq!(
        load(&text.replacen("state@v1", "state@v2", 1)),
        Err(StateError::UnsupportedFormat {
            got: "memlineage/checkpoint-state@v2".into()
        })
    );
    // A tampered root: the log signature no longer verifies.
    let mut root = root_b64.clone().into_bytes();
    root[0] = if root[0] == b'A' { b'B' } else { b'A' };
    let tampered = text.replacen(&root_b64, std::str::from_utf8(&root).unwrap(), 1);
    assert_eq!(
        load(&tampered),
        Err(StateError::BadLog {
            index: 0,
            source: CheckpointError::BadSignature
        })
    );
    // A tampered verifier key.
    let vkey = f.verifier.vkey();
    assert_eq!(
        load(&text.replacen(&vkey, "nope", 1)),
        Err(StateError::BadLog {
            index: 0,
            source: CheckpointError::MalformedVkey
        })
    );
    // The same log twice.
    let entry_start = text.find("    {").unwrap();
    let entry_end = text.rfind("    }").unwrap() + 5;
    let entry = &text[entry_start..entry_end];
    let twice = text.replacen(entry, &format!("{entry},\n{entry}"), 1);
    assert_eq!(load(&twice), Err(StateError::DuplicateLog { index: 1 }));
    // Split-view evidence that is not a conflict, or not a valid note.
    let with_sv = |note: &str| {
        text.replacen(
            "\"split_view\": null",
            &format!("\"split_view\": {}", json_str(note.as_bytes())),
            1,
        )
    };
    let own = String::from_utf8(f.honest(7).note().to_vec()).unwrap();
    let smaller = String::from_utf8(f.honest(6).note().to_vec()).unwrap();
    let forked = String::from_utf8(f.forked(7).note().to_vec()).unwrap();
    assert_eq!(
        load(&with_sv(&own)),
        Err(StateError::NotASplitView { index: 0 })
    );
    assert_eq!(
        load(&with_sv(&smaller)),
        Err(StateError::NotASplitView { index: 0 })
    );
    assert_eq!(
        load(&with_sv("not a note\n")),
        Err(StateError::BadEvidence {
            index: 0,
            source: CheckpointError::MalformedNote
        })
    );
    let ok = load(&with_sv(&forked)).unwrap();
    assert_eq!(ok.evidence().count(), 1);
    // Missing final newline.
    assert_eq!(load(text.trim_end()), Err(StateError::Truncated));
}

/// No single-bit change of a state file yields a different state: it is rejected, or (for
/// changes JSON does not see) it loads as the original.
#[test]
fn bit_flips_never_load_a_different_state() {
    let f = forks();
    let st = sample_state(&f);
    let bytes = st.to_bytes();
    for i in 0..bytes.len() {
        for bit in [0x01, 0x20, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            if let Ok(got) = CheckpointState::from_bytes(&b) {
                assert_eq!(got, st, "flip {bit:#x} at {i} loaded a different state");
            }
        }
    }
}

#[test]
fn failed_updates_never_advance_the_state_file() {
    let f = forks();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    let mut st = f.state_at(10);
    st.save(&path).unwrap();
    let saved = std::fs::read(&path).unwrap();
    let p = prove_consistency(10, 12, &f.fork).unwrap();
    let attempts: Vec<(VerifiedCheckpoint, Option<ConsistencyProof>)> = vec![
        (f.honest(9), None),
        (f.honest(12), None),
        (f.forked(12), Some(p)),
        (
            f.forked(12),
            Some(prove_consistency(10, 12, &f.honest).unwrap()),
        ),
    ];
    for (cp, proof) in attempts {
        assert!(st.update(&f.verifier, cp, proof.as_ref()).is_err());
        st.save(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), saved);
    }
    assert_eq!(
        CheckpointState::load(&path)
            .unwrap()
            .latest(&f.verifier)
            .unwrap(),
        &f.honest(10)
    );
}

fn json_str(b: &[u8]) -> String {
    serde_json::to_string(std::str::from_utf8(b).unwrap()).unwrap()
}

/// Precomputed checkpoints and proofs of both branches, for the operation-sequence model test.
struct Table {
    f: Forks,
    /// `cps[branch][size]`, branch 0 honest, 1 fork.
    cps: [Vec<VerifiedCheckpoint>; 2],
}

fn table() -> Table {
    let f = forks();
    let cps = [
        (0..=TOTAL).map(|n| f.honest(n)).collect(),
        (0..=TOTAL).map(|n| f.forked(n)).collect(),
    ];
    Table { f, cps }
}

/// What `update` must answer, from first principles: `None` in `proof_from` means no proof,
/// `Some(b)` a genuine proof of branch `b` from the remembered size.
fn model(
    t: &Table,
    remembered: Option<&VerifiedCheckpoint>,
    frozen: Option<u64>,
    new: &VerifiedCheckpoint,
    proof_from: Option<usize>,
) -> Result<Update, ForkError> {
    let Some(old) = remembered else {
        return Ok(Update::TrustedOnFirstUse);
    };
    if let Some(size) = frozen {
        return Err(ForkError::KnownSplitView { size });
    }
    let (m, n) = (old.size(), new.size());
    if n == m {
        return if new.root() == old.root() {
            Ok(Update::Unchanged)
        } else {
            Err(ForkError::SplitView {
                size: n,
                remembered_root: old.root(),
                got_root: new.root(),
            })
        };
    }
    if n < m {
        return Err(ForkError::Rollback {
            remembered: m,
            got: n,
        });
    }
    let advanced = Ok(Update::Advanced {
        old_size: m,
        new_size: n,
    });
    if m == 0 {
        return advanced;
    }
    let Some(b) = proof_from else {
        return Err(ForkError::MissingProof {
            remembered: m,
            got: n,
        });
    };
    // A genuine proof of branch b binds b's roots at m and n.
    let (bm, bn) = (&t.cps[b][m as usize], &t.cps[b][n as usize]);
    if bm.root() == old.root() && bn.root() == new.root() {
        advanced
    } else {
        Err(ForkError::ConsistencyFailed {
            remembered: m,
            got: n,
            source: ProofError::RootMismatch,
        })
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Random sequences of offers (either branch, any size, no proof or a genuine proof from
    /// either branch) give exactly the model's answers; the remembered size never decreases; and
    /// the state survives a save/load round trip after every step.
    #[test]
    fn update_sequences_match_the_model(
        ops in proptest::collection::vec(
            (0usize..2, 0u64..=TOTAL, proptest::option::of(0usize..2)),
            1..24,
        )
    ) {
        let t = table();
        let mut st = CheckpointState::new();
        for (branch, n, proof_from) in ops {
            let new = t.cps[branch][n as usize].clone();
            let remembered = st.latest(&t.f.verifier).cloned();
            let frozen = st.evidence().next().map(|e| e.size());
            let proof = match (&remembered, proof_from) {
                (Some(old), Some(b)) if old.size() >= 1 && old.size() <= n => {
                    let log = if b == 0 { &t.f.honest } else { &t.f.fork };
                    Some(prove_consistency(old.size(), n, log).unwrap())
                }
                _ => None,
            };
            let from = proof.as_ref().and(proof_from);
            let want = model(&t, remembered.as_ref(), frozen, &new, from);
            let got = st.update(&t.f.verifier, new, proof.as_ref());
            proptest::prop_assert_eq!(&got, &want);
            let after = st.latest(&t.f.verifier).unwrap();
            if let Some(old) = &remembered {
                proptest::prop_assert!(after.size() >= old.size());
                if got.is_err() {
                    proptest::prop_assert_eq!(after, old);
                }
            }
            let reloaded = CheckpointState::from_bytes(&st.to_bytes()).unwrap();
            proptest::prop_assert_eq!(&reloaded, &st);
        }
    }

    /// Arbitrary bytes never panic the state parser, and never load as a non-empty state.
    #[test]
    fn state_parser_never_panics(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
    ) {
        if let Ok(st) = CheckpointState::from_bytes(&bytes) {
            proptest::prop_assert!(st.is_empty());
        }
    }
}

/// The example state file of `spec/log.md` §9.3: the C2SP example checkpoint (8 leaves) of
/// `tests/vectors/c2sp-checkpoint-example.json`, remembered on first use.
#[test]
fn spec_example_state_file() {
    let v: serde_json::Value =
        serde_json::from_str(include_str!("vectors/c2sp-checkpoint-example.json")).unwrap();
    let vkey = v["log_key"]["vkey"].as_str().unwrap();
    let note = v["checkpoint"]["signed_note"].as_str().unwrap();
    let log = LogVerifier::from_vkey(vkey).unwrap();
    let mut st = CheckpointState::new();
    st.update(&log, log.verify(note.as_bytes()).unwrap(), None)
        .unwrap();
    let want = r#"{
  "format": "memlineage/checkpoint-state@v1",
  "logs": [
    {
      "vkey": "example.com/agent-memory-ledger+7321a2ce+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4",
      "checkpoint": "example.com/agent-memory-ledger\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=\n\n— example.com/agent-memory-ledger cyGizlMIQx4BH7B5UFUMyU1XHKFd54qLuFsQGqU5c2e7ychHDLo2qHU4kwT/41PY3ZxitkYIaPAr+9qq/zH6244DvA0=\n",
      "split_view": null
    }
  ]
}
"#;
    assert_eq!(String::from_utf8(st.to_bytes()).unwrap(), want);
    assert_eq!(CheckpointState::from_bytes(want.as_bytes()).unwrap(), st);
}
