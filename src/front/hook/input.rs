//! What a hook reads of its input (`spec/hooks.md` §1): the event's JSON, made well formed and
//! parsed, its session id from the top level only, the tool's output text, and the history a
//! transcript shows.

use super::HookEvent;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

/// Most bytes of a transcript [`transcript_history`] reads: a longer transcript holds earlier
/// conversation (a new one holds a few lines of metadata at most).
pub const MAX_TRANSCRIPT_BYTES: u64 = 4 << 20;

/// What shows, in the transcript at `path` that a `SessionStart` event names, that the
/// conversation did not begin now (`spec/hooks.md` §3.1), or `None`:
///
/// - no file: `None` (Claude Code writes a new session's transcript at its first message);
/// - a file that cannot be read as a regular file of at most [`MAX_TRANSCRIPT_BYTES`]: it
///   holds what cannot be known (fail closed);
/// - a complete line (ended by a newline) that is not a JSON object;
/// - a Claude Code message (`"type": "user"` or `"assistant"`);
/// - a Codex `session_meta` whose payload names `forked_from_id` (Codex reports a forked
///   thread's `SessionStart` as `startup`, openai/codex#39951).
///
/// Other lines (metadata, Codex's initial context) are passed over. Never blocks (a FIFO is
/// an error, not a wait) and never panics.
pub fn transcript_history(path: &Path) -> Option<String> {
    let bytes = match crate::store::durable::read_regular(path, MAX_TRANSCRIPT_BYTES) {
        Ok(None) => return None,
        Ok(Some(b)) => b,
        Err(e) => return Some(format!("what cannot be read ({e})")),
    };
    let text = String::from_utf8_lossy(&bytes);
    // The last line may be being written: only lines ended by a newline count.
    let complete = text.rsplit_once('\n').map_or("", |(done, _)| done);
    for line in complete.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Ok(Value::Object(o)) = serde_json::from_str::<Value>(line) else {
            return Some("a line that is not a JSON object".to_string());
        };
        match o.get("type").and_then(Value::as_str) {
            Some(t @ ("user" | "assistant")) => return Some(format!("a {t} message")),
            Some("session_meta")
                if o.get("payload")
                    .and_then(|p| p.get("forked_from_id"))
                    .is_some_and(|f| !f.is_null()) =>
            {
                return Some("a forked conversation (forked_from_id)".to_string())
            }
            _ => {}
        }
    }
    None
}

/// The text recorded for a tool's output (`spec/hooks.md` §2.1): PostToolUse's
/// `tool_response` (a string as is, any other value as compact JSON); PostToolUseFailure's
/// `error`, or, when the event also has a `tool_response`, the compact JSON
/// `{"error": …, "tool_response": …}` of both. An event with neither is not one the agents
/// write (both require `tool_response`): its output may be under any other name
/// (`tool_output`), so the compact JSON of every member but `tool_input` is recorded, never an
/// empty text (fail closed: what the agent read is recorded as read).
pub(super) fn output_text(event: HookEvent, o: &Map<String, Value>) -> String {
    let as_text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let response = o.get("tool_response");
    match (event, o.get("error"), response) {
        (HookEvent::PostToolUseFailure, Some(e), Some(r)) => {
            serde_json::json!({"error": e, "tool_response": r}).to_string()
        }
        (HookEvent::PostToolUseFailure, Some(e), None) => as_text(e),
        (_, _, Some(r)) => as_text(r),
        (_, _, None) => {
            let rest: Map<String, Value> = o
                .iter()
                .filter(|(k, _)| k.as_str() != "tool_input")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Value::Object(rest).to_string()
        }
    }
}

/// The event as a JSON object whose `hook_event_name`, when present, is `event`'s. Invalid
/// UTF-8 and escaped lone surrogates (`"\ud83d"`, which JavaScript's `JSON.stringify` writes
/// for a string that holds one) become U+FFFD first, so that they never make an event
/// unreadable (`spec/hooks.md` §2.1).
pub(super) fn parse(event: HookEvent, input: &[u8]) -> Result<Map<String, Value>, String> {
    let name = event.event_name();
    // A decision is taken only on the bytes the agent sent: a PreToolUse that is not UTF-8 is
    // not read with replacement characters (its arguments would match nothing, issue 25). A
    // tool output is still recorded, as well as it can be read.
    if event == HookEvent::PreToolUse {
        if let Err(e) = std::str::from_utf8(input) {
            return Err(format!(
                "unparseable {name} event: not UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ));
        }
    }
    let text = well_formed(input);
    let v: Value =
        serde_json::from_str(&text).map_err(|e| format!("unparseable {name} event: {e}"))?;
    let Value::Object(o) = v else {
        return Err(format!("unparseable {name} event: not a JSON object"));
    };
    match o.get("hook_event_name") {
        None => Ok(o),
        Some(Value::String(s)) if s == name => Ok(o),
        Some(other) => Err(format!("hook_event_name is {other}, expected {name}")),
    }
}

/// `input` as UTF-8 (invalid sequences replaced by U+FFFD) in which every `\uXXXX` escape of a
/// lone surrogate (a high surrogate not followed by an escaped low one, or a low surrogate not
/// preceded by a high one) is replaced by `\ufffd`. Escapes are found by scanning for `\`, which
/// in valid JSON occurs only inside strings; the replacement keeps the text's length.
pub(super) fn well_formed(input: &[u8]) -> Cow<'_, str> {
    let text = String::from_utf8_lossy(input);
    let b = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = b.get(at..at + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let mut lone = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit(i) {
            Some(0xD800..=0xDBFF) => {
                if matches!(unit(i + 6), Some(0xDC00..=0xDFFF)) {
                    i += 12;
                } else {
                    lone.push(i);
                    i += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                lone.push(i);
                i += 6;
            }
            Some(_) => i += 6,
            None => i += 2,
        }
    }
    if lone.is_empty() {
        return text;
    }
    let mut out = text.into_owned().into_bytes();
    for at in lone {
        out[at..at + 6].copy_from_slice(b"\\ufffd");
    }
    // Only ASCII bytes were replaced by ASCII bytes: still UTF-8.
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// The top-level `session_id` of an event that may be truncated (an oversized event's first
/// bytes) or malformed after that member: read in document order, the first top-level member
/// named `session_id` whose value is a non-empty string. Members of nested objects (inside
/// `tool_input` or `tool_response`) are never taken. `None` when there is none before the
/// input ends or stops being JSON. Never panics.
pub fn session_id_of(input: &[u8]) -> Option<String> {
    session_id_in(well_formed(input).as_bytes())
}

/// [`session_id_of`] over a stream, which is read only until the member is found (values are
/// skipped without being kept, so a stream of any length costs constant memory).
pub fn session_id_in(reader: impl Read) -> Option<String> {
    let mut found = None;
    let mut de = serde_json::Deserializer::from_reader(reader);
    // An error is expected: the visitor stops at the member, and truncated input ends early.
    let _ = TopLevelSessionId(&mut found).deserialize(&mut de);
    found
}

/// Reads a JSON object's members until `session_id`, storing it in `.0` and then stopping
/// (with an error, so that nothing after it is read).
struct TopLevelSessionId<'a>(&'a mut Option<String>);

impl<'de> DeserializeSeed<'de> for TopLevelSessionId<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopLevelSessionId<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a hook event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "session_id" {
                if let Value::String(s) = map.next_value::<Value>()? {
                    if !s.is_empty() {
                        *self.0 = Some(s);
                        return Err(serde::de::Error::custom("found"));
                    }
                }
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

pub(super) fn str_field<'a>(o: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match o.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(_) => Err(format!("`{key}` is not a non-empty string")),
        None => Err(format!("`{key}` is missing")),
    }
}
