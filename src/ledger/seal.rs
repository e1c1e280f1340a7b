//! The label seal (`spec/lineage.md` §5): how a ledger handle knows that the labels, kinds and
//! ids it reads from an untrusted store are the ones a holder of the log key computed.
//!
//! A *label chain* runs over the entries in log order:
//!
//! ```text
//! c_0     = 32 zero bytes
//! c_{i+1} = SHA-256("memlineage/label-chain@v1" || c_i || u64be(i) || id_i || u64be(kind_i) || label_i)
//! ```
//!
//! and the store keeps, in its `meta` row `label_seal`, the chain head at some tree size `s`
//! with an HMAC-SHA-256 tag under a key derived from the log's secret key:
//!
//! ```text
//! K   = SHA-256("memlineage/label-seal-key@v1" || log secret seed)
//! tag = HMAC-SHA-256(K, "memlineage/label-seal@v1" || u64be(s) || c_s)
//! ```
//!
//! Every append writes the new seal in the same store transaction as the entries (where the
//! backend can). Opening a ledger recomputes the chain over the stored rows (one SHA-256 per
//! entry, no signature) and compares it at `s`; rows after `s` (a crash between an append and
//! its seal, a backend without atomic meta writes, a ledger written before seals existed) are
//! re-verified and relabelled from their signed bytes. A store-only attacker, who holds no
//! key, can therefore not flip a label, hide a tombstone or flag by changing its kind, swap
//! rows or drop one without the open failing; what it can still do is roll the whole store
//! back to an earlier sealed state, which the fronts detect by remembering what they saw
//! (`spec/hooks.md` §5).

use crate::lineage::Label;
use crate::log::LogSigner;
use crate::record::{EntryId, Kind};
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The `meta` key the seal is kept under (`spec/storage.md` §4.4).
pub const META_SEAL: &str = "label_seal";

const CHAIN_PREFIX: &[u8] = b"memlineage/label-chain@v1";
const KEY_PREFIX: &[u8] = b"memlineage/label-seal-key@v1";
const TAG_PREFIX: &[u8] = b"memlineage/label-seal@v1";

/// Why a stored seal or the rows it covers were refused. Every variant can be caused by
/// untrusted input (whoever can write the store).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The `label_seal` value is not `v1 <size> <64 hex> <64 hex>`.
    #[error("the stored label seal is malformed")]
    Malformed,
    /// The tag does not verify under this log's key: the seal was written without the key.
    #[error("the stored label seal does not verify under this log's key")]
    Forged,
    /// The stored rows' labels, kinds or ids differ from those the seal covers.
    #[error(
        "the stored labels, kinds or ids of the first {size} entries differ from those the log \
         key sealed: the store was modified without the key (run `memlineage verify`)"
    )]
    Mismatch {
        /// The sealed tree size.
        size: u64,
    },
    /// The store holds fewer entries than the seal covers: it was rolled back or truncated.
    #[error(
        "the store holds {stored} entries but the log key sealed {sealed}: entries were \
         removed or the file was rolled back"
    )]
    Behind {
        /// The sealed tree size.
        sealed: u64,
        /// Entries in the store.
        stored: u64,
    },
}

/// The HMAC key of a log's seals, derived from its secret key.
#[derive(Clone)]
pub(crate) struct SealKey([u8; 32]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(..)")
    }
}

impl SealKey {
    /// `K = SHA-256("memlineage/label-seal-key@v1" || seed)` of the log key.
    pub(crate) fn of(signer: &LogSigner) -> Self {
        let mut h = Sha256::new();
        h.update(KEY_PREFIX);
        h.update(signer.writer_key().seed());
        SealKey(h.finalize().into())
    }

    fn mac(&self, chain: &Chain) -> Hmac<Sha256> {
        let mut m = self.keyed();
        m.update(TAG_PREFIX);
        m.update(&chain.size.to_be_bytes());
        m.update(&chain.head);
        m
    }

    /// An HMAC-SHA-256 tag under this key over `domain || message`, for other records the
    /// fronts keep beside the store (session files, `spec/hooks.md` §3).
    pub(crate) fn tag(&self, domain: &[u8], message: &[u8]) -> [u8; 32] {
        let mut m = self.keyed();
        m.update(domain);
        m.update(message);
        m.finalize().into_bytes().into()
    }

    fn keyed(&self) -> Hmac<Sha256> {
        // HMAC zero-pads a key shorter than the hash's 64-byte block (RFC 2104 §2), so the
        // padded block key gives the same MAC as the 32-byte key, with no fallible path.
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&self.0);
        <Hmac<Sha256> as KeyInit>::new(&block.into())
    }

    /// The stored form of a seal over `chain`: `v1 <size> <head hex> <tag hex>`.
    pub(crate) fn seal(&self, chain: &Chain) -> String {
        let tag = self.mac(chain).finalize().into_bytes();
        format!(
            "v1 {} {} {}",
            chain.size,
            hex::encode(chain.head),
            hex::encode(tag)
        )
    }

    /// Parses and verifies a stored seal (tag compared in constant time).
    ///
    /// # Errors
    /// [`SealError::Malformed`], [`SealError::Forged`].
    pub(crate) fn open(&self, stored: &str) -> Result<Chain, SealError> {
        let mut parts = stored.split(' ');
        let (Some("v1"), Some(size), Some(head), Some(tag), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(SealError::Malformed);
        };
        let size: u64 = size.parse().map_err(|_| SealError::Malformed)?;
        let mut h = [0u8; 32];
        hex::decode_to_slice(head, &mut h).map_err(|_| SealError::Malformed)?;
        let mut t = [0u8; 32];
        hex::decode_to_slice(tag, &mut t).map_err(|_| SealError::Malformed)?;
        let chain = Chain { size, head: h };
        self.mac(&chain)
            .verify_slice(&t)
            .map_err(|_| SealError::Forged)?;
        Ok(chain)
    }
}

/// The label chain over the first `size` entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chain {
    /// Entries covered.
    pub size: u64,
    /// `c_size`.
    pub head: [u8; 32],
}

impl Chain {
    /// The chain over no entry.
    pub(crate) const EMPTY: Chain = Chain {
        size: 0,
        head: [0; 32],
    };

    /// Extends the chain by the entry at leaf index `self.size`.
    pub(crate) fn push(&mut self, id: &EntryId, kind: Kind, label: Label) {
        let mut h = Sha256::new();
        h.update(CHAIN_PREFIX);
        h.update(self.head);
        h.update(self.size.to_be_bytes());
        h.update(id.0);
        h.update(kind.code().to_be_bytes());
        h.update([label.code()]);
        self.head = h.finalize().into();
        self.size += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::WriterKey;

    fn key(label: &str) -> SealKey {
        SealKey::of(&LogSigner::new("test.example/seal", WriterKey::for_label(label)).unwrap())
    }

    #[test]
    fn seals_round_trip_and_refuse_other_keys_and_edits() {
        let k = key("seal-a");
        let mut c = Chain::EMPTY;
        c.push(&EntryId([7; 32]), Kind::Prompt, Label::Trusted);
        let s = k.seal(&c);
        assert_eq!(k.open(&s), Ok(c));
        assert_eq!(key("seal-b").open(&s), Err(SealError::Forged));
        let bumped = s.replacen(" 1 ", " 2 ", 1);
        assert_eq!(k.open(&bumped), Err(SealError::Forged));
        for bad in ["", "v1", "v2 1 00 00", "v1 x 00 00", &format!("{s} extra")] {
            assert_eq!(k.open(bad), Err(SealError::Malformed), "{bad}");
        }
    }

    #[test]
    fn the_chain_covers_id_kind_label_and_order() {
        let push = |items: &[(u8, Kind, Label)]| {
            let mut c = Chain::EMPTY;
            for (id, kind, label) in items {
                c.push(&EntryId([*id; 32]), *kind, *label);
            }
            c
        };
        let base = push(&[
            (1, Kind::Prompt, Label::Trusted),
            (2, Kind::Fact, Label::External),
        ]);
        for other in [
            push(&[
                (1, Kind::Prompt, Label::Trusted),
                (2, Kind::Fact, Label::Trusted),
            ]),
            push(&[
                (1, Kind::Prompt, Label::Trusted),
                (2, Kind::Summary, Label::External),
            ]),
            push(&[
                (1, Kind::Prompt, Label::Trusted),
                (3, Kind::Fact, Label::External),
            ]),
            push(&[
                (2, Kind::Fact, Label::External),
                (1, Kind::Prompt, Label::Trusted),
            ]),
        ] {
            assert_ne!(base.head, other.head);
        }
    }
}
