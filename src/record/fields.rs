//! The payload's map keys (`spec/record.md` §3): unsigned integers 0..=10, written and read in
//! ascending order by the encoder (`encode.rs`), the decoder (`cbor.rs`) and the test oracle.

pub(super) const K_VERSION: u64 = 0;
pub(super) const K_WRITER: u64 = 1;
pub(super) const K_KIND: u64 = 2;
pub(super) const K_CONTENT: u64 = 3;
pub(super) const K_SOURCE: u64 = 4;
pub(super) const K_CONTEXT: u64 = 5;
pub(super) const K_PARENTS: u64 = 6;
pub(super) const K_TIME: u64 = 7;
pub(super) const K_ATTRIBUTION: u64 = 8;
pub(super) const K_TARGET: u64 = 9;
pub(super) const K_BINDING: u64 = 10;
