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
//! which rejects non-shortest heads and indefinite lengths.

use super::fields::{
    K_ATTRIBUTION, K_BINDING, K_CONTENT, K_CONTEXT, K_KIND, K_PARENTS, K_SOURCE, K_TARGET, K_TIME,
    K_VERSION, K_WRITER,
};
use super::{
    Attribution, EntryId, Hash32, KeyBinding, KeyId, Kind, Parent, ProvEntry, RecordError, Role,
    Weight, MAX_ENTRY_BYTES,
};
use ciborium::Value;

/// Nesting limit for ciborium; the scan already bounded depth at `scan::MAX_DEPTH`.
const RECURSION_LIMIT: usize = super::scan::MAX_DEPTH + 2;

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
    let value = decode_value(bytes)?;
    let entry = payload_from_value(value)?;
    entry.check()?;
    if encode_payload(&entry) != bytes {
        return Err(RecordError::NonCanonical);
    }
    Ok(entry)
}

/// Decodes exactly one CBOR item from `bytes`: size-bounded, then scanned (bounded depth, no
/// indefinite lengths, shortest heads, no floats or simple values, no trailing bytes), then
/// handed to ciborium.
pub(crate) fn decode_value(bytes: &[u8]) -> Result<Value, RecordError> {
    if bytes.len() > MAX_ENTRY_BYTES {
        return Err(RecordError::TooLarge {
            got: bytes.len(),
            max: MAX_ENTRY_BYTES,
        });
    }
    super::scan::scan_item(bytes)?;
    let mut rest = bytes;
    let value: Value = ciborium::de::from_reader_with_recursion_limit(&mut rest, RECURSION_LIMIT)
        .map_err(|e| RecordError::Malformed {
        reason: e.to_string(),
    })?;
    if !rest.is_empty() {
        return Err(RecordError::TrailingBytes(rest.len()));
    }
    Ok(value)
}

/// Reads a map with unsigned keys, requiring strictly ascending keys.
pub(crate) fn strict_map(v: Value, field: &'static str) -> Result<Vec<(u64, Value)>, RecordError> {
    let Value::Map(pairs) = v else {
        return Err(RecordError::WrongType {
            field,
            want: "a map",
        });
    };
    let mut out: Vec<(u64, Value)> = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let key = match k {
            Value::Integer(i) => u64::try_from(i).map_err(|_| RecordError::UnknownField {
                key: format!("{i:?}"),
            })?,
            other => {
                return Err(RecordError::UnknownField {
                    key: format!("{other:?}"),
                })
            }
        };
        if let Some((prev, _)) = out.last() {
            if key == *prev {
                return Err(RecordError::DuplicateKey(key));
            }
            if key < *prev {
                return Err(RecordError::UnsortedKeys);
            }
        }
        out.push((key, v));
    }
    Ok(out)
}

pub(crate) fn as_u64(v: Value, field: &'static str) -> Result<u64, RecordError> {
    match v {
        Value::Integer(i) => u64::try_from(i).map_err(|_| RecordError::WrongType {
            field,
            want: "an unsigned integer",
        }),
        _ => Err(RecordError::WrongType {
            field,
            want: "an unsigned integer",
        }),
    }
}

pub(crate) fn as_bytes32(v: Value, field: &'static str) -> Result<[u8; 32], RecordError> {
    match v {
        Value::Bytes(b) => b.try_into().map_err(|_| RecordError::WrongType {
            field,
            want: "a 32-byte byte string",
        }),
        _ => Err(RecordError::WrongType {
            field,
            want: "a 32-byte byte string",
        }),
    }
}

fn parents_from(v: Value) -> Result<Vec<Parent>, RecordError> {
    let Value::Array(items) = v else {
        return Err(RecordError::WrongType {
            field: "parents",
            want: "an array",
        });
    };
    if items.len() > super::MAX_PARENTS {
        return Err(RecordError::TooManyParents {
            got: items.len(),
            max: super::MAX_PARENTS,
        });
    }
    items
        .into_iter()
        .map(|item| {
            let want = RecordError::WrongType {
                field: "parents",
                want: "an array of [id, weight] pairs",
            };
            let Value::Array(pair) = item else {
                return Err(want);
            };
            let [id, w]: [Value; 2] = pair.try_into().map_err(|_| want)?;
            Ok(Parent {
                id: EntryId(as_bytes32(id, "parents")?),
                weight: Weight::new(as_u64(w, "parents")?)?,
            })
        })
        .collect()
}

fn binding_from(v: Value) -> Result<KeyBinding, RecordError> {
    let mut key = None;
    let mut role = None;
    let mut name = None;
    for (k, v) in strict_map(v, "binding")? {
        match k {
            1 => key = Some(KeyId(as_bytes32(v, "binding.key")?)),
            2 => {
                let code = as_u64(v, "binding.role")?;
                role = Some(
                    Role::from_code(code).ok_or(RecordError::UnknownCode { what: "role", code })?,
                );
            }
            3 => match v {
                Value::Text(s) => name = Some(s),
                _ => {
                    return Err(RecordError::WrongType {
                        field: "binding.name",
                        want: "a text string",
                    })
                }
            },
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

fn payload_from_value(v: Value) -> Result<ProvEntry, RecordError> {
    let mut fields: [Option<Value>; 11] = Default::default();
    for (k, v) in strict_map(v, "payload")? {
        let slot = fields
            .get_mut(k as usize)
            .filter(|_| k <= K_BINDING)
            .ok_or_else(|| RecordError::UnknownField { key: k.to_string() })?;
        *slot = Some(v);
    }
    let mut take = |k: u64, name: &'static str| {
        fields[k as usize]
            .take()
            .ok_or(RecordError::MissingField(name))
    };
    let version = as_u64(take(K_VERSION, "version")?, "version")?;
    if version != super::FORMAT_VERSION {
        return Err(RecordError::Version { got: version });
    }
    let writer = KeyId(as_bytes32(take(K_WRITER, "writer")?, "writer")?);
    let kind_code = as_u64(take(K_KIND, "kind")?, "kind")?;
    let kind = Kind::from_code(kind_code).ok_or(RecordError::UnknownCode {
        what: "kind",
        code: kind_code,
    })?;
    let content_hash = Hash32(as_bytes32(
        take(K_CONTENT, "content_hash")?,
        "content_hash",
    )?);
    let source_hash = Hash32(as_bytes32(take(K_SOURCE, "source_hash")?, "source_hash")?);
    let context_hash = Hash32(as_bytes32(
        take(K_CONTEXT, "context_hash")?,
        "context_hash",
    )?);
    let parents = parents_from(take(K_PARENTS, "parents")?)?;
    let time_ms = as_u64(take(K_TIME, "time")?, "time")?;
    let a_code = as_u64(take(K_ATTRIBUTION, "attribution")?, "attribution")?;
    let attribution = Attribution::from_code(a_code).ok_or(RecordError::UnknownCode {
        what: "attribution",
        code: a_code,
    })?;
    let target = match take(K_TARGET, "target") {
        Ok(v) => Some(EntryId(as_bytes32(v, "target")?)),
        Err(_) => None,
    };
    let binding = match take(K_BINDING, "binding") {
        Ok(v) => Some(binding_from(v)?),
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
