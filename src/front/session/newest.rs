//! Whose prompt or tool output the ledger recorded last (`spec/mcp.md` §1 item 3, §2.1): a
//! front that holds a fixed session id ties an agent write to that session's reads only while
//! that session is the newest reader.

use super::{session_context, Session};
use crate::front::{Front, Keys, Kind};
use crate::record::Hash32;
use crate::store::Store;

/// Whose prompt or tool output the ledger recorded last ([`Front::newest_reader`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NewestReader {
    /// No entry of the ledger is a session's prompt or tool output.
    Nobody,
    /// The session whose entries carry this context hash ([`session_context`]).
    Session(Hash32),
    /// The newest such entry cannot be verified: it may be any session's.
    Unknown,
}

impl<S: Store, K: Keys> Front<S, K> {
    /// Whether `session` is the one whose prompt or tool output the ledger recorded last
    /// ([`Front::newest_reader`]): a front that holds a fixed session id (the MCP server's
    /// `--session`) ties an agent write to that session's reads only while this holds. After
    /// Claude Code's `/clear` the hooks record a new session the server does not read, and a
    /// memory written then is derived from an unknown context instead (`spec/mcp.md` §2.1).
    /// With no session's prompt or tool output in the ledger, no other session is known and
    /// the answer is yes; when the newest one cannot be verified, no.
    pub fn is_newest_session(&mut self, session: &Session) -> bool {
        match self.newest_reader() {
            NewestReader::Nobody => true,
            NewestReader::Session(c) => c == session_context(&session.id),
            NewestReader::Unknown => false,
        }
    }

    /// The session whose prompt or tool output (kind `prompt` or `tool_result`, written for a
    /// session: its context hash is not its content hash, which [`crate::record::ProvEntry::new`]
    /// leaves for an entry of no session) is the newest in the ledger, whatever came after it
    /// (`spec/mcp.md` §1 item 3). Tracked incrementally: the first call reads back from the
    /// ledger's end to the newest such entry, later calls read only the entries appended
    /// since, so entries that are neither (memories, context entries, flags) can neither hide
    /// it nor cost a later call anything. An entry that does not verify, or is not the entry
    /// the handle believes at its index, may be any session's: the answer is then
    /// [`NewestReader::Unknown`] until a newer prompt or tool output verifies (fail closed).
    pub fn newest_reader(&mut self) -> NewestReader {
        self.verified_here();
        let len = self.ledger.len();
        let found = match self.newest {
            Some((scanned, known)) if scanned <= len => (scanned..len)
                .filter_map(|i| self.reader_at(i))
                .last()
                .unwrap_or(known),
            // First call, or the ledger is shorter than what was read: from the end.
            _ => (0..len)
                .rev()
                .find_map(|i| self.reader_at(i))
                .unwrap_or(NewestReader::Nobody),
        };
        self.newest = Some((len, found));
        found
    }

    /// The session of the entry at leaf `index` if it is a session's prompt or tool output,
    /// [`NewestReader::Unknown`] if it cannot be verified, `None` otherwise.
    fn reader_at(&self, index: u64) -> Option<NewestReader> {
        let Ok(e) = self.ledger.get_by_index(index) else {
            return Some(NewestReader::Unknown);
        };
        let p = e.entry();
        if !matches!(p.kind, Kind::Prompt | Kind::ToolResult) || p.context_hash == p.content_hash {
            return None;
        }
        Some(NewestReader::Session(p.context_hash))
    }
}
