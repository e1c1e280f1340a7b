//! The ledger as the gate sees it: [`LineageView`] and the untrusted path behind a label.

use super::{Ledger, LedgerError};
use crate::gate::{Decision, LineageView, OriginNode, OriginView, Policy, ToolCall};
use crate::lineage::{Label, WeakRule};
use crate::record::EntryId;
use crate::store::Store;
use std::collections::{HashMap, HashSet, VecDeque};

impl<S: Store> Ledger<S> {
    /// The shortest lineage path to `id` from the External entry that makes it untrusted
    /// (source first, `id` last),
    /// following edges that propagate labels (strong edges; under the fail-closed rule, weak
    /// edges of an entry with no strong parent). `[id]` when `id` is itself External; empty when
    /// `id` is not untrusted. Ties: parents are explored in ascending id order, first found wins.
    ///
    /// # Errors
    /// Store and decode errors.
    pub fn untrusted_path(&self, id: &EntryId) -> Result<Vec<EntryId>, LedgerError> {
        match self.label(id) {
            None => return Err(LedgerError::UnknownEntry(*id)),
            Some(l) if !l.is_untrusted() => return Ok(Vec::new()),
            _ => {}
        }
        let mut prev: HashMap<EntryId, EntryId> = HashMap::new();
        let mut seen: HashSet<EntryId> = HashSet::from([*id]);
        let mut queue = VecDeque::from([*id]);
        // An External context entry says only "this write's context is unknown" (a front's
        // untied write, `spec/lineage.md` §4.2): a source that says more is preferred.
        let mut unknown: Option<EntryId> = None;
        while let Some(cur) = queue.pop_front() {
            if self.label(&cur) == Some(Label::External) {
                if !self.is_unknown_context(&cur) {
                    return Ok(path_from(&prev, cur));
                }
                unknown.get_or_insert(cur);
                continue;
            }
            for p in self.propagating_parents(&cur)? {
                if self.label(&p).is_some_and(Label::is_untrusted) && seen.insert(p) {
                    prev.insert(p, cur);
                    queue.push_back(p);
                }
            }
        }
        Ok(unknown.map_or_else(|| vec![*id], |u| path_from(&prev, u)))
    }

    /// Whether `id` is an External context entry: the stand-in a front gives a write whose
    /// context it does not know.
    fn is_unknown_context(&self, id: &EntryId) -> bool {
        self.get(id)
            .is_ok_and(|e| e.entry().kind == crate::record::Kind::Context)
    }

    /// Parents of `id` whose labels reach it under the ledger's policy.
    fn propagating_parents(&self, id: &EntryId) -> Result<Vec<EntryId>, LedgerError> {
        let e = self.get(id)?;
        let parents = &e.entry().parents;
        let strong: Vec<EntryId> = parents
            .iter()
            .filter(|p| self.policy().is_strong(p.weight))
            .map(|p| p.id)
            .collect();
        Ok(match (strong.is_empty(), self.policy().weak_rule) {
            (false, _) | (true, WeakRule::FailOpen) => strong,
            (true, WeakRule::FailClosed) => parents.iter().map(|p| p.id).collect(),
        })
    }
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

impl<S: Store> LineageView for Ledger<S> {
    fn label_of(&self, id: &EntryId) -> Option<Label> {
        self.label(id)
    }

    fn tombstoned(&self, id: &EntryId) -> bool {
        self.is_tombstoned(id)
    }

    fn path_to_source(&self, id: &EntryId) -> Vec<EntryId> {
        // A path is explanation only; the decision never depends on it.
        self.untrusted_path(id).unwrap_or_default()
    }

    fn quarantined(&self, id: &EntryId) -> bool {
        self.is_quarantined(id)
    }

    fn principal_of(&self, id: &EntryId) -> Option<String> {
        let e = self.get(id).ok()?;
        self.principal(&e.writer())
            .map(|(_, name)| name.to_string())
    }

    fn role_of(&self, id: &EntryId) -> Option<crate::record::Role> {
        let e = self.get(id).ok()?;
        self.principal(&e.writer()).map(|(role, _)| role)
    }
}

impl<S: Store> OriginView for Ledger<S> {
    fn origin_node(&self, id: &EntryId) -> OriginNode {
        let label = self.label(id);
        let live = label.is_some() && !self.is_tombstoned(id) && !self.is_quarantined(id);
        // What does not verify is reported absent: the origin check counts it as External
        // and as holding every value (`spec/gate.md` §3.1, fail closed).
        let Ok(e) = self.get(id) else {
            return OriginNode {
                label,
                live,
                ..OriginNode::default()
            };
        };
        OriginNode {
            label,
            writer: self.principal(&e.writer()).map(|(r, n)| (r, n.to_string())),
            text: self
                .content(&e)
                .ok()
                .flatten()
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
            parents: e.entry().parents.iter().map(|p| p.id).collect(),
            live,
        }
    }
}

impl<S: Store> Ledger<S> {
    /// M6: the gate's label decision for `call` under `policy`, from this ledger's labels,
    /// without the origin check (no argument values). See [`Policy::decide`]; callers that
    /// have the values use [`Ledger::gate_values`].
    pub fn gate(&self, policy: &Policy, call: &ToolCall) -> Decision {
        let span = crate::gate::span(call);
        let _g = span.enter();
        crate::gate::record(&span, policy.decide(call, self))
    }

    /// The full gate (`spec/gate.md` §3): labels, then the origin check of every argument's
    /// value in `values` (parameter name → the JSON value proposed) over every recorded edge
    /// of its justification, and the shared-writable writer check of §3.2. The one decision
    /// the library, the hooks, the MCP server, the eval and the replay all use. See
    /// [`Policy::decide_with_origin`].
    pub fn gate_values(
        &self,
        policy: &Policy,
        call: &ToolCall,
        values: &serde_json::Map<String, serde_json::Value>,
    ) -> Decision {
        let span = crate::gate::span(call);
        let _g = span.enter();
        crate::gate::record(&span, policy.decide_with_origin(call, values, self))
    }
}
