//! Laundering attacks beyond the paper (`spec/eval.md` §5): each scenario of group `launder`
//! run under the fail-open and the fail-closed rule, beside the false-refusal cost each rule
//! has on the benign workflows.

use super::{table, Count, Row};
use serde::Serialize;
use std::fmt::Write as _;

/// One laundering scenario's attack success.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunderRow {
    /// Scenario name.
    pub name: String,
    /// Laundering technique.
    pub family: String,
    /// Description.
    pub description: String,
    /// Signatures only (no lineage), for reference.
    pub signatures_only: Count,
    /// memlineage with a fail-open ledger.
    pub fail_open: Count,
    /// memlineage with a fail-closed ledger.
    pub fail_closed: Count,
}

/// False refusals of one rule on the benign workflows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cost {
    /// `fail-open` or `fail-closed`.
    pub rule: String,
    /// Legitimate calls refused, over the paper's four workflows.
    pub paper_workflows: Refusals,
    /// The same over every benign workflow in the file.
    pub all_workflows: Refusals,
}

/// `refused` of `calls` legitimate calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Refusals {
    /// Legitimate calls refused.
    pub refused: u64,
    /// Legitimate calls proposed.
    pub calls: u64,
}

impl Refusals {
    /// `0.20 (1/5)`: refused / calls.
    fn show(self) -> String {
        Count {
            allowed: self.refused,
            calls: self.calls,
        }
        .show()
    }
}

/// Laundering rows from the scenario rows of group `launder`.
pub fn rows(runs: &[Row]) -> Vec<LaunderRow> {
    runs.iter()
        .map(|r| LaunderRow {
            name: r.name.clone(),
            family: r.family.clone(),
            description: r.description.clone(),
            signatures_only: r.signatures_only,
            fail_open: r.memlineage_fail_open,
            fail_closed: r.memlineage_fail_closed,
        })
        .collect()
}

/// False-refusal cost per rule: refused = proposed − dispatched under memlineage.
pub fn cost(benign: &[Row]) -> Vec<Cost> {
    let refused = |rows: &mut dyn Iterator<Item = &Count>| {
        let mut c = Refusals::default();
        for n in rows {
            c.calls += n.calls;
            c.refused += n.calls.saturating_sub(n.allowed);
        }
        c
    };
    [("fail-open", true), ("fail-closed", false)]
        .into_iter()
        .map(|(rule, open)| {
            let pick = |r: &Row| {
                if open {
                    r.memlineage_fail_open
                } else {
                    r.memlineage_fail_closed
                }
            };
            let paper: Vec<Count> = benign
                .iter()
                .filter(|r| r.paper_dispatch.is_some())
                .map(pick)
                .collect();
            let all: Vec<Count> = benign.iter().map(pick).collect();
            Cost {
                rule: rule.into(),
                paper_workflows: refused(&mut paper.iter()),
                all_workflows: refused(&mut all.iter()),
            }
        })
        .collect()
}

/// Appends the laundering table and the cost table to `o`.
pub fn render(o: &mut String, rows: &[LaunderRow], cost: &[Cost]) {
    let _ = writeln!(
        o,
        "\n## Laundering (beyond the paper)\n\nAttack success under memlineage with the ledger \
         under each weak-parent rule; signatures only for reference.\n"
    );
    table(
        o,
        &[
            "scenario",
            "technique",
            "signatures only",
            "memlineage fail-open",
            "memlineage fail-closed",
        ],
        rows.iter().map(|r| {
            vec![
                r.name.clone(),
                r.family.clone(),
                r.signatures_only.show(),
                r.fail_open.show(),
                r.fail_closed.show(),
            ]
        }),
    );
    let _ = writeln!(
        o,
        "\nFalse-refusal cost on the benign workflows (legitimate calls refused / legitimate \
         calls):\n"
    );
    table(
        o,
        &["rule", "paper's four workflows", "all benign workflows"],
        cost.iter().map(|c| {
            vec![
                c.rule.clone(),
                c.paper_workflows.show(),
                c.all_workflows.show(),
            ]
        }),
    );
    let _ = writeln!(o, "\nScenario descriptions:\n");
    for r in rows {
        let _ = writeln!(o, "- `{}`: {}", r.name, r.description);
    }
}
