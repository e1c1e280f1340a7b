//! Errors of the bindings and their Python exceptions (`spec/python.md` §6).
//!
//! Every typed error of the library reaches Python as an exception of the same name
//! (`memlineage.LedgerError`, `memlineage.FrontError`, …), all subclasses of
//! `memlineage.MemLineageError`, with the error's message and its variant's name in the
//! attribute `variant`. A caller's mistake (a malformed entry id, a weight out of range, a
//! value that is not JSON) is a `ValueError`.

use memlineage::audit::AuditError;
use memlineage::front::hook::HookError;
use memlineage::front::keystore::KeyStoreError;
use memlineage::front::pin::PinError;
use memlineage::front::FrontError;
use memlineage::gate::PolicyError;
use memlineage::log::CheckpointError;
use memlineage::store::StoreError;
use memlineage::LedgerError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The exception classes, named as the Rust error enums they carry.
pub mod exc {
    pyo3::create_exception!(
        memlineage,
        MemLineageError,
        pyo3::exceptions::PyException,
        "Base class of the errors memlineage raises (spec/python.md §6)."
    );
    pyo3::create_exception!(
        memlineage,
        LedgerError,
        MemLineageError,
        "memlineage::LedgerError: a ledger operation failed (admission, store, proof, seal…)."
    );
    pyo3::create_exception!(
        memlineage,
        FrontError,
        MemLineageError,
        "memlineage::front::FrontError: the front could not record or check."
    );
    pyo3::create_exception!(
        memlineage,
        KeyStoreError,
        MemLineageError,
        "memlineage::front::keystore::KeyStoreError: a key file or principal problem."
    );
    pyo3::create_exception!(
        memlineage,
        HookError,
        MemLineageError,
        "memlineage::front::hook::HookError: a session file could not be read or written."
    );
    pyo3::create_exception!(
        memlineage,
        StoreError,
        MemLineageError,
        "memlineage::store::StoreError: the store failed."
    );
    pyo3::create_exception!(
        memlineage,
        PolicyError,
        MemLineageError,
        "memlineage::gate::PolicyError: the gate policy file is not valid."
    );
    pyo3::create_exception!(
        memlineage,
        AuditError,
        MemLineageError,
        "memlineage::audit::AuditError: the audit could not run at all."
    );
    pyo3::create_exception!(
        memlineage,
        PinError,
        MemLineageError,
        "memlineage::front::pin::PinError: the state directory's pin refuses the ledger (another \
         log's key) or cannot be read or written."
    );
    pyo3::create_exception!(
        memlineage,
        CheckpointError,
        MemLineageError,
        "memlineage::log::CheckpointError: a checkpoint could not be signed or verified."
    );
}

/// Why a binding call failed: the library's typed errors, kept as they are, and caller
/// mistakes.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// A ledger operation failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The front failed (other than through the ledger or keys, which are unwrapped).
    #[error(transparent)]
    Front(FrontError),
    /// A key file or principal problem.
    #[error(transparent)]
    Keys(#[from] KeyStoreError),
    /// A session file problem.
    #[error(transparent)]
    Hook(#[from] HookError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The gate policy is not valid.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The audit could not run.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// A checkpoint problem.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The state directory's pin refuses the ledger, or cannot be read or written.
    #[error(transparent)]
    Pin(PinError),
    /// The caller's mistake (becomes `ValueError`).
    #[error("{0}")]
    Misuse(String),
}

impl From<FrontError> for BindError {
    fn from(e: FrontError) -> Self {
        match e {
            FrontError::Ledger(l) => BindError::Ledger(l),
            FrontError::Keys(k) => BindError::Keys(k),
            other => BindError::Front(other),
        }
    }
}

impl From<PinError> for BindError {
    fn from(e: PinError) -> Self {
        match e {
            // A handle that refused the pinned checkpoint: the ledger's own error
            // (`BehindSignedCheckpoint` for a store rolled back below it).
            PinError::Ledger(l) => BindError::Ledger(*l),
            PinError::Checkpoint(c) => BindError::Checkpoint(c),
            other => BindError::Pin(other),
        }
    }
}

impl BindError {
    /// A caller's mistake.
    pub fn misuse(why: impl std::fmt::Display) -> Self {
        BindError::Misuse(why.to_string())
    }
}

/// The variant's name as Rust spells it (`Admission`, `UnknownEntry`…), from its `Debug` form.
fn variant(debug: &str) -> String {
    debug
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or_default()
        .to_string()
}

impl From<BindError> for PyErr {
    fn from(e: BindError) -> PyErr {
        let message = e.to_string();
        let (err, kind) = match &e {
            BindError::Ledger(x) => (
                exc::LedgerError::new_err(message),
                variant(&format!("{x:?}")),
            ),
            BindError::Front(x) => (
                exc::FrontError::new_err(message),
                variant(&format!("{x:?}")),
            ),
            BindError::Keys(x) => (
                exc::KeyStoreError::new_err(message),
                variant(&format!("{x:?}")),
            ),
            BindError::Hook(x) => (exc::HookError::new_err(message), variant(&format!("{x:?}"))),
            BindError::Store(x) => (
                exc::StoreError::new_err(message),
                variant(&format!("{x:?}")),
            ),
            BindError::Policy(x) => (
                exc::PolicyError::new_err(message),
                variant(&format!("{x:?}")),
            ),
            BindError::Audit(x) => (
                exc::AuditError::new_err(message),
                variant(&format!("{x:?}")),
            ),
            BindError::Checkpoint(x) => (
                exc::CheckpointError::new_err(message),
                variant(&format!("{x:?}")),
            ),
            BindError::Pin(x) => (exc::PinError::new_err(message), variant(&format!("{x:?}"))),
            BindError::Misuse(_) => return PyValueError::new_err(message),
        };
        Python::attach(|py| {
            // An attribute that cannot be set leaves the exception as it is.
            let _ = err.value(py).setattr("variant", kind);
        });
        err
    }
}

/// Registers the exception classes in the module under their Rust names.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("MemLineageError", py.get_type::<exc::MemLineageError>())?;
    m.add("LedgerError", py.get_type::<exc::LedgerError>())?;
    m.add("FrontError", py.get_type::<exc::FrontError>())?;
    m.add("KeyStoreError", py.get_type::<exc::KeyStoreError>())?;
    m.add("HookError", py.get_type::<exc::HookError>())?;
    m.add("StoreError", py.get_type::<exc::StoreError>())?;
    m.add("PolicyError", py.get_type::<exc::PolicyError>())?;
    m.add("AuditError", py.get_type::<exc::AuditError>())?;
    m.add("CheckpointError", py.get_type::<exc::CheckpointError>())?;
    m.add("PinError", py.get_type::<exc::PinError>())?;
    Ok(())
}
