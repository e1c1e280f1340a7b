//! M3: the RFC 6962 / RFC 9162 Merkle log: tree hashing over stored hashes, signed C2SP
//! checkpoints, inclusion and consistency proofs, and offline proof bundles (`spec/log.md`).
//!
//! Verification here never touches a [`crate::store::Store`]: verifiers take bytes and keys.
