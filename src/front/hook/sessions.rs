//! Where sessions' read sets live between hook invocations (`spec/hooks.md` §3): in memory for
//! tests and embedders, or one file per session beside the ledger, pruned after a month.

mod journal;

use super::{HookError, MAX_SESSION_BYTES, PRUNE_EVERY};
use crate::front::Session;
use crate::record::Hash32;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub(crate) use journal::JournalError;

/// Where sessions' read sets live between hook invocations.
pub trait Sessions {
    /// The session `id` (empty if never seen).
    ///
    /// # Errors
    /// [`HookError`] when it exists but cannot be read, or was pruned.
    fn load(&mut self, id: &str) -> Result<Session, HookError>;
    /// Stores `session` under its id.
    ///
    /// # Errors
    /// [`HookError`] when it cannot be written.
    fn save(&mut self, session: &Session) -> Result<(), HookError>;
}

/// Sessions kept in memory (tests, embedding runtimes).
#[derive(Debug, Default)]
pub struct MemorySessions(pub HashMap<String, Session>);

impl Sessions for MemorySessions {
    fn load(&mut self, id: &str) -> Result<Session, HookError> {
        Ok(self.0.get(id).cloned().unwrap_or_else(|| Session::new(id)))
    }

    fn save(&mut self, session: &Session) -> Result<(), HookError> {
        self.0.insert(session.id.clone(), session.clone());
        Ok(())
    }
}

/// Sessions as JSON files in a directory (`LEDGER.sessions/`), one per session, named by the
/// SHA-256 of the session id in hex (ids come from the agent and are not trusted as names):
/// `<hex>.json` holds a live session, an empty `<hex>.pruned` marks one that was pruned
/// (`spec/hooks.md` §6). The caller serialises invocations (the binary holds
/// `LEDGER.key.lock`).
///
/// A record is a journal (`spec/hooks.md` §6.3): a save that only adds reads to what the file
/// holds appends one line, and a long-lived `FileSessions` (the hook server, the MCP server,
/// a Python handle) keeps the last record it loaded or saved of each session, with the file's
/// identity as it left it (device, inode, length, modification and status-change times), and
/// loads it again without reading the file while the file is unchanged: so a load and a save
/// cost what the new reads cost, not what the session's whole history does. A file changed by
/// anyone else (another process, the agent) is read and parsed again.
pub struct FileSessions {
    /// The directory of the session files.
    dir: PathBuf,
    /// The records kept, by session id.
    kept: HashMap<String, Kept>,
}

/// How many records a [`FileSessions`] keeps before it lets go of all of them (they are read
/// from their files again when next used).
const MAX_KEPT: usize = 64;

/// How long a journal may grow before a save rewrites it whole: at most twice its first line
/// (so a load parses at most twice the record), or this many bytes for a small record.
const MIN_JOURNAL_BYTES: u64 = 64 << 10;

/// A record as this `FileSessions` last loaded or saved it.
struct Kept {
    /// The file as it was left.
    stamp: Stamp,
    /// What it holds (without the marks apart).
    record: Session,
    /// Bytes of its first line.
    first: u64,
    /// Whether a delta may be appended ([`journal::Parsed::appendable`]).
    appendable: bool,
}

/// What identifies one version of a session file: device, inode, length, and modification
/// and status-change times in nanoseconds (`ctime`, which no `utime` call can set back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// The stamp of a regular file's metadata (`None` for anything else, and where there is no
    /// inode to tell files apart: nothing is kept there).
    fn of(m: &std::fs::Metadata) -> Option<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            m.is_file().then(|| Stamp {
                dev: m.dev(),
                ino: m.ino(),
                len: m.len(),
                mtime: (m.mtime(), m.mtime_nsec()),
                ctime: (m.ctime(), m.ctime_nsec()),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = m;
            None
        }
    }

    /// The stamp of what is at `path` now, not following a symbolic link.
    fn at(path: &Path) -> Option<Self> {
        Self::of(&std::fs::symlink_metadata(path).ok()?)
    }
}

impl std::fmt::Debug for FileSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSessions")
            .field("dir", &self.dir)
            .field("kept", &self.kept.len())
            .finish()
    }
}

/// Parses the bytes of a session file (`spec/hooks.md` §6.3): the one way a record is read,
/// by the sessions and by the MCP server's count of unrecorded output. Does not panic.
///
/// # Errors
/// [`JournalError`] when the bytes are not a record.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) fn parse_record(bytes: &[u8]) -> Result<Session, JournalError> {
    journal::parse(bytes).map(|p| p.record)
}

/// File name of the stamp whose modification time records the last opportunistic prune.
const PRUNE_STAMP: &str = ".pruned-at";

impl FileSessions {
    /// The sessions of the ledger at `ledger`: the directory `LEDGER.sessions/`.
    pub fn beside(ledger: &Path) -> Self {
        let mut dir = ledger.as_os_str().to_owned();
        dir.push(".sessions");
        FileSessions::new(PathBuf::from(dir))
    }

    /// The sessions kept in the directory `dir` (created at the first save).
    pub fn new(dir: PathBuf) -> Self {
        FileSessions {
            dir,
            kept: HashMap::new(),
        }
    }

    /// The directory of the session files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn name(id: &str) -> String {
        hex::encode(Hash32::digest(id.as_bytes()).0)
    }

    /// The file that holds session `id` (`<hex(H(id))>.json`): a front that keeps a loaded
    /// session in memory checks it for changes by other processes.
    pub fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{}.json", Self::name(id)))
    }

    fn marker(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{}.pruned", Self::name(id)))
    }

    /// The directory of session `id`'s unrecorded-output marks (`spec/hooks.md` §5).
    fn unrecorded_dir(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{}.unrecorded", Self::name(id)))
    }

    /// Marks one output of session `id` unrecorded without reading or rewriting its record
    /// and without the ledger's lock: one new empty file of a fresh name, counted by every
    /// later [`Sessions::load`]. For a hook that cannot finish (its watchdog fired, the lock
    /// could not be had): a read-modify-write there could block or be lost; this cannot be
    /// lost to a concurrent save (`spec/hooks.md` §5).
    ///
    /// # Errors
    /// [`HookError::Session`] when the mark cannot be written.
    pub fn mark_unrecorded_apart(&self, id: &str) -> Result<(), HookError> {
        let dir = self.unrecorded_dir(id);
        let err = |e: std::io::Error| HookError::Session {
            path: dir.display().to_string(),
            cause: e.to_string(),
        };
        std::fs::create_dir_all(&dir).map_err(err)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let name = format!("{}-{nanos}", std::process::id());
        crate::store::durable::create_regular(&dir.join(name)).map_err(err)?;
        Ok(())
    }

    /// How many marks [`FileSessions::mark_unrecorded_apart`] left for session `id`; one
    /// `stat` when there are none. A mark directory that cannot be read counts as one mark
    /// (fail closed).
    fn unrecorded_apart(&self, id: &str) -> u64 {
        let dir = self.unrecorded_dir(id);
        match std::fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Ok(m) if m.is_dir() => std::fs::read_dir(&dir)
                .map(|d| d.count() as u64)
                .unwrap_or(1)
                .max(1),
            _ => 1,
        }
    }

    /// Prunes every session file not written for longer than `older_than` at time `now`: the
    /// file is replaced by an empty `<hex>.pruned` marker, so that the session, if it ever
    /// comes back, is refused instead of starting over with an empty read set (which would
    /// turn its denials into allows). Left-over `*.json.tmp` files of the same age go too.
    /// Markers are kept. Returns the number of sessions pruned and kept.
    ///
    /// # Errors
    /// [`HookError::Session`] when the directory cannot be listed or a file replaced; sessions
    /// pruned before the error stay pruned. A missing directory prunes nothing.
    pub fn prune(&self, older_than: Duration, now: SystemTime) -> Result<Pruned, HookError> {
        let mut done = Pruned::default();
        let dir_err = |e: std::io::Error| HookError::Session {
            path: self.dir.display().to_string(),
            cause: e.to_string(),
        };
        let entries = match std::fs::read_dir(&self.dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(done),
            r => r.map_err(dir_err)?,
        };
        for entry in entries {
            let entry = entry.map_err(dir_err)?;
            let path = entry.path();
            let err = |e: std::io::Error| HookError::Session {
                path: path.display().to_string(),
                cause: e.to_string(),
            };
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str() else {
                continue;
            };
            let (stem, tmp) = if let Some(s) = name.strip_suffix(".json") {
                (s, false)
            } else if let Some(s) = name.strip_suffix(".json.tmp") {
                (s, true)
            } else {
                continue;
            };
            if stem.len() != 64 || !stem.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let modified = entry.metadata().and_then(|m| m.modified()).map_err(err)?;
            let age = now.duration_since(modified).unwrap_or(Duration::ZERO);
            if age <= older_than {
                done.kept += u64::from(!tmp);
                continue;
            }
            if !tmp {
                // The marker first: a crash between the two steps leaves both files, and the
                // session file wins on load.
                crate::store::durable::create_regular(&self.dir.join(format!("{stem}.pruned")))
                    .map_err(err)?;
                done.pruned += 1;
            }
            std::fs::remove_file(&path).map_err(err)?;
        }
        Ok(done)
    }

    /// [`FileSessions::prune`] with `older_than`, if the last prune (the modification time of
    /// `LEDGER.sessions/.pruned-at`) is more than [`PRUNE_EVERY`] before `now` or never
    /// happened; `None` when it was not due. Cost when not due: one `stat`.
    ///
    /// # Errors
    /// As [`FileSessions::prune`], or when the stamp cannot be written.
    pub fn prune_if_due(
        &self,
        older_than: Duration,
        now: SystemTime,
    ) -> Result<Option<Pruned>, HookError> {
        let stamp = self.dir.join(PRUNE_STAMP);
        let last = std::fs::metadata(&stamp).and_then(|m| m.modified()).ok();
        if last.is_some_and(|t| now.duration_since(t).unwrap_or(Duration::ZERO) < PRUNE_EVERY) {
            return Ok(None);
        }
        if !self.dir.is_dir() {
            return Ok(None);
        }
        let done = self.prune(older_than, now)?;
        // Never through a link planted there: it would truncate the file it points to.
        crate::store::durable::create_regular(&stamp)
            .and_then(|f| f.set_modified(now))
            .map_err(|e| HookError::Session {
                path: stamp.display().to_string(),
                cause: e.to_string(),
            })?;
        Ok(Some(done))
    }
}

/// What [`FileSessions::prune`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Sessions replaced by a pruned marker.
    pub pruned: u64,
    /// Sessions left as they were (younger than the limit).
    pub kept: u64,
}

impl Sessions for FileSessions {
    fn load(&mut self, id: &str) -> Result<Session, HookError> {
        let mut s = self.load_record(id)?;
        // Outputs marked apart (a hook that could not finish) count as unrecorded.
        s.unrecorded = s.unrecorded.saturating_add(self.unrecorded_apart(id));
        Ok(s)
    }

    fn save(&mut self, session: &Session) -> Result<(), HookError> {
        let path = self.path(&session.id);
        let err = |e: std::io::Error| HookError::Session {
            path: path.display().to_string(),
            cause: e.to_string(),
        };
        let json = |e: serde_json::Error| HookError::Session {
            path: path.display().to_string(),
            cause: e.to_string(),
        };
        // Whatever happens next, the copy kept is not what the file holds until it is written.
        let kept = self.kept.remove(&session.id);
        std::fs::create_dir_all(&self.dir).map_err(err)?;
        // The marks apart are counted at every load, not saved into the record (else each
        // load and save would count them again).
        let apart = self.unrecorded_apart(&session.id);
        let mut record = session.clone();
        record.unrecorded = record.unrecorded.saturating_sub(apart);
        let appended = match kept {
            Some(k) => self.append(&path, k, record).map_err(err)?,
            None => Err(record),
        };
        let kept = match appended {
            Ok(k) => k,
            Err(record) => {
                let text = journal::whole(&record).map_err(json)?;
                // A temporary of an unguessable name, renamed over the record (a directory made
                // at a fixed temporary name used to fail every save, issue 25).
                let meta =
                    crate::store::durable::write_atomic_metadata(&path, &text).map_err(err)?;
                match Stamp::of(&meta) {
                    Some(stamp) => Kept {
                        stamp,
                        record,
                        first: text.len() as u64,
                        appendable: true,
                    },
                    None => return Ok(()),
                }
            }
        };
        self.keep(kept);
        Ok(())
    }
}

impl FileSessions {
    /// Session `id`'s record as stored (or a new one), without the marks apart: the kept copy
    /// if the file is as this `FileSessions` left it, else the file parsed (and kept).
    fn load_record(&mut self, id: &str) -> Result<Session, HookError> {
        let path = self.path(id);
        if let Some(k) = self.kept.get(id) {
            if Stamp::at(&path) == Some(k.stamp) {
                return Ok(k.record.clone());
            }
            self.kept.remove(id);
        }
        let err = |e: String| HookError::Session {
            path: path.display().to_string(),
            cause: e,
        };
        // A regular file only, never waited on (a FIFO there hung every hook, issue 25).
        match crate::store::durable::read_regular_metadata(&path, MAX_SESSION_BYTES) {
            Ok(None) => {
                if self.marker(id).exists() {
                    return Err(HookError::Pruned {
                        session: id.to_string(),
                    });
                }
                Ok(Session::new(id))
            }
            Err(e) => Err(err(e.to_string())),
            Ok(Some((bytes, meta))) => {
                let parsed = journal::parse(&bytes).map_err(|e| err(e.to_string()))?;
                if parsed.record.id != id {
                    return Err(err("holds another session".into()));
                }
                let record = parsed.record.clone();
                // Kept only when the file read is the one at `path` and was not written while
                // it was read.
                match Stamp::of(&meta) {
                    Some(stamp) if stamp.len == bytes.len() as u64 => self.keep(Kept {
                        stamp,
                        record: parsed.record,
                        first: parsed.first,
                        appendable: parsed.appendable,
                    }),
                    _ => {}
                }
                Ok(record)
            }
        }
    }

    /// Appends to the file at `path` the delta that turns `kept` into `record`, if the file is
    /// still what `kept` says, `record` extends it, and the journal stays short enough
    /// ([`MIN_JOURNAL_BYTES`]); the new kept copy, or `record` back when the file must be
    /// rewritten whole instead. One `write` (`O_APPEND`), then `fsync`.
    ///
    /// # Errors
    /// The write or the sync failed: the file may end with a part of the line, which the
    /// next load leaves out (and the next save rewrites).
    fn append(
        &self,
        path: &Path,
        kept: Kept,
        record: Session,
    ) -> std::io::Result<Result<Kept, Session>> {
        use std::io::Write;
        if !kept.appendable {
            return Ok(Err(record));
        }
        let Ok(Some(line)) = journal::delta(&kept.record, &record) else {
            return Ok(Err(record));
        };
        let end = kept.stamp.len.saturating_add(line.len() as u64);
        if end > kept.first.saturating_mul(2).max(MIN_JOURNAL_BYTES) || end > MAX_SESSION_BYTES {
            return Ok(Err(record));
        }
        // Never through a link, never blocking; and only onto the very file kept.
        let Ok(mut f) = crate::store::durable::open_append(path) else {
            return Ok(Err(record));
        };
        if f.metadata().ok().as_ref().and_then(Stamp::of) != Some(kept.stamp) {
            return Ok(Err(record));
        }
        f.write_all(&line)?;
        f.sync_all()?;
        let Some(stamp) = Stamp::of(&f.metadata()?) else {
            return Ok(Err(record));
        };
        Ok(Ok(Kept {
            stamp,
            record,
            first: kept.first,
            appendable: true,
        }))
    }

    /// Keeps `k` as session `k.record.id`'s copy.
    fn keep(&mut self, k: Kept) {
        if self.kept.len() >= MAX_KEPT && !self.kept.contains_key(&k.record.id) {
            self.kept.clear();
        }
        self.kept.insert(k.record.id.clone(), k);
    }
}

#[cfg(test)]
mod tests;
