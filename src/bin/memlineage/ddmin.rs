//! `memlineage ddmin`: delta debugging over entry ids with an external predicate command
//! (`spec/counterfactual.md` §1.5).

use crate::flag::flag_many;
use crate::io::{capped_lines, say};
use crate::open::existing_store;
use crate::Res;
use memlineage::counterfactual::ddmin::{try_ddmin, Culprits, Outcome};
use memlineage::record::{EntryId, Kind, SignedEntry};
use memlineage::store::Store;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// Exit status of the predicate meaning "cannot tell" (as `git bisect run`'s skip).
pub const UNRESOLVED_STATUS: i32 = 125;
/// Exit status of `ddmin` when the predicate already fails with no candidates.
const FAILS_WITHOUT_CANDIDATES: u8 = 2;
/// Exit status of `ddmin` when the predicate does not fail on the full set.
const NEVER_FAILS: u8 = 3;
/// Longest line of an ids file, in bytes.
const MAX_ID_LINE: u64 = 4096;

/// Delta debugging (Zeller & Hildebrandt 2002): a 1-minimal set of entries for which the
/// predicate command still fails.
///
/// The command after -- runs once per subset tested, with the subset's entry ids on its
/// standard input (64 hex digits per line). Exit 0: passes; 125: unresolved; any other
/// status: still fails. Prints the culprits and the number of predicate calls; exits 2
/// when the predicate fails with no candidate, 3 when it does not fail on them all.
#[derive(clap::Args)]
pub struct Args {
    /// File of candidate entry ids, one per line (# comments allowed).
    #[arg(long, conflicts_with = "ledger")]
    ids: Option<PathBuf>,
    /// Take the candidates from this ledger: its live entries of the --kind kinds.
    #[arg(long)]
    ledger: Option<PathBuf>,
    /// Entry kind to take from the ledger (repeatable; default: summary and fact).
    #[arg(long = "kind", requires = "ledger")]
    kinds: Vec<String>,
    /// Flag each culprit into quarantine (reach all) with this reason, signed by the
    /// system principal `advisory` (needs --ledger).
    #[arg(long, requires = "ledger")]
    flag: Option<String>,
    /// The predicate command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// Runs ddmin with the command after `--` as the predicate and prints the culprits and the
/// call count.
pub fn run(candidates: Args) -> Res<ExitCode> {
    let command = &candidates.command;
    if candidates.flag.is_some() && candidates.ledger.is_none() {
        return Err("--flag appends flags to a ledger: it needs --ledger".into());
    }
    let ids = match (&candidates.ids, &candidates.ledger) {
        (Some(file), None) => ids_from_file(file)?,
        (None, Some(ledger)) => ids_from_ledger(ledger, &candidates.kinds)?,
        _ => return Err("give exactly one of --ids FILE and --ledger LEDGER".into()),
    };
    let (program, args) = command
        .split_first()
        .ok_or("no predicate command given (after --)")?;
    let r = try_ddmin(&ids, |subset| predicate(program, args, subset))?;
    match &r {
        Culprits::Minimal {
            culprits, calls, ..
        } => {
            say!(
                "culprits: {} of {} candidates (1-minimal)",
                culprits.len(),
                ids.len()
            );
            for id in culprits {
                say!("{id}");
            }
            say!("predicate calls: {calls}");
            if let (Some(reason), Some(ledger)) = (&candidates.flag, &candidates.ledger) {
                flag_many(ledger, culprits, reason, "advisory")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Culprits::FailsWithoutCandidates { calls } => {
            say!("the predicate fails with no candidate at all: no culprit among them");
            say!("predicate calls: {calls}");
            Ok(ExitCode::from(FAILS_WITHOUT_CANDIDATES))
        }
        Culprits::NeverFails { full, calls } => {
            say!(
                "the predicate does not fail on all {} candidates ({}): nothing to minimize",
                ids.len(),
                if *full == Outcome::Unresolved {
                    "unresolved"
                } else {
                    "passes"
                }
            );
            say!("predicate calls: {calls}");
            Ok(ExitCode::from(NEVER_FAILS))
        }
    }
}

/// Runs `program args` with the subset's ids on stdin, one per line: exit 0 passes, 125 is
/// unresolved, any other status fails; death by a signal is an error.
fn predicate(program: &str, args: &[String], subset: &[EntryId]) -> Res<Outcome> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run predicate {program}: {e}"))?;
    let mut input = String::with_capacity(subset.len() * 65);
    for id in subset {
        input.push_str(&id.to_string());
        input.push('\n');
    }
    if let Some(mut stdin) = child.stdin.take() {
        // A predicate that does not read its input may exit first: a closed pipe is fine.
        match stdin.write_all(input.as_bytes()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
            _ => {}
        }
    }
    let status = child.wait()?;
    match status.code() {
        Some(0) => Ok(Outcome::Pass),
        Some(UNRESOLVED_STATUS) => Ok(Outcome::Unresolved),
        Some(_) => Ok(Outcome::Fail),
        None => Err(format!("predicate {program} was killed by a signal ({status})").into()),
    }
}

fn ids_from_file(path: &Path) -> Res<Vec<EntryId>> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut ids = Vec::new();
    let mut seen = HashSet::new();
    for line in capped_lines(std::io::BufReader::new(file), MAX_ID_LINE) {
        let (n, line) = line?;
        let text = line.split('#').next().unwrap_or("").trim();
        if text.is_empty() {
            continue;
        }
        let id = EntryId::from_hex(text).map_err(|e| format!("{}:{n}: {e}", path.display()))?;
        if !seen.insert(id) {
            return Err(format!("{}:{n}: duplicate id {id}", path.display()).into());
        }
        ids.push(id);
    }
    Ok(ids)
}

/// The ledger's entries of the given kinds that no tombstone targets, in log order.
fn ids_from_ledger(ledger: &Path, kinds: &[String]) -> Res<Vec<EntryId>> {
    let kinds: Vec<Kind> = if kinds.is_empty() {
        vec![Kind::Summary, Kind::Fact]
    } else {
        kinds
            .iter()
            .map(|k| Kind::from_name(k).ok_or_else(|| format!("unknown kind {k}")))
            .collect::<Result<_, _>>()?
    };
    let store = existing_store(ledger)?;
    let mut ids = Vec::new();
    let mut dead = HashSet::new();
    for i in 0..store.tree_size()? {
        let bytes = store
            .entry_bytes(i)?
            .ok_or_else(|| format!("entry {i} missing"))?;
        let e = SignedEntry::decode(&bytes)?;
        if let (Kind::Tombstone, Some(t)) = (e.entry().kind, e.entry().target) {
            dead.insert(t);
        }
        if kinds.contains(&e.entry().kind) {
            ids.push(e.id());
        }
    }
    ids.retain(|id| !dead.contains(id));
    Ok(ids)
}
