//! The previous encoder, kept as the test oracle of the direct one (`encode.rs`): builds each
//! structure as a [`ciborium::Value`] and lets ciborium write it (shortest heads, definite
//! lengths, map pairs in the order given).

use super::fields::{
    K_ATTRIBUTION, K_BINDING, K_CONTENT, K_CONTEXT, K_KIND, K_PARENTS, K_SOURCE, K_TARGET, K_TIME,
    K_VERSION, K_WRITER,
};
use super::{KeyId, ProvEntry};
use ciborium::Value;

/// COSE header label `alg` (RFC 9052 §3.1).
const HDR_ALG: u64 = 1;
/// COSE header label `kid` (RFC 9052 §3.1).
const HDR_KID: u64 = 4;
/// COSE algorithm EdDSA (RFC 9053 §2.2).
const ALG_EDDSA: i64 = -8;
/// CBOR tag for COSE_Sign1 (RFC 9052 §2).
const TAG_COSE_SIGN1: u64 = 18;

/// The payload of `entry`, through a `Value`.
pub(crate) fn payload(entry: &ProvEntry) -> Vec<u8> {
    encode(&payload_value(entry))
}

/// `{1: -8, 4: kid}`, through a `Value`.
pub(crate) fn protected_header(kid: &KeyId) -> Vec<u8> {
    encode(&Value::Map(vec![
        (
            Value::Integer(HDR_ALG.into()),
            Value::Integer(ALG_EDDSA.into()),
        ),
        (Value::Integer(HDR_KID.into()), Value::Bytes(kid.0.to_vec())),
    ]))
}

/// `["Signature1", protected, h'', payload]`, through a `Value`.
pub(crate) fn sig_structure(protected: &[u8], payload: &[u8]) -> Vec<u8> {
    encode(&Value::Array(vec![
        Value::Text("Signature1".into()),
        Value::Bytes(protected.to_vec()),
        Value::Bytes(Vec::new()),
        Value::Bytes(payload.to_vec()),
    ]))
}

/// `18([protected, {}, payload, signature])`, through a `Value`.
pub(crate) fn envelope(protected: &[u8], payload: &[u8], signature: &[u8; 64]) -> Vec<u8> {
    encode(&Value::Tag(
        TAG_COSE_SIGN1,
        Box::new(Value::Array(vec![
            Value::Bytes(protected.to_vec()),
            Value::Map(Vec::new()),
            Value::Bytes(payload.to_vec()),
            Value::Bytes(signature.to_vec()),
        ])),
    ))
}

/// Encodes one CBOR item. ciborium writes shortest-form heads and definite lengths.
pub(crate) fn encode(v: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    // Writing into a Vec cannot fail, and a `Value` always serializes.
    #[allow(clippy::expect_used)]
    ciborium::into_writer(v, &mut out).expect("serializing a Value into a Vec cannot fail");
    out
}

fn uint(n: u64) -> Value {
    Value::Integer(n.into())
}

fn bytes32(b: &[u8; 32]) -> Value {
    Value::Bytes(b.to_vec())
}

pub(crate) fn payload_value(e: &ProvEntry) -> Value {
    let parents = e
        .parents
        .iter()
        .map(|p| {
            Value::Array(vec![
                bytes32(&p.id.0),
                uint(u64::from(p.weight.millionths())),
            ])
        })
        .collect();
    let mut m = vec![
        (uint(K_VERSION), uint(e.version)),
        (uint(K_WRITER), bytes32(&e.writer.0)),
        (uint(K_KIND), uint(e.kind.code())),
        (uint(K_CONTENT), bytes32(&e.content_hash.0)),
        (uint(K_SOURCE), bytes32(&e.source_hash.0)),
        (uint(K_CONTEXT), bytes32(&e.context_hash.0)),
        (uint(K_PARENTS), Value::Array(parents)),
        (uint(K_TIME), uint(e.time_ms)),
        (uint(K_ATTRIBUTION), uint(e.attribution.code())),
    ];
    if let Some(t) = &e.target {
        m.push((uint(K_TARGET), bytes32(&t.0)));
    }
    if let Some(b) = &e.binding {
        let bm = vec![
            (uint(1), bytes32(&b.key.0)),
            (uint(2), uint(b.role.code())),
            (uint(3), Value::Text(b.name.clone())),
        ];
        m.push((uint(K_BINDING), Value::Map(bm)));
    }
    Value::Map(m)
}
