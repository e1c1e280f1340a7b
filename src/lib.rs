#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs, rustdoc::broken_intra_doc_links)]
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

// The data path, in the order an entry travels it (spec/README.md):
// record → log → lineage → store → ledger → retrieve → gate, and the offline audit.
pub mod record;
pub mod log;
pub mod lineage;
pub mod store;
pub mod ledger;
pub mod retrieve;
pub mod gate;
pub mod audit;

// Around the data path: what operators and agent runtimes use.
pub mod forensics;
pub mod counterfactual;
pub mod front;
pub mod eval;
#[cfg(feature = "explorer")]
pub mod explore;

pub use ledger::{Appended, Draft, Ledger, LedgerError};
