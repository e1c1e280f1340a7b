//! The landing page (`spec/explorer.md` §2.1): what is poisoned, and why. Every quarantined
//! entry with its one-line receipt, grouped under the flagged source its receipt starts from,
//! sortable and paged; the ledger's state in one line (the rest is on `/ledger`).

use super::page::{self, BadQuery};
use super::poison::{Group, Sort};
use super::quarantine::{reason, receipt_row};
use super::routes::{PageError, PageQuery};
use super::Explorer;
use maud::{html, Markup};

/// The `/` page.
pub(super) fn render(x: &Explorer, q: &PageQuery) -> Result<Markup, PageError> {
    let sort = match q.sort.as_deref().filter(|s| !s.is_empty()) {
        None => Sort::default(),
        Some(s) => Sort::from_name(s)
            .ok_or_else(|| BadQuery("sort is one of largest, source, newest".to_string()))?,
    };
    let p = &x.indexed()?.poison;
    let groups = p.sorted(sort);
    // The rows of every group in order, each with its group: a page is a slice of them.
    let rows: Vec<(&Group, u64, crate::record::EntryId)> = groups
        .iter()
        .flat_map(|g| g.members.iter().map(move |(i, id)| (*g, *i, *id)))
        .collect();
    let (page_no, shown) = page::page_of(q.page.as_deref(), rows.len())?;
    let base = format!("/?sort={}", sort.name());
    let size = x.ledger.len();
    let body = html! {
        p.count {
            span.reached-count { (p.entries) } " of " (size) " entries are quarantined"
            (page::share(p.entries as u64, size)) ", from " (groups.len()) " flagged source" @if groups.len() != 1 { "s" }
            " (" a href="/quarantine" { (p.flags.len()) " active flag" @if p.flags.len() != 1 { "s" } } ")."
        }
        (status_line(x))
        @if rows.is_empty() {
            p.ok { "Nothing is quarantined: no active flag reaches any entry." }
        } @else {
            p.sort { "Sources: "
                @for (o, name) in Sort::ALL {
                    @if o == sort { strong { (label(o)) } } @else {
                        a href=(format!("/?sort={name}")) { (label(o)) }
                    }
                    " "
                }
            }
            (page::pager(&base, page_no, rows.len()))
            table.receipts.poisoned {
                tr { th { "Entry" } th { "Kind" } th { "Label" } th { "Receipt" } th {} }
                @for (n, (g, i, id)) in rows[shown.clone()].iter().enumerate() {
                    @if n == 0 || !std::ptr::eq(rows[shown.start + n - 1].0, *g) {
                        (group_row(x, g, n == 0 && g.members.first().map(|m| m.0) != Some(*i)))
                    }
                    (receipt_row(x, *i, id))
                }
            }
            (page::pager(&base, page_no, rows.len()))
        }
    };
    Ok(page::layout("What is poisoned, and why", body))
}

fn label(s: Sort) -> &'static str {
    match s {
        Sort::Largest => "largest first",
        Sort::Source => "in log order",
        Sort::Newest => "newest first",
    }
}

/// The heading row of a group: its source, the flag and its reason, its size, its picture.
fn group_row(x: &Explorer, g: &Group, continued: bool) -> Markup {
    let (leaf, id) = g.source;
    let kind = x
        .row(leaf)
        .as_deref()
        .and_then(|r| r.shape.as_ref())
        .map_or("unverified", |s| s.kind.name());
    html! {
        tr.group {
            td colspan="5" {
                "Source " (page::entry_link(&id, Some(leaf))) " (" (kind) ")"
                @if continued { " (continued)" }
                @if let Some(f) = &g.flag {
                    ", " a href=(format!("/quarantine/{}", f.entry)) { "flag #" (f.index) }
                    " (reach " (f.reach.name()) "): " span.reason { (reason(x, &f.entry)) }
                }
                " — " (g.members.len()) " quarantined entr" @if g.members.len() == 1 { "y" } @else { "ies" }
                " · " a.picture href=(format!("/entry/{id}#lineage")) { "picture" }
            }
        }
    }
}

/// The ledger's state in one line: size, checkpoint, audit link.
fn status_line(x: &Explorer) -> Markup {
    html! {
        p.status {
            "Ledger: " (x.ledger.len()) " entries; "
            @match x.head.checkpoint() {
                Some(c) => { "checkpoint of size " (c.size()) " verified under the log key" }
                None => { "no verified checkpoint" }
            }
            "; " a href="/ledger" { "ledger, labels and the full audit" } "."
        }
    }
}
