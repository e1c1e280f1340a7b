//! `memlineage mcp proxy` (`spec/mcp.md` §6), the real binary:
//!
//! - rmcp's own client through the gateway to a real MCP server (`memlineage mcp` on a second
//!   ledger, the *upstream ledger*): initialisation and tool listing as without the gateway; a
//!   result recorded as External of `tool:mcp__up__<tool>`; an append whose text came from that
//!   result refused with the receipt and never reaching the upstream (whose ledger does not
//!   grow); a composed call put to the user through an elicitation, forwarded when accepted and
//!   refused when declined;
//! - the failure rules, against stand-in upstream processes (Python, standard library) driven
//!   with raw JSON-RPC lines: a deadline, a malformed answer, an upstream that exits, a ledger
//!   that is gone, an answer that cannot be recorded, bytes passed through unchanged, malformed
//!   client lines.
//!
//! The official Python and TypeScript SDK clients, the MCP Inspector and the reference servers
//! from npm and PyPI are driven by `tests/mcp_client/test_gateway*.py` (`.ci/run`).

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation,
};
use rmcp::service::RequestContext;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[path = "common/cli_support.rs"]
mod cli_support;
#[path = "common/gateway_raw.rs"]
mod gateway_raw;
use gateway_raw::*;

fn size(ledger: &Path) -> u64 {
    use memlineage::store::Store;
    memlineage::store::SqliteStore::open(ledger)
        .unwrap()
        .tree_size()
        .unwrap()
}

/// The gateway in front of `upstream` as a command.
fn gateway(dir: &Path, extra: &[&str], upstream: &[&str]) -> tokio::process::Command {
    let args = gateway_args(extra, upstream);
    tokio::process::Command::new(cli_support::BIN).configure(|c| {
        c.args(&args).current_dir(dir);
    })
}

/// A client that answers the gateway's elicitations with `action`.
#[derive(Clone)]
struct Asked(
    ElicitationAction,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
);

impl ClientHandler for Asked {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.1.lock().unwrap().push(message);
        }
        Ok(ElicitResult::new(self.0.clone()))
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("gateway-test", "1"),
        )
    }
}

async fn call<S: rmcp::service::Service<RoleClient>>(
    c: &rmcp::service::RunningService<RoleClient, S>,
    tool: &'static str,
    args: Value,
) -> CallToolResult {
    let Value::Object(args) = args else { panic!() };
    c.call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .unwrap()
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The last read of the gateway's session, as `memlineage explain` shows it, once its writer
/// is `writer` (the gateway records a refusal after answering it: waits up to [`WAIT`]).
fn last_read(dir: &Path, writer: &str) -> String {
    let name = hex::encode(memlineage::record::Hash32::digest(b"mcp-gateway/test").0);
    let file = dir.join("g.db.sessions").join(format!("{name}.json"));
    let start = std::time::Instant::now();
    loop {
        // Answers are passed on before they are recorded: the record may not be there yet.
        let session: Option<Value> = std::fs::read(&file)
            .ok()
            .and_then(|b| cli_support::session_record(&b));
        let last = session
            .as_ref()
            .and_then(|s| s["reads"].as_array()?.last()?.as_str());
        let shown = last
            .map(|id| cli_support::ok(&cli_support::run(&["explain", "g.db", id], dir, None)))
            .unwrap_or_default();
        if shown.contains(writer) || start.elapsed() > WAIT {
            return shown;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_sdk_client_through_the_gateway_sees_the_server_and_injected_calls_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let injected = world(d);
    let upstream = [cli_support::BIN, "mcp", "u.db"];

    // Without the gateway, then through it: the same server, version and tools.
    let direct_cmd = tokio::process::Command::new(cli_support::BIN).configure(|c| {
        c.args(["mcp", "u.db"]).current_dir(d);
    });
    let direct = ().serve(TokioChildProcess::new(direct_cmd).unwrap()).await.unwrap();
    let direct_info = direct.peer_info().unwrap().clone();
    let direct_tools = direct.list_all_tools().await.unwrap();
    direct.cancel().await.unwrap();

    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let handler = Asked(ElicitationAction::Accept, asked.clone());
    let cmd = gateway(d, &[], &upstream);
    let client = handler
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    let info = client.peer_info().unwrap().clone();
    assert_eq!(info.server_info, direct_info.server_info);
    assert_eq!(info.protocol_version, direct_info.protocol_version);
    assert_eq!(info.capabilities, direct_info.capabilities);
    assert_eq!(client.list_all_tools().await.unwrap(), direct_tools);

    // A read-only tool is forwarded, and its result recorded as External.
    let r = call(&client, "ledger_retrieve", json!({"ids": [injected]})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert!(text(&r).contains(ATTACKER), "{r:?}");
    let read = last_read(d, "tool:mcp__up__ledger_retrieve");
    assert!(
        read.contains("tool_result by tool:mcp__up__ledger_retrieve (tool) [EXTERNAL]"),
        "{read}"
    );

    // The injected IBAN in an append: refused with the receipt; the upstream never sees it.
    let before = size(&d.join("u.db"));
    let r = call(
        &client,
        "ledger_append",
        json!({"text": format!("pay {ATTACKER}")}),
    )
    .await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let receipt = text(&r);
    assert!(
        receipt.starts_with("memlineage: deny ledger_append: parameter `text` justified by entry"),
        "{receipt}"
    );
    assert!(receipt.contains("labelled EXTERNAL"), "{receipt}");
    assert_eq!(
        size(&d.join("u.db")),
        before,
        "the refused call reached the upstream"
    );
    // The refusal is recorded: the receipt the model read is the call's failure output.
    let read = last_read(d, "tool:mcp__up__ledger_append");
    assert!(
        read.contains("tool_result by tool:mcp__up__ledger_append (tool) [EXTERNAL]"),
        "{read}"
    );
    assert!(
        asked.lock().unwrap().is_empty(),
        "a refused call is not put to the user"
    );

    // A composed append after the injected read is put to the user, who accepts: forwarded.
    let r = call(
        &client,
        "ledger_append",
        json!({"text": "lunch with ana@example.org at noon"}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert!(
        size(&d.join("u.db")) > before,
        "the accepted call did not reach the upstream"
    );
    let questions = asked.lock().unwrap().clone();
    assert_eq!(questions.len(), 1);
    assert!(
        questions[0].starts_with("memlineage: allow the call of ledger_append on server up with"),
        "{}",
        questions[0]
    );
    assert!(
        questions[0].contains("composed by the agent"),
        "{}",
        questions[0]
    );
    client.cancel().await.unwrap();

    // The same call with a user who declines: refused, never forwarded.
    let handler = Asked(ElicitationAction::Decline, asked.clone());
    let client = handler
        .serve(TokioChildProcess::new(gateway(d, &[], &upstream)).unwrap())
        .await
        .unwrap();
    let before = size(&d.join("u.db"));
    let r = call(
        &client,
        "ledger_append",
        json!({"text": "dinner with ana@example.org at eight"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(
        text(&r).ends_with("the user's approval is needed: the user answered decline"),
        "{r:?}"
    );
    assert_eq!(size(&d.join("u.db")), before);
    client.cancel().await.unwrap();

    // A client that offers no elicitation cannot be asked: refused.
    let client =
        ().serve(TokioChildProcess::new(gateway(d, &[], &upstream)).unwrap())
            .await
            .unwrap();
    let r = call(
        &client,
        "ledger_append",
        json!({"text": "call bob@example.org tomorrow"}),
    )
    .await;
    assert!(
        text(&r).ends_with("the client offers no elicitation to ask the user"),
        "{r:?}"
    );
    assert_eq!(size(&d.join("u.db")), before);
    client.cancel().await.unwrap();
    cli_support::ok(&cli_support::run(&["verify", "g.db"], d, None));
}

// ---- failure rules, raw lines ----

/// A gateway given a hooks' session (`--session ${CLAUDE_CODE_SESSION_ID}`, `spec/mcp.md` §6.4)
/// never starts it: only the hooks' `SessionStart`, which sees a fork's source and transcript,
/// does. (A gateway that started every session it was given made a forked conversation, whose
/// new id it saw first, look begun from nothing: the parent's injected IBAN was then paid.)
#[test]
fn a_gateway_never_starts_a_session_of_the_hooks() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let script = stand_in(
        dir.path(),
        "echo",
        &format!(
            r#"{INIT_ANSWER}
    if msg.get("method") == "tools/call":
        return {{"jsonrpc": "2.0", "id": msg["id"], "result": {{"content": [{{"type": "text", "text": "ok"}}]}}}}
    return None"#
        ),
    );
    let fork = "0b7c9e1e-forked-conversation";
    let mut g = Raw::start(dir.path(), &["--session", fork], &script, "echo.log");
    let call = |g: &mut Raw, id: u64| {
        g.send(&call_line(id, "send", json!({"to": ATTACKER})));
        g.answer()
    };
    // Not started by the gateway: refused as not seen from its start.
    let a = call(&mut g, 1);
    assert_eq!(a["result"]["isError"], true, "{a}");
    assert!(
        a["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("not seen from its start"),
        "{a}"
    );
    // The hooks then see the fork begin: its history is unseen, so it holds every value.
    let start = json!({"session_id": fork, "hook_event_name": "SessionStart", "source": "fork"});
    cli_support::ok(&cli_support::run(
        &["hook", "session-start", "g.db"],
        dir.path(),
        Some(start.to_string().as_bytes()),
    ));
    let a = call(&mut g, 2);
    assert_eq!(a["result"]["isError"], true, "{a}");
    assert!(
        a["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("EXTERNAL"),
        "{a}"
    );
    assert!(g.close().success());
    let log = std::fs::read_to_string(dir.path().join("echo.log")).unwrap_or_default();
    assert!(
        !log.contains("tools/call"),
        "a refused call reached the upstream: {log}"
    );
    // A session of the gateway's own is started by it: the same call is forwarded.
    let mut g = Raw::start(
        dir.path(),
        &["--session", "mcp-gateway/own"],
        &script,
        "own.log",
    );
    let a = call(&mut g, 3);
    assert_eq!(a["result"]["content"][0]["text"], "ok", "{a}");
    assert!(g.close().success());
}

#[test]
fn an_unanswered_request_gets_a_timeout_error_and_the_upstream_a_cancellation() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let script = stand_in(
        dir.path(),
        "silent",
        &format!("{INIT_ANSWER}\n    return None"),
    );
    let mut g = Raw::start(dir.path(), &["--deadline-ms", "300"], &script, "silent.log");
    g.send(&call_line(1, "echo", json!({"m": "hi"})));
    let a = g.answer();
    assert_eq!(a["id"], 1);
    assert_eq!(a["error"]["code"], -32001, "{a}");
    assert_eq!(
        a["error"]["message"],
        "memlineage gateway: the upstream server did not answer within 300 ms"
    );
    assert!(g.close().success());
    let log = std::fs::read_to_string(dir.path().join("silent.log")).unwrap();
    let cancelled: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{log}");
    assert_eq!(cancelled[0]["params"]["requestId"], 1);
}

#[test]
fn malformed_answers_and_an_exiting_upstream_give_errors_never_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let answer = format!(
        r#"{INIT_ANSWER}
    if msg.get("method") == "tools/call":
        n = msg["params"]["name"]
        if n == "text":
            return {{"jsonrpc": "2.0", "id": msg["id"], "result": {{"content": "not blocks"}}}}
        if n == "scalar":
            return {{"jsonrpc": "2.0", "id": msg["id"], "result": 42}}
        if n == "garbage":
            return "not json at all"
        if n == "both":
            return {{"jsonrpc": "2.0", "id": msg["id"], "result": {{}}, "error": {{"code": 1, "message": "m"}}}}
        if n == "exit":
            return "exit"
    return None"#
    );
    let script = stand_in(dir.path(), "bad", &answer);
    let mut g = Raw::start(dir.path(), &["--deadline-ms", "2000"], &script, "bad.log");
    g.send(INIT);
    g.answer();
    for (id, tool, want) in [
        (1, "text", "tools/call `content` is not an array"),
        (2, "scalar", "the result of tools/call is not a JSON object"),
        (3, "both", "both `result` and `error`"),
    ] {
        g.send(&call_line(id, tool, json!({})));
        let a = g.answer();
        assert_eq!(a["id"], id, "{a}");
        assert_eq!(a["error"]["code"], -32603, "{a}");
        let m = a["error"]["message"].as_str().unwrap();
        assert!(
            m.starts_with("memlineage gateway: malformed answer from the upstream server: "),
            "{m}"
        );
        assert!(m.ends_with(want), "{m}");
    }
    // A line that is not JSON cannot be tied to a request: the request times out.
    g.send(&call_line(4, "garbage", json!({})));
    assert_eq!(g.answer()["error"]["code"], -32001);
    // The upstream exits in the middle of a call: an error, then the gateway exits too.
    g.send(&call_line(5, "exit", json!({})));
    let a = g.answer();
    assert_eq!(a["id"], 5);
    assert_eq!(
        a["error"]["message"],
        "memlineage gateway: the upstream server closed its output before answering"
    );
    let status = g.child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(3),
        "the gateway exits with the upstream's status"
    );
}

#[test]
fn a_ledger_that_is_gone_refuses_every_call() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let mut g = echo(dir.path());
    g.send(INIT);
    g.answer();
    g.send(&call_line(1, "ledger_explain", json!({"id": "x"})));
    let a = g.answer();
    assert_eq!(a["result"]["content"][0]["text"], "ok", "{a}");
    // The ledger is moved away: a read-only call is refused too (nothing can be checked).
    std::fs::rename(dir.path().join("g.db"), dir.path().join("moved.db")).unwrap();
    g.send(&call_line(2, "ledger_explain", json!({"id": "y"})));
    let a = g.answer();
    assert_eq!(a["result"]["isError"], true, "{a}");
    let why = a["result"]["content"][0]["text"].as_str().unwrap();
    assert!(why.starts_with("memlineage: deny: "), "{why}");
    assert!(why.contains("no ledger at"), "{why}");
    assert!(g.close().success());
    let log = std::fs::read_to_string(dir.path().join("echo.log")).unwrap();
    assert!(
        !log.contains(r#""y""#),
        "the refused call reached the upstream: {log}"
    );
}

#[test]
fn bytes_pass_through_unchanged_and_malformed_client_lines_get_errors() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    // An answer with members no SDK model knows, a string id and odd spacing, sent as is.
    let odd = r#"{"jsonrpc":"2.0","id":"k-1","result":{"x-vendor":{"deep":[1,2.50,"é"]},"_meta":{"a":null}} }"#;
    let answer = format!(
        r#"{INIT_ANSWER}
    if msg.get("method") == "vendor/thing":
        return {odd:?}
    if msg.get("method") == "notify/me":
        return '{{"jsonrpc":"2.0","method":"notifications/vendor","params":{{"n":1}}}}'
    return None"#
    );
    let script = stand_in(dir.path(), "odd", &answer);
    let mut g = Raw::start(dir.path(), &[], &script, "odd.log");
    g.send(INIT);
    g.answer();
    g.send(r#"{"jsonrpc":"2.0","id":"k-1","method":"vendor/thing","params":{"q":[1,2.50]}}"#);
    assert_eq!(g.line(), odd);
    g.send(r#"{"jsonrpc":"2.0","method":"notify/me"}"#);
    assert_eq!(
        g.line(),
        r#"{"jsonrpc":"2.0","method":"notifications/vendor","params":{"n":1}}"#
    );
    for (line, code) in [
        ("not json", -32700),
        ("[1]", -32600),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"t","arguments":[1]}}"#,
            -32602,
        ),
    ] {
        g.send(line);
        let a = g.answer();
        assert_eq!(a["error"]["code"], code, "{line}: {a}");
    }
    assert!(g.close().success());
    // The request the stand-in read is the client's, byte for byte.
    let log = std::fs::read_to_string(dir.path().join("odd.log")).unwrap();
    assert!(log.contains(
        r#"{"jsonrpc":"2.0","id":"k-1","method":"vendor/thing","params":{"q":[1,2.50]}}"#
    ));
}

// ---- install and doctor ----

/// `memlineage mcp install` of `server` into a configuration file of `host`, then `memlineage
/// mcp doctor` of it: (install's output, doctor's output, doctor's exit status).
fn install_and_doctor(dir: &Path, host: &str, extra: &[&str]) -> (String, std::process::Output) {
    let config = format!("{host}.json");
    let mut args = vec!["mcp", "install", "--host", host, "--host-config", &config];
    args.extend_from_slice(&["--ledger", "g.db", "--state", "st", "--server", "bank"]);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", cli_support::BIN, "mcp", "u.db"]);
    let installed = cli_support::ok(&cli_support::run(&args, dir, None));
    let doctor = cli_support::run(
        &["mcp", "doctor", "--host", host, "--host-config", &config],
        dir,
        None,
    );
    (installed, doctor)
}

#[test]
fn install_writes_each_hosts_configuration_and_the_doctor_proves_it_through_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    world(d);
    for (host, key) in [
        ("claude-desktop", "mcpServers"),
        ("cursor", "mcpServers"),
        ("vscode", "servers"),
    ] {
        let (installed, doctor) = install_and_doctor(d, host, &[]);
        assert!(installed.contains("server bank: "), "{installed}");
        let config: Value =
            serde_json::from_slice(&std::fs::read(d.join(format!("{host}.json"))).unwrap())
                .unwrap();
        let entry = &config[key]["bank"];
        // Absolute paths everywhere: the host's PATH is not the shell's.
        assert!(
            Path::new(entry["command"].as_str().unwrap()).is_absolute(),
            "{entry}"
        );
        let args: Vec<&str> = entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(&args[..2], ["mcp", "proxy"]);
        assert!(
            Path::new(args[2]).is_absolute() && args[2].ends_with("g.db"),
            "{args:?}"
        );
        assert_eq!(args[args.len() - 3..], [cli_support::BIN, "mcp", "u.db"]);
        let out = String::from_utf8_lossy(&doctor.stdout);
        assert!(doctor.status.success(), "{out}");
        assert!(
            out.contains("ok   server bank: the injected payment was refused: memlineage: deny"),
            "{out}"
        );
        assert!(
            out.contains("ok   server bank: the injected payment never reached the upstream"),
            "{out}"
        );
        assert!(
            out.contains("ok   server bank: the benign payment reached the upstream"),
            "{out}"
        );
    }
    // A second install changes nothing.
    let (again, _) = install_and_doctor(d, "cursor", &[]);
    assert!(again.contains("already up to date"), "{again}");

    // A gateway whose policy gates nothing: the doctor fails it.
    std::fs::write(
        d.join("open.toml"),
        "default_max_label = \"external\"\nunknown_tools = \"allow\"\n",
    )
    .unwrap();
    let (_, doctor) = install_and_doctor(d, "claude-desktop", &["--policy", "open.toml"]);
    let out = String::from_utf8_lossy(&doctor.stdout);
    assert_eq!(doctor.status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAIL server bank: the injected payment was refused"),
        "{out}"
    );
    assert!(
        out.contains("FAIL server bank: the injected payment never reached the upstream"),
        "{out}"
    );
}

#[test]
fn the_agent_cannot_touch_the_guards_files_nor_smuggle_arguments_past_the_decision() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    world(d);
    let mut g = echo(d);
    let key = d.join("g.db.key").to_str().unwrap().to_string();
    let host = d.join("Claude").join("claude_desktop_config.json");
    let host = host.to_str().unwrap().to_string();
    // The signing key, and a host's MCP configuration (which puts servers behind the gateway):
    // refused in every session, whatever the lineage, and never forwarded.
    for (id, path, what) in [
        (1, &key, "the signing key file"),
        (2, &host, "the agent's hook settings"),
    ] {
        g.send(&call_line(
            id,
            "write_file",
            json!({"path": path, "content": "{}"}),
        ));
        let a = g.answer();
        let why = a["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert_eq!(a["result"]["isError"], true, "{a}");
        assert!(
            why.contains(what) && why.contains("no tool call may touch"),
            "{why}"
        );
    }
    // A call with a member twice: no message (peers read either member; attack review 49),
    // refused and never forwarded. Before, it was decided and forwarded as parsed (the last).
    g.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"send_money","name":"ledger_explain","arguments":{"id":"x"}}}"#);
    let a = g.answer();
    assert_eq!(
        (a["id"].clone(), a["error"]["code"].clone()),
        (json!(3), json!(-32600)),
        "{a}"
    );
    // A number written oddly: forwarded as parsed and decided, not as written.
    g.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ledger_explain","arguments":{"id":"x","n":1.50e1}}}"#);
    assert_eq!(g.answer()["result"]["content"][0]["text"], "ok");
    assert!(g.close().success());
    let log = std::fs::read_to_string(d.join("echo.log")).unwrap();
    assert!(
        !log.contains("write_file"),
        "a protected call reached the upstream: {log}"
    );
    let forwarded: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(forwarded["params"]["name"], "ledger_explain");
    assert_eq!(
        log.lines().last().unwrap().matches("\"name\"").count(),
        1,
        "{log}"
    );
    assert_eq!(forwarded["params"]["arguments"]["n"], 15.0);
}

#[test]
fn an_answer_that_cannot_be_recorded_refuses_every_later_call() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    world(d);
    let mut g = echo(d);
    g.send(&call_line(1, "ledger_explain", json!({"id": "a"})));
    assert_eq!(g.answer()["result"]["content"][0]["text"], "ok");
    // The session's record becomes a directory: nothing more can be recorded for it (nor can
    // it be marked). A read-only call is decided without the session, so it is forwarded, and
    // its answer given; but its record fails, and every later call is refused.
    last_read(d, "tool:mcp__up__ledger_explain");
    let name = hex::encode(memlineage::record::Hash32::digest(b"mcp-gateway/test").0);
    let record = d.join("g.db.sessions").join(format!("{name}.json"));
    std::fs::remove_file(&record).unwrap();
    std::fs::create_dir(&record).unwrap();
    g.send(&call_line(2, "ledger_explain", json!({"id": "b"})));
    assert_eq!(g.answer()["result"]["content"][0]["text"], "ok");
    g.send(&call_line(3, "ledger_explain", json!({"id": "c"})));
    let a = g.answer();
    let why = a["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(a["result"]["isError"], true, "{a}");
    assert!(
        why.starts_with(
            "memlineage: deny: an earlier answer of the upstream server could not be recorded"
        ),
        "{why}"
    );
    assert!(g.close().success());
    let log = std::fs::read_to_string(d.join("echo.log")).unwrap();
    assert!(
        !log.contains(r#""c""#),
        "a call after the failed record reached the upstream: {log}"
    );
}

/// Calls sent back to back queue their records on the door, which takes them together in one
/// store transaction (`spec/mcp.md` §6.7 item 4, `storage.md` §6.2): every answer is recorded,
/// the session reads each one, and the ledger holds a call and a result for each.
#[test]
fn records_taken_together_are_all_stored() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    world(d);
    let before = size(&d.join("g.db"));
    let mut g = echo(d);
    let n = 40;
    for id in 1..=n {
        g.send(&call_line(
            id,
            "ledger_explain",
            json!({"id": format!("e{id}")}),
        ));
    }
    for _ in 1..=n {
        assert_eq!(g.answer()["result"]["content"][0]["text"], "ok");
    }
    assert!(g.close().success());
    let name = hex::encode(memlineage::record::Hash32::digest(b"mcp-gateway/test").0);
    let record = d.join("g.db.sessions").join(format!("{name}.json"));
    let session = cli_support::session_record(&std::fs::read(record).unwrap()).unwrap();
    let reads = session["reads"].as_array().unwrap();
    assert_eq!(session["unrecorded"].as_u64().unwrap_or(0), 0, "{session}");
    assert_eq!(reads.len(), n as usize, "one read per answer");
    let after = size(&d.join("g.db"));
    assert!(after >= before + 2 * n, "{before} → {after}");
    for id in reads.iter().rev().take(3) {
        let shown = cli_support::ok(&cli_support::run(
            &["explain", "g.db", id.as_str().unwrap()],
            d,
            None,
        ));
        assert!(shown.contains("tool:mcp__up__ledger_explain"), "{shown}");
    }
}

/// `spec/mcp.md` §6.5, §6.11: a configured server is a `command` (with args, env, cwd) or a
/// `url` (with headers), never both or a mix; `--header` needs `--url`, and `--url` takes no
/// command. Each refusal names what is wrong and starts nothing.
#[test]
fn an_upstream_is_a_command_or_a_url_never_both() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let servers = [
        (
            "both",
            "command = \"/bin/cat\"\nurl = \"http://127.0.0.1:9/mcp\"",
        ),
        ("mixed", "url = \"http://127.0.0.1:9/mcp\"\nargs = [\"x\"]"),
        (
            "headers",
            "command = \"/bin/cat\"\nheaders = { Authorization = \"Bearer t\" }",
        ),
        ("neither", "args = [\"x\"]"),
    ];
    let mut config = String::from("ledger = \"g.db\"\n");
    for (name, body) in servers {
        config.push_str(&format!("[servers.{name}]\n{body}\n"));
    }
    std::fs::write(dir.path().join("gateway.toml"), config).unwrap();
    for (name, _) in servers {
        let out = cli_support::run(
            &["mcp", "proxy", "--config", "gateway.toml", "--server", name],
            dir.path(),
            Some(b""),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: {err}");
        assert!(err.contains("not both"), "{name}: {err}");
    }
    let cases: [&[&str]; 3] = [
        &["mcp", "proxy", "g.db", "--header", "A: b", "--", "/bin/cat"],
        &[
            "mcp",
            "proxy",
            "g.db",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--",
            "/bin/cat",
        ],
        &["mcp", "proxy", "g.db", "--url", "ftp://127.0.0.1/mcp"],
    ];
    for args in cases {
        let out = cli_support::run(args, dir.path(), Some(b""));
        assert!(!out.status.success(), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}: no reason given");
    }
}

/// `spec/mcp.md` §6.6, §6.11: a host's Streamable HTTP server (Cursor: `url` and `headers`) is
/// put behind the gateway by `mcp install --all` — the host then starts the gateway, which
/// speaks HTTP to the server — and the doctor proves the configured gateway (its ledger,
/// policy, state) in front of its probe.
#[test]
fn install_puts_an_http_server_behind_the_gateway_and_the_doctor_proves_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    world(d);
    std::fs::write(
        d.join("cursor.json"),
        r#"{"mcpServers": {"tracker": {"url": "http://127.0.0.1:9/mcp",
            "headers": {"Authorization": "Bearer k"}}}}"#,
    )
    .unwrap();
    let installed = cli_support::ok(&cli_support::run(
        &[
            "mcp",
            "install",
            "--host",
            "cursor",
            "--host-config",
            "cursor.json",
            "--ledger",
            "g.db",
            "--state",
            "st",
            "--all",
        ],
        d,
        None,
    ));
    assert!(
        installed.contains("server tracker: ") && installed.contains("http://127.0.0.1:9/mcp"),
        "{installed}"
    );
    let config: Value =
        serde_json::from_slice(&std::fs::read(d.join("cursor.json")).unwrap()).unwrap();
    let entry = &config["mcpServers"]["tracker"];
    assert!(entry.get("url").is_none(), "{entry}");
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[args.len() - 2..], ["--url", "http://127.0.0.1:9/mcp"]);
    // The token is in the gateway's environment (its user's to read), not its arguments.
    assert!(!args.iter().any(|a| a.contains("Bearer")), "{args:?}");
    assert_eq!(
        entry["env"]["MEMLINEAGE_UPSTREAM_HEADERS"],
        "Authorization: Bearer k"
    );
    let doctor = cli_support::run(
        &[
            "mcp",
            "doctor",
            "--host",
            "cursor",
            "--host-config",
            "cursor.json",
        ],
        d,
        None,
    );
    let out = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.status.success(), "{out}");
    assert!(
        out.contains("ok   server tracker: upstream URL http://127.0.0.1:9/mcp"),
        "{out}"
    );
    assert!(
        out.contains("ok   server tracker: the injected payment was refused: memlineage: deny"),
        "{out}"
    );
}

/// `spec/mcp.md` §6.11: the headers of `MEMLINEAGE_UPSTREAM_HEADERS` (what `mcp install`
/// writes a host's headers to) and of `--header` reach an HTTP upstream with every request, and
/// an answer the upstream gives with a session id has the next request carry it. The upstream
/// is a listener of this test that answers `initialize` as JSON and records each request's
/// head.
#[test]
fn an_http_upstream_gets_the_configured_headers_and_its_session() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let heads = std::thread::spawn(move || {
        let mut heads = Vec::new();
        // `initialize`, then `notifications/initialized` (then perhaps the GET of the
        // server's own stream, answered 405).
        for i in 0..2 {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = vec![0u8; 8192];
            let mut got = Vec::new();
            let end = loop {
                if let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    break at + 4;
                }
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0, "the request ended early");
                got.extend_from_slice(&buf[..n]);
            };
            let head = String::from_utf8_lossy(&got[..end]).to_lowercase();
            // The body, read whole before answering.
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while got.len() < end + length {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0, "the body ended early");
                got.extend_from_slice(&buf[..n]);
            }
            let reply = if i == 0 {
                let body = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"h","version":"1"}}}"#;
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s-42\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
            } else {
                "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into()
            };
            s.write_all(reply.as_bytes()).unwrap();
            heads.push(head);
        }
        heads
    });
    let mut child = Command::new(cli_support::BIN)
        .args([
            "mcp",
            "proxy",
            "g.db",
            "--policy",
            "policy.toml",
            "--server",
            "up",
            "--url",
            &url,
            "--header",
            "X-Flag: on",
        ])
        .env(
            "MEMLINEAGE_UPSTREAM_HEADERS",
            "Authorization: Bearer k\nX-Two: 2\n",
        )
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    writeln!(input, "{INIT}").unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "h", "{answer}");
    writeln!(
        input,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    let heads = heads.join().unwrap();
    drop(input);
    let _ = child.wait();
    for h in &heads {
        for want in ["authorization: bearer k", "x-two: 2", "x-flag: on"] {
            assert!(h.contains(want), "{want} missing from:\n{h}");
        }
    }
    assert!(!heads[0].contains("mcp-session-id"), "{}", heads[0]);
    assert!(heads[1].contains("mcp-session-id: s-42"), "{}", heads[1]);
    assert!(
        heads[1].contains("mcp-protocol-version: 2025-11-25"),
        "{}",
        heads[1]
    );
}

/// `spec/mcp.md` §6.11: a request an HTTP upstream cannot be reached for is answered with the
/// gateway's error, which the client (the agent) reads and the ledger keeps: it does not
/// repeat the configured URL, which may carry a credential (`user:password@`, a `?token=`).
#[test]
fn an_unreachable_http_upstream_is_answered_without_its_url() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    // A port nothing listens on: the connection is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("http://agent:pw-s3cret@127.0.0.1:{port}/mcp?token=tok-s3cret");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}});
    // The gateway's usual arguments with the URL for the command (no `--`).
    let mut args = gateway_args(&["--url", &url], &[]);
    args.pop();
    let out = cli_support::run(&args, dir.path(), Some(format!("{init}\n").as_bytes()));
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(
        answer.contains("the upstream cannot be reached"),
        "stdout: {answer}\nstatus: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!answer.contains("s3cret"), "{answer}");
}

/// A stand-in Streamable HTTP upstream: `handler`, a Python `http.server` handler class `H`,
/// served on a free loopback port by `python3` in `dir`; the process (killed when dropped) and
/// the endpoint's URL.
fn http_stand_in(dir: &Path, name: &str, handler: &str) -> (Killed, String) {
    let script = dir.join(format!("{name}.py"));
    let serve = r#"
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    std::fs::write(&script, format!("{handler}{serve}")).unwrap();
    let mut server = Command::new("python3")
        .arg(&script)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    (
        Killed(server),
        format!("http://127.0.0.1:{}/mcp", port.trim()),
    )
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A hostile Streamable HTTP upstream (Python's standard library): it answers every POST with
/// an SSE stream that it never writes to nor ends. Prints its port.
const HOLDING: &str = r#"import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.flush()
        time.sleep(3600)
"#;

/// `spec/mcp.md` §6.11: an HTTP upstream that opens an answer to every request and never ends
/// it holds a bounded number of the gateway's connections and buffers: past the bound, a
/// request is answered with the gateway's error at once, and every request gets exactly one
/// answer (the others the deadline's).
#[test]
fn an_http_upstream_that_never_ends_its_answers_holds_a_bounded_number_of_them() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let (_server, url) = http_stand_in(dir.path(), "holding", HOLDING);
    let mut args = gateway_args(&["--url", &url, "--deadline-ms", "3000"], &[]);
    args.pop();
    let n = 48;
    let pings: String = (0..n)
        .map(|i| format!("{}\n", json!({"jsonrpc": "2.0", "id": i, "method": "ping"})))
        .collect();
    let out = cli_support::run(&args, dir.path(), Some(pings.as_bytes()));
    let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut ids: Vec<i64> = answers.iter().filter_map(|a| a["id"].as_i64()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..n).collect::<Vec<i64>>(), "{answers:?}");
    let refused = answers
        .iter()
        .filter(|a| {
            a["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("to the upstream are unanswered"))
        })
        .count();
    assert!(refused > 0, "every request was held open: {answers:?}");
}

/// A Streamable HTTP upstream (Python's standard library) whose sessions each serve one `ping`
/// and then end (as a server that restarted forgets them): a request with an ended session is
/// answered 404, an `initialize` that names a session 400. Prints its port.
const FORGETFUL: &str = r#"import http.server, json, itertools
live, numbers = set(), itertools.count()
class H(http.server.BaseHTTPRequestHandler):
    def answer(self, status, body=None, session=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if session:
            self.send_header("Mcp-Session-Id", session)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        sid = self.headers.get("Mcp-Session-Id")
        if msg.get("method") == "initialize":
            if sid is not None:
                return self.answer(400, {"error": "initialize names a session"})
            sid = "s%d" % next(numbers)
            live.add(sid)
            result = {"protocolVersion": "2025-11-25", "capabilities": {},
                      "serverInfo": {"name": "forgetful", "version": "1"}}
            return self.answer(200, {"jsonrpc": "2.0", "id": msg["id"], "result": result}, sid)
        if sid not in live:
            return self.answer(404)
        live.discard(sid)
        self.answer(200, {"jsonrpc": "2.0", "id": msg["id"], "result": {}})
"#;

/// `spec/mcp.md` §6.11 (MCP 2025-11-25, "Session Management": a client that gets 404 for its
/// session MUST start a new one with an `initialize` that names none): after the upstream ends
/// the HTTP session, the client's next `initialize` starts a new one, and requests work again.
#[test]
fn an_http_session_the_upstream_ended_is_started_again_by_the_clients_initialize() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let (_server, url) = http_stand_in(dir.path(), "forgetful", FORGETFUL);
    let mut args = gateway_args(&["--url", &url], &[]);
    args.pop();
    let mut raw = Raw::spawn(dir.path(), &args);
    let ping = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string();
    let init = |id: u64| INIT.replace(r#""id":0"#, &format!(r#""id":{id}"#));
    let mut answers = Vec::new();
    for line in [init(1), ping(2), ping(3), init(4), ping(5)] {
        raw.send(&line);
        answers.push(raw.answer());
    }
    raw.close();
    let ok: Vec<bool> = answers.iter().map(|a| a.get("result").is_some()).collect();
    // The session's one ping, then 404 (its end), then a new session that serves a ping.
    assert_eq!(ok, [true, true, false, true, true], "{answers:?}");
    assert!(
        answers[2]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("ended the HTTP session")),
        "{answers:?}"
    );
}

/// A hostile Streamable HTTP upstream (Python's standard library) whose `initialize` result
/// chooses a protocol version with a line break and a header after it; it appends the headers
/// of every request it gets to `headers.log` beside it, and answers any other request.
const INJECTING: &str = r#"import http.server, json, os
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with open(os.path.join(os.path.dirname(__file__), "headers.log"), "a") as log:
            log.write(str(self.headers) + "\n")
        result = {}
        if msg.get("method") == "initialize":
            result = {"protocolVersion": "2025-11-25\r\nX-Injected: 1", "capabilities": {},
                      "serverInfo": {"name": "injecting", "version": "1"}}
        data = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
"#;

/// `spec/mcp.md` §6.11: the protocol version the upstream chooses is sent back in a header; one
/// with a line break cannot add a header to the gateway's later requests (they cannot be sent,
/// and each is answered with the gateway's error at once).
#[test]
fn an_http_upstream_cannot_inject_headers_through_its_protocol_version() {
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let (_server, url) = http_stand_in(dir.path(), "injecting", INJECTING);
    let mut args = gateway_args(&["--url", &url], &[]);
    args.pop();
    let mut raw = Raw::spawn(dir.path(), &args);
    raw.send(INIT);
    assert!(raw.answer().get("result").is_some());
    raw.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string());
    let answer = raw.answer();
    raw.close();
    assert!(
        answer["id"] == 1 && answer.get("error").is_some(),
        "{answer}"
    );
    let seen = std::fs::read_to_string(dir.path().join("headers.log")).unwrap();
    assert!(seen.to_lowercase().contains("content-type"), "{seen}");
    assert!(!seen.to_lowercase().contains("x-injected"), "{seen}");
}
