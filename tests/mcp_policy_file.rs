//! The MCP server decides by its policy file as the file is now (`spec/mcp.md` §1), as the
//! hook server does: an edit made while the server runs is loaded before the next tool call,
//! so a server started before the user tightened the policy does not keep answering by the
//! looser one; a policy file that changed and no longer loads (bad TOML, deleted) refuses every
//! call until it loads again, rather than leaving the last good policy in force. Driven over
//! stdio by rmcp's client against the real binary.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::path::Path;

#[path = "common/cli_support.rs"]
mod cli_support;

/// Gates nothing the policy does not name, and lets an unsourced argument through.
const LOOSE: &str = "default_max_label = \"derived_trusted\"\nunknown_tools = \"allow\"\n";
/// Gates `deploy` and refuses an argument nothing the ledger holds.
const TIGHT: &str = "default_max_label = \"derived_trusted\"\nunsourced = \"deny\"\n\
                     sensitive_tools = [\"deploy\"]\n";

async fn deploy(client: &RunningService<RoleClient, ()>) -> CallToolResult {
    let Value::Object(args) = json!({"tool": "deploy", "args": {"target": "prod-eu-1"}}) else {
        unreachable!("an object")
    };
    client
        .call_tool(CallToolRequestParams::new("ledger_gate_check").with_arguments(args))
        .await
        .expect("an answer")
}

fn decision(r: &CallToolResult) -> String {
    let v = r.structured_content.clone().unwrap_or(Value::Null);
    v["decision"].as_str().unwrap_or("none").to_string()
}

fn text(r: &CallToolResult) -> String {
    serde_json::to_string(&r.content).unwrap_or_default()
}

/// Writes `text` as the policy file (a new version: its change time moves).
fn write_policy(path: &Path, text: &str) {
    std::fs::write(path, text).expect("policy");
}

#[tokio::test(flavor = "current_thread")]
async fn an_edited_policy_decides_the_next_call_and_a_broken_one_refuses_until_it_loads() {
    let dir = tempfile::tempdir().expect("dir");
    cli_support::ok(&cli_support::run(&["init", "l.db"], dir.path(), None));
    let policy = dir.path().join("policy.toml");
    write_policy(&policy, LOOSE);
    let cmd = tokio::process::Command::new(cli_support::BIN).configure(|c| {
        c.args(["mcp", "l.db", "--policy"])
            .arg(&policy)
            .current_dir(dir.path());
    });
    let client = ().serve(TokioChildProcess::new(cmd).expect("spawn")).await.expect("initialised");

    let loose = deploy(&client).await;
    assert_eq!(decision(&loose), "allow", "{loose:?}");

    // The user tightens the policy while the server runs.
    write_policy(&policy, TIGHT);
    let tight = deploy(&client).await;
    assert_eq!(decision(&tight), "deny", "{tight:?}");

    // A policy that no longer loads refuses the call (a tool error), not the last good one.
    write_policy(&policy, "unsourced = [not toml");
    let broken = deploy(&client).await;
    assert_eq!(broken.is_error, Some(true), "{broken:?}");
    assert!(
        text(&broken).contains("policy changed and cannot be loaded"),
        "{}",
        text(&broken)
    );
    std::fs::remove_file(&policy).expect("remove");
    let gone = deploy(&client).await;
    assert_eq!(gone.is_error, Some(true), "{gone:?}");

    // Once it loads again, it decides again.
    write_policy(&policy, TIGHT);
    let again = deploy(&client).await;
    assert_eq!(decision(&again), "deny", "{again:?}");
    client.cancel().await.expect("closed");
}
