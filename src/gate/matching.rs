//! Exact value matching: which recorded texts an argument's value comes from
//! (`spec/hooks.md` §4). The same rules as the AgentDojo fixture converter
//! (`fixtures/agentdojo/README.md`, "How `arg_sources` was computed"), minus its YAML decoding:
//! JSON tool output is decoded instead, and each of its string leaves is searched too.

use serde_json::Value;
use std::collections::BTreeSet;
use unicode_normalization::UnicodeNormalization;

mod amounts;
mod fold;
mod occurrences;
pub mod index;
pub mod keys;

pub use amounts::renderings;
use amounts::{amount_readings, amounts_in, canonical_amount, contains, decimal};
use fold::fold;
pub use index::ReadIndex;
use occurrences::at_some_occurrence;

/// Whether a trusted principal's statement of `value` authorises it (`spec/hooks.md` §4.4):
/// a string of at least 3 characters that is not all digits, or a number or digit string with
/// at least 3 digits. Shorter values (`13`, `a`) occur by chance in any prompt.
pub fn is_specific(value: &Value) -> bool {
    match value {
        // A digit string has no white space and one byte per character: the same rule.
        Value::String(s) => s.trim().chars().count() >= 3,
        Value::Number(n) => n.to_string().bytes().filter(u8::is_ascii_digit).count() >= 3,
        _ => false,
    }
}

/// A string value of at most this many characters (and not all digits) matches only a whole
/// field of a text, never inside one (`spec/hooks.md` §4.3).
pub const SHORT_CHARS: usize = 2;

/// The strings a recorded text is searched in: the text itself and, when the text is a JSON
/// document, every string leaf of it (JSON escapes quotes and newlines, so a value that sits in
/// the data is not always a literal substring of the serialised text). All in NFC.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Haystack {
    strings: Vec<String>,
    /// `strings` lower-cased, for e-mail addresses and hosts (§4.2).
    lower: Vec<String>,
    /// `strings` [`fold`]ed, for e-mail addresses and hosts written with full-width forms,
    /// format characters or look-alike letters (§4.2: `ev\u{200b}il.io`, Cyrillic `еvil.io`).
    folded: Vec<String>,
    /// The IBAN-shaped tokens of `strings` as they may be written out, closed up
    /// ([`iban_tokens`]: `de89-3704 …` → `DE893704…`); an IBAN argument matches one exactly.
    ibans: BTreeSet<String>,
    /// The text's whole fields (§4.3): the trimmed text, JSON string leaves, lines, and the
    /// value of each `key: value` or `- value` line.
    fields: BTreeSet<String>,
    /// `strings` as runs of words ([`Words`]): a value of at least [`MIN_NORMAL_CHARS`] letters
    /// and digits whose normal form is a run of whole words here matches whatever spacing,
    /// case or separators either side wrote (§4.2).
    normal: Vec<Words>,
    /// Every amount written in `strings`, each reading of it in canonical decimal form
    /// ([`amounts_in`]: `5.000,00` → `5000`; `EUR 5k` → `5000`; `5.000` → `5` and `5000`).
    amounts: BTreeSet<String>,
    /// The text could not be read or verified: it cannot be proven absent from any value
    /// (`spec/hooks.md` §4.3, fail closed), so it matches every value a text could match.
    unverifiable: bool,
    /// It matches every value a text could match: an unverifiable text, or a verified entry
    /// that stands for text nobody recorded ([`Haystack::unknown`]).
    everything: bool,
}

impl Haystack {
    /// The haystack of `text`. O(len(text)). Does not panic.
    pub fn new(text: &str) -> Self {
        let mut raw = vec![text.to_string()];
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            collect_strings(&v, &mut raw);
        }
        let strings: Vec<String> = raw.iter().map(|s| s.nfc().collect()).collect();
        let lower = strings.iter().map(|s| s.to_lowercase()).collect();
        let folded = strings.iter().map(|s| fold(s)).collect();
        let mut ibans = BTreeSet::new();
        for s in &strings {
            iban_tokens(s, &mut ibans);
        }
        let mut fields = BTreeSet::new();
        for s in &strings {
            add_fields(s, &mut fields);
        }
        let normal = strings.iter().map(|s| Words::of(s)).collect();
        let mut amounts = BTreeSet::new();
        for s in &strings {
            amounts_in(s, &mut amounts);
        }
        Haystack {
            strings,
            lower,
            folded,
            ibans,
            fields,
            normal,
            amounts,
            unverifiable: false,
            everything: false,
        }
    }

    /// The haystack of a text that could not be read or verified (redacted, corrupted,
    /// missing from the store): it matches every value that any text could match, that is
    /// every value but `null`, booleans and empty strings (`spec/hooks.md` §4.3).
    pub fn unverifiable() -> Self {
        Haystack {
            unverifiable: true,
            everything: true,
            ..Haystack::default()
        }
    }

    /// The haystack of a verified entry that stands for text nobody recorded — the history of
    /// a session the hooks did not see from its start (`spec/hooks.md` §3.1): it matches every
    /// value that any text could match, as [`Haystack::unverifiable`] does, but it is not
    /// unverifiable (the entry itself verified).
    pub fn unknown() -> Self {
        Haystack {
            everything: true,
            ..Haystack::default()
        }
    }

    /// Whether this is [`Haystack::unverifiable`].
    pub fn is_unverifiable(&self) -> bool {
        self.unverifiable
    }

    /// Whether `value` matches this text (`spec/hooks.md` §4): a string of digits occurs not
    /// touching further digits; a string of at most [`SHORT_CHARS`] characters is a whole
    /// field; a longer one occurs at token boundaries (e-mail addresses and hosts in any case,
    /// IBANs with or without spaces; all in NFC); a number matches any of its renderings
    /// ([`renderings`]) not touching further digits; an array or object matches when any
    /// element or member value does; `null`, booleans and empty strings never match.
    /// [`Haystack::matches_needle`] of [`Needle::new`]: to match one value against many
    /// texts, make the needle once.
    pub fn matches(&self, value: &Value) -> bool {
        self.matches_needle(&Needle::new(value))
    }

    /// Whether the value `needle` was made of matches this text ([`Haystack::matches`]): the
    /// one implementation of the rules, over what [`Needle::new`] computed from the value.
    pub fn matches_needle(&self, needle: &Needle) -> bool {
        match needle {
            Needle::Never => false,
            Needle::Number(_) | Needle::Str(_) if self.everything => true,
            Needle::Number(n) => self.matches_number(n),
            Needle::Str(s) => self.matches_str(s),
            Needle::Any(items) => items.iter().any(|n| self.matches_needle(n)),
        }
    }

    /// A number: one of its renderings not touching further digits, or its value among the
    /// amounts of the text (`spec/hooks.md` §4.2), or, with at least [`MIN_NORMAL_CHARS`]
    /// digits, its digits as a run of whole words (`4411 2233 9876 5432`).
    ///
    /// The three rules are pure and joined by "or": the look-up among the text's amounts (one
    /// search of a set) runs first, so a text that holds the value as an amount is not
    /// searched once per rendering (issue 32, `spec/benchmarks.md`).
    fn matches_number(&self, n: &NumberNeedle) -> bool {
        n.canonical
            .as_ref()
            .is_some_and(|c| self.amounts.contains(c))
            || n.renderings
                .iter()
                .any(|r| self.strings.iter().any(|h| contains(h, r)))
            || n.words
                .as_ref()
                .is_some_and(|d| self.normal.iter().any(|w| w.holds(d)))
    }

    fn matches_str(&self, s: &StrNeedle) -> bool {
        // An amount written as a string (`"500.00"`, `"5,000"`, `"0500"`, `"5 000"`,
        // `"5.000,00"`, `"EUR 5k"`) matches as the number would, in each of its readings.
        // (Its readings among the text's amounts first: set look-ups, before the number's
        // searches of the text; either answers yes.)
        if s.readings.iter().any(|a| self.amounts.contains(a)) {
            return true;
        }
        if s.number.as_ref().is_some_and(|n| self.matches_number(n)) {
            return true;
        }
        let long_normal = s.normal.chars().count() >= MIN_NORMAL_CHARS;
        if s.digits {
            // A digit string: as written, not touching further digits, or (an account or
            // card number) as a run of whole words whatever the grouping (§4.2).
            return self.strings.iter().any(|h| contains(h, &s.raw))
                || (s.normal.len() >= MIN_NORMAL_CHARS
                    && self.normal.iter().any(|w| w.holds(&s.normal)));
        }
        if long_normal && self.normal.iter().any(|w| w.holds(&s.normal)) {
            return true;
        }
        match &s.rest {
            Rest::Blank => false,
            Rest::Short(t) => self.fields.contains(t),
            Rest::EmailOrHost { lower, folded } => {
                lower
                    .iter()
                    .any(|l| self.lower.iter().any(|h| at_boundaries(h, l)))
                    || folded
                        .iter()
                        .any(|f| self.folded.iter().any(|h| at_boundaries(h, f)))
            }
            Rest::Iban(iban) => {
                self.ibans.contains(iban) || self.strings.iter().any(|h| at_boundaries(h, iban))
            }
            Rest::Text(t) => self.strings.iter().any(|h| at_boundaries(h, t)),
        }
    }
}

/// A value prepared for matching ([`Haystack::matches_needle`]): everything the rules of
/// `spec/hooks.md` §4 compute from the value alone (its renderings, amount readings, normal
/// form, NFC form and shape), computed once, so that matching one value against a session's
/// many reads costs the searches only. `Haystack::matches(v)` is
/// `matches_needle(&Needle::new(v))`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Needle {
    /// `null`, a boolean or an empty string: matches nothing.
    Never,
    /// A JSON number.
    Number(NumberNeedle),
    /// A non-empty string (an object member's name too).
    Str(StrNeedle),
    /// An array's elements, or an object's member names and values: matches when one does.
    Any(Vec<Needle>),
}

/// A number, as [`Haystack`] matches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumberNeedle {
    /// Its [`renderings`], each matched not touching further digits.
    renderings: Vec<String>,
    /// Its value in canonical decimal form, matched against the text's amounts.
    canonical: Option<String>,
    /// Its digits, when it is an integer of at least [`MIN_NORMAL_CHARS`] digits: matched as
    /// a run of whole words.
    words: Option<String>,
}

/// A non-empty string, as [`Haystack`] matches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrNeedle {
    /// The string read as a decimal number, if it is one ([`decimal`]).
    number: Option<NumberNeedle>,
    /// Its amount readings ([`amount_readings`]).
    readings: Vec<String>,
    /// Only ASCII digits.
    digits: bool,
    /// The string as given.
    raw: String,
    /// Its [`normal_form`].
    normal: String,
    /// How the rest of the rules see its NFC form, trimmed.
    rest: Rest,
}

/// The last rules of [`Haystack::matches`] for a string, by the shape of its trimmed NFC form.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Rest {
    /// Nothing but white space: matches nothing more.
    Blank,
    /// At most [`SHORT_CHARS`] characters: a whole field.
    Short(String),
    /// An e-mail address or host: its forms (itself, a host without the `www.` a model may
    /// put before it, and each in its other IDNA form) lower-cased, at token boundaries in the lower-cased text; and the same
    /// forms [`fold`]ed, at token boundaries in the folded text.
    EmailOrHost {
        lower: Vec<String>,
        folded: Vec<String>,
    },
    /// An IBAN by shape, closed up: as a token, or at token boundaries.
    Iban(String),
    /// Anything else: at token boundaries.
    Text(String),
}

impl Needle {
    /// The needle of `value`. O(size of `value`). Does not panic.
    pub fn new(value: &Value) -> Self {
        match value {
            Value::Null | Value::Bool(_) => Needle::Never,
            Value::String(s) => Needle::of_str(s),
            Value::Number(n) => Needle::Number(NumberNeedle::new(n)),
            Value::Array(items) => Needle::Any(items.iter().map(Needle::new).collect()),
            // A member's name is as much a value as its value (`{"GB33…": 100}`).
            Value::Object(m) => Needle::Any(
                m.iter()
                    .flat_map(|(k, v)| [Needle::of_str(k), Needle::new(v)])
                    .collect(),
            ),
        }
    }

    fn of_str(s: &str) -> Self {
        if s.is_empty() {
            return Needle::Never;
        }
        let v: String = s.nfc().collect();
        let t = v.trim();
        let rest = if t.is_empty() {
            Rest::Blank
        } else if t.chars().count() <= SHORT_CHARS {
            Rest::Short(t.to_string())
        } else if let Some(t) = email_or_host(t) {
            let l = t.to_lowercase();
            let mut lower = vec![l.clone()];
            if let Some(bare) = l.strip_prefix("www.") {
                if !l.contains('@') && is_email_or_host(bare) {
                    lower.push(bare.to_string());
                }
            }
            for form in lower.clone() {
                if let Some(other) = idna_counterpart(&form).filter(|o| !lower.contains(o)) {
                    lower.push(other);
                }
            }
            let folded = lower.iter().map(|l| fold(l)).collect();
            Rest::EmailOrHost { lower, folded }
        } else if let Some(iban) = iban(t) {
            Rest::Iban(iban)
        } else {
            Rest::Text(t.to_string())
        };
        Needle::Str(StrNeedle {
            number: decimal(s).map(|n| NumberNeedle::new(&n)),
            readings: amount_readings(s),
            digits: s.bytes().all(|b| b.is_ascii_digit()),
            raw: s.to_string(),
            normal: normal_form(s),
            rest,
        })
    }
}

impl NumberNeedle {
    fn new(n: &serde_json::Number) -> Self {
        let text = n.to_string();
        let digits: String = text.chars().filter(char::is_ascii_digit).collect();
        NumberNeedle {
            renderings: renderings(n),
            canonical: canonical_amount(&text),
            words: (!text.contains(['.', 'e', 'E']) && digits.len() >= MIN_NORMAL_CHARS)
                .then_some(digits),
        }
    }
}

/// Shortest normal form ([`normal_form`]) of a string value that is also matched by it
/// (`spec/hooks.md` §4.2): identifiers such as IBANs are rewritten with other spacing, case or
/// separators; shorter values are matched as written only.
pub const MIN_NORMAL_CHARS: usize = 8;

/// `s` with everything but letters and digits removed, `fold`ed (NFKC, format characters
/// dropped, upper case): `gb33-bukb 2020…` → `GB33BUKB2020…`.
pub fn normal_form(s: &str) -> String {
    fold(s).chars().filter(|c| c.is_alphanumeric()).collect()
}

/// A text as its words ([`fold`]ed, split at every character that is not a letter or digit)
/// written one after the other, with where each word starts and ends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Words {
    joined: String,
    /// Byte offsets in `joined` where a word starts, and where one ends, each strictly
    /// increasing (words are pushed in order and none is empty).
    starts: Vec<usize>,
    ends: Vec<usize>,
}

impl Words {
    fn of(s: &str) -> Self {
        let mut w = Words::default();
        for word in fold(s)
            .split(|c: char| !c.is_alphanumeric())
            .filter(|x| !x.is_empty())
        {
            w.starts.push(w.joined.len());
            w.joined.push_str(word);
            w.ends.push(w.joined.len());
        }
        w
    }

    /// Whether `normal` (a [`normal_form`]) is a run of whole consecutive words: it starts
    /// where a word starts and ends where one ends (token boundaries, §4.3), at any of its
    /// occurrences. O(len(joined) + len(normal)) and the occurrences.
    fn holds(&self, normal: &str) -> bool {
        at_some_occurrence(&self.joined, normal, |start| {
            self.starts.binary_search(&start).is_ok()
                && self.ends.binary_search(&(start + normal.len())).is_ok()
        })
    }
}

/// Whether `needle` occurs in `hay` with no letter, digit or `_` right before it (when it
/// starts with one) or right after it (when it ends with one): `spec/hooks.md` §4.3.
fn at_boundaries(hay: &str, needle: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let first = needle.chars().next().is_some_and(word);
    let last = needle.chars().next_back().is_some_and(word);
    at_some_occurrence(hay, needle, |start| {
        let before = first
            && hay
                .get(..start)
                .and_then(|h| h.chars().next_back())
                .is_some_and(word);
        let after = last
            && hay
                .get(start + needle.len()..)
                .and_then(|h| h.chars().next())
                .is_some_and(word);
        !before && !after
    })
}

/// Whether `s` names where something goes: it holds an IBAN-shaped token (§4.2), a URL, or a
/// word that is an e-mail address or host (`spec/hooks.md` §15.1: a composed argument naming a
/// destination is composed whatever the call's other arguments copy).
pub(crate) fn names_a_destination(s: &str) -> bool {
    let mut ibans = BTreeSet::new();
    iban_tokens(s, &mut ibans);
    !ibans.is_empty()
        || s.contains("://")
        || s.split(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '(' | ')' | ',' | ';'))
            .any(|w| {
                email_or_host(w.trim_matches(|c: char| matches!(c, '"' | '\'' | ':'))).is_some()
            })
}

/// `s` as an e-mail address or host ([`is_email_or_host`]), without the DNS root's dot it
/// may end with (`evil.io.` is the host `evil.io`; attack review 39).
fn email_or_host(s: &str) -> Option<&str> {
    let bare = s.strip_suffix('.').unwrap_or(s);
    is_email_or_host(bare).then_some(bare)
}

/// An e-mail address (`local@domain.tld`) or a host name (`a.b.tld`), with no white space.
fn is_email_or_host(s: &str) -> bool {
    if s.chars().any(char::is_whitespace) {
        return false;
    }
    let host = match s.split_once('@') {
        Some((local, d)) if !local.is_empty() => d,
        Some(_) => return false,
        None => s,
    };
    let labels: Vec<&str> = host.split('.').collect();
    labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
        && labels
            .last()
            .is_some_and(|l| l.chars().count() >= 2 && l.chars().all(char::is_alphabetic))
}

/// An e-mail address or host (lower case) with its domain in its other IDNA form, if it has
/// one: `xn--bcher-kva.io` ↔ `bücher.io` (UTS #46 through the `idna` crate, which the `url`
/// crate uses for the hosts of §4.5: a page writes the Unicode form, a URL's host is ASCII).
/// `None` when the domain has no other form or does not convert.
fn idna_counterpart(s: &str) -> Option<String> {
    let (local, domain) = match s.rsplit_once('@') {
        Some((l, d)) => (Some(l), d),
        None => (None, s),
    };
    let other = if domain.is_ascii() {
        if !domain.contains("xn--") {
            return None;
        }
        let (u, errors) = idna::domain_to_unicode(domain);
        errors.ok()?;
        u.nfc().collect::<String>().to_lowercase()
    } else {
        idna::domain_to_ascii(domain).ok()?
    };
    (other != domain).then(|| match local {
        Some(l) => format!("{l}@{other}"),
        None => other,
    })
}

/// `s` as an IBAN without separators, upper case, if it is one by shape: two letters, two
/// digits, 11 to 30 letters or digits (ISO 13616; the check digits are not verified), once
/// [`fold`]ed and without its other characters (so `gb29-nwbk-…` is one too).
fn iban(s: &str) -> Option<String> {
    let c: String = fold(s).chars().filter(|c| c.is_alphanumeric()).collect();
    // A label a model puts before the number it copies (`IBAN GB29 NWBK …`, `IBAN: GB29…`);
    // `IBAN…` itself is no IBAN by shape (`AN` are not check digits).
    let c = c.strip_prefix("IBAN").map(str::to_string).unwrap_or(c);
    let b = c.as_bytes();
    let ok = (15..=34).contains(&b.len())
        && b[..2].iter().all(u8::is_ascii_uppercase)
        && b[2..4].iter().all(u8::is_ascii_digit)
        && b[4..].iter().all(u8::is_ascii_alphanumeric);
    ok.then_some(c)
}

/// The identifiers `s` writes among other words (`spec/hooks.md` §4.5 rule 9): every
/// IBAN-shaped token as [`iban_tokens`] writes it out, and every run of at least
/// [`MIN_NORMAL_CHARS`] ASCII digits (after [`fold`]ing) that touches no other letter or digit.
/// `NL91ABNA0417164300 (landlord)` holds `NL91ABNA0417164300`; `pay 4411223398765432 now`
/// holds `4411223398765432`. A string with `%` is read percent-decoded too, as a URL's query
/// writes the groups of an IBAN (`iban=NL91%20ABNA%20…`).
pub(crate) fn identifiers(s: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let decoded = percent_encoding::percent_decode_str(s).decode_utf8_lossy();
    // A string without `%` decodes to itself: read once.
    let forms = if decoded == s {
        &[s][..]
    } else {
        &[s, decoded.as_ref()][..]
    };
    for t in forms {
        iban_tokens(t, &mut out);
        for w in fold(t).split(|c: char| !c.is_alphanumeric()) {
            if w.len() >= MIN_NORMAL_CHARS && w.bytes().all(|b| b.is_ascii_digit()) {
                out.insert(w.to_string());
            }
        }
    }
    out
}

/// Every IBAN-shaped token of `s` as it may be written out (`spec/hooks.md` §4.2), closed up,
/// into `out`: `s` is [`fold`]ed and split into words at every character that is not a letter
/// or digit; a word that starts like an IBAN (two letters, two digits, then letters or
/// digits) followed by words of 1 to 4 letters or digits gives each concatenation of 15 to 34
/// characters (the word alone, with the next group, with the next two, …). So
/// `gb33-bukb-2020-1555-5555-55 now` gives `GB33BUKB20201555555555` (and its shorter
/// prefixes that end at a group, which an argument matches only when it is exactly one).
fn iban_tokens(s: &str, out: &mut BTreeSet<String>) {
    let folded = fold(s);
    let words: Vec<&str> = folded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let alnum = |w: &str| {
        w.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    };
    let group = |w: &str| (1..=4).contains(&w.len()) && alnum(w);
    let start = |w: &str| {
        let b = w.as_bytes();
        (4..=34).contains(&b.len())
            && b[..2].iter().all(u8::is_ascii_uppercase)
            && b[2..4].iter().all(u8::is_ascii_digit)
            && alnum(w)
    };
    for (i, w) in words.iter().enumerate() {
        if !start(w) {
            continue;
        }
        let mut token = (*w).to_string();
        let mut next = i + 1;
        // At most 34 characters: also what keeps a text of many short words linear.
        while token.len() <= 34 {
            if token.len() >= 15 {
                out.insert(token.clone());
            }
            match words.get(next) {
                Some(g) if group(g) => token.push_str(g),
                _ => break,
            }
            next += 1;
        }
    }
}

/// The whole fields of `s` (`spec/hooks.md` §4.3): `s` trimmed, each line trimmed, and for a
/// line `key: value` or `- value` the value, trimmed and without surrounding quotes.
fn add_fields(s: &str, fields: &mut BTreeSet<String>) {
    let mut add = |f: &str| {
        let f = f.trim();
        let f = f
            .strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .or_else(|| f.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
            .unwrap_or(f)
            .trim();
        // Only short values are looked up as whole fields (§4.3): keep only those.
        if (1..=SHORT_CHARS).contains(&f.chars().count()) {
            fields.insert(f.to_string());
        }
    };
    add(s);
    for line in s.lines() {
        add(line);
        let l = line.trim();
        if let Some(v) = l.strip_prefix("- ") {
            add(v);
            if let Some((_, v)) = v.split_once(": ") {
                add(v);
            }
        } else if let Some((_, v)) = l.split_once(": ") {
            add(v);
        }
    }
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
mod tests;
