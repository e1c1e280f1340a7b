//! Tracing to standard error (filter from `MEMLINEAGE_LOG`: a level such as `info`, or
//! `target=level` pairs, e.g. `memlineage=debug,rmcp=warn`), plus OTLP export with
//! the `otlp` feature (endpoint from `OTEL_EXPORTER_OTLP_ENDPOINT`).

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
