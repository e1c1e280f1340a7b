//! The verdict of `ledger_gate_check` (`spec/mcp.md` §2.3): the cited entries checked and the
//! gate's decision turned into the tool's result.

use crate::front::Keys;
use crate::store::Store;

use super::limits::msg;
use super::tools::GateResult;
use crate::front::{Front, Refusal, Verdict};
use crate::gate::{Decision, Denial, ToolCall};
use crate::ledger::retrieve::Outcome;
use crate::record::EntryId;
use std::collections::BTreeMap;

/// The gate's verdict on the entries the caller cited: each must verify (signature, inclusion
/// under the signed checkpoint) and pass the gate as a justification of its parameter.
pub(super) fn cited_verdict<S: Store, K: Keys>(
    front: &mut Front<S, K>,
    tool: &str,
    cited: &[(String, Vec<EntryId>)],
) -> Result<Verdict, String> {
    if cited.is_empty() {
        return Ok(Verdict::Allow);
    }
    let ids: Vec<EntryId> = cited
        .iter()
        .flat_map(|(_, ids)| ids.iter().copied())
        .collect();
    for o in front.ledger_mut().retrieve(&ids).map_err(msg)? {
        if let Outcome::Rejected(id, e) = o {
            return Ok(Verdict::Deny(Refusal::Unreadable(format!(
                "{tool}: cited entry {} cannot be verified: {}",
                id.short(),
                msg(e)
            ))));
        }
    }
    let call = ToolCall {
        tool: tool.to_string(),
        sensitive: true,
        args: cited.to_vec(),
    };
    let policy = front.policy().clone();
    // No values here (cited entries only): the shared-writable writer check of
    // `spec/gate.md` §3.2 still applies; `Front::check` runs the origin check on the values.
    Ok(
        match front
            .ledger()
            .gate_values(&policy, &call, &serde_json::Map::new())
        {
            Decision::Allow => Verdict::Allow,
            Decision::Deny(d) => Verdict::Deny(Refusal::Gate(d)),
        },
    )
}

pub(super) fn gate_result(
    verdict: Verdict,
    sensitive: bool,
    justifications: BTreeMap<String, Vec<String>>,
) -> GateResult {
    let mut out = GateResult {
        decision: match verdict {
            Verdict::Allow => "allow",
            Verdict::Ask(_) => "ask",
            Verdict::Deny(_) => "deny",
        }
        .into(),
        sensitive,
        reason: None,
        param: None,
        entry: None,
        path: Vec::new(),
        justifications,
    };
    // A stated value that untrusted input carries too: the receipt's parameter and the
    // untrusted entry (spec/hooks.md §4.4).
    let mut stated = |r: &crate::front::ask::Receipt| {
        if r.stated.is_some() {
            out.param = Some(r.param.clone());
            out.entry = Some(r.read.to_string());
            out.path = vec![r.read.to_string()];
        }
    };
    match &verdict {
        Verdict::Ask(r) => stated(r),
        Verdict::Deny(Refusal::Stated(r)) => stated(r),
        _ => {}
    }
    if let Verdict::Ask(r) = &verdict {
        out.reason = Some(msg(format!("memlineage: ask {r}")));
    }
    if let Verdict::Deny(r) = &verdict {
        out.reason = Some(msg(r));
        if let Refusal::Gate(Denial {
            param, entry, path, ..
        }) = r
        {
            out.param = Some(param.clone());
            out.entry = entry.map(|e| e.to_string());
            out.path = path.iter().map(EntryId::to_string).collect();
        }
    }
    out
}
