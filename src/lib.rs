#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs, rustdoc::broken_intra_doc_links)]
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod record;

pub mod amputation;
pub mod attribution;
pub mod audit;
pub mod ddmin;
pub mod eval;
pub mod front;
pub mod gate;
pub mod heal;
pub mod hook;
pub mod keystore;
pub mod lease;
pub mod ledger;
pub mod lineage;
pub mod log;
pub mod mcp;
pub mod quarantine;
pub mod receipt;
pub mod repair;
pub mod replay;
pub mod retrieve;
pub mod rework;
pub mod store;

pub use ledger::{Appended, Draft, Ledger, LedgerError};
