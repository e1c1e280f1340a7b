//! Client-side checkpoint state and fork detection (`spec/log.md` §9).
//!
//! A client that remembers the newest checkpoint it verified for each log can tell when the log
//! shows it a history that contradicts an earlier one: a smaller tree (rollback), another root
//! for the same size (split view, proven by two notes the log key signed), or growth without a
//! valid consistency proof. [`CheckpointState`] is that memory, saved as a small JSON file
//! (`memlineage/checkpoint-state@v1`, `spec/log.md` §9.3).
//!
//! The state only ever holds checkpoints that passed [`LogVerifier::verify`]: it takes
//! [`VerifiedCheckpoint`]s, never a bare size or root, and re-verifies every note it loads.

use super::{CheckpointError, ConsistencyProof, LogVerifier, ProofError, RootHash};
use super::{VerifiedCheckpoint, MAX_CHECKPOINT_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};

/// The `format` member of a state file: `memlineage/checkpoint-state@v1`.
pub const STATE_FORMAT: &str = "memlineage/checkpoint-state@v1";

/// Largest state file read, in bytes (32 MiB): room for about 250 logs whose checkpoint and
/// split-view notes are both [`MAX_CHECKPOINT_BYTES`].
pub const MAX_STATE_BYTES: u64 = 32 * 1024 * 1024;

/// The newest verified checkpoint of each log a client follows, keyed by the log's verifier key
/// (which names the origin and the key), plus split-view evidence.
///
/// The state is trust on first use: the first checkpoint seen for a log is accepted as is.
/// Every later one must extend it (rules in [`CheckpointState::update`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointState {
    // INVARIANT: the key is `log.verifier.vkey()`; `latest` and both notes of `split_view`
    // verify under `verifier`; a `split_view` has `remembered == latest`.
    logs: BTreeMap<String, LogRecord>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct LogRecord {
    verifier: LogVerifier,
    latest: VerifiedCheckpoint,
    split_view: Option<SplitViewEvidence>,
}

/// What [`CheckpointState::update`] did with an acceptable checkpoint.
///
/// Exhaustive: the three transitions of a client's checkpoint state (`spec/log.md`); every
/// caller reports each, so a new one must break its build rather than fall into a wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// The first checkpoint for this log: remembered without any proof (trust on first use).
    TrustedOnFirstUse,
    /// The remembered checkpoint again (same size and root); nothing changed.
    Unchanged,
    /// A larger tree, proven consistent with the remembered one, replaced it.
    Advanced {
        /// The remembered size before the update.
        old_size: u64,
        /// The new size.
        new_size: u64,
    },
}

/// Proof that a log signed two different roots for one tree size: both signed notes, each of
/// which verifies under the log's verifier key. Anyone with the key can check it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitViewEvidence {
    vkey: String,
    remembered: VerifiedCheckpoint,
    got: VerifiedCheckpoint,
}

impl SplitViewEvidence {
    /// The log's verifier key.
    pub fn vkey(&self) -> &str {
        &self.vkey
    }

    /// The tree size both checkpoints claim.
    pub fn size(&self) -> u64 {
        self.remembered.size()
    }

    /// The checkpoint the state remembered (its note is [`VerifiedCheckpoint::note`]).
    pub fn remembered(&self) -> &VerifiedCheckpoint {
        &self.remembered
    }

    /// The conflicting checkpoint that was offered.
    pub fn got(&self) -> &VerifiedCheckpoint {
        &self.got
    }
}

impl CheckpointState {
    /// An empty state (no log seen yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// Offers a verified checkpoint of `log` (`spec/log.md` §9.2):
    ///
    /// 1. `new`'s note must verify under `log` (else [`ForkError::WrongLog`]); the state is keyed
    ///    by `log.vkey()`;
    /// 2. if this log already has split-view evidence, reject ([`ForkError::KnownSplitView`]);
    /// 3. no remembered checkpoint: remember `new` ([`Update::TrustedOnFirstUse`]; `proof` is
    ///    ignored);
    /// 4. same size, same root: [`Update::Unchanged`] (the note is not replaced);
    /// 5. same size, other root: keep both notes as [`SplitViewEvidence`], reject
    ///    ([`ForkError::SplitView`]); later updates of this log fail at step 2;
    /// 6. smaller size: reject ([`ForkError::Rollback`]);
    /// 7. larger size: if the remembered size is 0 no proof is needed; otherwise `proof` must be
    ///    present ([`ForkError::MissingProof`]) and pass
    ///    `remembered.verify_consistency(&new, proof)` ([`ForkError::ConsistencyFailed`]); then
    ///    `new` replaces the remembered checkpoint ([`Update::Advanced`]).
    ///
    /// A failed update leaves the remembered checkpoint unchanged (step 5 only adds evidence).
    /// Nothing is written to disk: call [`CheckpointState::save`].
    ///
    /// # Errors
    /// As listed; all but [`ForkError::WrongLog`] (a caller error) can be triggered by untrusted
    /// input. Does not panic.
    pub fn update(
        &mut self,
        log: &LogVerifier,
        new: VerifiedCheckpoint,
        proof: Option<&ConsistencyProof>,
    ) -> Result<Update, ForkError> {
        let new = log.verify(new.note()).map_err(ForkError::WrongLog)?;
        let vkey = log.vkey();
        let Some(rec) = self.logs.get_mut(&vkey) else {
            self.logs.insert(
                vkey,
                LogRecord {
                    verifier: log.clone(),
                    latest: new,
                    split_view: None,
                },
            );
            return Ok(Update::TrustedOnFirstUse);
        };
        if let Some(e) = &rec.split_view {
            return Err(ForkError::KnownSplitView { size: e.size() });
        }
        let old = &rec.latest;
        let (m, n) = (old.size(), new.size());
        if n == m {
            if new.root() == old.root() {
                return Ok(Update::Unchanged);
            }
            let err = ForkError::SplitView {
                size: n,
                remembered_root: old.root(),
                got_root: new.root(),
            };
            rec.split_view = Some(SplitViewEvidence {
                vkey,
                remembered: old.clone(),
                got: new,
            });
            return Err(err);
        }
        if n < m {
            return Err(ForkError::Rollback {
                remembered: m,
                got: n,
            });
        }
        if m > 0 {
            let proof = proof.ok_or(ForkError::MissingProof {
                remembered: m,
                got: n,
            })?;
            old.verify_consistency(&new, proof)
                .map_err(|source| ForkError::ConsistencyFailed {
                    remembered: m,
                    got: n,
                    source,
                })?;
        }
        rec.latest = new;
        Ok(Update::Advanced {
            old_size: m,
            new_size: n,
        })
    }

    /// The remembered checkpoint of `log`, if any.
    pub fn latest(&self, log: &LogVerifier) -> Option<&VerifiedCheckpoint> {
        self.logs.get(&log.vkey()).map(|r| &r.latest)
    }

    /// All split-view evidence, ordered by log verifier key (at most one per log).
    pub fn evidence(&self) -> impl Iterator<Item = &SplitViewEvidence> {
        self.logs.values().filter_map(|r| r.split_view.as_ref())
    }

    /// Number of logs with a remembered checkpoint.
    pub fn len(&self) -> usize {
        self.logs.len()
    }

    /// Whether no log has been seen.
    pub fn is_empty(&self) -> bool {
        self.logs.is_empty()
    }

    /// Reads a state file (`spec/log.md` §9.3). A missing, empty, truncated or corrupt file is an
    /// error, never an empty state: a client starting fresh calls [`CheckpointState::new`].
    ///
    /// # Errors
    /// [`StateError::Io`] (e.g. kind `NotFound`), [`StateError::TooLarge`], and every error of
    /// [`CheckpointState::from_bytes`]. Does not panic.
    pub fn load(path: &Path) -> Result<Self, StateError> {
        let io = |kind| StateError::Io { op: "read", kind };
        let file = File::open(path).map_err(|e| io(e.kind()))?;
        let mut bytes = Vec::new();
        file.take(MAX_STATE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io(e.kind()))?;
        Self::from_bytes(&bytes)
    }

    /// Parses and re-verifies a state file's bytes (`spec/log.md` §9.3): at most
    /// [`MAX_STATE_BYTES`]; JSON of the `memlineage/checkpoint-state@v1` schema ending in a
    /// newline; every log's verifier key parses, its checkpoint verifies under it, no key twice;
    /// every `split_view` note verifies too and conflicts with the checkpoint (same size, other
    /// root).
    ///
    /// # Errors
    /// [`StateError::TooLarge`], [`StateError::Truncated`], [`StateError::Malformed`],
    /// [`StateError::UnsupportedFormat`], [`StateError::BadLog`], [`StateError::DuplicateLog`],
    /// [`StateError::BadEvidence`], [`StateError::NotASplitView`]. Corrupt files can trigger all
    /// of them. Does not panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, StateError> {
        if bytes.len() as u64 > MAX_STATE_BYTES {
            return Err(StateError::TooLarge {
                max: MAX_STATE_BYTES,
            });
        }
        let header: FileHeader = serde_json::from_slice(bytes).map_err(json_error)?;
        if header.format != STATE_FORMAT {
            return Err(StateError::UnsupportedFormat { got: header.format });
        }
        let file: FileV1 = serde_json::from_slice(bytes).map_err(json_error)?;
        if !bytes.ends_with(b"\n") {
            return Err(StateError::Truncated);
        }
        let mut state = CheckpointState::new();
        for (index, entry) in file.logs.into_iter().enumerate() {
            let rec = entry.into_record(index)?;
            let vkey = rec.verifier.vkey();
            if state.logs.insert(vkey, rec).is_some() {
                return Err(StateError::DuplicateLog { index });
            }
        }
        Ok(state)
    }

    /// The state file's bytes: pretty-printed JSON, logs sorted by verifier key, ending in a
    /// newline. Equal states give equal bytes.
    #[allow(clippy::expect_used)]
    pub fn to_bytes(&self) -> Vec<u8> {
        let file = FileV1 {
            format: STATE_FORMAT.to_owned(),
            logs: self.logs.values().map(FileLog::from_record).collect(),
        };
        // INVARIANT: the value is structs, strings, options and vectors only (no maps with
        // non-string keys, no custom `Serialize`), which serde_json always serializes.
        let mut out = serde_json::to_vec_pretty(&file).expect("state serializes to JSON");
        out.push(b'\n');
        out
    }

    /// Writes the state to `path` atomically: the bytes go to a temporary file in the same
    /// directory, which is flushed to disk (`fsync`), renamed over `path`, and the directory is
    /// flushed too (on Unix). A crash leaves either the old or the new file, never a mix.
    ///
    /// One writer at a time: concurrent saves to one path need an external lock.
    ///
    /// # Errors
    /// [`StateError::Io`] (the temporary file is removed on failure). Does not panic.
    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        let tmp = temp_path(path)?;
        let result = write_synced(&tmp, &self.to_bytes())
            .and_then(|()| fs::rename(&tmp, path))
            .map_err(|e| StateError::Io {
                op: "write",
                kind: e.kind(),
            });
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result?;
        sync_dir(path).map_err(|e| StateError::Io {
            op: "sync directory",
            kind: e.kind(),
        })
    }
}

/// Why [`CheckpointState::update`] refused a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ForkError {
    /// The checkpoint's note does not verify under the given log key: it was verified under
    /// another key (a caller error).
    #[error("checkpoint does not verify under this log key: {0}")]
    WrongLog(CheckpointError),
    /// The log already signed two roots for one size ([`CheckpointState::evidence`]); no further
    /// checkpoint of it is accepted. Untrusted input (the log) triggers it.
    #[error("log already showed a split view at size {size}; its state is frozen")]
    KnownSplitView {
        /// The size of the split view on record.
        size: u64,
    },
    /// A larger checkpoint came without the consistency proof it needs. Untrusted input can
    /// trigger it.
    #[error("no consistency proof from remembered size {remembered} to size {got}")]
    MissingProof {
        /// The remembered size.
        remembered: u64,
        /// The offered size.
        got: u64,
    },
    /// The consistency proof from the remembered checkpoint to the larger one does not verify:
    /// a fork, or a bad proof. Untrusted input can trigger it.
    #[error("consistency proof from size {remembered} to {got} failed: {source}")]
    ConsistencyFailed {
        /// The remembered size.
        remembered: u64,
        /// The offered size.
        got: u64,
        /// Why the proof failed.
        source: ProofError,
    },
    /// A checkpoint smaller than the remembered one. Untrusted input can trigger it.
    #[error("rollback: remembered size {remembered}, got size {got}")]
    Rollback {
        /// The remembered size.
        remembered: u64,
        /// The offered, smaller size.
        got: u64,
    },
    /// The log signed another root for the remembered size; both notes are kept as
    /// [`SplitViewEvidence`]. Untrusted input (a log key signature) triggers it.
    #[error("split view at size {size}: remembered root {remembered_root}, got {got_root}")]
    SplitView {
        /// The tree size.
        size: u64,
        /// The remembered root.
        remembered_root: RootHash,
        /// The conflicting root.
        got_root: RootHash,
    },
}

/// Why a state file could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The operating system failed (`op` is "read", "write" or "sync directory"); kind
    /// `NotFound` on read means there is no state file yet.
    #[error("state file {op}: {kind}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The I/O error kind.
        kind: io::ErrorKind,
    },
    /// The file is larger than [`MAX_STATE_BYTES`]. A corrupt file can trigger it.
    #[error("state file larger than {max} bytes")]
    TooLarge {
        /// The limit in bytes.
        max: u64,
    },
    /// The file ends early: empty, cut inside the JSON, or without its final newline. A torn
    /// write or a corrupt file can trigger it.
    #[error("state file truncated")]
    Truncated,
    /// Not JSON of the state schema (syntax error, wrong type, unknown or missing member). A
    /// corrupt file can trigger it.
    #[error("malformed state file at line {line}, column {column}")]
    Malformed {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// The `format` member is not [`STATE_FORMAT`]. A file of another version can trigger it.
    #[error("unsupported state file format {got:?}")]
    UnsupportedFormat {
        /// The format found.
        got: String,
    },
    /// A log's verifier key does not parse, or its checkpoint does not verify under it. A
    /// corrupt or tampered file can trigger it.
    #[error("state file log {index}: {source}")]
    BadLog {
        /// 0-based position in `logs`.
        index: usize,
        /// Why.
        source: CheckpointError,
    },
    /// A verifier key listed twice. A corrupt file can trigger it.
    #[error("state file log {index} repeats an earlier log key")]
    DuplicateLog {
        /// 0-based position in `logs` of the repeat.
        index: usize,
    },
    /// A log's `split_view` note does not verify under its key. A corrupt or tampered file can
    /// trigger it.
    #[error("state file log {index}: split-view note: {source}")]
    BadEvidence {
        /// 0-based position in `logs`.
        index: usize,
        /// Why.
        source: CheckpointError,
    },
    /// A log's `split_view` note does not conflict with its checkpoint (another size, or the same
    /// root). A corrupt or tampered file can trigger it.
    #[error("state file log {index}: split-view note does not conflict with the checkpoint")]
    NotASplitView {
        /// 0-based position in `logs`.
        index: usize,
    },
}

/// The file's first member, read before the strict parse so that another version is reported as
/// such.
#[derive(Deserialize)]
struct FileHeader {
    format: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV1 {
    format: String,
    logs: Vec<FileLog>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLog {
    vkey: String,
    checkpoint: String,
    split_view: Option<String>,
}

impl FileLog {
    fn from_record(r: &LogRecord) -> Self {
        // Verified notes are UTF-8 (signed-note), so the lossy conversion never replaces.
        let text = |cp: &VerifiedCheckpoint| String::from_utf8_lossy(cp.note()).into_owned();
        FileLog {
            vkey: r.verifier.vkey(),
            checkpoint: text(&r.latest),
            split_view: r.split_view.as_ref().map(|e| text(&e.got)),
        }
    }

    fn into_record(self, index: usize) -> Result<LogRecord, StateError> {
        let bad = |source| StateError::BadLog { index, source };
        let verifier = LogVerifier::from_vkey(&self.vkey).map_err(bad)?;
        let latest = verifier.verify(self.checkpoint.as_bytes()).map_err(bad)?;
        let split_view = match self.split_view {
            None => None,
            Some(note) => {
                let got = verifier
                    .verify(note.as_bytes())
                    .map_err(|source| StateError::BadEvidence { index, source })?;
                if got.size() != latest.size() || got.root() == latest.root() {
                    return Err(StateError::NotASplitView { index });
                }
                Some(SplitViewEvidence {
                    vkey: verifier.vkey(),
                    remembered: latest.clone(),
                    got,
                })
            }
        };
        Ok(LogRecord {
            verifier,
            latest,
            split_view,
        })
    }
}

fn json_error(e: serde_json::Error) -> StateError {
    if e.is_eof() {
        StateError::Truncated
    } else {
        StateError::Malformed {
            line: e.line(),
            column: e.column(),
        }
    }
}

/// `<dir>/.<name>.<pid>.tmp` next to `path`.
fn temp_path(path: &Path) -> Result<PathBuf, StateError> {
    let name = path.file_name().ok_or(StateError::Io {
        op: "write",
        kind: io::ErrorKind::InvalidInput,
    })?;
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".{}.tmp", std::process::id()));
    Ok(path.with_file_name(tmp))
}

/// Writes `bytes` to a new file at `path` and syncs it. A file or symbolic link already there
/// (a crashed save of the same pid, or a link someone planted at the predictable name) is
/// removed first and the file created exclusively, never through a link: the state is never
/// written into a file the link points to.
fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW);
    }
    let mut f = opts.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(unix)]
fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_path: &Path) -> io::Result<()> {
    Ok(())
}

// A state file holds at most one note per checkpoint and split view.
const _: () = assert!(MAX_STATE_BYTES >= 2 * MAX_CHECKPOINT_BYTES as u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_messages() {
        let cases: Vec<(Box<dyn std::error::Error>, &str)> = vec![
            (
                Box::new(ForkError::WrongLog(CheckpointError::UnknownKey)),
                "checkpoint does not verify under this log key: no signature by the log key",
            ),
            (
                Box::new(ForkError::KnownSplitView { size: 5 }),
                "log already showed a split view at size 5; its state is frozen",
            ),
            (
                Box::new(ForkError::MissingProof {
                    remembered: 3,
                    got: 5,
                }),
                "no consistency proof from remembered size 3 to size 5",
            ),
            (
                Box::new(ForkError::ConsistencyFailed {
                    remembered: 3,
                    got: 5,
                    source: ProofError::RootMismatch,
                }),
                "consistency proof from size 3 to 5 failed: proof does not lead to the \
                 checkpoint root",
            ),
            (
                Box::new(ForkError::Rollback {
                    remembered: 5,
                    got: 3,
                }),
                "rollback: remembered size 5, got size 3",
            ),
            (
                Box::new(ForkError::SplitView {
                    size: 4,
                    remembered_root: RootHash([0xaa; 32]),
                    got_root: RootHash([0xbb; 32]),
                }),
                "split view at size 4: remembered root aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\
                 aaaaaaaaaaaaaaaaaaaa, got bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\
                 bbbbbbbbb",
            ),
            (
                Box::new(StateError::Io {
                    op: "read",
                    kind: io::ErrorKind::NotFound,
                }),
                "state file read: entity not found",
            ),
            (
                Box::new(StateError::TooLarge { max: 10 }),
                "state file larger than 10 bytes",
            ),
            (Box::new(StateError::Truncated), "state file truncated"),
            (
                Box::new(StateError::Malformed { line: 2, column: 7 }),
                "malformed state file at line 2, column 7",
            ),
            (
                Box::new(StateError::UnsupportedFormat { got: "x@v2".into() }),
                "unsupported state file format \"x@v2\"",
            ),
            (
                Box::new(StateError::BadLog {
                    index: 1,
                    source: CheckpointError::BadSignature,
                }),
                "state file log 1: checkpoint signature verification failed",
            ),
            (
                Box::new(StateError::DuplicateLog { index: 2 }),
                "state file log 2 repeats an earlier log key",
            ),
            (
                Box::new(StateError::BadEvidence {
                    index: 0,
                    source: CheckpointError::MalformedNote,
                }),
                "state file log 0: split-view note: malformed signed note",
            ),
            (
                Box::new(StateError::NotASplitView { index: 0 }),
                "state file log 0: split-view note does not conflict with the checkpoint",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }

    #[test]
    fn empty_state_round_trip() {
        let s = CheckpointState::new();
        let b = s.to_bytes();
        assert_eq!(
            String::from_utf8(b.clone()).unwrap(),
            "{\n  \"format\": \"memlineage/checkpoint-state@v1\",\n  \"logs\": []\n}\n"
        );
        assert_eq!(CheckpointState::from_bytes(&b).unwrap(), s);
    }

    /// A link planted at the predictable temporary name is replaced, never written through.
    #[cfg(unix)]
    #[test]
    fn a_link_at_the_temporary_name_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let theirs = dir.path().join("theirs");
        fs::write(&theirs, b"keep").unwrap();
        std::os::unix::fs::symlink(&theirs, temp_path(&path).unwrap()).unwrap();
        CheckpointState::new().save(&path).unwrap();
        assert_eq!(fs::read(&theirs).unwrap(), b"keep");
        assert!(CheckpointState::load(&path).unwrap().is_empty());
    }

    #[test]
    fn temp_path_is_a_sibling() {
        let t = temp_path(Path::new("/x/state.json")).unwrap();
        assert_eq!(t.parent(), Some(Path::new("/x")));
        assert!(t
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".state.json."));
        assert!(temp_path(Path::new("/")).is_err());
    }
}
