//! M4: lineage labels (`spec/lineage.md`).
//!
//! Labels form the chain `Trusted < DerivedTrusted < DerivedUntrusted < External`. An entry's
//! label is a function of the log: its writer's role (from the keyring), its parents' labels,
//! the edge weights and the threshold τ. It is computed once, at append, in O(parents), and
//! never signed or trusted from storage.

use crate::record::{Role, Weight};
use std::fmt;

/// A trust label (paper §4.3). Ordered from most to least trusted; "worst" means maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    /// Written by a trusted principal (user, system, log, or agent) from nothing untrusted.
    Trusted,
    /// Derived, over strong edges, only from Trusted or Derived-Trusted entries.
    DerivedTrusted,
    /// Derived, over strong edges, from at least one External or Derived-Untrusted entry.
    DerivedUntrusted,
    /// Written by a tool or external principal.
    External,
}

impl Label {
    /// All labels, best first.
    pub const ALL: [Label; 4] = [
        Label::Trusted,
        Label::DerivedTrusted,
        Label::DerivedUntrusted,
        Label::External,
    ];

    /// Storage code, `0..=3` in lattice order.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The label with storage code `code`.
    pub fn from_code(code: u8) -> Option<Self> {
        Label::ALL.get(usize::from(code)).copied()
    }

    /// The label a child inherits from a parent with this label over a strong edge:
    /// Trusted and Derived-Trusted lift to Derived-Trusted; Derived-Untrusted and External
    /// lift to Derived-Untrusted (`spec/lineage.md` §3).
    pub fn lifted(self) -> Label {
        match self {
            Label::Trusted | Label::DerivedTrusted => Label::DerivedTrusted,
            Label::DerivedUntrusted | Label::External => Label::DerivedUntrusted,
        }
    }

    /// Upper-case name used in rendering: `TRUSTED`, `DERIVED_TRUSTED`, ….
    pub fn name(self) -> &'static str {
        match self {
            Label::Trusted => "TRUSTED",
            Label::DerivedTrusted => "DERIVED_TRUSTED",
            Label::DerivedUntrusted => "DERIVED_UNTRUSTED",
            Label::External => "EXTERNAL",
        }
    }

    /// Parses `trusted`, `derived_trusted`, `derived_untrusted`, `external` (any case, `-` or `_`).
    pub fn from_name(s: &str) -> Option<Self> {
        let norm = s.trim().to_ascii_uppercase().replace('-', "_");
        Label::ALL.into_iter().find(|l| l.name() == norm)
    }

    /// Whether this label is Derived-Untrusted or External.
    pub fn is_untrusted(self) -> bool {
        self >= Label::DerivedUntrusted
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a derived entry with no strong parent (every `w <= τ`) gets (`spec/lineage.md` §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum WeakRule {
    /// The paper's rule: with no strong parent the entry is Trusted.
    FailOpen,
    /// The default: with no strong parent, the worst lifted label over all parents.
    #[default]
    FailClosed,
}

impl WeakRule {
    /// `fail-open` or `fail-closed`.
    pub fn name(self) -> &'static str {
        match self {
            WeakRule::FailOpen => "fail-open",
            WeakRule::FailClosed => "fail-closed",
        }
    }

    /// Parses [`WeakRule::name`].
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "fail-open" => Some(WeakRule::FailOpen),
            "fail-closed" => Some(WeakRule::FailClosed),
            _ => None,
        }
    }
}

/// The labelling parameters of a ledger: threshold τ and the weak-parent rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LabelPolicy {
    /// τ: an edge is strong when `w > τ` (strict). Default 0.5 (500_000 millionths).
    pub tau: Weight,
    /// What an entry with parents but no strong parent gets.
    pub weak_rule: WeakRule,
}

impl Default for LabelPolicy {
    fn default() -> Self {
        LabelPolicy {
            // 500_000 <= 1_000_000.
            tau: match Weight::new(500_000) {
                Ok(w) => w,
                Err(_) => Weight::ONE,
            },
            weak_rule: WeakRule::FailClosed,
        }
    }
}

impl LabelPolicy {
    /// The label of a new entry (`spec/lineage.md` §3):
    ///
    /// 1. writer role tool or external → External;
    /// 2. no parents → Trusted;
    /// 3. else the worst [`Label::lifted`] label over parents with `w > τ`;
    /// 4. if no parent is strong: Trusted under [`WeakRule::FailOpen`], the worst lifted label
    ///    over all parents under [`WeakRule::FailClosed`].
    ///
    /// `parents` yields `(weight, parent label)`. O(parents). Does not panic.
    pub fn label(&self, writer: Role, parents: impl IntoIterator<Item = (Weight, Label)>) -> Label {
        if writer.is_untrusted() {
            return Label::External;
        }
        let mut any = false;
        let mut strong: Option<Label> = None;
        let mut all = Label::Trusted;
        for (w, l) in parents {
            any = true;
            let lifted = l.lifted();
            all = all.max(lifted);
            if w > self.tau {
                strong = Some(strong.map_or(lifted, |s| s.max(lifted)));
            }
        }
        match (any, strong, self.weak_rule) {
            (false, _, _) => Label::Trusted,
            (true, Some(s), _) => s,
            (true, None, WeakRule::FailOpen) => Label::Trusted,
            (true, None, WeakRule::FailClosed) => all,
        }
    }

    /// Whether an edge of weight `w` propagates labels: `w > τ`.
    pub fn is_strong(&self, w: Weight) -> bool {
        w > self.tau
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(m: u64) -> Weight {
        Weight::new(m).unwrap()
    }

    #[test]
    fn untrusted_writers_are_external() {
        let p = LabelPolicy::default();
        assert_eq!(p.label(Role::Tool, []), Label::External);
        assert_eq!(
            p.label(Role::External, [(w(0), Label::Trusted)]),
            Label::External
        );
        assert_eq!(p.label(Role::User, []), Label::Trusted);
    }

    /// `w > τ` exactly (`spec/lineage.md` §2): an edge of weight τ is weak. This predicate
    /// feeds the denial path ([`crate::ledger::Ledger::untrusted_path`]) and quarantine reach
    /// `strong`, so `>` must not become `>=`.
    #[test]
    fn is_strong_is_strict_at_tau() {
        for tau in [0, 1, 500_000, 999_999] {
            let p = LabelPolicy {
                tau: w(tau),
                weak_rule: WeakRule::FailClosed,
            };
            assert!(!p.is_strong(w(tau)), "w = τ = {tau} is weak");
            assert!(p.is_strong(w(tau + 1)), "w = τ + 1 is strong");
            if tau > 0 {
                assert!(!p.is_strong(w(tau - 1)), "w = τ - 1 is weak");
            }
        }
        assert!(!LabelPolicy::default().is_strong(LabelPolicy::default().tau));
    }

    #[test]
    fn weight_equal_to_tau_does_not_propagate() {
        let p = LabelPolicy {
            tau: w(500_000),
            weak_rule: WeakRule::FailOpen,
        };
        assert_eq!(
            p.label(Role::Agent, [(w(500_000), Label::External)]),
            Label::Trusted
        );
        assert_eq!(
            p.label(Role::Agent, [(w(500_001), Label::External)]),
            Label::DerivedUntrusted
        );
    }

    #[test]
    fn worst_strong_parent_wins_and_lifts() {
        let p = LabelPolicy::default();
        let parents = [
            (Weight::ONE, Label::Trusted),
            (w(900_000), Label::DerivedUntrusted),
        ];
        assert_eq!(p.label(Role::Agent, parents), Label::DerivedUntrusted);
        assert_eq!(
            p.label(Role::Agent, [(Weight::ONE, Label::Trusted)]),
            Label::DerivedTrusted
        );
        // A strong trusted parent shields nothing: a weak untrusted one is ignored.
        assert_eq!(
            p.label(
                Role::Agent,
                [(Weight::ONE, Label::Trusted), (w(1), Label::External)]
            ),
            Label::DerivedTrusted
        );
    }

    #[test]
    fn fail_closed_uses_all_parents_when_none_is_strong() {
        let closed = LabelPolicy::default();
        let open = LabelPolicy {
            weak_rule: WeakRule::FailOpen,
            ..closed
        };
        let weak = [(w(100_000), Label::External)];
        assert_eq!(closed.label(Role::Agent, weak), Label::DerivedUntrusted);
        assert_eq!(open.label(Role::Agent, weak), Label::Trusted);
    }

    #[test]
    fn names_round_trip() {
        for l in Label::ALL {
            assert_eq!(Label::from_name(l.name()), Some(l));
            assert_eq!(Label::from_code(l.code()), Some(l));
        }
        assert_eq!(
            Label::from_name("derived-untrusted"),
            Some(Label::DerivedUntrusted)
        );
        assert_eq!(Label::from_code(4), None);
    }
}
