//! `memlineage init`: a new ledger (SQLite file) and its key file.

use crate::io::say;
use crate::open::key_path;
use crate::Res;
use clap::ValueEnum;
use memlineage::front::keystore::KeyStore;
use memlineage::lineage::{LabelPolicy, WeakRule};
use memlineage::record::Weight;
use memlineage::store::SqliteStore;
use memlineage::Ledger;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Create a ledger (SQLite file) and its key file LEDGER.key (mode 0600).
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// Log origin, the checkpoint's first line.
    #[arg(long, default_value = "memlineage.local/ledger")]
    origin: String,
    /// Threshold τ in [0, 1]: an edge propagates labels when w > τ.
    #[arg(long, default_value_t = 0.5)]
    tau: f64,
    /// Rule for derived entries with no strong parent.
    #[arg(long, value_enum, default_value_t = RuleArg::FailClosed)]
    rule: RuleArg,
}

/// The weak-parent rule, as a command-line value.
#[derive(Clone, Copy, ValueEnum)]
pub enum RuleArg {
    FailOpen,
    FailClosed,
}

impl RuleArg {
    /// The library's rule.
    pub fn weak_rule(self) -> WeakRule {
        match self {
            RuleArg::FailOpen => WeakRule::FailOpen,
            RuleArg::FailClosed => WeakRule::FailClosed,
        }
    }
}

/// Runs `memlineage init`.
pub fn run(a: Args) -> Res<ExitCode> {
    create(&a.ledger, &a.origin, a.tau, a.rule)
}

/// Creates the ledger `ledger` and its key file (neither may exist) with a fresh log key.
pub fn create(ledger: &Path, origin: &str, tau: f64, rule: RuleArg) -> Res<ExitCode> {
    let keys = key_path(ledger);
    if ledger.exists() || keys.exists() {
        return Err(format!("{} or its key file already exists", ledger.display()).into());
    }
    let policy = LabelPolicy {
        tau: Weight::from_f64(tau)?,
        weak_rule: rule.weak_rule(),
    };
    create_parent(ledger)?;
    let ks = KeyStore::generate(origin);
    let signer = ks.log_signer()?;
    ks.save(&keys)?;
    let mut l = Ledger::create(SqliteStore::open(ledger)?, signer, policy)?;
    // A signed head of the empty tree: `verify` succeeds on a fresh ledger (issue 13).
    l.checkpoint()?;
    say!("created {} (key file {})", ledger.display(), keys.display());
    say!("log key: {}", l.vkey());
    Ok(ExitCode::SUCCESS)
}

/// Creates the directory `ledger` goes in when it is missing (README: `memlineage init
/// .memlineage/agent.ledger` in a fresh project), private to the user since it holds the key
/// file; an existing directory is left as it is.
fn create_parent(ledger: &Path) -> Res<()> {
    let Some(dir) = ledger.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    if dir.is_dir() {
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
        .map_err(|e| format!("cannot create the directory {}: {e}", dir.display()))?;
    Ok(())
}

/// τ as the caller wrote it, exactly: a decimal in `[0, 1]` with no digit but zeroes after
/// the sixth decimal (τ is signed in millionths, `spec/lineage.md` §2.1). Rounding it, as a
/// weight read from JSON is, would let `--tau 0.4999996` pass a checkpoint that signs 0.5,
/// where an edge of weight 0.5 is weak, not strong as the caller asked (attack review 44).
/// For the τ a verifier expects (`verify`, `verify-proof`); `init --tau` still rounds.
pub fn exact_tau(s: &str) -> Res<Weight> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    let (six, rest) = frac.split_at(frac.len().min(6));
    let ok = !int.is_empty() && int.len() <= 7 && digits(int) && digits(frac);
    if !ok || (s.contains('.') && frac.is_empty()) || rest.bytes().any(|b| b != b'0') {
        return Err(format!("--tau {s}: want a decimal in [0, 1] of at most six decimals").into());
    }
    let int: u64 = int
        .parse()
        .map_err(|_| format!("--tau {s}: not a decimal"))?;
    let six: u64 = format!("{six:0<6}")
        .parse()
        .map_err(|_| format!("--tau {s}: not a decimal"))?;
    Ok(Weight::new(
        int.saturating_mul(1_000_000).saturating_add(six),
    )?)
}
