//! `memlineage amputate`: counterfactual amputation of one carrier with the scripted agent
//! (`spec/counterfactual.md` §2.6).

use crate::io::{read_capped, say};
use crate::Res;
use memlineage::counterfactual::amputation::{
    amputate, Protocol, Ratio, Scenario, ScriptedAgent, Verdict,
};
use memlineage::record::EntryId;
use std::path::PathBuf;
use std::process::ExitCode;

/// Largest scenario file, in bytes.
const MAX_SCENARIO_BYTES: u64 = 4 << 20;
/// Exit status when the mean Δaction is at or below the noise floor.
const NOT_DISTINGUISHABLE: u8 = 2;
/// Exit status when the mean Δaction exceeds the floor but the sign test is not significant.
const INCONCLUSIVE: u8 = 3;

/// Counterfactual amputation with the scripted agent: Δaction, noise floor, DiD, sign test.
///
/// Exits 0 only when the carrier is load-bearing: 2 when the mean Δaction is at or below
/// the noise floor (not distinguishable from noise), 3 when it is above but the sign test
/// is not significant at --alpha.
#[derive(clap::Args)]
pub struct Args {
    /// Scenario file (JSON, spec/counterfactual.md §3.1).
    scenario: PathBuf,
    /// The carrier (memory entry id, 64 hex digits) to make unavailable.
    #[arg(long)]
    carrier: String,
    /// Negative-control carrier, absent from the scenario (default: largest unused id).
    #[arg(long)]
    ghost: Option<String>,
    /// Paired repeats (1..=126).
    #[arg(long, default_value_t = 20)]
    repeats: u32,
    /// Seed base: repeat i uses seeds S+2i (paired) and S+2i+1 (control).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Significance level of the sign test (exact decimal).
    #[arg(long, default_value = "0.05")]
    alpha: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs the protocol and prints the report; the exit status follows the verdict.
pub fn run(o: Args) -> Res<ExitCode> {
    let text = read_capped(&o.scenario, MAX_SCENARIO_BYTES, "a scenario")?;
    let text = String::from_utf8(text).map_err(|_| "scenario is not UTF-8")?;
    let s = Scenario::from_json(&text)?;
    let carrier = EntryId::from_hex(&o.carrier)?;
    let ghost = match &o.ghost {
        Some(g) => EntryId::from_hex(g)?,
        None => s.unused_id(),
    };
    if s.memories.iter().any(|m| m.id == ghost) {
        return Err(format!("ghost carrier {ghost} is a memory of the scenario").into());
    }
    if !s.memories.iter().any(|m| m.id == carrier) {
        eprintln!("note: carrier {carrier} is not a memory of the scenario (Δaction is 0)");
    }
    let alpha = Ratio::from_decimal(&o.alpha).ok_or("--alpha is a decimal in (0, 1]")?;
    let protocol = Protocol {
        repeats: o.repeats,
        seed: o.seed,
        alpha,
    };
    let r = amputate(&mut ScriptedAgent, &s, carrier, ghost, &protocol)?;
    if o.json {
        let v = serde_json::json!({
            "carrier": carrier.to_string(),
            "ghost": ghost.to_string(),
            "repeats": o.repeats,
            "carrier_reads_per_run": r.carrier_reads,
            "delta_action": r.mean_delta,
            "noise_floor": r.noise_floor,
            "did": r.did,
            "sign_test": {
                "positive": r.sign.positive,
                "negative": r.sign.negative,
                "ties": r.sign.ties,
                "p": r.sign.p.to_string(),
                "p_approx": r.sign.p.to_f64(),
                "alpha": alpha.to_string(),
            },
            "parse_failures": r.parse_failures.unparseable,
            "responses": r.parse_failures.responses,
            "parse_failure_rate": r.parse_failures.rate(),
            "verdict": verdict_name(r.verdict),
        });
        say!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        say!(
            "carrier {carrier}: read at {:.2} steps per baseline run",
            r.carrier_reads
        );
        say!(
            "Δaction (paired, same seed): {:.4} mean over {} repeats",
            r.mean_delta,
            o.repeats
        );
        say!(
            "noise floor (absent carrier, independent seed): {:.4}",
            r.noise_floor
        );
        say!("difference in differences: {:+.4}", r.did);
        say!(
            "sign test: {} positive, {} negative, {} tied; p = {} ({:.3e}), exact two-sided; alpha {}",
            r.sign.positive,
            r.sign.negative,
            r.sign.ties,
            r.sign.p,
            r.sign.p.to_f64(),
            o.alpha
        );
        say!(
            "parse failures: {} of {} responses ({:.2}%)",
            r.parse_failures.unparseable,
            r.parse_failures.responses,
            100.0 * r.parse_failures.rate()
        );
        say!("verdict: {}", r.verdict.describe());
    }
    Ok(match r.verdict {
        Verdict::LoadBearing => ExitCode::SUCCESS,
        Verdict::Inconclusive => ExitCode::from(INCONCLUSIVE),
        Verdict::NotDistinguishableFromNoise => ExitCode::from(NOT_DISTINGUISHABLE),
    })
}

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::LoadBearing => "load_bearing",
        Verdict::Inconclusive => "inconclusive",
        Verdict::NotDistinguishableFromNoise => "not_distinguishable_from_noise",
    }
}
