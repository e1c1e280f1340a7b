//! The previous decoder, kept as the test oracle of the direct one (`reader.rs`, `cbor.rs`,
//! `cose.rs`): ciborium builds a [`ciborium::Value`] tree from the scanned bytes, the typed
//! fields are taken from it, and the bytes are compared with their re-encoding. The tests of
//! `cbor.rs` check that both decoders accept exactly the same bytes, with the same entry.

use super::fields::{
    K_ATTRIBUTION, K_BINDING, K_CONTENT, K_CONTEXT, K_KIND, K_PARENTS, K_SOURCE, K_TARGET, K_TIME,
    K_VERSION, K_WRITER,
};
use super::{
    encode, Attribution, EntryId, Hash32, KeyBinding, KeyId, Kind, Parent, ProvEntry, RecordError,
    Role, Weight, MAX_ENTRY_BYTES,
};
use ciborium::Value;

/// Nesting limit for ciborium; the scan already bounded depth at `scan::MAX_DEPTH`.
const RECURSION_LIMIT: usize = super::scan::MAX_DEPTH + 2;
/// COSE header label `alg` (RFC 9052 §3.1).
const HDR_ALG: u64 = 1;
/// COSE header label `kid` (RFC 9052 §3.1).
const HDR_KID: u64 = 4;
/// COSE algorithm EdDSA (RFC 9053 §2.2).
const ALG_EDDSA: i64 = -8;
/// CBOR tag for COSE_Sign1 (RFC 9052 §2).
const TAG_COSE_SIGN1: u64 = 18;

pub(crate) fn decode_payload(bytes: &[u8]) -> Result<ProvEntry, RecordError> {
    let value = decode_value(bytes)?;
    let entry = payload_from_value(value)?;
    entry.check()?;
    if encode::payload(&entry) != bytes {
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

type Parsed = (ProvEntry, Vec<u8>, Vec<u8>, [u8; 64]);

/// Structural decoding without the signature check.
pub(crate) fn parse(bytes: &[u8]) -> Result<Parsed, RecordError> {
    let Value::Tag(TAG_COSE_SIGN1, inner) = decode_value(bytes)? else {
        return Err(RecordError::WrongTag);
    };
    let Value::Array(items) = *inner else {
        return Err(RecordError::WrongType {
            field: "COSE_Sign1",
            want: "an array of 4 items",
        });
    };
    let [protected, unprotected, payload, signature]: [Value; 4] =
        items.try_into().map_err(|_| RecordError::WrongType {
            field: "COSE_Sign1",
            want: "an array of 4 items",
        })?;
    let (Value::Bytes(protected), Value::Bytes(payload), Value::Bytes(signature)) =
        (protected, payload, signature)
    else {
        return Err(RecordError::WrongType {
            field: "COSE_Sign1",
            want: "byte strings for protected, payload and signature",
        });
    };
    match unprotected {
        Value::Map(m) if m.is_empty() => {}
        _ => return Err(RecordError::UnprotectedHeader),
    }
    let kid = parse_protected(&protected)?;
    let signature: [u8; 64] = signature.try_into().map_err(|_| RecordError::WrongType {
        field: "signature",
        want: "a 64-byte byte string",
    })?;
    let entry = decode_payload(&payload)?;
    if entry.writer != kid {
        return Err(RecordError::WriterMismatch);
    }
    if encode::envelope(&protected, &payload, &signature) != bytes {
        return Err(RecordError::NonCanonical);
    }
    Ok((entry, protected, payload, signature))
}

fn parse_protected(protected: &[u8]) -> Result<KeyId, RecordError> {
    let map = strict_map(
        decode_value(protected).map_err(|_| RecordError::BadProtectedHeader)?,
        "protected",
    )
    .map_err(|_| RecordError::BadProtectedHeader)?;
    let [(HDR_ALG, alg), (HDR_KID, kid)]: [(u64, Value); 2] = map
        .try_into()
        .map_err(|_| RecordError::BadProtectedHeader)?
    else {
        return Err(RecordError::BadProtectedHeader);
    };
    if alg != Value::Integer(ALG_EDDSA.into()) {
        return Err(RecordError::BadProtectedHeader);
    }
    let kid = KeyId(as_bytes32(kid, "kid").map_err(|_| RecordError::BadProtectedHeader)?);
    if encode::protected(&kid)[..] != protected[..] {
        return Err(RecordError::BadProtectedHeader);
    }
    Ok(kid)
}

#[cfg(test)]
mod tests {
    use super::super::encode::tests::{entry, make_valid};
    use super::super::{
        encode, oracle, parse_unverified, ProvEntry, RecordError, SignedEntry, WriterKey,
    };
    use ciborium::Value;
    use proptest::prelude::*;

    /// One edit of a byte string: set, insert or remove the byte at an index, or cut there.
    #[derive(Clone, Debug)]
    enum Edit {
        Set(prop::sample::Index, u8),
        Insert(prop::sample::Index, u8),
        Remove(prop::sample::Index),
        Cut(prop::sample::Index),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
            (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
            any::<prop::sample::Index>().prop_map(Edit::Remove),
            any::<prop::sample::Index>().prop_map(Edit::Cut),
        ]
    }

    fn apply(bytes: &mut Vec<u8>, edits: &[Edit]) {
        for e in edits {
            if bytes.is_empty() {
                return;
            }
            match e {
                Edit::Set(i, b) => {
                    let i = i.index(bytes.len());
                    bytes[i] = *b;
                }
                Edit::Insert(i, b) => bytes.insert(i.index(bytes.len() + 1), *b),
                Edit::Remove(i) => {
                    bytes.remove(i.index(bytes.len()));
                }
                Edit::Cut(i) => bytes.truncate(i.index(bytes.len())),
            }
        }
    }

    /// The same entry, or errors of the same class (messages may differ: the old decoder names
    /// a key that is not an unsigned integer by ciborium's debug form).
    fn agree(
        new: Result<ProvEntry, RecordError>,
        old: Result<ProvEntry, RecordError>,
    ) -> Result<(), TestCaseError> {
        let same = match (&new, &old) {
            (Ok(a), Ok(b)) => a == b,
            (Err(a), Err(b)) => std::mem::discriminant(a) == std::mem::discriminant(b),
            _ => false,
        };
        prop_assert!(
            same,
            "direct decoder: {:?}, ciborium decoder: {:?}",
            new,
            old
        );
        Ok(())
    }

    /// CBOR items of every type the payload does and does not use, in and out of range.
    fn item() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<u64>().prop_map(|n| Value::Integer(n.into())),
            (0u64..30).prop_map(|n| Value::Integer(n.into())),
            any::<i64>().prop_map(|n| Value::Integer(n.into())),
            prop::collection::vec(any::<u8>(), 0..40).prop_map(Value::Bytes),
            any::<[u8; 32]>().prop_map(|b| Value::Bytes(b.to_vec())),
            ".{0,8}".prop_map(Value::Text),
            prop::collection::vec(any::<u8>(), 0..9)
                .prop_map(|b| Value::Tag(2, Box::new(Value::Bytes(b)))),
            Just(Value::Bool(true)),
            Just(Value::Null),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec((inner.clone(), inner.clone()), 0..3).prop_map(Value::Map),
                (0u64..40, inner).prop_map(|(t, v)| Value::Tag(t, Box::new(v))),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Both payload decoders give the same answer when one field's value (or key) is
        /// replaced by another item, or a pair is added or dropped.
        #[test]
        fn payload_decoders_agree_on_replaced_fields(
            e in entry(),
            seed in any::<u8>(),
            at in any::<prop::sample::Index>(),
            what in 0u8..4,
            new in item(),
        ) {
            let key = WriterKey::for_label(&format!("oracle/{seed}"));
            let Value::Map(mut pairs) = oracle::payload_value(&make_valid(e, &key)) else {
                return Err(TestCaseError::fail("a payload is a map"));
            };
            let i = at.index(pairs.len());
            match what {
                0 => pairs[i].1 = new,
                1 => pairs[i].0 = new,
                2 => pairs.insert(i, (new.clone(), new)),
                _ => {
                    pairs.remove(i);
                }
            }
            let bytes = oracle::encode(&Value::Map(pairs));
            agree(super::super::decode_payload(&bytes), super::decode_payload(&bytes))?;
        }

        /// The direct payload decoder and the ciborium one give the same answer, entry or
        /// error, on a valid entry's payload after a few random edits (and without any).
        #[test]
        fn payload_decoders_agree(
            e in entry(),
            seed in any::<u8>(),
            edits in prop::collection::vec(edit(), 0..4),
        ) {
            let key = WriterKey::for_label(&format!("oracle/{seed}"));
            let mut bytes = encode::payload(&make_valid(e, &key));
            apply(&mut bytes, &edits);
            agree(super::super::decode_payload(&bytes), super::decode_payload(&bytes))?;
        }

        /// The same for whole COSE_Sign1 envelopes (the signature is not checked by either).
        #[test]
        fn envelope_decoders_agree(
            e in entry(),
            seed in any::<u8>(),
            edits in prop::collection::vec(edit(), 0..4),
        ) {
            let key = WriterKey::for_label(&format!("oracle/{seed}"));
            let signed = SignedEntry::sign(make_valid(e, &key), &key)
                .map_err(|err| TestCaseError::fail(err.to_string()))?;
            let mut bytes = signed.cose().to_vec();
            apply(&mut bytes, &edits);
            agree(parse_unverified(&bytes), super::parse(&bytes).map(|p| p.0))?;
        }
    }
}
