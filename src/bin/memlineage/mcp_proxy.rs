//! `memlineage mcp proxy`: the MCP gateway (`spec/mcp.md` §6) in front of one upstream server,
//! given on the command line or by name from a gateway configuration file. Standard input and
//! output carry the client's protocol; the upstream's standard error and the gateway's logs go
//! to standard error.

use crate::mcp_door::GatewayDoor;
use crate::{hookd, telemetry, Res};
use memlineage::front::mcp::gateway::{self, Ended, Events, Options};
use memlineage::front::pin::StateDir;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

/// Default deadline of a client request, in milliseconds (the official SDKs' default request
/// timeout).
pub const DEFAULT_DEADLINE_MS: u64 = 60_000;
/// The environment variable whose lines (`Name: value`) are headers for an HTTP upstream, beside
/// `--header`: what `mcp install` writes a host's headers to, since a process's environment is
/// readable by its own user only where its arguments are readable by every user
/// (`/proc/PID/cmdline`).
pub const HEADERS_ENV: &str = "MEMLINEAGE_UPSTREAM_HEADERS";
/// Largest gateway configuration file, in bytes.
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// How long the upstream server has to exit once its input is closed.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// The MCP gateway: an MCP server on standard input/output that runs the upstream server
/// (UPSTREAM_COMMAND) and relays to it, deciding every tools/call by the hooks' policy and
/// recording what the upstream returns (spec/mcp.md §6).
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path (not with --config).
    #[arg(required_unless_present = "config", conflicts_with = "config")]
    ledger: Option<PathBuf>,
    /// Gate policy (TOML); default: the coding-agent policy, as for the hooks.
    #[arg(long, conflicts_with = "config")]
    policy: Option<PathBuf>,
    /// The hooks' state directory (spec/hooks.md §6.2: the pin and the session records).
    #[arg(long, conflicts_with = "config")]
    state: Option<PathBuf>,
    /// The upstream server's name: tools are gated and recorded as mcp__<NAME>__<tool>. With
    /// --config, which of its servers to run. Default: `upstream`.
    #[arg(long)]
    server: Option<String>,
    /// The session id shared with the hooks and the host's other gateways (default:
    /// `mcp-gateway`, shared by every gateway of the ledger).
    #[arg(long, conflicts_with = "config")]
    session: Option<String>,
    /// The agent's working directory, when known (relative paths in arguments).
    #[arg(long, conflicts_with = "config")]
    cwd: Option<PathBuf>,
    /// Longest a client request waits for its answer, in milliseconds; progress
    /// notifications extend it up to ten times.
    #[arg(long)]
    deadline_ms: Option<u64>,
    /// Record the server's own declarations (its instructions, tool and prompt descriptions)
    /// as External reads too (spec/mcp.md §6.3).
    #[arg(long)]
    record_declarations: bool,
    /// A gateway configuration file (TOML, spec/mcp.md §6.5) naming the ledger and several
    /// upstream servers; run the one named by --server.
    #[arg(long, requires = "server")]
    config: Option<PathBuf>,
    /// The upstream server's Streamable HTTP endpoint (e.g. http://127.0.0.1:3001/mcp)
    /// instead of a command (spec/mcp.md §6.11).
    #[arg(long, conflicts_with_all = ["config", "upstream"])]
    url: Option<String>,
    /// A header sent with every HTTP request to --url, `Name: value`; repeatable. Never logged,
    /// but a process's arguments are visible to every user of the machine: give a secret (an
    /// `Authorization: Bearer …` token) in MEMLINEAGE_UPSTREAM_HEADERS instead (one header a
    /// line), as `mcp install` does.
    #[arg(long = "header")]
    headers: Vec<String>,
    /// The upstream server's command and arguments, after `--` (not with --config).
    #[arg(last = true, conflicts_with = "config")]
    upstream: Vec<OsString>,
}

/// A gateway configuration file (`spec/mcp.md` §6.5). Relative paths are taken from the file's
/// directory.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The ledger.
    pub ledger: PathBuf,
    /// The gate policy, if not the default.
    #[serde(default)]
    pub policy: Option<PathBuf>,
    /// The hooks' state directory.
    #[serde(default)]
    pub state: Option<PathBuf>,
    /// The session shared by every server of the file.
    #[serde(default)]
    pub session: Option<String>,
    /// The agent's working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The deadline, in milliseconds.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    /// Record the servers' declarations as reads.
    #[serde(default)]
    pub record_declarations: bool,
    /// The upstream servers by name.
    pub servers: BTreeMap<String, Upstream>,
}

/// One upstream server of a configuration file: a `command` (stdio) or a `url` (Streamable
/// HTTP), not both.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upstream {
    /// The command.
    #[serde(default)]
    pub command: Option<PathBuf>,
    /// The Streamable HTTP endpoint.
    #[serde(default)]
    pub url: Option<String>,
    /// Headers sent with every HTTP request (`url` only).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables added for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

/// What one gateway process runs.
struct Plan {
    ledger: PathBuf,
    policy: Option<PathBuf>,
    state: Option<StateDir>,
    options: Options,
    target: Target,
}

/// The upstream server: a command run as a child (stdio), or an HTTP endpoint.
enum Target {
    Command {
        command: Vec<OsString>,
        env: BTreeMap<String, String>,
        dir: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: Vec<String>,
    },
}

/// Runs `memlineage mcp proxy`.
pub fn run(a: Args) -> Res<ExitCode> {
    let _telemetry = telemetry::init(true);
    let a_config = a.config.clone();
    let plan = match &a.config {
        Some(c) => from_config(c, &a)?,
        None => from_args(a)?,
    };
    crate::open::check_ledger_file(&plan.ledger)?;
    let (ledger, policy) = hookd::absolute(&plan.ledger, plan.policy.as_deref())?;
    // The configuration file names the ledger, policy and upstreams of every later start: no
    // tool call may touch it (attack review 54: a file tool behind this gateway rewrote it).
    let config = a_config.map(std::path::absolute).transpose()?;
    let mut door = GatewayDoor::new(ledger, policy, plan.state, config);
    // Opened now, so that a ledger that cannot be opened is said at once (every gated call
    // would be refused); the door opens it again when it changes.
    if let Err(e) = door.open() {
        return Err(format!("the ledger cannot be opened: {e}").into());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let code = rt.block_on(async {
        match plan.target {
            Target::Command { command, env, dir } => {
                serve(plan.options, door, command, env, dir).await
            }
            Target::Http { url, mut headers } => {
                headers.extend(headers_from_env());
                serve_http(plan.options, door, &url, &headers).await
            }
        }
    });
    // Standard input is read on a blocking thread that waits for a line the client may never
    // send (the upstream exited first): do not wait for it.
    rt.shutdown_background();
    code
}

fn from_args(a: Args) -> Res<Plan> {
    let server = a.server.unwrap_or_else(|| "upstream".to_string());
    gateway::check_server_name(&server)?;
    if a.url.is_none() && !a.headers.is_empty() {
        return Err("--header: headers are sent to an HTTP upstream only (give --url)".into());
    }
    let target = match a.url {
        Some(url) => Target::Http {
            url,
            headers: a.headers,
        },
        None if a.upstream.is_empty() => {
            return Err("give the upstream server's command after `--`, or --url".into())
        }
        None => Target::Command {
            command: a.upstream,
            env: BTreeMap::new(),
            dir: None,
        },
    };
    let session = session(a.session)?;
    let options = Options {
        events: Events {
            server,
            session,
            cwd: a.cwd.as_deref().map(cwd_text).transpose()?,
        },
        deadline: deadline(a.deadline_ms)?,
        declarations: a.record_declarations,
    };
    let ledger = a.ledger.ok_or("give LEDGER or --config")?;
    Ok(Plan {
        state: crate::open::state_for(&ledger, a.state)?,
        ledger,
        policy: a.policy,
        options,
        target,
    })
}

fn from_config(path: &Path, a: &Args) -> Res<Plan> {
    let bytes = crate::io::read_capped(path, MAX_CONFIG_BYTES, "a gateway configuration")?;
    let text = std::str::from_utf8(&bytes).map_err(|_| "the configuration is not UTF-8")?;
    let c: Config = toml::from_str(text)
        .map_err(|e| crate::io::bounded(&format!("{}: {e}", path.display()), 2048))?;
    let base = std::path::absolute(path)?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let at = |p: &Path| base.join(p);
    let name = a.server.clone().unwrap_or_default();
    gateway::check_server_name(&name)?;
    let up = c.servers.get(&name).ok_or_else(|| {
        let names: Vec<&str> = c.servers.keys().map(String::as_str).collect();
        format!(
            "{}: no server {name:?} (it has: {})",
            path.display(),
            names.join(", ")
        )
    })?;
    let target = match (&up.command, &up.url) {
        (Some(c), None) if up.headers.is_empty() => {
            let mut command = vec![c.clone().into_os_string()];
            command.extend(up.args.iter().map(OsString::from));
            Target::Command {
                command,
                env: up.env.clone(),
                dir: up.cwd.as_deref().map(at),
            }
        }
        (None, Some(url)) if up.args.is_empty() && up.env.is_empty() && up.cwd.is_none() => {
            Target::Http {
                url: url.clone(),
                headers: up
                    .headers
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect(),
            }
        }
        _ => {
            return Err(format!(
                "{}: server {name:?}: give `command` (with args, env, cwd) or `url` (with \
                 headers), not both",
                path.display()
            )
            .into())
        }
    };
    let ledger = at(&c.ledger);
    Ok(Plan {
        state: crate::open::state_for(&ledger, c.state.as_deref().map(at))?,
        ledger,
        policy: c.policy.as_deref().map(at),
        options: Options {
            events: Events {
                server: name,
                session: session(c.session)?,
                cwd: c.cwd.as_deref().map(|p| cwd_text(&at(p))).transpose()?,
            },
            deadline: deadline(a.deadline_ms.or(c.deadline_ms))?,
            declarations: a.record_declarations || c.record_declarations,
        },
        target,
    })
}

fn deadline(ms: Option<u64>) -> Res<Duration> {
    match ms.unwrap_or(DEFAULT_DEADLINE_MS) {
        0 => Err("--deadline-ms: the deadline is at least 1 ms".into()),
        ms => Ok(Duration::from_millis(ms)),
    }
}

fn cwd_text(p: &Path) -> Res<String> {
    let abs = std::path::absolute(p)?;
    Ok(abs
        .to_str()
        .ok_or_else(|| format!("{}: not UTF-8", abs.display()))?
        .to_string())
}

/// The session id every gateway of a ledger shares unless told another one.
pub const DEFAULT_SESSION: &str = memlineage::front::mcp::gateway::GATEWAY_SESSION;

/// The session id: the one given, else [`DEFAULT_SESSION`]. A host's conversations outlive
/// its processes (a chat is continued after a restart), so the session must outlive them too:
/// what any of the host's servers returned stays a read (`spec/mcp.md` §6.4).
fn session(given: Option<String>) -> Res<String> {
    match given {
        Some(s) if s.is_empty() => Err("--session: a session id is not empty".into()),
        Some(s) => Ok(s),
        None => Ok(DEFAULT_SESSION.to_string()),
    }
}

/// Starts the upstream server and relays until one side closes.
async fn serve(
    options: Options,
    door: GatewayDoor,
    command: Vec<OsString>,
    env: BTreeMap<String, String>,
    dir: Option<PathBuf>,
) -> Res<ExitCode> {
    let (program, args) = command.split_first().ok_or("no upstream command")?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .envs(&env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if let Some(path) = upstream_path(Path::new(program), env.get("PATH")) {
        cmd.env("PATH", path);
    }
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let shown = Path::new(program).display().to_string();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("the upstream server {shown} cannot be started: {e}"))?;
    let (Some(up_in), Some(up_out)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("the upstream server's standard input or output is missing".into());
    };
    tracing::info!(upstream = %shown, server = %options.events.server,
                   session = %options.events.session, "memlineage mcp proxy: relaying");
    let ended = gateway::run(
        options,
        door,
        tokio::io::stdin(),
        tokio::io::stdout(),
        up_out,
        up_in,
    )
    .await?;
    match ended {
        Ended::ClientClosed => {
            if tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
            Ok(ExitCode::SUCCESS)
        }
        Ended::UpstreamClosed => {
            let status = tokio::time::timeout(EXIT_WAIT, child.wait()).await;
            let code = match status {
                Ok(Ok(s)) => s.code().unwrap_or(1),
                _ => 1,
            };
            tracing::warn!(code, "memlineage mcp proxy: the upstream server exited");
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
    }
}

/// The headers of [`HEADERS_ENV`]: its non-blank lines.
fn headers_from_env() -> Vec<String> {
    std::env::var(HEADERS_ENV)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// Connects to the upstream's Streamable HTTP endpoint and relays until the client closes
/// (`spec/mcp.md` §6.11).
async fn serve_http(
    options: Options,
    door: GatewayDoor,
    url: &str,
    headers: &[String],
) -> Res<ExitCode> {
    let pipes = gateway::http::connect(url, headers)?;
    tracing::info!(upstream = %gateway::http::redacted(url), server = %options.events.server,
                   session = %options.events.session, "memlineage mcp proxy: relaying over HTTP");
    let ended = gateway::run(
        options,
        door,
        tokio::io::stdin(),
        tokio::io::stdout(),
        pipes.output,
        pipes.input,
    )
    .await?;
    Ok(match ended {
        Ended::ClientClosed => ExitCode::SUCCESS,
        Ended::UpstreamClosed => ExitCode::FAILURE,
    })
}

/// The upstream's `PATH` when its command is given with a directory: that directory first, so
/// that a script whose `#!` line asks `env` for its interpreter finds the one installed beside
/// it (`npx` and `node`), whatever `PATH` the host gives (`spec/mcp.md` §6.6).
fn upstream_path(program: &Path, configured: Option<&String>) -> Option<OsString> {
    let dir = program.parent().filter(|d| !d.as_os_str().is_empty())?;
    let rest = match configured {
        Some(p) => OsString::from(p),
        None => std::env::var_os("PATH").unwrap_or_default(),
    };
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::env::split_paths(&rest));
    std::env::join_paths(paths).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upstream_finds_its_interpreter_beside_it() {
        let p = upstream_path(
            Path::new("/opt/node/bin/npx"),
            Some(&"/usr/bin".to_string()),
        );
        assert_eq!(p, Some(OsString::from("/opt/node/bin:/usr/bin")));
        assert_eq!(upstream_path(Path::new("npx"), None), None);
    }
}
