//! The Rust decoder against the independent Python verifier's negative cases
//! (`spec/reference/test_vectors.py`, `spec/record.md` §6–§7): every mutated entry the script
//! writes must get from `SignedEntry::decode` the class the script expects (the spec's class for
//! input that breaks one rule), and every case it expects accepted must be accepted.
//!
//! Needs the reference's pinned Python (`spec/reference/requirements.txt`):
//! `MEMLINEAGE_REFERENCE_PYTHON` names the interpreter; without it the test is skipped, unless
//! `MEMLINEAGE_REQUIRE_REFERENCE` is set (CI sets both, `.ci/run`).

#[path = "common/reference_support.rs"]
mod reference_support;

use memlineage::record::SignedEntry;
use std::process::Command;

/// The class name of a `RecordError`: its variant, as `Debug` starts it.
fn class(e: &memlineage::record::RecordError) -> String {
    format!("{e:?}")
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn the_reference_mutations_get_the_spec_classes() {
    let Some(python) = reference_support::reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/spec/reference/test_vectors.py"
    );
    let out = Command::new(python)
        .arg(script)
        .arg("--write")
        .arg(dir.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "test_vectors.py failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(dir.path().join("manifest.json")).unwrap()).unwrap();
    assert!(manifest.len() >= 70, "only {} cases", manifest.len());
    let mut wrong = Vec::new();
    for case in &manifest {
        let name = case["name"].as_str().unwrap();
        // An empty `want` is a case the spec accepts.
        let want = case["want"].as_str().unwrap();
        let bytes = std::fs::read(dir.path().join(format!("{name}.cose"))).unwrap();
        let got = match SignedEntry::decode(&bytes) {
            Ok(_) => String::new(),
            Err(e) => class(&e),
        };
        if got != want {
            wrong.push(format!("{name}: want {want:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
