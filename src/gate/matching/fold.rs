//! Folding a text for matching (`spec/hooks.md` §4.2): the forms an IBAN, a number or a host
//! can be written in that read the same to a person, made one.

use unicode_normalization::UnicodeNormalization;
use unicode_security::confusable_detection::skeleton;

/// `s` folded for IBAN matching (`spec/hooks.md` §4.2): NFKC (full-width forms and no-break
/// spaces become ASCII), other scripts' decimal digits and Arabic separators as ASCII, the
/// ideographic full stop U+3002 as `.`, format characters such as U+200B zero-width space and
/// U+00AD soft hyphen dropped, a letter or digit outside ASCII that Unicode lists as confusable with ASCII
/// letters or digits written as those (UTS #39 skeleton: Cyrillic `А С О` → `A C O`), upper
/// case. ASCII text is only upper-cased: NFKC leaves ASCII as it is and no rule above applies
/// to an ASCII character (most tool outputs are ASCII; the general path was a fifth of
/// recording a 3 KB one, `spec/benchmarks.md` run O).
pub(super) fn fold(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_uppercase();
    }
    fold_unicode(s)
}

/// [`fold`] of any `s`, character by character.
fn fold_unicode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut buf = [0u8; 4];
    for c in s.nfkc().filter(|c| !is_format(*c)) {
        if let Some(d) = decimal_digit(c) {
            out.push(d);
            continue;
        }
        // Arabic decimal and thousands separators (`١٢٬٣٤٥٫٥٠`), as the digits they join.
        if let Some(sep) = arabic_separator(c) {
            out.push(sep);
            continue;
        }
        // The ideographic full stop (and the half-width one, after NFKC), which IDNA (UTS #46)
        // reads as a host's dot: `evil。io` is the host `evil.io`.
        if c == '\u{3002}' {
            out.push('.');
            continue;
        }
        if c.is_ascii() || !c.is_alphanumeric() {
            out.extend(c.to_uppercase());
            continue;
        }
        let proto: String = skeleton(c.encode_utf8(&mut buf)).collect();
        match !proto.is_empty() && proto.chars().all(|p| p.is_ascii_alphanumeric()) {
            true => out.extend(proto.chars().flat_map(char::to_uppercase)),
            false => out.extend(c.to_uppercase()),
        }
    }
    out
}

/// The first code point (digit zero) of each run of ten decimal digits (Unicode general
/// category Nd) outside ASCII that NFKC leaves as they are: Arabic-Indic, Extended
/// Arabic-Indic, NKo, Devanagari, Bengali, Gurmukhi, Gujarati, Oriya, Tamil, Telugu, Kannada,
/// Malayalam, Sinhala, Thai, Lao, Tibetan, Myanmar (two), Khmer, Mongolian, Limbu, New Tai Lue,
/// Tai Tham (two), Balinese, Sundanese, Lepcha, Ol Chiki, Vai, Saurashtra, Kayah Li, Javanese,
/// Myanmar Extended-B, Cham, Meetei Mayek (fullwidth and mathematical digits become ASCII under
/// NFKC already).
const DIGIT_ZEROS: &[u32] = &[
    0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6, 0x0D66,
    0x0DE6, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
    0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
];

/// `c` as an ASCII digit if it is a decimal digit of another script ([`DIGIT_ZEROS`]): a
/// bill may write `١٢٣٤` for `1234` (`spec/hooks.md` §4.2).
fn decimal_digit(c: char) -> Option<char> {
    let u = u32::from(c);
    if u < 0x80 || !c.is_numeric() {
        return None;
    }
    DIGIT_ZEROS
        .iter()
        .find(|&&zero| (zero..zero + 10).contains(&u))
        .and_then(|zero| char::from_digit(u - zero, 10))
}

/// U+066B ARABIC DECIMAL SEPARATOR as `.` and U+066C ARABIC THOUSANDS SEPARATOR as `,`, which
/// NFKC leaves as they are (`spec/hooks.md` §4.2; third review).
fn arabic_separator(c: char) -> Option<char> {
    match c {
        '\u{066B}' => Some('.'),
        '\u{066C}' => Some(','),
        _ => None,
    }
}

/// Invisible format characters an attacker can put inside a value to break a match: soft
/// hyphen, zero-width space / joiners, directional marks and overrides, word joiner and
/// invisible operators, byte-order mark (Unicode category Cf, the ones in common use).
fn is_format(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The ASCII shortcut gives what the general path gives, for any ASCII text (controls
        /// and DEL included).
        #[test]
        fn ascii_text_folds_as_the_general_path_folds_it(s in "[\\x00-\\x7f]{0,64}") {
            proptest::prop_assert_eq!(fold(&s), fold_unicode(&s));
        }
    }

    #[test]
    fn text_outside_ascii_takes_the_general_path() {
        assert_eq!(fold("ＧＢ29\u{200b}nwbk ١٢"), "GB29NWBK 12");
    }
}
