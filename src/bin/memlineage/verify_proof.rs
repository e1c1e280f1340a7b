//! `memlineage verify-proof`: a proof bundle or a label proof checked with nothing but the
//! file and the log key.

use crate::init::RuleArg;
use crate::io::{read_capped, say};
use crate::Res;
use memlineage::lineage::label_proof::MAX_LABEL_PROOF_BYTES;
use memlineage::lineage::label_proof::{LabelProof, LabelVerdict, LABEL_PROOF_HEADER};
use memlineage::log::{LogVerifier, ProofBundle};
use memlineage::quote;
use memlineage::record::{EntryId, Weight};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Verify a proof bundle or a label proof with nothing but the file and the log key.
#[derive(clap::Args)]
pub struct Args {
    /// Proof bundle (`.tlog-proof`) or label proof file.
    file: PathBuf,
    /// The log's verifier key (C2SP vkey).
    #[arg(long)]
    log_key: String,
    /// The threshold τ the label proof's checkpoint must sign (decimal, e.g. 0.5; exactly, in
    /// millionths: 0.5000004 is no τ a checkpoint can sign).
    #[arg(long)]
    tau: Option<String>,
    /// The weak-parent rule the label proof's checkpoint must sign.
    #[arg(long, value_enum)]
    rule: Option<RuleArg>,
    /// The tree size of a checkpoint of this log you already trust (a pin, a witness's): a
    /// label proof against an older checkpoint is refused, since it may predate a flag, a
    /// release or a tombstone (`spec/label-proof.md` §5).
    #[arg(long)]
    min_size: Option<u64>,
}

/// Runs `memlineage verify-proof`.
pub fn run(a: Args) -> Res<ExitCode> {
    let text = read_capped(&a.file, MAX_LABEL_PROOF_BYTES as u64, "a proof")?;
    if text.starts_with(LABEL_PROOF_HEADER.as_bytes()) {
        let tau = a.tau.as_deref().map(crate::init::exact_tau).transpose()?;
        return verify_label_proof(&text, &a.log_key, (tau, a.rule), a.min_size);
    }
    if a.tau.is_some() || a.rule.is_some() || a.min_size.is_some() {
        return Err("--tau, --rule and --min-size apply to label proofs only".into());
    }
    verify_proof(&a.file, &a.log_key)
}

/// Verifies the bundle in `file` against the log key `log_key` (C2SP vkey) and prints what it
/// proves.
pub fn verify_proof(file: &Path, log_key: &str) -> Res<ExitCode> {
    let text = read_capped(
        file,
        memlineage::log::MAX_BUNDLE_BYTES as u64,
        "a proof bundle",
    )?;
    let verifier = LogVerifier::from_vkey(log_key)?;
    let bundle = ProofBundle::parse(&text)?;
    let (entry, c) = bundle.verify(&verifier)?;
    say!(
        "OK: entry {} ({} by {}) is leaf {} of {} tree size {} root {}",
        entry.id(),
        entry.entry().kind.name(),
        entry.writer().short(),
        bundle.proof.index,
        c.origin(),
        c.size(),
        c.root()
    );
    Ok(ExitCode::SUCCESS)
}

/// Verifies a label proof (`spec/label-proof.md` §4) and prints the label, the lineage path,
/// the quarantine and the tombstones it shows. `tau` and `rule`, when given, must be what the
/// checkpoint signs; `min_size`, when given, is the least tree size it may be of.
pub fn verify_label_proof(
    text: &[u8],
    log_key: &str,
    (tau, rule): (Option<Weight>, Option<RuleArg>),
    min_size: Option<u64>,
) -> Res<ExitCode> {
    let verifier = LogVerifier::from_vkey(log_key)?;
    let v = LabelProof::parse(text)?.verify(&verifier, None)?;
    let size = v.checkpoint.size();
    if let Some(min) = min_size.filter(|m| size < *m) {
        return Err(format!(
            "the proof's checkpoint is of tree size {size}, older than the {min} you trust: \
             a flag, a release or a tombstone after it would not be shown"
        )
        .into());
    }
    let p = v.policy;
    if tau.is_some_and(|t| t != p.tau) || rule.is_some_and(|r| r.weak_rule() != p.weak_rule) {
        return Err(format!(
            "the checkpoint signs tau {} rule {}; --tau/--rule say otherwise",
            p.tau,
            p.weak_rule.name()
        )
        .into());
    }
    let c = &v.checkpoint;
    say!(
        "OK: entry {} ({} by {}) is leaf {} of {} tree size {} root {}",
        v.entry.id(),
        v.entry.entry().kind.name(),
        v.entry.writer().short(),
        v.index(),
        c.origin(),
        c.size(),
        c.root()
    );
    say!(
        "label: {} (tau {}, rule {}, signed by the checkpoint; {} entries of ancestry)",
        v.label.name(),
        p.tau,
        p.weak_rule.name(),
        v.ancestry.len()
    );
    match v.path.is_empty() {
        true => say!("lineage: no untrusted ancestor reaches it over propagating edges"),
        false => say!("lineage: {}", hops(&v, &v.path)),
    }
    match &v.quarantine {
        None => say!("quarantined: no"),
        Some(q) => say!(
            "quarantined: yes, by flag {} (reach {}): {}",
            q.flag,
            q.reach.name(),
            hops(&v, &q.path)
        ),
    }
    match v.tombstones.first() {
        None => say!("tombstoned: no"),
        Some(t) => say!("tombstoned: yes, by {t}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// A path of ancestry entries, source first: `be9e4491 tool_result by `tool:read_file`
/// (tool) [EXTERNAL] -> …`, names quoted (they are chosen by whoever bound the key).
fn hops(v: &LabelVerdict, path: &[EntryId]) -> String {
    let hop = |id: &EntryId| match v.ancestor(id) {
        Some(a) => format!(
            "{} {} by {} ({}) [{}]",
            id.short(),
            a.kind.name(),
            quote::name(&a.name),
            a.role.name(),
            a.label.name()
        ),
        None => id.short(),
    };
    path.iter().map(hop).collect::<Vec<_>>().join(" -> ")
}
