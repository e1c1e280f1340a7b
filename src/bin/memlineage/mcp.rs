//! `memlineage mcp`: the ledger as an MCP server on standard input/output (`spec/mcp.md`).
//! Logs and traces go to standard error only: standard output carries the MCP protocol.

use crate::open::{file_id, key_path, load_policy, open_pinned, FileId};
use crate::{telemetry, Res};
use memlineage::front::hook::FileSessions;
use memlineage::front::mcp::{stdio, LedgerServer, PolicySource, ReadSet, SharedKeyFile};
use memlineage::front::pin::StateDir;
use memlineage::front::Front;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Serve the ledger as an MCP server on standard input/output (spec/mcp.md). Advisory:
/// enforcement comes from the hooks, or from the gateway (`mcp proxy`).
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    cmd: Option<McpCmd>,
    /// Ledger path.
    #[arg(required = true)]
    ledger: Option<PathBuf>,
    /// Gate policy (TOML); default: the coding-agent policy, as for the hooks.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The principal (role agent) that signs ledger_append entries.
    #[arg(long, default_value = "agent")]
    writer: String,
    /// The agent's session id, shared with the hooks (e.g. Claude Code's session_id):
    /// gate checks use the reads they recorded. Default: every entry of the ledger.
    #[arg(long)]
    session: Option<String>,
    /// The hooks' state directory (spec/hooks.md §6.2: the pin and the session records), as
    /// `hook install` wrote it into the hook commands.
    #[arg(long)]
    state: Option<PathBuf>,
}

/// The gateway's subcommands (spec/mcp.md §6).
#[derive(clap::Subcommand)]
enum McpCmd {
    /// The MCP gateway in front of an upstream server: every tools/call decided by the hooks'
    /// policy, every upstream result recorded (spec/mcp.md §6).
    Proxy(crate::mcp_proxy::Args),
    /// Rewrite a host's MCP configuration (Claude Desktop, Cursor, VS Code, Windsurf) so that a
    /// server, or every stdio server, runs behind the gateway, with absolute paths.
    Install(crate::mcp_install::InstallArgs),
    /// Through each gateway of a host's configuration: is an injected call refused and a
    /// benign one forwarded? Exits 1 if not.
    Doctor(crate::mcp_doctor::DoctorArgs),
    /// The doctor's upstream: a probe server on standard input/output that logs its tool calls
    /// to LOG.
    #[command(hide = true)]
    ProbeUpstream {
        /// Where each tool call is appended.
        log: PathBuf,
    },
}

/// Runs `memlineage mcp`.
pub fn run(a: Args) -> Res<ExitCode> {
    match a.cmd {
        Some(McpCmd::Proxy(p)) => crate::mcp_proxy::run(p),
        Some(McpCmd::Install(i)) => crate::mcp_install::install(&i),
        Some(McpCmd::Doctor(d)) => crate::mcp_doctor::doctor(&d),
        Some(McpCmd::ProbeUpstream { log }) => crate::mcp_doctor::probe_upstream(&log),
        None => {
            let ledger = a.ledger.ok_or("give LEDGER")?;
            let state = crate::open::state_for(&ledger, a.state)?;
            mcp(&ledger, a.policy, &a.writer, a.session.as_deref(), state)
        }
    }
}

/// Runs the MCP server on standard input/output until the client closes it. With `session`,
/// gate checks use that hook session's reads (`LEDGER.sessions/`); without, every entry of
/// the ledger (`spec/mcp.md` §1).
fn mcp(
    ledger: &Path,
    policy: Option<PathBuf>,
    writer: &str,
    session: Option<&str>,
    state: Option<StateDir>,
) -> Res<ExitCode> {
    let _telemetry = telemetry::init(true);
    // The same default as the hooks (spec/hooks.md §10): the coding-agent policy, which also
    // names the AgentDojo sinks, so that the advice matches what the hooks enforce.
    let policy_path = policy.clone();
    // The file's version is taken before it is read: an edit in between is loaded at the
    // first call.
    let policy_version = policy_path.as_deref().map(file_id);
    let policy = match policy {
        Some(p) => load_policy(Some(p))?,
        None => memlineage::gate::Policy::coding(),
    };
    let (l, _) = open_pinned(ledger, state.as_ref())?;
    l.check_rows_chain()?;
    let keys = SharedKeyFile(key_path(ledger));
    let protected = crate::open::protected(
        ledger,
        policy_path.as_deref(),
        state.as_ref().map(|s| s.0.as_path()),
    );
    let mut front = Front::new(l, policy, keys).with_agent(writer);
    front.set_protected(protected);
    // The hooks' session began in the agent: it must have been seen from its start
    // (spec/hooks.md §3.1). The whole-ledger read set is no session.
    front.require_start(session.is_some());
    let reads = match session {
        Some("") => return Err("--session: a session id is not empty".into()),
        Some(id) => ReadSet::Session {
            sessions: Box::new(match &state {
                Some(st) => st.sessions(),
                None => FileSessions::new(sessions_dir(ledger)),
            }),
            id: id.to_string(),
        },
        None => ReadSet::Ledger {
            sessions_dir: Some(match &state {
                Some(st) => st.sessions().dir().to_path_buf(),
                None => sessions_dir(ledger),
            }),
        },
    };
    let mut lock = key_path(ledger).into_os_string();
    lock.push(".lock");
    let mut server = LedgerServer::new(front, reads).with_lock(PathBuf::from(lock));
    if let Some(st) = state {
        server = server.with_pin(st);
    }
    if let (Some(path), Some(seen)) = (policy_path, policy_version) {
        server = server.with_policy_source(policy_source(path, seen));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    tracing::info!(ledger = %ledger.display(), "memlineage mcp: serving on stdio");
    rt.block_on(stdio::serve(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The policy file at `path` as the server's policy source: reloaded through
/// [`load_policy`], as the hooks and their server load it, whenever its version differs from
/// the one last loaded (`seen`); a file that is gone or does not load is an error until it
/// loads (`spec/mcp.md` §1).
fn policy_source(path: PathBuf, mut seen: Option<FileId>) -> PolicySource {
    Box::new(move || {
        let now = file_id(&path);
        if now.is_some() && now == seen {
            return Ok(None);
        }
        let policy = load_policy(Some(path.clone())).map_err(|e| e.to_string())?;
        seen = now;
        Ok(Some(policy))
    })
}

/// `LEDGER.sessions`: the hooks' session files (`spec/hooks.md` §3).
fn sessions_dir(ledger: &Path) -> PathBuf {
    let mut dir = ledger.as_os_str().to_owned();
    dir.push(".sessions");
    PathBuf::from(dir)
}
