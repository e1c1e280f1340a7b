//! Sequences of ledger operations driven by the input bytes: no panic, and a full audit of
//! the result is clean. `tests/ops.rs` runs the same idea under proptest on stable Rust.
#![no_main]
use libfuzzer_sys::fuzz_target;
use memlineage::audit::audit;
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Parent, ProvEntry, Role, Weight, WriterKey};
use memlineage::store::{MemoryStore, Store};
use memlineage::Ledger;

fuzz_target!(|data: &[u8]| {
    let signer = LogSigner::new("fuzz.example/ops", WriterKey::for_label("fuzz/log")).expect("origin");
    let mut l = Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).expect("empty");
    let keys = [WriterKey::for_label("fuzz/u"), WriterKey::for_label("fuzz/a"), WriterKey::for_label("fuzz/t")];
    for (k, r) in keys.iter().zip([Role::User, Role::Agent, Role::Tool]) {
        l.bind(k.key_id(), r, r.name()).expect("bind");
    }
    let mut ids: Vec<EntryId> = Vec::new();
    for (n, chunk) in data.chunks(4).enumerate() {
        let [op, a, b, c] = [0, 1, 2, 3].map(|i| chunk.get(i).copied().unwrap_or(0));
        let w = usize::from(a % 3);
        let text = format!("{n}");
        match op % 4 {
            0 | 1 => {
                let mut parents = Vec::new();
                if !ids.is_empty() {
                    parents.push(Parent { id: ids[usize::from(b) % ids.len()], weight: Weight::new(u64::from(c) * 4000).unwrap_or(Weight::ONE) });
                }
                let e = ProvEntry::new(keys[w].key_id(), Kind::Fact, text.as_bytes()).with_parents(parents);
                if let Ok(x) = l.append(e, &keys[w], text.as_bytes()) {
                    ids.push(x.id);
                }
            }
            2 if !ids.is_empty() => {
                let _ = l.tombstone(ids[usize::from(b) % ids.len()], &keys[w], &text);
            }
            _ if !ids.is_empty() => {
                let id = ids[usize::from(b) % ids.len()];
                let (p, cp) = l.prove_inclusion(&id).expect("prove");
                cp.verify_inclusion(&id, &p).expect("verify");
            }
            _ => {}
        }
    }
    let c = l.checkpoint().expect("checkpoint");
    let v = l.verifier().expect("verifier");
    let store = l.store();
    let metas = store.metas_from(0).expect("metas");
    let entries = metas.iter().map(|m| Ok::<_, String>((store.entry_bytes(m.index).expect("io").expect("bytes"), Some(m.label))));
    let r = audit(entries, &v, c.note(), l.label_policy(), v.key_id()).expect("audit");
    assert!(r.is_clean());
});
