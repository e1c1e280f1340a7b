//! What the gateway decides is what the upstream runs (`spec/mcp.md` §6.2, §6.8): the real
//! `memlineage mcp proxy` in front of stand-in upstream servers, driven with raw JSON-RPC lines
//! as a hostile client would write them.
//!
//! - A `tools/call` whose id the client cancels and reuses before the gateway has decided it:
//!   the decision taken is that of the call forwarded (found by attack review 37: the first
//!   call's decision read the *second* call's tool and arguments, and the first call's bytes
//!   were forwarded — a write of the signing key reached the upstream, decided as a read).
//! - A message that a lenient peer may run as a tool call but the gateway did not read as one
//!   (a notification with method `tools/call`, a method spelled `Tools/Call` or with blanks
//!   around it) never reaches the upstream (attack review 37: passed on undecided).

use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

#[path = "common/cli_support.rs"]
mod cli_support;
#[path = "common/gateway_raw.rs"]
mod gateway_raw;
use gateway_raw::{call_line, echo, stand_in, world, Raw, INIT_ANSWER};

/// The path of the gateway's signing key: a call that names it is refused in every session.
fn key(dir: &Path) -> String {
    dir.join("g.db.key").to_str().unwrap().to_string()
}

/// The lines the upstream read, once the gateway has exited.
fn upstream_log(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

#[test]
fn a_reused_id_forwards_only_the_call_that_was_decided() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    world(d);
    let mut g = echo(d);
    // Three lines in one write, as a client may send them: a call refused in every session,
    // its cancellation, and a read-only call under the same id. The gateway reads all three
    // before it decides the first.
    let forbidden = call_line(5, "write_file", json!({"path": key(d), "content": "{}"}));
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 5, "reason": "changed my mind"}});
    let read = call_line(5, "ledger_explain", json!({"id": "x"}));
    let input = g.input.as_mut().unwrap();
    input
        .write_all(format!("{forbidden}\n{cancel}\n{read}\n").as_bytes())
        .unwrap();
    input.flush().unwrap();
    let a = g.answer();
    assert_eq!(a["id"], 5, "{a}");
    assert!(g.close().success());
    let log = upstream_log(d, "echo.log");
    assert!(
        !log.contains("write_file"),
        "a call refused as protected reached the upstream under a reused id: {log}"
    );
    // What reached the upstream is the call that was decided, once.
    let calls: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 1, "{log}");
    assert_eq!(calls[0]["params"]["name"], "ledger_explain", "{log}");
    assert_eq!(a["result"]["content"][0]["text"], "ok", "{a}");
}

/// A stand-in as lenient as a hand-written server may be: it runs any message whose method
/// reads as `tools/call` once case, blanks and separators are set aside, notifications too
/// (JSON-RPC 2.0 §4.1: a notification is run, only not answered).
fn lenient(dir: &Path) -> Raw {
    let answer = format!(
        r#"{INIT_ANSWER}
    m = "".join(c for c in str(msg.get("method", "")).lower() if c.isalnum())
    if m == "toolscall":
        log.write("RAN " + msg["params"]["name"] + "\n"); log.flush()
        if "id" in msg:
            return {{"jsonrpc": "2.0", "id": msg["id"], "result": {{"content": [{{"type": "text", "text": "ok"}}]}}}}
    return None"#
    );
    let script = stand_in(dir, "lenient", &answer);
    Raw::start(dir, &[], &script, "lenient.log")
}

#[test]
fn a_message_a_peer_may_run_as_a_tool_call_is_never_passed_on_undecided() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    world(d);
    let mut g = lenient(d);
    let params = json!({"name": "write_file", "arguments": {"path": key(d), "content": "{}"}});
    // A notification with the method of a call: never answered, never run.
    g.send(&json!({"jsonrpc": "2.0", "method": "tools/call", "params": params}).to_string());
    // Requests whose method differs from `tools/call` only in case, blanks or separators:
    // refused as unknown methods, never forwarded.
    for (id, method) in [
        (1, "Tools/Call"),
        (2, " tools/call"),
        (3, "tools/call\n"),
        (4, "tools.call"),
        (5, "TOOLS/CALL\u{0}"),
    ] {
        g.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let a = g.answer();
        assert_eq!(a["id"], id, "{method:?}: {a}");
        assert_eq!(a["error"]["code"], -32601, "{method:?}: {a}");
    }
    // The same call spelled as the protocol spells it is decided: refused as protected.
    g.send(&call_line(6, "write_file", params["arguments"].clone()));
    let a = g.answer();
    assert_eq!(a["result"]["isError"], true, "{a}");
    // A read-only call still passes.
    g.send(&call_line(7, "ledger_explain", json!({"id": "x"})));
    assert_eq!(g.answer()["result"]["content"][0]["text"], "ok");
    assert!(g.close().success());
    let log = upstream_log(d, "lenient.log");
    assert!(
        !log.contains("RAN write_file") && !log.contains("write_file"),
        "an undecided call reached the upstream: {log}"
    );
    assert!(log.contains("RAN ledger_explain"), "{log}");
}
