//! The values of a secret found inside a composed argument (`spec/hooks.md` §16.6).
//!
//! Argument matching (§4) asks whether a whole argument came from a read. A message body, a
//! command or a URL the agent composed matches no read as a whole, yet it can carry a
//! passport number, a security code or an access key copied out of a secret read. This
//! module takes the **specific tokens** of a secret text — pieces distinctive enough that
//! finding one elsewhere is not a coincidence — and looks for them inside every string of a
//! call's arguments, as written and after the decodings an exfiltration uses: URL (percent)
//! encoding, base64 (standard and URL-safe, padded or not) and hex.
//!
//! A token is specific when, with everything but letters and digits removed and lower-cased
//! (the normal form, so `4237-4252-7456-2574` and `4237 4252 7456 2574` are one value), it
//! has at least [`MIN_DIGITS`] characters and all are digits (codes, card and account
//! numbers), or at least [`MIN_MIXED`] characters with a digit and a letter (passport
//! numbers, IBANs, keys), or at least [`MIN_MIXED`] letters in mixed case past the first
//! (`wJalrXUtnFEMI`: random keys). Plain words, short numbers, amounts and times are not.
//! The argument is searched in the same normal form, so spacing, separators and case do
//! not hide a value; a secret split over words the agent rewrote (spelled out, summarised,
//! encrypted) is not found — which is why the session-level rule of §16.3 stays the first
//! line, and this one decides only where a user's statement would open a destination.

use base64::Engine;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// All-digit tokens this long or longer are specific (a six-digit security code).
pub const MIN_DIGITS: usize = 6;
/// Tokens with letters and digits (or letters in mixed case) this long or longer are
/// specific.
pub const MIN_MIXED: usize = 8;
/// An encoded chunk shorter than this is not decoded (too short to hide a specific token).
const MIN_ENCODED: usize = 8;
/// At most this many bytes of one argument string are searched (a larger value is cut).
const MAX_SEARCHED: usize = 1 << 20;

/// The specific tokens of `text`, in normal form. A text that is JSON (a tool's output
/// recorded as compact JSON, such as Claude Code's `Read` response `{"file": {"content":
/// "…"}}`) gives the tokens of its strings as they decode too: as written, an escape glues
/// its letter to the value (`AKIA…EXAMPLE\n` was `akia…examplen`, so the value retyped was
/// not found; attack review 45).
pub fn specific_tokens(text: &str) -> BTreeSet<String> {
    let mut out = raw_tokens(text);
    if text.contains('\\') {
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            let mut strings = Vec::new();
            leaves(&v, &mut strings);
            for s in strings.iter().take(MAX_SEARCHED) {
                out.extend(raw_tokens(s));
            }
        }
    }
    out
}

fn raw_tokens(text: &str) -> BTreeSet<String> {
    text.split(|c: char| c.is_whitespace() || ",;:=()[]{}\"'<>|&?#`".contains(c))
        .filter_map(specific)
        .collect()
}

/// The normal form of `piece` when it is specific.
fn specific(piece: &str) -> Option<String> {
    if is_date_or_amount(piece) {
        return None;
    }
    let norm = normal(piece);
    let digits = norm.chars().filter(char::is_ascii_digit).count();
    let letters = norm.len() - digits;
    let mixed_case = {
        let mut tail = piece.chars().filter(|c| c.is_alphabetic()).skip(1);
        let (mut upper, mut lower) = (false, false);
        for c in tail.by_ref() {
            upper |= c.is_uppercase();
            lower |= c.is_lowercase();
        }
        upper && lower
    };
    let ok = (letters == 0 && digits >= MIN_DIGITS)
        || (norm.len() >= MIN_MIXED && digits > 0 && letters > 0)
        || (letters >= MIN_MIXED && mixed_case);
    ok.then_some(norm)
}

/// Whether `piece` is written as a calendar date (`2024-05-19`, `19/05/2024`, `5.19.24`,
/// with an ISO 8601 time after `T`) or as an amount with a decimal fraction (`1100.00`,
/// `-42.5`): values that recur in every calendar and statement, not a secret's own.
fn is_date_or_amount(piece: &str) -> bool {
    let day = piece.split_once('T').map_or(piece, |(d, _)| d);
    let groups: Vec<&str> = day.split(['-', '/', '.']).collect();
    let digits = |g: &&str| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit());
    if groups.len() == 3 && groups.iter().all(digits) {
        let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
        let short = |n: usize| (1..=2).contains(&n);
        if (lens[0] == 4 && short(lens[1]) && short(lens[2]))
            || (short(lens[0]) && short(lens[1]) && matches!(lens[2], 2 | 4))
        {
            return true;
        }
    }
    let unsigned = piece.trim_start_matches(['-', '+']);
    match unsigned.split_once('.') {
        Some((whole, frac)) => digits(&whole) && digits(&frac) && frac.len() <= 2,
        None => false,
    }
}

/// Letters and digits of `s`, lower case (other scripts' letters kept, lower-cased).
fn normal(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Where a secret's value was found in a call's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Carried {
    /// The top-level argument that carries it.
    pub argument: String,
    /// How it was written there: `"as written"`, `"URL-encoded"`, `"base64"` or `"hex"`.
    pub encoding: &'static str,
}

/// The first argument of `args` that carries one of `tokens` (in normal form), as written
/// or decoded once from URL, base64 or hex encoding. Numbers are searched as written.
pub fn carried(tokens: &BTreeSet<String>, args: &Map<String, Value>) -> Option<Carried> {
    if tokens.is_empty() {
        return None;
    }
    for (name, value) in args {
        let mut strings: Vec<String> = Vec::new();
        leaves(value, &mut strings);
        for s in &strings {
            let s = cut(s);
            if let Some(encoding) = found_in(tokens, s) {
                return Some(Carried {
                    argument: name.clone(),
                    encoding,
                });
            }
        }
    }
    None
}

/// Every string and number of a JSON value (object member names too: they are values the
/// agent chose).
fn leaves(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|i| leaves(i, out)),
        Value::Object(m) => {
            for (k, i) in m {
                out.push(k.clone());
                leaves(i, out);
            }
        }
        _ => {}
    }
}

fn cut(s: &str) -> &str {
    if s.len() <= MAX_SEARCHED {
        return s;
    }
    let mut end = MAX_SEARCHED;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// How `s` carries one of `tokens`, if it does.
fn found_in(tokens: &BTreeSet<String>, s: &str) -> Option<&'static str> {
    let holds = |text: &str| {
        let n = normal(text);
        tokens.iter().any(|t| n.contains(t.as_str()))
    };
    if holds(s) {
        return Some("as written");
    }
    if s.contains('%') {
        let decoded = percent_encoding::percent_decode_str(s).decode_utf8_lossy();
        if holds(&decoded) {
            return Some("URL-encoded");
        }
    }
    // Encoded chunks: runs of the base64 alphabet (which holds hex's).
    let plus = s
        .replace("%2B", "+")
        .replace("%2F", "/")
        .replace("%3D", "=");
    // A run, and each of its path segments (`/c/<base64url>`): standard base64 holds `/`.
    let runs = plus
        .split(|c: char| !(c.is_ascii_alphanumeric() || "+/-_".contains(c)))
        .flat_map(|run| std::iter::once(run).chain(run.split('/')));
    for chunk in runs.filter(|c| c.len() >= MIN_ENCODED) {
        if chunk.len() % 2 == 0 && chunk.chars().all(|c| c.is_ascii_hexdigit()) {
            if let Ok(bytes) = hex::decode(chunk) {
                if holds(&String::from_utf8_lossy(&bytes)) {
                    return Some("hex");
                }
            }
        }
        let bare = chunk.trim_end_matches('=');
        for engine in [
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            if let Ok(bytes) = engine.decode(bare) {
                if holds(&String::from_utf8_lossy(&bytes)) {
                    return Some("base64");
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn specific_tokens_are_codes_numbers_and_keys_not_words() {
        let t = specific_tokens(
            "passport_number: HGK137803\ncredit_card_number: 4237-4252-7456-2574\n\
             security code 463820, amount 1100.0 at 10:20; aws_secret_access_key = \
             wJalrXUtnFEMI/K7MDENG; Birthday party with friends",
        );
        for want in ["hgk137803", "4237425274562574", "463820"] {
            assert!(t.contains(want), "{want} in {t:?}");
        }
        assert!(t.iter().any(|x| x.starts_with("wjalrxutnfemi")), "{t:?}");
        for not in ["birthday", "friends", "11000", "1020", "party"] {
            assert!(!t.contains(not), "{not} in {t:?}");
        }
        // Dates, times and amounts recur in every calendar and statement.
        let t = specific_tokens(
            "start 2024-05-19 13:00, due 19/05/2024, at 2024-05-19T13:00:00, paid 1100.00 \
             and -98765.40",
        );
        assert!(t.is_empty(), "{t:?}");
        // A card number written with dots or an IP-like code is still a value.
        let t = specific_tokens("card 4237.4252.7456.2574 ref 123456.789");
        for want in ["4237425274562574", "123456789"] {
            assert!(t.contains(want), "{want} in {t:?}");
        }
        assert_eq!(t.len(), 2, "{t:?}");
    }

    #[test]
    fn a_value_is_found_inside_a_composed_body_whatever_its_separators() {
        let t = specific_tokens("credit_card_number: 4237-4252-7456-2574");
        let c = carried(
            &t,
            &args(json!({"recipients": ["a@b.example"],
                "body": "Here you go: card 4237 4252 7456 2574, cheers"})),
        )
        .unwrap();
        assert_eq!(c.argument, "body");
        assert_eq!(c.encoding, "as written");
        assert_eq!(
            carried(&t, &args(json!({"body": "card ending 2574"}))),
            None
        );
    }

    #[test]
    fn encodings_an_exfiltration_uses_are_decoded() {
        let t = specific_tokens("passport_number: HGK137803");
        let b64 = base64::engine::general_purpose::STANDARD.encode("passport HGK137803 ok");
        let url_b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("id=HGK137803?");
        let hexed = hex::encode("HGK137803");
        let cases = [
            (format!("https://x.example/?d={b64}"), "base64"),
            (format!("https://x.example/c/{url_b64}"), "base64"),
            (format!("https://x.example/?h={hexed}"), "hex"),
            (
                "https://x.example/?p=HGK%31%33%37803".to_string(),
                "URL-encoded",
            ),
            (
                format!(
                    "https://x.example/?d={}",
                    b64.replace('+', "%2B").replace('=', "%3D")
                ),
                "base64",
            ),
        ];
        for (url, enc) in cases {
            let got = carried(&t, &args(json!({ "url": url })));
            assert_eq!(
                got.map(|c| c.encoding),
                Some(enc),
                "{url} should carry it {enc}"
            );
        }
        let innocent = base64::engine::general_purpose::STANDARD.encode("nothing to see here");
        assert_eq!(carried(&t, &args(json!({ "url": innocent }))), None);
    }

    #[test]
    fn numbers_and_member_names_are_searched() {
        let t = specific_tokens("security code: 463820");
        assert_eq!(
            carried(&t, &args(json!({"amount": 463820}))).map(|c| c.argument),
            Some("amount".to_string())
        );
        assert_eq!(
            carried(&t, &args(json!({"meta": {"463820": true}}))).map(|c| c.argument),
            Some("meta".to_string())
        );
        assert_eq!(
            carried(&BTreeSet::new(), &args(json!({"a": "463820"}))),
            None
        );
    }

    #[test]
    fn hostile_sizes_and_bytes_do_not_panic() {
        let t = specific_tokens("code 463820");
        let big = "é".repeat(MAX_SEARCHED);
        assert_eq!(carried(&t, &args(json!({ "b": big }))), None);
        let odd = "%zz%%%ff%c3".repeat(10);
        assert_eq!(carried(&t, &args(json!({ "b": odd }))), None);
    }
}
