//! `memlineage mcp` and `memlineage hook <event>`: the agent-runtime fronts (`spec/mcp.md`,
//! `spec/hooks.md`). Logs and traces go to standard error only: standard output carries the MCP
//! protocol, and a hook's output is read by the agent.

use super::{key_path, load_policy, lock_key_file, open, Res};
use clap::ValueEnum;
use memlineage::front::hook::{handle, FileSessions, HookEvent, HookOutcome, EXIT_BLOCK};
use memlineage::front::mcp::{stdio, LedgerServer, ReadSet, SharedKeyFile};
use memlineage::front::{Front, KeyFile};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Largest hook event read from standard input, in bytes (a tool's output travels inside it).
const MAX_EVENT_BYTES: u64 = 16 << 20;

/// The hook events, as subcommand arguments.
#[derive(Clone, Copy, ValueEnum)]
pub enum HookArg {
    /// Before a tool call: blocks (exit 2) sensitive calls justified by untrusted entries.
    PreToolUse,
    /// After a tool call: records its output as an External entry of `tool:<name>`.
    PostToolUse,
    /// A user prompt: records it as a Trusted entry of `user`.
    UserPromptSubmit,
}

impl HookArg {
    fn event(self) -> HookEvent {
        match self {
            HookArg::PreToolUse => HookEvent::PreToolUse,
            HookArg::PostToolUse => HookEvent::PostToolUse,
            HookArg::UserPromptSubmit => HookEvent::UserPromptSubmit,
        }
    }
}

/// Runs the MCP server on standard input/output until the client closes it. With `session`,
/// gate checks use that hook session's reads (`LEDGER.sessions/`); without, every entry of
/// the ledger (`spec/mcp.md` §1).
pub fn mcp(
    ledger: &Path,
    policy: Option<PathBuf>,
    writer: &str,
    session: Option<&str>,
) -> Res<ExitCode> {
    let _telemetry = telemetry::init(true);
    let policy = load_policy(policy)?;
    let (l, _) = open(ledger)?;
    let keys = SharedKeyFile(key_path(ledger));
    let front = Front::new(l, policy, keys).with_agent(writer);
    let reads = match session {
        Some("") => return Err("--session: a session id is not empty".into()),
        Some(id) => ReadSet::Session {
            sessions: Box::new(FileSessions(sessions_dir(ledger))),
            id: id.to_string(),
        },
        None => ReadSet::Ledger {
            sessions_dir: Some(sessions_dir(ledger)),
        },
    };
    let mut lock = key_path(ledger).into_os_string();
    lock.push(".lock");
    let server = LedgerServer::new(front, reads).with_lock(PathBuf::from(lock));
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

/// `LEDGER.sessions`: the hooks' session files (`spec/hooks.md` §3).
fn sessions_dir(ledger: &Path) -> PathBuf {
    let mut dir = ledger.as_os_str().to_owned();
    dir.push(".sessions");
    PathBuf::from(dir)
}

/// Handles one hook event from standard input. Any failure before the event is decided blocks
/// a PreToolUse call (fail closed) and exits 1 for the other events.
pub fn hook(event: HookArg, ledger: &Path, policy: Option<PathBuf>) -> Res<ExitCode> {
    let _telemetry = telemetry::init(false);
    let event = event.event();
    let outcome = run_hook(event, ledger, policy).unwrap_or_else(|e| HookOutcome {
        code: if event == HookEvent::PreToolUse {
            EXIT_BLOCK
        } else {
            1
        },
        stdout: String::new(),
        stderr: format!("memlineage: deny: {e}\n"),
    });
    std::io::stdout().write_all(outcome.stdout.as_bytes())?;
    std::io::stderr().write_all(outcome.stderr.as_bytes())?;
    Ok(ExitCode::from(outcome.code))
}

fn run_hook(event: HookEvent, ledger: &Path, policy: Option<PathBuf>) -> Res<HookOutcome> {
    let mut input = Vec::new();
    std::io::stdin()
        .take(MAX_EVENT_BYTES + 1)
        .read_to_end(&mut input)?;
    if input.len() as u64 > MAX_EVENT_BYTES {
        return Err(format!("event longer than {MAX_EVENT_BYTES} bytes").into());
    }
    if !ledger.is_file() {
        return Err(format!("no ledger at {}", ledger.display()).into());
    }
    // One hook at a time per ledger: the session files and the key file are read-modify-write.
    let _lock = lock_key_file(ledger)?;
    let mut front = front(ledger, policy)?;
    let mut dir = ledger.as_os_str().to_owned();
    dir.push(".sessions");
    let mut sessions = FileSessions(PathBuf::from(dir));
    Ok(handle(&mut front, &mut sessions, event, &input))
}

fn front(
    ledger: &Path,
    policy: Option<PathBuf>,
) -> Res<Front<memlineage::store::SqliteStore, KeyFile>> {
    let policy = load_policy(policy)?;
    let (l, store) = open(ledger)?;
    let keys = KeyFile {
        store,
        path: key_path(ledger),
    };
    Ok(Front::new(l, policy, keys))
}

/// Tracing to standard error (filter from `MEMLINEAGE_LOG`: a level such as `info`, or
/// `target=level` pairs, e.g. `memlineage=debug,rmcp=warn`), plus OTLP export with
/// the `otlp` feature (endpoint from `OTEL_EXPORTER_OTLP_ENDPOINT`).
mod telemetry {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    /// Keeps the exporter alive; flushes it on drop.
    pub struct Guard {
        #[cfg(feature = "otlp")]
        provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            #[cfg(feature = "otlp")]
            if let Some(p) = self.provider.take() {
                let _ = p.shutdown();
            }
        }
    }

    /// Installs the subscriber. `default_on`: log warnings when `MEMLINEAGE_LOG` is unset
    /// (the MCP server); otherwise stay silent (a hook's stderr is shown to the model).
    pub fn init(default_on: bool) -> Guard {
        let fallback = if default_on {
            LevelFilter::WARN
        } else {
            LevelFilter::OFF
        };
        let filter = std::env::var("MEMLINEAGE_LOG")
            .ok()
            .and_then(|f| f.parse::<Targets>().ok())
            .unwrap_or_else(|| Targets::new().with_default(fallback));
        let fmt = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_ansi(false);
        let registry = tracing_subscriber::registry().with(filter).with(fmt);
        #[cfg(feature = "otlp")]
        {
            let provider = otlp_provider();
            let layer = provider.as_ref().map(|p| {
                use opentelemetry::trace::TracerProvider as _;
                tracing_opentelemetry::layer().with_tracer(p.tracer("memlineage"))
            });
            let _ = registry.with(layer).try_init();
            Guard { provider }
        }
        #[cfg(not(feature = "otlp"))]
        {
            let _ = registry.try_init();
            Guard {}
        }
    }

    #[cfg(feature = "otlp")]
    fn otlp_provider() -> Option<opentelemetry_sdk::trace::SdkTracerProvider> {
        std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT")?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()
            .map_err(|e| eprintln!("memlineage: OTLP exporter: {e}"))
            .ok()?;
        Some(
            opentelemetry_sdk::trace::SdkTracerProvider::builder()
                .with_simple_exporter(exporter)
                .build(),
        )
    }
}
