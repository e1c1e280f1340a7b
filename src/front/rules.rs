//! The rules a [`Front`] compiles from its tool-call [`Policy`] (the secrecy rule,
//! `spec/hooks.md` §16, and the gated writes, §17.3), and how a front takes a new policy.

use super::{matching, secrets, sinks, sources, Front, Keys};
use crate::gate::Policy;
use crate::store::Store;

/// The secrecy rule and the gated writes of `policy`, compiled for this process's home
/// directory (`spec/hooks.md` §16, §17.3).
pub(super) fn compiled(
    policy: &Policy,
) -> (
    std::sync::Arc<secrets::SecretRules>,
    std::sync::Arc<sinks::writes::WriteRules>,
) {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    (
        std::sync::Arc::new(secrets::SecretRules::new(&policy.secrets, home.as_deref())),
        std::sync::Arc::new(sinks::writes::WriteRules::new(
            &policy.sinks,
            home.as_deref(),
        )),
    )
}

impl<S: Store, K: Keys> Front<S, K> {
    /// Decides with `policy` from now on, as a front made with it would: the rules compiled
    /// from the policy are compiled again, and what this front kept of sessions and entries
    /// under the old one (indexes, secrecy judgements, memos, which are kept under this
    /// front's index) is dropped and found again under the new one. The ledger, keys, agent,
    /// project, protected resources and [`Front::require_start`] stay. A long-lived front
    /// (the MCP server) calls it when its policy file changes (`spec/mcp.md` §1).
    pub fn set_policy(&mut self, policy: Policy) {
        (self.secret_rules, self.write_rules) = compiled(&policy);
        self.policy = policy;
        self.haystacks = matching::ReadIndex::new();
        self.secret_nodes.clear();
        self.secret_nodes_cwd = None;
        self.facts = sources::EntryFacts::default();
    }
}
