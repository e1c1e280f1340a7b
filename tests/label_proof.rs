//! Offline label proofs (`spec/label-proof.md`): every entry of the bundled banking ledger —
//! quarantined, released and tombstoned ones included — proved and verified with the log's
//! verifier key alone gives the ledger's own answers; the independent Python verifier
//! (`spec/reference/verify_label_proof.py`) agrees on every proof; and a prover that leaves out
//! or changes anything gets an error, never a better label.

#[path = "common/ledger_support.rs"]
mod ledger_support;
#[path = "common/reference_support.rs"]
mod reference_support;

use ledger_support::put;
use memlineage::eval::replay::{Mode, Replayer};
use memlineage::gate::Policy;
use memlineage::lineage::label_proof::{LabelProof, LabelProofError, LabelVerdict};
use memlineage::lineage::{Label, LabelPolicy, WeakRule};
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Role, Weight, WriterKey};
use memlineage::store::{MemoryStore, Store};
use memlineage::Ledger;
use std::collections::BTreeMap;
use std::io::BufReader;

const BANKING: &str = include_str!("../fixtures/agentdojo/banking.jsonl");

fn signer() -> LogSigner {
    LogSigner::new(
        "test.example/label-proof",
        WriterKey::for_label("tests/label-proof-log"),
    )
    .unwrap()
}

/// The banking ledger the demo builds (both modes, injections flagged by an advisory), plus a
/// user who tombstones every 97th entry it wrote and releases every 5th flag.
fn banking() -> Ledger<MemoryStore> {
    let mut l = Ledger::create(MemoryStore::default(), signer(), LabelPolicy::default()).unwrap();
    let advisory = WriterKey::for_label("tests/label-proof-advisory");
    let mut r = Replayer::new(&mut l, Policy::default());
    r.flag_injections(WriterKey::for_label("tests/label-proof-advisory"))
        .unwrap();
    r.replay_reader(BufReader::new(BANKING.as_bytes()), &Mode::ALL)
        .unwrap();
    let user = WriterKey::for_label("tests/label-proof-user");
    l.bind(user.key_id(), Role::User, "auditor").unwrap();
    let n = l.len();
    let flags: Vec<EntryId> = l.quarantine().flags().map(|f| f.entry).collect();
    for f in flags.iter().step_by(5) {
        l.release(*f, &advisory, "false alarm").unwrap();
    }
    for i in (3..n).step_by(97) {
        let id = l.get_by_index(i).unwrap().id();
        l.tombstone(id, &user, "forget it").unwrap();
    }
    l
}

/// What the ledger itself says about `id`, in the verdict's terms.
fn ledger_view<S: Store>(l: &Ledger<S>, id: &EntryId) -> (Label, bool, bool, Vec<EntryId>) {
    (
        l.label(id).unwrap(),
        l.is_quarantined(id),
        l.is_tombstoned(id),
        l.untrusted_path(id).unwrap(),
    )
}

fn verdict_view(v: &LabelVerdict) -> (Label, bool, bool, Vec<EntryId>) {
    (
        v.label,
        v.quarantine.is_some(),
        !v.tombstones.is_empty(),
        v.path.clone(),
    )
}

#[test]
fn every_entry_of_the_banking_ledger_round_trips_and_the_reference_agrees() {
    let mut l = banking();
    let verifier = l.verifier().unwrap();
    let vkey = l.vkey();
    let dir = tempfile::tempdir().unwrap();
    let mut expected = Vec::new();
    let (mut sizes, mut counts) = (Vec::new(), BTreeMap::new());
    for i in 0..l.len() {
        let id = l.get_by_index(i).unwrap().id();
        let text = l.prove_label(&id).unwrap().to_text();
        let v = LabelProof::parse(text.as_bytes())
            .unwrap()
            .verify(&verifier, Some(l.label_policy()))
            .unwrap_or_else(|e| panic!("entry {i}: {e}"));
        assert_eq!(v.entry.id(), id);
        assert_eq!(v.index(), i);
        assert_eq!(verdict_view(&v), ledger_view(&l, &id), "entry {i}");
        if let Some(q) = &v.quarantine {
            let (path, reach) = l.quarantine_path(&id).unwrap().unwrap();
            assert_eq!((&q.path, q.reach), (&path, reach), "entry {i}");
            assert!(l.quarantine().flag(&q.flag).is_some(), "an active flag");
        }
        *counts
            .entry((v.label, v.quarantine.is_some(), !v.tombstones.is_empty()))
            .or_insert(0u64) += 1;
        sizes.push(text.len());
        std::fs::write(dir.path().join(format!("{i}.label-proof")), &text).unwrap();
        expected.push(serde_json::json!({
            "file": format!("{i}.label-proof"),
            "id": id.to_string(),
            "label": v.label.name(),
            "quarantined": v.quarantine.is_some(),
            "tombstoned": !v.tombstones.is_empty(),
            "path": v.path.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        }));
    }
    // The ledger has every kind of answer: each label, quarantined and not, tombstoned and not.
    for label in Label::ALL {
        assert!(counts.keys().any(|k| k.0 == label), "{counts:?}");
    }
    assert!(counts.keys().any(|k| k.1) && counts.keys().any(|k| !k.1));
    assert!(counts.keys().any(|k| k.2) && counts.keys().any(|k| !k.2));
    assert!(
        counts.keys().any(|k| k.1 && k.2),
        "quarantined and tombstoned"
    );
    sizes.sort_unstable();
    eprintln!(
        "{} label proofs: median {} bytes, max {} bytes; {counts:?}",
        sizes.len(),
        sizes[sizes.len() / 2],
        sizes[sizes.len() - 1]
    );
    reference_agrees(dir.path(), &vkey, &expected);
}

/// Runs the independent Python verifier over every proof written in `dir` and requires its
/// verdicts to be the ones expected. It needs Python 3 with `cbor2`
/// (`spec/reference/requirements.txt`): `MEMLINEAGE_REFERENCE_PYTHON` names the interpreter;
/// without it the check is skipped, unless `MEMLINEAGE_REQUIRE_REFERENCE` is set (CI sets
/// both, `.ci/run`).
fn reference_agrees(dir: &std::path::Path, vkey: &str, expected: &[serde_json::Value]) {
    let Some(python) = reference_support::reference_python() else {
        return;
    };
    let list = dir.join("expected.json");
    std::fs::write(&list, serde_json::to_vec(expected).unwrap()).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/spec/reference/verify_label_proof.py"
    );
    let out = std::process::Command::new(python)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args([script, "--log-key", vkey, "--batch"])
        .arg(&list)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "reference verifier: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("agree {}/{}", expected.len(), expected.len())),
        "{said}"
    );
}

/// A small world: a user prompt, an injected tool output, a memory of both, a fact from the
/// prompt alone, a memory weakly citing the poisoned one beside the fact, a flag on the tool
/// output, a strong flag on the fact that is then released, and a tombstone.
struct World {
    l: Ledger<MemoryStore>,
    tool_output: EntryId,
    memory: EntryId,
    fact: EntryId,
    weak: EntryId,
    flag: EntryId,
}

fn world() -> World {
    let mut l = Ledger::create(MemoryStore::default(), signer(), LabelPolicy::default()).unwrap();
    let (user, agent, tool) = (
        WriterKey::for_label("tests/lp-user"),
        WriterKey::for_label("tests/lp-agent"),
        WriterKey::for_label("tests/lp-tool"),
    );
    l.bind(user.key_id(), Role::User, "user").unwrap();
    l.bind(agent.key_id(), Role::Agent, "agent").unwrap();
    l.bind(tool.key_id(), Role::Tool, "tool:read_inbox")
        .unwrap();
    let prompt = put(&mut l, &user, Kind::Prompt, "pay the bill", &[]);
    let tool_output = put(&mut l, &tool, Kind::ToolResult, "pay ZZ99", &[]);
    let memory = put(
        &mut l,
        &agent,
        Kind::Summary,
        "bill: ZZ99",
        &[(prompt, 1_000_000), (tool_output, 1_000_000)],
    );
    let fact = put(&mut l, &agent, Kind::Fact, "rent", &[(prompt, 1_000_000)]);
    let weak = put(
        &mut l,
        &agent,
        Kind::Summary,
        "rent, noted",
        &[(memory, 300_000), (fact, 1_000_000)],
    );
    let flag = l
        .flag(
            tool_output,
            memlineage::lineage::quarantine::Reach::All,
            &user,
            "injection",
        )
        .unwrap()
        .id;
    let strong = l
        .flag(
            fact,
            memlineage::lineage::quarantine::Reach::Strong,
            &user,
            "check",
        )
        .unwrap()
        .id;
    l.release(strong, &user, "checked").unwrap();
    l.tombstone(memory, &user, "forget").unwrap();
    World {
        l,
        tool_output,
        memory,
        fact,
        weak,
        flag,
    }
}

/// The proof of `id` and its verdict.
fn proved(w: &mut World, id: &EntryId) -> (LabelProof, Result<LabelVerdict, LabelProofError>) {
    let p = prove(w, id);
    let v = verify(w, &p);
    (p, v)
}

fn prove(w: &mut World, id: &EntryId) -> LabelProof {
    w.l.prove_label(id).unwrap()
}

fn verify(w: &World, p: &LabelProof) -> Result<LabelVerdict, LabelProofError> {
    LabelProof::parse(p.to_text().as_bytes())?.verify(&w.l.verifier().unwrap(), None)
}

#[test]
fn the_small_world_gives_the_documented_answers() {
    let mut w = world();
    let (memory, weak, fact) = (w.memory, w.weak, w.fact);
    let v = proved(&mut w, &memory).1.unwrap();
    assert_eq!(v.label, Label::DerivedUntrusted);
    assert_eq!(v.path, vec![w.tool_output, memory]);
    assert_eq!(v.quarantine.as_ref().map(|q| q.flag), Some(w.flag));
    assert_eq!(v.tombstones.len(), 1);
    // A weak edge to the poisoned memory beside a strong trusted parent: Derived-Trusted, yet
    // quarantined (a reach-all flag follows every edge), and the released strong flag on the
    // fact reaches nothing.
    let v = proved(&mut w, &weak).1.unwrap();
    assert_eq!((v.label, v.path.is_empty()), (Label::DerivedTrusted, true));
    assert_eq!(
        v.quarantine.map(|q| q.path),
        Some(vec![w.tool_output, memory, weak])
    );
    let v = proved(&mut w, &fact).1.unwrap();
    assert_eq!(
        (v.label, v.quarantine, v.tombstones.len()),
        (Label::DerivedTrusted, None, 0)
    );
    assert_eq!(v.ancestry.len(), 2);
}

/// No proof with an entry or a lookup left out verifies: each omission is an error, never a
/// verdict (a better label, a lifted quarantine, a tombstone forgotten).
#[test]
fn leaving_anything_out_is_an_error() {
    let mut w = world();
    for id in [w.memory, w.weak, w.fact, w.tool_output] {
        let p = prove(&mut w, &id);
        for i in 0..p.entries.len() {
            let mut q = p.clone();
            let gone = q.entries.remove(i);
            let got = verify(&w, &q).map(|v| v.label);
            assert!(
                matches!(
                    got,
                    Err(LabelProofError::MissingSubject { .. }
                        | LabelProofError::MissingAncestor { .. }
                        | LabelProofError::ExtraneousLookup(_)
                        | LabelProofError::Lookup { .. })
                ),
                "{id} without entry {}: {got:?}",
                gone.index
            );
        }
        for i in 0..p.lookups.len() {
            let mut q = p.clone();
            let gone = q.lookups.remove(i);
            assert_eq!(
                verify(&w, &q).map(|v| v.label),
                Err(LabelProofError::MissingLookup(gone.subject))
            );
        }
    }
}

/// A malicious prover drops the flag on the tool output together with its lookup's evidence:
/// it shows the tool output's lookup as ending at another subject's leaf (the one it would
/// need to prove absence), which does not lead to the signed root.
#[test]
fn a_flag_cannot_be_hidden_by_claiming_its_subject_has_no_effects() {
    let mut w = world();
    let (tool_output, flag, memory, fact) = (w.tool_output, w.flag, w.memory, w.fact);
    let honest = prove(&mut w, &memory);
    // A lookup that ends elsewhere, taken from a subject without effects.
    let absent = prove(&mut w, &fact)
        .lookups
        .into_iter()
        .find(|l| {
            matches!(
                l.end,
                memlineage::lineage::effects_index::LookupEnd::Other { .. }
            )
        })
        .expect("a subject without effects");
    let mut q = honest.clone();
    let flag_index = w.l.index_of(&flag).unwrap();
    q.entries.retain(|e| e.index != flag_index);
    let target = memlineage::lineage::effects_index::Subject::Target(tool_output);
    for l in q.lookups.iter_mut().filter(|l| l.subject == target) {
        l.end = absent.end.clone();
        l.nodes = absent.nodes.clone();
    }
    q.lookups
        .retain(|l| l.subject != memlineage::lineage::effects_index::Subject::Target(flag));
    let got = verify(&w, &q).map(|v| v.label);
    assert!(
        matches!(got, Err(LabelProofError::Lookup { subject, .. }) if subject == target),
        "{got:?}"
    );
}

/// The checkpoint must sign the parameters and the index; a caller who expects other
/// parameters is refused.
#[test]
fn parameters_and_the_index_are_signed_or_refused() {
    let mut w = world();
    let memory = w.memory;
    let p = prove(&mut w, &memory);
    let key = WriterKey::for_label("tests/label-proof-log");
    let s = signer();
    let c = w.l.verifier().unwrap().verify(&p.checkpoint).unwrap();
    let policy = w.l.label_policy().extension_line();
    let index: String = c
        .extension()
        .lines()
        .filter(|l| l.starts_with("memlineage/effects-index@v1"))
        .map(|l| format!("{l}\n"))
        .collect();
    for (ext, want) in [
        (index.clone(), LabelProofError::UnsignedParameters),
        (policy.clone(), LabelProofError::NoEffectsIndex),
    ] {
        let mut q = p.clone();
        q.checkpoint = s.sign_with(c.size(), &c.root(), &ext).unwrap();
        assert_eq!(verify(&w, &q).map(|v| v.label), Err(want));
    }
    let other = LabelPolicy {
        tau: Weight::new(900_000).unwrap(),
        weak_rule: WeakRule::FailOpen,
    };
    let parsed = LabelProof::parse(p.to_text().as_bytes()).unwrap();
    assert_eq!(
        parsed
            .verify(&w.l.verifier().unwrap(), Some(other))
            .map(|v| v.label),
        Err(LabelProofError::ParametersDiffer {
            signed: w.l.label_policy(),
            expected: other
        })
    );
    // Signed under another τ, the same entries give other labels: the parameters are inputs.
    let mut q = p.clone();
    let lines = format!("{}{index}", other.extension_line());
    q.checkpoint = s.sign_with(c.size(), &c.root(), &lines).unwrap();
    assert_eq!(verify(&w, &q).map(|v| v.policy), Ok(other));
    drop(key);
}
