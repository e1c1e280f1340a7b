//! Deterministic CBOR (RFC 8949 §4.2.1) for the entry payload (`spec/record.md` §3).
//!
//! ciborium's serde mapping is not canonical (text keys in declaration order, arrays of ints
//! for `Vec<u8>`, indefinite lengths under `flatten`), so the payload is written by the direct
//! encoder of `encode.rs`: unsigned keys 0..=10 in ascending order, heads in shortest form,
//! definite lengths. Keys 0..=23 encode as one byte, so ascending integer order is also the
//! bytewise order RFC 8949 §4.2.1 requires. The earlier encoder, which built a
//! [`ciborium::Value`] and let ciborium write it, is kept in `oracle.rs` (tests only) and the
//! two are compared on random entries.
//!
//! Decoding is strict: one item, no trailing bytes, keys strictly ascending, no unknown keys,
//! and the bytes must equal the re-encoding of what was decoded ("decode, re-encode, compare"),
//! which rejects non-shortest heads and indefinite lengths. The fields are read straight from
//! the bytes by `reader.rs` after the scan of `scan.rs`, with no value tree; the earlier
//! decoder, which let ciborium build a [`ciborium::Value`] first, is kept in `oracle.rs` (tests
//! only) and the two are compared on random and mutated entries.

use super::fields::{
    K_ATTRIBUTION, K_BINDING, K_CONTENT, K_CONTEXT, K_KIND, K_PARENTS, K_SOURCE, K_TARGET, K_TIME,
    K_VERSION, K_WRITER,
};
use super::reader::Reader;
use super::{
    Attribution, EntryId, Hash32, KeyBinding, KeyId, Kind, Parent, ProvEntry, RecordError, Role,
    Weight, MAX_ENTRY_BYTES,
};

/// The deterministic CBOR payload of `entry` (`spec/record.md` §3).
///
/// Does not check [`ProvEntry::check`]; signing does.
pub fn encode_payload(entry: &ProvEntry) -> Vec<u8> {
    super::encode::payload(entry)
}

/// Decodes and validates a payload: deterministic encoding, known fields, types, sizes,
/// sorted unique parents, weights in range, kind-specific fields.
///
/// # Errors
/// A [`RecordError`] naming the first problem. Does not panic on any input.
pub fn decode_payload(bytes: &[u8]) -> Result<ProvEntry, RecordError> {
    check_item(bytes)?;
    let entry = payload_from(bytes)?;
    entry.check()?;
    if encode_payload(&entry) != bytes {
        return Err(RecordError::NonCanonical);
    }
    Ok(entry)
}

/// Checks that `bytes` are exactly one CBOR item the typed readers may read: size-bounded,
/// then scanned (bounded depth, no indefinite lengths, shortest heads, UTF-8 text, no floats
/// or simple values, no trailing bytes; `scan.rs`).
pub(crate) fn check_item(bytes: &[u8]) -> Result<(), RecordError> {
    if bytes.len() > MAX_ENTRY_BYTES {
        return Err(RecordError::TooLarge {
            got: bytes.len(),
            max: MAX_ENTRY_BYTES,
        });
    }
    super::scan::scan_item(bytes)
}

/// The offsets of a map's values by key, in key order, from a map with unsigned keys in
/// strictly ascending order (`spec/record.md` §6.3 step 3).
fn strict_map(r: &mut Reader<'_>, field: &'static str) -> Result<Vec<(u64, usize)>, RecordError> {
    let n = r.map(field)?;
    r.keys(n)
}

fn parents_from(mut r: Reader<'_>) -> Result<Vec<Parent>, RecordError> {
    let n = r.array("parents", "an array")?;
    if n > super::MAX_PARENTS as u64 {
        return Err(RecordError::TooManyParents {
            got: usize::try_from(n).unwrap_or(usize::MAX),
            max: super::MAX_PARENTS,
        });
    }
    (0..n)
        .map(|_| {
            const PAIR: &str = "an array of [id, weight] pairs";
            if r.array("parents", PAIR)? != 2 {
                return Err(RecordError::WrongType {
                    field: "parents",
                    want: PAIR,
                });
            }
            Ok(Parent {
                id: EntryId(r.bytes32("parents")?),
                weight: Weight::new(r.uint("parents")?)?,
            })
        })
        .collect()
}

fn binding_from(bytes: &[u8], mut r: Reader<'_>) -> Result<KeyBinding, RecordError> {
    let mut key = None;
    let mut role = None;
    let mut name = None;
    for (k, at) in strict_map(&mut r, "binding")? {
        let mut v = Reader::at(bytes, at);
        match k {
            1 => key = Some(KeyId(v.bytes32("binding.key")?)),
            2 => {
                let code = v.uint("binding.role")?;
                role = Some(
                    Role::from_code(code).ok_or(RecordError::UnknownCode { what: "role", code })?,
                );
            }
            3 => name = Some(v.text("binding.name")?.to_owned()),
            other => {
                return Err(RecordError::UnknownField {
                    key: format!("binding.{other}"),
                })
            }
        }
    }
    Ok(KeyBinding {
        key: key.ok_or(RecordError::MissingField("binding.key"))?,
        role: role.ok_or(RecordError::MissingField("binding.role"))?,
        name: name.ok_or(RecordError::MissingField("binding.name"))?,
    })
}

/// The payload's fields read in key order from bytes [`check_item`] accepted; the encoding is
/// compared by the caller.
fn payload_from(bytes: &[u8]) -> Result<ProvEntry, RecordError> {
    let mut fields: [Option<usize>; 11] = [None; 11];
    let mut r = Reader::at(bytes, 0);
    for (k, at) in strict_map(&mut r, "payload")? {
        let slot = fields
            .get_mut(k as usize)
            .filter(|_| k <= K_BINDING)
            .ok_or_else(|| RecordError::UnknownField { key: k.to_string() })?;
        *slot = Some(at);
    }
    let field = |k: u64, name: &'static str| {
        fields[k as usize]
            .map(|at| Reader::at(bytes, at))
            .ok_or(RecordError::MissingField(name))
    };
    let version = field(K_VERSION, "version")?.uint("version")?;
    if version != super::FORMAT_VERSION {
        return Err(RecordError::Version { got: version });
    }
    let writer = KeyId(field(K_WRITER, "writer")?.bytes32("writer")?);
    let kind_code = field(K_KIND, "kind")?.uint("kind")?;
    let kind = Kind::from_code(kind_code).ok_or(RecordError::UnknownCode {
        what: "kind",
        code: kind_code,
    })?;
    let content_hash = Hash32(field(K_CONTENT, "content_hash")?.bytes32("content_hash")?);
    let source_hash = Hash32(field(K_SOURCE, "source_hash")?.bytes32("source_hash")?);
    let context_hash = Hash32(field(K_CONTEXT, "context_hash")?.bytes32("context_hash")?);
    let parents = parents_from(field(K_PARENTS, "parents")?)?;
    let time_ms = field(K_TIME, "time")?.uint("time")?;
    let a_code = field(K_ATTRIBUTION, "attribution")?.uint("attribution")?;
    let attribution = Attribution::from_code(a_code).ok_or(RecordError::UnknownCode {
        what: "attribution",
        code: a_code,
    })?;
    let target = match field(K_TARGET, "target") {
        Ok(mut v) => Some(EntryId(v.bytes32("target")?)),
        Err(_) => None,
    };
    let binding = match field(K_BINDING, "binding") {
        Ok(v) => Some(binding_from(bytes, v)?),
        Err(_) => None,
    };
    Ok(ProvEntry {
        version,
        writer,
        kind,
        content_hash,
        source_hash,
        context_hash,
        parents,
        time_ms,
        attribution,
        target,
        binding,
    })
}
