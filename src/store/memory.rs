//! In-memory store (placeholder; being written).

/// An in-memory [`super::Store`]: fast, lost on drop.
#[derive(Debug, Default)]
pub struct MemoryStore;
