//! `memlineage replay`: AgentDojo trace files through the ledger and the gate, with attack
//! success and utility per configuration (`spec/eval.md`).

use crate::init::{self, RuleArg};
use crate::open::{load_policy, open};
use crate::Res;
use clap::ValueEnum;
use memlineage::eval::replay::{render_json, render_table, Mode, Replayer};
use memlineage::front::keystore::KeyStore;
use memlineage::gate::Policy;
use memlineage::lineage::LabelPolicy;
use memlineage::record::WriterKey;
use memlineage::store::{MemoryStore, Store};
use memlineage::Ledger;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Replay AgentDojo trace files and print attack success and utility per configuration.
#[derive(clap::Args)]
pub struct Args {
    /// JSONL trace files (AgentDojo schema).
    files: Vec<PathBuf>,
    /// Record into this SQLite ledger (created if absent); default: in memory.
    #[arg(long)]
    ledger: Option<PathBuf>,
    /// Which modes to run.
    #[arg(long, value_enum, default_value_t = ModeArg::Both)]
    mode: ModeArg,
    /// Gate policy (TOML); default: the bundled policy.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// After each attacked run, flag its injected tool outputs and report what the
    /// quarantine reached, with one receipt per suite and mode (spec/forensics.md §6).
    #[arg(long)]
    flag_injections: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Direct,
    ViaMemory,
    Both,
}

impl ModeArg {
    fn modes(self) -> Vec<Mode> {
        match self {
            ModeArg::Direct => vec![Mode::Direct],
            ModeArg::ViaMemory => vec![Mode::ViaMemory],
            ModeArg::Both => Mode::ALL.to_vec(),
        }
    }
}

/// Runs `memlineage replay`.
pub fn run(a: Args) -> Res<ExitCode> {
    if a.files.is_empty() {
        return Err("replay needs at least one trace file".into());
    }
    let policy = load_policy(a.policy)?;
    let modes = a.mode.modes();
    let (json, flag) = (a.json, a.flag_injections);
    let readers = a
        .files
        .iter()
        .map(|f| {
            let file = std::fs::File::open(f).map_err(|e| format!("{}: {e}", f.display()))?;
            Ok((f.display().to_string(), std::io::BufReader::new(file)))
        })
        .collect::<Res<Vec<_>>>()?;
    let out = match a.ledger.as_deref() {
        Some(path) => {
            // Replay binds the trace's principals to test keys whose seeds are public
            // (WriterKey::for_label): it must never touch a ledger holding real data.
            if path.exists() {
                return Err(format!(
                    "{} exists: replay records only into a new ledger (its test keys have public seeds)",
                    path.display()
                )
                .into());
            }
            init::create(path, "memlineage.local/replay", 0.5, RuleArg::FailClosed)?;
            let (mut l, _) = open(path)?;
            let out = replay_into(&mut l, policy, readers, &modes, json, flag)?;
            l.checkpoint()?;
            out
        }
        None => {
            let ks = KeyStore::generate("memlineage.local/replay");
            let mut l = Ledger::create(
                MemoryStore::default(),
                ks.log_signer()?,
                LabelPolicy::default(),
            )?;
            replay_into(&mut l, policy, readers, &modes, json, flag)?
        }
    };
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(ExitCode::SUCCESS)
}

/// Replays every trace of `readers` (each named for errors) in `modes` into `l`; returns the
/// report (a table, or one JSON object with `json`), with the flagged injections' receipts
/// when `flag`. A trace that holds no run is an error: an empty table is not a result.
pub fn replay_into<S: Store>(
    l: &mut Ledger<S>,
    policy: Policy,
    readers: Vec<(String, impl BufRead)>,
    modes: &[Mode],
    json: bool,
    flag: bool,
) -> Res<String> {
    let labels = l.label_policy();
    let mut r = Replayer::new(l, policy);
    if flag {
        r.flag_injections(WriterKey::generate())?;
    }
    for (name, reader) in readers {
        if r.replay_reader(reader, modes)? == 0 {
            return Err(format!("{name}: no trace run in this file; nothing to replay").into());
        }
    }
    Ok(if json {
        format!("{}\n", render_json(&r.figures))
    } else {
        let mut s = format!(
            "labels: tau {}, weak-parent rule {}\n",
            labels.tau,
            labels.weak_rule.name()
        );
        s.push_str(&render_table(&r.figures));
        for ex in &r.examples {
            s.push_str(&format!(
                "example {} {} {} call: {}\n",
                ex.suite,
                ex.mode.name(),
                if ex.attack { "attack" } else { "legitimate" },
                ex.text
            ));
        }
        for (suite, modes) in &r.flags {
            for (mode, t) in modes {
                s.push_str(&format!(
                    "flagged {suite} {}: {} injected outputs; {}/{} attack justifications \
                     quarantined, {} with a receipt ({} other justifications not derived from \
                     an injection)\n",
                    mode.name(),
                    t.flagged,
                    t.quarantined,
                    t.attack_justifications,
                    t.receipts,
                    t.other_justifications
                ));
            }
        }
        for (suite, mode, sentence) in &r.receipts {
            s.push_str(&format!("receipt {suite} {}: {sentence}\n", mode.name()));
        }
        s
    })
}
