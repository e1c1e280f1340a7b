//! `memlineage rework`: one worker redoing quarantined derived entries in dependency order
//! under expiring leases (`spec/forensics.md` §4).

use crate::append::now_ms;
use crate::io::say;
use crate::open::{open, principal_key};
use crate::Res;
use memlineage::forensics::rework::{rework, ReworkOptions};
use memlineage::record::{EntryId, Role};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

/// One rework worker: redo quarantined derived entries in dependency order under expiring
/// leases; the new content is the stdout of `sh -c EXEC` fed the old content.
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// The agent principal of this worker (created if absent).
    #[arg(long = "as")]
    by: String,
    /// Shell command producing the new content.
    #[arg(long)]
    exec: String,
    /// Lease length in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    ttl_ms: u64,
    /// Entries to rework (default: every quarantined entry but the flagged sources).
    #[arg(long = "target")]
    plan: Vec<String>,
}

/// Runs `memlineage rework`: one worker redoing the quarantined derived entries (or
/// `--target`s) under leases; the new content is the output of `sh -c EXEC` fed the old
/// content on stdin.
pub fn run(a: Args) -> Res<ExitCode> {
    let (mut l, _) = open(&a.ledger)?;
    let key = principal_key(
        &a.ledger,
        &mut l,
        &a.by,
        &[Role::Agent, Role::User, Role::System],
        Role::Agent,
    )?;
    let plan: Vec<EntryId> = if a.plan.is_empty() {
        // Every quarantined entry except the flagged sources themselves.
        let sources: std::collections::HashSet<EntryId> =
            l.quarantine().flags().map(|f| f.source).collect();
        l.quarantine()
            .entries()
            .into_iter()
            .filter(|id| !sources.contains(id))
            .collect()
    } else {
        a.plan
            .iter()
            .map(|s| EntryId::from_hex(s))
            .collect::<Result<_, _>>()?
    };
    let opts = ReworkOptions {
        ttl_ms: a.ttl_ms,
        poll_ms: 50,
        ..ReworkOptions::default()
    };
    let exec = a.exec.as_str();
    let report = rework(
        &mut l,
        &plan,
        &key,
        opts,
        now_ms,
        |ms| std::thread::sleep(std::time::Duration::from_millis(ms)),
        |_, _, inputs| run_exec(exec, &inputs_text(inputs)),
    )?;
    crate::open::sign_and_pin(&mut l, &a.ledger)?;
    say!(
        "{}",
        serde_json::json!({
            "worker": a.by,
            "planned": plan.len(),
            "reworked": report.reworked.iter().map(|(t, r)| serde_json::json!({"target": t.to_string(), "replacement": r.to_string()})).collect::<Vec<_>>(),
            "taken_over": report.taken_over.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            "refused": report.refused,
        })
    );
    Ok(ExitCode::SUCCESS)
}

/// The rework inputs as the command reads them: one JSON object per line,
/// `{"id": HEX, "content": TEXT | null}` (lossy UTF-8; null when redacted).
fn inputs_text(inputs: &[(EntryId, Option<Vec<u8>>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (id, content) in inputs {
        let line = serde_json::json!({
            "id": id.to_string(),
            "content": content.as_deref().map(String::from_utf8_lossy),
        });
        out.extend_from_slice(line.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// Runs `sh -c exec` with `input` on stdin; its stdout is the result.
fn run_exec(exec: &str, input: &[u8]) -> Result<Vec<u8>, String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(exec)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("sh -c {exec}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input is fine.
        let _ = stdin.write_all(input);
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("`{exec}` exited with {}", out.status));
    }
    Ok(out.stdout)
}
