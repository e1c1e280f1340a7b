//! Lineage (`spec/lineage.md`, `spec/forensics.md` §2 and §5): what the log says about where an
//! entry came from and how far it may be trusted.
//!
//! - [`label`]: the trust labels and the labelling rule (τ, strong edges, fail-closed);
//! - [`quarantine`]: flags and releases, and everything a flagged source reached;
//! - [`lease`]: expiring leases on the rework of an entry;
//! - [`admission`]: the admission rule, one for the ledger's appends and the audit's replay;
//! - [`effects_index`]: the index of every effect by subject, whose root checkpoints sign;
//! - [`label_proof`]: offline label proofs, checked with the log's verifier key alone;
//! - [`state`]: the lineage state of a log and the one transition every entry enters it by;
//! - [`attribution`]: edge weights, the influence of each context item on a write;
//! - [`path`]: the explanation path behind an untrusted label;
//! - [`secrecy`]: the confidentiality axis, secret entries computed from the policy's sources.
//!
//! Everything here is a function of verified entries; none of it opens a store.

pub mod admission;
pub mod attribution;
pub mod effects_index;
pub mod label;
pub mod label_proof;
pub mod lease;
pub mod path;
pub mod quarantine;
pub mod secrecy;
pub mod state;

pub use label::*;
