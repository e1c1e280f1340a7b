//! `memlineage eval`: the lineage-stress harness (`spec/eval.md`), printed as Markdown or JSON,
//! optionally written as the two artifacts `results.md` and `results.json`.

use crate::io::{read_capped, write_out};
use crate::Res;
use memlineage::eval::{parse, render_json, render_markdown, run, BUNDLED_SCENARIOS};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Largest scenario file read, in bytes.
const MAX_SCENARIO_BYTES: u64 = 4 << 20;

/// Runs the harness over `scenarios` (default: the bundled file); prints Markdown, or JSON with
/// `json`; with `write`, also writes `DIR/results.md` and `DIR/results.json`.
pub fn eval(scenarios: Option<&Path>, json: bool, write: Option<PathBuf>) -> Res<ExitCode> {
    let text = match scenarios {
        Some(p) => String::from_utf8(read_capped(p, MAX_SCENARIO_BYTES, "a scenario file")?)
            .map_err(|_| format!("{}: not UTF-8", p.display()))?,
        None => BUNDLED_SCENARIOS.to_string(),
    };
    let report = run(&parse(&text)?)?;
    let (md, js) = (render_markdown(&report), render_json(&report));
    if let Some(dir) = write {
        write_out(Some(dir.join("results.md")), md.as_bytes())?;
        write_out(Some(dir.join("results.json")), js.as_bytes())?;
    }
    write_out(None, if json { js.as_bytes() } else { md.as_bytes() })?;
    Ok(ExitCode::SUCCESS)
}
