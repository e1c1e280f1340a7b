#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
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
pub mod quote;
pub mod counterfactual;
pub mod front;
pub mod eval;
#[cfg(feature = "explorer")]
pub mod explore;

// What a runtime embedding the ledger needs, reachable from the crate root (the README's
// examples use nothing else).
pub use front::{Front, GeneratedKeys, Session};
pub use gate::{Decision, Policy, ToolCall};
pub use ledger::{Appended, Draft, Ledger, LedgerError};
pub use lineage::{Label, LabelPolicy};
pub use log::{LogSigner, LogVerifier};
pub use record::{Kind, Parent, ProvEntry, Role, Weight, WriterKey};
pub use retrieve::Outcome;
pub use store::MemoryStore;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use store::SqliteStore;
