//! The gate's decision on a call a front checks (`spec/gate.md` §3): on the entries found and
//! cited for each argument, and the origin check (§3.1) on each value an argument is matched
//! by (`spec/hooks.md` §4.5), not only on the argument's own value.

use super::{Front, Keys};
use crate::gate::{LineageDecision, ToolCall};
use crate::store::Store;
use serde_json::{Map, Value};

impl<S: Store, K: Keys> Front<S, K> {
    /// The gate on `call` (the sources found and the entries cited) with the arguments'
    /// values `args`; when it allows and entries were `cited`, the gate on `found` (the
    /// sources found alone: a citation can make a decision stricter, never looser); when that
    /// allows too, the origin check on each of `matched` — per argument, the values it is
    /// matched by (the specific tokens and identifiers of its strings, what a sink adds) —
    /// other than the argument's own value, each as the argument's value against the same
    /// justifying entries (with and without the cited ones). So a token that the front found
    /// in a memory is looked for in the memory's ancestry over every edge as the whole value
    /// is: a URL inside a composed subject, or an IBAN with a name beside it, copied from a
    /// page the memory cites over a weak edge, is refused as the bare IBAN is (attack review
    /// 39). Each costs an origin check (`spec/gate.md` §3.3: answered from what the handle
    /// kept); the label decision is the same for each and was made.
    pub(super) fn gate_decision(
        &self,
        call: &ToolCall,
        found: &ToolCall,
        args: &Map<String, Value>,
        cited: bool,
        matched: &[(String, Vec<Value>)],
    ) -> LineageDecision {
        let decision = match self.ledger.gate_values(&self.policy, call, args) {
            LineageDecision::Allow if cited => self.ledger.gate_values(&self.policy, found, args),
            d => d,
        };
        if !matches!(decision, LineageDecision::Allow) {
            return decision;
        }
        // With the cited entries and, when there are any, without them: a cited entry with
        // authority must not let a token through that the sources found refuse.
        let calls: &[&ToolCall] = if cited { &[call, found] } else { &[call] };
        for (param, values) in matched {
            for c in calls {
                let Some((_, ids)) = c.args.iter().find(|(p, _)| p == param) else {
                    continue;
                };
                let one = ToolCall {
                    tool: c.tool.clone(),
                    sensitive: c.sensitive,
                    args: vec![(param.clone(), ids.clone())],
                };
                for v in values.iter().filter(|v| args.get(param) != Some(*v)) {
                    let value = Map::from_iter([(param.clone(), v.clone())]);
                    let d = self.ledger.gate_values(&self.policy, &one, &value);
                    if !matches!(d, LineageDecision::Allow) {
                        return d;
                    }
                }
            }
        }
        LineageDecision::Allow
    }
}
