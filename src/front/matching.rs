//! Exact value matching: which recorded texts an argument's value comes from
//! (`spec/hooks.md` §4). The same rules as the AgentDojo fixture converter
//! (`fixtures/agentdojo/README.md`, "How `arg_sources` was computed"), minus its YAML decoding:
//! JSON tool output is decoded instead, and each of its string leaves is searched too.

use serde_json::Value;

/// The strings a recorded text is searched in: the text itself and, when the text is a JSON
/// document, every string leaf of it (JSON escapes quotes and newlines, so a value that sits in
/// the data is not always a literal substring of the serialised text).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Haystack {
    strings: Vec<String>,
    /// The text could not be read or verified: it cannot be proven absent from any value
    /// (`spec/hooks.md` §4.3, fail closed), so it matches every value a text could match.
    unverifiable: bool,
}

impl Haystack {
    /// The haystack of `text`. O(len(text)). Does not panic.
    pub fn new(text: &str) -> Self {
        let mut strings = vec![text.to_string()];
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            collect_strings(&v, &mut strings);
        }
        Haystack {
            strings,
            unverifiable: false,
        }
    }

    /// The haystack of a text that could not be read or verified (redacted, corrupted,
    /// missing from the store): it matches every value that any text could match, that is
    /// every value but `null`, booleans and empty strings (`spec/hooks.md` §4.3).
    pub fn unverifiable() -> Self {
        Haystack {
            strings: Vec::new(),
            unverifiable: true,
        }
    }

    /// Whether this is [`Haystack::unverifiable`].
    pub fn is_unverifiable(&self) -> bool {
        self.unverifiable
    }

    /// Whether `value` matches this text (`spec/hooks.md` §4): a non-empty string is
    /// contained (case-sensitive; an all-digit string must not touch further digits); a number
    /// matches any of its renderings ([`renderings`]) not touching further digits; an array or
    /// object matches when any element or member value does; `null`, booleans and empty
    /// strings never match.
    pub fn matches(&self, value: &Value) -> bool {
        match value {
            Value::Null | Value::Bool(_) => false,
            Value::String(s) if s.is_empty() => false,
            Value::String(_) | Value::Number(_) if self.unverifiable => true,
            Value::String(s) => {
                let numeric = s.bytes().all(|b| b.is_ascii_digit());
                self.strings.iter().any(|h| contains(h, s, numeric))
            }
            Value::Number(n) => renderings(n)
                .iter()
                .any(|r| self.strings.iter().any(|h| contains(h, r, true))),
            Value::Array(items) => items.iter().any(|v| self.matches(v)),
            Value::Object(m) => m.values().any(|v| self.matches(v)),
        }
    }
}

/// The common renderings of a JSON number: `str`/`repr` (Rust's shortest round-trip form,
/// which equals Python's `repr` for finite floats), two decimals, thousands separators, and for
/// whole numbers the integer form and one decimal (98.7 → `98.7`, `98.70`; 10000 → `10000`,
/// `10,000`, `10000.0`, `10,000.00`).
pub fn renderings(n: &serde_json::Number) -> Vec<String> {
    let mut out = vec![n.to_string()];
    if let Some(x) = n.as_f64().filter(|x| x.is_finite()) {
        let two = format!("{x:.2}");
        out.push(format!("{x}"));
        out.push(thousands(&two));
        out.push(two);
        if x.fract() == 0.0 && x.abs() < 1e15 {
            let int = format!("{x:.0}");
            out.push(thousands(&int));
            out.push(format!("{int}.0"));
            out.push(int);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `1234567.50` → `1,234,567.50`.
fn thousands(s: &str) -> String {
    let (sign, rest) = s.strip_prefix('-').map_or(("", s), |r| ("-", r));
    let (int, frac) = rest
        .split_once('.')
        .map_or((rest, None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

/// Whether `needle` occurs in `hay`; with `numeric`, only occurrences that do not touch
/// further digits (`5` is not in `15`, `5.5` or `5,000`).
fn contains(hay: &str, needle: &str, numeric: bool) -> bool {
    if !numeric {
        return hay.contains(needle);
    }
    let b = hay.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    hay.match_indices(needle).any(|(start, m)| {
        let end = start + m.len();
        let before = start > 0
            && (digit(start - 1)
                || (start > 1 && matches!(b[start - 1], b'.' | b',') && digit(start - 2)));
        let after = digit(end) || (matches!(b.get(end), Some(b'.' | b',')) && digit(end + 1));
        !before && !after
    })
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Object(m) => m.values().for_each(|i| collect_strings(i, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_match_their_renderings_and_not_inside_other_numbers() {
        let h = Haystack::new("Total\t\t98.70 and 10,000.00; ids 15 and 5.5");
        assert!(h.matches(&json!(98.7)));
        assert!(h.matches(&json!(10000)));
        assert!(!h.matches(&json!(5)), "5 touches 15 and 5.5");
        assert!(!h.matches(&json!("5")));
        assert!(h.matches(&json!("15")));
        assert!(!h.matches(&json!(1)));
        assert_eq!(
            renderings(&serde_json::Number::from(10000)),
            vec!["10,000", "10,000.00", "10000", "10000.0", "10000.00"]
        );
    }

    #[test]
    fn strings_json_leaves_and_non_values() {
        let text = r#"{"note": "pay \"ACME\"\nIBAN: DE89"}"#;
        let h = Haystack::new(text);
        assert!(
            h.matches(&json!("pay \"ACME\"")),
            "found in the decoded leaf"
        );
        assert!(h.matches(&json!(["nothing", "DE89"])));
        assert!(h.matches(&json!({"x": "IBAN"})));
        assert!(!h.matches(&json!("")));
        assert!(!h.matches(&json!(null)));
        assert!(!h.matches(&json!(true)));
        assert!(!h.matches(&json!("iban")), "case-sensitive");
    }
}
