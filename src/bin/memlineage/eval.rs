//! `memlineage eval`: the lineage-stress harness (`spec/eval.md`), printed as Markdown or JSON,
//! optionally written as the two artifacts `results.md` and `results.json`.

use crate::io::{read_capped, write_out};
use crate::Res;
use memlineage::eval::{parse, render_json, render_markdown, run as run_harness};
use std::path::PathBuf;
use std::process::ExitCode;

/// The bundled scenario file (`spec/eval/scenarios.toml`), the default of `--scenarios`.
const BUNDLED_SCENARIOS: &str = include_str!("../../../spec/eval/scenarios.toml");

/// Largest scenario file read, in bytes.
const MAX_SCENARIO_BYTES: u64 = 4 << 20;

/// Run the lineage-stress harness: attack, benign, τ × K and laundering tables.
#[derive(clap::Args)]
pub struct Args {
    /// Scenario file (TOML, spec/eval.md); default: the bundled spec/eval/scenarios.toml.
    #[arg(long)]
    scenarios: Option<PathBuf>,
    /// Print JSON instead of Markdown.
    #[arg(long)]
    json: bool,
    /// Also write DIR/results.md and DIR/results.json.
    #[arg(long, value_name = "DIR")]
    write: Option<PathBuf>,
}

/// Runs the harness over `--scenarios` (default: the bundled file); prints Markdown, or JSON
/// with `--json`; with `--write DIR`, also writes `DIR/results.md` and `DIR/results.json`.
pub fn run(a: Args) -> Res<ExitCode> {
    let text = match &a.scenarios {
        Some(p) => String::from_utf8(read_capped(p, MAX_SCENARIO_BYTES, "a scenario file")?)
            .map_err(|_| format!("{}: not UTF-8", p.display()))?,
        None => BUNDLED_SCENARIOS.to_string(),
    };
    let report = run_harness(&parse(&text)?)?;
    let (md, js) = (render_markdown(&report), render_json(&report));
    if let Some(dir) = a.write {
        write_out(Some(dir.join("results.md")), md.as_bytes())?;
        write_out(Some(dir.join("results.json")), js.as_bytes())?;
    }
    write_out(None, if a.json { js.as_bytes() } else { md.as_bytes() })?;
    Ok(ExitCode::SUCCESS)
}
