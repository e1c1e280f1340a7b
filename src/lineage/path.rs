//! The explanation path behind an untrusted label (`spec/lineage.md` §6): the shortest path,
//! over edges that propagate labels, from the External entry that makes an entry untrusted.
//!
//! One search for every reader of a log: a ledger answers it from its verified rows
//! (`Ledger::untrusted_path`), an offline label proof from the entries it carries
//! ([`crate::lineage::label_proof`]). The path is explanation only: no decision depends on it.

use crate::lineage::{Label, LabelPolicy, WeakRule};
use crate::record::{EntryId, Parent};
use std::collections::{HashMap, HashSet, VecDeque};

/// What the search reads about the entries of a log.
pub trait PathView {
    /// Why an entry's parents could not be read.
    type Error;

    /// The label of `id`, `None` when it is not in the log.
    fn label_of(&self, id: &EntryId) -> Option<Label>;

    /// The signed parents of `id`.
    ///
    /// # Errors
    /// When the entry cannot be read.
    fn parents_of(&self, id: &EntryId) -> Result<Vec<Parent>, Self::Error>;

    /// Whether `id` is an External `context` entry: the stand-in a front gives a write whose
    /// context it does not know (`spec/lineage.md` §4.2). A source that says more is
    /// preferred to it.
    fn is_unknown_context(&self, id: &EntryId) -> bool;
}

/// The parents of an entry whose labels reach it under `policy`: the strong ones (`w > τ`);
/// when there is none, every parent under fail-closed and none under fail-open
/// (`spec/lineage.md` §6). In the order given (ascending id, as signed).
pub fn propagating(policy: &LabelPolicy, parents: &[Parent]) -> Vec<EntryId> {
    let strong: Vec<EntryId> = parents
        .iter()
        .filter(|p| policy.is_strong(p.weight))
        .map(|p| p.id)
        .collect();
    match (strong.is_empty(), policy.weak_rule) {
        (false, _) | (true, WeakRule::FailOpen) => strong,
        (true, WeakRule::FailClosed) => parents.iter().map(|p| p.id).collect(),
    }
}

/// The shortest lineage path to `id` from the External entry that makes it untrusted
/// (source first, `id` last), following propagating edges ([`propagating`]) between untrusted
/// entries, breadth-first with parents in ascending id order (first found wins). An External
/// unknown-context entry is taken only when no other External source is found. `[id]` when
/// `id` is itself External or no source is found; empty when `id` is not untrusted (or not in
/// the log).
///
/// # Errors
/// The first error of [`PathView::parents_of`].
pub fn untrusted_path<V: PathView>(
    view: &V,
    policy: &LabelPolicy,
    id: &EntryId,
) -> Result<Vec<EntryId>, V::Error> {
    if !view.label_of(id).is_some_and(Label::is_untrusted) {
        return Ok(Vec::new());
    }
    let mut prev: HashMap<EntryId, EntryId> = HashMap::new();
    let mut seen: HashSet<EntryId> = HashSet::from([*id]);
    let mut queue = VecDeque::from([*id]);
    let mut unknown: Option<EntryId> = None;
    while let Some(cur) = queue.pop_front() {
        if view.label_of(&cur) == Some(Label::External) {
            if !view.is_unknown_context(&cur) {
                return Ok(path_from(&prev, cur));
            }
            unknown.get_or_insert(cur);
            continue;
        }
        for p in propagating(policy, &view.parents_of(&cur)?) {
            if view.label_of(&p).is_some_and(Label::is_untrusted) && seen.insert(p) {
                prev.insert(p, cur);
                queue.push_back(p);
            }
        }
    }
    Ok(unknown.map_or_else(|| vec![*id], |u| path_from(&prev, u)))
}

/// The path from `source` along `prev` (child of each hop) to where the search started.
fn path_from(prev: &HashMap<EntryId, EntryId>, source: EntryId) -> Vec<EntryId> {
    let mut path = vec![source];
    let mut at = source;
    while let Some(p) = prev.get(&at) {
        path.push(*p);
        at = *p;
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Weight;

    /// A log in memory: id byte → (label, parents, unknown context).
    struct Log(HashMap<EntryId, (Label, Vec<Parent>, bool)>);

    impl PathView for Log {
        type Error = ();
        fn label_of(&self, id: &EntryId) -> Option<Label> {
            self.0.get(id).map(|e| e.0)
        }
        fn parents_of(&self, id: &EntryId) -> Result<Vec<Parent>, ()> {
            self.0.get(id).map(|e| e.1.clone()).ok_or(())
        }
        fn is_unknown_context(&self, id: &EntryId) -> bool {
            self.0.get(id).is_some_and(|e| e.2)
        }
    }

    fn id(n: u8) -> EntryId {
        EntryId([n; 32])
    }

    fn p(n: u8, w: u64) -> Parent {
        Parent {
            id: id(n),
            weight: Weight::new(w).unwrap(),
        }
    }

    #[test]
    fn shortest_path_over_propagating_edges_prefers_a_known_source() {
        use Label::*;
        let log = Log(HashMap::from([
            (id(1), (External, vec![], true)),
            (id(2), (External, vec![], false)),
            (id(3), (DerivedUntrusted, vec![p(2, 1_000_000)], false)),
            (id(4), (DerivedTrusted, vec![], false)),
            // Strong edges to the unknown context and a trusted parent, a weak one to 3.
            (
                id(5),
                (
                    DerivedUntrusted,
                    vec![p(1, 1_000_000), p(3, 1_000_000), p(4, 100)],
                    false,
                ),
            ),
        ]));
        let policy = LabelPolicy::default();
        assert_eq!(
            untrusted_path(&log, &policy, &id(5)),
            Ok(vec![id(2), id(3), id(5)])
        );
        assert_eq!(untrusted_path(&log, &policy, &id(2)), Ok(vec![id(2)]));
        assert_eq!(untrusted_path(&log, &policy, &id(4)), Ok(vec![]));
        assert_eq!(untrusted_path(&log, &policy, &id(9)), Ok(vec![]));
        // Only the unknown context: it is the source.
        let mut only = Log(HashMap::from([
            (id(1), (External, vec![], true)),
            (id(5), (DerivedUntrusted, vec![p(1, 1_000_000)], false)),
        ]));
        assert_eq!(
            untrusted_path(&only, &policy, &id(5)),
            Ok(vec![id(1), id(5)])
        );
        // No External source reachable: the path is the entry alone.
        only.0
            .insert(id(6), (DerivedUntrusted, vec![p(7, 1_000_000)], false));
        only.0
            .insert(id(7), (DerivedUntrusted, vec![p(8, 1_000_000)], false));
        assert_eq!(untrusted_path(&only, &policy, &id(6)), Ok(vec![id(6)]));
    }

    #[test]
    fn weak_edges_propagate_only_without_a_strong_one_under_fail_closed() {
        let closed = LabelPolicy::default();
        let open = LabelPolicy {
            weak_rule: WeakRule::FailOpen,
            ..closed
        };
        let weak = [p(1, 500_000), p(2, 0)];
        assert_eq!(propagating(&closed, &weak), vec![id(1), id(2)]);
        assert_eq!(propagating(&open, &weak), vec![]);
        let mixed = [p(1, 500_001), p(2, 0)];
        assert_eq!(propagating(&closed, &mixed), vec![id(1)]);
        assert_eq!(propagating(&open, &mixed), vec![id(1)]);
    }
}
