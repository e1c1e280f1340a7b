//! A bounded, non-recursive well-formedness scan of one CBOR item (RFC 8949 §3), run before
//! any decoding so that each non-deterministic or hostile encoding class gets its own error and
//! nothing is allocated or recursed on the attacker's say-so.
//!
//! Rejected here (RFC 8949 §4.2.1 "core deterministic encoding" and our profile,
//! `spec/record.md` §6): truncated input and declared lengths longer than the input
//! ([`RecordError::Truncated`]), indefinite lengths ([`RecordError::IndefiniteLength`]),
//! arguments not in their shortest form ([`RecordError::NonShortest`]), floats
//! ([`RecordError::Float`]), simple values ([`RecordError::UnsupportedSimple`]), nesting deeper
//! than the format needs ([`RecordError::TooDeep`]), reserved additional-information values
//! 28..=30, stray breaks and text strings that are not UTF-8 ([`RecordError::Malformed`],
//! RFC 8949 §3.1 major type 3), and bytes after the item ([`RecordError::TrailingBytes`]). Map key order and duplicates are checked by the typed
//! decoder, which knows the keys are unsigned integers.

use super::RecordError;

/// Deepest container nesting any memlineage structure uses is 3 (payload map → parents array
/// → pair array; the COSE envelope is tag → array → byte string); an item with `MAX_DEPTH` (8)
/// or more nested non-empty containers and tags is hostile and rejected as [`RecordError::TooDeep`] (`spec/record.md` §6.1 step 5).
pub(crate) const MAX_DEPTH: usize = 8;

/// Scans exactly one item spanning all of `bytes`. O(len) time, O(depth) memory, no recursion.
///
/// # Errors
/// The first [`RecordError`] class found, in input order. Does not panic.
pub(crate) fn scan_item(bytes: &[u8]) -> Result<(), RecordError> {
    let end = scan_prefix(bytes)?;
    match bytes.len() - end {
        0 => Ok(()),
        n => Err(RecordError::TrailingBytes(n)),
    }
}

/// Scans one item at the start of `bytes` and returns its length in bytes (what follows it is
/// not read).
///
/// # Errors
/// As [`scan_item`], but for trailing bytes. Does not panic.
pub(super) fn item_len(bytes: &[u8]) -> Result<usize, RecordError> {
    scan_prefix(bytes)
}

/// Scans one item at the start of `bytes` and returns its length in bytes.
fn scan_prefix(bytes: &[u8]) -> Result<usize, RecordError> {
    let mut pos = 0usize;
    // Items still to read at each open level; the top of the stack is the current level.
    let mut stack: Vec<u64> = Vec::new();
    let mut remaining: u64 = 1;
    loop {
        let head = read_head(bytes, pos)?;
        pos += head.len;
        let left = (bytes.len() - pos) as u64;
        let children = match head.major {
            0 | 1 => 0,
            2 | 3 => {
                if head.arg > left {
                    return Err(RecordError::Truncated);
                }
                // arg <= left <= usize::MAX, checked just above.
                let end = pos + head.arg as usize;
                let content = bytes.get(pos..end).ok_or(RecordError::Truncated)?;
                if head.major == 3 && std::str::from_utf8(content).is_err() {
                    return Err(RecordError::Malformed {
                        reason: "text string is not valid UTF-8".into(),
                    });
                }
                pos = end;
                0
            }
            4 => head.arg,
            5 => head.arg.checked_mul(2).ok_or(RecordError::Truncated)?,
            // A tag is a level of nesting with one child, the item that follows: decoders
            // recurse on it as on a container, so it counts toward `MAX_DEPTH`.
            6 => 1,
            _ => return Err(RecordError::UnsupportedSimple),
        };
        if children > left {
            // Every item takes at least one byte: fail fast on huge declared lengths.
            return Err(RecordError::Truncated);
        }
        remaining -= 1;
        if children > 0 {
            if stack.len() + 1 >= MAX_DEPTH {
                return Err(RecordError::TooDeep { max: MAX_DEPTH });
            }
            stack.push(remaining);
            remaining = children;
            continue;
        }
        while remaining == 0 {
            match stack.pop() {
                Some(r) => remaining = r,
                None => return Ok(pos),
            }
        }
    }
}

/// One CBOR head (RFC 8949 §3): major type, argument, and its length in bytes.
pub(super) struct Head {
    pub(super) major: u8,
    pub(super) arg: u64,
    pub(super) len: usize,
}

/// The head at offset `pos` of `bytes`, checked as [`scan_item`] checks every head.
pub(super) fn read_head(bytes: &[u8], pos: usize) -> Result<Head, RecordError> {
    let &initial = bytes.get(pos).ok_or(RecordError::Truncated)?;
    let (major, minor) = (initial >> 5, initial & 0x1f);
    if major == 7 {
        return Err(match minor {
            25..=27 => RecordError::Float,
            31 => RecordError::Malformed {
                reason: "break outside an indefinite-length item".into(),
            },
            28..=30 => RecordError::Malformed {
                reason: format!("reserved additional information {minor}"),
            },
            _ => RecordError::UnsupportedSimple,
        });
    }
    let (extra, min) = match minor {
        0..=23 => {
            return Ok(Head {
                major,
                arg: u64::from(minor),
                len: 1,
            })
        }
        24 => (1, 24),
        25 => (2, 0x100),
        26 => (4, 0x1_0000),
        27 => (8, 0x1_0000_0000),
        28..=30 => {
            return Err(RecordError::Malformed {
                reason: format!("reserved additional information {minor}"),
            })
        }
        _ if matches!(major, 2..=5) => return Err(RecordError::IndefiniteLength),
        _ => {
            return Err(RecordError::Malformed {
                reason: format!("additional information 31 on major type {major}"),
            })
        }
    };
    let arg_bytes = bytes
        .get(pos + 1..pos + 1 + extra)
        .ok_or(RecordError::Truncated)?;
    let arg = arg_bytes
        .iter()
        .fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
    if arg < min {
        return Err(RecordError::NonShortest);
    }
    Ok(Head {
        major,
        arg,
        len: 1 + extra,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(scan_item(&[0x18, 0x17]), Err(RecordError::NonShortest));
        assert_eq!(scan_item(&[0x18, 0x18]), Ok(()));
        assert_eq!(
            scan_item(&[0x19, 0x00, 0xff]),
            Err(RecordError::NonShortest)
        );
        assert_eq!(scan_item(&[0x1b, 0, 0, 0, 1, 0, 0, 0, 0]), Ok(()));
        assert_eq!(
            scan_item(&[0x5f, 0x41, 0x00, 0xff]),
            Err(RecordError::IndefiniteLength)
        );
        assert_eq!(scan_item(&[0xf9, 0x3c, 0x00]), Err(RecordError::Float));
        assert_eq!(scan_item(&[0xf5]), Err(RecordError::UnsupportedSimple));
        assert_eq!(scan_item(&[0x01, 0x02]), Err(RecordError::TrailingBytes(1)));
        assert_eq!(scan_item(&[0x42, 0x00]), Err(RecordError::Truncated));
        assert_eq!(scan_item(&[]), Err(RecordError::Truncated));
        assert!(matches!(
            scan_item(&[0x1c]),
            Err(RecordError::Malformed { .. })
        ));
        assert!(matches!(
            scan_item(&[0xff]),
            Err(RecordError::Malformed { .. })
        ));
        // A declared length of 2^64-1 items fails at once, without allocating.
        assert_eq!(
            scan_item(&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Err(RecordError::Truncated)
        );
        assert_eq!(
            scan_item(&[0xbb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Err(RecordError::Truncated)
        );
        assert_eq!(
            scan_item(&[0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Err(RecordError::Truncated)
        );
        // Nested empty and non-empty containers, tags.
        assert_eq!(
            scan_item(&[0xd2, 0x84, 0x40, 0xa0, 0x80, 0x81, 0x00]),
            Ok(())
        );
        let deep = [vec![0x81; MAX_DEPTH], vec![0x00]].concat();
        assert_eq!(
            scan_item(&deep),
            Err(RecordError::TooDeep { max: MAX_DEPTH })
        );
        let ok = [vec![0x81; MAX_DEPTH - 2], vec![0x00]].concat();
        assert_eq!(scan_item(&ok), Ok(()));
        // Text must be UTF-8; byte strings may hold anything.
        assert_eq!(scan_item(&[0x62, 0xc3, 0xa9]), Ok(()));
        assert!(matches!(
            scan_item(&[0x82, 0x62, 0xc3, 0x28, 0x00]),
            Err(RecordError::Malformed { .. })
        ));
        assert_eq!(scan_item(&[0x42, 0xc3, 0x28]), Ok(()));
        assert_eq!(item_len(&[0x82, 0x01, 0x02, 0xff, 0xff]), Ok(3));
    }
}
