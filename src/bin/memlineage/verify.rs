//! `memlineage verify`: the full offline audit of a ledger file (`spec/log.md`,
//! `spec/lineage.md`), with remembered checkpoints and witnesses.

use crate::init::RuleArg;
use crate::io::{read_capped, say};
use crate::open::{existing_store, load_policy};
use crate::{progress, Res};
use memlineage::audit::{audit_secrets, reach_quarantine, AuditReport};
use memlineage::front::secrets::{PolicySources, SecretRules};
use memlineage::ledger::{stored_policy, stored_vkey, StoreSource};
use memlineage::lineage::secrecy::SecretSources;
use memlineage::lineage::LabelPolicy;
use memlineage::log::{
    prove_consistency, tree_root, verify_cosigned, CheckpointState, ForkError, LogVerifier, Update,
    VerifiedCheckpoint, WitnessPolicy, WitnessVerifier,
};
use memlineage::store::{RowWalk, SqliteStore, Store};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Verify a whole ledger offline: signatures, encodings, keyring, labels, tree root.
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// The log's verifier key (C2SP vkey); default: the one recorded in the ledger.
    #[arg(long)]
    log_key: Option<String>,
    /// A signed checkpoint note file; default: the latest stored in the ledger.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Client state file remembering the newest verified checkpoint of each log: the new
    /// checkpoint must extend it (consistency proof), else rollback / split view is
    /// reported. Created (trust on first use) if absent.
    #[arg(long)]
    state: Option<PathBuf>,
    /// A witness verifier key (C2SP tlog-cosignature); repeat for several.
    #[arg(long = "witness")]
    witnesses: Vec<String>,
    /// How many of the witnesses must have cosigned the checkpoint (default: all).
    #[arg(long)]
    quorum: Option<usize>,
    /// The τ the auditor expects: it must be the one the checkpoint signs; for a checkpoint
    /// that signs none (written before parameters were signed), labels are recomputed under it
    /// (default 0.5), never under the store's unsigned setting.
    /// Read exactly, in millionths (0.4999996 is an error, not 0.5).
    #[arg(long)]
    tau: Option<String>,
    /// The weak-parent rule the auditor expects, as `--tau` (default fail-closed).
    #[arg(long, value_enum)]
    rule: Option<RuleArg>,
    /// A gate policy (TOML) whose `[secrets]` table says which entries are secret sources:
    /// secrecy is then recomputed too (`spec/lineage.md` §8), with `~` as `$HOME`.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// With `--policy`: the working directory relative paths in recorded calls are taken
    /// from (the agent's project, as the hooks saw it); default: unknown (`spec/hooks.md`
    /// §16.2).
    #[arg(long, requires = "policy")]
    project: Option<PathBuf>,
}

/// What a verifier brings beyond the log key: remembered checkpoints and witnesses.
#[derive(Default)]
pub struct Trust {
    state: Option<PathBuf>,
    witnesses: Vec<String>,
    quorum: Option<usize>,
    tau: Option<String>,
    rule: Option<RuleArg>,
    policy: Option<PathBuf>,
    project: Option<PathBuf>,
}

/// Runs `memlineage verify`.
pub fn run(a: Args) -> Res<ExitCode> {
    let trust = Trust {
        state: a.state,
        witnesses: a.witnesses,
        quorum: a.quorum,
        tau: a.tau,
        rule: a.rule,
        policy: a.policy,
        project: a.project,
    };
    verify(&a.ledger, a.log_key, a.checkpoint, &trust)
}

/// Audits `ledger` against `log_key` (default: the key recorded in it) and `checkpoint`
/// (default: the latest stored) and prints the report; exits 1 when it is not clean.
pub fn verify(
    ledger: &Path,
    log_key: Option<String>,
    checkpoint: Option<PathBuf>,
    trust: &Trust,
) -> Res<ExitCode> {
    let (r, stored_tree, side, pinned) = audit_ledger(ledger, log_key, checkpoint, trust)?;
    say!(
        "checkpoint: {} size {} root {}",
        r.checkpoint.origin(),
        r.checkpoint.size(),
        r.checkpoint.root()
    );
    say!(
        "entries: {} read, {} verified (signature, canonical bytes, keyring, parents)",
        r.entries,
        r.verified
    );
    say!(
        "labels recomputed: trusted {} derived_trusted {} derived_untrusted {} external {}",
        r.label_counts[0],
        r.label_counts[1],
        r.label_counts[2],
        r.label_counts[3]
    );
    say!(
        "quarantine recomputed: {} active flags reach {} entries",
        r.quarantine.flags().count(),
        r.quarantine.len()
    );
    if let Some(sec) = &r.secrecy {
        say!(
            "secrecy recomputed: {} secret entries ({} sources, {} unverifiable)",
            sec.count(),
            sec.sources.len(),
            sec.unverifiable
        );
        for (id, what) in sec.sources.iter().take(20) {
            say!("  source {}: {}", id.short(), memlineage::quote::name(what));
        }
        if sec.sources.len() > 20 {
            say!("  … and {} more sources", sec.sources.len() - 20);
        }
    }
    say!(
        "tree root at checkpoint size: {}",
        if r.root_matches {
            "matches"
        } else {
            "MISMATCH"
        }
    );
    say!(
        "effects index at checkpoint size: {}",
        match r.index_matches() {
            Some(true) => "matches the signed one",
            Some(false) => "MISMATCH (the checkpoint signs another)",
            None => "not signed by this checkpoint",
        }
    );
    say!(
        "stored tree hashes and settings: {}",
        match &stored_tree {
            Ok(()) => "give the checkpoint's root; settings are the signed ones".to_string(),
            Err(why) => format!("MISMATCH ({why})"),
        }
    );
    match &side {
        Ok(what) => say!("side checkpoint: {what}"),
        Err(why) => say!("side checkpoint: MISMATCH ({why})"),
    }
    match &pinned {
        Ok(what) => say!("hooks' pin: {what}"),
        Err(why) => say!("hooks' pin: MISMATCH ({why})"),
    }
    for f in &r.failures {
        eprintln!("entry {} ({}): {}", f.index, f.id, f.problem);
    }
    if r.is_clean() && stored_tree.is_ok() && side.is_ok() && pinned.is_ok() {
        say!("OK");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "FAILED: {} problems",
            r.failures.len()
                + usize::from(!r.root_matches)
                + usize::from(r.index_matches() == Some(false))
                + usize::from(stored_tree.is_err())
                + usize::from(side.is_err())
                + usize::from(pinned.is_err())
        );
        Ok(ExitCode::FAILURE)
    }
}

/// What to run when a ledger has no signed checkpoint to verify against.
fn no_checkpoint(ledger: &Path) -> String {
    format!(
        "the ledger has no signed checkpoint yet: run `memlineage checkpoint {}` (with its key \
         file) to sign one, then verify again (if it answers that the parameters are signed by \
         no checkpoint, check them with `--tau`/`--rule` here and adopt them with \
         `--adopt-stored-parameters`)",
        ledger.display()
    )
}

/// A check of the store beside the audit: `Err` says why it failed.
type Checked = Result<(), String>;

/// A signed note found beside the audit (the side file, the hooks' pin) checked against the
/// store: what was found, or why it does not match.
type Found = Result<String, String>;

fn audit_ledger(
    ledger: &Path,
    log_key: Option<String>,
    checkpoint: Option<PathBuf>,
    trust: &Trust,
) -> Res<(AuditReport, Checked, Found, Found)> {
    let store = existing_store(ledger)?;
    if trust.quorum.is_some() && trust.witnesses.is_empty() {
        return Err("--quorum needs at least one --witness".into());
    }
    let (vkey, source) = match log_key {
        Some(k) => (k, "given"),
        None => (
            stored_vkey(&store)?,
            "read from the ledger file itself: pass --log-key to check against a key you trust",
        ),
    };
    let verifier = LogVerifier::from_vkey(&vkey)?;
    say!("log key: {vkey} ({source})");
    let note = match checkpoint {
        Some(p) => read_capped(
            &p,
            memlineage::log::MAX_CHECKPOINT_BYTES as u64,
            "a checkpoint",
        )?,
        None => {
            store
                .latest_checkpoint()?
                .ok_or_else(|| no_checkpoint(ledger))?
                .1
        }
    };
    // The labelling parameters come from the checkpoint the log key signed, never from the
    // store (spec/lineage.md §2.1); --tau/--rule must agree with them.
    let signed = LabelPolicy::from_extension(verifier.verify(&note)?.extension())?;
    let given = (
        trust
            .tau
            .as_deref()
            .map(crate::init::exact_tau)
            .transpose()?,
        trust.rule.map(RuleArg::weak_rule),
    );
    let default = LabelPolicy::default();
    let (policy, source) = match signed {
        Some(p) => {
            if given.0.is_some_and(|t| t != p.tau) || given.1.is_some_and(|r| r != p.weak_rule) {
                return Err(format!(
                    "the checkpoint signs tau {} rule {}; --tau/--rule say otherwise",
                    p.tau,
                    p.weak_rule.name()
                )
                .into());
            }
            (p, "signed by the checkpoint")
        }
        None => (
            LabelPolicy {
                tau: given.0.unwrap_or(default.tau),
                weak_rule: given.1.unwrap_or(default.weak_rule),
            },
            "the checkpoint signs none: given or default, never the store's",
        ),
    };
    say!(
        "labels recomputed under tau {}, rule {} ({source})",
        policy.tau,
        policy.weak_rule.name(),
    );
    let stored = stored_policy(&store)?;
    let settings = if stored == policy {
        Ok(())
    } else {
        Err(format!(
            "the store says tau {} rule {}",
            stored.tau,
            stored.weak_rule.name()
        ))
    };
    let size = store.tree_size()?;
    let entries = store.audit_items();
    let log_key_id = verifier.key_id();
    // Secrecy, when a policy is given: the fronts' own classification of sources.
    let gate_policy = match &trust.policy {
        Some(p) => Some(load_policy(Some(p.clone()))?),
        None => None,
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let rules = gate_policy
        .as_ref()
        .map(|p| SecretRules::new(&p.secrets, home.as_deref()));
    let sources = rules.as_ref().map(|rules| PolicySources {
        rules,
        cwd: trust.project.as_deref(),
    });
    let mut report = {
        let mut bar = progress::AuditBar::new(size);
        let sources = sources.as_ref().map(|s| s as &dyn SecretSources);
        audit_secrets(
            entries, &verifier, &note, policy, log_key_id, &mut bar, sources,
        )?
    };
    // Second pass (parse only): what the log's active flags quarantine.
    let bytes = RowWalk::new(&store, 0, size).map(|row| row.map(|(_, bytes)| bytes));
    reach_quarantine(&mut report, bytes, policy)?;
    if report.entries != size {
        return Err(format!("read {} entries of {size}", report.entries).into());
    }
    if report.entries > report.checkpoint.size() {
        say!(
            "note: entries {}..{} are beyond the checkpoint: signatures and labels checked, \
             not yet committed by a signed tree head",
            report.checkpoint.size(),
            report.entries - 1
        );
    }
    if !trust.witnesses.is_empty() {
        let witnesses = trust
            .witnesses
            .iter()
            .map(|w| WitnessVerifier::from_vkey(w))
            .collect::<Result<Vec<_>, _>>()?;
        let quorum = trust.quorum.unwrap_or(witnesses.len());
        let policy = WitnessPolicy::new(witnesses, quorum)?;
        let (_, names) = verify_cosigned(&verifier, &policy, &note)?;
        say!("witnesses: {} cosigned (quorum {quorum})", names.join(", "));
    }
    if let Some(path) = &trust.state {
        check_state(path, &verifier, &report.checkpoint, &store)?;
    }
    // The audit recomputes the tree from the entries; proofs are served from the tree hashes
    // the store keeps. Those must give the same root, or every proof from this store fails
    // (review finding: a zeroed stored hash passed `verify`).
    let want = report.checkpoint.root();
    let stored_tree = match tree_root(report.checkpoint.size(), &StoreSource(&store)) {
        Ok(root) if root == want => Ok(()),
        Ok(root) => Err(format!("they give {root}")),
        Err(e) => Err(e.to_string()),
    };
    let side = side_checkpoint(&store, &verifier, size);
    let pinned = hooks_pin(ledger, &vkey, &store, &verifier, size);
    Ok((report, stored_tree.and(settings), side, pinned))
}

/// The checkpoint the hooks pinned for this ledger in their default state directory
/// (`spec/hooks.md` §6.2), against the store, as [`side_checkpoint`] checks the side file: of
/// this log's key, of a size the store holds, with the root its tree hashes give. A ledger
/// directory rolled back (side file included) behind what the fronts saw, or replaced by
/// another log's, is seen here (attack review 59: `verify` said OK of a ledger every front
/// refused). `Ok` saying so when nothing is pinned.
fn hooks_pin(
    ledger: &Path,
    vkey: &str,
    store: &SqliteStore,
    verifier: &LogVerifier,
    size: u64,
) -> Result<String, String> {
    let Some(state) = crate::open::default_state(ledger) else {
        return Ok("none for this ledger".into());
    };
    let where_ = state.pin_path().display().to_string();
    let pin = match state.load() {
        Ok(Some(p)) => p,
        Ok(None) => return Ok("none for this ledger".into()),
        Err(e) => return Err(e.to_string()),
    };
    if pin.vkey != vkey {
        return Err(format!(
            "{where_} pins the log key {}, not this ledger's: the ledger was replaced by another              log's",
            pin.vkey
        ));
    }
    signed_prefix(pin.checkpoint.as_bytes(), "the pin", store, verifier, size)
        .map(|ok| format!("{ok} ({where_})"))
}

/// The checkpoint the store keeps beside the database (the side file, `spec/storage.md` §6)
/// against the stored tree: signed by the log key, of a size the store holds, with the root
/// its tree hashes give. An entry cut out of the database, or the database rolled back, with
/// the side file left, is seen here (attack review 44: `verify` said OK where the ledger
/// refused to open); one that deleted the side file too only by a pin (`--state`).
fn side_checkpoint(
    store: &SqliteStore,
    verifier: &LogVerifier,
    size: u64,
) -> Result<String, String> {
    let Some(note) = store.durable_checkpoint().map_err(|e| e.to_string())? else {
        return Ok("none beside the store".into());
    };
    signed_prefix(&note, "the side file", store, verifier, size)
}

/// A signed checkpoint `note` found beside the audit (the side file, the hooks' pin) against
/// the store: it verifies under the log key, its size is one the store holds, and the store's
/// tree hashes give its root there. `what` names the note in the error when it does not verify.
fn signed_prefix(
    note: &[u8],
    what: &str,
    store: &SqliteStore,
    verifier: &LogVerifier,
    size: u64,
) -> Result<String, String> {
    let c = verifier
        .verify(note)
        .map_err(|e| format!("{what} holds no checkpoint of this log: {e}"))?;
    if c.size() > size {
        return Err(format!(
            "the log key signed a tree of {} entries, the store holds {size}: entries were cut \
             or the file rolled back",
            c.size()
        ));
    }
    match tree_root(c.size(), &StoreSource(store)) {
        Ok(root) if root == c.root() => Ok(format!("size {}, a prefix of the store", c.size())),
        Ok(root) => Err(format!(
            "the log key signed root {} at size {}, the stored tree gives {root}",
            c.root(),
            c.size()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Offers the verified checkpoint to the client state file; a rollback or split view is an
/// error (the split view's two notes are saved in the state file as evidence).
fn check_state(
    path: &Path,
    verifier: &LogVerifier,
    checkpoint: &VerifiedCheckpoint,
    store: &SqliteStore,
) -> Res<()> {
    let mut state = if path.exists() {
        CheckpointState::load(path)?
    } else {
        say!(
            "state: {} absent, trusting this checkpoint on first use",
            path.display()
        );
        CheckpointState::new()
    };
    let proof =
        match state.latest(verifier) {
            Some(old) if old.size() > 0 && old.size() < checkpoint.size() => Some(
                prove_consistency(old.size(), checkpoint.size(), &StoreSource(store))?,
            ),
            _ => None,
        };
    let outcome = state.update(verifier, checkpoint.clone(), proof.as_ref());
    match &outcome {
        Ok(Update::TrustedOnFirstUse) => say!("state: remembered size {}", checkpoint.size()),
        Ok(Update::Unchanged) => say!("state: same checkpoint as remembered"),
        Ok(Update::Advanced { old_size, new_size }) => {
            say!("state: consistent with remembered size {old_size}, now {new_size}")
        }
        Err(ForkError::SplitView { .. } | ForkError::KnownSplitView { .. }) => {
            state.save(path)?;
        }
        Err(_) => {}
    }
    outcome?;
    state.save(path)?;
    Ok(())
}
