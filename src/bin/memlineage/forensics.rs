//! Forensics subcommands (`spec/forensics.md`): flag, release, receipt, heal, rework.

use crate::{key_path, lock_key_file, now_ms, open, Res};
use memlineage::forensics::heal::{heal, HealOutcome};
use memlineage::forensics::receipt::{receipt, render_svg};
use memlineage::forensics::rework::{rework, ReworkOptions};
use memlineage::lineage::quarantine::Reach;
use memlineage::record::{EntryId, Kind, Role, WriterKey};
use memlineage::store::SqliteStore;
use memlineage::Ledger;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use crate::io::say;

/// The key of principal `name`: an existing principal of one of the `allowed` roles, or a new
/// one created with `new_role` (in the key file, then bound in the keyring). Holds the key-file
/// lock only while doing so.
fn principal_key(
    ledger: &Path,
    l: &mut Ledger<SqliteStore>,
    name: &str,
    allowed: &[Role],
    new_role: Role,
) -> Res<WriterKey> {
    let _lock = lock_key_file(ledger)?;
    let mut ks = memlineage::front::keystore::KeyStore::load(&key_path(ledger))?;
    let (key, have, created) = match ks.principal(name, None) {
        Ok(found) => found,
        Err(memlineage::front::keystore::KeyStoreError::UnknownPrincipal(_)) => {
            ks.principal(name, Some(new_role))?
        }
        Err(e) => return Err(e.into()),
    };
    if !allowed.contains(&have) {
        let names: Vec<&str> = allowed.iter().map(|r| r.name()).collect();
        return Err(format!(
            "principal {name} has role {}; this command needs one of {}",
            have.name(),
            names.join(", ")
        )
        .into());
    }
    if created {
        ks.save(&key_path(ledger))?;
    }
    l.refresh()?;
    if l.principal(&key.key_id()).is_none() {
        l.bind(key.key_id(), have, name)?;
    }
    Ok(key)
}

/// Roles that may flag, release and heal (`spec/forensics.md` §2.2, §5.2).
const ADVISORY_ROLES: [Role; 2] = [Role::User, Role::System];

/// `memlineage flag`: quarantine everything `source` reached.
pub fn flag(ledger: &Path, source: &str, reason: &str, reach: &str, by: &str) -> Res<ExitCode> {
    let reach =
        Reach::from_name(reach).ok_or_else(|| format!("reach is all or strong, not {reach}"))?;
    let source = EntryId::from_hex(source)?;
    let (mut l, _) = open(ledger)?;
    let key = principal_key(ledger, &mut l, by, &ADVISORY_ROLES, Role::System)?;
    let before = l.quarantine().len();
    let f = l.flag(source, reach, &key, reason)?;
    l.checkpoint()?;
    say!(
        "{}",
        serde_json::json!({
            "flag": f.id.to_string(),
            "source": source.to_string(),
            "reach": reach.name(),
            "quarantined": l.quarantine().len(),
            "newly_quarantined": l.quarantine().len().saturating_sub(before),
        })
    );
    Ok(ExitCode::SUCCESS)
}

/// Flags every source in `sources` (reach all) in one append batch: all are flagged or none.
/// Prints one JSON line per flag.
pub fn flag_many(ledger: &Path, sources: &[EntryId], reason: &str, by: &str) -> Res<ExitCode> {
    let (mut l, _) = open(ledger)?;
    let key = principal_key(ledger, &mut l, by, &ADVISORY_ROLES, Role::System)?;
    let mut batch = Vec::with_capacity(sources.len());
    for source in sources {
        let mut e =
            memlineage::record::ProvEntry::new(key.key_id(), Kind::Quarantine, reason.as_bytes())
                .with_time_ms(now_ms());
        e.target = Some(*source);
        batch.push((
            memlineage::record::SignedEntry::sign(e, &key)?,
            reason.as_bytes(),
        ));
    }
    let flags = l.append_signed(batch)?;
    l.checkpoint()?;
    for (f, source) in flags.iter().zip(sources) {
        say!(
            "{}",
            serde_json::json!({
                "flag": f.id.to_string(),
                "source": source.to_string(),
                "reach": "all",
                "quarantined": l.quarantine().len(),
            })
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `memlineage release`: lift the quarantine made by a flag entry.
pub fn release(ledger: &Path, flag: &str, reason: &str, by: &str) -> Res<ExitCode> {
    let flag = EntryId::from_hex(flag)?;
    let (mut l, _) = open(ledger)?;
    let key = principal_key(ledger, &mut l, by, &ADVISORY_ROLES, Role::System)?;
    let r = l.release(flag, &key, reason)?;
    l.checkpoint()?;
    say!(
        "{}",
        serde_json::json!({"release": r.id.to_string(), "flag": flag.to_string(),
                           "quarantined": l.quarantine().len()})
    );
    Ok(ExitCode::SUCCESS)
}

/// `memlineage receipt`: the sentence (and DOT / SVG) for one entry, or for every quarantined
/// entry with `--all`.
pub fn receipts(
    ledger: &Path,
    id: Option<&str>,
    dot: Option<PathBuf>,
    svg: Option<PathBuf>,
) -> Res<ExitCode> {
    let (l, _) = open(ledger)?;
    let ids = match id {
        Some(h) => vec![EntryId::from_hex(h)?],
        None => l.quarantine().entries(),
    };
    if ids.len() != 1 && (dot.is_some() || svg.is_some()) {
        return Err("--dot and --svg draw one receipt: name one entry".into());
    }
    for id in &ids {
        let r = receipt(&l, id)?;
        say!("{}: {}", id, r.sentence());
        if let Some(p) = &dot {
            std::fs::write(p, r.to_dot())?;
        }
        if let Some(p) = &svg {
            std::fs::write(p, render_svg(&r.to_dot())?)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `memlineage heal`: rebuild a quarantined fact from clean, agreeing, independent sources.
/// Exits 3 when the fact stays quarantined.
pub fn heal_cmd(
    ledger: &Path,
    target: &str,
    support: &[String],
    prefix: &str,
    by: &str,
) -> Res<ExitCode> {
    let target = EntryId::from_hex(target)?;
    let support = support
        .iter()
        .map(|s| EntryId::from_hex(s))
        .collect::<Result<Vec<_>, _>>()?;
    let (mut l, _) = open(ledger)?;
    let key = principal_key(ledger, &mut l, by, &ADVISORY_ROLES, Role::System)?;
    let claim = |c: &[u8]| {
        let text = std::str::from_utf8(c).ok()?;
        text.trim()
            .strip_prefix(prefix)
            .map(|s| s.trim().to_string())
    };
    let out = heal(&mut l, target, &support, claim, &key, now_ms())?;
    l.checkpoint()?;
    let tally = |t: &[memlineage::forensics::heal::Vote]| {
        t.iter()
            .map(|v| {
                serde_json::json!({"claim": v.claim, "votes": v.votes,
                "supporters": v.supporters.iter().map(|s| s.to_string()).collect::<Vec<_>>()})
            })
            .collect::<Vec<_>>()
    };
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
            Ok(ExitCode::from(3))
        }
    }
}

/// `memlineage rework`: one worker redoing the quarantined derived entries (or `plan`) under
/// leases; the new content is the output of `sh -c EXEC` fed the old content on stdin.
pub fn rework_cmd(
    ledger: &Path,
    by: &str,
    exec: &str,
    ttl_ms: u64,
    plan: &[String],
) -> Res<ExitCode> {
    let (mut l, _) = open(ledger)?;
    let key = principal_key(
        ledger,
        &mut l,
        by,
        &[Role::Agent, Role::User, Role::System],
        Role::Agent,
    )?;
    let plan: Vec<EntryId> = if plan.is_empty() {
        // Every quarantined entry except the flagged sources themselves.
        let sources: std::collections::HashSet<EntryId> =
            l.quarantine().flags().map(|f| f.source).collect();
        l.quarantine()
            .entries()
            .into_iter()
            .filter(|id| !sources.contains(id))
            .collect()
    } else {
        plan.iter()
            .map(|s| EntryId::from_hex(s))
            .collect::<Result<_, _>>()?
    };
    let opts = ReworkOptions {
        ttl_ms,
        poll_ms: 50,
        ..ReworkOptions::default()
    };
    let report = rework(
        &mut l,
        &plan,
        &key,
        opts,
        now_ms,
        |ms| std::thread::sleep(std::time::Duration::from_millis(ms)),
        |_, _, inputs| run_exec(exec, &inputs_text(inputs)),
    )?;
    l.checkpoint()?;
    say!(
        "{}",
        serde_json::json!({
            "worker": by,
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

/// A proposed call as `memlineage gate` reads it:
/// `{"tool": T, "sensitive": B?, "args": {P: {"value": V, "entries": [ID…]}}}`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CallFile {
    tool: String,
    #[serde(default)]
    sensitive: bool,
    args: std::collections::BTreeMap<String, ArgFile>,
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
    by_param: std::collections::BTreeMap<String, Vec<memlineage::forensics::repair::Candidate>>,
}

impl memlineage::forensics::repair::TrustedValues for LedgerValues {
    fn candidates(
        &self,
        _tool: &str,
        param: &str,
    ) -> Vec<memlineage::forensics::repair::Candidate> {
        self.by_param.get(param).cloned().unwrap_or_default()
    }
}

fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `memlineage gate`: the gate's decision for a proposed call, optionally with authority
/// repair. Exit 0 when allowed (as proposed or repaired), 2 when denied.
pub fn gate_cmd(
    ledger: &Path,
    call: &Path,
    policy: Option<PathBuf>,
    repair: bool,
    candidates: Option<PathBuf>,
) -> Res<ExitCode> {
    use memlineage::forensics::repair::{decide_with_repair, Candidate, Found, RepairOutcome};
    let policy = crate::load_policy(policy)?;
    let bytes = crate::io::read_capped(call, 1 << 20, "a call file")?;
    let c: CallFile = serde_json::from_slice(&bytes).map_err(|e| format!("call file: {e}"))?;
    let (l, _) = open(ledger)?;
    let mut tc = memlineage::gate::ToolCall {
        tool: c.tool.clone(),
        sensitive: c.sensitive,
        args: Vec::new(),
    };
    let mut values = std::collections::BTreeMap::new();
    for (p, a) in &c.args {
        let ids = a
            .entries
            .iter()
            .map(|s| EntryId::from_hex(s))
            .collect::<Result<Vec<_>, _>>()?;
        tc.args.push((p.clone(), ids));
        values.insert(p.clone(), value_text(&a.value));
    }
    // The text an entry carries, for value matching: data entries only (a flag's reason or a
    // lease's terms are not provenance for a value).
    let data_text = |id: &EntryId| -> Res<Option<String>> {
        let e = l.get(id)?;
        if !matches!(
            e.entry().kind,
            Kind::Prompt | Kind::ToolResult | Kind::Summary | Kind::Fact
        ) {
            return Ok(None);
        }
        Ok(l.content(&e)?
            .map(|c| String::from_utf8_lossy(&c).into_owned()))
    };
    let mut by_param: std::collections::BTreeMap<String, Vec<Candidate>> = Default::default();
    if repair {
        if let Some(path) = &candidates {
            let text = crate::io::read_capped(path, 16 << 20, "a candidates file")?;
            let text = String::from_utf8(text).map_err(|_| "candidates file is not UTF-8")?;
            for (n, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let cl: CandidateLine = serde_json::from_str(line)
                    .map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
                let entries = cl
                    .entries
                    .iter()
                    .map(|s| EntryId::from_hex(s))
                    .collect::<Result<Vec<_>, _>>()?;
                let value = value_text(&cl.value);
                // Never invented: the value must occur in every entry it cites; a candidate
                // that does not is dropped (it can only fail to repair, never allow).
                let mut holds = true;
                for id in &entries {
                    holds &= data_text(id)?.is_some_and(|t| t.contains(value.as_str()));
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
        }
        // Rule 1 candidates: the current value inside any data entry's content.
        for i in 0..l.len() {
            let id = l.get_by_index(i)?.id();
            let Some(text) = data_text(&id)? else {
                continue;
            };
            for (p, v) in &values {
                if !v.is_empty() && text.contains(v.as_str()) {
                    by_param.entry(p.clone()).or_default().push(Candidate {
                        value: v.clone(),
                        entries: vec![id],
                        found: Found::TextMatch,
                    });
                }
            }
        }
    }
    let outcome = if repair {
        decide_with_repair(&policy, &l, &tc, &values, &LedgerValues { by_param })
    } else {
        match l.gate(&policy, &tc) {
            memlineage::gate::Decision::Allow => RepairOutcome::Allowed,
            memlineage::gate::Decision::Deny(denial) => RepairOutcome::Denied {
                denial,
                why: memlineage::forensics::repair::Unrepairable::NotAboutTrust,
            },
        }
    };
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
            let receipt = memlineage::forensics::receipt::for_denial(&l, &denial)
                .map(|r| r.sentence())
                .ok();
            say!(
                "{}",
                serde_json::json!({
                    "decision": "deny",
                    "reason": denial.to_string(),
                    "repair": if repair { Some(format!("{why:?}")) } else { None },
                    "receipt": receipt,
                })
            );
            Ok(ExitCode::from(2))
        }
    }
}
