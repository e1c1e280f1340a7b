//! Gateway benchmark (not part of the tests; `spec/benchmarks.md` §Gateway): the latency a
//! `memlineage mcp proxy` adds to one forwarded `tools/call`, and the calls per second one
//! gateway passes, beside a direct connection to the same upstream server in the same run.
//!
//! ```text
//! cargo build --release --bin memlineage --example gateway_bench
//! target/release/examples/gateway_bench [--bin target/release/memlineage] [--size 100000]
//!     [--calls 1000] [--burst 2000] [--concurrency 16] [--think-ms 0,50] [--dir DIR]
//!     [--no-state]
//! ```
//!
//! The upstream is this program run with `--upstream`: an rmcp stdio server with two tools that
//! return their arguments, `lookup` (read-only in the policy: decided without reading the
//! session) and `search` (sensitive: every argument matched against the session's reads, which
//! grow by one per call). The client is rmcp's. `DIR/N/l.db` is made with `memlineage init`
//! and filled to N entries (`examples/common/bench.rs`) unless it holds them; the gateway runs
//! with a state directory (pin advanced after every write, as `mcp install` configures it)
//! unless `--no-state`.
//!
//! Latency: `--calls` sequential calls of each tool on each connection, direct and gateway
//! interleaved one for one, after 50 of each to warm up; medians and 90th percentiles; the
//! added latency is the gateway's median minus the direct one. Once per value of `--think-ms`:
//! the pause after each pair of calls, untimed (a model's turn between two tool calls). With 0
//! the calls come back to back, and each decision waits behind the record of the previous
//! call's result on the door's queue (`spec/mcp.md` §6.7); with a pause longer than a record,
//! it does not. Throughput: `--burst` calls of
//! `lookup` with `--concurrency` in flight, on each connection, calls per second. One Ed25519
//! `verify_strict` is timed in the same run (the raw primitive of `spec/benchmarks.md`).

#[path = "common/bench.rs"]
mod bench;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;
type Client = RunningService<RoleClient, ()>;

const POLICY: &str = r#"
default_max_label = "derived_trusted"
unsourced = "allow"
composed_after_external = "allow"
read_only_tools = ["lookup"]
sensitive_tools = ["search"]
"#;

/// The upstream server: two tools that return their arguments as text.
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema: serde_json::Map<String, Value> =
            serde_json::from_value(json!({"type": "object"})).unwrap_or_default();
        let schema = Arc::new(schema);
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("lookup", "Returns its arguments.", schema.clone()),
            Tool::new("search", "Returns its arguments.", schema),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = serde_json::to_string(&request.arguments).unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

struct Opts {
    bin: PathBuf,
    size: u64,
    calls: usize,
    burst: usize,
    concurrency: usize,
    think_ms: Vec<u64>,
    dir: PathBuf,
    state: bool,
}

fn opts() -> Res<Opts> {
    let mut o = Opts {
        bin: PathBuf::from("target/release/memlineage"),
        size: 100_000,
        calls: 1000,
        burst: 2000,
        concurrency: 16,
        think_ms: vec![0, 50],
        dir: std::env::temp_dir().join("memlineage-gateway-bench"),
        state: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--bin" => o.bin = PathBuf::from(value()?),
            "--size" => o.size = value()?.parse()?,
            "--calls" => o.calls = value()?.parse()?,
            "--burst" => o.burst = value()?.parse()?,
            "--concurrency" => o.concurrency = value()?.parse()?,
            "--think-ms" => {
                o.think_ms = value()?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?
            }
            "--dir" => o.dir = PathBuf::from(value()?),
            "--no-state" => o.state = false,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(o)
}

async fn connect(program: &std::path::Path, args: &[String]) -> Res<Client> {
    let cmd = tokio::process::Command::new(program).configure(|c| {
        c.args(args);
    });
    Ok(().serve(TokioChildProcess::new(cmd)?).await?)
}

/// One call; checks it was forwarded and answered (not refused).
async fn call(c: &rmcp::Peer<RoleClient>, tool: &'static str, i: usize) -> Res<Duration> {
    let args = json!({"query": format!("question number {i} about the weather")});
    let Value::Object(args) = args else {
        return Err("arguments".into());
    };
    let start = Instant::now();
    let r = c
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await?;
    let took = start.elapsed();
    if r.is_error == Some(true) {
        return Err(format!("{tool} was refused: {:?}", r.content).into());
    }
    Ok(took)
}

/// `--burst` calls of `lookup` with `--concurrency` in flight; calls per second.
async fn throughput(c: &Client, o: &Opts) -> Res<f64> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..o.concurrency {
        let (peer, next, burst) = (c.peer().clone(), next.clone(), o.burst);
        set.spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= burst {
                    return Ok::<(), String>(());
                }
                call(&peer, "lookup", 1_000_000 + i)
                    .await
                    .map_err(|e| e.to_string())?;
            }
        });
    }
    while let Some(done) = set.join_next().await {
        done??;
    }
    Ok(o.burst as f64 / start.elapsed().as_secs_f64())
}

fn main() -> Res<()> {
    if std::env::args().nth(1).as_deref() == Some("--upstream") {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        return rt.block_on(async {
            let running = Echo.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
            Ok(())
        });
    }
    let o = opts()?;
    let dir = o.dir.join(o.size.to_string());
    bench::build(&o.bin, &dir, o.size)?;
    std::fs::write(dir.join("policy.toml"), POLICY)?;
    let me = std::env::current_exe()?;
    let ledger = dir.join("l.db").to_string_lossy().into_owned();
    // A session of the gateway's own, which it starts (spec/mcp.md §6.4).
    let session = format!("mcp-gateway/bench-{}", std::process::id());
    let mut args: Vec<String> = ["mcp", "proxy", &ledger, "--server", "bench"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend([
        "--policy".into(),
        dir.join("policy.toml").to_string_lossy().into_owned(),
    ]);
    args.extend(["--session".into(), session]);
    if o.state {
        let state = dir.join("state");
        let _ = std::fs::remove_dir_all(&state);
        args.extend(["--state".into(), state.to_string_lossy().into_owned()]);
    }
    args.extend([
        "--".into(),
        me.to_string_lossy().into_owned(),
        "--upstream".into(),
    ]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let verify_us = bench::verify_strict_us();
    rt.block_on(async {
        let direct = connect(&me, &["--upstream".to_string()]).await?;
        let gateway = connect(&o.bin, &args).await?;
        for i in 0..50 {
            call(direct.peer(), "lookup", i).await?;
            call(gateway.peer(), "lookup", i).await?;
        }
        println!(
            "ledger {} entries; calls {}; state directory {}; verify_strict {verify_us:.1} us",
            o.size, o.calls, o.state
        );
        println!("| tool | pause | direct median / p90 | gateway median / p90 | added (median) | gateway / direct |");
        println!("|---|---:|---:|---:|---:|---:|");
        let mut base = 0;
        for &think in &o.think_ms {
        for tool in ["lookup", "search"] {
            let (mut d, mut g) = (Vec::new(), Vec::new());
            // Values no earlier call returned: a `search` argument then has no source.
            base += 10_000_000;
            for i in 0..o.calls {
                d.push(call(direct.peer(), tool, base + i).await?);
                g.push(call(gateway.peer(), tool, base + i).await?);
                tokio::time::sleep(Duration::from_millis(think)).await;
            }
            let (dm, dp) = (bench::quantile(&mut d, 0.5), bench::quantile(&mut d, 0.9));
            let (gm, gp) = (bench::quantile(&mut g, 0.5), bench::quantile(&mut g, 0.9));
            println!(
                "| `{tool}` | {think} ms | {dm:.3} / {dp:.3} ms | {gm:.3} / {gp:.3} ms | {:.3} ms ({:.0}x verify_strict) | {:.2} |",
                gm - dm,
                (gm - dm) * 1e3 / verify_us,
                gm / dm
            );
        }
        }
        let td = throughput(&direct, &o).await?;
        let tg = throughput(&gateway, &o).await?;
        println!(
            "throughput, {} calls of `lookup`, {} in flight: direct {td:.0} calls/s, gateway {tg:.0} calls/s ({:.2} of direct)",
            o.burst, o.concurrency, tg / td
        );
        direct.cancel().await?;
        gateway.cancel().await?;
        Ok(())
    })
}
