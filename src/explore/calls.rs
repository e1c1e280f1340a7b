//! Gate decisions on the ledger's tool-call entries (`spec/explorer.md` §2.5): for each, the
//! gate's decision now ([`crate::Ledger::gate_values`] under the explorer's policy), the
//! parameter it turns on and the lineage path behind it.
//!
//! A tool-call entry records the call as `{"tool": T, "args": {P: V, …}}` and its
//! justifications as parents, but not which parent justifies which parameter: each parameter
//! is checked against every parent (stricter than the call as it was made, never looser).

use super::page::{self, MAX_SHORT_CHARS};
use super::routes::PageError;
use super::Explorer;
use crate::gate::{LineageDecision, ToolCall};
use crate::quote;
use crate::record::EntryId;
use maud::{html, Markup};

/// What the explorer makes of a tool-call entry.
enum Call {
    /// The decision on the call it records.
    Decided {
        tool: String,
        sensitive: bool,
        decision: LineageDecision,
    },
    /// Its text is not a call the explorer can read (or does not verify): shown as a denial.
    Unreadable(String),
}

fn decide(x: &Explorer, id: &EntryId) -> Call {
    let text = match x.ledger.verified_text(id) {
        Ok(Some(t)) => t,
        Ok(None) => return Call::Unreadable("its content is redacted".into()),
        Err(e) => return Call::Unreadable(format!("it does not verify: {e}")),
    };
    let v: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(_) => return Call::Unreadable("its text is not a JSON call".into()),
    };
    let Some(tool) = v.get("tool").and_then(|t| t.as_str()) else {
        return Call::Unreadable("it names no tool".into());
    };
    // Arguments that are not an object (a string, a list, null, missing) cannot be checked
    // parameter by parameter: a denial, never a call with no arguments (spec/explorer.md §2.5).
    let values = match v.get("args") {
        Some(serde_json::Value::Object(m)) => m.clone(),
        _ => return Call::Unreadable("its arguments are not a JSON object".into()),
    };
    // Parents that cannot be read justify nothing: a denial, never a call with no lineage.
    let parents = match x.ledger.parents_of(id) {
        Ok(ps) => ps,
        Err(e) => return Call::Unreadable(format!("its parents cannot be read: {e}")),
    };
    let parents: Vec<EntryId> = parents.iter().map(|p| p.id).collect();
    // Whether the call is gated is the policy's one answer (`Policy::gates`): the name as the
    // hooks resolve it (`mcp__<server>__<tool>` by its bare name), unknown tools gated unless
    // the policy allows them. A call gated only if it writes a gated file is shown as gated:
    // the explorer does not know the agent's directories (fail closed).
    let gated = x.policy.gates(tool, &values) != crate::gate::Gating::Pass;
    if !gated {
        // Not gated: the hooks let it pass without asking its arguments' lineage.
        return Call::Decided {
            tool: tool.to_string(),
            sensitive: false,
            decision: LineageDecision::Allow,
        };
    }
    let call = ToolCall {
        tool: x.policy.tool_name(tool).to_string(),
        sensitive: gated,
        args: values
            .keys()
            .map(|k| (k.clone(), parents.clone()))
            .collect(),
    };
    Call::Decided {
        tool: tool.to_string(),
        sensitive: true,
        decision: x.ledger.gate_values(&x.policy, &call, &values),
    }
}

/// The decision block of a tool-call entry's page.
pub(super) fn decision_block(x: &Explorer, id: &EntryId) -> Markup {
    let (tool, verdict, param, path) = cells(x, id);
    html! {
        table {
            tr { th { "Tool" } td { (tool) } }
            tr { th { "Decision" } td { (verdict) } }
            tr { th { "Parameter" } td { (param) } }
            tr { th { "Path" } td { (path) } }
        }
    }
}

/// Tool, decision, parameter and path cells of one call.
fn cells(x: &Explorer, id: &EntryId) -> (Markup, Markup, Markup, Markup) {
    match decide(x, id) {
        Call::Unreadable(why) => (
            html! { "?" },
            html! { span.bad { "deny (fail closed): " (page::hostile(&why, MAX_SHORT_CHARS)) } },
            html! {},
            html! {},
        ),
        Call::Decided {
            tool,
            sensitive,
            decision,
        } => {
            let tool_cell = html! { (page::quoted(&quote::word(&tool))) };
            match decision {
                LineageDecision::Allow => (
                    tool_cell,
                    html! { span.ok { @if sensitive { "allow" } @else { "allow (not a sensitive tool)" } } },
                    html! {},
                    html! {},
                ),
                LineageDecision::Deny(d) => (
                    tool_cell,
                    html! { span.bad { (page::hostile(&d.to_string(), 2 * MAX_SHORT_CHARS)) } },
                    html! { (page::quoted(&quote::name(&d.param))) },
                    html! {
                        @for (n, hop) in denial_path(x, &d).iter().enumerate() {
                            @if n > 0 { " → " }
                            (page::entry_link(hop, x.ledger.index_of(hop)))
                        }
                    },
                ),
            }
        }
    }
}

/// The denial's path (source first); for a quarantined entry, whose denial names no path,
/// the quarantine's path from the flagged source.
fn denial_path(x: &Explorer, d: &crate::gate::LineageDenial) -> Vec<EntryId> {
    if !d.path.is_empty() {
        return d.path.clone();
    }
    d.entry
        .and_then(|e| x.ledger.quarantine_path(&e).ok().flatten())
        .map(|(path, _)| path)
        .unwrap_or_default()
}

/// The `/calls` page: every tool-call entry, a page at a time.
pub(super) fn render(x: &Explorer, asked: Option<&str>) -> Result<Markup, PageError> {
    let ix = x.indexed()?;
    let calls = ix.index.tool_calls();
    let (page_no, rows) = page::page_of(asked, calls.len())?;
    let shown = &calls[rows];
    let body = html! {
        p { "The gate's decision on each recorded tool call, made now under the explorer's \
             policy from the verified labels and quarantine state. The ledger records which \
             entries justified a call but not which justified each parameter: each parameter \
             is checked against all of them." }
        (page::pager("/calls", page_no, calls.len()))
        table {
            tr { th { "Call" } th { "Tool" } th { "Decision" } th { "Parameter" } th { "Path (source first)" } }
            @for i in shown {
                @if let Some(r) = ix.index.row(*i) {
                    @let (tool, verdict, param, path) = cells(x, &r.id);
                    tr { td { (page::entry_link(&r.id, Some(*i))) } td { (tool) } td { (verdict) } td { (param) } td { (path) } }
                }
            }
        }
        (page::pager("/calls", page_no, calls.len()))
    };
    Ok(page::layout("Gate decisions", body))
}
