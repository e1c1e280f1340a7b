//! Checking an entry's Ed25519 signature, one at a time or in batches
//! (`spec/record.md` §2.3).
//!
//! The rule is RFC 8032 §5.1.7 with the encoding checks of `verify_strict` (canonical `A` and
//! `R`, neither of small order, `S < L`) and the **cofactored** equation
//! `[8][S]B = [8]R + [8][k]A` of ZIP215. With the cofactored equation a batch check (one
//! multiscalar multiplication over many signatures, random 128-bit coefficients) accepts
//! exactly what checking each signature alone accepts, except with probability 2^-128; with
//! the cofactorless equation it does not (a signature whose `R` carries a torsion component
//! fails alone and passes a batch with probability 1/2 to 1/8). The equation and the batch are
//! ed25519-zebra's; the encoding checks are here, on bytes, and cost no point operation.
//!
//! What the cofactored rule accepts beyond `verify_strict` are signatures whose `R` or `A`
//! carries a torsion component. Only the holder of the secret key can make one (`k` hashes
//! `R`, so a third party cannot move a valid signature to another `R`), and RFC 8032 signers
//! never do: see `spec/record.md` §2.4 and the vectors in `tests/vectors/cofactored.json`.

use super::{KeyId, RecordError};
use ed25519_zebra::{batch, Signature, VerificationKey, VerificationKeyBytes};

/// A principal's public key that passed `spec/record.md` §2.3 steps 1–3 (canonical, a curve
/// point, not of small order), decompressed once. Cheap to copy (32 bytes + one point).
///
/// Obtain one with [`KeyId::public_key`]; keyrings cache them so that a verification does not
/// pay the decompression (≈ 5 µs) again.
#[derive(Clone, Copy, Debug)]
pub struct PublicKey {
    key: VerificationKey,
}

impl PublicKey {
    /// The key id (the 32-byte encoding) this key was decoded from.
    pub fn id(&self) -> KeyId {
        KeyId(self.key.into())
    }
}

impl KeyId {
    /// This key id as a checked public key for entry signatures (`spec/record.md` §2.3 steps
    /// 1–3), in this order: a non-canonical encoding (y >= p), bytes that are not a curve
    /// point, a small-order point.
    ///
    /// # Errors
    /// [`RecordError::NonCanonicalKey`], [`RecordError::BadKey`], [`RecordError::WeakKey`].
    /// Does not panic.
    pub fn public_key(&self) -> Result<PublicKey, RecordError> {
        if !super::keys::is_canonical_y(&self.0) {
            return Err(RecordError::NonCanonicalKey);
        }
        // One decompression (curve25519-dalek's, inside ed25519-zebra).
        let key = VerificationKey::try_from(self.0).map_err(|_| RecordError::BadKey)?;
        // Canonical y and a point: small order is one of the eight encodings, or x = 0 with
        // the sign bit set (the identity and (0, -1) written the other way).
        if SMALL_ORDER_ENCODINGS.contains(&self.0) || x_zero_negative(&self.0) {
            return Err(RecordError::WeakKey);
        }
        Ok(PublicKey { key })
    }
}

/// Whether `b` is y = 1 or y = p - 1 (the points with x = 0) with the sign bit set: the
/// non-canonical encodings of the identity and of (0, -1).
fn x_zero_negative(b: &[u8; 32]) -> bool {
    let mut y = *b;
    y[31] &= 0x7f;
    b[31] & 0x80 != 0 && (y == SMALL_ORDER_ENCODINGS[0] || y == SMALL_ORDER_ENCODINGS[1])
}

/// The canonical encodings of the eight points of small order (`[8]P` is the identity), with
/// the order of each. `tests/record.rs` checks each against curve25519-dalek: eight distinct
/// points of small order, each encoded canonically, are all of them.
pub(crate) const SMALL_ORDER_ENCODINGS: [[u8; 32]; 8] = [
    // order 1: the identity (0, 1)
    hex32("0100000000000000000000000000000000000000000000000000000000000000"),
    // order 2: (0, -1)
    hex32("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
    // order 4: (±sqrt(-1), 0)
    hex32("0000000000000000000000000000000000000000000000000000000000000000"),
    hex32("0000000000000000000000000000000000000000000000000000000000000080"),
    // order 8
    hex32("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
    hex32("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85"),
    hex32("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
    hex32("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa"),
];

const fn hex32(s: &str) -> [u8; 32] {
    const fn nibble(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => panic!("not a lowercase hex digit"),
        }
    }
    let b = s.as_bytes();
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = nibble(b[2 * i]) << 4 | nibble(b[2 * i + 1]);
        i += 1;
    }
    out
}

/// `spec/record.md` §2.3 steps 4–6 on the bytes alone: `S < L`, `R` canonical (y < p, and not
/// x = 0 with the sign bit set) and not of small order. Whether `R` is a point at all is left
/// to the equation (a non-point never verifies).
fn encodings_ok(signature: &[u8; 64]) -> bool {
    let mut r = [0u8; 32];
    r.copy_from_slice(&signature[..32]);
    let mut s = [0u8; 32];
    s.copy_from_slice(&signature[32..]);
    let s_ok = bool::from(curve25519_dalek::Scalar::from_canonical_bytes(s).is_some());
    s_ok && super::keys::is_canonical_y(&r)
        && !x_zero_negative(&r)
        && !SMALL_ORDER_ENCODINGS.contains(&r)
}

/// Checks one signature over `message` (`spec/record.md` §2.3 steps 4–8, cofactored).
///
/// # Errors
/// [`RecordError::BadSignature`], opaque: it does not say which step failed. Does not panic.
pub fn verify(key: &PublicKey, message: &[u8], signature: &[u8; 64]) -> Result<(), RecordError> {
    if !encodings_ok(signature) {
        return Err(RecordError::BadSignature);
    }
    key.key
        .verify(&Signature::from_bytes(signature), message)
        .map_err(|_| RecordError::BadSignature)
}

/// One signature waiting in a [`Batch`]: the batch item (with `k` computed) and what a single
/// check needs without decompressing the key again.
struct Queued {
    item: batch::Item,
    key: PublicKey,
    message: Vec<u8>,
    signature: [u8; 64],
}

impl Queued {
    /// [`verify`] of this signature alone (the encodings already passed).
    fn alone(&self) -> bool {
        self.key
            .key
            .verify(&Signature::from_bytes(&self.signature), &self.message)
            .is_ok()
    }
}

/// Batch verification with the answers of [`verify`], one per signature, in queue order.
///
/// Signatures whose encodings fail steps 4–6 are refused when queued. The rest are checked
/// with one multiscalar multiplication (ed25519-zebra, coefficients for the same key merged:
/// a ledger has few writers). When that fails, halves are checked until the bad signatures
/// are found; where both halves of a failed set fail, bad signatures are dense and the set is
/// checked one signature at a time, so a wholly bad batch costs about what checking each alone
/// does. Memory: about 130 bytes plus the message per queued signature. Cost on the 2-vCPU
/// machine of `spec/benchmarks.md`: about 22 µs per signature in a batch of 8, 10–11 µs in a
/// batch of 512, against ≈ 49 µs for one `verify_strict`. Randomness comes from the operating
/// system; if it cannot be read, every signature is checked alone (no panic).
#[derive(Default)]
pub struct Batch {
    queued: Vec<Option<Queued>>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `signature` by `key` over `message`; returns its position in the answers. The
    /// batch keeps `message`, to check the signature alone should the batch equation fail.
    pub fn queue(&mut self, key: &PublicKey, message: Vec<u8>, signature: &[u8; 64]) -> usize {
        let q = encodings_ok(signature).then(|| Queued {
            item: batch::Item::from((
                VerificationKeyBytes::from(key.key),
                Signature::from_bytes(signature),
                &message[..],
            )),
            key: *key,
            message,
            signature: *signature,
        });
        self.queued.push(q);
        self.queued.len() - 1
    }

    /// A position in the answers that is refused whatever the batch holds (for an entry that
    /// failed before its signature could be checked).
    pub fn queue_refused(&mut self) -> usize {
        self.queued.push(None);
        self.queued.len() - 1
    }

    /// Checks every queued signature: `answers[i]` is what [`verify`] says of the `i`-th.
    pub fn verify(self) -> Vec<bool> {
        let mut answers: Vec<bool> = self.queued.iter().map(Option::is_some).collect();
        let live: Vec<(usize, Queued)> = self
            .queued
            .into_iter()
            .enumerate()
            .filter_map(|(i, q)| q.map(|q| (i, q)))
            .collect();
        if live.len() < SINGLE_BELOW || batch_holds(&live) != Some(true) {
            find_bad(&live, &mut answers);
        }
        answers
    }
}

/// Below this many signatures, sets are checked one signature at a time.
const SINGLE_BELOW: usize = 4;

/// Whether every signature of `items` verifies, by one batch equation; `None` when the
/// operating system's randomness could not be read (the caller then checks them alone).
fn batch_holds(items: &[(usize, Queued)]) -> Option<bool> {
    let mut v = batch::Verifier::new();
    for (_, q) in items {
        v.queue(q.item.clone());
    }
    let mut rng = CheckedOsRng::for_signatures(items.len());
    let ok = v.verify(&mut rng).is_ok();
    (!rng.failed).then_some(ok)
}

/// Sets `answers[i] = false` for every bad signature among `items`, which are either few or
/// known to hold at least one bad signature.
fn find_bad(items: &[(usize, Queued)], answers: &mut [bool]) {
    if items.len() < SINGLE_BELOW {
        for (i, q) in items {
            answers[*i] = q.alone();
        }
        return;
    }
    let (a, b) = items.split_at(items.len() / 2);
    match (batch_holds(a), batch_holds(b)) {
        (Some(true), Some(true)) => {}
        (Some(true), _) => find_bad(b, answers),
        (_, Some(true)) => find_bad(a, answers),
        // Both halves hold bad signatures (or no randomness): one at a time.
        _ => {
            for (i, q) in items {
                answers[*i] = q.alone();
            }
        }
    }
}

/// Random bytes one batch coefficient takes (ed25519-zebra 4 draws a 128-bit `z` per
/// signature).
const COEFFICIENT_BYTES: usize = 16;
/// Most bytes read from the operating system at once (the coefficients of 256 signatures).
const MAX_PREFETCH: usize = 256 * COEFFICIENT_BYTES;

/// The operating system's randomness for the batch coefficients, remembering a failure
/// instead of panicking (`rand_core::OsRng::fill_bytes` panics): a batch whose coefficients
/// could not all be drawn is not trusted.
///
/// The bytes of a batch's coefficients are read in one call (`getrandom`), up to
/// [`MAX_PREFETCH`], instead of one call per signature (16 bytes each): the same bytes from the
/// same source, each handed out once. A batch of 8 made 8 system calls, about 1.6 % of the
/// on-CPU samples of a cold retrieval of 8 at 100k entries (`spec/benchmarks.md`, run O).
struct CheckedOsRng {
    failed: bool,
    /// Bytes read from the operating system and not yet handed out: `buf[used..]`.
    buf: Vec<u8>,
    used: usize,
    /// How many bytes the next read from the operating system asks for.
    want: usize,
}

impl CheckedOsRng {
    /// A source that reads the coefficients of `signatures` signatures at its first draw.
    fn for_signatures(signatures: usize) -> Self {
        Self {
            failed: false,
            buf: Vec::new(),
            used: 0,
            want: signatures
                .saturating_mul(COEFFICIENT_BYTES)
                .clamp(COEFFICIENT_BYTES, MAX_PREFETCH),
        }
    }

    /// Fills `dest` from the bytes read ahead, reading more when they run out; each byte is
    /// handed out once.
    fn draw(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        let mut filled = 0;
        while filled < dest.len() {
            if self.used == self.buf.len() {
                self.buf.resize(self.want.max(dest.len() - filled), 0);
                self.used = 0;
                if let Err(e) =
                    rand_core::RngCore::try_fill_bytes(&mut rand_core::OsRng, &mut self.buf)
                {
                    self.buf.clear();
                    return Err(e);
                }
            }
            let n = (dest.len() - filled).min(self.buf.len() - self.used);
            dest[filled..filled + n].copy_from_slice(&self.buf[self.used..self.used + n]);
            // Not kept once handed out.
            self.buf[self.used..self.used + n].fill(0);
            self.used += n;
            filled += n;
        }
        Ok(())
    }
}

impl rand_core::RngCore for CheckedOsRng {
    fn next_u32(&mut self) -> u32 {
        rand_core::impls::next_u32_via_fill(self)
    }

    fn next_u64(&mut self) -> u64 {
        rand_core::impls::next_u64_via_fill(self)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        if self.draw(dest).is_err() {
            self.failed = true;
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        let r = self.draw(dest);
        if r.is_err() {
            self.failed = true;
        }
        r
    }
}

impl rand_core::CryptoRng for CheckedOsRng {}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::edwards::CompressedEdwardsY;

    /// The list is all of the small-order points: eight distinct points, each of small order and
    /// each written in its canonical encoding (the torsion subgroup has exactly eight points).
    #[test]
    fn small_order_encodings_are_the_eight_torsion_points() {
        let mut seen = std::collections::HashSet::new();
        for enc in SMALL_ORDER_ENCODINGS {
            let p = CompressedEdwardsY(enc).decompress().expect("a point");
            assert!(p.is_small_order(), "{}", hex::encode(enc));
            assert_eq!(p.compress().0, enc, "canonical: {}", hex::encode(enc));
            assert!(seen.insert(enc));
        }
        assert_eq!(seen.len(), 8);
    }

    /// Every byte drawn is fresh: draws of one coefficient each, past the bytes read ahead
    /// and across a refill, never repeat a 16-byte value (a source that handed out the same
    /// bytes twice, or zeros, fails this with certainty; fresh bytes collide with probability
    /// about 2^-100).
    #[test]
    fn coefficient_bytes_are_each_drawn_once() {
        let mut rng = CheckedOsRng::for_signatures(3);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..40 {
            let mut z = [0u8; COEFFICIENT_BYTES];
            rand_core::RngCore::fill_bytes(&mut rng, &mut z);
            assert!(seen.insert(z), "{}", hex::encode(z));
        }
        let mut big = vec![0u8; 3 * MAX_PREFETCH + 5];
        rand_core::RngCore::fill_bytes(&mut rng, &mut big);
        for chunk in big.chunks_exact(COEFFICIENT_BYTES) {
            assert!(seen.insert(chunk.try_into().unwrap()));
        }
        assert!(!rng.failed);
    }

    #[test]
    fn empty_batch_has_no_answers() {
        assert!(Batch::new().verify().is_empty());
        let mut b = Batch::new();
        assert_eq!(b.queue_refused(), 0);
        assert_eq!(b.verify(), vec![false]);
    }
}
