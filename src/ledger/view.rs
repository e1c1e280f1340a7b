//! The ledger as the gate sees it: [`LineageView`] and the untrusted path behind a label.

use super::origin::Kept;
use super::{Ledger, LedgerError};
use crate::gate::{
    Ancestry, HeldText, LineageDecision, LineageView, OriginEntry, OriginNode, OriginView, Policy,
    ToolCall,
};
use crate::lineage::path::PathView;
use crate::lineage::Label;
use crate::record::{EntryId, Parent};
use crate::store::Store;
use std::sync::Arc;

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
        if self.label(id).is_none() {
            return Err(LedgerError::UnknownEntry(*id));
        }
        crate::lineage::path::untrusted_path(&Verified(self), &self.label_policy(), id)
    }
}

/// The ledger's verified rows as the path search reads them.
struct Verified<'a, S: Store>(&'a Ledger<S>);

impl<S: Store> PathView for Verified<'_, S> {
    type Error = LedgerError;

    fn label_of(&self, id: &EntryId) -> Option<Label> {
        self.0.label(id)
    }

    // The edges as `Ledger::get` reads them, kept for entries this handle verified
    // (`Ledger::edges`): same answers, same errors.
    fn parents_of(&self, id: &EntryId) -> Result<Vec<Parent>, LedgerError> {
        Ok(self.0.edges(id)?.parents.to_vec())
    }

    fn is_unknown_context(&self, id: &EntryId) -> bool {
        self.0
            .edges(id)
            .is_ok_and(|e| e.kind == crate::record::Kind::Context)
    }
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

    /// [`OriginView::origin_node`], answered for an entry this handle verified since the
    /// store's content epoch last moved from what it kept (`spec/gate.md` §3.3): edges, writer
    /// key and text kept; label, binding and forensic state read now.
    fn origin_entry(&self, id: &EntryId) -> OriginEntry {
        let label = self.label(id);
        let live = label.is_some() && !self.is_tombstoned(id) && !self.is_quarantined(id);
        let kept = match self.origin.get(id).filter(|_| label.is_some()) {
            Some(k) => k,
            None => {
                let Ok(e) = self.get(id) else {
                    return OriginEntry::from(OriginNode {
                        label,
                        live,
                        ..OriginNode::default()
                    });
                };
                let text = self
                    .content(&e)
                    .ok()
                    .flatten()
                    .map(|b| String::from_utf8_lossy(&b).into_owned());
                let readable = text.is_some();
                let k = Kept {
                    writer: e.writer(),
                    parents: e.entry().parents.iter().map(|p| p.id).collect(),
                    text: Arc::new(HeldText::new(text)),
                };
                // A text that could not be read now may be readable later: not kept.
                if readable {
                    self.origin.keep(*id, &k);
                }
                k
            }
        };
        OriginEntry {
            label,
            writer: self
                .principal(&kept.writer)
                .map(|(r, n)| (r, n.to_string())),
            parents: kept.parents,
            live,
            text: kept.text,
        }
    }

    fn origin_check_begins(&self) {
        // Content removed since (a redaction, or a rewrite of the store, by anyone) must not
        // be held as verified text: what was kept goes when the epoch moves.
        self.origin.under(
            self.store().content_epoch().ok().flatten(),
            self.effects_marker(),
        );
    }

    /// The ancestry kept for `id` under the current content epoch and effects, or the one
    /// `build` makes now, kept (`spec/gate.md` §3.3).
    fn ancestry(
        &self,
        id: &EntryId,
        build: &mut dyn FnMut() -> Option<Ancestry>,
    ) -> Option<Arc<Ancestry>> {
        if let Some(a) = self.origin.ancestry(id) {
            return Some(a);
        }
        let a = Arc::new(build()?);
        self.origin.keep_ancestry(*id, &a);
        Some(a)
    }
}

impl<S: Store> Ledger<S> {
    /// The gate's label decision for `call` under `policy`, from this ledger's labels,
    /// without the origin check (no argument values) and without the writer check of
    /// `spec/gate.md` §3.2. See [`Policy::decide`]; a decision before a tool call is
    /// [`crate::gate::decide`] (or [`Ledger::gate_values`]), which adds both.
    pub fn gate(&self, policy: &Policy, call: &ToolCall) -> LineageDecision {
        let span = crate::gate::span(call);
        let _g = span.enter();
        crate::gate::record(&span, policy.decide(call, self))
    }

    /// [`crate::gate::decide`] on this ledger: the full gate of `spec/gate.md` §3 (labels,
    /// then the origin check of every argument's value in `values` and the shared-writable
    /// writer check of §3.2).
    pub fn gate_values(
        &self,
        policy: &Policy,
        call: &ToolCall,
        values: &serde_json::Map<String, serde_json::Value>,
    ) -> LineageDecision {
        crate::gate::decide(policy, call, values, self)
    }
}
