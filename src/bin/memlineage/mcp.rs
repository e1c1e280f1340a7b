//! `memlineage mcp`: the ledger as an MCP server on standard input/output (`spec/mcp.md`).
//! Logs and traces go to standard error only: standard output carries the MCP protocol.

use crate::open::front;
use crate::{telemetry, Res};
use memlineage::front::mcp::LedgerServer;
use std::path::PathBuf;
use std::process::ExitCode;

/// Serve the ledger as an MCP server on standard input/output (spec/mcp.md). Advisory:
/// enforcement comes from the hooks.
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// Gate policy (TOML); default: the bundled policy.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The principal (role agent) that signs ledger_append entries.
    #[arg(long, default_value = "agent")]
    writer: String,
    /// Name of the session this connection's reads are recorded in.
    #[arg(long, default_value = "mcp")]
    session: String,
}

/// Runs the MCP server on standard input/output until the client closes it.
pub fn run(a: Args) -> Res<ExitCode> {
    let _telemetry = telemetry::init(true);
    let front = front(&a.ledger, a.policy)?.with_agent(&a.writer);
    let server = LedgerServer::new(front, &a.session);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let ledger = a.ledger.as_path();
    rt.block_on(async {
        use rmcp::ServiceExt;
        tracing::info!(ledger = %ledger.display(), "memlineage mcp: serving on stdio");
        let running = server.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
