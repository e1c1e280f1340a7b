//! `memlineage gate`: the gate's decision for a proposed call, with authority repair on
//! request (`spec/gate.md`, `spec/forensics.md` §7).

use crate::io::{read_capped, say};
use crate::open::{load_policy, open};
use crate::Res;
use memlineage::forensics::receipt::for_denial;
use memlineage::forensics::repair::{
    decide_with_repair_and_origin, Candidate, Found, RepairOutcome, TrustedValues, Unrepairable,
};
use memlineage::gate::{LineageDecision, ToolCall};
use memlineage::record::{EntryId, Kind};
use memlineage::store::SqliteStore;
use memlineage::Ledger;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit status of a denied call.
const DENIED: u8 = 2;

/// The gate's decision for a proposed call (JSON file: {"tool": T, "sensitive": B?,
/// "args": {P: {"value": V, "entries": [ID...]}}}); with --repair, authority repair
/// (spec/forensics.md §7). Exit 0: allowed or repaired; 2: denied (with a receipt).
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path.
    ledger: PathBuf,
    /// The call file.
    #[arg(long)]
    call: PathBuf,
    /// Gate policy (TOML); default: the bundled policy.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Try authority repair on a denial.
    #[arg(long)]
    repair: bool,
    /// Structured repair candidates, JSON lines {"param", "value", "entries"}.
    #[arg(long, requires = "repair")]
    candidates: Option<PathBuf>,
}

/// A proposed call as `memlineage gate` reads it:
/// `{"tool": T, "sensitive": B?, "args": {P: {"value": V, "entries": [ID…]}}}`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CallFile {
    tool: String,
    #[serde(default)]
    sensitive: bool,
    args: BTreeMap<String, ArgFile>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ArgFile {
    value: serde_json::Value,
    #[serde(default)]
    entries: Vec<String>,
}

/// A structured candidate line of `--candidates`:
/// `{"param": P, "value": V, "entries": [ID…]}` (the principal is read from the ledger).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CandidateLine {
    param: String,
    value: serde_json::Value,
    entries: Vec<String>,
}

/// Candidates for repair: structured lines from a file, and the parameter's own value found
/// in any live entry's text (rule 1 of `spec/forensics.md` §7.1).
struct LedgerValues {
    by_param: BTreeMap<String, Vec<Candidate>>,
}

impl TrustedValues for LedgerValues {
    fn candidates(&self, _tool: &str, param: &str) -> Vec<Candidate> {
        self.by_param.get(param).cloned().unwrap_or_default()
    }
}

fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Runs `memlineage gate`: the gate's decision for a proposed call, optionally with
/// authority repair. Exit 0 when allowed (as proposed or repaired), 2 when denied.
pub fn run(a: Args) -> Res<ExitCode> {
    let policy = load_policy(a.policy)?;
    let bytes = read_capped(&a.call, 1 << 20, "a call file")?;
    let c: CallFile = serde_json::from_slice(&bytes).map_err(|e| format!("call file: {e}"))?;
    let (l, _) = open(&a.ledger)?;
    let mut tc = ToolCall {
        tool: c.tool.clone(),
        sensitive: c.sensitive,
        args: Vec::new(),
    };
    let mut values = BTreeMap::new();
    // The values as proposed, for the origin check (`spec/gate.md` §3.1).
    let mut proposed = serde_json::Map::new();
    for (p, arg) in &c.args {
        let ids = arg
            .entries
            .iter()
            .map(|s| EntryId::from_hex(s))
            .collect::<Result<Vec<_>, _>>()?;
        tc.args.push((p.clone(), ids));
        values.insert(p.clone(), value_text(&arg.value));
        proposed.insert(p.clone(), arg.value.clone());
    }
    let outcome = if a.repair {
        let mut by_param = BTreeMap::new();
        if let Some(path) = &a.candidates {
            structured_candidates(&l, path, &mut by_param)?;
        }
        text_match_candidates(&l, &values, &mut by_param)?;
        let trusted = LedgerValues { by_param };
        decide_with_repair_and_origin(&policy, &l, &tc, &proposed, &values, &trusted)
    } else {
        match memlineage::gate::decide(&policy, &tc, &proposed, &l) {
            LineageDecision::Allow => RepairOutcome::Allowed,
            LineageDecision::Deny(denial) => RepairOutcome::Denied {
                denial,
                why: Unrepairable::NotAboutTrust,
            },
        }
    };
    print_outcome(&l, outcome, a.repair)
}

/// The text an entry carries, for value matching: data entries only (a flag's reason or a
/// lease's terms are not provenance for a value).
fn data_text(l: &Ledger<SqliteStore>, id: &EntryId) -> Res<Option<String>> {
    let e = l.get(id)?;
    if !matches!(
        e.entry().kind,
        Kind::Prompt | Kind::ToolResult | Kind::Summary | Kind::Fact
    ) {
        return Ok(None);
    }
    Ok(l.content(&e)?
        .map(|c| String::from_utf8_lossy(&c).into_owned()))
}

/// The structured candidates of the JSON-lines file `path`, each kept only when its value
/// occurs in every entry it cites.
fn structured_candidates(
    l: &Ledger<SqliteStore>,
    path: &Path,
    by_param: &mut BTreeMap<String, Vec<Candidate>>,
) -> Res<()> {
    let text = read_capped(path, 16 << 20, "a candidates file")?;
    let text = String::from_utf8(text).map_err(|_| "candidates file is not UTF-8")?;
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let cl: CandidateLine =
            serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        let entries = cl
            .entries
            .iter()
            .map(|s| EntryId::from_hex(s))
            .collect::<Result<Vec<_>, _>>()?;
        let value = value_text(&cl.value);
        // Never invented: the value must occur in every entry it cites; a candidate that does
        // not is dropped (it can only fail to repair, never allow).
        let mut holds = true;
        for id in &entries {
            holds &= data_text(l, id)?.is_some_and(|t| t.contains(value.as_str()));
        }
        if !holds {
            eprintln!(
                "warning: {}:{}: value {value:?} does not occur in every entry it cites; \
                 candidate ignored",
                path.display(),
                n + 1
            );
            continue;
        }
        by_param.entry(cl.param).or_default().push(Candidate {
            value,
            entries,
            found: Found::Structured,
        });
    }
    Ok(())
}

/// Rule 1 candidates: the call's current value inside any data entry's content.
fn text_match_candidates(
    l: &Ledger<SqliteStore>,
    values: &BTreeMap<String, String>,
    by_param: &mut BTreeMap<String, Vec<Candidate>>,
) -> Res<()> {
    for i in 0..l.len() {
        let id = l.get_by_index(i)?.id();
        let Some(text) = data_text(l, &id)? else {
            continue;
        };
        for (p, v) in values {
            if !v.is_empty() && text.contains(v.as_str()) {
                by_param.entry(p.clone()).or_default().push(Candidate {
                    value: v.clone(),
                    entries: vec![id],
                    found: Found::TextMatch,
                });
            }
        }
    }
    Ok(())
}

/// Prints the decision as one JSON object; exit 0 when allowed or repaired, 2 when denied.
fn print_outcome(l: &Ledger<SqliteStore>, outcome: RepairOutcome, repair: bool) -> Res<ExitCode> {
    match outcome {
        RepairOutcome::Allowed => {
            say!("{}", serde_json::json!({"decision": "allow"}));
            Ok(ExitCode::SUCCESS)
        }
        RepairOutcome::Repaired { values, swaps, .. } => {
            let swaps: Vec<_> = swaps
                .iter()
                .map(|s| {
                    serde_json::json!({
                        "param": s.param,
                        "from": {"value": s.from.0, "entries": s.from.1.iter().map(|e| e.to_string()).collect::<Vec<_>>()},
                        "to": {"value": s.to.0, "entries": s.to.1.iter().map(|e| e.to_string()).collect::<Vec<_>>()},
                    })
                })
                .collect();
            say!(
                "{}",
                serde_json::json!({"decision": "repaired", "values": values, "swaps": swaps})
            );
            Ok(ExitCode::SUCCESS)
        }
        RepairOutcome::Denied { denial, why } => {
            let receipt = for_denial(l, &denial).map(|r| r.sentence()).ok();
            say!(
                "{}",
                serde_json::json!({
                    "decision": "deny",
                    "reason": denial.to_string(),
                    "repair": if repair { Some(format!("{why:?}")) } else { None },
                    "receipt": receipt,
                })
            );
            Ok(ExitCode::from(DENIED))
        }
    }
}
