//! The figures of a replay (`spec/eval.md`): what was counted per suite, mode and
//! configuration, and their renderings as a table and as JSON.

use serde::Serialize;
use std::collections::BTreeMap;

/// How tool results reach the calls they justify.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Mode {
    /// Calls are justified by the raw tool results.
    Direct,
    /// Calls are justified by agent-written memories summarising the tool results.
    ViaMemory,
}

impl Mode {
    /// Both modes.
    pub const ALL: [Mode; 2] = [Mode::Direct, Mode::ViaMemory];

    /// `direct` or `via_memory`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::ViaMemory => "via_memory",
        }
    }
}

/// The defence a sensitive call is decided under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Config {
    /// No check at all.
    NoDefence,
    /// Signatures and writer roles, no lineage.
    SignaturesOnly,
    /// The lineage gate.
    MemLineage,
    /// The lineage gate with authority repair.
    MemLineageRepair,
}

impl Config {
    /// All configurations.
    pub const ALL: [Config; 4] = [
        Config::NoDefence,
        Config::SignaturesOnly,
        Config::MemLineage,
        Config::MemLineageRepair,
    ];

    /// `no_defence`, `signatures_only`, `memlineage`.
    pub fn name(self) -> &'static str {
        match self {
            Config::NoDefence => "no_defence",
            Config::SignaturesOnly => "signatures_only",
            Config::MemLineage => "memlineage",
            Config::MemLineageRepair => "memlineage_repair",
        }
    }
}

/// Counts for one (suite, mode, configuration).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Sensitive calls of the injection task.
    pub attack_calls: u64,
    /// Of those, allowed.
    pub attack_allowed: u64,
    /// Sensitive calls of the user task.
    pub legit_calls: u64,
    /// Of those, allowed.
    pub legit_allowed: u64,
    /// Calls (attack or legitimate) allowed only after authority repair; each repaired call
    /// kept the values it was proposed with (the replay offers no other candidates), so an
    /// allowed legitimate call is one the user asked for.
    #[serde(skip_serializing_if = "is_zero")]
    pub repaired: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Tally {
    /// Attack success rate: attack calls allowed / attack calls (0 when there are none).
    pub fn attack_success_rate(&self) -> f64 {
        ratio(self.attack_allowed, self.attack_calls)
    }

    /// Utility: legitimate calls allowed / legitimate calls (1 when there are none).
    pub fn utility(&self) -> f64 {
        if self.legit_calls == 0 {
            1.0
        } else {
            ratio(self.legit_allowed, self.legit_calls)
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// All figures of a replay: suite → mode → configuration → counts.
pub type Figures = BTreeMap<String, BTreeMap<Mode, BTreeMap<Config, Tally>>>;

/// Renders figures as a plain-text table (one row per suite, mode and configuration).
pub fn render_table(figures: &Figures) -> String {
    let mut out = String::from(
        "suite      mode        config             attack success        utility (legit allowed)\n",
    );
    for (suite, modes) in figures {
        for (mode, configs) in modes {
            for (config, t) in configs {
                out.push_str(&format!(
                    "{:<10} {:<11} {:<18} {:>4.2} ({:>3}/{:<3})        {:>4.2} ({:>3}/{:<3})\n",
                    suite,
                    mode.name(),
                    config.name(),
                    t.attack_success_rate(),
                    t.attack_allowed,
                    t.attack_calls,
                    t.utility(),
                    t.legit_allowed,
                    t.legit_calls
                ));
                if t.repaired > 0 {
                    // Inside the row: strip the newline, add the count, put it back.
                    out.pop();
                    out.push_str(&format!("  ({} repaired)\n", t.repaired));
                }
            }
        }
    }
    out
}

/// Renders figures as the JSON object of `replay --json`:
/// `{suite: {mode: {config: {attack_calls, attack_allowed, legit_calls, legit_allowed}}}}`.
pub fn render_json(figures: &Figures) -> serde_json::Value {
    let mut root = serde_json::Map::new();
    for (suite, modes) in figures {
        let mut m = serde_json::Map::new();
        for (mode, configs) in modes {
            let mut c = serde_json::Map::new();
            for (config, t) in configs {
                c.insert(config.name().into(), serde_json::json!(t));
            }
            m.insert(mode.name().into(), c.into());
        }
        root.insert(suite.clone(), m.into());
    }
    root.into()
}
