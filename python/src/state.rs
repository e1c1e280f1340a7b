//! The state directory of a file ledger opened from Python (`spec/python.md` §3.2): the one
//! the hooks keep outside the ledger's directory (`spec/hooks.md` §6.2), chosen the same way,
//! holding the pin (the log's verifier key and the newest checkpoint the fronts have seen) and
//! the session records. A store-only attacker writes every byte beside the ledger but not
//! there: the pin refuses a ledger rolled back or replaced wholesale, and records kept there
//! cannot be deleted or rolled back with the ledger.

use crate::errors::BindError;
use memlineage::front::hook::FileSessions;
use memlineage::front::pin::StateDir;
use memlineage::ledger::OpenOptions;
use memlineage::log::LogSigner;
use memlineage::store::SqliteStore;
use memlineage::Ledger;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBool;
use std::path::{Path, PathBuf};

/// What a `state=` argument asks for.
pub enum Choice {
    /// `None` or `True`: the hooks' default directory for this ledger.
    Default,
    /// A path: that directory.
    Dir(PathBuf),
    /// `False`: the session records beside the ledger (`LEDGER.sessions/`), nothing pinned, as
    /// the hooks run without `--state`.
    Beside,
}

/// Reads a `state=` argument: `None`/`True` (the default directory), `False` (beside, no pin)
/// or a path (`str` or `os.PathLike`).
///
/// # Errors
/// `TypeError` for anything else.
pub fn choice(arg: Option<&Bound<'_, PyAny>>) -> PyResult<Choice> {
    let Some(a) = arg.filter(|a| !a.is_none()) else {
        return Ok(Choice::Default);
    };
    if let Ok(b) = a.cast::<PyBool>() {
        return Ok(if b.is_true() {
            Choice::Default
        } else {
            Choice::Beside
        });
    }
    a.extract::<PathBuf>().map(Choice::Dir).map_err(|_| {
        PyTypeError::new_err("state= is a directory path, True (the default directory) or False")
    })
}

/// The state directory `choice` names for the ledger at `ledger` (which need not exist yet);
/// `None` for [`Choice::Beside`].
///
/// # Errors
/// `ValueError` (misuse) when the default is asked and neither `XDG_STATE_HOME` nor `HOME`
/// is set, or the ledger's directory cannot be resolved.
pub fn resolve(ledger: &Path, choice: Choice) -> Result<Option<StateDir>, BindError> {
    let bad = |e: std::io::Error| BindError::misuse(format!("{}: {e}", ledger.display()));
    match choice {
        Choice::Beside => Ok(None),
        Choice::Dir(d) => Ok(Some(StateDir::new(std::path::absolute(d).map_err(bad)?))),
        Choice::Default => {
            // A directory that pins this ledger, by its canonical path or as written (a
            // ledger file replaced by a link to another ledger keeps its pin); else the
            // canonical path's, pinned on first use.
            if let Some(pinned) = StateDir::pinned_default_for(ledger) {
                return Ok(Some(pinned));
            }
            let canonical = canonical(ledger).map_err(bad)?;
            StateDir::default_for(&canonical).map(Some).ok_or_else(|| {
                BindError::misuse(
                    "neither XDG_STATE_HOME nor HOME is set: give state= a directory outside \
                     the ledger's (or state=False to keep the session records beside the \
                     ledger, unpinned)",
                )
            })
        }
    }
}

/// The canonical path of `ledger`, or, when it does not exist yet, its directory's canonical
/// path joined with its name (what canonicalising it gives once it is created): the key of
/// [`StateDir::default_for`], as `memlineage hook install` computes it.
fn canonical(ledger: &Path) -> std::io::Result<PathBuf> {
    if ledger.exists() {
        return std::fs::canonicalize(ledger);
    }
    let parent = match ledger.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = ledger
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))?;
    Ok(std::fs::canonicalize(parent)?.join(name))
}

/// Refuses to create a ledger whose state directory already holds a pin (another ledger's:
/// its records would name entries the new ledger does not have). Called before anything is
/// written.
///
/// # Errors
/// `ValueError` (misuse) naming the directory; pin read errors.
pub fn must_be_new(state: &StateDir) -> Result<(), BindError> {
    if state.load()?.is_some() {
        return Err(BindError::misuse(format!(
            "the state directory {} already holds the pin of another ledger: remove it, or \
             give state= another directory",
            state.0.display()
        )));
    }
    Ok(())
}

/// Opens the SQLite ledger at `path` against the pin of `state` (`spec/hooks.md` §6.2): its
/// log key must be the pinned one and its tree must not be behind the pinned checkpoint. On
/// the first open with a directory that holds no pin, what the ledger holds now is pinned
/// (trust on first use, as `memlineage hook install`) and the session records kept beside
/// the ledger so far are copied in. `lock` (the key file's lock) is held meanwhile.
///
/// # Errors
/// `PinError` (another log's key), `LedgerError::BehindSignedCheckpoint` (rolled back), store,
/// checkpoint and I/O errors.
pub fn open_pinned(
    path: &Path,
    signer: LogSigner,
    state: &StateDir,
    lock: &Path,
) -> Result<Ledger<SqliteStore>, BindError> {
    let _held = crate::engine::lock(lock)?;
    let mut opts = OpenOptions::default();
    opts.checkpoints = state.pinned_for(&signer.vkey())?;
    let first = opts.checkpoints.is_empty();
    let mut ledger = Ledger::open_with(SqliteStore::open(path)?, signer, opts)?;
    if first {
        state.take_sessions(&FileSessions::beside(path))?;
    }
    let c = ledger.checkpoint()?;
    state.advance(&ledger.vkey(), &c)?;
    Ok(ledger)
}
