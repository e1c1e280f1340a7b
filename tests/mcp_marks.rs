//! The MCP server's whole-ledger read set (`spec/mcp.md` §1 item 3, default) refuses sensitive
//! calls while any session has output that could not be recorded, counted as the hooks count
//! it (`spec/hooks.md` §5.2): the record's own count and the marks a hook left apart from the
//! record when its watchdog fired (`LEDGER.sessions/<hex>.unrecorded/`).

use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

#[path = "common/cli_support.rs"]
mod cli_support;

async fn gate_check(dir: &std::path::Path) -> Value {
    let cmd = tokio::process::Command::new(cli_support::BIN).configure(|c| {
        c.args(["mcp", "l.db"]).current_dir(dir);
    });
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let Value::Object(args) =
        json!({"tool": "Bash", "args": {"command": "cargo build", "description": "Build"}})
    else {
        unreachable!("an object")
    };
    let r = client
        .call_tool(CallToolRequestParams::new("ledger_gate_check").with_arguments(args))
        .await
        .unwrap();
    client.cancel().await.unwrap();
    r.structured_content.expect("structured result")
}

#[tokio::test(flavor = "current_thread")]
async fn outputs_marked_unrecorded_apart_refuse_the_whole_ledgers_calls() {
    let dir = tempfile::tempdir().unwrap();
    cli_support::ok(&cli_support::run(&["init", "l.db"], dir.path(), None));
    let line = json!({"writer": "user", "role": "user", "kind": "prompt",
                      "content": "build the project"});
    cli_support::ok(&cli_support::run(
        &["append", "l.db"],
        dir.path(),
        Some(format!("{line}\n").as_bytes()),
    ));
    let before = gate_check(dir.path()).await;
    assert_eq!(before["decision"], "allow", "{before}");
    // A hook's watchdog fired for session "s": one mark, no record saved.
    let hex = hex::encode(memlineage::record::Hash32::digest(b"s").0);
    let marks = dir
        .path()
        .join("l.db.sessions")
        .join(format!("{hex}.unrecorded"));
    std::fs::create_dir_all(&marks).unwrap();
    std::fs::write(marks.join("1-1"), b"").unwrap();
    let after = gate_check(dir.path()).await;
    assert_eq!(after["decision"], "deny", "{after}");
}
