//! `memlineage release`: lift the quarantine a flag entry made (`spec/forensics.md` §2).

use crate::io::say;
use crate::open::{open, principal_key, ADVISORY_ROLES};
use crate::Res;
use memlineage::record::{EntryId, Role};
use std::path::PathBuf;
use std::process::ExitCode;

/// Lift the quarantine made by a flag entry, with a reason.
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// The flag entry's id.
    flag: String,
    /// Why.
    #[arg(long)]
    reason: String,
    /// The system principal signing the release (created if absent).
    #[arg(long = "as", default_value = "advisory")]
    by: String,
}

/// Runs `memlineage release`.
pub fn run(a: Args) -> Res<ExitCode> {
    let flag = EntryId::from_hex(&a.flag)?;
    let (mut l, _) = open(&a.ledger)?;
    let key = principal_key(&a.ledger, &mut l, &a.by, &ADVISORY_ROLES, Role::System)?;
    let r = l.release(flag, &key, &a.reason)?;
    crate::open::sign_and_pin(&mut l, &a.ledger)?;
    say!(
        "{}",
        serde_json::json!({"release": r.id.to_string(), "flag": flag.to_string(),
                           "quarantined": l.quarantine().len()})
    );
    Ok(ExitCode::SUCCESS)
}
