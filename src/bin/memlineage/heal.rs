//! `memlineage heal`: rebuild a quarantined fact from clean, agreeing, independent sources
//! (`spec/forensics.md` §5).

use crate::append::now_ms;
use crate::io::say;
use crate::open::{open, principal_key, ADVISORY_ROLES};
use crate::Res;
use memlineage::forensics::heal::{heal, HealOutcome, Vote};
use memlineage::record::{EntryId, Role};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status when the fact stays quarantined.
const STILL_QUARANTINED: u8 = 3;

/// Rebuild a quarantined fact from clean sources that agree (at least two independent
/// votes, strictly more than any other claim). Exits 3 when it stays quarantined.
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// The quarantined fact's id.
    target: String,
    /// Candidate supporting entries (ids); only clean ones vote.
    #[arg(long = "support", required = true, num_args = 1..)]
    support: Vec<String>,
    /// The claim is the content after this prefix (entries without it do not vote).
    #[arg(long, default_value = "")]
    claim_prefix: String,
    /// The system principal signing the replacement (created if absent).
    #[arg(long = "as", default_value = "healer")]
    by: String,
}

/// Runs `memlineage heal`; exits 3 when the fact stays quarantined.
pub fn run(a: Args) -> Res<ExitCode> {
    let target = EntryId::from_hex(&a.target)?;
    let support = a
        .support
        .iter()
        .map(|s| EntryId::from_hex(s))
        .collect::<Result<Vec<_>, _>>()?;
    let (mut l, _) = open(&a.ledger)?;
    let key = principal_key(&a.ledger, &mut l, &a.by, &ADVISORY_ROLES, Role::System)?;
    let prefix = a.claim_prefix.as_str();
    let claim = |c: &[u8]| {
        let text = std::str::from_utf8(c).ok()?;
        text.trim()
            .strip_prefix(prefix)
            .map(|s| s.trim().to_string())
    };
    let out = heal(&mut l, target, &support, claim, &key, now_ms())?;
    crate::open::sign_and_pin(&mut l, &a.ledger)?;
    match out {
        HealOutcome::Healed {
            replacement,
            tally: t,
        } => {
            say!(
                "{}",
                serde_json::json!({"healed": true, "replacement": replacement.id.to_string(),
                                   "label": replacement.label.name(), "tally": tally(&t)})
            );
            Ok(ExitCode::SUCCESS)
        }
        HealOutcome::StillQuarantined { why, tally: t } => {
            say!(
                "{}",
                serde_json::json!({"healed": false, "why": format!("{why:?}"), "tally": tally(&t)})
            );
            Ok(ExitCode::from(STILL_QUARANTINED))
        }
    }
}

/// The vote tally as JSON: one object per claim with its votes and supporters.
fn tally(t: &[Vote]) -> Vec<serde_json::Value> {
    t.iter()
        .map(|v| {
            serde_json::json!({"claim": v.claim, "votes": v.votes,
            "supporters": v.supporters.iter().map(|s| s.to_string()).collect::<Vec<_>>()})
        })
        .collect()
}
