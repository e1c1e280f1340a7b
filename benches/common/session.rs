//! The session the `Front::check` benches decide in (`benches/secrecy.rs`, `benches/sinks.rs`):
//! a prompt, then 8 tool results of 3 KB, none secret; and the settings of their groups. The
//! raw primitive they are compared with is `common::verify_strict_floor`.

use criterion::measurement::WallTime;
use criterion::BenchmarkGroup;
use std::time::Duration;

use memlineage::front::{DerivedKeys, Front, Session};
use memlineage::gate::Policy;
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::WriterKey;
use memlineage::store::MemoryStore;
use memlineage::Ledger;
use serde_json::json;

/// A front with `policy` working in `project`, and one session that read a prompt and 8 tool
/// outputs.
pub fn session(policy: Policy, project: &str) -> (Front<MemoryStore, DerivedKeys>, Session) {
    let signer = LogSigner::new("bench.example/check", WriterKey::for_label("bench-log"))
        .expect("log signer");
    let l = Ledger::create(MemoryStore::default(), signer, LabelPolicy::default()).expect("ledger");
    let mut f = Front::new(l, policy, DerivedKeys("bench".into()));
    f.set_project(Some(project));
    let mut s = Session::new("s");
    f.record_prompt(&mut s, "Fix the parser bug and check the build")
        .expect("prompt");
    for i in 0..8 {
        let out = format!("line {i}: {}\n", "cargo build output ".repeat(160));
        f.record_tool_result(
            &mut s,
            "Bash",
            &json!({"command": format!("cargo build -p c{i}")}),
            &out,
        )
        .expect("tool result");
    }
    (f, s)
}

/// `group` with the settings of these benches: 1 s warm-up, 3 s, 30 samples.
pub fn configure(group: &mut BenchmarkGroup<'_, WallTime>) {
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    group.sample_size(30);
}
