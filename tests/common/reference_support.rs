//! The independent Python reference verifier (`spec/reference/`) for tests that compare the
//! Rust code with it. It needs Python 3 with the pinned `spec/reference/requirements.txt`
//! (`cbor2`, `cryptography`).

use std::ffi::OsString;

/// The interpreter named by `MEMLINEAGE_REFERENCE_PYTHON`, or `None` (the caller skips its
/// check, saying so on stderr) when it is unset. Panics when `MEMLINEAGE_REQUIRE_REFERENCE` is
/// set without it: CI sets both (`.ci/run`), so there a missing reference fails.
pub fn reference_python() -> Option<OsString> {
    let python = std::env::var_os("MEMLINEAGE_REFERENCE_PYTHON");
    if python.is_none() {
        assert!(
            std::env::var_os("MEMLINEAGE_REQUIRE_REFERENCE").is_none(),
            "MEMLINEAGE_REQUIRE_REFERENCE is set but MEMLINEAGE_REFERENCE_PYTHON is not"
        );
        eprintln!("skipped: the Python reference (set MEMLINEAGE_REFERENCE_PYTHON)");
    }
    python
}
