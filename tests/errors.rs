//! Every error message of the record, ledger, audit, replay and gate error enums, once
//! (the log and store enums test theirs beside their definitions).

use memlineage::audit::{AuditError, Problem};
use memlineage::eval::replay::ReplayError;
use memlineage::gate::PolicyError;
use memlineage::lineage::admission::AdmissionError;
use memlineage::lineage::Label;
use memlineage::record::{EntryId, KeyId, ParseIdError, RecordError, Role, WeightError};
use memlineage::LedgerError;

fn id() -> EntryId {
    EntryId([0xab; 32])
}

fn key() -> KeyId {
    KeyId([0xcd; 32])
}

#[test]
fn record_errors() {
    let ab = "ab".repeat(32);
    let cases: Vec<(RecordError, String)> = vec![
        (RecordError::TooLarge { got: 70_000, max: 65_536 }, "entry too large: 70000 bytes, max 65536".into()),
        (RecordError::Malformed { reason: "x".into() }, "malformed CBOR: x".into()),
        (RecordError::Truncated, "truncated CBOR: input ends inside an item or a declared length exceeds it".into()),
        (RecordError::IndefiniteLength, "indefinite-length item (RFC 8949 §4.2.1)".into()),
        (RecordError::NonShortest, "argument not in shortest form (RFC 8949 §4.2.1)".into()),
        (RecordError::Float, "floating-point value where the format has none".into()),
        (RecordError::UnsupportedSimple, "simple value where the format has none".into()),
        (RecordError::TooDeep { max: 8 }, "8 or more nested containers".into()),
        (RecordError::TrailingBytes(2), "trailing bytes after the CBOR item: 2 bytes".into()),
        (RecordError::NonCanonical, "not deterministically encoded (RFC 8949 §4.2.1)".into()),
        (RecordError::UnsortedKeys, "map keys not in ascending order".into()),
        (RecordError::DuplicateKey(3), "duplicate map key 3".into()),
        (RecordError::UnknownField { key: "11".into() }, "unknown field 11".into()),
        (RecordError::MissingField("time"), "missing field time".into()),
        (RecordError::UnexpectedField("target"), "field target not allowed for this kind".into()),
        (RecordError::WrongType { field: "kind", want: "an unsigned integer" }, "field kind: an unsigned integer".into()),
        (RecordError::WrongTag, "not a tagged COSE_Sign1 (tag 18)".into()),
        (RecordError::BadProtectedHeader, "protected header must be exactly {1: -8 (EdDSA), 4: kid}".into()),
        (RecordError::UnprotectedHeader, "unprotected header must be empty".into()),
        (RecordError::WriterMismatch, "payload writer differs from the COSE kid".into()),
        (RecordError::Version { got: 2 }, "unsupported format version 2".into()),
        (RecordError::UnknownCode { what: "kind", code: 9 }, "unregistered kind code 9".into()),
        (RecordError::Weight(WeightError { got: 1_500_000 }), "weight out of range: got 1500000 millionths, want 0..=1000000".into()),
        (RecordError::Weight(WeightError { got: u64::MAX }), "weight out of range: got a negative or non-finite number of millionths, want 0..=1000000".into()),
        (RecordError::UnsortedParents, "parents not sorted by id".into()),
        (RecordError::DuplicateParent(id()), format!("duplicate parent {ab}")),
        (RecordError::TooManyParents { got: 2000, max: 1024 }, "too many parents: 2000, max 1024".into()),
        (RecordError::NameTooLong { got: 300, max: 256 }, "principal name too long: 300 bytes, max 256".into()),
        (RecordError::BadKey, "kid is not a valid Ed25519 public key".into()),
        (RecordError::NonCanonicalKey, "kid is a non-canonical Ed25519 point encoding".into()),
        (RecordError::WeakKey, "kid is a small-order Ed25519 public key".into()),
        (RecordError::BadSignature, "signature verification failed".into()),
    ];
    for (e, want) in cases {
        assert_eq!(e.to_string(), want);
    }
    assert_eq!(
        ParseIdError.to_string(),
        "an entry id is 64 hex digits (32 bytes)"
    );
}

#[test]
fn ledger_errors() {
    let (ab, cd) = ("ab".repeat(32), "cd".repeat(32));
    let cases: Vec<(LedgerError, String)> = vec![
        (
            LedgerError::Admission(AdmissionError::UnknownWriter(key())),
            format!("writer {cd} is not bound in the keyring"),
        ),
        (
            LedgerError::Admission(AdmissionError::UnknownParent(id())),
            format!("unknown parent {ab}"),
        ),
        (
            LedgerError::Admission(AdmissionError::UnknownTarget(id())),
            format!("unknown target {ab}"),
        ),
        (
            LedgerError::UnknownEntry(id()),
            format!("unknown entry {ab}"),
        ),
        (
            LedgerError::IndexOutOfRange { index: 5, size: 5 },
            "index 5 out of range for tree size 5".into(),
        ),
        (
            LedgerError::Admission(AdmissionError::Duplicate(id())),
            format!("entry {ab} already in the log"),
        ),
        (
            LedgerError::Admission(AdmissionError::ContentMismatch),
            "content does not match the entry's content hash".into(),
        ),
        (
            LedgerError::Admission(AdmissionError::NotLogKey),
            "only the log key may write keyring entries".into(),
        ),
        (
            LedgerError::Admission(AdmissionError::UntrustedTombstone(key())),
            format!("writer {cd} (tool/external) may not write tombstones"),
        ),
        (
            LedgerError::Admission(AdmissionError::Rebind {
                key: key(),
                bound: Role::Tool,
            }),
            format!("key {cd} already bound as tool"),
        ),
        (
            LedgerError::Admission(AdmissionError::BindsLogRole(key())),
            format!("key {cd} may not be bound to role log"),
        ),
        (LedgerError::NotEmpty, "store already holds a ledger".into()),
        (
            LedgerError::NotALedger,
            "store holds no ledger (missing settings)".into(),
        ),
        (
            LedgerError::WrongLogKey,
            "log key does not match this ledger".into(),
        ),
        (
            LedgerError::Missing(id()),
            format!("entry {ab} missing from the store"),
        ),
        (
            LedgerError::NotTheEntry { id: id(), index: 7 },
            format!("the bytes stored at index 7 are not entry {ab} (store tampered with)"),
        ),
        (LedgerError::EmptyBatch, "empty batch".into()),
        (
            LedgerError::ContentTampered(id()),
            format!("content of entry {ab} does not match its signed content hash"),
        ),
        (
            LedgerError::Record(RecordError::BadSignature),
            "signature verification failed".into(),
        ),
    ];
    for (e, want) in cases {
        assert_eq!(e.to_string(), want);
    }
}

#[test]
fn audit_replay_and_policy_errors() {
    let ab = "ab".repeat(32);
    // A TOML error's own message holds its line and column; the policy's adds its prefix.
    let toml_error = toml::from_str::<toml::Value>("x =").unwrap_err();
    let cases: Vec<(String, String)> = vec![
        (
            Problem::Record(RecordError::BadSignature).to_string(),
            "entry does not verify: signature verification failed".into(),
        ),
        (
            Problem::Admission(AdmissionError::UnknownWriter(key())).to_string(),
            format!("writer {} not bound in the keyring", "cd".repeat(32)),
        ),
        (
            Problem::Admission(AdmissionError::NotLogKey).to_string(),
            "keyring entry not written by the log key".into(),
        ),
        (
            Problem::Admission(AdmissionError::UnknownParent(id())).to_string(),
            format!("parent {ab} is not earlier in the log"),
        ),
        (
            Problem::Admission(AdmissionError::UnknownTarget(id())).to_string(),
            format!("tombstone target {ab} is not earlier in the log"),
        ),
        (
            Problem::LabelMismatch {
                stored: Label::Trusted,
                recomputed: Label::External,
            }
            .to_string(),
            "stored label TRUSTED differs from recomputed EXTERNAL".into(),
        ),
        (
            Problem::Admission(AdmissionError::Duplicate(id())).to_string(),
            "duplicate entry".into(),
        ),
        (
            Problem::Admission(AdmissionError::ContentMismatch).to_string(),
            "stored content does not match the signed content hash".into(),
        ),
        (
            Problem::Admission(AdmissionError::UntrustedTombstone(key())).to_string(),
            format!("tombstone by tool/external writer {}", "cd".repeat(32)),
        ),
        (
            Problem::Admission(AdmissionError::BindsLogRole(key())).to_string(),
            format!("keyring entry binds {} to role log", "cd".repeat(32)),
        ),
        (
            Problem::Admission(AdmissionError::Rebind {
                key: key(),
                bound: Role::Tool,
            })
            .to_string(),
            format!("keyring entry rebinds {}", "cd".repeat(32)),
        ),
        (
            AuditError::Truncated { got: 3, want: 5 }.to_string(),
            "log has 3 entries, checkpoint covers 5".into(),
        ),
        (
            AuditError::Source {
                detail: "disk".into(),
            }
            .to_string(),
            "reading entries: disk".into(),
        ),
        (
            ReplayError::Parse {
                line: 2,
                msg: "eof".into(),
            }
            .to_string(),
            "trace line 2: eof".into(),
        ),
        (
            ReplayError::BadRun {
                reason: "event 3: unknown event kind".into(),
            }
            .to_string(),
            "bad run: event 3: unknown event kind".into(),
        ),
        (
            ReplayError::Ledger(LedgerError::EmptyBatch).to_string(),
            "empty batch".into(),
        ),
        (
            PolicyError::Toml(toml_error.clone()).to_string(),
            format!("policy: {toml_error}"),
        ),
        (
            PolicyError::UnknownLabel {
                label: "meh".into(),
            }
            .to_string(),
            "policy: unknown label `meh`".into(),
        ),
        (
            PolicyError::UnknownSetting {
                setting: "unsourced",
                value: "meh".into(),
            }
            .to_string(),
            "policy: setting `unsourced` does not take `meh`".into(),
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}
