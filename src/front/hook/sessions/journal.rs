//! The bytes of a session file (`spec/hooks.md` §6.3, `memlineage/session-journal@v1`): JSON
//! lines. Line 1 is the whole record (a [`Session`] as JSON, as files written before the
//! journal hold it, then alone and without a newline); every later line is a delta that
//! appends reads and sets the record's other fields, so that saving a session that only grew
//! costs what its new reads cost. A final line without its newline is a write that did not
//! finish (a crash in the middle of an append): the record is what the lines before it say, and
//! the next save rewrites the file whole (§6.3 says why that is no weaker than today's file
//! against either attacker).

use crate::front::Session;
use crate::record::EntryId;
use serde::{Deserialize, Serialize};

/// The version a delta line carries in its `delta` field (`spec/hooks.md` §6.3).
pub(super) const DELTA_VERSION: u64 = 1;

/// Why the bytes of a session file are not a record (`spec/hooks.md` §6.3). Untrusted input
/// (the file) triggers every variant; each refuses the session (fail closed), as a record that
/// cannot be read always has.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum JournalError {
    /// Line 1 is not a session record.
    #[error("line 1: {0}")]
    Record(serde_json::Error),
    /// A delta line, ended by its newline, is not a delta object.
    #[error("line {line}: {why}")]
    Delta {
        /// The line, from 1.
        line: u64,
        /// What the JSON parser said.
        why: serde_json::Error,
    },
    /// A delta line of a version this library does not read.
    #[error("line {line}: delta version {got}, this library reads {DELTA_VERSION}")]
    Version {
        /// The line, from 1.
        line: u64,
        /// The version it carries.
        got: u64,
    },
    /// A delta line that appends its reads after another count of reads than the lines
    /// before it give (a line dropped, repeated or moved).
    #[error("line {line}: appends at read {got}, the lines before it hold {want} reads")]
    Misplaced {
        /// The line, from 1.
        line: u64,
        /// The count of reads the line says it follows.
        got: u64,
        /// The count of reads before it.
        want: u64,
    },
    /// A delta line whose entry id is not 64 hex digits.
    #[error("line {line}: entry id {id:?} is not 64 hex digits")]
    Id {
        /// The line, from 1.
        line: u64,
        /// The text found.
        id: String,
    },
}

/// A session file, parsed.
pub(super) struct Parsed {
    /// The record the lines give.
    pub record: Session,
    /// Bytes of line 1 with its newline.
    pub first: u64,
    /// Whether a delta may be appended at the end of these bytes: line 1 ends with its newline
    /// (a file written before the journal does not) and no final line was left unfinished.
    pub appendable: bool,
}

/// One delta line (`spec/hooks.md` §6.3): `at` reads came before it, `reads` follow them, and
/// the other fields are the record's values after it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Delta {
    delta: u64,
    at: u64,
    reads: Vec<String>,
    unrecorded: u64,
    /// Absent in a delta written before the `v5` seal: 0.
    #[serde(default)]
    unrecorded_sealed: u64,
    context: Option<String>,
    covered: u64,
    seen: u64,
    started: bool,
    unseen: Option<String>,
    seal: Option<String>,
}

/// Parses the bytes of a session file. Does not panic.
///
/// # Errors
/// [`JournalError`]: line 1 is not a record, or a finished later line is not a delta that
/// follows the lines before it.
pub(super) fn parse(bytes: &[u8]) -> Result<Parsed, JournalError> {
    let (head, mut rest, ended) = match bytes.iter().position(|&b| b == b'\n') {
        Some(i) => (&bytes[..i], &bytes[i + 1..], true),
        None => (bytes, &bytes[bytes.len()..], false),
    };
    let mut record: Session = serde_json::from_slice(head).map_err(JournalError::Record)?;
    let first = (head.len() + usize::from(ended)) as u64;
    let mut line = 1;
    let mut appendable = ended;
    while !rest.is_empty() {
        line += 1;
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            // A write that did not finish: not part of the record.
            appendable = false;
            break;
        };
        apply(&mut record, &rest[..end], line)?;
        rest = &rest[end + 1..];
    }
    Ok(Parsed {
        record,
        first,
        appendable,
    })
}

/// Line 1 of a file that holds `record` alone: the record as JSON, then a newline.
///
/// # Errors
/// What `serde_json` reports (nothing for a [`Session`] in practice).
pub(super) fn whole(record: &Session) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = serde_json::to_vec(record)?;
    out.push(b'\n');
    Ok(out)
}

/// The delta line (newline included) that turns the record `old` into `new`, if `new` extends
/// it: the same id, and `old`'s reads the first of `new`'s (compared in full: O(reads), one
/// `memcmp`). `None` when it does not.
///
/// # Errors
/// What `serde_json` reports (nothing in practice).
pub(super) fn delta(old: &Session, new: &Session) -> Result<Option<Vec<u8>>, serde_json::Error> {
    let at = old.reads().len();
    if old.id != new.id || new.reads().get(..at) != Some(old.reads()) {
        return Ok(None);
    }
    let hex = |id: &Option<EntryId>| id.as_ref().map(EntryId::to_string);
    let d = Delta {
        delta: DELTA_VERSION,
        at: at as u64,
        reads: new.reads()[at..].iter().map(EntryId::to_string).collect(),
        unrecorded: new.unrecorded,
        unrecorded_sealed: new.unrecorded_sealed,
        context: hex(&new.context),
        covered: new.covered,
        seen: new.seen,
        started: new.started,
        unseen: hex(&new.unseen),
        seal: new.seal.clone(),
    };
    let mut out = serde_json::to_vec(&d)?;
    out.push(b'\n');
    Ok(Some(out))
}

/// Applies the delta line `text` (line number `line`) to `record`.
fn apply(record: &mut Session, text: &[u8], line: u64) -> Result<(), JournalError> {
    let d: Delta = serde_json::from_slice(text).map_err(|why| JournalError::Delta { line, why })?;
    if d.delta != DELTA_VERSION {
        return Err(JournalError::Version { line, got: d.delta });
    }
    let want = record.reads().len() as u64;
    if d.at != want {
        return Err(JournalError::Misplaced {
            line,
            got: d.at,
            want,
        });
    }
    let id = |h: &str| {
        EntryId::from_hex(h).map_err(|_| JournalError::Id {
            line,
            id: h.chars().take(80).collect(),
        })
    };
    let ids = d
        .reads
        .iter()
        .map(|h| id(h))
        .collect::<Result<Vec<_>, _>>()?;
    // A record freshly parsed has no memo yet: extending its reads directly keeps it exact.
    record.extend_reads(ids);
    record.unrecorded = d.unrecorded;
    record.unrecorded_sealed = d.unrecorded_sealed;
    record.context = d.context.as_deref().map(id).transpose()?;
    record.covered = d.covered;
    record.seen = d.seen;
    record.started = d.started;
    record.unseen = d.unseen.as_deref().map(id).transpose()?;
    record.seal = d.seal;
    Ok(())
}
