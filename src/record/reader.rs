//! A cursor over one CBOR item that [`super::scan::scan_item`] accepted: reads typed values
//! (unsigned integers, byte and text strings, array and map heads, tags) straight from the
//! bytes, without building a value tree (`spec/record.md` §6.2).
//!
//! The scan has already rejected truncation, indefinite lengths, non-shortest heads, floats,
//! simple values, invalid UTF-8 and nesting deeper than [`super::scan::MAX_DEPTH`], so the
//! reader only decides types; it still checks every bound itself and never panics. What it
//! reads is not trusted to be canonical: the callers re-encode what they decoded and compare
//! bytes ("decode, re-encode, compare", `cbor.rs`, `cose.rs`).

use super::encode::{
    MAJOR_ARRAY as ARRAY, MAJOR_BYTES as BYTES, MAJOR_MAP as MAP, MAJOR_TAG as TAG,
    MAJOR_TEXT as TEXT, MAJOR_UINT as UINT,
};
use super::scan;
use super::RecordError;

/// CBOR major type 1: negative integer (RFC 8949 §3.1); the format writes none but the alg.
const NINT: u8 = 1;

/// A position in `bytes`; each read consumes one item (or one head, for containers and tags).
#[derive(Clone, Copy)]
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at offset `pos` of `bytes` (an item's start, as [`Reader::pos`] gave it).
    pub(super) fn at(bytes: &'a [u8], pos: usize) -> Self {
        Reader { bytes, pos }
    }

    /// The offset of the next item, in bytes.
    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    /// The next head: major type and argument.
    fn head(&mut self) -> Result<(u8, u64), RecordError> {
        let head = scan::read_head(self.bytes, self.pos)?;
        self.pos += head.len;
        Ok((head.major, head.arg))
    }

    /// The next item's major type, without consuming it.
    fn peek_major(&self) -> Result<u8, RecordError> {
        Ok(scan::read_head(self.bytes, self.pos)?.major)
    }

    /// `len` bytes of content after a string head.
    fn content(&mut self, len: u64) -> Result<&'a [u8], RecordError> {
        let len = usize::try_from(len).map_err(|_| RecordError::Truncated)?;
        let end = self.pos.checked_add(len).ok_or(RecordError::Truncated)?;
        let out = self
            .bytes
            .get(self.pos..end)
            .ok_or(RecordError::Truncated)?;
        self.pos = end;
        Ok(out)
    }

    /// An unsigned integer; anything else is [`RecordError::WrongType`] for `field`. A tag 2
    /// bignum over a byte string is read as the integer it denotes when that fits in 64 bits
    /// (RFC 8949 §3.4.3; `spec/record.md` §6.3 step 3): no deterministic encoding writes one, so
    /// the caller's re-encoding rejects it as `NonCanonical`.
    pub(super) fn uint(&mut self, field: &'static str) -> Result<u64, RecordError> {
        self.unsigned()?.ok_or(RecordError::WrongType {
            field,
            want: "an unsigned integer",
        })
    }

    /// The next item's value when it denotes an unsigned integer that fits in 64 bits (major
    /// type 0, or a tag 2 bignum), else `None`; consumes the head (and a bignum's content).
    fn unsigned(&mut self) -> Result<Option<u64>, RecordError> {
        match self.head()? {
            (UINT, v) => Ok(Some(v)),
            (TAG, BIGNUM) if self.peek_major()? == BYTES => {
                let (_, len) = self.head()?;
                let digits = self.content(len)?;
                Ok(bignum_u64(digits))
            }
            _ => Ok(None),
        }
    }

    /// A byte string's content; anything else is [`RecordError::WrongType`] for `field`,
    /// saying `want`.
    pub(super) fn bytes(
        &mut self,
        field: &'static str,
        want: &'static str,
    ) -> Result<&'a [u8], RecordError> {
        match self.head()? {
            (BYTES, len) => self.content(len),
            _ => Err(RecordError::WrongType { field, want }),
        }
    }

    /// A byte string of exactly 32 bytes (a hash, an id, a key).
    pub(super) fn bytes32(&mut self, field: &'static str) -> Result<[u8; 32], RecordError> {
        const WANT: &str = "a 32-byte byte string";
        self.bytes(field, WANT)?
            .try_into()
            .map_err(|_| RecordError::WrongType { field, want: WANT })
    }

    /// A text string (UTF-8, RFC 8949 §3.1 major type 3).
    pub(super) fn text(&mut self, field: &'static str) -> Result<&'a str, RecordError> {
        match self.head()? {
            (TEXT, len) => {
                std::str::from_utf8(self.content(len)?).map_err(|_| RecordError::Malformed {
                    reason: format!("{field}: text string is not valid UTF-8"),
                })
            }
            _ => Err(RecordError::WrongType {
                field,
                want: "a text string",
            }),
        }
    }

    /// An array head: its number of items.
    pub(super) fn array(
        &mut self,
        field: &'static str,
        want: &'static str,
    ) -> Result<u64, RecordError> {
        match self.head()? {
            (ARRAY, n) => Ok(n),
            _ => Err(RecordError::WrongType { field, want }),
        }
    }

    /// A map head: its number of pairs.
    pub(super) fn map(&mut self, field: &'static str) -> Result<u64, RecordError> {
        match self.head()? {
            (MAP, n) => Ok(n),
            _ => Err(RecordError::WrongType {
                field,
                want: "a map",
            }),
        }
    }

    /// A tag head: its number (RFC 8949 §3.4), or `None` (nothing consumed) when the next
    /// item is not a tag.
    pub(super) fn tag(&mut self) -> Result<Option<u64>, RecordError> {
        if self.peek_major()? != TAG {
            return Ok(None);
        }
        Ok(Some(self.head()?.1))
    }

    /// Skips one whole item (nested items included).
    pub(super) fn skip(&mut self) -> Result<(), RecordError> {
        let rest = self.bytes.get(self.pos..).ok_or(RecordError::Truncated)?;
        self.pos += scan::item_len(rest)?;
        Ok(())
    }

    /// The unsigned integer keys of a map of `n` pairs with the offset of each value, in
    /// order. Fails, at the first pair that breaks it, with [`RecordError::UnknownField`] for a
    /// key that is not an unsigned integer, [`RecordError::DuplicateKey`] or
    /// [`RecordError::UnsortedKeys`] (RFC 8949 §4.2.1: keys in bytewise order, which for
    /// unsigned integers in shortest form is numeric order).
    pub(super) fn keys(&mut self, n: u64) -> Result<Vec<(u64, usize)>, RecordError> {
        // Every pair takes at least two bytes: the scan bounded `n` by the input's length.
        let mut out: Vec<(u64, usize)> =
            Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(self.bytes.len()));
        for _ in 0..n {
            let start = self.pos;
            let key = match self.unsigned()? {
                Some(k) => k,
                None => {
                    return Err(RecordError::UnknownField {
                        key: describe(self.bytes, start),
                    })
                }
            };
            if let Some(&(prev, _)) = out.last() {
                if key == prev {
                    return Err(RecordError::DuplicateKey(key));
                }
                if key < prev {
                    return Err(RecordError::UnsortedKeys);
                }
            }
            out.push((key, self.pos));
            self.skip()?;
        }
        Ok(out)
    }
}

/// The tag of a positive bignum (RFC 8949 §3.4.3).
const BIGNUM: u64 = 2;

/// The big-endian integer `digits` denote, when it fits in 64 bits (leading zeros allowed).
fn bignum_u64(digits: &[u8]) -> Option<u64> {
    let first = digits.iter().position(|&b| b != 0).unwrap_or(digits.len());
    let significant = digits.get(first..)?;
    if significant.len() > 8 {
        return None;
    }
    Some(
        significant
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
    )
}

/// Names the item at `pos` for an error message: a negative integer by its value, anything
/// else by its major type.
fn describe(bytes: &[u8], pos: usize) -> String {
    match scan::read_head(bytes, pos) {
        Ok(h) if h.major == NINT => format!("-{}", u128::from(h.arg) + 1),
        Ok(h) => format!("a key of major type {}", h.major),
        Err(e) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_type_and_names_the_wrong_one() {
        // [1, -8, h'0102', "hi", {}, 18(0)]
        let b = [
            0x86, 0x01, 0x27, 0x42, 0x01, 0x02, 0x62, b'h', b'i', 0xa0, 0xd2, 0x00,
        ];
        let mut r = Reader::at(&b, 0);
        assert_eq!(r.array("a", "an array"), Ok(6));
        assert_eq!(r.uint("x"), Ok(1));
        assert_eq!(
            r.uint("x"),
            Err(RecordError::WrongType {
                field: "x",
                want: "an unsigned integer"
            })
        );
        assert_eq!(r.bytes("x", "bytes"), Ok(&[1u8, 2][..]));
        assert_eq!(r.text("x"), Ok("hi"));
        assert_eq!(r.map("x"), Ok(0));
        assert_eq!(r.tag(), Ok(Some(18)));
        assert_eq!(r.tag(), Ok(None));
        assert_eq!(
            r.bytes("f", "bytes"),
            Err(RecordError::WrongType {
                field: "f",
                want: "bytes"
            })
        );
        assert_eq!(r.pos(), b.len());
        assert_eq!(r.uint("x"), Err(RecordError::Truncated));
    }

    #[test]
    fn keys_must_ascend_without_repeats() {
        // {0: 1, 2: [3, 4], 5: h''}
        let ok = [0xa3, 0x00, 0x01, 0x02, 0x82, 0x03, 0x04, 0x05, 0x40];
        let mut r = Reader::at(&ok, 0);
        let n = r.map("m").expect("a map");
        assert_eq!(r.keys(n), Ok(vec![(0, 2), (2, 4), (5, 8)]));
        assert_eq!(r.pos(), ok.len());
        let dup = [0xa2, 0x01, 0x00, 0x01, 0x00];
        let mut r = Reader::at(&dup, 1);
        assert_eq!(r.keys(2), Err(RecordError::DuplicateKey(1)));
        let unsorted = [0xa2, 0x02, 0x00, 0x01, 0x00];
        let mut r = Reader::at(&unsorted, 1);
        assert_eq!(r.keys(2), Err(RecordError::UnsortedKeys));
        let negative = [
            0xa1, 0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00,
        ];
        let mut r = Reader::at(&negative, 1);
        assert_eq!(
            r.keys(1),
            Err(RecordError::UnknownField {
                key: "-18446744073709551616".into()
            })
        );
    }

    #[test]
    fn a_bignum_reads_as_the_integer_it_denotes_when_it_fits() {
        // 2(h'0005'), 2(h'010000000000000000'), 2(5), 3(h'05')
        let b = [
            0xc2, 0x42, 0x00, 0x05, 0xc2, 0x49, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xc2, 0x05, 0xc3, 0x41,
            0x05,
        ];
        let mut r = Reader::at(&b, 0);
        assert_eq!(r.uint("x"), Ok(5));
        let too_big = RecordError::WrongType {
            field: "x",
            want: "an unsigned integer",
        };
        assert_eq!(r.uint("x"), Err(too_big.clone()));
        assert_eq!(Reader::at(&b, 15).uint("x"), Err(too_big.clone()));
        assert_eq!(Reader::at(&b, 17).uint("x"), Err(too_big));
        // As a map key too: {2(h'03'): 0}
        let key = [0xa1, 0xc2, 0x41, 0x03, 0x00];
        assert_eq!(Reader::at(&key, 1).keys(1), Ok(vec![(3, 4)]));
    }

    #[test]
    fn a_string_longer_than_the_input_is_truncated_not_a_panic() {
        let b = [0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            Reader::at(&b, 0).bytes("x", "b"),
            Err(RecordError::Truncated)
        );
        assert_eq!(Reader::at(&b, 99).uint("x"), Err(RecordError::Truncated));
    }
}
