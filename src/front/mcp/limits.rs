//! The bounds on what a tool call is given and sends back (`spec/mcp.md` §4): entry ids per call,
//! quoted strings, error messages and results.

use super::{MAX_IDS, MAX_MESSAGE_BYTES, MAX_QUOTE_BYTES, MAX_RESULT_BYTES};
use crate::record::EntryId;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use rmcp::ErrorData;
use std::borrow::Cow;

/// `s` cut to at most `max` bytes on a character boundary, with `…` when cut.
pub(crate) fn cut(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &s[..end]))
}

/// A caller's string for an error message: whole when short, else its start and its length.
pub(super) fn quote(s: &str) -> String {
    if s.len() <= MAX_QUOTE_BYTES {
        format!("`{s}`")
    } else {
        format!("`{}` ({} bytes)", cut(s, MAX_QUOTE_BYTES), s.len())
    }
}

pub(super) fn msg(e: impl std::fmt::Display) -> String {
    cut(&e.to_string(), MAX_MESSAGE_BYTES).into_owned()
}

pub(super) fn id_arg(s: &str) -> Result<EntryId, String> {
    EntryId::from_hex(s).map_err(|_| format!("{} is not an entry id (64 hex digits)", quote(s)))
}

pub(super) fn too_many(n: usize) -> Result<(), String> {
    if n > MAX_IDS {
        return Err(format!(
            "{n} entry ids in one call: at most {MAX_IDS}; split the request"
        ));
    }
    Ok(())
}

/// Bounds what a tool call sends back: an error's text to [`MAX_MESSAGE_BYTES`], a result to
/// [`MAX_RESULT_BYTES`] (replaced by a tool error past it), a JSON-RPC error's message to
/// [`MAX_MESSAGE_BYTES`] without data.
pub(super) fn bounded(
    r: Result<CallToolResponse, ErrorData>,
) -> Result<CallToolResponse, ErrorData> {
    match r {
        Ok(CallToolResponse::Complete(mut result)) => {
            if result.is_error == Some(true) {
                let text: String = result
                    .content
                    .iter()
                    .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
                    .collect::<Vec<_>>()
                    .join("\n");
                result.content = vec![ContentBlock::text(msg(text))];
                result.structured_content = None;
            }
            let size = serde_json::to_vec(&result).map_or(usize::MAX, |v| v.len());
            if size > MAX_RESULT_BYTES {
                result = CallToolResult::error(vec![ContentBlock::text(format!(
                    "the result ({size} bytes) is over the {MAX_RESULT_BYTES}-byte limit: \
                     ask for less"
                ))]);
            }
            Ok(result.into())
        }
        Ok(other) => Ok(other),
        Err(mut e) => {
            e.message = Cow::Owned(msg(&e.message));
            e.data = None;
            Err(e)
        }
    }
}
