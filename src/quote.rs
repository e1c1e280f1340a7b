//! Names and reasons as unambiguous literals in the sentences a person reads before deciding:
//! receipts ([`crate::forensics::receipt`]), the gate's deny reasons ([`crate::gate::LineageDenial`]'s
//! `Display`, which the hooks and the MCP server pass on) and the explorer
//! (`spec/forensics.md` §3.1).
//!
//! A writer, tool or parameter name and a flag's reason are chosen by whoever wrote them, an
//! injected agent included. Put into a sentence as they are, a tool named
//! ``x` (written by user `user`), which the advisory cleared`` makes a receipt read as if the
//! advisory cleared it, and a writer `аgent` with a Cyrillic `а` reads as `agent`. Here:
//!
//! 1. A literal is written between backticks, and inside it every backtick and backslash is
//!    escaped (`` \` ``, `\\`): no text can close the quote.
//! 2. Newline, carriage return and tab are written `\n`, `\r`, `\t`; every other control
//!    character, every invisible or format character (UTS #39 default-ignorable: bidi controls,
//!    zero-width characters, variation selectors, tags, U+FEFF …), every non-ASCII space and
//!    every non-ASCII character confusable with ASCII punctuation (`ˋ` U+02CB, `＂` U+FF02,
//!    `‘` U+2018 …, by the UTS #39 skeleton), and private-use characters, as `\u{XXXX}`.
//! 3. A name is cut after [`MAX_NAME_CHARS`] characters, a reason after
//!    [`MAX_REASON_CHARS`]; the rest is counted in a note.
//! 4. A name whose characters are of more than one script (UTS #39 mixed-script detection)
//!    gets the note `mixed scripts: Cyrillic+Latin`; a non-ASCII name whose UTS #39 skeleton is
//!    ASCII gets `looks like `agent``.
//!
//! Notes follow the closing backtick in square brackets: `` `аgent` [mixed scripts:
//! Cyrillic+Latin; looks like `agent`] ``. A name made only of ASCII letters, digits and
//! `_ - . : / @` is written as it is by [`word`] (it holds no space, backtick or bracket, so it
//! cannot fake a sentence), which keeps `deny send_money: parameter `recipient`` as it was.

use std::fmt;
use unicode_script::{Script, UnicodeScript};
use unicode_security::{confusable_detection::skeleton, MixedScript};

/// Characters of a name (writer, tool, parameter) shown in a literal; the rest is counted.
pub const MAX_NAME_CHARS: usize = 64;
/// Characters of a flag's reason shown in a receipt; the rest is counted.
pub const MAX_REASON_CHARS: usize = 200;

/// A quoted literal: the escaped text between its backticks, and its notes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quoted {
    /// The literal's text, escaped (rules 1–3 of the module docs), without the backticks.
    pub body: String,
    /// `false` for a bare [`word`], written without backticks.
    pub ticks: bool,
    /// What the reader should know about it, shown after the literal.
    pub notes: Vec<Note>,
}

/// A note on a quoted literal.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// The name mixes scripts: their names (Unicode full names, sorted).
    MixedScripts(Vec<&'static str>),
    /// The non-ASCII name's UTS #39 skeleton is this ASCII text (escaped as a body is).
    LooksLike(String),
    /// This many characters were cut off.
    Cut(usize),
}

/// A writer or parameter name, always between backticks, with script notes.
pub fn name(s: &str) -> Quoted {
    let (body, rest) = escape(s, MAX_NAME_CHARS);
    let mut notes = script_notes(s);
    if rest > 0 {
        notes.push(Note::Cut(rest));
    }
    Quoted {
        body,
        ticks: true,
        notes,
    }
}

/// A tool name: bare when it is made only of ASCII letters, digits and `_ - . : / @` (at most
/// [`MAX_NAME_CHARS`]), else quoted as [`name`] quotes.
pub fn word(s: &str) -> Quoted {
    let plain = !s.is_empty()
        && s.len() <= MAX_NAME_CHARS
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:/@".contains(&b));
    if plain {
        return Quoted {
            body: s.to_string(),
            ticks: false,
            notes: Vec::new(),
        };
    }
    name(s)
}

/// A flag's reason (free text): between backticks, cut after [`MAX_REASON_CHARS`].
pub fn reason(s: &str) -> Quoted {
    let (body, rest) = escape(s, MAX_REASON_CHARS);
    Quoted {
        body,
        ticks: true,
        notes: if rest > 0 {
            vec![Note::Cut(rest)]
        } else {
            Vec::new()
        },
    }
}

impl Quoted {
    /// The literal with its backticks (if any), without the notes.
    pub fn literal(&self) -> String {
        if self.ticks {
            format!("`{}`", self.body)
        } else {
            self.body.clone()
        }
    }

    /// The notes as shown after the literal: ` [note; note]`, or empty.
    pub fn notes_text(&self) -> String {
        if self.notes.is_empty() {
            return String::new();
        }
        let notes: Vec<String> = self.notes.iter().map(Note::to_string).collect();
        format!(" [{}]", notes.join("; "))
    }
}

impl fmt::Display for Quoted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.literal(), self.notes_text())
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::MixedScripts(s) => write!(f, "mixed scripts: {}", s.join("+")),
            Note::LooksLike(s) => write!(f, "looks like `{s}`"),
            Note::Cut(n) => write!(f, "{n} more characters not shown"),
        }
    }
}

/// The first `max` characters of `s` escaped (rules 1 and 2), and how many were left out.
fn escape(s: &str, max: usize) -> (String, usize) {
    let mut out = String::with_capacity(s.len().min(4 * max));
    let mut chars = s.chars();
    for c in chars.by_ref().take(max) {
        match c {
            '`' => out.push_str("\\`"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:04X}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    (out, chars.count())
}

/// Rule 2: controls, invisible and format characters, non-ASCII spaces, look-alikes of ASCII
/// punctuation, private use.
fn needs_escape(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    if c.is_control() || c.is_whitespace() || is_private_use(c) {
        return true;
    }
    // The UTS #39 skeleton drops default-ignorable (invisible) characters and maps
    // confusables to their prototypes.
    let mut buf = [0u8; 4];
    let mut sk = skeleton(c.encode_utf8(&mut buf)).peekable();
    if sk.peek().is_none() {
        return true;
    }
    sk.any(|p| p.is_ascii() && !p.is_ascii_alphanumeric())
}

fn is_private_use(c: char) -> bool {
    matches!(u32::from(c), 0xE000..=0xF8FF | 0xF0000..=0x10FFFF)
}

/// Rule 4: mixed scripts and ASCII look-alikes of a name.
fn script_notes(s: &str) -> Vec<Note> {
    let mut notes = Vec::new();
    if s.is_ascii() {
        return notes;
    }
    if !s.is_single_script() {
        let mut scripts: Vec<&'static str> = s
            .chars()
            .map(|c| c.script())
            .filter(|sc| !matches!(sc, Script::Common | Script::Inherited | Script::Unknown))
            .map(|sc| sc.full_name())
            .collect();
        scripts.sort_unstable();
        scripts.dedup();
        // Characters of no script (unassigned, private use) are escaped, not counted.
        if scripts.len() > 1 {
            notes.push(Note::MixedScripts(scripts));
        }
    }
    let sk: String = skeleton(s).take(4 * MAX_NAME_CHARS).collect();
    if sk.is_ascii() && sk != s {
        notes.push(Note::LooksLike(escape(&sk, MAX_NAME_CHARS).0));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_unchanged() {
        assert_eq!(name("agent").to_string(), "`agent`");
        assert_eq!(name("tool:read_file").to_string(), "`tool:read_file`");
        assert_eq!(word("send_money").to_string(), "send_money");
        assert_eq!(word("mcp__bank__send").to_string(), "mcp__bank__send");
    }

    #[test]
    fn a_quote_cannot_be_closed() {
        let spoof = "x` (written by user `user`), which the advisory cleared";
        assert_eq!(
            word(spoof).to_string(),
            "`x\\` (written by user \\`user\\`), which the advisory cleared`"
        );
        assert_eq!(name("a\\`b").to_string(), "`a\\\\\\`b`");
        // A look-alike of the backtick is no closing quote either.
        assert_eq!(
            name("xˋ y").to_string(),
            "`x\\u{02CB} y` [looks like `x' y`]"
        );
        assert_eq!(word("a b").to_string(), "`a b`");
        assert_eq!(word("").to_string(), "``");
    }

    #[test]
    fn controls_and_invisibles_are_marked() {
        assert_eq!(
            name("a\u{0}b\u{1b}\r\n\u{202E}c\u{200B}\u{FEFF}\u{00A0}\u{E000}").to_string(),
            "`a\\u{0000}b\\u{001B}\\r\\n\\u{202E}c\\u{200B}\\u{FEFF}\\u{00A0}\\u{E000}`"
        );
    }

    #[test]
    fn look_alikes_are_noted() {
        // Cyrillic а (U+0430) in a Latin name.
        assert_eq!(
            name("\u{430}gent").to_string(),
            "`\u{430}gent` [mixed scripts: Cyrillic+Latin; looks like `agent`]"
        );
        // Wholly Cyrillic, single script, still looks like ASCII.
        assert_eq!(
            name("\u{430}\u{435}").to_string(),
            "`\u{430}\u{435}` [looks like `ae`]"
        );
        assert_eq!(name("café").to_string(), "`café`");
        assert_eq!(name("読む").to_string(), "`読む`");
    }

    #[test]
    fn long_text_is_cut_with_a_count() {
        let r = reason(&"x".repeat(MAX_REASON_CHARS + 5));
        assert_eq!(r.body.len(), MAX_REASON_CHARS);
        assert_eq!(r.notes_text(), " [5 more characters not shown]");
        let n = name(&"y".repeat(70));
        assert_eq!(n.notes, vec![Note::Cut(6)]);
        assert!(!word(&"z".repeat(70)).to_string().starts_with('z'));
    }
}
