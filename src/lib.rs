//! memlineage: chain of custody for LLM agent memory.
//!
//! Data path: [`record`] (sign an entry) → [`log`] (RFC 6962 tree, checkpoints, proofs) →
//! [`store`] (memory, SQLite) → [`lineage`] (labels) → [`retrieve`] (verify and render) →
//! [`gate`] (allow or deny a sensitive tool call). [`Ledger`] ties them together.
#![forbid(unsafe_code)]
#![deny(missing_docs, rustdoc::broken_intra_doc_links)]
#![warn(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod record;

pub mod lineage;
pub mod log;
pub mod store;
pub mod gate;
pub mod audit;
pub mod keystore;
pub mod ledger;
pub mod replay;
pub mod retrieve;

pub use ledger::{Appended, Draft, Ledger, LedgerError};
