//! Numbers and amounts in value matching (`spec/hooks.md` §4.2): the amounts a text writes,
//! each reading in canonical decimal form (`5.000,00`, `5'000`, `EUR 5k`), the amount a string
//! value is, the common renderings of a JSON number, and where a number occurs in a text
//! without touching further digits.

use super::fold;
use std::collections::BTreeSet;

/// A string that is a decimal number as amounts are written (`500`, `-3`, `500.00`,
/// `5,000.50`, `+7`), as a JSON number; `None` otherwise (and for anything not finite).
pub(super) fn decimal(s: &str) -> Option<serde_json::Number> {
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let digits = t.strip_prefix('-').unwrap_or(t);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let grouped = int.contains(',');
    let int_ok = !int.is_empty()
        && if grouped {
            let mut parts = int.split(',');
            parts.next().is_some_and(|p| {
                (1..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit())
            }) && parts.all(|p| p.len() == 3 && p.bytes().all(|b| b.is_ascii_digit()))
        } else {
            int.bytes().all(|b| b.is_ascii_digit())
        };
    let frac_ok = if digits.contains('.') {
        !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit())
    } else {
        true
    };
    if !int_ok || !frac_ok || digits.len() > 40 {
        return None;
    }
    let plain = t.replace(',', "");
    serde_json::Number::from_f64(plain.parse::<f64>().ok().filter(|x| x.is_finite())?)
}

/// Multipliers an amount may be written with (`5k`, `2.5M`, `3bn`, `2.5 million`, `2,5 Mio.`,
/// `2,5 Millionen`, `1,2 milliard`), as powers of ten; matched case-insensitively, right after
/// the number or after one space, not followed by a letter or digit. (`billion` is read as
/// 10^9, the English scale.)
const AMOUNT_SUFFIXES: &[(&str, usize)] = &[
    ("K", 3),
    ("THOUSAND", 3),
    ("TAUSEND", 3),
    ("MN", 6),
    ("MIO", 6),
    ("MILLION", 6),
    ("MILLIONS", 6),
    ("MILLIONEN", 6),
    ("M", 6),
    ("BN", 9),
    ("MRD", 9),
    ("BILLION", 9),
    ("MILLIARD", 9),
    ("MILLIARDS", 9),
    ("MILLIARDE", 9),
    ("MILLIARDEN", 9),
];

/// Characters written between digit groups of an amount (`5,000`, `5.000`, `5'000`, `5’000`,
/// `5 000`; no-break and thin spaces are spaces after NFKC).
const AMOUNT_SEPARATORS: &[char] = &['.', ',', '\'', '\u{2019}', ' '];

/// Every amount written in `s`, each of its readings in canonical decimal form
/// ([`canonical_amount`]), into `out` (`spec/hooks.md` §4.2): a run of digit groups joined by
/// single [`AMOUNT_SEPARATORS`], optionally followed by an [`AMOUNT_SUFFIXES`] multiplier, is
/// read with every separator as a thousands separator (when every group after the first has 3
/// digits, or 2 then a last 3 as in `1,00,000`), and with its last `.` or `,` as the decimal
/// mark and the others as thousands separators (when those differ from it and group by 3). So
/// `5.000,00` is 5000, `1.234,56` is 1234.56, `5'000.00` and `5 000` are 5000, `EUR 5k` is
/// 5000, and `5.000` is both 5 and 5000: a reading only adds a source (fail closed). O(len(s)).
pub(super) fn amounts_in(s: &str, out: &mut BTreeSet<String>) {
    let chars: Vec<char> = fold(s).chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_ascii_digit());
        if !starts {
            i += 1;
            continue;
        }
        let (readings, end) = amount_at(&chars, i);
        // `07`, `0001`: a part of a date or an identifier, not an amount as written (`0.5`
        // is one).
        let padded = chars[i] == '0' && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if !padded {
            out.extend(readings);
        }
        i = end.max(i + 1);
    }
}

/// The readings of the amount that a string value is, whole (`"5 000"`, `"5000,00"`,
/// `"EUR 5k"`, `"€1.234,56"`), with a currency sign or a three-letter code before or after it;
/// empty when it is not one.
pub(super) fn amount_readings(s: &str) -> Vec<String> {
    let t = s.trim();
    let strip_code = |x: &str| -> String {
        let x = x
            .trim_matches(|c: char| matches!(c, '€' | '$' | '£' | '¥' | '₹' | '₣'))
            .trim();
        let code = |w: &str| w.len() == 3 && w.chars().all(|c| c.is_ascii_alphabetic());
        let x = match x.split_once(' ') {
            Some((a, b)) if code(a) => b,
            _ => x,
        };
        match x.rsplit_once(' ') {
            Some((a, b)) if code(b) => a.trim().to_string(),
            _ => x.trim().to_string(),
        }
    };
    let t = strip_code(t);
    let chars: Vec<char> = fold(&t).chars().collect();
    if chars.first().is_none_or(|c| !c.is_ascii_digit()) {
        return Vec::new();
    }
    let (readings, end) = amount_at(&chars, 0);
    match end == chars.len() {
        true => readings,
        false => Vec::new(),
    }
}

/// The readings of the amount starting at `chars[start]` (a digit) and where it ends.
fn amount_at(chars: &[char], start: usize) -> (Vec<String>, usize) {
    let mut groups: Vec<String> = vec![String::new()];
    let mut seps: Vec<char> = Vec::new();
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            if let Some(g) = groups.last_mut() {
                g.push(c);
            }
            i += 1;
        } else if AMOUNT_SEPARATORS.contains(&c)
            && chars.get(i + 1).is_some_and(char::is_ascii_digit)
            && groups.len() < 16
        {
            seps.push(c);
            groups.push(String::new());
            i += 1;
        } else {
            break;
        }
    }
    // A multiplier suffix, right after or after one space, not running on into a word.
    let mut shift = 0;
    let mut end = i;
    let at = if chars.get(i) == Some(&' ') { i + 1 } else { i };
    for (suffix, power) in AMOUNT_SUFFIXES {
        let n = suffix.chars().count();
        // Compared in place: this runs for every number of every text a front reads.
        let word = chars.get(at..at.saturating_add(n));
        let after = chars.get(at.saturating_add(n));
        if word.is_some_and(|w| w.iter().copied().eq(suffix.chars()))
            && after.is_none_or(|c| !c.is_alphanumeric())
        {
            shift = *power;
            end = at + n;
            break;
        }
    }
    let digits: usize = groups.iter().map(String::len).sum();
    if digits > 40 {
        return (Vec::new(), end);
    }
    let mut out = Vec::new();
    let mut push = |int: String, frac: &str| {
        if let Some(c) = canonical_parts(&int, frac, shift) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    };
    if seps.is_empty() {
        push(groups[0].clone(), "");
        return (out, end);
    }
    let first_ok = (1..=3).contains(&groups[0].len());
    // Every separator a thousands separator.
    let last = groups.len() - 1;
    let grouped = first_ok
        && groups[1..].iter().enumerate().all(|(k, g)| {
            g.len() == 3 || (g.len() == 2 && k + 1 < last && groups[last].len() == 3)
        });
    if grouped {
        push(groups.concat(), "");
    }
    // The last `.` or `,` the decimal mark, the separators before it thousands separators.
    let mark = seps[seps.len() - 1];
    let before = &seps[..seps.len() - 1];
    let int_groups = &groups[..last];
    let decimal_ok = matches!(mark, '.' | ',')
        && before.iter().all(|s| *s != mark)
        && (before.is_empty() || (first_ok && int_groups[1..].iter().all(|g| g.len() == 3)));
    if decimal_ok {
        push(int_groups.concat(), &groups[last]);
    }
    (out, end)
}

/// A decimal number's text (`500`, `-5000.50`, `0500.0`) in canonical form: no sign (an amount
/// matches whatever sign either side wrote), no leading zeros, no trailing fraction zeros, no
/// point when the fraction is empty (`5000.50` → `5000.5`); `None` for anything else (an
/// exponent, letters).
pub(super) fn canonical_amount(text: &str) -> Option<String> {
    let t = text.trim().trim_start_matches(['-', '+']);
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) {
        return None;
    }
    canonical_parts(int, frac, 0)
}

/// `int.frac` × 10^`shift` in canonical form ([`canonical_amount`]).
fn canonical_parts(int: &str, frac: &str, shift: usize) -> Option<String> {
    let mut int = int.to_string();
    let mut frac = frac.to_string();
    for _ in 0..shift {
        int.push(if frac.is_empty() { '0' } else { frac.remove(0) });
    }
    let int = int.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    if int.len() + frac.len() > 60 {
        return None;
    }
    Some(match frac.is_empty() {
        true => int.to_string(),
        false => format!("{int}.{frac}"),
    })
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
pub(super) fn thousands(s: &str) -> String {
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

/// Whether `needle` occurs in `hay` not touching further digits (`5` is not in `15`, `5.5`
/// or `5,000`).
pub(super) fn contains(hay: &str, needle: &str) -> bool {
    let b = hay.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    super::at_some_occurrence(hay, needle, |start| {
        let end = start + needle.len();
        let before = start > 0
            && (digit(start - 1)
                || (start > 1 && matches!(b[start - 1], b'.' | b',') && digit(start - 2)));
        let after = digit(end) || (matches!(b.get(end), Some(b'.' | b',')) && digit(end + 1));
        !before && !after
    })
}
