//! The label seal (`spec/lineage.md` §5.1): how a ledger handle knows that the labels, kinds and
//! ids it reads from an untrusted store are the ones a holder of the log key computed, without
//! reading every row.
//!
//! Every entry row carries a *row tag*, and the store's `meta` row `label_seal` holds, at some
//! tree size `s`, the head of an *effects chain* over the rows that have effects (kind code
//! ≥ 5: tombstones, keyring bindings, flags, releases, leases, replacements):
//!
//! ```text
//! K    = SHA-256("memlineage/label-seal-key@v1" || log secret seed)
//! t_i  = HMAC-SHA-256(K, "memlineage/label-row@v2" || u64be(i) || id_i || u64be(kind_i) || label_i)
//! e_0  = 32 zero bytes
//! e_j+1 = SHA-256("memlineage/effects-chain@v2" || e_j || u64be(i) || id_i || u64be(kind_i))
//!        for the j-th row with effects, at leaf index i
//! tag  = HMAC-SHA-256(K, "memlineage/label-seal@v2" || u64be(s) || u64be(n) || e_n)
//! meta["label_seal"] = "v2 <s> <n> <hex e_n> <hex tag>"
//! ```
//!
//! A handle believes a stored row only if its tag verifies (a flipped label, a changed kind or
//! id, a moved row fail), so a label lookup is one indexed read and one HMAC, whatever the
//! ledger's size. Opening reads the seal and the rows with effects only (a partial index), and
//! recomputes the effects chain: a store-only attacker cannot hide a flag, tombstone or binding
//! by deleting its row or changing its kind without the open failing. Rows after `s` are
//! verified from their signed bytes and labelled again. What the seal cannot stop: rolling the
//! whole store back to an earlier sealed state, which the fronts detect by remembering what
//! they saw (`spec/hooks.md` §5).

use crate::lineage::Label;
use crate::log::LogSigner;
use crate::record::{EntryId, Kind};
use crate::store::EntryMeta;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The `meta` key the seal is kept under (`spec/storage.md` §4.4).
pub const META_SEAL: &str = "label_seal";

const CHAIN_PREFIX: &[u8] = b"memlineage/effects-chain@v2";
const KEY_PREFIX: &[u8] = b"memlineage/label-seal-key@v1";
const TAG_PREFIX: &[u8] = b"memlineage/label-seal@v2";
const ROW_PREFIX: &[u8] = b"memlineage/label-row@v2";

/// Why a stored seal or the rows it covers were refused. Every variant can be caused by
/// untrusted input (whoever can write the store).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The `label_seal` value is not `v2 <size> <count> <64 hex> <64 hex>`.
    #[error("the stored label seal is malformed")]
    Malformed,
    /// The tag does not verify under this log's key: the seal was written without the key.
    #[error("the stored label seal does not verify under this log's key")]
    Forged,
    /// The stored rows with effects (flags, tombstones, bindings…) differ from those the seal
    /// covers: one was deleted, moved, or had its kind changed.
    #[error(
        "the stored entries with effects (flags, tombstones, bindings) among the first {size} \
         differ from those the log key sealed: the store was modified without the key (run \
         `memlineage verify`)"
    )]
    Mismatch {
        /// The sealed tree size.
        size: u64,
    },
    /// A row after the seal is not the leaf that a signed checkpoint has at its index:
    /// entries were removed, moved or reordered without the key.
    #[error(
        "the stored entry at index {index} is not the one the signed checkpoint of size {size} \
         has there: entries were removed or reordered without the key (run `memlineage verify`)"
    )]
    NotInTree {
        /// The row's leaf index as stored.
        index: u64,
        /// The checkpoint's tree size.
        size: u64,
    },
    /// A stored row's tag does not verify: its label, kind, id or index was changed without
    /// the key, or the row was stored without a tag below the sealed size.
    #[error(
        "the stored label, kind or id of entry {index} differs from what the log key sealed: \
         the store was modified without the key (run `memlineage verify`)"
    )]
    Row {
        /// The row's leaf index as stored.
        index: u64,
    },
    /// A stored entry the handle read (after the seal, or with effects) may not follow the log
    /// before it (`spec/lineage.md` §5.2): an unbound writer, a keyring entry not by the log
    /// key, an unknown parent, a flag by a tool… Only an entry written into the store without
    /// the log key gets here (an honest ledger admitted it at append).
    #[error(
        "the stored entry at index {index} may not follow the log before it ({reason}): it          was written into the store without the log key (run `memlineage verify`)"
    )]
    Inadmissible {
        /// The row's leaf index as stored.
        index: u64,
        /// The admission rule it breaks.
        reason: crate::lineage::admission::AdmissionError,
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

/// The HMAC key of a log's seals, derived from its secret key, kept as the HMAC state after
/// the key blocks (RFC 2104's inner and outer pads, one SHA-256 compression each): every tag
/// starts from a copy of it instead of hashing the key again.
#[derive(Clone)]
pub(crate) struct SealKey(Hmac<Sha256>);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(..)")
    }
}

/// An HMAC-SHA-256 under the log's seal key over a message fed in parts
/// ([`crate::Ledger::seal_stream`]): `update(a)` then `update(b)` and `finish()` give the tag
/// [`crate::Ledger::seal_tag`] gives for `a || b` (same domain). A clone forks the computation,
/// so that a prefix hashed once can be extended later (the session seal, `spec/hooks.md` §6).
#[derive(Clone)]
pub struct SealStream(Hmac<Sha256>);

impl std::fmt::Debug for SealStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealStream(..)")
    }
}

impl SealStream {
    /// Feeds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The tag over everything fed.
    pub fn finish(self) -> [u8; 32] {
        self.0.finalize().into_bytes().into()
    }

    /// Whether `tag` is the tag over everything fed (compared in constant time).
    pub(crate) fn verifies(self, tag: &[u8]) -> bool {
        self.0.verify_slice(tag).is_ok()
    }
}

impl SealKey {
    /// `K = SHA-256("memlineage/label-seal-key@v1" || seed)` of the log key.
    pub(crate) fn of(signer: &LogSigner) -> Self {
        let mut h = Sha256::new();
        h.update(KEY_PREFIX);
        h.update(signer.writer_key().seed());
        let key: [u8; 32] = h.finalize().into();
        // HMAC zero-pads a key shorter than the hash's 64-byte block (RFC 2104 §2), so the
        // padded block key gives the same MAC as the 32-byte key, with no fallible path.
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&key);
        SealKey(<Hmac<Sha256> as KeyInit>::new(&block.into()))
    }

    fn mac(&self, seal: &Sealed) -> Hmac<Sha256> {
        let mut m = self.keyed();
        m.update(TAG_PREFIX);
        m.update(&seal.size.to_be_bytes());
        m.update(&seal.effects.count.to_be_bytes());
        m.update(&seal.effects.head);
        m
    }

    fn row_mac(&self, index: u64, id: &EntryId, kind: Kind, label: Label) -> Hmac<Sha256> {
        let mut m = self.keyed();
        m.update(ROW_PREFIX);
        m.update(&index.to_be_bytes());
        m.update(&id.0);
        m.update(&kind.code().to_be_bytes());
        m.update(&[label.code()]);
        m
    }

    /// The row tag `t_i` of the entry `id` of `kind` labelled `label` at leaf index `index`.
    pub(crate) fn row_tag(&self, index: u64, id: &EntryId, kind: Kind, label: Label) -> [u8; 32] {
        self.row_mac(index, id, kind, label)
            .finalize()
            .into_bytes()
            .into()
    }

    /// Whether the stored row `m` carries the row tag of its own `(index, id, kind, label)`
    /// (compared in constant time); a row without a tag does not.
    pub(crate) fn verifies(&self, m: &EntryMeta) -> bool {
        m.tag.as_ref().is_some_and(|t| {
            self.row_mac(m.index, &m.id, m.kind, m.label)
                .verify_slice(t)
                .is_ok()
        })
    }

    /// An HMAC-SHA-256 tag under this key over `domain || message`, for other records the
    /// fronts keep beside the store (session files, `spec/hooks.md` §3).
    pub(crate) fn tag(&self, domain: &[u8], message: &[u8]) -> [u8; 32] {
        let mut m = self.keyed();
        m.update(domain);
        m.update(message);
        m.finalize().into_bytes().into()
    }

    /// [`SealKey::tag`] of a message fed in parts, starting with `domain`.
    pub(crate) fn stream(&self, domain: &[u8]) -> SealStream {
        let mut m = self.keyed();
        m.update(domain);
        SealStream(m)
    }

    fn keyed(&self) -> Hmac<Sha256> {
        self.0.clone()
    }

    /// The stored form of `seal`: `v2 <size> <count> <head hex> <tag hex>` (written with every
    /// append: built in one buffer, without the formatting machinery).
    pub(crate) fn seal(&self, seal: &Sealed) -> String {
        let tag: [u8; 32] = self.mac(seal).finalize().into_bytes().into();
        let mut out = String::with_capacity(3 + 2 * 21 + 2 * 65);
        out.push_str("v2 ");
        push_decimal(&mut out, seal.size);
        out.push(' ');
        push_decimal(&mut out, seal.effects.count);
        for bytes in [&seal.effects.head, &tag] {
            out.push(' ');
            let mut hex = [0u8; 64];
            // 64 output bytes for 32 input bytes: cannot fail.
            if hex::encode_to_slice(bytes, &mut hex).is_ok() {
                out.extend(hex.iter().map(|&b| char::from(b)));
            }
        }
        out
    }

    /// Parses and verifies a stored seal (tag compared in constant time).
    ///
    /// # Errors
    /// [`SealError::Malformed`] (including a memlineage 0.1 `v1` seal, which the caller treats
    /// as no seal), [`SealError::Forged`].
    pub(crate) fn open(&self, stored: &str) -> Result<Sealed, SealError> {
        let Some(["v2", size, count, head, tag]) = fields(stored) else {
            return Err(SealError::Malformed);
        };
        let size: u64 = size.parse().map_err(|_| SealError::Malformed)?;
        let count: u64 = count.parse().map_err(|_| SealError::Malformed)?;
        let mut h = [0u8; 32];
        hex::decode_to_slice(head, &mut h).map_err(|_| SealError::Malformed)?;
        let mut t = [0u8; 32];
        hex::decode_to_slice(tag, &mut t).map_err(|_| SealError::Malformed)?;
        let seal = Sealed {
            size,
            effects: Chain { count, head: h },
        };
        self.mac(&seal)
            .verify_slice(&t)
            .map_err(|_| SealError::Forged)?;
        Ok(seal)
    }
}

/// Appends `n` in decimal (what `format!("{n}")` writes).
fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&b| char::from(b)));
}

/// Whether a stored seal is memlineage 0.1's (`v1 …`, a chain over every row): it is not
/// believed, and the rows it covered are verified and labelled again from their signed bytes.
pub(crate) fn is_v1(stored: &str) -> bool {
    stored.starts_with("v1 ")
}

/// What a seal states: the tree size `s` it covers and the effects chain over the rows with
/// effects below `s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sealed {
    /// Entries covered (every row below carries a valid row tag).
    pub size: u64,
    /// The effects chain over the rows with effects among them.
    pub effects: Chain,
}

impl Sealed {
    /// The seal over no entry.
    pub(crate) const EMPTY: Sealed = Sealed {
        size: 0,
        effects: Chain::EMPTY,
    };
}

/// The `N` fields of a stored value separated by single spaces; `None` for another count.
pub(super) fn fields<const N: usize>(stored: &str) -> Option<[&str; N]> {
    stored.split(' ').collect::<Vec<_>>().try_into().ok()
}

/// The effects chain over some rows with effects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chain {
    /// Rows with effects covered.
    pub count: u64,
    /// `e_count`.
    pub head: [u8; 32],
}

impl Chain {
    /// The chain over no row.
    pub(crate) const EMPTY: Chain = Chain {
        count: 0,
        head: [0; 32],
    };

    /// Extends the chain by the row with effects `id` of `kind` at leaf index `index`.
    pub(crate) fn push(&mut self, index: u64, id: &EntryId, kind: Kind) {
        let mut h = Sha256::new();
        h.update(CHAIN_PREFIX);
        h.update(self.head);
        h.update(index.to_be_bytes());
        h.update(id.0);
        h.update(kind.code().to_be_bytes());
        self.head = h.finalize().into();
        self.count += 1;
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
        let mut effects = Chain::EMPTY;
        effects.push(0, &EntryId([7; 32]), Kind::Keyring);
        let seal = Sealed { size: 3, effects };
        let s = k.seal(&seal);
        assert_eq!(k.open(&s), Ok(seal));
        assert_eq!(key("seal-b").open(&s), Err(SealError::Forged));
        for edit in [s.replacen(" 3 ", " 4 ", 1), s.replacen(" 1 ", " 0 ", 1)] {
            assert_ne!(edit, s);
            assert_eq!(k.open(&edit), Err(SealError::Forged), "{edit}");
        }
        for bad in [
            "",
            "v2",
            "v1 1 00 00",
            "v2 x 1 00 00",
            "v2 1 y 00 00",
            &format!("{s} x"),
        ] {
            assert_eq!(k.open(bad), Err(SealError::Malformed), "{bad}");
        }
        assert!(is_v1("v1 1 00 00") && !is_v1(&s));
    }

    #[test]
    fn the_seal_text_is_the_formatted_one() {
        let k = key("seal-a");
        for (size, count) in [
            (0, 0),
            (3, 1),
            (9, 10),
            (1_000_007, 99),
            (u64::MAX, u64::MAX),
        ] {
            let seal = Sealed {
                size,
                effects: Chain {
                    count,
                    head: [0xa5; 32],
                },
            };
            let tag = k.mac(&seal).finalize().into_bytes();
            let want = format!(
                "v2 {size} {count} {} {}",
                hex::encode(seal.effects.head),
                hex::encode(tag)
            );
            assert_eq!(k.seal(&seal), want);
            assert_eq!(k.open(&want), Ok(seal));
        }
    }

    #[test]
    fn row_tags_bind_index_id_kind_and_label() {
        let k = key("seal-a");
        let row = |index, id, kind, label, tag| EntryMeta {
            index,
            id,
            kind,
            label,
            tag,
        };
        let id = EntryId([1; 32]);
        let t = k.row_tag(4, &id, Kind::ToolResult, Label::External);
        assert!(k.verifies(&row(4, id, Kind::ToolResult, Label::External, Some(t))));
        assert!(!k.verifies(&row(4, id, Kind::ToolResult, Label::External, None)));
        for (i, id2, kind, label) in [
            (5, id, Kind::ToolResult, Label::External),
            (4, EntryId([2; 32]), Kind::ToolResult, Label::External),
            (4, id, Kind::Summary, Label::External),
            (4, id, Kind::ToolResult, Label::Trusted),
        ] {
            assert!(!k.verifies(&row(i, id2, kind, label, Some(t))));
        }
        assert!(!key("seal-b").verifies(&row(4, id, Kind::ToolResult, Label::External, Some(t))));
    }

    #[test]
    fn the_effects_chain_covers_index_id_kind_and_order() {
        let push = |items: &[(u64, u8, Kind)]| {
            let mut c = Chain::EMPTY;
            for (i, id, kind) in items {
                c.push(*i, &EntryId([*id; 32]), *kind);
            }
            c
        };
        let base = push(&[(0, 1, Kind::Keyring), (5, 2, Kind::Quarantine)]);
        for other in [
            push(&[(0, 1, Kind::Keyring), (6, 2, Kind::Quarantine)]),
            push(&[(0, 1, Kind::Keyring), (5, 3, Kind::Quarantine)]),
            push(&[(0, 1, Kind::Keyring), (5, 2, Kind::Tombstone)]),
            push(&[(5, 2, Kind::Quarantine), (0, 1, Kind::Keyring)]),
            push(&[(0, 1, Kind::Keyring)]),
        ] {
            assert_ne!(base, other);
        }
    }
}
