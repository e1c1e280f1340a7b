//! A label proof over a raw log (entries signed here, not admitted by a ledger): what a log
//! key that misbehaved would sign. Used by `examples/gen_label_proof_vectors.rs`.

use memlineage::lineage::effects_index::{EffectsIndex, Subject};
use memlineage::lineage::label_proof::{LabelProof, ProvedEntry};
use memlineage::lineage::LabelPolicy;
use memlineage::log::{hashes_to_store, prove_inclusion, tree_root, LogSigner};
use memlineage::record::{EntryId, SignedEntry, WriterKey};
use std::collections::BTreeSet;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A label proof of entry `subject` of the raw log `entries`, signed by the test log key:
/// every entry of the log carried, every subject looked up that the verifier asks for.
pub fn raw_proof(entries: &[SignedEntry], subject: u64) -> Res<LabelProof> {
    let signer = LogSigner::new(super::ORIGIN, WriterKey::for_label("log"))?;
    let mut tree: Vec<[u8; 32]> = Vec::new();
    let mut index = EffectsIndex::default();
    for (i, e) in entries.iter().enumerate() {
        tree.extend(hashes_to_store(i as u64, &e.id(), &tree)?);
        index.push(i as u64, e.id(), e.entry());
    }
    let n = entries.len() as u64;
    let ext = format!(
        "{}{}",
        LabelPolicy::default().extension_line(),
        index.commitment().extension_line()
    );
    let checkpoint = signer.sign_with(n, &tree_root(n, &tree)?, &ext)?;
    // The subject's ancestry (parents found by id anywhere in the log), the subjects the
    // verifier needs looked up, and their effects.
    let at = |id: &EntryId| entries.iter().position(|e| e.id() == *id);
    let mut closure = BTreeSet::from([subject as usize]);
    let mut queue = vec![subject as usize];
    while let Some(x) = queue.pop() {
        for p in &entries[x].entry().parents {
            let i = at(&p.id).ok_or("parent not in the raw log")?;
            if closure.insert(i) {
                queue.push(i);
            }
        }
    }
    let mut subjects = BTreeSet::new();
    for &i in &closure {
        if entries[i].writer() != signer.key_id() {
            subjects.insert(Subject::Key(entries[i].writer()));
        }
        subjects.insert(Subject::Target(entries[i].id()));
    }
    let mut carried = closure.clone();
    let mut lookups = Vec::new();
    for s in subjects {
        let (lookup, effects) = index.lookup(s);
        carried.extend(effects.iter().map(|e| e.index as usize));
        lookups.push(lookup);
    }
    let entries = carried
        .into_iter()
        .map(|i| {
            Ok(ProvedEntry {
                index: i as u64,
                cose: entries[i].cose().to_vec(),
                path: prove_inclusion(n, i as u64, &tree)?.path,
            })
        })
        .collect::<Res<_>>()?;
    Ok(LabelProof {
        subject,
        entries,
        lookups,
        checkpoint,
    })
}
