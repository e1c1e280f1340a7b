//! Counterfactual amputation: does removing one memory change what the agent does?
//!
//! A *carrier* is a memory entry (an [`EntryId`]). To *amputate* it is to re-run the same
//! scenario with the carrier unavailable to every retrieval of the run — hence before its
//! first influential read — and compare the action steps with the baseline run. The caller
//! supplies a deterministic replay of its agent ([`ReplayAgent`]); the crate ships
//! [`ScriptedAgent`], a seeded scripted agent with controllable noise, for tests and demos.
//!
//! [`amputate`] runs the paired protocol of `spec/counterfactual.md` §2: per repeat `i` a
//! baseline run and a treated run under the same pinned seed (Δaction, [`delta_action`]), a
//! negative control that amputates a carrier that does not exist under the same seed (which
//! must give exactly zero: the replay is checked to be deterministic) and under an independent
//! seed (the noise floor), the difference in differences, an exact two-sided sign test in
//! integer arithmetic ([`sign_test`]) and the parse-failure rate. [`Verdict`] is conservative:
//! a mean Δaction at or below the noise floor is "not distinguishable from noise".

mod scripted;
mod sign;

pub use scripted::{Memory, Scenario, ScenarioError, ScriptStep, ScriptedAgent};
pub use sign::{sign_test, Ratio, SignTest, SignTestError, MAX_SIGN_TEST_PAIRS};

use crate::record::EntryId;

/// What the agent produced at one step of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Response {
    /// A decision read from the response: the action taken, in a canonical text form (two
    /// actions are the same exactly when their texts are equal).
    Action(String),
    /// A response from which no decision could be read (the raw text). Counted in the
    /// parse-failure rate; never replaced by a default action.
    Unparseable(String),
}

/// One step of a run: the response and the memory entries retrieval returned for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The response at this step.
    pub response: Response,
    /// Entries read (retrieved into the prompt) for this step, in read order.
    pub read: Vec<EntryId>,
}

/// A deterministic replay of an agent over a scenario, implemented by the caller.
///
/// Requirement (checked by [`amputate`]): for fixed `scenario` and `seed`, two calls whose
/// `available` agree on every entry the run reads return equal steps. In particular a carrier
/// that the run never reads must not change anything.
pub trait ReplayAgent {
    /// The scenario type the agent replays.
    type Scenario: ?Sized;
    /// Why a run could not be completed (a replay error, not a parse failure).
    type Error: std::error::Error + 'static;

    /// Runs `scenario` under `seed`; retrieval may only return entries `e` with
    /// `available(&e)` true.
    ///
    /// # Errors
    /// When the run cannot be completed.
    fn run(
        &mut self,
        scenario: &Self::Scenario,
        available: &dyn Fn(&EntryId) -> bool,
        seed: u64,
    ) -> Result<Vec<Step>, Self::Error>;
}

/// Differing and scored action steps between two runs (`spec/counterfactual.md` §2.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeltaCount {
    /// Scored positions whose actions differ.
    pub differing: u32,
    /// Positions scored: at least one run has an action there and neither is unparseable.
    pub scored: u32,
}

impl DeltaCount {
    /// `differing / scored`, in [0, 1]; 0 when nothing was scored.
    pub fn fraction(self) -> f64 {
        share(self.differing.into(), self.scored.into())
    }
}

/// Δaction between two runs, position by position (`spec/counterfactual.md` §2.1).
///
/// Over positions `0..max(len a, len b)`: a position where either run is unparseable is not
/// scored; a position where at least one run has an action is scored, and differs unless both
/// have the same action (a run that stopped earlier differs from one that acted).
pub fn delta_action(a: &[Step], b: &[Step]) -> DeltaCount {
    let mut d = DeltaCount::default();
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i).map(|s| &s.response), b.get(i).map(|s| &s.response));
        if matches!(x, Some(Response::Unparseable(_)))
            || matches!(y, Some(Response::Unparseable(_)))
        {
            continue;
        }
        d.scored += 1;
        d.differing += u32::from(x != y);
    }
    d
}

/// The repeat protocol's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protocol {
    /// Paired repeats `k`, 1 ≤ k ≤ [`MAX_SIGN_TEST_PAIRS`].
    pub repeats: u32,
    /// Seed base `s`: repeat `i` uses seed `s + 2i` for the paired runs and `s + 2i + 1` for
    /// the independent-seed control (wrapping).
    pub seed: u64,
    /// Significance level of the sign test, exact.
    pub alpha: Ratio,
}

impl Default for Protocol {
    /// 20 repeats, seed 0, α = 1/20.
    fn default() -> Self {
        Protocol {
            repeats: 20,
            seed: 0,
            alpha: Ratio { num: 1, den: 20 },
        }
    }
}

/// The conservative verdict (`spec/counterfactual.md` §2.5).
///
/// Exhaustive: the three verdicts of `spec/counterfactual.md` §2.5; a new one is a change of
/// the method that every caller must handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Mean Δaction exceeds the noise floor and the sign test rejects "no difference" at α.
    LoadBearing,
    /// Mean Δaction exceeds the noise floor but the sign test does not reject at α.
    Inconclusive,
    /// Mean Δaction is at or below the noise floor.
    NotDistinguishableFromNoise,
}

impl Verdict {
    /// Human-readable form used by the CLI.
    pub fn describe(self) -> &'static str {
        match self {
            Verdict::LoadBearing => {
                "load-bearing (Δaction exceeds the noise floor, sign test significant)"
            }
            Verdict::Inconclusive => {
                "inconclusive (Δaction exceeds the noise floor, sign test not significant)"
            }
            Verdict::NotDistinguishableFromNoise => "not distinguishable from noise",
        }
    }
}

/// Responses counted over every run of the protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseFailures {
    /// Responses from which no decision could be read.
    pub unparseable: u64,
    /// All responses.
    pub responses: u64,
}

impl ParseFailures {
    /// `unparseable / responses`; 0 when there were no responses.
    pub fn rate(self) -> f64 {
        share(self.unparseable, self.responses)
    }

    fn add(&mut self, steps: &[Step]) {
        self.responses += steps.len() as u64;
        self.unparseable += steps
            .iter()
            .filter(|s| matches!(s.response, Response::Unparseable(_)))
            .count() as u64;
    }
}

/// Everything [`amputate`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct AmputationReport {
    /// The amputated carrier.
    pub carrier: EntryId,
    /// The carrier used for the negative control (absent from the scenario).
    pub ghost: EntryId,
    /// Δaction per repeat: baseline vs treated, same seed.
    pub treated: Vec<DeltaCount>,
    /// Negative control per repeat: baseline vs ghost amputation, independent seed.
    pub control: Vec<DeltaCount>,
    /// Mean of the treated fractions.
    pub mean_delta: f64,
    /// Mean of the control fractions.
    pub noise_floor: f64,
    /// `mean_delta − noise_floor`.
    pub did: f64,
    /// Sign test over the per-repeat differences `treated_i − control_i`.
    pub sign: SignTest,
    /// Unreadable responses over all runs.
    pub parse_failures: ParseFailures,
    /// Mean number of baseline steps per run that read the carrier (how far it spreads).
    pub carrier_reads: f64,
    /// The verdict.
    pub verdict: Verdict,
}

/// Why [`amputate`] could not produce a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AmputationError<E: std::error::Error + 'static> {
    /// A run failed.
    #[error("replay failed: {0}")]
    Replay(#[source] E),
    /// Amputating the absent ghost carrier under the same seed changed the run: the replay is
    /// not deterministic, so no paired comparison is meaningful.
    #[error("replay is not deterministic: amputating an absent carrier changed {} of {} action steps in repeat {repeat}", delta.differing, delta.scored)]
    NotDeterministic {
        /// Repeat index.
        repeat: u32,
        /// The nonzero Δaction observed.
        delta: DeltaCount,
    },
    /// Caller mistake: repeats out of range, α not in (0, 1], or carrier = ghost.
    #[error("invalid protocol: {0}")]
    ApiMisuse(&'static str),
}

/// Runs the amputation protocol for `carrier` (`spec/counterfactual.md` §2).
///
/// `ghost` must be an id the scenario does not contain; it is the negative control.
/// Makes `4 · repeats` runs.
///
/// # Errors
/// [`AmputationError::Replay`] when a run fails, [`AmputationError::NotDeterministic`] when
/// the same-seed ghost amputation changes the run, [`AmputationError::ApiMisuse`] for
/// parameters out of range. Does not panic.
pub fn amputate<A: ReplayAgent>(
    agent: &mut A,
    scenario: &A::Scenario,
    carrier: EntryId,
    ghost: EntryId,
    protocol: &Protocol,
) -> Result<AmputationReport, AmputationError<A::Error>> {
    check_protocol(protocol, carrier, ghost)?;
    let mut report = AmputationReport {
        carrier,
        ghost,
        treated: Vec::new(),
        control: Vec::new(),
        mean_delta: 0.0,
        noise_floor: 0.0,
        did: 0.0,
        sign: SignTest::default(),
        parse_failures: ParseFailures::default(),
        carrier_reads: 0.0,
        verdict: Verdict::NotDistinguishableFromNoise,
    };
    let all = |_: &EntryId| true;
    let without_carrier = |e: &EntryId| *e != carrier;
    let without_ghost = |e: &EntryId| *e != ghost;
    let mut reads = 0u64;
    for i in 0..protocol.repeats {
        let paired = protocol.seed.wrapping_add(2 * u64::from(i));
        let independent = paired.wrapping_add(1);
        let mut run = |avail: &dyn Fn(&EntryId) -> bool, seed| {
            agent
                .run(scenario, avail, seed)
                .map_err(AmputationError::Replay)
        };
        let base = run(&all, paired)?;
        let treated = run(&without_carrier, paired)?;
        let ghost_same = run(&without_ghost, paired)?;
        let ghost_other = run(&without_ghost, independent)?;
        let check = delta_action(&base, &ghost_same);
        if check.differing != 0 || base != ghost_same {
            return Err(AmputationError::NotDeterministic {
                repeat: i,
                delta: check,
            });
        }
        reads += base.iter().filter(|s| s.read.contains(&carrier)).count() as u64;
        for r in [&base, &treated, &ghost_same, &ghost_other] {
            report.parse_failures.add(r);
        }
        report.treated.push(delta_action(&base, &treated));
        report.control.push(delta_action(&base, &ghost_other));
    }
    let k = f64::from(protocol.repeats);
    report.carrier_reads = reads as f64 / k;
    report.mean_delta = report.treated.iter().map(|d| d.fraction()).sum::<f64>() / k;
    report.noise_floor = report.control.iter().map(|d| d.fraction()).sum::<f64>() / k;
    report.did = report.mean_delta - report.noise_floor;
    let diffs = report
        .treated
        .iter()
        .zip(&report.control)
        .map(|(t, c)| compare(*t, *c));
    // INVARIANT: repeats ≤ MAX_SIGN_TEST_PAIRS was checked, so the test cannot overflow.
    report.sign =
        sign::from_signs(diffs).map_err(|_| AmputationError::ApiMisuse("too many repeats"))?;
    report.verdict = verdict(
        report.mean_delta,
        report.noise_floor,
        &report.sign,
        protocol.alpha,
    );
    Ok(report)
}

/// The verdict rule of `spec/counterfactual.md` §2.5.
pub fn verdict(mean_delta: f64, noise_floor: f64, sign: &SignTest, alpha: Ratio) -> Verdict {
    if mean_delta <= noise_floor {
        Verdict::NotDistinguishableFromNoise
    } else if sign.p <= alpha {
        Verdict::LoadBearing
    } else {
        Verdict::Inconclusive
    }
}

fn check_protocol<E: std::error::Error + 'static>(
    p: &Protocol,
    carrier: EntryId,
    ghost: EntryId,
) -> Result<(), AmputationError<E>> {
    if p.repeats == 0 || p.repeats as usize > MAX_SIGN_TEST_PAIRS {
        return Err(AmputationError::ApiMisuse("repeats must be in 1..=126"));
    }
    if p.alpha.den == 0 || p.alpha.num == 0 || p.alpha.num > p.alpha.den {
        return Err(AmputationError::ApiMisuse("alpha must be in (0, 1]"));
    }
    if carrier == ghost {
        return Err(AmputationError::ApiMisuse(
            "the ghost carrier equals the carrier",
        ));
    }
    Ok(())
}

/// `part / whole` for display and means; 0 when `whole` is 0.
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The sign of `t.fraction() − c.fraction()`, compared exactly by cross-multiplication.
fn compare(t: DeltaCount, c: DeltaCount) -> std::cmp::Ordering {
    // Fractions with a zero denominator are 0 (see `DeltaCount::fraction`).
    let (tn, td) = if t.scored == 0 {
        (0, 1)
    } else {
        (t.differing, t.scored)
    };
    let (cn, cd) = if c.scored == 0 {
        (0, 1)
    } else {
        (c.differing, c.scored)
    };
    (u64::from(tn) * u64::from(cd)).cmp(&(u64::from(cn) * u64::from(td)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(s: &str) -> Step {
        Step {
            response: Response::Action(s.into()),
            read: vec![],
        }
    }

    fn garbled() -> Step {
        Step {
            response: Response::Unparseable("??".into()),
            read: vec![],
        }
    }

    #[test]
    fn delta_skips_unparseable_and_counts_length_changes() {
        let a = [act("x"), act("y"), garbled(), act("z")];
        let b = [act("x"), act("w"), act("q")];
        // Position 2 unscored (garbled); 3 scored and differs (b stopped); 1 differs.
        assert_eq!(
            delta_action(&a, &b),
            DeltaCount {
                differing: 2,
                scored: 3
            }
        );
        assert_eq!(
            delta_action(&a, &a),
            DeltaCount {
                differing: 0,
                scored: 3
            }
        );
        assert_eq!(delta_action(&[], &[]).fraction(), 0.0);
    }

    #[test]
    fn compare_is_exact() {
        let d = |differing, scored| DeltaCount { differing, scored };
        assert_eq!(compare(d(1, 3), d(2, 6)), std::cmp::Ordering::Equal);
        assert_eq!(compare(d(1, 3), d(0, 0)), std::cmp::Ordering::Greater);
        assert_eq!(compare(d(0, 5), d(1, 7)), std::cmp::Ordering::Less);
    }
}
