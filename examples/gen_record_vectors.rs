//! Writes `tests/vectors/record.json`, the known-answer vectors for entry encoding.
//!
//! `cargo run --example gen_record_vectors > tests/vectors/record.json`
//! Keys come from fixed public seeds: never use them for real data.

use memlineage::record::{
    encode_payload, Attribution, EntryId, Hash32, KeyBinding, Kind, Parent, ProvEntry, Role,
    SignedEntry, Weight, WriterKey,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seed = |b: u8| [b; 32];
    let user = WriterKey::from_seed(&seed(1));
    let agent = WriterKey::from_seed(&seed(2));
    let log = WriterKey::from_seed(&seed(3));
    let prompt = ProvEntry::new(user.key_id(), Kind::Prompt, b"Can you please pay the bill?")
        .with_time_ms(1_735_689_600_000);
    let p = SignedEntry::sign(prompt, &user)?;
    let summary = ProvEntry::new(
        agent.key_id(),
        Kind::Summary,
        b"Bill: 98.70 to UK12345678901234567890",
    )
    .with_parents(vec![
        Parent {
            id: p.id(),
            weight: Weight::ONE,
        },
        Parent {
            id: EntryId([0xab; 32]),
            weight: Weight::new(500_000)?,
        },
    ])
    .with_source_hash(Hash32::digest(b"raw bill text"))
    .with_context_hash(Hash32::digest(b"context window"))
    .with_attribution(Attribution::LmSelfEval)
    .with_time_ms(1_735_689_600_500);
    let s = SignedEntry::sign(summary, &agent)?;
    let mut tomb = ProvEntry::new(user.key_id(), Kind::Tombstone, b"user asked to forget")
        .with_time_ms(1_735_689_601_000);
    tomb.target = Some(s.id());
    let t = SignedEntry::sign(tomb, &user)?;
    let mut ring = ProvEntry::new(log.key_id(), Kind::Keyring, b"bind agent");
    ring.binding = Some(KeyBinding {
        key: agent.key_id(),
        role: Role::Agent,
        name: "agent".into(),
    });
    let r = SignedEntry::sign(ring, &log)?;
    // Kind 7 (quarantine, spec/forensics.md): a flag on the summary, written by the user.
    let mut flag = ProvEntry::new(user.key_id(), Kind::Quarantine, b"advisory: injected bill")
        .with_time_ms(1_735_689_602_000);
    flag.target = Some(s.id());
    let q = SignedEntry::sign(flag, &user)?;
    let cases: Vec<serde_json::Value> = [
        ("prompt", &p, 1u8),
        ("summary-two-parents", &s, 2),
        ("tombstone", &t, 1),
        ("keyring", &r, 3),
        ("quarantine", &q, 1),
    ]
    .into_iter()
    .map(|(name, e, seed_byte)| {
        serde_json::json!({
            "name": name,
            "seed_hex": hex::encode(seed(seed_byte)),
            "payload_hex": hex::encode(encode_payload(e.entry())),
            "cose_hex": hex::encode(e.cose()),
            "id_hex": e.id().to_string(),
        })
    })
    .collect();
    let doc = serde_json::json!({
        "generated_by": "cargo run --example gen_record_vectors (memlineage record@v1); @generated",
        "warning": "test keys from public seeds [b;32]",
        "cases": cases,
    });
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}
