//! Counterfactual attribution (`spec/counterfactual.md`): which memories made a run go wrong.
//!
//! - [`ddmin`]: delta debugging down to a 1-minimal set of memories that still fails;
//! - [`amputation`]: removing one memory and measuring whether the agent's action changes.

pub mod amputation;
pub mod ddmin;
