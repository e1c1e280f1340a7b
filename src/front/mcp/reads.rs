//! What the agent has read, as the server finds it (`spec/mcp.md` §1): the read set, shared with
//! the hooks' session files, and the key file shared with the hook processes under its lock.

use crate::front::hook::Sessions;
use crate::front::Keys;

use crate::front::keystore::KeyStore;
use crate::front::pin::StateDir;
use crate::front::{FrontError, Session};
use crate::record::{Role, WriterKey};
use std::path::PathBuf;

/// Where the gate check finds what the agent has read (`spec/mcp.md` §1).
#[non_exhaustive]
pub enum ReadSet {
    /// A hook session (`spec/hooks.md` §3), shared with the hooks: loaded before every tool
    /// call, saved after one that adds reads. Its unrecorded count refuses sensitive calls, as
    /// it does in the PreToolUse hook.
    Session {
        /// Where the hooks keep sessions (the binary: `LEDGER.sessions/`).
        sessions: Box<dyn Sessions + Send>,
        /// The agent's session id.
        id: String,
    },
    /// Every entry of the ledger: a value found in any recorded text is sourced there. For a
    /// server that is not told the session: it cannot know what the agent read.
    Ledger {
        /// The hooks' session files (`LEDGER.sessions/`), if any: tool output that any session
        /// could not record, or a session file that cannot be read, refuses sensitive calls.
        sessions_dir: Option<PathBuf>,
    },
}

/// The key file `LEDGER.key` read afresh at every use and saved as soon as a principal is
/// added: for a long-lived process (the MCP server) sharing the file with hook processes. The
/// caller holds the key-file lock ([`LedgerServer::with_lock`](super::LedgerServer::with_lock)).
#[derive(Debug)]
pub struct SharedKeyFile(pub PathBuf);

impl Keys for SharedKeyFile {
    fn key(&mut self, name: &str, role: Role) -> Result<(WriterKey, bool), FrontError> {
        let mut ks = KeyStore::load(&self.0)?;
        let (k, _, created) = ks.principal(name, Some(role))?;
        if created {
            ks.save(&self.0)?;
        }
        Ok((k, created))
    }
}

/// What a tool call is given of the read set.
pub(super) struct Reads<'a> {
    /// The session as loaded (Session mode) or every entry of the ledger (Ledger mode).
    pub(super) session: &'a mut Session,
    /// Unrecorded tool output counted outside `session` (in Ledger mode, every session's).
    pub(super) elsewhere: u64,
    /// Why the read set cannot be trusted, if it cannot (a damaged session file, an entry
    /// that does not verify): sensitive calls are refused.
    pub(super) broken: Option<String>,
    /// Whether `session` is what the agent read: Session mode while the session is the one the
    /// hooks recorded last ([`Front::is_newest_session`]). In Ledger mode it is every entry,
    /// which says nothing of the agent's context: a write there is untied (`spec/mcp.md` §2.1).
    pub(super) tied: bool,
    /// The state directory whose pin follows every checkpoint the server signs.
    pub(super) pin: Option<&'a StateDir>,
}

/// Takes the exclusive lock on the file at `path` (created if absent) until the file is
/// dropped, as the hooks do ([`crate::store::durable::lock_file`]).
pub(super) fn lock(path: &std::path::Path) -> Result<std::fs::File, String> {
    crate::store::durable::lock_file(path, LOCK_WAIT)
        .map_err(|e| format!("lock {}: {e}", path.display()))
}

/// How long a tool call waits for the key-file lock before it fails.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// The unrecorded count of every session file in `dir`, with the marks left apart from the
/// records (`<hex>.unrecorded/`, as [`crate::front::hook::FileSessions`] counts them at every
/// load); a file that cannot be read counts as broken (its session's state is unknown).
pub(super) fn unrecorded_everywhere(dir: &std::path::Path) -> (u64, Option<String>) {
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (0, None),
        Err(e) => return (0, Some(format!("session files {}: {e}", dir.display()))),
        Ok(it) => it,
    };
    let (mut total, mut broken) = (0u64, None);
    for entry in entries {
        let path = match entry {
            Ok(e) => e.path(),
            Err(e) => {
                broken = Some(format!("session files {}: {e}", dir.display()));
                continue;
            }
        };
        // Outputs a hook marked unrecorded apart from the record (`hooks.md` §5.2): one file
        // each, as every load of that session counts them; a directory that cannot be read
        // counts as one.
        if path.extension().is_some_and(|x| x == "unrecorded") {
            let marks = match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => std::fs::read_dir(&path).map_or(1, |d| d.count() as u64),
                _ => 1,
            };
            total = total.saturating_add(marks.max(1));
            continue;
        }
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        match crate::store::durable::read_regular(&path, crate::front::hook::MAX_SESSION_BYTES)
            .map_err(|e| e.to_string())
            .and_then(|b| b.ok_or_else(|| "gone".to_string()))
            .and_then(|b| crate::front::hook::parse_record(&b).map_err(|e| e.to_string()))
        {
            // memlineage 0.1's shared "unknown session" is ignored, as the hooks ignore it.
            Ok(s) if s.id.is_empty() => {}
            Ok(s) => total = total.saturating_add(s.unrecorded),
            Err(e) => broken = Some(format!("session file {}: {e}", path.display())),
        }
    }
    (total, broken)
}
