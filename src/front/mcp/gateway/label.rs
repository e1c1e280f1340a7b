//! What the gateway records of each MCP message kind, and under which principal
//! (`spec/mcp.md` §6.3): text the upstream server sends that the client may put before its
//! model is an External read; a value the user types into an elicitation form that the server
//! did not suggest is a statement of the user; the rest carries nothing for the model and is
//! passed on unrecorded.
//!
//! Method names are those of MCP 2025-11-25 (<https://modelcontextprotocol.io/specification>)
//! and the tasks of SEP-1686. A method this table does not know is recorded as a read: what a
//! future message carries to the model cannot be ruled out (fail closed).

use crate::gate::extract;
use crate::gate::matching::{self, Haystack};
use serde_json::{Map, Value};

/// What to record of one message before passing it on.
///
/// Exhaustive: a message the relay does not know how to record must not pass unrecorded, so a
/// new variant must break the relay's build rather than fall into a wildcard arm.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// Nothing: the message carries no text for the model (or none the server wrote).
    Nothing,
    /// An External read: recorded as the output of `name` (the tool name of the hook event,
    /// `mcp__<server>__<name>`), called with `input`.
    Read {
        /// The method (or tool) the text is the output of.
        name: String,
        /// The request's parameters.
        input: Value,
        /// The text, as a JSON value (recorded as its compact JSON, `spec/hooks.md` §2.1).
        output: Value,
        /// Whether a read of the very same name, input and output may be recorded once only
        /// per gateway process (lists and descriptions fetched again and again).
        once: bool,
    },
}

/// Client requests whose results carry nothing the server wrote for the model.
const SILENT_RESULTS: [&str; 5] = [
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    // Suggestions for the user's input of a prompt argument or resource template: the user
    // picks one (or not); what the prompt then says comes back through `prompts/get`.
    "completion/complete",
];

/// Server requests whose parameters carry nothing for the model: the client answers them
/// itself (its roots, a liveness check, the state of its own tasks).
const SILENT_SERVER_REQUESTS: [&str; 6] = [
    "ping",
    "roots/list",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
];

/// The results that declare the server itself: its instructions and the descriptions of its
/// tools and prompts, written by the server's author (whose code the user chose to run, and
/// which could read the user's files itself), not by a third party. Recorded only when asked
/// ([`of_result`]'s `declarations`), since a read of them would make every session's first
/// call one "after untrusted input" (`spec/mcp.md` §6.3).
const DECLARATIONS: [&str; 3] = ["initialize", "tools/list", "prompts/list"];

/// What to record of the result of the client's request `method` with `params`, other than
/// `tools/call` (which the gateway records as the tool's output, `super::relay`). The server's
/// declarations (`DECLARATIONS`) are reads only when `declarations` is set.
pub fn of_result(method: &str, params: &Value, result: &Value, declarations: bool) -> Record {
    if SILENT_RESULTS.contains(&method) || (!declarations && DECLARATIONS.contains(&method)) {
        return Record::Nothing;
    }
    Record::Read {
        name: method.to_string(),
        input: params.clone(),
        output: result.clone(),
        // A resource or prompt read again is read again; lists, the server's instructions and
        // a task's status are the same text every time they are asked for.
        once: DECLARATIONS.contains(&method)
            || matches!(
                method,
                "resources/list" | "resources/templates/list" | "tasks/get" | "tasks/list"
            ),
    }
}

/// What to record of the server's request `method` with `params` before the client sees it:
/// a sampling request's messages and system prompt go to the client's model; an elicitation's
/// message and form are shown to the user, who may copy from them into the agent's context.
pub fn of_server_request(method: &str, params: &Value) -> Record {
    if SILENT_SERVER_REQUESTS.contains(&method) {
        return Record::Nothing;
    }
    Record::Read {
        name: method.to_string(),
        input: Value::Object(Map::new()),
        output: params.clone(),
        once: false,
    }
}

/// The user's statement in the answer `result` to the elicitation `request` (`params` of
/// `elicitation/create`): the fields of an accepted form whose values the request does not hold
/// (by the gate's own matching, `spec/hooks.md` §4), as a JSON object text. `None` when the user
/// declined or cancelled, or typed nothing of their own: a value the server suggested (a
/// default, an enum choice, text of its message) and the user accepted stays the server's.
pub fn elicited_statement(request: &Value, result: &Value) -> Option<String> {
    if result.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    let content = result.get("content")?.as_object()?;
    let suggested = Haystack::new(&request.to_string());
    let own: Map<String, Value> = content
        .iter()
        .filter(|(_, v)| own_value(&suggested, v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (!own.is_empty()).then(|| Value::Object(own).to_string())
}

/// Whether `value` holds something matchable that the suggested text does not hold, and
/// nothing it suggested: a string none of whose specific tokens and identifiers
/// (`spec/hooks.md` §4.5 rules 1–5 and 9) the suggested text holds. A field that copies the
/// server's IBAN or URL with a word of the user's beside it is not the user's statement
/// (attack review 39: it was, and authorised the server's IBAN).
fn own_value(suggested: &Haystack, value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(|v| own_value(suggested, v)),
        Value::String(s) if s.trim().is_empty() => false,
        Value::String(s) => {
            let mut tokens = Vec::new();
            extract::text_tokens(s, None, &mut tokens);
            tokens.extend(matching::identifiers(s));
            !suggested.matches(value)
                && !tokens
                    .into_iter()
                    .any(|t| suggested.matches(&Value::String(t)))
        }
        Value::Number(_) => !suggested.matches(value),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_result_but_the_silent_ones_is_a_read_and_lists_are_read_once() {
        assert_eq!(
            of_result("ping", &json!({}), &json!({}), true),
            Record::Nothing
        );
        let completion = json!({"completion": {"values": ["x"]}});
        assert_eq!(
            of_result("completion/complete", &json!({}), &completion, true),
            Record::Nothing
        );
        assert_eq!(
            of_result("tools/list", &json!({}), &json!({}), false),
            Record::Nothing
        );
        let Record::Read { name, once, .. } = of_result("tools/list", &json!({}), &json!({}), true)
        else {
            panic!()
        };
        assert!(name == "tools/list" && once);
        let Record::Read { once, .. } =
            of_result("resources/read", &json!({"uri": "u"}), &json!({}), false)
        else {
            panic!()
        };
        assert!(!once);
        assert!(matches!(
            of_result("resources/list", &json!({}), &json!({}), false),
            Record::Read { once: true, .. }
        ));
        // A method added to MCP after this table is read (fail closed).
        assert!(matches!(
            of_result("future/method", &Value::Null, &json!({"text": "?"}), false),
            Record::Read { .. }
        ));
        assert_eq!(
            of_server_request("roots/list", &Value::Null),
            Record::Nothing
        );
        assert!(matches!(
            of_server_request("sampling/createMessage", &json!({"messages": []})),
            Record::Read { .. }
        ));
    }

    #[test]
    fn only_what_the_user_typed_is_a_statement() {
        let attacker = "US133000000121212121212";
        let request = json!({
            "message": format!("Confirm the payment to {attacker}"),
            "requestedSchema": {"type": "object", "properties": {
                "recipient": {"type": "string", "default": attacker},
                "colour": {"type": "string", "enum": ["red", "green"]},
                "note": {"type": "string"}}}
        });
        let accept = |content: Value| json!({"action": "accept", "content": content});
        // Accepting the server's default and enum choice states nothing.
        assert_eq!(
            elicited_statement(
                &request,
                &accept(json!({"recipient": attacker, "colour": "red"}))
            ),
            None
        );
        // The IBAN written with spaces is still the server's (IBAN matching closes them up).
        assert_eq!(
            elicited_statement(
                &request,
                &accept(json!({"recipient": "US13 3000 0001 2121 2121 212"}))
            ),
            None
        );
        let own = elicited_statement(
            &request,
            &accept(json!({"recipient": "GB29NWBK60161331926819", "colour": "green", "ok": true})),
        )
        .unwrap();
        assert_eq!(own, r#"{"recipient":"GB29NWBK60161331926819"}"#);
        assert_eq!(
            elicited_statement(&request, &json!({"action": "decline"})),
            None
        );
    }
}
