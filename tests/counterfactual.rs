//! ddmin attribution and counterfactual amputation (`spec/counterfactual.md`): property tests
//! of ddmin on synthetic predicates, the sign test against independently computed p-values,
//! and the scripted-agent scenario with a redundant and a load-bearing carrier.

use memlineage::counterfactual::amputation::{
    amputate, delta_action, sign_test, AmputationError, DeltaCount, Protocol, Ratio, ReplayAgent,
    Response, Scenario, ScriptedAgent, Step, Verdict,
};
use memlineage::counterfactual::ddmin::{ddmin, Culprits, Outcome};
use memlineage::record::EntryId;
use proptest::prelude::*;
use std::collections::BTreeSet;

const SCENARIO: &str = include_str!("counterfactual/payments-scenario.json");
const SIGN_TEST: &str = include_str!("counterfactual/sign-test.json");

/// Repeats at which the spec documents the scenario's verdicts (`spec/counterfactual.md` §3.2).
const REPEATS: u32 = 20;

fn id(byte: u8) -> EntryId {
    EntryId([byte; 32])
}

// ---------------------------------------------------------------------------------------------
// ddmin
// ---------------------------------------------------------------------------------------------

/// Fails exactly when every element of `culprits` is present (monotone, one cause).
fn all_of(culprits: &BTreeSet<u32>) -> impl Fn(&[u32]) -> Outcome + '_ {
    move |s: &[u32]| {
        if culprits.iter().all(|c| s.contains(c)) {
            Outcome::Fail
        } else {
            Outcome::Pass
        }
    }
}

/// Asserts the result fails and is 1-minimal under `pred`; returns the culprits.
fn assert_one_minimal(r: &Culprits<u32>, pred: impl Fn(&[u32]) -> Outcome) -> Vec<u32> {
    let Culprits::Minimal { culprits, .. } = r else {
        panic!("expected a minimal subset, got {r:?}");
    };
    assert_eq!(pred(culprits), Outcome::Fail, "result does not fail");
    for i in 0..culprits.len() {
        let mut less = culprits.clone();
        less.remove(i);
        assert_ne!(
            pred(&less),
            Outcome::Fail,
            "removing {} still fails",
            culprits[i]
        );
    }
    culprits.clone()
}

fn ceil_log2(n: usize) -> usize {
    (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// One culprit among n: found, and within 2·⌈log2 n⌉ + 2 calls (spec §1.4).
    #[test]
    fn single_culprit_is_found_in_logarithmic_calls(n in 1usize..300, pick in any::<prop::sample::Index>()) {
        let candidates: Vec<u32> = (0..n as u32).collect();
        let culprit = candidates[pick.index(n)];
        let set = BTreeSet::from([culprit]);
        let mut real = 0usize;
        let r = ddmin(&candidates, |s| { real += 1; all_of(&set)(s) });
        prop_assert_eq!(assert_one_minimal(&r, all_of(&set)), vec![culprit]);
        prop_assert_eq!(r.calls(), real);
        prop_assert!(r.calls() <= 2 * ceil_log2(n) + 2, "n {} calls {}", n, r.calls());
    }

    /// Culprits that fail only together: all are found, nothing else, within 3n(n+1) + 2 calls.
    #[test]
    fn interacting_culprits_are_all_found(n in 2usize..48, picks in prop::collection::vec(any::<prop::sample::Index>(), 1..5)) {
        let candidates: Vec<u32> = (0..n as u32).map(|i| 1000 + i).collect();
        let set: BTreeSet<u32> = picks.iter().map(|p| candidates[p.index(n)]).collect();
        let r = ddmin(&candidates, all_of(&set));
        let found = assert_one_minimal(&r, all_of(&set));
        prop_assert_eq!(found, set.iter().copied().collect::<Vec<_>>());
        prop_assert!(r.calls() <= 3 * n * (n + 1) + 2);
    }

    /// Two independent causes (either group alone fails), with unresolved outcomes when one
    /// "half-configuration" element is present without its partner: the result is one whole
    /// group, fails, and is 1-minimal.
    #[test]
    fn alternative_causes_and_unresolved_runs_still_give_a_minimal_group(n in 6usize..40, a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>(), c in any::<prop::sample::Index>()) {
        let candidates: Vec<u32> = (0..n as u32).collect();
        let (x, y, z) = (a.index(n) as u32, b.index(n) as u32, c.index(n) as u32);
        let groups = [BTreeSet::from([x, y]), BTreeSet::from([z])];
        let pred = |s: &[u32]| {
            if groups.iter().any(|g| g.iter().all(|e| s.contains(e))) {
                Outcome::Fail
            } else if s.contains(&0) != s.contains(&1) {
                Outcome::Unresolved
            } else {
                Outcome::Pass
            }
        };
        let r = ddmin(&candidates, pred);
        let found: BTreeSet<u32> = assert_one_minimal(&r, pred).into_iter().collect();
        prop_assert!(groups.contains(&found), "found {:?}, groups {:?}", found, groups);
    }
}

#[test]
fn interacting_pair_x_and_y_is_found_together() {
    let candidates: Vec<EntryId> = (1..=16).map(id).collect();
    let (x, y) = (id(3), id(14));
    let r = ddmin(&candidates, |s| {
        if s.contains(&x) && s.contains(&y) {
            Outcome::Fail
        } else {
            Outcome::Pass
        }
    });
    assert_eq!(r.culprits(), &[x, y]);
    let Culprits::Minimal { indices, .. } = &r else {
        panic!("{r:?}")
    };
    assert_eq!(indices, &[2, 13]);
}

#[test]
fn predicate_failing_on_the_empty_set_blames_nobody() {
    let r = ddmin(&[1u32, 2, 3], |_| Outcome::Fail);
    assert_eq!(r, Culprits::FailsWithoutCandidates { calls: 1 });
    assert!(r.culprits().is_empty());
}

#[test]
fn predicate_that_never_fails_is_reported_with_its_full_outcome() {
    assert_eq!(
        ddmin(&[1u32, 2, 3], |_| Outcome::Pass),
        Culprits::NeverFails {
            full: Outcome::Pass,
            calls: 2
        }
    );
    let r = ddmin(&[1u32, 2, 3], |s| {
        if s.is_empty() {
            Outcome::Pass
        } else {
            Outcome::Unresolved
        }
    });
    assert_eq!(
        r,
        Culprits::NeverFails {
            full: Outcome::Unresolved,
            calls: 2
        }
    );
    // No candidates: the empty set is the full set, tested once.
    assert_eq!(
        ddmin(&[] as &[u32], |_| Outcome::Pass),
        Culprits::NeverFails {
            full: Outcome::Pass,
            calls: 1
        }
    );
}

// ---------------------------------------------------------------------------------------------
// Sign test
// ---------------------------------------------------------------------------------------------

#[test]
fn sign_test_matches_independently_computed_p_values() {
    let file: serde_json::Value = serde_json::from_str(SIGN_TEST).unwrap();
    let cases = file["cases"].as_array().unwrap();
    assert!(cases.len() >= 20);
    for c in cases {
        let pos = c["positive"].as_u64().unwrap() as u32;
        let neg = c["negative"].as_u64().unwrap() as u32;
        let num: u128 = c["num"].as_str().unwrap().parse().unwrap();
        let den: u128 = c["den"].as_str().unwrap().parse().unwrap();
        let p = sign_test(pos, neg).unwrap();
        assert_eq!(
            (p.num(), p.den()),
            (num, den),
            "{pos} positive, {neg} negative"
        );
        let approx = c["approx"].as_f64().unwrap();
        assert!(
            (p.to_f64() - approx).abs() <= 1e-12 * approx.max(1e-300),
            "{pos}/{neg}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Symmetric in the two signs, at most 1, and growing as the split evens out.
    #[test]
    fn sign_test_is_symmetric_and_monotone(n in 0u32..=126, k in 0u32..=63) {
        let k = k.min(n / 2);
        let p = sign_test(n - k, k).unwrap();
        prop_assert_eq!(p, sign_test(k, n - k).unwrap());
        prop_assert!(p <= Ratio::new(1, 1).unwrap());
        if k > 0 {
            prop_assert!(sign_test(n - k + 1, k - 1).unwrap() < p || p == Ratio::new(1, 1).unwrap());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Amputation on the scripted scenario
// ---------------------------------------------------------------------------------------------

fn scenario() -> Scenario {
    Scenario::from_json(SCENARIO).unwrap()
}

fn protocol() -> Protocol {
    Protocol {
        repeats: REPEATS,
        ..Protocol::default()
    }
}

#[test]
fn amputating_an_absent_carrier_gives_exactly_zero() {
    let s = scenario();
    let ghost = s.unused_id();
    let mut agent = ScriptedAgent;
    for seed in 0..50u64 {
        let base = agent.run(&s, &|_| true, seed).unwrap();
        let amputated = agent.run(&s, &|e| *e != ghost, seed).unwrap();
        let d = delta_action(&base, &amputated);
        assert_eq!(d.differing, 0, "seed {seed}");
        assert_eq!(d.fraction(), 0.0);
        assert!(d.scored > 0);
    }
}

#[test]
fn redundant_carrier_spreads_but_changes_nothing() {
    let s = scenario();
    let r = amputate(&mut ScriptedAgent, &s, id(1), s.unused_id(), &protocol()).unwrap();
    // Read at each of the 4 payee steps of every baseline run: it spreads.
    assert_eq!(r.carrier_reads, 4.0);
    assert!(
        r.treated.iter().all(|d| d.differing == 0 && d.scored > 0),
        "{:?}",
        r.treated
    );
    assert_eq!(r.mean_delta, 0.0);
    assert!(
        r.noise_floor > 0.0,
        "the noisy agent has a non-trivial noise floor"
    );
    assert!(r.did < 0.0);
    assert_eq!(r.verdict, Verdict::NotDistinguishableFromNoise);
}

#[test]
fn load_bearing_carrier_exceeds_the_noise_floor_significantly() {
    let s = scenario();
    let p = protocol();
    let r = amputate(&mut ScriptedAgent, &s, id(3), s.unused_id(), &p).unwrap();
    assert_eq!(r.carrier_reads, 4.0);
    assert!(
        r.mean_delta > r.noise_floor,
        "{} vs {}",
        r.mean_delta,
        r.noise_floor
    );
    assert!((r.did - (r.mean_delta - r.noise_floor)).abs() < 1e-15);
    assert_eq!(
        r.sign.positive + r.sign.negative + r.sign.ties,
        REPEATS,
        "{:?}",
        r.sign
    );
    assert_eq!(
        r.sign.p,
        sign_test(r.sign.positive, r.sign.negative).unwrap()
    );
    assert!(r.sign.p <= p.alpha, "p = {}", r.sign.p);
    assert_eq!(r.verdict, Verdict::LoadBearing);
    // Unreadable responses are counted (garble 2% per step), over 4 runs per repeat.
    assert_eq!(r.parse_failures.responses, u64::from(REPEATS) * 4 * 12);
    assert!(r.parse_failures.unparseable > 0);
}

#[test]
fn noise_free_agent_has_zero_floor_and_the_rule_stays_conservative() {
    let mut s = scenario();
    s.noise_ppm = 0;
    s.garble_ppm = 0;
    let r = amputate(&mut ScriptedAgent, &s, id(1), s.unused_id(), &protocol()).unwrap();
    assert_eq!((r.mean_delta, r.noise_floor), (0.0, 0.0));
    assert_eq!(r.sign.ties, REPEATS);
    assert_eq!(r.sign.p, Ratio::new(1, 1).unwrap());
    assert_eq!(r.verdict, Verdict::NotDistinguishableFromNoise);
    assert_eq!(r.parse_failures.unparseable, 0);
    let r = amputate(&mut ScriptedAgent, &s, id(3), s.unused_id(), &protocol()).unwrap();
    // 4 of the 12 action steps lose their only carrier and fall back to asking the user.
    assert!(r.treated.iter().all(|d| *d
        == DeltaCount {
            differing: 4,
            scored: 12
        }));
    assert_eq!(r.verdict, Verdict::LoadBearing);
}

/// A replay that ignores its seed for noise: it is not deterministic.
struct Flaky(u64);

impl ReplayAgent for Flaky {
    type Scenario = ();
    type Error = std::convert::Infallible;
    fn run(
        &mut self,
        _: &(),
        _: &dyn Fn(&EntryId) -> bool,
        _: u64,
    ) -> Result<Vec<Step>, Self::Error> {
        self.0 += 1;
        Ok(vec![Step {
            response: Response::Action(format!("a{}", self.0 % 3)),
            read: vec![],
        }])
    }
}

#[test]
fn a_replay_that_is_not_deterministic_is_refused() {
    let e = amputate(&mut Flaky(0), &(), id(1), id(2), &protocol()).unwrap_err();
    assert!(
        matches!(e, AmputationError::NotDeterministic { repeat: 0, .. }),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "replay is not deterministic: amputating an absent carrier changed 1 of 1 action steps in repeat 0"
    );
    let same = amputate(&mut ScriptedAgent, &scenario(), id(1), id(1), &protocol()).unwrap_err();
    assert_eq!(
        same.to_string(),
        "invalid protocol: the ghost carrier equals the carrier"
    );
    let zero = Protocol {
        repeats: 0,
        ..protocol()
    };
    let e = amputate(&mut ScriptedAgent, &scenario(), id(1), id(9), &zero).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid protocol: repeats must be in 1..=126"
    );
}

/// Random scenario files, some invalid: parsing never panics, and every scenario that parses
/// replays deterministically (the ghost check passes) with Δaction and rates in [0, 1].
fn scenario_json() -> impl Strategy<Value = String> {
    let memory = (0u8..6, 0usize..3, 0usize..3).prop_map(|(b, f, v)| {
        format!(
            r#"{{"id":"{}","fact":"f{f}","value":"v{v}"}}"#,
            EntryId([b; 32])
        )
    });
    let step = (0usize..4, any::<bool>(), any::<bool>()).prop_map(|(f, fallback, value)| {
        let action = if value { "act({value})" } else { "act()" };
        match (f, fallback) {
            (3, _) => format!(r#"{{"action":"{action}"}}"#),
            (f, true) => {
                format!(r#"{{"action":"{action}","needs":"f{f}","fallback":"ask(f{f})"}}"#)
            }
            (f, false) => format!(r#"{{"action":"{action}","needs":"f{f}"}}"#),
        }
    });
    (
        0u32..1_100_000,
        0u32..1_100_000,
        any::<bool>(),
        prop::collection::vec(memory, 0..5),
        prop::collection::vec(step, 0..10),
    )
        .prop_map(|(noise, garble, distractors, m, s)| {
            let d = if distractors { r#"["wait()","read()"]"# } else { "[]" };
            format!(
                r#"{{"noise_ppm":{noise},"garble_ppm":{garble},"distractors":{d},"memories":[{}],"steps":[{}]}}"#,
                m.join(","),
                s.join(",")
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn scenario_parser_never_panics(text in scenario_json(), cut in any::<prop::sample::Index>()) {
        // A truncated file is an error, never a panic.
        let end = cut.index(text.len().max(1));
        if text.is_char_boundary(end) {
            let _ = Scenario::from_json(&text[..end]);
        }
        let Ok(s) = Scenario::from_json(&text) else { return Ok(()) };
        let carrier = s.memories.first().map(|m| m.id).unwrap_or(id(9));
        let p = Protocol { repeats: 3, ..Protocol::default() };
        let r = amputate(&mut ScriptedAgent, &s, carrier, s.unused_id(), &p).unwrap();
        for d in r.treated.iter().chain(&r.control) {
            prop_assert!(d.differing <= d.scored && d.scored as usize <= s.steps.len());
        }
        prop_assert!((0.0..=1.0).contains(&r.mean_delta) && (0.0..=1.0).contains(&r.noise_floor));
        prop_assert!(r.parse_failures.unparseable <= r.parse_failures.responses);
        prop_assert_eq!(r.parse_failures.responses, 12 * s.steps.len() as u64);
    }
}
