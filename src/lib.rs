//! # Where to start
//!
//! memlineage has three kinds of users, and each has one way in.
//!
//! - **An agent runtime** (hooks, an MCP server, an agent loop in Rust or Python) wraps a
//!   [`Ledger`] in a [`Front`] with its tool-call [`Policy`] (`spec/gate.md`, `spec/hooks.md`).
//!   [`Front::record_prompt`] and [`Front::record_tool_result`] record what a [`Session`]
//!   reads; [`Front::check`] decides a tool call before it runs and says why
//!   ([`front::Verdict`]). The ready-made fronts drive the same `Front`:
//!   [`front::hook::handle`] (Claude Code and Codex hooks, `spec/hooks.md`) and, with feature
//!   `mcp`, `front::mcp::LedgerServer` (`spec/mcp.md`). A runtime that writes its own memory
//!   entries uses the [`Ledger`] itself: [`Ledger::append`], [`Ledger::retrieve`] (verified,
//!   labelled [`Outcome`]s) and [`gate::decide`] (the gate's one decision, also
//!   [`Ledger::gate_values`]); its [`LabelPolicy`] sets how labels
//!   flow along lineage edges (`spec/lineage.md`).
//! - **An auditor** holds the log's verifier key ([`LogVerifier`]), never the writer's store
//!   or keys: [`audit::audit`] verifies a whole ledger offline from its entry bytes and a
//!   signed checkpoint (what `memlineage verify` runs), [`log::ProofBundle`] checks one entry's
//!   inclusion, [`lineage::label_proof::LabelProof`] recomputes one entry's label
//!   (`spec/label-proof.md`), and [`forensics::receipt`] explains a decision in plain words
//!   (`spec/forensics.md`).
//! - **A store implementer** implements [`store::Store`]: an untrusted byte store, every read
//!   of which is verified above it (`spec/storage.md`). [`MemoryStore`] is the reference;
//!   `SqliteStore` (feature `sqlite`, default) and `store::PgStore` (feature `postgres`) are
//!   the shipped backends, and `tests/store_conformance.rs` is the suite a backend passes.
//!
//! The modules follow the data path, in the order an entry travels it (`spec/README.md`):
//! [`record`] → [`log`] → [`lineage`] → [`store`] → [`ledger`] (with [`retrieve`]) → [`gate`], and
//! the offline [`audit`]. Around the data path: [`front`] (the agent runtimes' adapters),
//! [`forensics`] and [`quote`] (what operators read), [`counterfactual`] and [`eval`] (the
//! measurements behind `spec/counterfactual.md` and `spec/eval.md`), and with feature
//! `explorer`, `explore` (the read-only web explorer). The rest of this page is the README.
//!
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs, rustdoc::broken_intra_doc_links)]
// An item is `pub` only where an embedder can reach it (spec/public-api.txt lists them all);
// the rest is `pub(crate)` or narrower.
#![warn(unreachable_pub)]
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

// The data path (see the guide above).
pub mod record;
pub mod log;
pub mod lineage;
pub mod store;
pub mod ledger;
/// Verified, labelled retrieval (`spec/log.md` §11): [`ledger::retrieve`], at the crate root
/// as before.
pub use ledger::retrieve;
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
pub use gate::{LineageDecision, Policy, ToolCall};
pub use ledger::{Appended, Draft, Ledger, LedgerError};
pub use lineage::{Label, LabelPolicy};
pub use log::{LogSigner, LogVerifier};
pub use record::{Kind, Parent, ProvEntry, Role, Weight, WriterKey};
pub use retrieve::Outcome;
pub use store::MemoryStore;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use store::SqliteStore;
