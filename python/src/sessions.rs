//! The sessions a Python handle holds between calls (`spec/python.md` §3, "Long sessions").
//!
//! A session's record grows with every read (a LangGraph thread reads and writes for as long
//! as it lives), so reading it from its file and parsing it at every call costs what the whole
//! history costs. The handle keeps each session it used in memory, with the library's memo of
//! its seal ([`memlineage::front::SessionMemo`]), and takes it from the file again only when
//! the file changed since this handle read or wrote it (another process — a hook, the MCP
//! server, another handle — wrote the session): its size, modification and status-change
//! times and inode (and the same of the directory of the marks a hook leaves apart from the
//! file, which the file does not show). A file changed by someone else is read and its seal
//! checked in full, as before; a file changed without changing those leaves this handle on its
//! own copy, which is what it last verified or wrote. A ledger in memory has no files: the
//! held sessions are the sessions.

use crate::errors::BindError;
use memlineage::front::hook::{FileSessions, Sessions};
use memlineage::front::Session;
use std::collections::HashMap;
use std::path::Path;
use std::time::SystemTime;

/// How many sessions a file ledger's handle holds before it lets go of all but the one in use
/// (they are read from their files again when next used).
const MAX_HELD: usize = 256;

/// The sessions of one handle.
pub struct SessionCache {
    /// The hooks' session files of a file ledger; `None` for a ledger in memory.
    files: Option<FileSessions>,
    held: HashMap<String, (Session, Option<Version>)>,
}

/// What identifies one version of a held session: its file, and the directory of the marks
/// a hook leaves apart from the file for an output it could not record (`spec/hooks.md` §5.2,
/// counted by [`FileSessions::load`] at every load: a mark changes nothing in the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Version {
    file: Stamp,
    marks: Option<Stamp>,
}

/// The version of session `id` in `files` now; `None` when its file cannot be stat'ed.
fn version(files: &FileSessions, id: &str) -> Option<Version> {
    let file = files.path(id);
    Some(Version {
        file: stamp(&file)?,
        marks: stamp(&file.with_extension("unrecorded")),
    })
}

/// What identifies one version of a session file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    /// Inode and status-change time (`ctime`, which no `utime` call can set back).
    #[cfg(unix)]
    node: (u64, u64, i64, i64),
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::symlink_metadata(path).ok()?;
    #[cfg(unix)]
    let node = {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino(), m.ctime(), m.ctime_nsec())
    };
    Some(Stamp {
        len: m.len(),
        modified: m.modified().ok(),
        #[cfg(unix)]
        node,
    })
}

/// The fields that change when a call records something: reads only grow (or are cut by the
/// front's own code), so their count stands for them.
#[derive(PartialEq, Eq)]
pub struct Mark {
    reads: usize,
    unrecorded: u64,
    seal_intact: bool,
}

impl Mark {
    /// The mark of `s` now (its seal's presence stands for whether it was sealed).
    pub fn of(s: &Session) -> Self {
        Mark {
            reads: s.reads().len(),
            unrecorded: s.unrecorded,
            seal_intact: s.seal.is_some(),
        }
    }

    /// How many reads the session had.
    pub fn reads(&self) -> usize {
        self.reads
    }

    /// Whether only reads were added since `before` (the context entry, coverage, `seen` and
    /// seal follow from them).
    pub fn only_reads_grew_from(&self, before: &Mark) -> bool {
        self.reads > before.reads
            && self.unrecorded == before.unrecorded
            && self.seal_intact == before.seal_intact
    }
}

impl SessionCache {
    /// The sessions of a file ledger, kept in `files`.
    pub fn files(files: FileSessions) -> Self {
        SessionCache {
            files: Some(files),
            held: HashMap::new(),
        }
    }

    /// The sessions of a ledger in memory.
    pub fn memory() -> Self {
        SessionCache {
            files: None,
            held: HashMap::new(),
        }
    }

    /// Session `id` for one call (the caller holds the ledger's lock): the held copy if its
    /// file and its marks apart are as this handle left them, else the file's (empty if none).
    ///
    /// # Errors
    /// The file cannot be read or parsed, or the session was pruned (`HookError`).
    pub fn take(&mut self, id: &str) -> Result<Session, BindError> {
        let held = self.held.remove(id);
        let Some(files) = &mut self.files else {
            return Ok(held.map_or_else(|| Session::new(id), |h| h.0));
        };
        if let Some((session, Some(was))) = held {
            if version(files, id) == Some(was) {
                return Ok(session);
            }
        }
        Ok(files.load(id)?)
    }

    /// Gives `session` back after a call, writing it to its file first if `changed`.
    ///
    /// # Errors
    /// The file cannot be written: the session is then not held (the next call reads the
    /// file, and what the ledger holds for the session is caught up from the ledger).
    pub fn give_back(&mut self, session: Session, changed: bool) -> Result<(), BindError> {
        let Some(files) = &mut self.files else {
            self.held.insert(session.id.clone(), (session, None));
            return Ok(());
        };
        if changed {
            files.save(&session)?;
        }
        if self.held.len() >= MAX_HELD {
            self.held.clear();
        }
        let now = version(files, &session.id);
        self.held.insert(session.id.clone(), (session, now));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Res = Result<(), Box<dyn std::error::Error>>;

    /// A directory of its own under the system's temporary directory, removed on drop.
    struct Dir(std::path::PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir(what: &str) -> Result<Dir, std::io::Error> {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let d = std::env::temp_dir().join(format!("ml-py-{what}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&d)?;
        Ok(Dir(d))
    }

    /// A hook that could not record an output of the session marks it apart from the record
    /// (`spec/hooks.md` §5.2), without touching the record's file: the held copy must count
    /// it as a fresh load does. Before attack review 47 the handle answered from the copy it
    /// held while the file was unchanged, and the output that could not be recorded did not
    /// refuse the session's sensitive calls.
    #[test]
    fn a_mark_left_apart_after_the_session_was_held_is_counted() -> Res {
        let d = dir("marks")?;
        let mut cache = SessionCache::files(FileSessions::new(d.0.clone()));
        let s = cache.take("t")?;
        assert_eq!(s.unrecorded, 0);
        cache.give_back(s, true)?;
        let held = cache.take("t")?;
        assert_eq!(held.unrecorded, 0);
        cache.give_back(held, false)?;
        FileSessions::new(d.0.clone()).mark_unrecorded_apart("t")?;
        let fresh = FileSessions::new(d.0.clone()).load("t")?;
        assert_eq!(fresh.unrecorded, 1, "a fresh load counts the mark");
        let kept = cache.take("t")?;
        assert_eq!(kept.unrecorded, 1, "the held copy missed the mark");
        Ok(())
    }
}
