//! The JSON-RPC 2.0 envelope of one line from either peer of the gateway (`spec/mcp.md` §6.2):
//! which kind of message it is, its id and method, or why it is not a message. Only the
//! envelope is read here; parameters and results are the peers' business, except where the
//! gateway must read them to decide (`tools/call`) or record (`super::label`).

use crate::front::mcp::stdio::{
    error, replace_lone_surrogates, INVALID_REQUEST, MAX_ID_BYTES, MAX_METHOD_BYTES, PARSE_ERROR,
};
use serde_json::{Map, Value};

/// JSON-RPC code of an internal error: the gateway's answers for a malformed upstream response,
/// a result it could not record, and an upstream that has exited.
pub const INTERNAL_ERROR: i64 = -32603;
/// The code of a request that timed out (as the official TypeScript SDK's
/// `ErrorCode.RequestTimeout`).
pub const REQUEST_TIMEOUT: i64 = -32001;

/// One well-formed message (JSON-RPC 2.0 §4, §5).
///
/// Exhaustive: the three message kinds of JSON-RPC 2.0 (§4, §5); the relay handles each.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request: it expects a response with the same id.
    Request {
        /// Its id: an integer or a string of at most [`MAX_ID_BYTES`] bytes.
        id: Value,
        /// Its method.
        method: String,
        /// Its parameters (`Value::Null` when absent).
        params: Value,
    },
    /// A notification: never answered.
    Notification {
        /// Its method.
        method: String,
        /// Its parameters (`Value::Null` when absent).
        params: Value,
    },
    /// A response: `Ok(result)` or `Err(error object)`.
    Response {
        /// The id of the request it answers.
        id: Value,
        /// The result, or the error object.
        outcome: Result<Value, Value>,
    },
}

/// What one line is.
///
/// Exhaustive: every line the relay reads is one of these, and each is handled (a malformed
/// one answered, never dropped).
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// A message, and its text (lone surrogates replaced, line ending and BOM removed).
    Message(Message, String),
    /// Empty or white space: ignored.
    Blank,
    /// Not a well-formed message: the JSON-RPC error it calls for. `id` is the request's id
    /// when one could be read (else the answer carries `id: null`).
    Bad {
        /// The id read, if any.
        id: Option<Value>,
        /// The JSON-RPC error code.
        code: i64,
        /// Why, for the error message.
        why: String,
    },
}

impl Line {
    /// The error response to a [`Line::Bad`] (`None` for any other line).
    pub fn answer(&self) -> Option<Value> {
        match self {
            Line::Bad { id, code, why } => {
                Some(error(id.clone().unwrap_or(Value::Null), *code, why))
            }
            _ => None,
        }
    }
}

/// Reads one line (its `\n` and `\r` ending and a UTF-8 byte order mark removed). Does not
/// panic.
pub fn parse(line: &[u8]) -> Line {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Blank;
    }
    let bad = |id: Option<Value>, code: i64, why: String| Line::Bad { id, code, why };
    let text = match std::str::from_utf8(line) {
        Ok(t) => replace_lone_surrogates(t).into_owned(),
        Err(e) => {
            let why = format!("not UTF-8: invalid byte at offset {}", e.valid_up_to());
            return bad(None, PARSE_ERROR, why);
        }
    };
    let value: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return bad(None, PARSE_ERROR, format!("not JSON: {e}")),
    };
    let m = match value {
        Value::Object(m) => m,
        Value::Array(_) => {
            let why = "batches are not supported (MCP removed JSON-RPC batching in 2025-06-18)";
            return bad(None, INVALID_REQUEST, why.into());
        }
        _ => return bad(None, INVALID_REQUEST, "a message is a JSON object".into()),
    };
    // The line is passed on as written, so its reader must read what the gateway read: a
    // member named twice is the last one here (`serde_json`) and may be the first one there,
    // and the gateway would decide or record another message than the one the peer runs or
    // shows its model (attack review 49: `"method": "tools/call", "method": "ping"` ran
    // undecided; a result's `"text"` named twice was recorded as the last and shown as the
    // first). Such a line is no message of either reading.
    if crate::front::unique_json::parse_unique(&text).is_none() {
        let id = match m.get("id") {
            Some(Value::String(s)) if s.len() <= MAX_ID_BYTES => Some(Value::String(s.clone())),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n.clone())),
            _ => None,
        };
        let why = "an object of the message names a member twice, which readers read differently";
        return bad(id, INVALID_REQUEST, why.into());
    }
    match envelope(m) {
        Ok(msg) => Line::Message(msg, text),
        Err((id, code, why)) => bad(id, code, why),
    }
}

type Refused = (Option<Value>, i64, String);

/// The message an object is, or why it is none.
fn envelope(mut m: Map<String, Value>) -> Result<Message, Refused> {
    let id = match m.remove("id") {
        None => None,
        Some(Value::String(s)) if s.len() <= MAX_ID_BYTES => Some(Value::String(s)),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n)),
        Some(_) => {
            let why =
                format!("`id` must be an integer or a string of at most {MAX_ID_BYTES} bytes");
            return Err((None, INVALID_REQUEST, why));
        }
    };
    let invalid = |why: &str| (id.clone(), INVALID_REQUEST, why.to_string());
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("`jsonrpc` must be \"2.0\""));
    }
    let params = match m.remove("params") {
        None => Value::Null,
        Some(p @ (Value::Object(_) | Value::Array(_))) => p,
        Some(_) => return Err(invalid("`params` must be an object or an array")),
    };
    let method = match m.remove("method") {
        Some(Value::String(s)) => s,
        Some(_) => return Err(invalid("`method` must be a string")),
        None => return response(id, m),
    };
    if method.len() > MAX_METHOD_BYTES {
        let why = format!("method not found (a name longer than {MAX_METHOD_BYTES} bytes)");
        return Err((id, crate::front::mcp::stdio::METHOD_NOT_FOUND, why));
    }
    Ok(match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method, params },
    })
}

/// A response: an id and exactly one of `result` and `error` (an object with an integer
/// `code` and a string `message`).
fn response(id: Option<Value>, mut m: Map<String, Value>) -> Result<Message, Refused> {
    let Some(id) = id else {
        return Err((
            None,
            INVALID_REQUEST,
            "neither a request nor a response".into(),
        ));
    };
    let outcome = match (m.remove("result"), m.remove("error")) {
        (Some(r), None) => Ok(r),
        (None, Some(e)) => {
            let code = e.get("code").is_some_and(Value::is_i64);
            let message = e.get("message").is_some_and(Value::is_string);
            if !(e.is_object() && code && message) {
                let why =
                    "an error must be an object with an integer `code` and a string `message`";
                return Err((Some(id), INVALID_REQUEST, why.into()));
            }
            Err(e)
        }
        (Some(_), Some(_)) => {
            return Err((
                Some(id),
                INVALID_REQUEST,
                "both `result` and `error`".into(),
            ))
        }
        (None, None) => {
            return Err((
                Some(id),
                INVALID_REQUEST,
                "neither a request nor a response".into(),
            ))
        }
    };
    Ok(Message::Response { id, outcome })
}

/// The key of a request id in the gateway's maps: its JSON text, so that `1` and `"1"` differ.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// A JSON-RPC error response, its message cut to [`crate::front::mcp::stdio::MAX_ERROR_BYTES`].
pub fn error_response(id: &Value, code: i64, message: &str) -> Value {
    error(id.clone(), code, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bad(line: &[u8]) -> (Option<Value>, i64) {
        match parse(line) {
            Line::Bad { id, code, .. } => (id, code),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_kind_of_message_is_read_with_its_id() {
        let Line::Message(m, _) = parse(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#) else {
            panic!()
        };
        assert_eq!(
            m,
            Message::Request {
                id: json!("a"),
                method: "ping".into(),
                params: Value::Null
            }
        );
        let Line::Message(m, _) =
            parse(b"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{}}\r\n")
        else {
            panic!()
        };
        assert!(matches!(m, Message::Notification { .. }));
        let Line::Message(m, _) =
            parse(br#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"x"}}"#)
        else {
            panic!()
        };
        assert!(matches!(
            m,
            Message::Response {
                outcome: Err(_),
                ..
            }
        ));
        assert_eq!(parse(b"  \n"), Line::Blank);
    }

    #[test]
    fn malformed_lines_get_the_error_they_call_for() {
        assert_eq!(bad(b"{\"x\":1e999}"), (None, PARSE_ERROR));
        assert_eq!(bad(b"\xff"), (None, PARSE_ERROR));
        assert_eq!(bad(b"[]"), (None, INVALID_REQUEST));
        assert_eq!(
            bad(br#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#),
            (None, INVALID_REQUEST)
        );
        assert_eq!(
            bad(br#"{"id":5,"method":"ping"}"#),
            (Some(json!(5)), INVALID_REQUEST)
        );
        assert_eq!(
            bad(br#"{"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"m"}}"#),
            (Some(json!(5)), INVALID_REQUEST)
        );
        assert_eq!(
            bad(br#"{"jsonrpc":"2.0","id":5,"error":"boom"}"#),
            (Some(json!(5)), INVALID_REQUEST)
        );
        assert_eq!(
            bad(br#"{"jsonrpc":"2.0","method":3}"#),
            (None, INVALID_REQUEST)
        );
        let answer = parse(br#"{"jsonrpc":"2.0","id":"q","params":1,"method":"m"}"#).answer();
        assert_eq!(answer.unwrap()["id"], "q");
    }

    #[test]
    fn a_member_named_twice_anywhere_is_no_message() {
        assert_eq!(
            bad(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","method":"ping"}"#),
            (Some(json!(7)), INVALID_REQUEST)
        );
        assert_eq!(
            bad(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#),
            (Some(json!(2)), INVALID_REQUEST)
        );
        assert_eq!(
            bad(br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a","t\u0065xt":"b"}]}}"#),
            (Some(json!(3)), INVALID_REQUEST)
        );
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":3,"result":{"a":{"x":1},"b":{"x":1}}}"#),
            Line::Message(..)
        ));
    }

    #[test]
    fn ids_of_different_types_are_different_keys() {
        assert_ne!(id_key(&json!(1)), id_key(&json!("1")));
    }
}
