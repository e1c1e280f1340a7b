//! Review of batch verification (`spec/record.md` §2.3–2.4): hostile inputs on which the batch
//! paths (`SignedEntry::decode_batch`, `decode_on_all_cores`, `audit::audit`) must give the
//! one-by-one answers; every encoding of a small-order point as `R` or as the key, which only
//! the byte checks of steps 1–6 refuse (before these tests, removing the `y < p` check on `R`
//! or the x = 0 sign-bit check on keys from `src/record/verify.rs` passed the whole suite); and
//! the audit's pipelined chunks (keyring order across chunks, read errors, progress), and the
//! SQLite range read the audit uses.

use curve25519_dalek::edwards::CompressedEdwardsY;
use curve25519_dalek::Scalar;
use memlineage::audit::{audit_with_progress, AuditError, AuditProgress, Problem, AUDIT_CHUNK};
use memlineage::lineage::admission::AdmissionError;
use memlineage::lineage::{Label, LabelPolicy};
use memlineage::log::LogSigner;
use memlineage::record::decode_on_all_cores;
use memlineage::record::{
    encode_payload, protected_header, sig_structure, KeyId, Kind, ProvEntry, PublicKey,
    RecordError, Role, SignedEntry, WriterKey,
};
use memlineage::store::{MemoryStore, Store};
use memlineage::{Draft, Ledger};
use sha2::{Digest, Sha512};

#[path = "common/sig_support.rs"]
mod sig_support;
#[path = "common/store_reads.rs"]
mod store_reads;
use sig_support::secret_scalar;

/// COSE_Sign1 bytes for `entry` (any writer, valid or not) with the 64 signature bytes `sig`.
fn envelope(entry: &ProvEntry, sig: &[u8; 64]) -> Vec<u8> {
    let protected = protected_header(&entry.writer);
    let payload = encode_payload(entry);
    let mut out = vec![0xd2, 0x84, 0x58, 0x26];
    out.extend_from_slice(&protected);
    out.push(0xa0);
    match payload.len() {
        n if n < 24 => out.push(0x40 | n as u8),
        n if n < 256 => out.extend_from_slice(&[0x58, n as u8]),
        n => {
            out.push(0x59);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    out.extend_from_slice(&payload);
    out.extend_from_slice(&[0x58, 0x40]);
    out.extend_from_slice(sig);
    out
}

/// The Sig_structure of `entry`.
fn message(entry: &ProvEntry) -> Vec<u8> {
    sig_structure(&protected_header(&entry.writer), &encode_payload(entry))
}

fn k_of(r: &[u8; 32], kid: &KeyId, msg: &[u8]) -> Scalar {
    Scalar::from_hash(
        Sha512::new()
            .chain_update(r)
            .chain_update(kid.0)
            .chain_update(msg),
    )
}

fn hex32(s: &str) -> [u8; 32] {
    hex::decode(s).unwrap().try_into().unwrap()
}

/// Every encoding of a small-order point that a decoder may accept: the eight canonical ones
/// and the six non-canonical ones (y = p and y = p + 1 with either sign bit, and x = 0 with the
/// sign bit set: the identity and (0, -1)).
fn small_order_encodings() -> Vec<[u8; 32]> {
    let mut v: Vec<[u8; 32]> = [
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        // non-canonical
        "0100000000000000000000000000000000000000000000000000000000000080",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    ]
    .iter()
    .map(|h| hex32(h))
    .collect();
    // Sanity: each decompresses (curve25519-dalek accepts non-canonical encodings) to a point
    // of small order.
    for e in &v {
        let p = CompressedEdwardsY(*e).decompress().expect("a point");
        assert!(p.is_small_order(), "{}", hex::encode(e));
    }
    v.dedup();
    assert_eq!(v.len(), 14);
    v
}

fn fact(writer: KeyId, i: usize) -> ProvEntry {
    let mut e = ProvEntry::new(writer, Kind::Fact, format!("fact {i}").as_bytes());
    e.time_ms = 1_700_000_000_000 + i as u64;
    e
}

fn answer(r: &Result<SignedEntry, RecordError>) -> Result<String, RecordError> {
    r.as_ref().map(|e| e.id().to_string()).map_err(Clone::clone)
}

type Answers = Vec<Result<String, RecordError>>;

/// The answers of `decode` one by one, of one `decode_batch`, and of `decode_on_all_cores`.
fn three_ways(items: &[Vec<u8>]) -> [Answers; 3] {
    let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
    [
        refs.iter()
            .map(|b| answer(&SignedEntry::decode(b)))
            .collect(),
        SignedEntry::decode_batch(&refs, |_| None)
            .iter()
            .map(answer)
            .collect(),
        decode_on_all_cores(&refs, |_| None)
            .iter()
            .map(answer)
            .collect(),
    ]
}

/// Each encoding of a small-order `R`, with `S = k·a` (which the cofactored equation alone
/// accepts: `[8]R` is the identity), is refused by every path, alone and among honest entries.
#[test]
fn small_order_r_forgeries_refused_in_every_encoding() {
    let w = WriterKey::for_label("review/forger");
    let a = secret_scalar(&w);
    let mut items = Vec::new();
    for (i, r) in small_order_encodings().into_iter().enumerate() {
        let e = fact(w.key_id(), i);
        let k = k_of(&r, &w.key_id(), &message(&e));
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&r);
        sig[32..].copy_from_slice((k * a).as_bytes());
        let cose = envelope(&e, &sig);
        assert_eq!(
            SignedEntry::decode(&cose).unwrap_err(),
            RecordError::BadSignature,
            "R = {}",
            hex::encode(r)
        );
        items.push(cose);
        // And an honest entry between them, so that batches are mixed.
        items.push(
            SignedEntry::sign(fact(w.key_id(), 100 + i), &w)
                .unwrap()
                .cose()
                .to_vec(),
        );
    }
    let [single, batch, cores] = three_ways(&items);
    assert_eq!(single, batch);
    assert_eq!(single, cores);
    assert_eq!(single.iter().filter(|a| a.is_ok()).count(), 14);
}

/// Entries whose kid is invalid in each way (non-canonical, not a point, small order in any
/// encoding), duplicated entries, many distinct writers, empty input and sizes around the split
/// threshold: the batch paths give the one-by-one answers, with or without cached keys, and
/// with a `known` lookup that answers with the wrong key.
#[test]
fn batch_answers_equal_single_on_invalid_kids_duplicates_and_many_keys() {
    let honest: Vec<WriterKey> = (0..40)
        .map(|i| WriterKey::for_label(&format!("review/w{i}")))
        .collect();
    let signer = &honest[0];
    let mut bad_kids: Vec<[u8; 32]> = small_order_encodings();
    bad_kids.push(hex32(
        "0200000000000000000000000000000000000000000000000000000000000000",
    )); // y = 2: not a point
    bad_kids.push(hex32(
        "efffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    )); // y = p + 2
    bad_kids.push(hex32(
        "f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    )); // y = p + 3, sign bit set
    let mut pool: Vec<Vec<u8>> = Vec::new();
    for (i, kid) in bad_kids.iter().enumerate() {
        let e = fact(KeyId(*kid), i);
        let sig = signer.sign(&message(&e));
        pool.push(envelope(&e, &sig));
    }
    for (i, w) in honest.iter().enumerate() {
        pool.push(
            SignedEntry::sign(fact(w.key_id(), i), w)
                .unwrap()
                .cose()
                .to_vec(),
        );
        // A bad signature by the same writer.
        let mut bad = SignedEntry::sign(fact(w.key_id(), 1000 + i), w)
            .unwrap()
            .cose()
            .to_vec();
        let n = bad.len();
        bad[n - 40] ^= 1;
        pool.push(bad);
    }
    let cached: Vec<PublicKey> = honest
        .iter()
        .step_by(2)
        .map(|w| w.key_id().public_key().unwrap())
        .collect();
    let liar = honest[1].key_id().public_key().unwrap();
    // A deterministic shuffle with duplicates (xorshift).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    for len in [0usize, 1, 2, 3, 4, 5, 31, 32, 33, 64, 97, 150] {
        let items: Vec<&[u8]> = (0..len)
            .map(|_| pool[next(pool.len())].as_slice())
            .collect();
        let single: Vec<_> = items
            .iter()
            .map(|b| answer(&SignedEntry::decode(b)))
            .collect();
        for mode in 0..3 {
            let known = |k: &KeyId| match mode {
                0 => None,
                1 => cached.iter().find(|p| p.id() == *k).copied(),
                _ => Some(liar),
            };
            let batch: Vec<_> = SignedEntry::decode_batch(&items, known)
                .iter()
                .map(answer)
                .collect();
            let cores: Vec<_> = decode_on_all_cores(&items, known)
                .iter()
                .map(answer)
                .collect();
            assert_eq!(single, batch, "len {len} mode {mode}");
            assert_eq!(single, cores, "len {len} mode {mode}");
        }
    }
    // Every bad kid gives its class whatever path.
    for (kid, e) in bad_kids.iter().zip(&pool) {
        let got = SignedEntry::decode(e).unwrap_err();
        assert!(
            matches!(
                got,
                RecordError::WeakKey | RecordError::BadKey | RecordError::NonCanonicalKey
            ),
            "{}: {got:?}",
            hex::encode(kid)
        );
    }
}

/// A universal forgery under each encoding of a small-order key: `R = [r]B`, `S = r` satisfies
/// `[8][S]B = [8]R + [8][k]A` for every message when `[8]A` is the identity. Every encoding
/// must be refused as a key (`WeakKey`, or `NonCanonicalKey` for y >= p), alone and in a batch;
/// the two with x = 0 and the sign bit set are the ones the byte list alone does not catch.
#[test]
fn small_order_key_forgeries_refused_in_every_encoding() {
    let r = Scalar::from(0x1234_5678_9abc_def0u64);
    let big_r = (curve25519_dalek::constants::ED25519_BASEPOINT_POINT * r)
        .compress()
        .0;
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(&big_r);
    sig[32..].copy_from_slice(r.as_bytes());
    let mut items = Vec::new();
    let mut want = Vec::new();
    for (i, kid) in small_order_encodings().into_iter().enumerate() {
        let e = fact(KeyId(kid), i);
        items.push(envelope(&e, &sig));
        let y_ge_p =
            kid[0] >= 0xed && kid[1..31].iter().all(|&b| b == 0xff) && kid[31] & 0x7f == 0x7f;
        want.push(Err(if y_ge_p {
            RecordError::NonCanonicalKey
        } else {
            RecordError::WeakKey
        }));
    }
    let [single, batch, cores] = three_ways(&items);
    assert_eq!(batch, cores);
    for (i, kid) in small_order_encodings().iter().enumerate() {
        assert_eq!(single[i], want[i], "kid {}", hex::encode(kid));
    }
    assert_eq!(batch, want);
}

/// One audit source item: entry bytes and stored label, or a read error.
type Read = Result<(Vec<u8>, Option<Label>), String>;

#[derive(Default)]
struct Seen(Vec<u64>);

impl AuditProgress for Seen {
    fn entries_checked(&mut self, checked: u64) {
        self.0.push(checked);
    }
}

/// The audit's pipelined chunks: a key bound as the last entry of chunk 0 and first used in
/// chunk 1, a key bound and used in the same chunk, a key used one entry before its binding
/// (the only failure), a read error mid-way (an error, after the progress of whole chunks).
#[test]
fn audit_chunks_keep_keyring_order_and_read_errors() {
    let signer = LogSigner::new("review.example/log", WriterKey::for_label("review/log")).unwrap();
    let mut l = Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).unwrap();
    let agent = WriterKey::for_label("review/agent");
    l.bind(agent.key_id(), Role::Agent, "agent").unwrap();
    let filler = |l: &mut Ledger<MemoryStore>, upto: u64| {
        let texts: Vec<Vec<u8>> = (l.len()..upto)
            .map(|i| format!("filler {i}").into_bytes())
            .collect();
        if texts.is_empty() {
            return;
        }
        l.append_batch(
            texts
                .iter()
                .map(|c| Draft {
                    entry: ProvEntry::new(agent.key_id(), Kind::Fact, c),
                    key: &agent,
                    content: c,
                })
                .collect(),
        )
        .unwrap();
    };
    let c0 = AUDIT_CHUNK as u64;
    // x bound at index c0 - 1 (last of chunk 0), first used at c0 (first of chunk 1).
    let x = WriterKey::for_label("review/x");
    filler(&mut l, c0 - 1);
    l.bind(x.key_id(), Role::User, "x").unwrap();
    assert_eq!(l.len(), c0);
    let p = ProvEntry::new(x.key_id(), Kind::Prompt, b"x first");
    l.append(p, &x, b"x first").unwrap();
    // y bound and used inside chunk 1.
    let y = WriterKey::for_label("review/y");
    filler(&mut l, c0 + 10);
    l.bind(y.key_id(), Role::User, "y").unwrap();
    let p = ProvEntry::new(y.key_id(), Kind::Prompt, b"y first");
    l.append(p, &y, b"y first").unwrap();
    filler(&mut l, 2 * c0 + 5);
    let c = l.checkpoint().unwrap();
    let v = l.verifier().unwrap();
    let store = l.store();
    let mut items: Vec<(Vec<u8>, Option<Label>)> = store_reads::read_one_by_one(store)
        .into_iter()
        .map(|(meta, cose, _)| (cose, Some(meta.label)))
        .collect();
    let run = |items: Vec<Read>| {
        let mut seen = Seen::default();
        let r = audit_with_progress(items, &v, c.note(), l.policy(), v.key_id(), &mut seen);
        (r, seen.0)
    };
    let (r, seen) = run(items.iter().cloned().map(Ok).collect());
    let r = r.unwrap();
    assert!(r.is_clean(), "{:?}", r.failures);
    assert_eq!(seen, vec![c0, 2 * c0, l.len()]);
    // z used at one index, bound at the next (both in chunk 1): one UnknownWriter, then the
    // root no longer matches (the log was changed) but nothing else fails.
    let z = WriterKey::for_label("review/z");
    let use_z = SignedEntry::sign(ProvEntry::new(z.key_id(), Kind::Prompt, b"z"), &z).unwrap();
    let (bind_z, _) = l.binding_entry(z.key_id(), Role::User, "z").unwrap();
    let at = (c0 + 20) as usize;
    items[at] = (use_z.cose().to_vec(), Some(Label::Trusted));
    items[at + 1] = (bind_z.cose().to_vec(), Some(Label::Trusted));
    let (r, _) = run(items.iter().cloned().map(Ok).collect());
    let r = r.unwrap();
    let got: Vec<(u64, Problem)> = r
        .failures
        .iter()
        .map(|f| (f.index, f.problem.clone()))
        .collect();
    assert_eq!(
        got,
        vec![(
            at as u64,
            Problem::Admission(AdmissionError::UnknownWriter(z.key_id()))
        )]
    );
    // A read error in chunk 1: the audit fails with it, after reporting chunk 0 only.
    let mut with_error: Vec<Read> = items.iter().cloned().map(Ok).collect();
    with_error[c0 as usize + 7] = Err("disk on fire".into());
    let (r, seen) = run(with_error);
    assert!(
        matches!(r, Err(AuditError::Source(ref s)) if s.contains("disk on fire")),
        "{r:?}"
    );
    assert_eq!(seen, vec![c0]);
}

/// A SQLite file whose `content` table holds a row twice (a file not written by memlineage:
/// `SqliteStore::open` checks that the tables exist, not their constraints). The per-entry
/// reads (`content_at`) see one content; `entries_from`'s `LEFT JOIN` returns the entry twice and
/// then reports an index gap that is not there, so `memlineage verify` stops with a false
/// diagnosis instead of auditing a ledger whose entries are all intact.
#[test]
fn sqlite_range_read_survives_a_duplicated_content_row() {
    use memlineage::audit::audit;
    use memlineage::store::SqliteStore;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.ledger");
    let signer = LogSigner::new("review.example/dup", WriterKey::for_label("review/log")).unwrap();
    let mut l = Ledger::create(
        SqliteStore::open(&path).unwrap(),
        signer,
        LabelPolicy::default(),
    )
    .unwrap();
    let agent = WriterKey::for_label("review/agent");
    l.bind(agent.key_id(), Role::Agent, "agent").unwrap();
    for i in 0..5 {
        let text = format!("fact {i}");
        l.append(
            ProvEntry::new(agent.key_id(), Kind::Fact, text.as_bytes()),
            &agent,
            text.as_bytes(),
        )
        .unwrap();
    }
    let (c, v, policy) = (l.checkpoint().unwrap(), l.verifier().unwrap(), l.policy());
    drop(l);
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute_batch(
        "ALTER TABLE content RENAME TO content_old;
         CREATE TABLE content (hash BLOB NOT NULL, bytes BLOB NOT NULL);
         INSERT INTO content SELECT hash, bytes FROM content_old;
         INSERT INTO content SELECT hash, bytes FROM content_old
             WHERE bytes = CAST('fact 2' AS BLOB);
         DROP TABLE content_old;",
    )
    .unwrap();
    drop(db);
    let store = SqliteStore::open(&path).unwrap();
    let n = store.tree_size().unwrap();
    let per_entry = store_reads::read_one_by_one(&store);
    let ranged = store.entries_from(0, n as usize);
    assert!(ranged.is_ok(), "{}", ranged.unwrap_err());
    assert!(
        ranged.unwrap() == per_entry,
        "entries_from differs from the per-entry reads"
    );
    let r = audit(store.audit_items(), &v, c.note(), policy, v.key_id());
    assert!(r.as_ref().is_ok_and(|r| r.is_clean()), "{r:?}");
}
