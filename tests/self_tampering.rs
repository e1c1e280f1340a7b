//! The guard protects itself from the agent it guards (issue 30, `spec/hooks.md` §13): every
//! technique of `tests/hooks/self-tampering/techniques.json` is refused by the PreToolUse hook
//! that `memlineage hook install --agent claude-code` writes, run through `sh -c` as Claude
//! Code runs it, in a session that read an injected page and in a clean one; the coding
//! session of `benign.json` passes untouched in both.

use serde_json::json;

#[path = "common/cli_support.rs"]
mod cli_support;
#[path = "common/installed_hook.rs"]
mod installed_hook;
use cli_support::{ok, run_command};
use installed_hook::{cmd, fixture, load, open_session, pre_event, sh, unexpected};

#[test]
fn every_self_tampering_technique_is_refused_in_every_session() {
    let f = fixture();
    let cases = load(&f, "tests/hooks/self-tampering/techniques.json");
    assert!(
        cases.len() >= 20,
        "the corpus has {} techniques",
        cases.len()
    );
    let mut missed = Vec::new();
    for (session, injected) in [("injected", true), ("clean", false)] {
        open_session(&f, session, injected);
        for case in &cases {
            let out = sh(&f, &f.pre, &pre_event(&f, session, case));
            let stderr = String::from_utf8_lossy(&out.stderr);
            let refused = out.status.code() == Some(2) && stderr.contains("no tool call may touch");
            if !refused {
                missed.push(format!(
                    "{session} session, {}: exit {:?}, stderr {stderr:?}",
                    case["id"],
                    out.status.code()
                ));
            }
        }
    }
    assert!(
        missed.is_empty(),
        "not refused as protected:\n{}",
        missed.join("\n")
    );
    // The guard's files are still there and still its own.
    let ledger = &f.places[1].1;
    ok(&run_command(
        &mut cmd(&f, &["verify", ledger], &f.project),
        None,
    ));
}

#[test]
fn a_benign_coding_session_is_neither_refused_nor_asked() {
    let f = fixture();
    let cases = load(&f, "tests/hooks/self-tampering/benign.json");
    let mut hit = Vec::new();
    for (session, injected) in [("injected", true), ("clean", false)] {
        open_session(&f, session, injected);
        for case in &cases {
            let out = sh(&f, &f.pre, &pre_event(&f, session, case));
            let what = format!("{session} session, {}", case["id"]);
            hit.extend(unexpected(&what, &out, false));
        }
    }
    assert!(
        hit.is_empty(),
        "benign calls refused or asked:\n{}",
        hit.join("\n")
    );
}

/// The refusal names the protected resource and path, so the user (and the model) can see
/// what was stopped.
#[test]
fn the_reason_names_the_resource() {
    let f = fixture();
    open_session(&f, "s", false);
    let key = format!("{}.key", f.places[1].1);
    let case = json!({"tool_name": "Bash", "tool_input": {"command": format!("cat {key}")}});
    let out = sh(&f, &f.pre, &pre_event(&f, "s", &case));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the ledger"), "{stderr}");
    assert!(stderr.contains("agent.ledger"), "{stderr}");
}
