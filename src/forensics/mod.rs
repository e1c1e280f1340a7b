//! Forensics (`spec/forensics.md`): what an operator does after an advisory names a source.
//!
//! - [`receipt`]: the path from a reached entry back to its source, as a sentence and a picture;
//! - [`heal`]: restoring a quarantined fact by vote over clean, independent sources;
//! - [`rework`]: re-deriving what a quarantine reached, in dependency order, under leases;
//! - [`repair`]: authority repair, asking the principal with authority for a denied parameter.
//!
//! The quarantine itself (flags, releases, reach) is lineage state: [`crate::lineage::quarantine`].

pub mod heal;
pub mod receipt;
pub mod repair;
pub mod rework;
