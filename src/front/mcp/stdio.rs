//! JSON-RPC 2.0 framing in front of rmcp's stdio transport (`spec/mcp.md` §4).
//!
//! rmcp 3.11 drops lines it cannot parse without a word (its issue #938: it follows the other
//! official SDKs), answers well-formed JSON of the wrong shape with an error that has no id,
//! and treats a known method with unreadable parameters as an unknown method. A client then
//! waits until its timeout. This layer reads standard input itself, one line at a time with a
//! size bound, answers every line that is not a well-formed message with the JSON-RPC error
//! it calls for, and hands the rest to rmcp over an in-process pipe ([`tokio::io::duplex`]).
//! Responses from rmcp and from this layer are written whole, one line each, to the output.
//!
//! | input line | answer |
//! |---|---|
//! | longer than [`MAX_LINE_BYTES`], not UTF-8, not JSON (`1e999`, depth over 128, …) | -32700, id `null` |
//! | a JSON array (a batch: MCP 2025-06-18 removed batching), not an object | -32600, id `null` |
//! | `id` not an integer nor a string of at most [`MAX_ID_BYTES`] | -32600, id `null` |
//! | `jsonrpc` not `"2.0"`, `method` not a string, `params` not an object or array, not rmcp's shape | -32600 with the id |
//! | `method` longer than [`MAX_METHOD_BYTES`] | -32601 with the id |
//! | a standard method whose `params` rmcp cannot read (e.g. `tools/call` without `name`) | -32602 with the id |
//! | empty or blank | nothing |
//!
//! An escaped lone UTF-16 surrogate inside a JSON string (`"\ud83d"`, what `JSON.stringify`
//! writes for half an emoji) is replaced by U+FFFD and the message is processed: JSON text
//! cannot carry it in UTF-8 (RFC 8259 §8.2), and answering the request beats refusing it.
//! Notifications are never answered (JSON-RPC 2.0 §4.1), except when the line is not a valid
//! message at all.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use rmcp::{RoleServer, Service, ServiceExt};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::sync::Arc;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::Mutex;

/// Largest message read, in bytes, without its line ending (as rmcp's own
/// `DEFAULT_MAX_LINE_LENGTH`). A longer line is answered with -32700 and skipped.
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// Longest string request id accepted, in bytes: a longer one is not echoed (-32600, id null).
pub const MAX_ID_BYTES: usize = 1024;
/// Longest method name passed on, in bytes: a longer one is answered -32601 without echo.
pub const MAX_METHOD_BYTES: usize = 256;
/// Most bytes of a JSON-RPC error message this layer writes (longer ones are cut, `…`).
pub const MAX_ERROR_BYTES: usize = 1024;

/// JSON-RPC 2.0 error codes.
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// The MCP 2025-11-25 client-to-server request methods that rmcp parses into typed requests:
/// one of them that rmcp reads as a custom request had parameters it could not read.
const TYPED_METHODS: [&str; 15] = [
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
];

/// Serves `service` (an rmcp server handler) on `input`/`output` until `input` ends and the
/// answers in flight are written.
///
/// # Errors
/// I/O errors on `input` or `output`; rmcp's errors (e.g. the client closed the stream before
/// `initialize`).
pub async fn serve<S, R, W>(service: S, input: R, output: W) -> Result<(), std::io::Error>
where
    S: Service<RoleServer> + Send + 'static,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (from_rmcp, to_rmcp) = tokio::io::split(ours);
    let output = Arc::new(Mutex::new(output));
    let rmcp = async move {
        let running = service
            .serve(theirs)
            .await
            .map_err(|e| std::io::Error::other(format!("MCP initialisation: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| std::io::Error::other(format!("MCP service: {e}")))?;
        Ok::<(), std::io::Error>(())
    };
    let screened = screen_input(input, to_rmcp, Arc::clone(&output));
    let served = async move {
        tokio::pin!(rmcp);
        tokio::pin!(screened);
        tokio::select! {
            // End of input: rmcp then answers what is in flight and stops.
            read = &mut screened => {
                read?;
                rmcp.await
            }
            // rmcp stopped first (it failed): stop reading.
            served = &mut rmcp => served,
        }
    };
    let (written, served) = tokio::join!(copy_answers(from_rmcp, Arc::clone(&output)), served);
    written?;
    served
}

/// Reads `input` line by line; forwards well-formed messages to rmcp and answers the rest.
async fn screen_input<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    input: R,
    mut to_rmcp: tokio::io::WriteHalf<DuplexStream>,
    output: Arc<Mutex<W>>,
) -> Result<(), std::io::Error> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut line = Vec::new();
    loop {
        let verdict = match read_line(&mut input, &mut line, MAX_LINE_BYTES).await? {
            Line::Eof => break,
            Line::Oversized => Screened::Answer(error(
                Value::Null,
                PARSE_ERROR,
                &format!("message longer than {MAX_LINE_BYTES} bytes"),
            )),
            Line::Complete => screen(&line),
        };
        line.clear();
        match verdict {
            Screened::Skip => {}
            Screened::Forward(mut bytes) => {
                bytes.push(b'\n');
                // rmcp gone (it failed or finished): nothing more can be answered.
                if to_rmcp.write_all(&bytes).await.is_err() {
                    break;
                }
            }
            Screened::Answer(answer) => {
                tracing::debug!(%answer, "memlineage mcp: answered a malformed message");
                let mut bytes = answer.to_string().into_bytes();
                bytes.push(b'\n');
                let mut out = output.lock().await;
                out.write_all(&bytes).await?;
                out.flush().await?;
            }
        }
    }
    // End of input: rmcp sees end of stream, finishes what is in flight and stops.
    let _ = to_rmcp.shutdown().await;
    Ok(())
}

/// Copies rmcp's output, one whole line at a time, to `output`.
async fn copy_answers<W: AsyncWrite + Unpin>(
    from_rmcp: tokio::io::ReadHalf<DuplexStream>,
    output: Arc<Mutex<W>>,
) -> Result<(), std::io::Error> {
    let mut from_rmcp = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    loop {
        line.clear();
        if from_rmcp.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        let mut out = output.lock().await;
        out.write_all(&line).await?;
        out.flush().await?;
    }
}

/// What one bounded line read found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line (its terminator included, if any) is in the buffer.
    Complete,
    /// The line was longer than the bound; it was read and dropped.
    Oversized,
    /// End of input.
    Eof,
}

/// Reads one `\n`-terminated line into `buf` (empty on entry), never holding more than
/// `max` bytes of it plus its terminator; a last line without terminator counts as a line.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> Result<Line, std::io::Error> {
    let mut oversized = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(if oversized {
                Line::Oversized
            } else if buf.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        if !oversized {
            let body = buf.len() + take - usize::from(newline.is_some());
            if body > max {
                oversized = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&available[..take]);
            }
        }
        input.consume(take);
        if newline.is_some() {
            return Ok(if oversized {
                Line::Oversized
            } else {
                Line::Complete
            });
        }
    }
}

/// What to do with one input line.
#[derive(Debug, PartialEq)]
enum Screened {
    /// Nothing (a blank line, or a notification rmcp would ignore anyway).
    Skip,
    /// Pass these bytes (one message, no line terminator) to rmcp.
    Forward(Vec<u8>),
    /// Write this JSON-RPC error response.
    Answer(Value),
}

/// Decides one line (`spec/mcp.md` §4).
fn screen(line: &[u8]) -> Screened {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Screened::Skip;
    }
    let text = match std::str::from_utf8(line) {
        Ok(t) => t,
        Err(e) => {
            let why = format!("not UTF-8: invalid byte at offset {}", e.valid_up_to());
            return Screened::Answer(error(Value::Null, PARSE_ERROR, &why));
        }
    };
    let text = replace_lone_surrogates(text);
    let value: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            let why = format!("not JSON: {e}");
            return Screened::Answer(error(Value::Null, PARSE_ERROR, &why));
        }
    };
    match envelope(&value, &text) {
        Ok(true) => Screened::Forward(text.into_owned().into_bytes()),
        Ok(false) => Screened::Skip,
        Err(answer) => Screened::Answer(answer),
    }
}

/// Checks a parsed message: `Ok(true)` to forward it, `Ok(false)` to drop it (a notification
/// that cannot be answered), `Err` with the error response.
fn envelope(value: &Value, text: &str) -> Result<bool, Value> {
    let invalid = |id: &Value, why: &str| error(id.clone(), INVALID_REQUEST, why);
    let m = match value {
        Value::Object(m) => m,
        Value::Array(_) => {
            return Err(invalid(
                &Value::Null,
                "batches are not supported (MCP removed JSON-RPC batching in 2025-06-18)",
            ))
        }
        _ => return Err(invalid(&Value::Null, "a message is a JSON object")),
    };
    let id = match m.get("id") {
        None => None,
        Some(Value::String(s)) if s.len() <= MAX_ID_BYTES => Some(value["id"].clone()),
        Some(Value::Number(n)) if n.is_i64() => Some(value["id"].clone()),
        Some(_) => {
            return Err(invalid(
                &Value::Null,
                &format!("`id` must be an integer or a string of at most {MAX_ID_BYTES} bytes"),
            ))
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(&reply_id, "`jsonrpc` must be \"2.0\""));
    }
    let method = match m.get("method") {
        Some(Value::String(s)) => s,
        Some(_) => return Err(invalid(&reply_id, "`method` must be a string")),
        None if id.is_some() && (m.contains_key("result") || m.contains_key("error")) => {
            // A response to a request of ours: rmcp's business.
            return Ok(true);
        }
        None => return Err(invalid(&reply_id, "neither a request nor a response")),
    };
    if !matches!(
        m.get("params"),
        None | Some(Value::Object(_) | Value::Array(_))
    ) {
        return Err(invalid(&reply_id, "`params` must be an object or an array"));
    }
    let Some(id) = id else {
        // A notification: never answered, and rmcp ignores what it cannot read.
        return Ok(method.len() <= MAX_METHOD_BYTES);
    };
    if method.len() > MAX_METHOD_BYTES {
        return Err(error(
            id,
            METHOD_NOT_FOUND,
            &format!("method not found (a name longer than {MAX_METHOD_BYTES} bytes)"),
        ));
    }
    match serde_json::from_str::<ClientJsonRpcMessage>(text) {
        Ok(JsonRpcMessage::Request(r))
            if matches!(r.request, ClientRequest::CustomRequest(_))
                && TYPED_METHODS.contains(&method.as_str()) =>
        {
            Err(error(
                id,
                INVALID_PARAMS,
                &bad_params(method, m.get("params")),
            ))
        }
        Ok(_) => Ok(true),
        Err(e) => Err(invalid(&id, &format!("not an MCP message: {e}"))),
    }
}

/// Why the parameters of a typed method could not be read.
fn bad_params(method: &str, params: Option<&Value>) -> String {
    if method == "tools/call" {
        let name = params.and_then(|p| p.get("name"));
        let arguments = params.and_then(|p| p.get("arguments"));
        if !matches!(name, Some(Value::String(_))) {
            return "invalid params: tools/call needs `name`, a string".into();
        }
        if !matches!(arguments, None | Some(Value::Object(_) | Value::Null)) {
            return "invalid params: tools/call `arguments` must be an object".into();
        }
    }
    format!("invalid params: the parameters of {method} do not match its schema")
}

/// A JSON-RPC error response with a message of at most [`MAX_ERROR_BYTES`].
pub(crate) fn error(id: Value, code: i64, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": super::cut(message, MAX_ERROR_BYTES)},
    })
}

/// `text` with every `\uXXXX` escape of an unpaired UTF-16 surrogate inside a JSON string
/// replaced by `\uFFFD` (the same length). Paired surrogates, other escapes and everything
/// outside strings are left as they are; O(len).
pub(crate) fn replace_lone_surrogates(text: &str) -> Cow<'_, str> {
    if !text.contains("\\u") {
        return Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = b.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    };
    let escape_at = |at: usize| b.get(at) == Some(&b'\\') && b.get(at + 1) == Some(&b'u');
    let high = |u: u16| (0xD800..0xDC00).contains(&u);
    let low = |u: u16| (0xDC00..0xE000).contains(&u);
    let mut lone = Vec::new();
    let (mut i, mut in_string) = (0, false);
    while i < b.len() {
        match b[i] {
            b'"' => {
                in_string = !in_string;
                i += 1;
            }
            b'\\' if in_string => match (b.get(i + 1), unit(i + 2)) {
                (Some(b'u'), Some(u)) if high(u) => {
                    if escape_at(i + 6) && unit(i + 8).is_some_and(low) {
                        i += 12;
                    } else {
                        lone.push(i);
                        i += 6;
                    }
                }
                (Some(b'u'), Some(u)) => {
                    if low(u) {
                        lone.push(i);
                    }
                    i += 6;
                }
                _ => i += 2,
            },
            _ => i += 1,
        }
    }
    if lone.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = b.to_vec();
    for at in lone {
        out[at..at + 6].copy_from_slice(b"\\uFFFD");
    }
    // Only ASCII escapes were overwritten with ASCII: still UTF-8.
    Cow::Owned(String::from_utf8(out).unwrap_or_else(|_| text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        let fixed =
            replace_lone_surrogates(r#"{"a":"x\ud83d","b":"\ud83d\ude00","c":"\udc00\\ud83d"}"#);
        let v: Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["a"], "x\u{FFFD}");
        assert_eq!(v["b"], "\u{1F600}");
        // An escaped backslash followed by `ud83d` is text, not an escape.
        assert_eq!(v["c"], "\u{FFFD}\\ud83d");
        let plain = r#"{"a":"\u00e9"}"#;
        assert!(matches!(replace_lone_surrogates(plain), Cow::Borrowed(_)));
    }

    #[test]
    fn every_malformed_line_gets_the_error_it_calls_for() {
        let code = |line: &[u8]| match screen(line) {
            Screened::Answer(v) => (v["error"]["code"].as_i64().unwrap(), v["id"].clone()),
            other => panic!("{other:?}"),
        };
        assert_eq!(code(b"{\"x\":1e999}"), (PARSE_ERROR, Value::Null));
        assert_eq!(code(b"{\"x\":\"\xff\"}"), (PARSE_ERROR, Value::Null));
        assert_eq!(code(b"[]"), (INVALID_REQUEST, Value::Null));
        assert_eq!(
            code(br#"{"id":5,"method":"ping"}"#),
            (INVALID_REQUEST, json!(5))
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            (INVALID_REQUEST, Value::Null)
        );
        let call = br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t","arguments":[1]}}"#;
        assert_eq!(code(call), (INVALID_PARAMS, json!("a")));
        assert_eq!(screen(b"  \r\n"), Screened::Skip);
        let ok = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert_eq!(screen(ok), Screened::Forward(ok.to_vec()));
    }
}
