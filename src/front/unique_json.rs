//! JSON texts read as what a reader of the text sees: an object that names a member twice is
//! refused, where `serde_json` keeps the last one and drops the others unseen (a model reading
//! the text reads them all). Used where a text must be accounted for byte by byte
//! ([`super::Front::read_retrieved_view`], `spec/hooks.md` §3 item 2).

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// `text` as one JSON value, or `None` when it is not JSON or an object in it, at any depth,
/// names a member twice. Never panics (the nesting is bounded by `serde_json`'s recursion
/// limit).
pub(crate) fn parse_unique(text: &str) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = Unique.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(v)
}

/// Builds a [`Value`] as `serde_json` does, refusing a member name met twice in one object.
#[derive(Clone, Copy)]
struct Unique;

impl<'de> DeserializeSeed<'de> for Unique {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value whose objects name each member once")
    }

    fn visit_bool<E: Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: Error>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E: Error>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E: Error>(self, n: f64) -> Result<Value, E> {
        Number::from_f64(n)
            .map(Value::Number)
            .ok_or_else(|| E::custom("not a finite number"))
    }

    fn visit_str<E: Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }

    fn visit_string<E: Error>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E: Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Unique)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            let v = map.next_value_seed(Unique)?;
            if out.insert(name, v).is_some() {
                return Err(A::Error::custom("a member named twice"));
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::parse_unique;
    use serde_json::json;

    #[test]
    fn a_member_named_twice_at_any_depth_is_refused() {
        assert_eq!(
            parse_unique(r#"{"a": 1, "b": [true, null]}"#),
            Some(json!({"a": 1, "b": [true, null]}))
        );
        assert_eq!(parse_unique(r#"{"a": 1, "a": 1}"#), None);
        assert_eq!(parse_unique(r#"[{"x": {"a": "s", "a": "t"}}]"#), None);
        assert_eq!(parse_unique(r#"{"a": 1} trailing"#), None);
        assert_eq!(parse_unique("-1.5e3"), Some(json!(-1500.0)));
        assert_eq!(parse_unique(r#""\u0041""#), Some(json!("A")));
    }
}
