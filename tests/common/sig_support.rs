//! Ed25519 arithmetic for tests that forge signatures with a writer's secret scalar (shared by
//! the batch_verify test file).

use curve25519_dalek::Scalar;
use memlineage::record::WriterKey;
use sha2::{Digest, Sha512};

/// The RFC 8032 §5.1.5 secret scalar `a` of `w`: SHA-512 of the seed, low half, clamped.
pub fn secret_scalar(w: &WriterKey) -> Scalar {
    let h = Sha512::digest(w.seed());
    let mut a = [0u8; 32];
    a.copy_from_slice(&h[..32]);
    a[0] &= 248;
    a[31] &= 127;
    a[31] |= 64;
    Scalar::from_bytes_mod_order(a)
}
