//! The MCP gateway (`memlineage mcp proxy`, `spec/mcp.md` §6): an MCP server to the client and
//! an MCP client to one upstream server, over stdio, that enforces lineage for hosts without
//! hooks (Claude Desktop, Cursor, VS Code, …).
//!
//! - Every `tools/call` is decided before it is forwarded, by the hooks' own door ([`door`]):
//!   the gateway writes the PreToolUse event Claude Code would write for the same MCP tool and
//!   reads the outcome as the hooks' exit code. A refused call is answered with a tool result
//!   `isError: true` carrying the receipt, never reaches the upstream server, and is recorded.
//! - Every upstream text that may reach the model (tool results, resources, prompts, lists,
//!   instructions, sampling and elicitation requests) is recorded as an External read of
//!   `tool:mcp__<server>__<name>` before it is passed on ([`label`]); what the user types into
//!   an elicitation form is the user's statement.
//! - Everything else passes through as the peers wrote it: the gateway keeps no protocol state
//!   of its own (no initialisation, no ids of its own, no capabilities), so version
//!   negotiation, capabilities, pagination cursors, progress, cancellation, logging, sampling,
//!   elicitation, roots and methods it does not know are the client's and the server's
//!   ([`relay`]).
//! - It fails closed and answers in time: a request not answered within the deadline, an
//!   answer that is malformed, an upstream that exits, all give the client an error for that
//!   request; nothing undecided is forwarded; an answer is recorded before any later decision
//!   is taken, and one that cannot be recorded refuses every later call ([`wire`] for the
//!   errors, [`relay`] for the order).
//!
//! An upstream over Streamable HTTP is presented to the relay as a stdio server's two streams
//! ([`http`], feature `gateway-http`): the relay and its door are the same.
//!
//! The relay is a JSON-RPC line relay of its own, not rmcp's client and server: rmcp parses
//! every message into its typed model and writes it back, which drops fields its model does not
//! know, and its client initialises the upstream itself (`spec/dependencies.md`).

pub mod door;
#[cfg(feature = "gateway-http")]
pub mod http;
pub mod label;
pub mod relay;
pub mod wire;

pub use door::{is_gateway_session, Disposition, Door, Events, GATEWAY_SESSION};
pub use relay::{run, Ended, Options};

/// Most bytes of a server name (`mcp__<server>__<tool>`).
pub const MAX_SERVER_NAME: usize = 64;

/// Checks an upstream server's name: 1 to [`MAX_SERVER_NAME`] ASCII letters, digits, `-` and
/// `_`, without `__` (which separates the server from the tool in `mcp__<server>__<tool>`).
///
/// # Errors
/// A sentence saying what is wrong, for the command line.
pub fn check_server_name(name: &str) -> Result<(), String> {
    let ok_chars = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if name.is_empty() || name.len() > MAX_SERVER_NAME || !ok_chars || name.contains("__") {
        return Err(format!(
            "server name {name:?}: use 1 to {MAX_SERVER_NAME} ASCII letters, digits, `-` and \
             `_`, without `__` (tools are named mcp__<server>__<tool>)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_keep_the_tool_name_unambiguous() {
        assert!(check_server_name("filesystem").is_ok());
        assert!(check_server_name("my-fs_2").is_ok());
        for bad in ["", "a__b", "a b", "ü", &"x".repeat(65)] {
            let e = check_server_name(bad).unwrap_err();
            assert!(e.contains("mcp__<server>__<tool>"), "{e}");
        }
    }
}
