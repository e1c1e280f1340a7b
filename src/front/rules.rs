//! The rules a [`Front`](super::Front) compiles from its tool-call [`Policy`] (the secrecy
//! rule, `spec/hooks.md` §16, and the gated writes, §17.3).

use super::{secrets, sinks};
use crate::gate::Policy;

/// The secrecy rule and the gated writes of `policy`, compiled for this process's home
/// directory (`spec/hooks.md` §16, §17.3).
pub(super) fn compiled(
    policy: &Policy,
) -> (
    std::sync::Arc<secrets::SecretRules>,
    std::sync::Arc<sinks::writes::WriteRules>,
) {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    (
        std::sync::Arc::new(secrets::SecretRules::new(&policy.secrets, home.as_deref())),
        std::sync::Arc::new(sinks::writes::WriteRules::new(
            &policy.sinks,
            home.as_deref(),
        )),
    )
}
