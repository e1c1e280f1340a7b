//! A scripted, seeded agent for tests and demos (`spec/counterfactual.md` §3).
//!
//! A [`Scenario`] lists memories (each carrying one value of a named fact) and the steps of a
//! task. At a step that needs a fact, the agent reads the first available memory carrying it,
//! in scenario order, and acts on its value; when none is available it takes the step's
//! fallback action (for example asking the user). Noise is seeded: at each step the agent
//! draws three numbers from SplitMix64 whatever happens, so that two runs under the same seed
//! see the same noise; with probability `noise_ppm / 10^6` it acts on a distractor instead,
//! and with probability `garble_ppm / 10^6` its response is unreadable.

use super::{ReplayAgent, Response, Step};
use crate::record::EntryId;
use std::convert::Infallible;

/// One million: probabilities are given in parts per million.
const PPM: u64 = 1_000_000;

/// A memory entry of a scenario: the carrier `id` holds `value` for `fact`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Memory {
    /// The entry id (the carrier that amputation removes).
    pub id: EntryId,
    /// The fact this memory carries, e.g. `landlord_iban`.
    pub fact: String,
    /// Its value, substituted for `{value}` in the action.
    pub value: String,
}

/// One step of the scripted task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptStep {
    /// Action text; `{value}` is replaced by the value read for `needs`.
    pub action: String,
    /// The fact this step needs, if any.
    pub needs: Option<String>,
    /// Action when no available memory carries `needs` (required when `needs` is set).
    pub fallback: Option<String>,
}

/// A scripted-agent scenario, parsed and checked by [`Scenario::from_json`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// Memories in retrieval rank order.
    pub memories: Vec<Memory>,
    /// The task's steps.
    pub steps: Vec<ScriptStep>,
    /// Probability per step of acting on a distractor, in millionths (0..=1,000,000).
    pub noise_ppm: u32,
    /// Probability per step of an unreadable response, in millionths (0..=1,000,000).
    pub garble_ppm: u32,
    /// Actions noise picks from.
    pub distractors: Vec<String>,
}

/// Why a scenario file was rejected. Untrusted input can trigger every variant.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// Not JSON of the scenario shape (`spec/counterfactual.md` §3.1).
    #[error("scenario is not valid JSON of the expected shape: {0}")]
    Json(#[from] serde_json::Error),
    /// A memory id is not 64 hex digits.
    #[error("memory {index}: id is not 64 hex digits")]
    BadId {
        /// Position in `memories`.
        index: usize,
    },
    /// Two memories share an id.
    #[error("memory {index}: duplicate id")]
    DuplicateId {
        /// Position in `memories` of the second occurrence.
        index: usize,
    },
    /// A step needs a fact but has no fallback, or uses `{value}` without needing a fact.
    #[error("step {index}: a step with \"needs\" requires \"fallback\", and \"{{value}}\" requires \"needs\"")]
    BadStep {
        /// Position in `steps`.
        index: usize,
    },
    /// A probability above 1,000,000 ppm.
    #[error("{field} is {got} ppm, more than 1000000")]
    Probability {
        /// `noise_ppm` or `garble_ppm`.
        field: &'static str,
        /// The value given.
        got: u32,
    },
    /// `noise_ppm > 0` with no distractors to pick from.
    #[error("noise_ppm > 0 needs at least one distractor")]
    NoDistractors,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    #[allow(dead_code)]
    #[serde(default)]
    description: String,
    #[serde(default)]
    noise_ppm: u32,
    #[serde(default)]
    garble_ppm: u32,
    #[serde(default)]
    distractors: Vec<String>,
    memories: Vec<MemoryFile>,
    steps: Vec<StepFile>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryFile {
    id: String,
    fact: String,
    value: String,
    #[allow(dead_code)]
    #[serde(default)]
    note: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StepFile {
    action: String,
    needs: Option<String>,
    fallback: Option<String>,
}

impl Scenario {
    /// Parses and checks a scenario file (`spec/counterfactual.md` §3.1).
    ///
    /// # Errors
    /// [`ScenarioError`], naming the offending memory or step. Does not panic.
    pub fn from_json(text: &str) -> Result<Self, ScenarioError> {
        let f: ScenarioFile = serde_json::from_str(text)?;
        for (field, got) in [("noise_ppm", f.noise_ppm), ("garble_ppm", f.garble_ppm)] {
            if u64::from(got) > PPM {
                return Err(ScenarioError::Probability { field, got });
            }
        }
        if f.noise_ppm > 0 && f.distractors.is_empty() {
            return Err(ScenarioError::NoDistractors);
        }
        let mut memories: Vec<Memory> = Vec::with_capacity(f.memories.len());
        for (index, m) in f.memories.into_iter().enumerate() {
            let id = EntryId::from_hex(&m.id).map_err(|_| ScenarioError::BadId { index })?;
            if memories.iter().any(|x| x.id == id) {
                return Err(ScenarioError::DuplicateId { index });
            }
            memories.push(Memory {
                id,
                fact: m.fact,
                value: m.value,
            });
        }
        let mut steps = Vec::with_capacity(f.steps.len());
        for (index, s) in f.steps.into_iter().enumerate() {
            let uses_value = s.action.contains("{value}");
            if (s.needs.is_some() && s.fallback.is_none()) || (uses_value && s.needs.is_none()) {
                return Err(ScenarioError::BadStep { index });
            }
            steps.push(ScriptStep {
                action: s.action,
                needs: s.needs,
                fallback: s.fallback,
            });
        }
        Ok(Scenario {
            memories,
            steps,
            noise_ppm: f.noise_ppm,
            garble_ppm: f.garble_ppm,
            distractors: f.distractors,
        })
    }

    /// An id no memory of the scenario has: the largest 256-bit value not in use (counting
    /// down from `ff…ff`). The default ghost carrier for the negative control.
    pub fn unused_id(&self) -> EntryId {
        let mut id = [0xffu8; 32];
        while self.memories.iter().any(|m| m.id.0 == id) {
            // Big-endian decrement; cannot wrap, since there are fewer memories than ids.
            for b in id.iter_mut().rev() {
                let (v, borrow) = b.overflowing_sub(1);
                *b = v;
                if !borrow {
                    break;
                }
            }
        }
        EntryId(id)
    }
}

/// The scripted agent. Deterministic: equal seeds and equal availability of the memories
/// read give equal runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct ScriptedAgent;

impl ReplayAgent for ScriptedAgent {
    type Scenario = Scenario;
    type Error = Infallible;

    fn run(
        &mut self,
        scenario: &Scenario,
        available: &dyn Fn(&EntryId) -> bool,
        seed: u64,
    ) -> Result<Vec<Step>, Infallible> {
        let mut rng = SplitMix64(seed);
        let mut steps = Vec::with_capacity(scenario.steps.len());
        for (j, s) in scenario.steps.iter().enumerate() {
            // Three draws per step, always, so noise does not depend on what was read.
            let (r_noise, r_pick, r_garble) = (rng.next(), rng.next(), rng.next());
            let mut read = Vec::new();
            let intended = match &s.needs {
                None => s.action.clone(),
                Some(fact) => {
                    let found = scenario
                        .memories
                        .iter()
                        .find(|m| &m.fact == fact && available(&m.id));
                    match found {
                        Some(m) => {
                            read.push(m.id);
                            s.action.replace("{value}", &m.value)
                        }
                        None => s.fallback.clone().unwrap_or_default(),
                    }
                }
            };
            let response = if r_garble % PPM < u64::from(scenario.garble_ppm) {
                Response::Unparseable(format!("step {j}: <no decision in this response>"))
            } else if r_noise % PPM < u64::from(scenario.noise_ppm)
                && !scenario.distractors.is_empty()
            {
                let k = (r_pick % scenario.distractors.len() as u64) as usize;
                Response::Action(scenario.distractors[k].clone())
            } else {
                Response::Action(intended)
            };
            steps.push(Step { response, read });
        }
        Ok(steps)
    }
}

/// SplitMix64 (G. L. Steele, D. Lea, C. H. Flood, "Fast Splittable Pseudorandom Number
/// Generators", OOPSLA 2014; constants as in S. Vigna's reference `splitmix64.c`,
/// <https://prng.di.unimi.it/splitmix64.c>). Kept here rather than taken from a crate so that
/// the scripted runs, and the figures in the spec, never change with a dependency upgrade.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_known_answers() {
        // Published first outputs for seed 1234567 (e.g. the test of Java's SplittableRandom
        // ports); also reproduced by the reference C code.
        let mut r = SplitMix64(1234567);
        let got: Vec<u64> = (0..5).map(|_| r.next()).collect();
        assert_eq!(
            got,
            [
                6457827717110365317,
                3203168211198807973,
                9817491932198370423,
                4593380528125082431,
                16408922859458223821
            ]
        );
    }

    #[test]
    fn scenario_errors_name_the_offender() {
        let bad = [
            (r#"{"memories":[{"id":"zz","fact":"f","value":"v"}],"steps":[]}"#, "memory 0: id is not 64 hex digits"),
            (r#"{"memories":[],"steps":[{"action":"a {value}"}]}"#, "step 0: a step with \"needs\" requires \"fallback\", and \"{value}\" requires \"needs\""),
            (r#"{"noise_ppm":1000001,"memories":[],"steps":[]}"#, "noise_ppm is 1000001 ppm, more than 1000000"),
            (r#"{"noise_ppm":5,"memories":[],"steps":[]}"#, "noise_ppm > 0 needs at least one distractor"),
        ];
        for (text, want) in bad {
            let e = Scenario::from_json(text).unwrap_err();
            assert_eq!(e.to_string(), want);
        }
        let id = "11".repeat(32);
        let dup = format!(
            r#"{{"memories":[{{"id":"{id}","fact":"f","value":"v"}},{{"id":"{id}","fact":"g","value":"w"}}],"steps":[]}}"#
        );
        assert_eq!(
            Scenario::from_json(&dup).unwrap_err().to_string(),
            "memory 1: duplicate id"
        );
        assert!(matches!(
            Scenario::from_json("{"),
            Err(ScenarioError::Json(_))
        ));
    }

    #[test]
    fn unused_id_counts_down_past_taken_ids() {
        let mk = |b: [u8; 32]| Memory {
            id: EntryId(b),
            fact: "f".into(),
            value: "v".into(),
        };
        let mut top = [0xffu8; 32];
        let s = Scenario {
            memories: vec![mk(top)],
            steps: vec![],
            noise_ppm: 0,
            garble_ppm: 0,
            distractors: vec![],
        };
        top[31] = 0xfe;
        assert_eq!(s.unused_id(), EntryId(top));
    }
}
