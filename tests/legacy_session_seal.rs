//! A session record sealed by the first seal (`memlineage/session-seal@v1`, `spec/hooks.md` §6:
//! no context entry, nothing seen) covers the id and the reads only: it was written before
//! records said how a session began. It still verifies as it was written (not started, no
//! unseen history), but one whose `started` was set, or whose `unseen` was given, by someone
//! without the key (the store-only attacker, editing the file) is refused as altered: `started`
//! is what lets a session that was not seen from its start make sensitive calls (§3.1).

use memlineage::front::{DerivedKeys, Front, Refusal, Session, Verdict};
use memlineage::gate::Policy;
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::WriterKey;
use memlineage::store::MemoryStore;
use memlineage::Ledger;
use serde_json::{json, Value};
use std::collections::HashMap;

type F = Front<MemoryStore, DerivedKeys>;

fn front() -> F {
    let signer =
        LogSigner::new("test.example/legacy", WriterKey::for_label("legacy-log")).expect("signer");
    let l = Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).expect("ledger");
    let policy = Policy::from_toml(
        r#"
        default_max_label = "derived_trusted"
        sensitive_tools = ["send_money"]
        "#,
    )
    .expect("policy");
    let mut f = Front::new(l, policy, DerivedKeys("legacy".into()));
    f.require_start(true);
    f
}

/// A record as the first seal wrote it: `id` and its reads, sealed with `@v1`.
fn sealed_v1(f: &F, id: &str, reads: Vec<memlineage::record::EntryId>) -> Value {
    let mut m = (id.len() as u64).to_be_bytes().to_vec();
    m.extend_from_slice(id.as_bytes());
    for r in &reads {
        m.extend_from_slice(&r.0);
    }
    let seal = hex::encode(f.ledger().seal_tag(b"memlineage/session-seal@v1", &m));
    let reads: Vec<String> = reads.iter().map(|r| r.to_string()).collect();
    json!({"id": id, "reads": reads, "unrecorded": 0, "seal": seal})
}

fn verdict(f: &mut F, record: &Value) -> Verdict {
    let s: Session = serde_json::from_value(record.clone()).expect("record");
    let pay = json!({"recipient": "ZZ77ACCOUNT0001", "amount": 5000});
    f.check(
        &s,
        "send_money",
        pay.as_object().expect("object"),
        &HashMap::new(),
    )
    .expect("check")
    .verdict
}

#[test]
fn a_first_seal_does_not_vouch_for_a_start_it_never_covered() {
    let mut f = front();
    // The prompt the session read, recorded for it (as the first hooks did).
    let mut s = Session::new("legacy");
    let prompt = f
        .record_prompt(&mut s, "pay 5000 to ZZ77ACCOUNT0001")
        .expect("prompt");
    let record = sealed_v1(&f, "legacy", vec![prompt.id]);

    // As written: the seal verifies, and the session, not seen from its start, is refused as
    // such (not as altered).
    let v = verdict(&mut f, &record);
    assert!(
        matches!(v, Verdict::Deny(Refusal::UnseenStart { .. })),
        "{v:?}"
    );

    // `started` set by someone without the key: altered.
    let mut forged = record.clone();
    forged["started"] = json!(true);
    let v = verdict(&mut f, &forged);
    assert!(
        matches!(v, Verdict::Deny(Refusal::Unreadable { reason: ref why }) if why.contains("altered")),
        "{v:?}"
    );
}
