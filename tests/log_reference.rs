//! Differential tests: the store-backed tree (`tlog_tiles` arithmetic behind our validation)
//! against a naive recursive RFC 6962 §2.1 implementation (`common/log_support.rs`), and roots and
//! audit paths against rs_merkle 1.5 as a second, independent oracle.

#[path = "common/log_support.rs"]
mod support;

use memlineage::log::{
    prove_consistency, prove_inclusion, tree_root, ConsistencyProof, InclusionProof, ProofError,
    RootHash, VerifiedCheckpoint,
};
use memlineage::record::EntryId;
use proptest::prelude::*;
use sha2::{Digest, Sha256};
use support::{checkpoint, mth, node, ref_path, ref_proof, sweep_leaf, test_signer, MemLog};

const SWEEP: u64 = 64;

/// SHA-256 over every root, audit path and consistency proof of the sweep (leaf `i` is the
/// 8-byte big-endian `i`, sizes `1..=64`): `n || root`, then `n || m || len || PATH(m, D[n])`
/// for each `m < n`, then `n || m || len || PROOF(m, D[n])` for each `1 <= m <= n`, integers as
/// u64 big-endian. Published in `spec/log.md` ("Test vectors"); reproduced by an independent
/// Python implementation of RFC 6962 §2.1.
const SWEEP_DIGEST: &str = "4e93576f5fae22547b205d0ddddf22678dab2114a42e0d0160cf619a25e2107e";

fn flip(path: &[[u8; 32]], i: usize) -> Vec<[u8; 32]> {
    let mut p = path.to_vec();
    p[i][i % 32] ^= 1 << (i % 8);
    p
}

/// Every size 1..=64, every index, every (m, n): our roots and proofs equal the reference's,
/// verify against signed checkpoints, and fail (with the right class) after any single-bit
/// mutation of any proof hash or a shift of the index.
#[test]
fn sweep_matches_reference() {
    let log = MemLog::with_leaf_data((0..SWEEP).map(sweep_leaf));
    let signer = test_signer();
    let cps: Vec<VerifiedCheckpoint> = (0..=SWEEP)
        .map(|n| checkpoint(&signer, n, mth(&log.leaves[..n as usize])))
        .collect();
    let mut acc = Sha256::new();
    let mut reference_acc = Sha256::new();
    let put = |h: &mut Sha256, xs: &[u64], path: &[[u8; 32]]| {
        for x in xs {
            h.update(x.to_be_bytes());
        }
        for p in path {
            h.update(p);
        }
    };
    for n in 1..=SWEEP {
        let d = &log.leaves[..n as usize];
        let root = tree_root(n, &log).unwrap();
        assert_eq!(root, RootHash(mth(d)), "root {n}");
        put(&mut acc, &[n], &[root.0]);
        put(&mut reference_acc, &[n], &[mth(d)]);
        let cp = &cps[n as usize];
        for m in 0..n {
            let proof = prove_inclusion(n, m, &log).unwrap();
            let want = ref_path(m as usize, d);
            assert_eq!(proof.path, want, "PATH({m}, D[{n}])");
            let leaf = EntryId(d[m as usize]);
            cp.verify_inclusion(&leaf, &proof).unwrap();
            for i in 0..proof.path.len() {
                let bad = InclusionProof {
                    index: m,
                    path: flip(&proof.path, i),
                };
                assert_eq!(
                    cp.verify_inclusion(&leaf, &bad),
                    Err(ProofError::RootMismatch)
                );
            }
            if m + 1 < n {
                let moved = InclusionProof {
                    index: m + 1,
                    ..proof.clone()
                };
                assert!(cp.verify_inclusion(&leaf, &moved).is_err());
            }
            put(&mut acc, &[n, m, proof.path.len() as u64], &proof.path);
            put(&mut reference_acc, &[n, m, want.len() as u64], &want);
        }
        for m in 1..=n {
            let proof = prove_consistency(m, n, &log).unwrap();
            let want = ref_proof(m as usize, d);
            assert_eq!(proof.path, want, "PROOF({m}, D[{n}])");
            let old = &cps[m as usize];
            old.verify_consistency(cp, &proof).unwrap();
            for i in 0..proof.path.len() {
                let bad = ConsistencyProof {
                    old_size: m,
                    path: flip(&proof.path, i),
                };
                assert_eq!(
                    old.verify_consistency(cp, &bad),
                    Err(ProofError::RootMismatch)
                );
            }
            if m > 1 {
                // The same proof between other checkpoints.
                let e = cps[m as usize - 1]
                    .verify_consistency(cp, &proof)
                    .unwrap_err();
                assert!(matches!(e, ProofError::SizeMismatch { .. }), "{e}");
            }
            put(&mut acc, &[n, m, proof.path.len() as u64], &proof.path);
            put(&mut reference_acc, &[n, m, want.len() as u64], &want);
        }
    }
    let digest = hex::encode(acc.finalize());
    assert_eq!(digest, hex::encode(reference_acc.finalize()));
    assert_eq!(digest, SWEEP_DIGEST);
}

/// The sweep continued to every size up to 256 (every index, every size pair), without the
/// mutations: our proofs equal the naive reference's and verify against signed checkpoints.
#[test]
fn sweep_to_256_matches_reference() {
    const MAX: u64 = 256;
    let log = MemLog::with_leaf_data((0..MAX).map(sweep_leaf));
    let signer = test_signer();
    let cps: Vec<VerifiedCheckpoint> = (0..=MAX)
        .map(|n| checkpoint(&signer, n, mth(&log.leaves[..n as usize])))
        .collect();
    let (mut inclusion, mut consistency) = (0u64, 0u64);
    for n in SWEEP + 1..=MAX {
        let d = &log.leaves[..n as usize];
        assert_eq!(tree_root(n, &log).unwrap(), RootHash(mth(d)), "root {n}");
        let cp = &cps[n as usize];
        for m in 0..n {
            let proof = prove_inclusion(n, m, &log).unwrap();
            assert_eq!(proof.path, ref_path(m as usize, d), "PATH({m}, D[{n}])");
            cp.verify_inclusion(&EntryId(d[m as usize]), &proof)
                .unwrap();
            inclusion += 1;
        }
        for m in 1..=n {
            let proof = prove_consistency(m, n, &log).unwrap();
            assert_eq!(proof.path, ref_proof(m as usize, d), "PROOF({m}, D[{n}])");
            cps[m as usize].verify_consistency(cp, &proof).unwrap();
            consistency += 1;
        }
    }
    // Every pair beyond the first sweep was visited.
    assert_eq!(inclusion, (SWEEP + 1..=MAX).sum::<u64>());
    assert_eq!(consistency, inclusion);
}

/// Consistency in the wrong direction, from zero, and between different logs.
#[test]
fn consistency_policy() {
    let log = MemLog::with_leaf_data((0..8).map(sweep_leaf));
    let signer = test_signer();
    let cp = |n: u64| checkpoint(&signer, n, mth(&log.leaves[..n as usize]));
    let p = prove_consistency(3, 8, &log).unwrap();
    assert_eq!(
        cp(8).verify_consistency(
            &cp(3),
            &ConsistencyProof {
                old_size: 8,
                path: p.path.clone()
            }
        ),
        Err(ProofError::OldLarger {
            old_size: 8,
            new_size: 3
        })
    );
    assert_eq!(
        cp(0).verify_consistency(
            &cp(8),
            &ConsistencyProof {
                old_size: 0,
                path: vec![]
            }
        ),
        Err(ProofError::OldSizeZero)
    );
    assert_eq!(
        cp(8).verify_consistency(
            &cp(8),
            &ConsistencyProof {
                old_size: 8,
                path: vec![[0; 32]]
            }
        ),
        Err(ProofError::SameSizeNonEmptyPath { len: 1 })
    );
    let other = memlineage::log::LogSigner::new(
        "other.example/log",
        memlineage::record::WriterKey::for_label("log-tests"),
    )
    .unwrap();
    let foreign = checkpoint(&other, 8, mth(&log.leaves));
    assert_eq!(
        cp(3).verify_consistency(&foreign, &p),
        Err(ProofError::DifferentLogs)
    );
}

/// rs_merkle hasher with RFC 6962 domain separation. rs_merkle's default `concat_and_hash` is
/// `hash(left || right)` with no `0x01` prefix, and leaves are taken as given (no `0x00`), so
/// its defaults do not compute RFC 6962 roots; we feed it RFC 6962 leaf hashes and override the
/// node hash. Its "promote the unpaired node" rule gives RFC 6962's left-full tree shape.
#[derive(Clone)]
struct Rfc6962;

impl rs_merkle::Hasher for Rfc6962 {
    type Hash = [u8; 32];

    fn hash(data: &[u8]) -> [u8; 32] {
        Sha256::digest(data).into()
    }

    fn concat_and_hash(left: &[u8; 32], right: Option<&[u8; 32]>) -> [u8; 32] {
        match right {
            Some(r) => node(left, r),
            None => *left,
        }
    }
}

#[test]
fn rs_merkle_oracle() {
    let log = MemLog::with_leaf_data((0..SWEEP).map(sweep_leaf));
    for n in 1..=SWEEP as usize {
        let tree = rs_merkle::MerkleTree::<Rfc6962>::from_leaves(&log.leaves[..n]);
        let root = tree_root(n as u64, &log).unwrap();
        assert_eq!(Some(root.0), tree.root(), "root {n}");
        for m in 0..n {
            let ours = prove_inclusion(n as u64, m as u64, &log).unwrap();
            assert_eq!(
                ours.path,
                tree.proof(&[m]).proof_hashes(),
                "PATH({m}, D[{n}])"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Larger trees with arbitrary leaf data, sampled: same answers as the reference.
    #[test]
    fn sampled_larger_trees(
        data in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..8), 65..300),
        a in any::<u64>(),
        b in any::<u64>(),
    ) {
        let log = MemLog::with_leaf_data(data);
        let n = log.size();
        let d = &log.leaves;
        prop_assert_eq!(tree_root(n, &log).unwrap(), RootHash(mth(d)));
        let m = a % n;
        prop_assert_eq!(prove_inclusion(n, m, &log).unwrap().path, ref_path(m as usize, d));
        let (lo, hi) = (1 + a % n, 1 + b % n);
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        let dd = &d[..hi as usize];
        prop_assert_eq!(prove_consistency(lo, hi, &log).unwrap().path, ref_proof(lo as usize, dd));
    }
}

/// Checkpoints may claim any u64 size (they are untrusted until their proofs check): the
/// verifier's length arithmetic and `tlog_tiles`' recursion must not overflow near `u64::MAX`
/// (debug builds would panic).
#[test]
fn huge_sizes_do_not_panic() {
    let signer = test_signer();
    let big = checkpoint(&signer, u64::MAX, [7; 32]);
    let leaf = EntryId([1; 32]);
    for (index, len) in [(0, 64), (u64::MAX - 1, 63), (1 << 63, 64)] {
        let proof = InclusionProof {
            index,
            path: vec![[2; 32]; len],
        };
        assert_eq!(
            big.verify_inclusion(&leaf, &proof),
            Err(ProofError::RootMismatch)
        );
        let short = InclusionProof {
            index,
            path: vec![[2; 32]; len - 1],
        };
        assert!(matches!(
            big.verify_inclusion(&leaf, &short),
            Err(ProofError::WrongPathLength { .. })
        ));
    }
    for m in [1, 2, 3, u64::MAX - 1, 1 << 63] {
        let old = checkpoint(&signer, m, [3; 32]);
        let e = old
            .verify_consistency(
                &big,
                &ConsistencyProof {
                    old_size: m,
                    path: vec![[4; 32]; 64],
                },
            )
            .unwrap_err();
        assert!(
            matches!(
                e,
                ProofError::RootMismatch | ProofError::WrongPathLength { .. }
            ),
            "{m}: {e}"
        );
    }
}
