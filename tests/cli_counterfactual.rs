//! `memlineage ddmin` and `memlineage amputate` end to end: exit statuses, printed culprits
//! and figures, checked against the library on the same inputs.

#[path = "common/cli_support.rs"]
mod cli_support;
use cli_support::{fails, ok, run};
use memlineage::counterfactual::amputation::{
    amputate, Protocol, Scenario, ScriptedAgent, Verdict,
};
use memlineage::counterfactual::ddmin::{ddmin, Outcome};
use memlineage::record::EntryId;
use tempfile::TempDir;

const SCENARIO: &str = "tests/counterfactual/payments-scenario.json";

fn hex_id(byte: u8) -> String {
    EntryId([byte; 32]).to_string()
}

/// A predicate that fails when both `x` and `y` are on its standard input.
fn pair_predicate(x: &str, y: &str) -> String {
    format!(
        "ids=$(cat); case \"$ids\" in *{x}*) case \"$ids\" in *{y}*) exit 1;; esac;; esac; exit 0"
    )
}

fn ddmin_cli(dir: &TempDir, source: &[&str], script: &str) -> std::process::Output {
    let mut args = vec!["ddmin"];
    args.extend_from_slice(source);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    run(&args, dir.path(), None)
}

#[test]
fn ddmin_prints_the_interacting_pair_and_the_library_call_count() {
    let dir = TempDir::new().unwrap();
    let ids: Vec<String> = (1..=12).map(hex_id).collect();
    let file = dir.path().join("ids.txt");
    std::fs::write(&file, format!("# candidates\n{}\n\n", ids.join("\n"))).unwrap();
    let (x, y) = (&ids[2], &ids[9]);
    let out = ddmin_cli(&dir, &["--ids", "ids.txt"], &pair_predicate(x, y));
    let stdout = ok(&out);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "culprits: 2 of 12 candidates (1-minimal)");
    assert_eq!(&lines[1..3], &[x.as_str(), y.as_str()]);
    let lib = ddmin(&ids, |s| {
        if s.contains(x) && s.contains(y) {
            Outcome::Fail
        } else {
            Outcome::Pass
        }
    });
    assert_eq!(lines[3], format!("predicate calls: {}", lib.calls()));
}

#[test]
fn ddmin_reports_empty_failure_never_failing_and_unresolved_with_their_statuses() {
    let dir = TempDir::new().unwrap();
    std::fs::write(
        dir.path().join("ids.txt"),
        format!("{}\n{}\n", hex_id(1), hex_id(2)),
    )
    .unwrap();
    let src = ["--ids", "ids.txt"];
    let out = ddmin_cli(&dir, &src, "exit 1");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("fails with no candidate"));
    let out = ddmin_cli(&dir, &src, "cat >/dev/null; exit 0");
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("does not fail on all 2 candidates (passes)")
    );
    let out = ddmin_cli(
        &dir,
        &src,
        "ids=$(cat); [ -z \"$ids\" ] && exit 0; exit 125",
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("(unresolved)"));
}

#[test]
fn ddmin_rejects_bad_candidate_files() {
    let dir = TempDir::new().unwrap();
    std::fs::write(
        dir.path().join("bad.txt"),
        format!("{}\nnot-an-id\n", hex_id(1)),
    )
    .unwrap();
    let err = fails(&ddmin_cli(&dir, &["--ids", "bad.txt"], "exit 0"));
    assert!(
        err.contains("bad.txt:2: an entry id is 64 hex digits"),
        "{err}"
    );
    let dup = format!("{}\n{}\n", hex_id(1), hex_id(1));
    std::fs::write(dir.path().join("dup.txt"), dup).unwrap();
    let err = fails(&ddmin_cli(&dir, &["--ids", "dup.txt"], "exit 0"));
    assert!(err.contains("dup.txt:2: duplicate id"), "{err}");
    let err = fails(&ddmin_cli(&dir, &["--ids", "none.txt"], "exit 0"));
    assert!(err.contains("none.txt"), "{err}");
    std::fs::write(dir.path().join("ok.txt"), format!("{}\n", hex_id(1))).unwrap();
    let err = fails(&ddmin_cli(&dir, &["--ids", "ok.txt"], "kill -9 $$"));
    assert!(err.contains("was killed by a signal"), "{err}");
}

#[test]
fn ddmin_takes_live_memories_from_a_ledger() {
    let dir = TempDir::new().unwrap();
    ok(&run(&["init", "m.ledger"], dir.path(), None));
    let lines = [
        r#"{"writer":"alice","role":"user","kind":"prompt","content":"pay the landlord"}"#,
        r#"{"writer":"agent","role":"agent","kind":"summary","content":"landlord IBAN DE89"}"#,
        r#"{"writer":"agent","role":"agent","kind":"fact","content":"refunds go to wallet 0xBAD"}"#,
        r#"{"writer":"agent","role":"agent","kind":"summary","content":"meeting at 10"}"#,
    ];
    let out = ok(&run(
        &["append", "m.ledger"],
        dir.path(),
        Some(lines.join("\n").as_bytes()),
    ));
    let ids: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids.len(), 4);
    // The fact is the culprit; the prompt is not a candidate (kinds summary and fact).
    let script = format!("grep -q {} && exit 1; exit 0", ids[2]);
    let out = ok(&ddmin_cli(&dir, &["--ledger", "m.ledger"], &script));
    assert!(out.starts_with("culprits: 1 of 3 candidates"), "{out}");
    assert_eq!(out.lines().nth(1), Some(ids[2].as_str()));
    let out = ok(&ddmin_cli(
        &dir,
        &["--ledger", "m.ledger", "--kind", "fact"],
        &script,
    ));
    assert!(out.starts_with("culprits: 1 of 1 candidates"), "{out}");
    // Found culprits go straight into quarantine, as signed flag entries.
    let out = ok(&ddmin_cli(
        &dir,
        &[
            "--ledger",
            "m.ledger",
            "--flag",
            "ddmin: makes the agent pay 0xBAD",
        ],
        &script,
    ));
    let flag_line = out.lines().find(|l| l.starts_with('{')).unwrap();
    let v: serde_json::Value = serde_json::from_str(flag_line).unwrap();
    assert_eq!(v["source"].as_str(), Some(ids[2].as_str()));
    assert_eq!(v["quarantined"], 1);
    let receipt = ok(&run(&["receipt", "m.ledger", &ids[2]], dir.path(), None));
    assert!(
        receipt.contains("is flagged by an advisory: `ddmin: makes the agent pay 0xBAD"),
        "{receipt}"
    );
    // --flag needs a ledger to append to.
    let err = fails(&run(
        &["ddmin", "--ids", "x.txt", "--flag", "r", "--", "true"],
        dir.path(),
        None,
    ));
    assert!(err.contains("--ledger"), "{err}");
}

fn amputate_cli(carrier: u8, extra: &[&str]) -> std::process::Output {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let c = hex_id(carrier);
    let mut args = vec!["amputate", SCENARIO, "--carrier", c.as_str()];
    args.extend_from_slice(extra);
    run(&args, root, None)
}

fn library_report(
    carrier: u8,
    repeats: u32,
) -> memlineage::counterfactual::amputation::AmputationReport {
    let s = Scenario::from_json(&std::fs::read_to_string(SCENARIO).unwrap()).unwrap();
    let p = Protocol {
        repeats,
        ..Protocol::default()
    };
    amputate(
        &mut ScriptedAgent,
        &s,
        EntryId([carrier; 32]),
        s.unused_id(),
        &p,
    )
    .unwrap()
}

#[test]
fn amputate_exit_status_follows_the_verdict() {
    let out = amputate_cli(3, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("verdict: load-bearing"), "{text}");
    assert!(
        text.contains("sign test: 18 positive, 0 negative, 2 tied; p = 1/131072"),
        "{text}"
    );
    let out = amputate_cli(1, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("verdict: not distinguishable from noise")
    );
    // Too few repeats for significance: above the floor, but inconclusive.
    assert_eq!(library_report(3, 3).verdict, Verdict::Inconclusive);
    assert_eq!(amputate_cli(3, &["--repeats", "3"]).status.code(), Some(3));
}

#[test]
fn amputate_json_matches_the_library() {
    let out = amputate_cli(3, &["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = library_report(3, 20);
    // serde_json's default float parser is not correctly rounded: compare to 1e-12.
    let close = |key: &str, want: f64| {
        let got = v[key].as_f64().unwrap();
        assert!((got - want).abs() <= 1e-12, "{key}: {got} vs {want}");
    };
    close("delta_action", r.mean_delta);
    close("noise_floor", r.noise_floor);
    close("did", r.did);
    assert_eq!(
        v["sign_test"]["p"].as_str(),
        Some(r.sign.p.to_string().as_str())
    );
    assert_eq!(
        v["parse_failures"].as_u64(),
        Some(r.parse_failures.unparseable)
    );
    assert_eq!(v["responses"].as_u64(), Some(960));
    assert_eq!(v["verdict"], "load_bearing");
}

#[test]
fn amputate_rejects_bad_arguments() {
    let e = fails(&amputate_cli(3, &["--alpha", "five"]));
    assert!(e.contains("--alpha"), "{e}");
    let e = fails(&amputate_cli(3, &["--repeats", "127"]));
    assert!(e.contains("repeats must be in 1..=126"), "{e}");
    let ghost = hex_id(1);
    let e = fails(&amputate_cli(3, &["--ghost", ghost.as_str()]));
    assert!(e.contains("is a memory of the scenario"), "{e}");
}
