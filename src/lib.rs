#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs, rustdoc::broken_intra_doc_links)]
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod record;

pub mod audit;
pub mod front;
pub mod gate;
pub mod hook;
pub mod keystore;
pub mod ledger;
pub mod lineage;
pub mod log;
pub mod mcp;
pub mod replay;
pub mod retrieve;
pub mod store;

pub use ledger::{Appended, Draft, Ledger, LedgerError};
