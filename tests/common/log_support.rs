//! Shared support for the `log_*` integration tests, included by them with
//! `#[path = "common/log_support.rs"] mod support;`.
//!
//! Holds a naive RFC 6962 §2.1 reference implementation (MTH, PATH, PROOF written straight from
//! the RFC's recursive definitions, over leaf hashes), an in-memory log that appends with
//! `hashes_to_store`, and small helpers.
#![allow(dead_code)]

use memlineage::log::{
    hashes_to_store, HashSource, LogError, LogSigner, RootHash, VerifiedCheckpoint,
};
use memlineage::record::{EntryId, WriterKey};
use sha2::{Digest, Sha256};

/// RFC 6962 §2.1: `MTH({d(0)}) = SHA-256(0x00 || d(0))`.
pub fn leaf_hash(data: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(data);
    h.finalize().into()
}

/// RFC 6962 §2.1: `SHA-256(0x01 || left || right)`.
pub fn node(left: &[u8], right: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// "the largest power of two smaller than n", for n > 1.
fn split(n: usize) -> usize {
    assert!(n > 1);
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// `MTH(D[n])` over leaf hashes `d` (RFC 6962 §2.1).
pub fn mth(d: &[[u8; 32]]) -> [u8; 32] {
    match d.len() {
        0 => Sha256::digest(b"").into(),
        1 => d[0],
        n => {
            let k = split(n);
            node(&mth(&d[..k]), &mth(&d[k..]))
        }
    }
}

/// `PATH(m, D[n])` (RFC 6962 §2.1.1).
pub fn ref_path(m: usize, d: &[[u8; 32]]) -> Vec<[u8; 32]> {
    let n = d.len();
    assert!(m < n);
    if n == 1 {
        return Vec::new();
    }
    let k = split(n);
    if m < k {
        let mut p = ref_path(m, &d[..k]);
        p.push(mth(&d[k..]));
        p
    } else {
        let mut p = ref_path(m - k, &d[k..]);
        p.push(mth(&d[..k]));
        p
    }
}

/// `PROOF(m, D[n]) = SUBPROOF(m, D[n], true)` (RFC 6962 §2.1.2), for `0 < m <= n`.
pub fn ref_proof(m: usize, d: &[[u8; 32]]) -> Vec<[u8; 32]> {
    assert!(0 < m && m <= d.len());
    subproof(m, d, true)
}

fn subproof(m: usize, d: &[[u8; 32]], b: bool) -> Vec<[u8; 32]> {
    let n = d.len();
    if m == n {
        return if b { Vec::new() } else { vec![mth(d)] };
    }
    let k = split(n);
    if m <= k {
        let mut p = subproof(m, &d[..k], b);
        p.push(mth(&d[k..]));
        p
    } else {
        let mut p = subproof(m - k, &d[k..], false);
        p.push(mth(&d[..k]));
        p
    }
}

/// A log in memory: stored hashes in a `Vec` (the `HashSource`) plus the leaf hashes for the
/// reference implementation.
#[derive(Default)]
pub struct MemLog {
    pub hashes: Vec<[u8; 32]>,
    pub leaves: Vec<[u8; 32]>,
}

impl MemLog {
    pub fn with_leaf_data<I: IntoIterator<Item = Vec<u8>>>(data: I) -> Self {
        let mut log = MemLog::default();
        for d in data {
            log.append(EntryId::of_cose(&d));
        }
        log
    }

    pub fn append(&mut self, leaf: EntryId) {
        let index = self.leaves.len() as u64;
        let hs = hashes_to_store(index, &leaf, &self.hashes).expect("append");
        self.hashes.extend(hs);
        self.leaves.push(leaf.0);
    }

    pub fn size(&self) -> u64 {
        self.leaves.len() as u64
    }
}

impl HashSource for MemLog {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError> {
        self.hashes.read_hashes(indexes)
    }
}

/// Leaf `i` of the sweep trees: the 8 bytes of `i` (big-endian).
pub fn sweep_leaf(i: u64) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

/// 64 hex digits to 32 bytes; `None` for any other length (the vectors' truncated and
/// extended hashes, which our `[u8; 32]` types cannot hold).
pub fn h32(s: &str) -> Option<[u8; 32]> {
    hex::decode(s).ok()?.try_into().ok()
}

pub fn test_signer() -> LogSigner {
    LogSigner::new(
        "test.example/memlineage-log",
        WriterKey::for_label("log-tests"),
    )
    .unwrap()
}

/// A checkpoint over `(size, root)` signed by `signer` and verified: the only way tests (and
/// callers) obtain a `VerifiedCheckpoint`.
pub fn checkpoint(signer: &LogSigner, size: u64, root: [u8; 32]) -> VerifiedCheckpoint {
    signer
        .verifier()
        .verify(&signer.sign(size, &RootHash(root)))
        .expect("own checkpoint verifies")
}

/// The C2SP signed-note / checkpoint / cosignature example (`tests/vectors/`).
pub fn c2sp_example() -> serde_json::Value {
    serde_json::from_str(include_str!("../vectors/c2sp-checkpoint-example.json")).expect("JSON")
}

/// The string at `path` in a JSON value; panics (test code) when absent.
pub fn json_str<'a>(v: &'a serde_json::Value, path: &[&str]) -> &'a str {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_str()
        .unwrap_or_else(|| panic!("{path:?}"))
}
