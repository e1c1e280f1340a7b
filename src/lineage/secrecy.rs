//! Secrecy, the confidentiality axis beside the integrity label (`spec/lineage.md` §8,
//! `spec/hooks.md` §16): an entry is **secret** when it is a secret source, when it cannot be
//! verified, or when any of its parents is secret, over every recorded edge whatever its
//! weight. Parents precede their children in the log (§7), so one pass in log order computes
//! the least fixed point of that rule; it is deterministic and depends only on verified
//! entries and the policy's sources. Quarantine and tombstones do not stop an entry from
//! making its descendants secret.
//!
//! Which entries are sources is the policy's question ([`SecretSources`]); the fronts answer it
//! with the `[secrets]` table of their policy (`front::secrets::PolicySources`), the same
//! answer for their decisions and for `memlineage verify --policy`.

use crate::record::{EntryId, Role};
use std::collections::HashSet;

/// Which verified entries are secret sources (`spec/hooks.md` §16.1).
pub trait SecretSources {
    /// What secret the entry written by principal `name` of role `role`, with content `text`
    /// (verified against its signed content hash), is a source of — `the result of
    /// get_user_info`, `~/.aws/credentials` — or `None` when it is none.
    fn source(&self, role: Role, name: &str, text: &str) -> Option<String>;
}

/// The secret entries of a log, computed in log order (the least fixed point of the rule in
/// the module docs).
#[derive(Debug, Default, Clone)]
pub struct Secrecy {
    secret: HashSet<EntryId>,
    /// Secret sources found, in log order, with what they are a source of.
    pub sources: Vec<(EntryId, String)>,
    /// Entries counted secret because they could not be verified or their content read.
    pub unverifiable: u64,
}

impl Secrecy {
    /// Adds entry `id`, in log order: `source` is what [`SecretSources::source`] said of it
    /// (`None` when it is not one), `verified` whether its signature and content verified
    /// (`false` makes it secret: fail closed), `parents` its recorded parents.
    pub fn admit(
        &mut self,
        id: EntryId,
        source: Option<String>,
        verified: bool,
        parents: &[EntryId],
    ) -> bool {
        let secret = match (verified, source) {
            (false, _) => {
                self.unverifiable += 1;
                true
            }
            (true, Some(what)) => {
                self.sources.push((id, what));
                true
            }
            (true, None) => parents.iter().any(|p| self.secret.contains(p)),
        };
        if secret {
            self.secret.insert(id);
        }
        secret
    }

    /// Whether `id` was admitted as secret.
    pub fn is_secret(&self, id: &EntryId) -> bool {
        self.secret.contains(id)
    }

    /// How many admitted entries are secret.
    pub fn count(&self) -> u64 {
        self.secret.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> EntryId {
        EntryId([n; 32])
    }

    #[test]
    fn secrecy_flows_down_every_edge_and_unverifiable_entries_are_secret() {
        let mut s = Secrecy::default();
        assert!(!s.admit(id(1), None, true, &[]));
        assert!(s.admit(id(2), Some("~/.aws/credentials".into()), true, &[id(1)]));
        assert!(!s.admit(id(3), None, true, &[id(1)]));
        assert!(s.admit(id(4), None, true, &[id(3), id(2)]), "any parent");
        assert!(s.admit(id(5), None, true, &[id(4)]), "transitively");
        assert!(
            s.admit(id(6), None, false, &[]),
            "unverifiable: fail closed"
        );
        assert!(s.admit(id(7), None, true, &[id(6)]));
        assert!(!s.admit(id(8), None, true, &[id(3)]));
        assert_eq!(s.count(), 5);
        assert_eq!(s.unverifiable, 1);
        assert_eq!(s.sources, vec![(id(2), "~/.aws/credentials".to_string())]);
        assert!(s.is_secret(&id(5)) && !s.is_secret(&id(8)));
    }
}
