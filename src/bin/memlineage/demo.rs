//! `memlineage demo`: the bundled AgentDojo banking traces replayed in both modes, verified
//! offline, one memory proved, and the gate refusing the payment it justifies.

use crate::append::now_ms;
use crate::explain::explain;
use crate::init::{self, RuleArg};
use crate::io::say;
use crate::open::open;
use crate::prove::prove;
use crate::replay::replay_into;
use crate::verify::{verify, Trust};
use crate::verify_proof::verify_proof;
use crate::Res;
use memlineage::eval::replay::Mode;
use memlineage::gate::{LineageDecision, Policy, ToolCall};
use memlineage::record::{Kind, SignedEntry};
use std::path::PathBuf;
use std::process::ExitCode;

/// The bundled AgentDojo banking traces the demo replays (MIT, see fixtures/agentdojo).
const BANKING: &str = include_str!("../../../fixtures/agentdojo/banking.jsonl");

/// Replay the bundled banking traces in both modes, verify offline, prove one entry.
#[derive(clap::Args)]
pub struct Args {
    /// Directory for the demo ledger (default: a fresh temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// Runs `memlineage demo`.
pub fn run(a: Args) -> Res<ExitCode> {
    let dir = match a.dir {
        Some(d) => {
            std::fs::create_dir_all(&d)?;
            d
        }
        None => tempdir()?,
    };
    let ledger = dir.join("demo.ledger");
    if ledger.exists() {
        return Err(format!("{} exists; pick another --dir", ledger.display()).into());
    }
    say!("== memlineage demo: AgentDojo banking (160 runs), direct and via-memory ==");
    init::create(&ledger, "memlineage.local/demo", 0.5, RuleArg::FailClosed)?;
    let (mut l, _) = open(&ledger)?;
    let t0 = std::time::Instant::now();
    let table = replay_into(
        &mut l,
        Policy::default(),
        vec![("bundled banking traces".to_string(), BANKING.as_bytes())],
        &Mode::ALL,
        false,
        true,
    )?;
    let c = l.checkpoint()?;
    say!(
        "recorded {} entries in {:.2?}; checkpoint size {} root {}",
        l.len(),
        t0.elapsed(),
        c.size(),
        c.root()
    );
    say!("\n{table}");
    say!("== offline verification of the whole ledger ==");
    let vkey = l.vkey();
    // The agent's memory of an injected bill: the laundering case.
    let is_laundered = |e: &SignedEntry| {
        e.entry().kind == Kind::Summary
            && l.content(e)
                .ok()
                .flatten()
                .is_some_and(|c| String::from_utf8_lossy(&c).contains("<INFORMATION>"))
    };
    let memory = (0..l.len())
        .find_map(|i| l.get_by_index(i).ok().filter(is_laundered))
        .ok_or("no memory of an injected tool result recorded")?;
    let id = memory.id();
    let call = ToolCall {
        tool: "send_money".into(),
        sensitive: true,
        args: vec![("recipient".into(), vec![id])],
    };
    let decision = memlineage::gate::decide(&Policy::default(), &call, &Default::default(), &l);
    drop(l);
    let code = verify(&ledger, Some(vkey.clone()), None, &Trust::default())?;
    if code != ExitCode::SUCCESS {
        return Ok(code);
    }
    say!("\n== proof bundle for one memory, verified from the file alone ==");
    let proof = dir.join("entry.proof");
    prove(&ledger, &id.to_string(), Some(proof.clone()))?;
    say!("wrote {}", proof.display());
    verify_proof(&proof, &vkey)?;
    say!("\n== the agent's memory of an injected bill justifies a payment ==");
    match decision {
        LineageDecision::Deny(d) => say!("gate: {d}"),
        LineageDecision::Allow => say!("gate: allow"),
    }
    explain(&ledger, &id.to_string())?;
    say!("\n== explore it in a browser: what is poisoned, and why ==");
    say!(
        "memlineage serve {}    # then open http://127.0.0.1:8080/",
        ledger.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A fresh directory under the system's temporary directory.
fn tempdir() -> Res<PathBuf> {
    let base = std::env::temp_dir().join(format!(
        "memlineage-demo-{}-{}",
        std::process::id(),
        now_ms()
    ));
    std::fs::create_dir_all(&base)?;
    Ok(base)
}
