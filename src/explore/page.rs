//! The frame of every page and the pieces pages share: how hostile text, labels, entry links
//! and times are shown (`spec/explorer.md` §4.1). All markup is maud's, which escapes every
//! interpolated string.

use crate::lineage::Label;
use crate::record::EntryId;
use maud::{html, Markup, DOCTYPE};

/// Characters of an entry's text shown on its page; the rest is counted, not shown.
pub const MAX_TEXT_CHARS: usize = 64 * 1024;
/// Characters of a short hostile string (a writer name, a flag reason in a table).
pub const MAX_SHORT_CHARS: usize = 200;

/// The stylesheet, served as `/style.css` (`style-src 'self'`: no inline style anywhere).
pub const STYLE: &str = include_str!("style.css");

/// A whole page: `title` (explorer words only, never entry text) and `body`.
pub fn layout(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="referrer" content="no-referrer";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · memlineage explorer" }
                link rel="stylesheet" href="/style.css";
            }
            body {
                nav {
                    a href="/" { "Overview" }
                    a href="/entries" { "Entries" }
                    a href="/quarantine" { "Quarantine" }
                    a href="/calls" { "Gate decisions" }
                }
                main { h1 { (title) } (body) }
            }
        }
    }
}

/// The same page with a `<meta http-equiv="refresh">` (the progress of a running audit; no
/// script is needed, or allowed).
pub fn refreshing(title: &str, seconds: u32, body: Markup) -> Markup {
    let page = layout(title, body).into_string();
    let meta = format!("<meta http-equiv=\"refresh\" content=\"{seconds}\">");
    maud::PreEscaped(page.replacen("<head>", &format!("<head>{meta}"), 1))
}

/// Hostile text from an entry: escaped by maud; control, bidi and invisible formatting
/// characters replaced by visible `\u{…}` marks; cut after `max` characters with the rest
/// counted. Never a link, whatever it contains.
pub fn hostile(text: &str, max: usize) -> Markup {
    let mut shown = 0usize;
    let mut plain = String::new();
    let mut parts: Vec<Part> = Vec::new();
    let mut rest = 0usize;
    for c in text.chars() {
        if shown >= max {
            rest += 1;
            continue;
        }
        shown += 1;
        if is_suspect(c) {
            if !plain.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut plain)));
            }
            parts.push(Part::Mark(c as u32));
        } else {
            plain.push(c);
        }
    }
    if !plain.is_empty() {
        parts.push(Part::Text(plain));
    }
    html! {
        @for p in &parts {
            @match p {
                Part::Text(s) => (s),
                Part::Mark(u) => span.ctl title="invisible or control character" {
                    (format!("\\u{{{u:04X}}}"))
                },
            }
        }
        @if rest > 0 {
            span.cut { " … " (rest) " more characters not shown" }
        }
    }
}

enum Part {
    Text(String),
    Mark(u32),
}

/// Characters that would hide, reorder or fake text: C0/C1 controls but tab and newline,
/// bidi embeddings, overrides, isolates and marks, zero-width and line/paragraph separators.
fn is_suspect(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c,
            '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// A label badge; `None` is an entry that did not verify: `UNVERIFIED`, the worst.
pub fn label(l: Option<Label>) -> Markup {
    match l {
        Some(l) => {
            html! { span class=(format!("label l-{}", l.name().to_ascii_lowercase())) { (l.name()) } }
        }
        None => {
            html! { span.label.l-unverified title="did not verify: counts as EXTERNAL" { "UNVERIFIED" } }
        }
    }
}

/// A link to an entry's page, showing its leaf index and short id.
pub fn entry_link(id: &EntryId, index: Option<u64>) -> Markup {
    html! {
        a href=(format!("/entry/{id}")) {
            @if let Some(i) = index { "#" (i) " " }
            code { (id.short()) }
        }
    }
}

/// An entry time (writer-asserted, milliseconds since the Unix epoch) in UTC, or the raw
/// number when it is beyond what a calendar date shows (after the year 9999).
pub fn time(ms: u64) -> String {
    const MAX_MS: u64 = 253_402_300_799_999;
    if ms > MAX_MS {
        return format!("{ms} ms");
    }
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    httpdate::fmt_http_date(t)
}

/// "N of SIZE" with the share in percent.
pub fn n_of(n: u64, size: u64) -> String {
    if size == 0 {
        return format!("{n} of {size}");
    }
    format!("{n} of {size} ({:.1} %)", n as f64 * 100.0 / size as f64)
}

/// Links to the pages of a paged list: `base` is the path and query without `page`.
pub fn pager(base: &str, page: usize, total: usize, per: usize) -> Markup {
    let pages = total.div_ceil(per).max(1);
    let sep = if base.contains('?') { '&' } else { '?' };
    html! {
        p.pager {
            @if page > 1 { a rel="prev" href=(format!("{base}{sep}page={}", page - 1)) { "← previous" } " " }
            "page " (page) " of " (pages) " (" (total) " in all)"
            @if page < pages { " " a rel="next" href=(format!("{base}{sep}page={}", page + 1)) { "next →" } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_escaped_and_marked() {
        let s = hostile("<img src=x onerror=alert(1)>\u{202E}abc\u{0007}", 100).into_string();
        assert_eq!(
            s,
            "&lt;img src=x onerror=alert(1)&gt;<span class=\"ctl\" title=\"invisible or control \
             character\">\\u{202E}</span>abc<span class=\"ctl\" title=\"invisible or control \
             character\">\\u{0007}</span>"
        );
    }

    #[test]
    fn hostile_text_is_cut() {
        let s = hostile("abcdef", 2).into_string();
        assert_eq!(
            s,
            "ab<span class=\"cut\"> … 4 more characters not shown</span>"
        );
    }

    #[test]
    fn times() {
        assert_eq!(time(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(time(u64::MAX), format!("{} ms", u64::MAX));
    }
}
