//! The verdict of `ledger_gate_check` (`spec/mcp.md` §2.3) turned into the tool's result (the
//! decision, cited entries included, is `Front::check`'s).

use super::limits::msg;
use super::tools::GateResult;
use crate::front::{Refusal, Verdict};
use crate::gate::LineageDenial;
use crate::record::EntryId;
use std::collections::BTreeMap;

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
        if let Refusal::Gate(LineageDenial {
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
