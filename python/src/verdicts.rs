//! A gate decision as the Python `Ledger.check` returns it (`spec/python.md` §4): the verdict,
//! the sources of each argument, and, for a refusal or an ask, the reason, the parameter, the
//! entry and the lineage path as hops.

use memlineage::front::{Checked, Refusal, Verdict};
use memlineage::gate::DenyReason;
use memlineage::record::EntryId;
use serde_json::{json, Map, Value};

/// `checked` as a dict; `classified` is whether the policy classifies the tool, `hop` renders
/// one entry of a path (`{"id", "kind", "writer", "label"}`).
pub fn render(
    checked: &Checked,
    classified: bool,
    mut hop: impl FnMut(&EntryId) -> Value,
) -> Value {
    let sources: Map<String, Value> = checked
        .call
        .args
        .iter()
        .map(|(name, ids)| {
            let ids: Vec<String> = ids.iter().map(EntryId::to_string).collect();
            (name.clone(), json!(ids))
        })
        .collect();
    let mut out = json!({
        "tool": checked.call.tool,
        "sensitive": checked.sensitive,
        "allowed": checked.verdict.is_allow(),
        "decision": match &checked.verdict {
            Verdict::Allow => "allow",
            Verdict::Ask(_) => "ask",
            Verdict::Deny(_) => "deny",
        },
        "classified": classified,
        "sources": sources,
        "reason": Value::Null, "param": Value::Null, "entry": Value::Null,
        "deny": Value::Null, "path": [],
    });
    if let Verdict::Ask(r) = &checked.verdict {
        out["reason"] = json!(format!("memlineage: ask {r}"));
        out["param"] = json!(r.param);
        out["entry"] = json!(r.read.to_string());
        out["path"] = json!([hop(&r.read)]);
    }
    if let Verdict::Deny(r) = &checked.verdict {
        out["reason"] = json!(r.to_string());
        match r {
            Refusal::Gate(d) => {
                out["param"] = json!(d.param);
                out["entry"] = json!(d.entry.map(|e| e.to_string()));
                out["deny"] = json!(match d.reason {
                    DenyReason::Untrusted { .. } => "untrusted",
                    DenyReason::UnknownEntry => "unknown_entry",
                    DenyReason::Tombstoned => "tombstoned",
                    DenyReason::Quarantined => "quarantined",
                    DenyReason::Unsourced => "unsourced",
                    DenyReason::UntrustedOrigin { .. } => "untrusted_origin",
                });
                let mut path = d.path.clone();
                if path.is_empty() {
                    path.extend(d.entry);
                }
                out["path"] = Value::Array(path.iter().map(&mut hop).collect());
            }
            Refusal::Unrecorded { .. } => out["deny"] = json!("unrecorded"),
            Refusal::Unreadable { .. } => out["deny"] = json!("unreadable"),
            Refusal::Protected { .. } => out["deny"] = json!("protected"),
            Refusal::Composed(r) => {
                out["deny"] = json!("composed");
                out["param"] = json!(r.param);
                out["entry"] = json!(r.read.to_string());
            }
            Refusal::Stated(r) => {
                out["deny"] = json!("stated_and_untrusted");
                out["param"] = json!(r.param);
                out["entry"] = json!(r.read.to_string());
            }
            Refusal::UnseenStart { .. } => out["deny"] = json!("unseen_start"),
            Refusal::Secret { entry, .. } => {
                out["deny"] = json!("secret");
                out["entry"] = json!(entry.map(|e| e.to_string()));
            }
        }
    }
    out
}
