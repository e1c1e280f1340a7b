//! A front's answer to a proposed tool call: the [`Verdict`], the [`Refusal`] that explains a
//! denial (its `Display` is the text the hooks, receipts and MCP results show), the
//! [`Checked`] call, and how several verdicts combine (the worst decides, `spec/gate.md` §7).

use super::{ask, protect, secret_values};
use crate::gate::{LineageDenial, ToolCall};
use crate::record::EntryId;

/// The worst of `verdicts`: the first [`Verdict::Deny`], else the first [`Verdict::Ask`],
/// else [`Verdict::Allow`] (`spec/gate.md` §7: the worst decides).
pub(super) fn worst<const N: usize>(verdicts: [Verdict; N]) -> Verdict {
    let mut out = Verdict::Allow;
    for v in verdicts {
        match (&out, &v) {
            (Verdict::Deny(_), _) => {}
            (_, Verdict::Deny(_)) | (Verdict::Allow, Verdict::Ask(_)) => out = v,
            _ => {}
        }
    }
    out
}

/// A front's answer to a proposed tool call: the answer a runtime acts on. The gate's
/// [`LineageDecision`](crate::gate::LineageDecision) is one input to it (a refusal by lineage
/// is [`Refusal::Gate`]); the others are what the front knows of the session.
///
/// Exhaustive: a caller must handle both answers; a new one must break its build rather than
/// fall into a wildcard arm that might allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The call may proceed.
    Allow,
    /// The call is refused.
    Deny(Refusal),
    /// The value gate allows the call, but the agent composed its arguments after the session
    /// read untrusted input and the policy says to ask the user (`spec/hooks.md` §15). A front
    /// that cannot ask denies.
    Ask(ask::Receipt),
}

impl Verdict {
    /// Whether this is [`Verdict::Allow`].
    pub fn is_allow(&self) -> bool {
        matches!(self, Verdict::Allow)
    }
}

/// Why a call was refused.
///
/// Exhaustive: every refusal is explained (hook reasons, receipts, MCP results); a new one
/// must be handled by each caller that explains it, not fall into a wildcard arm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The gate refused it: an argument comes from an entry labelled worse than allowed.
    Gate(LineageDenial),
    /// The session saw tool output that could not be recorded (fail closed).
    Unrecorded {
        /// How many outputs were not recorded.
        count: u64,
        /// The session's id.
        session: String,
    },
    /// The event or arguments could not be read (fail closed for sensitive tools).
    Unreadable {
        /// What could not be read, and why (shown after `memlineage: deny: `).
        reason: String,
    },
    /// The call touches one of the guard's own resources (`spec/hooks.md` §13): refused in
    /// every session, whatever its lineage.
    Protected {
        /// The tool, as the agent named it.
        tool: String,
        /// What it touches, and how.
        touch: protect::Touch,
    },
    /// The call would send a secret to a destination neither the policy nor the user opened
    /// (`spec/hooks.md` §16.3).
    Secret {
        /// The tool, as the agent named it.
        tool: String,
        /// The secret: a file, a pattern of files, a tool's result or the environment.
        secret: String,
        /// The entry whose lineage holds the secret read; `None` when the call reads it
        /// itself.
        entry: Option<EntryId>,
        /// How the call sends (`curl`, `git push`, `WebFetch`).
        via: String,
        /// The first destination nobody opened (or "an unnamed destination"); with
        /// `after_untrusted`, the destination the user stated.
        destination: String,
        /// The user stated the destination, but the session has read untrusted input, which
        /// may have asked for the secret to go there, so the statement does not open the
        /// destination for a secret the call reads or carries (`spec/hooks.md` §16.6).
        after_untrusted: bool,
        /// The argument that carries the secret's value, and how it is written there
        /// (`"body"`, `"base64"`), when it was found (§16.6).
        carried: Option<secret_values::Carried>,
    },
    /// The agent composed the call's arguments after the session read untrusted input and the
    /// policy's `composed_after_external` is `deny` (`spec/hooks.md` §15).
    Composed(ask::Receipt),
    /// The session (its id) was not seen from its start and nothing stands for what it read
    /// before ([`Front::require_start`](super::Front::require_start), `spec/hooks.md` §3.1).
    UnseenStart {
        /// The session's id.
        session: String,
    },
    /// Only a statement of the user lets the call through, untrusted input the session read
    /// carries the stated value too, and the policy's `stated_and_untrusted` is `deny`
    /// (`spec/hooks.md` §4.4).
    Stated(ask::Receipt),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Gate(d) => write!(f, "memlineage: {d}"),
            Refusal::Unrecorded { count, session } => write!(
                f,
                "memlineage: deny: {count} tool output(s) of session {session:?} could not be \
                 recorded, so argument provenance is unknown"
            ),
            Refusal::Unreadable { reason } => write!(f, "memlineage: deny: {reason}"),
            Refusal::Protected { tool, touch } => write!(
                f,
                "memlineage: deny {}: it {touch}, which no tool call may touch in any session \
                 (spec/hooks.md §13)",
                crate::quote::word(tool)
            ),
            Refusal::Secret {
                tool,
                secret,
                entry,
                via,
                destination,
                after_untrusted,
                carried,
            } => {
                if *after_untrusted {
                    write!(
                        f,
                        "memlineage: deny {}: it would send data through {} to {}, which the \
                         user stated, but this session has read untrusted input that may \
                         have asked for it, so the statement does not open it for a secret; ",
                        crate::quote::word(tool),
                        crate::quote::name(via),
                        crate::quote::name(destination)
                    )?;
                } else {
                    write!(
                        f,
                        "memlineage: deny {}: it would send data through {} to {}, which \
                         neither the policy nor the user opened for secrets, ",
                        crate::quote::word(tool),
                        crate::quote::name(via),
                        crate::quote::name(destination)
                    )?;
                }

                match entry {
                    None => write!(f, "and it reads {} itself", crate::quote::name(secret))?,
                    Some(e) => write!(
                        f,
                        "in a session that has read {} (entry {})",
                        crate::quote::name(secret),
                        e.short()
                    )?,
                }
                if let Some(c) = carried {
                    write!(
                        f,
                        ", and its argument {} carries that secret's value ({})",
                        crate::quote::name(&c.argument),
                        c.encoding
                    )?;
                }
                write_door(f, via, destination, secret, entry.is_some())?;
                write!(f, " (spec/hooks.md §16)")
            }
            Refusal::Composed(r) | Refusal::Stated(r) => write!(f, "memlineage: deny {r}"),
            Refusal::UnseenStart { session } => write!(
                f,
                "memlineage: deny: session {session:?} was not seen from its start by memlineage's \
                 hooks (no SessionStart was recorded for it), so what it read before is \
                 unknown; start a new session (spec/hooks.md §3.1)"
            ),
        }
    }
}

/// How [`Refusal::Secret`] names a destination that no argument names (`curl -d @- "$URL"`,
/// `gh`, a program not known to keep data local).
pub(crate) const UNNAMED_DESTINATION: &str = "an unnamed destination";

/// What [`Refusal::Secret`]'s `via` says after a program that is not an egress command but is
/// not known to keep data local either (`spec/hooks.md` §16.2).
pub(crate) const NOT_KNOWN_LOCAL: &str = " (not known to keep data local)";

/// The setting of the policy that would let a refused secret call through, for the user who
/// reads the refusal (`spec/gate.md` §2, `spec/hooks.md` §16.2–16.3): `local_commands` or
/// `endorsed_code` for a program not known to stay local, `open_destinations` for a host, and
/// for an unnamed destination, which no setting opens, that only the session's read counts.
/// Only the user can use it: the policy file is protected (§13).
fn write_door(
    f: &mut std::fmt::Formatter<'_>,
    via: &str,
    destination: &str,
    secret: &str,
    session_read: bool,
) -> std::fmt::Result {
    if let Some(program) = via.strip_suffix(NOT_KNOWN_LOCAL) {
        write!(
            f,
            "; if {} keeps data on this machine, the user can declare its command in the \
             policy's `secrets.local_commands`, or vouch for a script of theirs that runs it \
             (`memlineage hook endorse FILE`, for `secrets.endorsed_code`)",
            crate::quote::name(program)
        )
    } else if destination != UNNAMED_DESTINATION {
        // A git remote is named as the push names it (`git push backup`), a host with a dot.
        let remote = via.starts_with("git ") && !destination.contains(['.', ':', '/']);
        let key = if remote {
            "open_git_remotes"
        } else {
            "open_destinations"
        };
        write!(
            f,
            "; the user can open {} for secrets in the policy's `secrets.{key}`",
            crate::quote::name(destination)
        )
    } else if session_read {
        write!(
            f,
            "; no setting opens an unnamed destination, and a session that has not read {} \
             is not refused for it",
            crate::quote::name(secret)
        )
    } else {
        Ok(())
    }
}

/// A gate check with the sources found for each argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// The call as gated, with each argument's justifying entries.
    pub call: ToolCall,
    /// Whether the policy treats it as sensitive.
    pub sensitive: bool,
    /// The verdict.
    pub verdict: Verdict,
}
