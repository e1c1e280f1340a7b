//! The τ × K ablation (paper §6, `spec/eval.md` §4): for each panel `(w0, d)`, chain length K
//! and threshold τ, a chain `source → hop 1 → … → hop K` is appended to a ledger whose
//! [`LabelPolicy`] has that τ; the cell records whether the tip's label is untrusted, i.e.
//! whether the External label of the source reached the tip. Read from the ledger, not from
//! the formula.

use super::scenario::{principal_key, AblationSpec, LOG_ORIGIN, TIME_BASE_MS};
use super::EvalError;
use crate::lineage::{LabelPolicy, WeakRule};
use crate::log::LogSigner;
use crate::record::{Attribution, Kind, Parent, ProvEntry, Role, Weight};
use crate::store::MemoryStore;
use crate::{Ledger, LedgerError};
use serde::Serialize;

/// Largest K the ablation builds.
pub const MAX_K: u32 = 6;

/// One panel's results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PanelResult {
    /// Panel name.
    pub name: String,
    /// w0 in millionths.
    pub w0: u32,
    /// d in millionths.
    pub d: u32,
    /// One row per K.
    pub rows: Vec<AblationRow>,
}

/// One K of one panel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AblationRow {
    /// Chain length (hops).
    pub k: u32,
    /// Edge weights of hops 1..=K in millionths ([`hop_weight`]).
    pub weights: Vec<u32>,
    /// Per τ (in the spec's order): whether External reached the tip under fail-open.
    pub reaches_fail_open: Vec<bool>,
    /// Per τ: the same under fail-closed.
    pub reaches_fail_closed: Vec<bool>,
}

/// The whole ablation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ablation {
    /// τ values in millionths, column order.
    pub taus: Vec<u32>,
    /// Panels in the spec's order.
    pub panels: Vec<PanelResult>,
}

/// The weight of hop `k` (1-based) in millionths: `w0 · d^(k−1)` computed exactly from `w0` and
/// `d` in millionths, then rounded to the nearest millionth, halves up:
/// `floor((w0 · d^(k−1) + 10^(6(k−1))/2) / 10^(6(k−1)))`. `k` is clamped to `1..=MAX_K`, which
/// keeps the numerator below `10^36 < 2^128`. Does not panic.
pub fn hop_weight(w0: u32, d: u32, k: u32) -> u32 {
    let k = k.clamp(1, MAX_K);
    let mut num = u128::from(w0.min(1_000_000));
    let mut den: u128 = 1;
    for _ in 1..k {
        num *= u128::from(d.min(1_000_000));
        den *= 1_000_000;
    }
    let rounded = (num + den / 2) / den;
    u32::try_from(rounded).unwrap_or(1_000_000).min(1_000_000)
}

/// The weight `x` rounded to millionths, with `what` in the error.
fn millionths(x: f64, what: &str) -> Result<u32, EvalError> {
    Weight::from_f64(x)
        .map(Weight::millionths)
        .map_err(|e| EvalError::Scenario {
            scenario: "ablation".into(),
            msg: format!("{what}: {e}"),
        })
}

/// Runs the ablation: one ledger per (τ, rule), every chain of every panel appended to it.
///
/// # Errors
/// [`EvalError::Scenario`] for a τ, w0 or d outside `[0, 1]` or K outside `1..=MAX_K`; ledger
/// errors.
pub fn run(spec: &AblationSpec) -> Result<Ablation, EvalError> {
    let taus = spec
        .taus
        .iter()
        .map(|&t| millionths(t, "tau"))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(&k) = spec.ks.iter().find(|&&k| !(1..=MAX_K).contains(&k)) {
        return Err(EvalError::Scenario {
            scenario: "ablation".into(),
            msg: format!("K = {k} outside 1..={MAX_K}"),
        });
    }
    let mut panels = Vec::new();
    for p in &spec.panels {
        let (w0, d) = (millionths(p.w0, "w0")?, millionths(p.d, "d")?);
        panels.push(PanelResult {
            name: p.name.clone(),
            w0,
            d,
            rows: spec
                .ks
                .iter()
                .map(|&k| AblationRow {
                    k,
                    weights: (1..=k).map(|h| hop_weight(w0, d, h)).collect(),
                    reaches_fail_open: Vec::new(),
                    reaches_fail_closed: Vec::new(),
                })
                .collect(),
        });
    }
    for &tau in &taus {
        for rule in [WeakRule::FailOpen, WeakRule::FailClosed] {
            let mut chains = Chains::new(LabelPolicy {
                tau: Weight::new(u64::from(tau)).map_err(|e| EvalError::Scenario {
                    scenario: "ablation".into(),
                    msg: e.to_string(),
                })?,
                weak_rule: rule,
            })?;
            for p in &mut panels {
                for row in &mut p.rows {
                    let reaches = chains.reaches_tip(&p.name, &row.weights)?;
                    match rule {
                        WeakRule::FailOpen => row.reaches_fail_open.push(reaches),
                        WeakRule::FailClosed => row.reaches_fail_closed.push(reaches),
                    }
                }
            }
        }
    }
    Ok(Ablation { taus, panels })
}

/// A ledger that chains are appended to.
struct Chains {
    ledger: Ledger<MemoryStore>,
    source: crate::record::WriterKey,
    agent: crate::record::WriterKey,
    n: u64,
}

impl Chains {
    fn new(policy: LabelPolicy) -> Result<Self, EvalError> {
        let log = LogSigner::new(LOG_ORIGIN, principal_key("log")).map_err(LedgerError::from)?;
        let mut ledger = Ledger::create(MemoryStore::default(), log, policy)?;
        let (source, agent) = (principal_key("browser"), principal_key("agent"));
        ledger.bind(source.key_id(), Role::Tool, "browser")?;
        ledger.bind(agent.key_id(), Role::Agent, "agent")?;
        Ok(Chains {
            ledger,
            source,
            agent,
            n: 0,
        })
    }

    /// Appends an External source and one agent summary per weight, each naming the previous
    /// entry as its only parent; returns whether the tip's label is untrusted.
    fn reaches_tip(&mut self, panel: &str, weights: &[u32]) -> Result<bool, EvalError> {
        let k = weights.len();
        let text = format!("ablation {panel} K={k}: tool output with an injected IBAN ZZ99");
        let mut prev = self.append(&text, Kind::ToolResult, None)?;
        for (h, &w) in weights.iter().enumerate() {
            let text = format!("ablation {panel} K={k}: summary hop {}", h + 1);
            let parent = Parent {
                id: prev.id,
                weight: Weight::new(u64::from(w)).map_err(|e| EvalError::Scenario {
                    scenario: "ablation".into(),
                    msg: e.to_string(),
                })?,
            };
            prev = self.append(&text, Kind::Summary, Some(parent))?;
        }
        Ok(prev.label.is_untrusted())
    }

    fn append(
        &mut self,
        text: &str,
        kind: Kind,
        parent: Option<Parent>,
    ) -> Result<crate::Appended, EvalError> {
        let key = if parent.is_some() {
            &self.agent
        } else {
            &self.source
        };
        let entry = ProvEntry::new(key.key_id(), kind, text.as_bytes())
            .with_parents(parent.into_iter().collect())
            .with_attribution(Attribution::Attention)
            .with_time_ms(TIME_BASE_MS + self.n);
        self.n += 1;
        Ok(self.ledger.append(entry, key, text.as_bytes())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_weights_round_half_up_to_millionths() {
        assert_eq!(hop_weight(900_000, 700_000, 1), 900_000);
        assert_eq!(hop_weight(900_000, 700_000, 2), 630_000);
        assert_eq!(hop_weight(900_000, 700_000, 5), 216_090);
        assert_eq!(hop_weight(500_000, 700_000, 5), 120_050);
        // 0.000001 · 0.5 = 0.0000005 rounds up to 1 millionth; · 0.5 again rounds to 0.
        assert_eq!(hop_weight(1, 500_000, 2), 1);
        assert_eq!(hop_weight(1, 500_000, 3), 0);
        assert_eq!(hop_weight(1_000_000, 1_000_000, 6), 1_000_000);
        // 0.999999^6 = 0.999994000015 → 999_994.
        assert_eq!(hop_weight(999_999, 999_999, 6), 999_994);
        // Clamped, never panics.
        assert_eq!(hop_weight(u32::MAX, u32::MAX, u32::MAX), 1_000_000);
    }
}
