//! What a handle over a file ledger protects from the agent's tool calls (`spec/python.md`
//! §3.3, `spec/hooks.md` §13): the guard's own resources, as the hooks protect them — the
//! ledger and its side files, the key file, the policy file, the state directory (its pin and
//! session records), this extension module and the package directory it lies in (the Python
//! code of the store and the gated tool node), and the agents' settings under `$HOME`. A call
//! that reads, writes or runs one of them is refused by [`memlineage::front::Front::check`] in
//! any session, whatever it read.

use memlineage::front::pin::StateDir;
use memlineage::front::protect::{Protected, Resource};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

/// The protected set of a handle over the ledger at `ledger` with the policy file `policy`
/// (if any), the state directory `state` (if any) and this module's file `module` (if known;
/// its directory, the `memlineage` package, is protected whole).
pub fn protected(
    ledger: &Path,
    policy: Option<&Path>,
    state: Option<&StateDir>,
    module: Option<&Path>,
) -> Protected {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let p = Protected::for_ledger(
        ledger,
        policy,
        state.map(|s| s.0.as_path()),
        module,
        home.as_deref(),
    );
    match module.and_then(Path::parent) {
        Some(package) => p.with_tree(package, Resource::Binary),
        None => p,
    }
}

/// The file this extension module was loaded from (`memlineage/_native….so`): what a hook
/// protects as its binary. `None` when Python does not say.
pub fn module_file(py: Python<'_>) -> Option<PathBuf> {
    py.import("memlineage._native")
        .ok()?
        .getattr("__file__")
        .ok()?
        .extract()
        .ok()
}
