//! `memlineage`: record agent memory into a signed ledger, verify it offline, gate tool calls.
//!
//! A thin layer over the library: parsing arguments, reading files, printing. Errors go to
//! stderr with a non-zero exit status.

use clap::{Parser, Subcommand, ValueEnum};
use memlineage::audit::{audit_with_progress, reach_quarantine, AuditReport};
use memlineage::eval::replay::{render_json, render_table, Mode, Replayer};
use memlineage::front::keystore::KeyStore;
use memlineage::gate::Policy;
use memlineage::ledger::StoreSource;
use memlineage::ledger::{stored_policy, stored_vkey};
use memlineage::lineage::{LabelPolicy, WeakRule};
use memlineage::log::{
    prove_consistency, verify_cosigned, CheckpointState, ForkError, LogVerifier, ProofBundle,
    Update, WitnessPolicy, WitnessVerifier,
};
use memlineage::record::{
    Attribution, EntryId, Kind, Parent, ProvEntry, Role, SignedEntry, Weight,
};
use memlineage::store::{MemoryStore, SqliteStore, Store};
use memlineage::Ledger;
use std::error::Error;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod amputate;
mod ddmin;
mod eval;
mod forensics;
mod front;
mod hook_install;
mod hookd;
mod io;
mod migrate;
mod progress;
#[cfg(feature = "explorer")]
mod serve;
mod tiles;

use io::{capped_lines, read_capped, say, write_out};

type Res<T> = Result<T, Box<dyn Error>>;

/// Largest JSON line `append` reads (an entry's content travels inside it), in bytes.
const MAX_APPEND_LINE: u64 = 16 << 20;
/// Largest policy file, in bytes.
const MAX_POLICY_BYTES: u64 = 1 << 20;
/// Largest file `inspect` reads: a hex-encoded maximal entry with some slack, in bytes.
const MAX_INSPECT_BYTES: u64 = 4 * memlineage::record::MAX_ENTRY_BYTES as u64;

/// The bundled AgentDojo banking traces the demo replays (MIT, see fixtures/agentdojo).
const BANKING: &str = include_str!("../../../fixtures/agentdojo/banking.jsonl");

#[derive(Parser)]
#[command(
    name = "memlineage",
    version,
    about = "Chain of custody for LLM agent memory"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Create a ledger (SQLite file) and its key file LEDGER.key (mode 0600).
    Init {
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
    },
    /// Append entries given as JSON lines (one batch: all or nothing).
    ///
    /// Kinds: prompt, tool_result, summary (or observation), fact, tool_call, tombstone, and the
    /// forensic kinds quarantine, quarantine_strong, release, lease, replacement
    /// (spec/forensics.md; the flag, release, heal and rework commands write them for you).
    /// Roles: user, system, agent, tool, external (tool and external write EXTERNAL entries).
    /// Each line: {"writer": NAME, "role": ROLE?, "kind": KIND, "content": TEXT,
    /// "parents": [{"id": HEX, "weight": 0.0..1.0}]?, "attribution": "coarse"?, "time_ms": N?,
    /// "target": HEX?}. A tombstone is {"kind": "tombstone", "target": ID, "content": REASON};
    /// the forensic kinds carry a "target" too.
    /// A writer not yet in the key file is created and bound with its "role".
    Append {
        /// Ledger path.
        ledger: PathBuf,
        /// JSON-lines file, or - for standard input.
        #[arg(long, default_value = "-")]
        input: String,
    },
    /// Replay AgentDojo trace files and print attack success and utility per configuration.
    Replay {
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
    },
    /// Run the lineage-stress harness: attack, benign, τ × K and laundering tables.
    Eval {
        /// Scenario file (TOML, spec/eval.md); default: the bundled spec/eval/scenarios.toml.
        #[arg(long)]
        scenarios: Option<PathBuf>,
        /// Print JSON instead of Markdown.
        #[arg(long)]
        json: bool,
        /// Also write DIR/results.md and DIR/results.json.
        #[arg(long, value_name = "DIR")]
        write: Option<PathBuf>,
    },
    /// Verify a whole ledger offline: signatures, encodings, keyring, labels, tree root.
    Verify {
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
        /// Recompute labels under this τ instead of the ledger's stored setting (which is not
        /// signed: an auditor should state the policy it expects).
        #[arg(long)]
        tau: Option<f64>,
        /// Recompute labels under this weak-parent rule instead of the stored setting.
        #[arg(long, value_enum)]
        rule: Option<RuleArg>,
    },
    /// Write the entries in log order as a CBOR sequence (RFC 8742).
    Export {
        /// Ledger path.
        ledger: PathBuf,
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Write the latest stored checkpoint, its C2SP tlog-tiles hash tiles and entry bundles
    /// as static files under DIR (servable by any web server).
    ExportTiles {
        /// Ledger path (with --postgres: the PostgreSQL ledger name).
        ledger: String,
        /// Output directory.
        dir: PathBuf,
        /// Read the ledger from PostgreSQL at this URL.
        #[arg(long)]
        postgres: Option<String>,
    },
    /// Copy a SQLite ledger into a PostgreSQL ledger (same bytes, labels, roots; resumable).
    Migrate {
        /// SQLite ledger path.
        ledger: PathBuf,
        /// PostgreSQL URL.
        #[arg(long)]
        postgres: String,
        /// PostgreSQL ledger (schema) name.
        #[arg(long)]
        to: String,
        /// Entries per transaction.
        #[arg(long, default_value_t = 1000)]
        batch: usize,
    },
    /// Check inclusion proofs from a static tiles directory alone (every entry, or --index).
    VerifyTiles {
        /// Directory written by export-tiles (or any tlog-tiles mirror).
        dir: PathBuf,
        /// The log's verifier key (C2SP vkey).
        #[arg(long)]
        log_key: String,
        /// Check only this leaf index.
        #[arg(long)]
        index: Option<u64>,
    },
    /// Print the latest signed checkpoint (signing a fresh one if the tree grew).
    Checkpoint {
        /// Ledger path.
        ledger: PathBuf,
        /// Print the log's verifier key (C2SP signed-note form) instead.
        #[arg(long)]
        vkey: bool,
    },
    /// Write an offline proof bundle (C2SP tlog-proof) for one entry.
    Prove {
        /// Ledger path.
        ledger: PathBuf,
        /// Entry id (64 hex digits).
        id: String,
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Verify a proof bundle with nothing but the file and the log key.
    VerifyProof {
        /// Proof bundle file.
        file: PathBuf,
        /// The log's verifier key (C2SP vkey).
        #[arg(long)]
        log_key: String,
    },
    /// Decode and check one entry's bytes (COSE_Sign1, binary or hex).
    Inspect {
        /// Entry file.
        file: PathBuf,
    },
    /// Print an entry's label and the lineage path that gives it.
    Explain {
        /// Ledger path.
        ledger: PathBuf,
        /// Entry id (64 hex digits).
        id: String,
    },
    /// Flag a bad source: quarantine everything that descends from it (spec/forensics.md §2).
    Flag {
        /// Ledger path.
        ledger: PathBuf,
        /// The bad source's entry id (64 hex digits).
        source: String,
        /// Why (the advisory), recorded as the flag entry's content.
        #[arg(long)]
        reason: String,
        /// all: over every recorded edge; strong: over edges with w > τ only.
        #[arg(long, default_value = "all")]
        reach: String,
        /// The system principal signing the flag (created if absent).
        #[arg(long = "as", default_value = "advisory")]
        by: String,
    },
    /// Lift the quarantine made by a flag entry, with a reason.
    Release {
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
    },
    /// Print the receipt (shortest lineage path, as a sentence) of an entry, or of every
    /// quarantined entry when no id is given. Graphviz: --dot FILE, --svg FILE (needs `dot`:
    /// apt-get install graphviz).
    Receipt {
        /// Ledger path.
        ledger: PathBuf,
        /// Entry id; default: every quarantined entry.
        id: Option<String>,
        /// Write the receipt as Graphviz DOT.
        #[arg(long)]
        dot: Option<PathBuf>,
        /// Write the receipt as SVG (runs `dot -Tsvg`).
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// Rebuild a quarantined fact from clean sources that agree (at least two independent
    /// votes, strictly more than any other claim). Exits 3 when it stays quarantined.
    Heal {
        /// Ledger path.
        ledger: PathBuf,
        /// The quarantined fact's id.
        target: String,
        /// Candidate supporting entries (ids); only clean ones vote.
        #[arg(long = "support", required = true, num_args = 1..)]
        support: Vec<String>,
        /// The claim is the content after this prefix (entries without it do not vote).
        #[arg(long, default_value = "")]
        claim_prefix: String,
        /// The system principal signing the replacement (created if absent).
        #[arg(long = "as", default_value = "healer")]
        by: String,
    },
    /// One rework worker: redo quarantined derived entries in dependency order under expiring
    /// leases; the new content is the stdout of `sh -c EXEC` fed the old content.
    Rework {
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
    },
    /// The gate's decision for a proposed call (JSON file: {"tool": T, "sensitive": B?,
    /// "args": {P: {"value": V, "entries": [ID...]}}}); with --repair, authority repair
    /// (spec/forensics.md §7). Exit 0: allowed or repaired; 2: denied (with a receipt).
    Gate {
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
    },
    /// Delta debugging (Zeller & Hildebrandt 2002): a 1-minimal set of entries for which the
    /// predicate command still fails.
    ///
    /// The command after -- runs once per subset tested, with the subset's entry ids on its
    /// standard input (64 hex digits per line). Exit 0: passes; 125: unresolved; any other
    /// status: still fails. Prints the culprits and the number of predicate calls; exits 2
    /// when the predicate fails with no candidate, 3 when it does not fail on them all.
    Ddmin {
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
    },
    /// Counterfactual amputation with the scripted agent: Δaction, noise floor, DiD, sign test.
    ///
    /// Exits 0 only when the carrier is load-bearing: 2 when the mean Δaction is at or below
    /// the noise floor (not distinguishable from noise), 3 when it is above but the sign test
    /// is not significant at --alpha.
    Amputate {
        /// Scenario file (JSON, spec/counterfactual.md §3.1).
        scenario: PathBuf,
        #[command(flatten)]
        options: amputate::Options,
    },
    /// Replay the bundled banking traces in both modes, verify offline, prove one entry.
    Demo {
        /// Directory for the demo ledger (default: a fresh temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Serve the ledger as an MCP server on standard input/output (spec/mcp.md). Advisory:
    /// enforcement comes from the hooks.
    Mcp {
        /// Ledger path.
        ledger: PathBuf,
        /// Gate policy (TOML); default: the bundled policy.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// The principal (role agent) that signs ledger_append entries.
        #[arg(long, default_value = "agent")]
        writer: String,
        /// The agent's session id, shared with the hooks (e.g. Claude Code's session_id):
        /// gate checks use the reads they recorded. Default: every entry of the ledger.
        #[arg(long)]
        session: Option<String>,
    },
    /// Command hooks for Claude Code and Codex (one JSON event on standard input; exit 2
    /// blocks) and their set-up: install, doctor, prune (spec/hooks.md).
    Hook {
        #[command(subcommand)]
        cmd: front::HookCmd,
    },
    /// A read-only web explorer of the ledger: overview, entries, quarantine reach with
    /// receipts, gate decisions (spec/explorer.md). Loopback only unless --token.
    #[cfg(feature = "explorer")]
    Serve(serve::Args),
}

#[derive(Clone, Copy, ValueEnum)]
enum RuleArg {
    FailOpen,
    FailClosed,
}

impl RuleArg {
    fn weak_rule(self) -> WeakRule {
        match self {
            RuleArg::FailOpen => WeakRule::FailOpen,
            RuleArg::FailClosed => WeakRule::FailClosed,
        }
    }
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.cmd) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cmd: Cmd) -> Res<ExitCode> {
    match cmd {
        Cmd::Init {
            ledger,
            origin,
            tau,
            rule,
        } => init(&ledger, &origin, tau, rule),
        Cmd::Append { ledger, input } => append(&ledger, &input),
        Cmd::Replay {
            files,
            ledger,
            mode,
            policy,
            json,
            flag_injections,
        } => replay(
            &files,
            ledger.as_deref(),
            mode,
            policy,
            json,
            flag_injections,
        ),
        Cmd::Eval {
            scenarios,
            json,
            write,
        } => eval::eval(scenarios.as_deref(), json, write),
        Cmd::Verify {
            ledger,
            log_key,
            checkpoint,
            state,
            witnesses,
            quorum,
            tau,
            rule,
        } => verify(
            &ledger,
            log_key,
            checkpoint,
            &Trust {
                state,
                witnesses,
                quorum,
                tau,
                rule,
            },
        ),
        Cmd::Export { ledger, output } => export(&ledger, output),
        Cmd::ExportTiles {
            ledger,
            dir,
            postgres,
        } => tiles::export(&ledger, &dir, postgres.as_deref()),
        Cmd::Migrate {
            ledger,
            postgres,
            to,
            batch,
        } => migrate::run(&ledger, &postgres, &to, batch),
        Cmd::VerifyTiles {
            dir,
            log_key,
            index,
        } => tiles::verify(&dir, &log_key, index),
        Cmd::Checkpoint { ledger, vkey } => checkpoint(&ledger, vkey),
        Cmd::Prove { ledger, id, output } => prove(&ledger, &id, output),
        Cmd::VerifyProof { file, log_key } => verify_proof(&file, &log_key),
        Cmd::Inspect { file } => inspect(&file),
        Cmd::Explain { ledger, id } => explain(&ledger, &id),
        Cmd::Demo { dir } => demo(dir),
        Cmd::Flag {
            ledger,
            source,
            reason,
            reach,
            by,
        } => forensics::flag(&ledger, &source, &reason, &reach, &by),
        Cmd::Release {
            ledger,
            flag,
            reason,
            by,
        } => forensics::release(&ledger, &flag, &reason, &by),
        Cmd::Receipt {
            ledger,
            id,
            dot,
            svg,
        } => forensics::receipts(&ledger, id.as_deref(), dot, svg),
        Cmd::Heal {
            ledger,
            target,
            support,
            claim_prefix,
            by,
        } => forensics::heal_cmd(&ledger, &target, &support, &claim_prefix, &by),
        Cmd::Rework {
            ledger,
            by,
            exec,
            ttl_ms,
            plan,
        } => forensics::rework_cmd(&ledger, &by, &exec, ttl_ms, &plan),
        Cmd::Ddmin {
            ids,
            ledger,
            kinds,
            flag,
            command,
        } => ddmin::run(
            &ddmin::Candidates {
                ids,
                ledger,
                kinds,
                flag,
            },
            &command,
        ),
        Cmd::Amputate { scenario, options } => amputate::run(&scenario, &options),
        Cmd::Gate {
            ledger,
            call,
            policy,
            repair,
            candidates,
        } => forensics::gate_cmd(&ledger, &call, policy, repair, candidates),
        Cmd::Mcp {
            ledger,
            policy,
            writer,
            session,
        } => front::mcp(&ledger, policy, &writer, session.as_deref()),
        Cmd::Hook { cmd } => front::hook_cmd(cmd),
        #[cfg(feature = "explorer")]
        Cmd::Serve(args) => serve::run(args),
    }
}

fn key_path(ledger: &Path) -> PathBuf {
    let mut p = ledger.as_os_str().to_owned();
    p.push(".key");
    PathBuf::from(p)
}

fn init(ledger: &Path, origin: &str, tau: f64, rule: RuleArg) -> Res<ExitCode> {
    let keys = key_path(ledger);
    if ledger.exists() || keys.exists() {
        return Err(format!("{} or its key file already exists", ledger.display()).into());
    }
    let policy = LabelPolicy {
        tau: Weight::from_f64(tau)?,
        weak_rule: rule.weak_rule(),
    };
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

/// What to run when a ledger has no signed checkpoint to verify against.
fn no_checkpoint(ledger: &Path) -> String {
    format!(
        "the ledger has no signed checkpoint yet: run `memlineage checkpoint {}` (with its key \
         file) to sign one, then verify again",
        ledger.display()
    )
}

/// Opens an existing ledger file for reading; never creates one.
fn existing_store(ledger: &Path) -> Res<SqliteStore> {
    check_ledger_file(ledger)?;
    Ok(SqliteStore::open(ledger)?)
}

/// A ledger file must exist and not be empty: SQLite would make a new database of an empty
/// file, and only `init` creates ledgers.
fn check_ledger_file(ledger: &Path) -> Res<()> {
    if !ledger.is_file() {
        return Err(format!("no ledger at {}", ledger.display()).into());
    }
    if std::fs::metadata(ledger)
        .map_err(|e| format!("{}: {e}", ledger.display()))?
        .len()
        == 0
    {
        return Err(format!(
            "{} is empty, not a ledger (only `memlineage init` creates one); left unchanged",
            ledger.display()
        )
        .into());
    }
    Ok(())
}

fn open(ledger: &Path) -> Res<(Ledger<SqliteStore>, KeyStore)> {
    check_ledger_file(ledger)?;
    let keys = key_path(ledger);
    hookd::warn_if_readable(&keys);
    let ks = KeyStore::load(&keys)?;
    let l = Ledger::open(existing_store(ledger)?, ks.log_signer()?)?;
    Ok((l, ks))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendLine {
    writer: String,
    role: Option<String>,
    kind: String,
    content: String,
    #[serde(default)]
    parents: Vec<ParentLine>,
    attribution: Option<String>,
    time_ms: Option<u64>,
    /// For a tombstone: the id of the entry it deletes.
    target: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ParentLine {
    id: String,
    weight: f64,
}

fn append(ledger: &Path, input: &str) -> Res<ExitCode> {
    if !ledger.is_file() {
        return Err(format!("no ledger at {}", ledger.display()).into());
    }
    // One appender at a time edits the key file: read, add writers, save, then commit.
    let _lock = lock_key_file(ledger)?;
    let (mut l, mut ks) = open(ledger)?;
    let reader: Box<dyn BufRead> = if input == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(input).map_err(|e| format!("--input {input}: {e}"))?;
        Box::new(std::io::BufReader::new(f))
    };
    let mut lines = Vec::new();
    for line in capped_lines(reader, MAX_APPEND_LINE) {
        let (n, line) = line?;
        let parsed: AppendLine =
            serde_json::from_str(&line).map_err(|e| format!("line {n}: {e}"))?;
        lines.push((n, parsed));
    }
    // Validate every line before anything is bound, signed or written.
    let mut keys = Vec::with_capacity(lines.len());
    let mut bindings: Vec<(memlineage::record::KeyId, Role, String)> = Vec::new();
    let mut created = false;
    for (n, a) in &lines {
        let at = |e: &dyn std::fmt::Display| format!("line {n}: {e}");
        if a.writer.is_empty() {
            return Err(at(&"writer name is empty").into());
        }
        let role = a
            .role
            .as_deref()
            .map(|r| Role::from_name(r).ok_or(format!("unknown role {r}")))
            .transpose()
            .map_err(|e| at(&e))?;
        if role == Some(Role::Log) {
            return Err(
                at(&"role log cannot be bound: the log key is the only log principal").into(),
            );
        }
        let (key, role, new) = ks.principal(&a.writer, role).map_err(|e| at(&e))?;
        created |= new;
        if l.principal(&key.key_id()).is_none() && !bindings.iter().any(|b| b.0 == key.key_id()) {
            bindings.push((key.key_id(), role, a.writer.clone()));
        }
        keys.push(key);
    }
    let mut entries = Vec::with_capacity(bindings.len() + lines.len());
    for (key, role, name) in &bindings {
        entries.push(l.binding_entry(*key, *role, name)?);
    }
    let mut batch_ids = std::collections::HashSet::new();
    for (key, (n, a)) in keys.iter().zip(&lines) {
        let at = |e: &dyn std::fmt::Display| format!("line {n}: {e}");
        let entry = draft_from_line(key, a).map_err(|e| at(&e))?;
        for p in &entry.parents {
            if l.index_of(&p.id).is_none() && !batch_ids.contains(&p.id) {
                return Err(at(&format!("unknown parent {}", p.id)).into());
            }
        }
        let signed = SignedEntry::sign(entry, key).map_err(|e| at(&e))?;
        batch_ids.insert(signed.id());
        entries.push((signed, a.content.clone().into_bytes()));
    }
    if entries.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    // New writers' keys are saved before their bindings are committed: a key that ends up
    // unused is harmless, a bound key whose seed was lost is not.
    if created {
        ks.save(&key_path(ledger))?;
    }
    let batch = entries
        .iter()
        .map(|(s, c)| (s.clone(), c.as_slice()))
        .collect();
    let appended = l.append_signed(batch)?;
    l.checkpoint()?;
    for a in appended.iter().skip(bindings.len()) {
        say!(
            "{}",
            serde_json::json!({"id": a.id.to_string(), "index": a.index, "label": a.label.name()})
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Takes the exclusive lock beside a ledger's key file (`LEDGER.key.lock`), held until the
/// returned file is dropped.
fn lock_key_file(ledger: &Path) -> Res<std::fs::File> {
    let mut p = key_path(ledger).into_os_string();
    p.push(".lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(PathBuf::from(p))?;
    f.lock()?;
    Ok(f)
}

/// The unsigned entry a JSON line describes.
fn draft_from_line(key: &memlineage::record::WriterKey, a: &AppendLine) -> Res<ProvEntry> {
    let kind = Kind::from_name(&a.kind).ok_or(format!("unknown kind {}", a.kind))?;
    let mut parents = Vec::with_capacity(a.parents.len());
    for p in &a.parents {
        parents.push(Parent {
            id: EntryId::from_hex(&p.id)?,
            weight: Weight::from_f64(p.weight)?,
        });
    }
    let name = a.attribution.as_deref().unwrap_or("coarse");
    let attribution =
        Attribution::from_name(name).ok_or_else(|| format!("unknown attribution {name}"))?;
    let mut entry = ProvEntry::new(key.key_id(), kind, a.content.as_bytes())
        .with_parents(parents)
        .with_attribution(attribution)
        .with_time_ms(a.time_ms.unwrap_or_else(now_ms));
    entry.target = a.target.as_deref().map(EntryId::from_hex).transpose()?;
    Ok(entry)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Longest error message printed for a bad input file, in bytes (issue 13: a 200 KB policy
/// line was repeated whole).
const MAX_ERROR_BYTES: usize = 2048;

fn load_policy(path: Option<PathBuf>) -> Res<Policy> {
    Ok(match path {
        Some(p) => {
            let bytes = read_capped(&p, MAX_POLICY_BYTES, "a policy")?;
            let text = std::str::from_utf8(&bytes).map_err(|_| "policy is not UTF-8")?;
            // A TOML error quotes its input line: bounded, however long the line.
            Policy::from_toml(text)
                .map_err(|e| io::bounded(&format!("{}: {e}", p.display()), MAX_ERROR_BYTES))?
        }
        None => Policy::default(),
    })
}

fn replay(
    files: &[PathBuf],
    ledger: Option<&Path>,
    mode: ModeArg,
    policy: Option<PathBuf>,
    json: bool,
    flag: bool,
) -> Res<ExitCode> {
    if files.is_empty() {
        return Err("replay needs at least one trace file".into());
    }
    let policy = load_policy(policy)?;
    let modes = mode.modes();
    let readers = files
        .iter()
        .map(|f| {
            Ok(std::io::BufReader::new(
                std::fs::File::open(f).map_err(|e| format!("{}: {e}", f.display()))?,
            ))
        })
        .collect::<Res<Vec<_>>>()?;
    let out = match ledger {
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
            init(path, "memlineage.local/replay", 0.5, RuleArg::FailClosed)?;
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

fn replay_into<S: Store>(
    l: &mut Ledger<S>,
    policy: Policy,
    readers: Vec<impl BufRead>,
    modes: &[Mode],
    json: bool,
    flag: bool,
) -> Res<String> {
    let labels = l.policy();
    let mut r = Replayer::new(l, policy);
    if flag {
        r.flag_injections(memlineage::record::WriterKey::generate())?;
    }
    for reader in readers {
        r.replay_reader(reader, modes)?;
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

/// What a verifier brings beyond the log key: remembered checkpoints and witnesses.
#[derive(Default)]
struct Trust {
    state: Option<PathBuf>,
    witnesses: Vec<String>,
    quorum: Option<usize>,
    tau: Option<f64>,
    rule: Option<RuleArg>,
}

fn audit_ledger(
    ledger: &Path,
    log_key: Option<String>,
    checkpoint: Option<PathBuf>,
    trust: &Trust,
) -> Res<AuditReport> {
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
    let stored = stored_policy(&store)?;
    let policy = LabelPolicy {
        tau: trust
            .tau
            .map(Weight::from_f64)
            .transpose()?
            .unwrap_or(stored.tau),
        weak_rule: trust
            .rule
            .map(RuleArg::weak_rule)
            .unwrap_or(stored.weak_rule),
    };
    say!(
        "labels recomputed under tau {} ({}), rule {} ({})",
        policy.tau,
        if trust.tau.is_some() {
            "given"
        } else {
            "ledger setting"
        },
        policy.weak_rule.name(),
        if trust.rule.is_some() {
            "given"
        } else {
            "ledger setting"
        },
    );
    let size = store.tree_size()?;
    let entries = store.audit_items();
    let log_key_id = verifier.key_id();
    let mut report = {
        let mut bar = progress::AuditBar::new(size);
        audit_with_progress(entries, &verifier, &note, policy, log_key_id, &mut bar)?
    };
    // Second pass (parse only): what the log's active flags quarantine.
    let bytes = (0..size).map(|i| {
        store
            .entry_bytes(i)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("entry {i} missing"))
    });
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
    Ok(report)
}

/// Offers the verified checkpoint to the client state file; a rollback or split view is an
/// error (the split view's two notes are saved in the state file as evidence).
fn check_state(
    path: &Path,
    verifier: &LogVerifier,
    checkpoint: &memlineage::log::VerifiedCheckpoint,
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

fn verify(
    ledger: &Path,
    log_key: Option<String>,
    checkpoint: Option<PathBuf>,
    trust: &Trust,
) -> Res<ExitCode> {
    let r = audit_ledger(ledger, log_key, checkpoint, trust)?;
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
    say!(
        "tree root at checkpoint size: {}",
        if r.root_matches {
            "matches"
        } else {
            "MISMATCH"
        }
    );
    for f in &r.failures {
        eprintln!("entry {} ({}): {}", f.index, f.id, f.problem);
    }
    if r.is_clean() {
        say!("OK");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "FAILED: {} problems",
            r.failures.len() + usize::from(!r.root_matches)
        );
        Ok(ExitCode::FAILURE)
    }
}

fn export(ledger: &Path, output: Option<PathBuf>) -> Res<ExitCode> {
    let store = existing_store(ledger)?;
    let mut out = Vec::new();
    for i in 0..store.tree_size()? {
        out.extend(
            store
                .entry_bytes(i)?
                .ok_or_else(|| format!("entry {i} missing"))?,
        );
    }
    write_out(output, &out)?;
    Ok(ExitCode::SUCCESS)
}

fn checkpoint(ledger: &Path, vkey: bool) -> Res<ExitCode> {
    if vkey {
        say!("{}", stored_vkey(&existing_store(ledger)?)?);
        return Ok(ExitCode::SUCCESS);
    }
    let (mut l, _) = open(ledger)?;
    let c = l.checkpoint()?;
    std::io::stdout().write_all(c.note())?;
    Ok(ExitCode::SUCCESS)
}

fn prove(ledger: &Path, id: &str, output: Option<PathBuf>) -> Res<ExitCode> {
    let (mut l, _) = open(ledger)?;
    let bundle = l.prove(&EntryId::from_hex(id)?)?;
    write_out(output, bundle.to_text().as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn verify_proof(file: &Path, log_key: &str) -> Res<ExitCode> {
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

fn inspect(file: &Path) -> Res<ExitCode> {
    let raw = read_capped(file, MAX_INSPECT_BYTES, "an entry")?;
    // Hex text (whitespace and a 0x prefix allowed) or raw bytes.
    let text: Option<String> = std::str::from_utf8(&raw).ok().map(|t| {
        let t: String = t.split_whitespace().collect();
        t.strip_prefix("0x").map(str::to_string).unwrap_or(t)
    });
    let bytes = match text {
        Some(t) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_hexdigit()) => {
            match hex::decode(&t) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("invalid entry: not hex: {e}");
                    eprintln!("class: NotHex");
                    return Ok(ExitCode::from(2));
                }
            }
        }
        _ => raw,
    };
    match SignedEntry::decode(&bytes) {
        Ok(s) => {
            let e = s.entry();
            let parents: Vec<_> = e
                .parents
                .iter()
                .map(
                    |p| serde_json::json!({"id": p.id.to_string(), "weight": p.weight.to_string()}),
                )
                .collect();
            let v = serde_json::json!({
                "id": s.id().to_string(),
                "version": e.version,
                "writer": e.writer.to_string(),
                "kind": e.kind.name(),
                "content_hash": e.content_hash.to_string(),
                "source_hash": e.source_hash.to_string(),
                "context_hash": e.context_hash.to_string(),
                "parents": parents,
                "time_ms": e.time_ms,
                "attribution": e.attribution.name(),
                "target": e.target.map(|t| t.to_string()),
                "binding": e.binding.as_ref().map(|b| serde_json::json!({"key": b.key.to_string(), "role": b.role.name(), "name": b.name})),
                "signature": "valid (spec/record.md §2.3 under the kid)",
            });
            say!("{}", serde_json::to_string_pretty(&v)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("invalid entry: {e}");
            eprintln!("class: {e:?}");
            Ok(ExitCode::from(2))
        }
    }
}

fn explain(ledger: &Path, id: &str) -> Res<ExitCode> {
    let (l, _) = open(ledger)?;
    let id = EntryId::from_hex(id)?;
    let label = l.label(&id).ok_or_else(|| format!("unknown entry {id}"))?;
    say!(
        "entry {id}: {label}{}",
        if l.is_tombstoned(&id) {
            " (tombstoned)"
        } else {
            ""
        }
    );
    let path = l.untrusted_path(&id)?;
    if path.is_empty() {
        say!("no untrusted ancestor reaches it over propagating edges");
    }
    for (i, hop) in path.iter().enumerate() {
        let e = l.get(hop)?;
        let who = l
            .principal(&e.writer())
            .map(|(r, n)| format!("{n} ({})", r.name()))
            .unwrap_or_default();
        say!(
            "{}{} {} by {} [{}]",
            if i == 0 { "source " } else { "  -> " },
            hop.short(),
            e.entry().kind.name(),
            who,
            l.label(hop).map(|x| x.name()).unwrap_or("?")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn demo(dir: Option<PathBuf>) -> Res<ExitCode> {
    let tmp;
    let dir = match dir {
        Some(d) => {
            std::fs::create_dir_all(&d)?;
            d
        }
        None => {
            tmp = tempdir()?;
            tmp.clone()
        }
    };
    let ledger = dir.join("demo.ledger");
    if ledger.exists() {
        return Err(format!("{} exists; pick another --dir", ledger.display()).into());
    }
    say!("== memlineage demo: AgentDojo banking (160 runs), direct and via-memory ==");
    init(&ledger, "memlineage.local/demo", 0.5, RuleArg::FailClosed)?;
    let (mut l, _) = open(&ledger)?;
    let t0 = std::time::Instant::now();
    let table = replay_into(
        &mut l,
        Policy::default(),
        vec![BANKING.as_bytes()],
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
    let call = memlineage::gate::ToolCall {
        tool: "send_money".into(),
        sensitive: true,
        args: vec![("recipient".into(), vec![id])],
    };
    let decision = l.gate(&Policy::default(), &call);
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
        memlineage::gate::Decision::Deny(d) => say!("gate: {d}"),
        memlineage::gate::Decision::Allow => say!("gate: allow"),
    }
    explain(&ledger, &id.to_string())?;
    Ok(ExitCode::SUCCESS)
}

fn tempdir() -> Res<PathBuf> {
    let base = std::env::temp_dir().join(format!(
        "memlineage-demo-{}-{}",
        std::process::id(),
        now_ms()
    ));
    std::fs::create_dir_all(&base)?;
    Ok(base)
}
