//! Search filters (`spec/python.md` §2.3): `search(filter=…)` keeps the items whose value
//! matches every member of the filter, with the comparison `InMemoryStore` uses
//! (`langgraph.store.memory._compare_values`, LangGraph's "JSONB-like" matching), so that a
//! filter means the same on both stores. Evaluated here, beside the item index, so that only
//! the page a search returns crosses into Python.
//!
//! The rules, for a filter member `key: want` against `have = value.get(key)` (JSON `null`
//! when absent):
//! - `want` an object with a member whose name starts with `$`: every member is an operator
//!   (`$eq`, `$ne`: Python equality; `$gt`, `$gte`, `$lt`, `$lte`: both sides as Python's
//!   `float()` reads them); any other name is an error;
//! - `want` another object: `have` is an object and matches each member recursively;
//! - `want` an array: `have` is an array of the same length, matching element by element;
//! - otherwise Python equality (`1 == 1.0 == True`).

use crate::errors::BindError;
use serde_json::{Map, Value};

/// Whether `value` (an item's value, a JSON object) matches every member of `filter`.
///
/// # Errors
/// [`BindError::Misuse`] (`ValueError`) for an unknown `$` operator or an operand Python's
/// `float()` would refuse (`InMemoryStore` raises too).
pub fn matches(value: &Value, filter: &Map<String, Value>) -> Result<bool, BindError> {
    for (key, want) in filter {
        let have = value.get(key).unwrap_or(&Value::Null);
        if !compare(have, want)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `_compare_values(have, want)`.
fn compare(have: &Value, want: &Value) -> Result<bool, BindError> {
    match want {
        Value::Object(w) if w.keys().any(|k| k.starts_with('$')) => {
            for (op, operand) in w {
                if !apply(have, op, operand)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Value::Object(w) => {
            let Value::Object(h) = have else {
                return Ok(false);
            };
            for (k, v) in w {
                if !compare(h.get(k).unwrap_or(&Value::Null), v)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Value::Array(w) => {
            let Value::Array(h) = have else {
                return Ok(false);
            };
            if h.len() != w.len() {
                return Ok(false);
            }
            for (a, b) in h.iter().zip(w) {
                if !compare(a, b)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        _ => Ok(py_eq(have, want)),
    }
}

/// `_apply_operator(have, op, operand)`.
fn apply(have: &Value, op: &str, operand: &Value) -> Result<bool, BindError> {
    Ok(match op {
        "$eq" => py_eq(have, operand),
        "$ne" => !py_eq(have, operand),
        "$gt" => float(have)? > float(operand)?,
        "$gte" => float(have)? >= float(operand)?,
        "$lt" => float(have)? < float(operand)?,
        "$lte" => float(have)? <= float(operand)?,
        _ => return Err(BindError::misuse(format!("Unsupported operator: {op}"))),
    })
}

/// A JSON number or boolean as Python sees it (`True == 1`), for equality.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// A JSON integer or boolean, exactly (Python's integers are exact at any size).
fn integer(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => n.as_i64().map(i128::from).or(n.as_u64().map(i128::from)),
        Value::Bool(b) => Some(i128::from(*b)),
        _ => None,
    }
}

/// Python's `==` on the values `json.loads` gives: numbers and booleans by value, strings,
/// `None`, lists element by element, dicts member by member.
fn py_eq(a: &Value, b: &Value) -> bool {
    if let (Some(x), Some(y)) = (integer(a), integer(b)) {
        return x == y;
    }
    if let (Some(x), Some(y)) = (number(a), number(b)) {
        return x == y;
    }
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => false,
    }
}

/// Python's `float(v)`: numbers, booleans, and strings holding a decimal number (surrounding
/// whitespace allowed, `inf`/`nan` too).
fn float(v: &Value) -> Result<f64, BindError> {
    if let Some(x) = number(v) {
        return Ok(x);
    }
    if let Value::String(s) = v {
        if let Ok(x) = s.trim().parse::<f64>() {
            return Ok(x);
        }
        return Err(BindError::misuse(format!(
            "could not convert string to float: {s:?}"
        )));
    }
    Err(BindError::misuse(format!(
        "float() argument must be a string or a real number, not {}",
        kind(v)
    )))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "'NoneType'",
        Value::Array(_) => "'list'",
        Value::Object(_) => "'dict'",
        _ => "that",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(value: Value, filter: Value) -> Result<bool, BindError> {
        match filter {
            Value::Object(f) => matches(&value, &f),
            _ => Err(BindError::misuse("a filter is an object")),
        }
    }

    fn err(value: Value, filter: Value) -> String {
        m(value, filter)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn equality_is_pythons() -> Result<(), BindError> {
        let v = json!({"n": 1, "b": true, "s": "x", "l": [1, {"a": 2}], "o": {"a": 1, "b": 2}});
        assert!(m(v.clone(), json!({"n": 1.0}))?);
        assert!(m(v.clone(), json!({"b": 1}))?);
        assert!(m(v.clone(), json!({"n": true}))?);
        assert!(!m(v.clone(), json!({"s": "y"}))?);
        assert!(m(v.clone(), json!({"missing": null}))?);
        assert!(!m(v.clone(), json!({"missing": 0}))?);
        assert!(m(v.clone(), json!({"l": [1.0, {"a": 2}]}))?);
        assert!(!m(v.clone(), json!({"l": [1]}))?);
        // A nested object matches member by member: a subset is enough.
        assert!(m(v.clone(), json!({"o": {"a": 1}}))?);
        assert!(!m(v.clone(), json!({"o": {"c": 1}}))?);
        assert!(!m(v, json!({"s": {"a": 1}}))?);
        let big = json!({"n": 9007199254740993u64});
        assert!(!m(big.clone(), json!({"n": 9007199254740992u64}))?);
        assert!(m(big, json!({"n": 9007199254740993u64}))?);
        Ok(())
    }

    #[test]
    fn operators_compare_as_python_float() -> Result<(), BindError> {
        let v = json!({"n": 3, "s": " 2.5 ", "t": "abc"});
        assert!(m(v.clone(), json!({"n": {"$gt": 2, "$lte": 3}}))?);
        assert!(!m(v.clone(), json!({"n": {"$lt": 3}}))?);
        assert!(m(
            v.clone(),
            json!({"n": {"$ne": 4}, "s": {"$gte": "2.5"}})
        )?);
        assert!(m(v.clone(), json!({"n": {"$eq": 3.0}}))?);
        assert_eq!(
            err(v.clone(), json!({"t": {"$gt": 1}})),
            "could not convert string to float: \"abc\""
        );
        assert_eq!(
            err(v.clone(), json!({"missing": {"$gt": 1}})),
            "float() argument must be a string or a real number, not 'NoneType'"
        );
        assert_eq!(
            err(v, json!({"n": {"$in": [3]}})),
            "Unsupported operator: $in"
        );
        Ok(())
    }
}
