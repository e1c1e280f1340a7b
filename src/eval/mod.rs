//! The lineage-stress harness behind `memlineage eval` (`spec/eval.md`): scripted attacks and
//! benign workflows through the real crate path, the τ × K ablation, and laundering attacks,
//! rendered as deterministic Markdown and JSON.
//!
//! No model is called: the attacker and the agent are scripted in a scenario file
//! (`spec/eval/scenarios.toml`, which the `memlineage eval` binary bundles; the library reads
//! the text it is given, [`parse`]), keys come from fixed seeds ([`scenario::principal_key`]),
//! times from the step index, and the LM judge is
//! [`crate::lineage::attribution::OverlapJudge`]. Two runs give byte-identical output.

pub mod ablation;
pub mod launder;
pub mod replay;
pub mod scenario;

use crate::eval::replay::Config;
use crate::gate::Policy;
use crate::lineage::attribution::AttributionError;
use crate::lineage::{LabelPolicy, WeakRule};
use crate::record::Weight;
use crate::LedgerError;
use ablation::Ablation;
use launder::{Cost, LaunderRow};
use scenario::{CallOutcome, Group, ScenarioFile};
use serde::Serialize;
use std::fmt::Write as _;

/// Why an evaluation stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The scenario file is not valid TOML of the schema (`spec/eval.md` §2): the TOML
    /// parser's error, with its line and column.
    #[error("scenario file: {0}")]
    Parse(#[source] toml::de::Error),
    /// A scenario breaks the schema's rules (unknown name, principal, kind, role; bad weight).
    #[error("scenario {scenario}: {msg}")]
    Scenario {
        /// Scenario name (`ablation` for the grid).
        scenario: String,
        /// What is wrong.
        msg: String,
    },
    /// Edges could not be built (duplicate context entry, weight count).
    #[error(transparent)]
    Attribution(#[from] AttributionError),
    /// The ledger refused an operation.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// `allowed` of `calls`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    /// Calls dispatched.
    pub allowed: u64,
    /// Calls proposed.
    pub calls: u64,
}

impl Count {
    /// `allowed / calls`, 0 when there are no calls.
    pub fn rate(self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.allowed as f64 / self.calls as f64
        }
    }

    fn add(&mut self, allowed: bool) {
        self.calls += 1;
        self.allowed += u64::from(allowed);
    }

    /// `0.50 (1/2)`.
    fn show(self) -> String {
        format!("{:.2} ({}/{})", self.rate(), self.allowed, self.calls)
    }
}

/// One row of the attack or benign table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Scenario name.
    pub name: String,
    /// Attack family or workflow.
    pub family: String,
    /// Description.
    pub description: String,
    /// The paper's figures (no defence, signatures only, memlineage), if it reports this row.
    pub paper: Option<[f64; 3]>,
    /// For the paper's four benign workflows: its dispatch rate under memlineage.
    pub paper_dispatch: Option<f64>,
    /// No defence (the same under both rules).
    pub no_defence: Count,
    /// Signatures only (the same under both rules: it reads no label).
    pub signatures_only: Count,
    /// Signatures only, and the entry must be in the log (no lineage).
    pub signatures_and_log: Count,
    /// memlineage, ledger under fail-open (the paper's rule).
    pub memlineage_fail_open: Count,
    /// memlineage, ledger under fail-closed (the crate's default).
    pub memlineage_fail_closed: Count,
    /// Justifying entries retrieval refused, summed over calls (fail-closed run).
    pub retrieval_refused: usize,
}

/// Everything `memlineage eval` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Attack table: attack calls dispatched / attack calls.
    pub attacks: Vec<Row>,
    /// Benign table: legitimate calls dispatched / legitimate calls.
    pub benign: Vec<Row>,
    /// τ × K ablation.
    pub ablation: Ablation,
    /// Laundering table.
    pub launder: Vec<LaunderRow>,
    /// False refusals on the benign workflows under each rule.
    pub cost: Vec<Cost>,
}

/// τ of a scenario's ledger.
fn tau(s: &scenario::Scenario) -> Result<Weight, EvalError> {
    Weight::from_f64(s.tau).map_err(|e| EvalError::Scenario {
        scenario: s.name.clone(),
        msg: format!("tau: {e}"),
    })
}

/// Parses a scenario file.
///
/// # Errors
/// [`EvalError::Parse`] with the TOML error (line and column). Does not panic.
pub fn parse(text: &str) -> Result<ScenarioFile, EvalError> {
    toml::from_str(text).map_err(EvalError::Parse)
}

/// Runs every scenario under both weak-parent rules with the default gate policy, and the
/// ablation.
///
/// # Errors
/// The first [`EvalError`]; nothing is written anywhere (all ledgers are in memory).
pub fn run(file: &ScenarioFile) -> Result<Report, EvalError> {
    let gate = Policy::default();
    let mut attacks = Vec::new();
    let mut benign = Vec::new();
    let mut launder_runs = Vec::new();
    for s in &file.scenario {
        let mut per_rule = Vec::new();
        for rule in [WeakRule::FailOpen, WeakRule::FailClosed] {
            let labels = LabelPolicy {
                tau: tau(s)?,
                weak_rule: rule,
            };
            per_rule.push(scenario::run(&file.principals, s, labels, &gate)?);
        }
        let (open, closed) = (&per_rule[0], &per_rule[1]);
        let want_attack = s.group != Group::Benign;
        let tally = |runs: &[CallOutcome], f: &dyn Fn(&CallOutcome) -> bool| {
            let mut n = Count::default();
            for o in runs.iter().filter(|o| o.attack == want_attack) {
                n.add(f(o));
            }
            n
        };
        let count = |runs: &[CallOutcome], c: Config| tally(runs, &|o| o.allowed[config_index(c)]);
        // Neither baseline reads a label: both rules must give the same counts.
        for c in [Config::NoDefence, Config::SignaturesOnly] {
            if count(open, c) != count(closed, c) {
                return Err(EvalError::Scenario {
                    scenario: s.name.clone(),
                    msg: format!("{} differs between rules", c.name()),
                });
            }
        }
        let row = Row {
            name: s.name.clone(),
            family: s.family.clone(),
            description: s.description.clone(),
            paper: s.paper,
            paper_dispatch: s.paper_dispatch,
            no_defence: count(closed, Config::NoDefence),
            signatures_only: count(closed, Config::SignaturesOnly),
            signatures_and_log: tally(closed, &|o| o.signatures_and_log),
            memlineage_fail_open: count(open, Config::MemLineage),
            memlineage_fail_closed: count(closed, Config::MemLineage),
            retrieval_refused: closed.iter().map(|o| o.retrieval_refused).sum(),
        };
        match s.group {
            Group::Attack => attacks.push(row),
            Group::Benign => benign.push(row),
            Group::Launder => launder_runs.push(row),
        }
    }
    Ok(Report {
        launder: launder::rows(&launder_runs),
        cost: launder::cost(&benign),
        attacks,
        benign,
        ablation: ablation::run(&file.ablation)?,
    })
}

/// Position of `c` in a [`CallOutcome`]'s `allowed` (the paper's three configurations).
fn config_index(c: Config) -> usize {
    match c {
        Config::NoDefence => 0,
        Config::SignaturesOnly => 1,
        _ => 2,
    }
}

/// The report as JSON (pretty, two-space indent, trailing newline). Does not panic.
pub fn render_json(report: &Report) -> String {
    let mut s =
        serde_json::to_string_pretty(report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

fn paper(p: Option<[f64; 3]>) -> String {
    match p {
        Some([a, b, c]) => format!("{a:.2} / {b:.2} / {c:.2}"),
        None => "—".into(),
    }
}

fn millionths(m: u32) -> String {
    format!("{}.{:02}", m / 1_000_000, (m % 1_000_000) / 10_000)
}

/// The report as Markdown: the attack, benign, τ × K and laundering tables. Does not panic.
pub fn render_markdown(report: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# memlineage eval\n\nGenerated by `memlineage eval` from `spec/eval/scenarios.toml`; how \
         each number is computed: `spec/eval.md`. Default gate policy; τ = 0.5 unless a row says \
         otherwise. Cells: rate (dispatched/proposed).\n"
    );
    let _ = writeln!(
        o,
        "## Attacks\n\nAttack success = attack calls dispatched / attack calls. memlineage is \
         run twice: ledger under fail-open (the paper's rule) and fail-closed (the default). \
         *signatures + log* is signatures only that also requires the entry to be in the log. \
         *refused by retrieval* counts justifying entries `Ledger::retrieve` did not verify.\n"
    );
    let attack_rows = report.attacks.iter().map(|r| {
        vec![
            r.name.clone(),
            r.family.clone(),
            r.no_defence.show(),
            r.signatures_only.show(),
            r.signatures_and_log.show(),
            r.memlineage_fail_open.show(),
            r.memlineage_fail_closed.show(),
            r.retrieval_refused.to_string(),
            paper(r.paper),
        ]
    });
    table(
        &mut o,
        &[
            "scenario",
            "family",
            "no defence",
            "signatures only",
            "signatures + log",
            "memlineage fail-open",
            "memlineage fail-closed",
            "refused by retrieval",
            "paper (nd / so / ml)",
        ],
        attack_rows,
    );
    let _ = writeln!(
        o,
        "\n## Benign workflows\n\nLegitimate dispatch rate = legitimate calls dispatched / \
         legitimate calls. Rows marked * are the paper's four workflows.\n"
    );
    let benign_rows = report.benign.iter().map(|r| {
        vec![
            format!(
                "{}{}",
                r.name,
                if r.paper_dispatch.is_some() { " *" } else { "" }
            ),
            r.no_defence.show(),
            r.signatures_only.show(),
            r.memlineage_fail_open.show(),
            r.memlineage_fail_closed.show(),
            r.paper_dispatch.map_or("—".into(), |p| format!("{p:.2}")),
        ]
    });
    table(
        &mut o,
        &[
            "workflow",
            "no defence",
            "signatures only",
            "memlineage fail-open",
            "memlineage fail-closed",
            "paper (ml)",
        ],
        benign_rows,
    );
    render_ablation(&mut o, &report.ablation);
    launder::render(&mut o, &report.launder, &report.cost);
    o
}

/// Appends a Markdown table: header, separator, one line per row.
fn table(o: &mut String, header: &[&str], rows: impl Iterator<Item = Vec<String>>) {
    let _ = writeln!(
        o,
        "| {} |\n|{}",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    for r in rows {
        let _ = writeln!(o, "| {} |", r.join(" | "));
    }
}

fn render_ablation(o: &mut String, a: &Ablation) {
    let _ = writeln!(
        o,
        "\n## τ × K ablation\n\nA chain External source → K agent summaries, hop k weighted \
         w0·d^(k−1) (rounded to millionths, halves up), appended to a ledger with threshold τ; \
         `Y` = the tip's label is untrusted (External reached it), `.` = it did not. Fail-open \
         rule (the paper's). `w_K` is the last hop's weight.\n"
    );
    let head: Vec<String> = a
        .taus
        .iter()
        .map(|&t| format!("τ={}", millionths(t)))
        .collect();
    for p in &a.panels {
        let _ = writeln!(
            o,
            "### {} (w0 = {}, d = {})\n\n| K | w_K | {} |\n|---|---|{}",
            p.name,
            crate::record::Weight::new(u64::from(p.w0)).unwrap_or(Weight::ONE),
            crate::record::Weight::new(u64::from(p.d)).unwrap_or(Weight::ONE),
            head.join(" | "),
            "---|".repeat(head.len())
        );
        for r in &p.rows {
            let cells: Vec<&str> = r
                .reaches_fail_open
                .iter()
                .map(|&b| if b { "Y" } else { "." })
                .collect();
            let last = r.weights.last().copied().unwrap_or(0);
            let _ = writeln!(
                o,
                "| {} | {} | {} |",
                r.k,
                Weight::new(u64::from(last)).unwrap_or(Weight::ONE),
                cells.join(" | ")
            );
        }
        let _ = writeln!(o);
    }
    let (mut yes, mut all) = (0, 0);
    for r in a.panels.iter().flat_map(|p| &p.rows) {
        all += r.reaches_fail_closed.len();
        yes += r.reaches_fail_closed.iter().filter(|&&b| b).count();
    }
    let _ = writeln!(
        o,
        "Under fail-closed the same chains put External at the tip in {yes} of {all} cells: a \
         weak hop passes the worst label of all its parents on."
    );
}
