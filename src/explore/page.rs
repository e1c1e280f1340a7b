//! The frame of every page and the pieces pages share: how hostile text, labels, entry links
//! and times are shown (`spec/explorer.md` §4.1). All markup is maud's, which escapes every
//! interpolated string.

use crate::forensics::receipt::Piece;
use crate::lineage::Label;
use crate::quote::Quoted;
use crate::record::EntryId;
use maud::{html, Markup, DOCTYPE};

/// Characters of an entry's text shown on its page; the rest is counted, not shown.
pub(super) const MAX_TEXT_CHARS: usize = 64 * 1024;
/// Characters of a short hostile string (a writer name, a flag reason in a table).
pub(super) const MAX_SHORT_CHARS: usize = 200;

/// The stylesheet, served as `/style.css` (`style-src 'self'`: no inline style anywhere).
pub(super) const STYLE: &str = include_str!("style.css");

/// A whole page: `title` (explorer words only, never entry text) and `body`.
pub(super) fn layout(title: &str, body: Markup) -> Markup {
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
                    a href="/" { "Poisoned" }
                    a href="/quarantine" { "Flags" }
                    a href="/entries" { "Entries" }
                    a href="/calls" { "Gate decisions" }
                    a href="/ledger" { "Ledger" }
                    form.find method="get" action="/find" {
                        label { "Entry " input type="search" name="id" size="18"
                            placeholder="id, short id or #leaf" required; }
                        button type="submit" { "Go" }
                    }
                }
                main { h1 { (title) } (body) }
            }
        }
    }
}

/// The same page with a `<meta http-equiv="refresh">` (the progress of a running audit; no
/// script is needed, or allowed).
pub(super) fn refreshing(title: &str, seconds: u32, body: Markup) -> Markup {
    let page = layout(title, body).into_string();
    let meta = format!("<meta http-equiv=\"refresh\" content=\"{seconds}\">");
    maud::PreEscaped(page.replacen("<head>", &format!("<head>{meta}"), 1))
}

/// Hostile text from an entry: escaped by maud; control, bidi and invisible formatting
/// characters replaced by visible `\u{…}` marks; cut after `max` characters with the rest
/// counted. Never a link, whatever it contains.
pub(super) fn hostile(text: &str, max: usize) -> Markup {
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
pub(super) fn label(l: Option<Label>) -> Markup {
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
pub(super) fn entry_link(id: &EntryId, index: Option<u64>) -> Markup {
    html! {
        a href=(format!("/entry/{id}")) {
            @if let Some(i) = index { "#" (i) " " }
            code { (id.short()) }
        }
    }
}

/// An entry time (writer-asserted, milliseconds since the Unix epoch) in UTC to the
/// millisecond, `2025-01-01 00:00:00.017Z`, or the raw number when it is beyond what a
/// calendar date shows (after the year 9999).
pub(super) fn time(ms: u64) -> String {
    const MAX_MS: u64 = 253_402_300_799_999;
    if ms > MAX_MS {
        return format!("{ms} ms");
    }
    let (secs, milli) = (ms / 1000, ms % 1000);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of `days` after 1970-01-01 (H. Hinnant's `civil_from_days`,
/// for days >= 0).
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// "N of SIZE" with the share in percent.
pub(super) fn n_of(n: u64, size: u64) -> String {
    format!("{n} of {size}{}", share(n, size))
}

/// The share of `n` in `size` as " (p %)", or nothing when `size` is 0.
pub(super) fn share(n: u64, size: u64) -> String {
    if size == 0 {
        return String::new();
    }
    format!(" ({:.1} %)", n as f64 * 100.0 / size as f64)
}

/// A query the explorer refuses (`400`), with the reason shown.
#[derive(Debug)]
pub(super) struct BadQuery(pub String);

/// The page asked for by `?page=` (from 1; absent: 1) of a list of `total` rows: its number
/// and the range of rows it shows.
///
/// # Errors
/// [`BadQuery`] for a page that is not a number, is 0, or is past the last page (an empty
/// list has one, empty, page).
pub(super) fn page_of(
    asked: Option<&str>,
    total: usize,
) -> Result<(usize, std::ops::Range<usize>), BadQuery> {
    let pages = total.div_ceil(super::PAGE_SIZE).max(1);
    let n = match asked.filter(|s| !s.is_empty()) {
        None => 1,
        Some(s) => s
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=pages).contains(n))
            .ok_or_else(|| BadQuery(format!("page must be a number from 1 to {pages}")))?,
    };
    let start = (n - 1) * super::PAGE_SIZE;
    Ok((n, start..total.min(start + super::PAGE_SIZE)))
}

/// Links to the pages of a paged list: `base` is the path and query without `page`.
pub(super) fn pager(base: &str, page: usize, total: usize) -> Markup {
    let pages = total.div_ceil(super::PAGE_SIZE).max(1);
    let sep = if base.contains('?') { '&' } else { '?' };
    html! {
        p.pager {
            @if page > 1 { a rel="prev" href=(format!("{base}{sep}page={}", page - 1)) { "← previous" } " " }
            "page " (page) " of " (pages) " (" (total) " in all)"
            @if page < pages { " " a rel="next" href=(format!("{base}{sep}page={}", page + 1)) { "next →" } }
        }
    }
}

/// A quoted name or reason (`crate::quote`): the literal in a `code.lit`, its notes in a
/// `span.note`. The text content is exactly the quote's `Display`.
pub(super) fn quoted(q: &Quoted) -> Markup {
    html! {
        code.lit { (q.literal()) }
        @if !q.notes.is_empty() { span.note { (q.notes_text()) } }
    }
}

/// A receipt sentence, its names and reason shown as quoted literals. The text content is
/// exactly `Receipt::sentence`.
pub(super) fn sentence(pieces: &[Piece]) -> Markup {
    html! {
        span.sentence {
            @for p in pieces {
                @match p {
                    Piece::Words(w) => (w),
                    Piece::Literal(q) => (quoted(q)),
                }
            }
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
        assert_eq!(time(0), "1970-01-01 00:00:00.000Z");
        assert_eq!(time(1_735_689_600_017), "2025-01-01 00:00:00.017Z");
        assert_eq!(time(951_782_400_000), "2000-02-29 00:00:00.000Z");
        assert_eq!(time(253_402_300_799_999), "9999-12-31 23:59:59.999Z");
        assert_eq!(time(u64::MAX), format!("{} ms", u64::MAX));
    }
}
