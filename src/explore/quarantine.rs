//! The flag views (`spec/explorer.md` §2.4): every active flag with what it reached
//! ("N of SIZE", counted once at start), paged; and one flag's reach with its receipts and
//! lineage graph.

use super::graph;
use super::index::ledger_label;
use super::page::{self, n_of};
use super::routes::PageError;
use super::Explorer;
use crate::lineage::quarantine::{Flag, Reach};
use crate::quote;
use crate::record::EntryId;
use maud::{html, Markup};
use std::collections::HashSet;

/// The recorded reason of a flag (its entry's verified text), quoted.
pub(super) fn reason(x: &Explorer, flag: &EntryId) -> Markup {
    match x.ledger.verified_text(flag) {
        Ok(Some(t)) => page::quoted(&quote::reason(&t)),
        Ok(None) => html! { "(redacted)" },
        Err(_) => html! { span.bad { "(does not verify)" } },
    }
}

/// The `/quarantine` page: the active flags, largest reach first, paged.
pub(super) fn render_all(x: &Explorer, asked: Option<&str>) -> Result<Markup, PageError> {
    let size = x.ledger.len();
    let flags = &x.indexed()?.poison.flags;
    let (page_no, rows) = page::page_of(asked, flags.len())?;
    let body = html! {
        p { (flags.len()) " active flags, largest reach first. "
            a href="/" { "What they quarantined, with receipts" } "." }
        @if flags.is_empty() { p { "No active flag: nothing is quarantined." } } @else {
            (page::pager("/quarantine", page_no, flags.len()))
            table.flags {
                tr { th { "Flag" } th { "Source" } th { "Reach" } th { "Reason" } th { "Reached" } }
                @for f in &flags[rows] {
                    tr {
                        td { a href=(format!("/quarantine/{}", f.flag.entry)) { "flag #" (f.flag.index) } }
                        td { (page::entry_link(&f.flag.source, Some(f.flag.source_index))) }
                        td { (f.flag.reach.name()) }
                        td.reason { (reason(x, &f.flag.entry)) }
                        td { span.n { (f.reached) } " of " (size) }
                    }
                }
            }
            (page::pager("/quarantine", page_no, flags.len()))
        }
    };
    Ok(page::layout("Flags", body))
}

/// The `/quarantine/FLAG` page.
pub(super) fn render_flag(
    x: &Explorer,
    flag: &Flag,
    asked: Option<&str>,
) -> Result<Markup, PageError> {
    let size = x.ledger.len();
    let ix = x.indexed()?;
    let r = ix
        .index
        .reach(flag.source_index, flag.reach, &x.ledger.label_policy());
    let mut leaves: Vec<u64> = r.nodes.iter().map(|(l, _)| *l).collect();
    leaves.sort_unstable();
    let (page_no, shown) = page::page_of(asked, leaves.len())?;
    let rows = leaves[shown]
        .iter()
        .filter_map(|l| Some((*l, ix.index.row(*l)?.id)));
    let base = format!("/quarantine/{}", flag.entry);
    let drawn: Vec<(u64, i32)> = r
        .nodes
        .iter()
        .take(graph::MAX_NODES)
        .map(|(l, d)| (*l, i32::try_from(*d).unwrap_or(i32::MAX)))
        .collect();
    let sources = HashSet::from([flag.source_index]);
    let body = html! {
        table {
            tr { th { "Flag entry" } td { (page::entry_link(&flag.entry, Some(flag.index))) } }
            tr { th { "Source" } td { (page::entry_link(&flag.source, Some(flag.source_index))) } }
            tr { th { "Reach" } td { (flag.reach.name())
                @if flag.reach == Reach::All { " (every recorded edge)" } @else { " (strong edges, w > τ, only)" } } }
            tr { th { "Reason" } td.reason { (reason(x, &flag.entry)) } }
            tr { th { "Reached" } td.reached-count { (n_of(r.nodes.len() as u64, size)) } }
        }
        h2 { "Lineage graph of the reach" }
        @if r.nodes.len() > graph::MAX_NODES {
            p.warn { "The first " (graph::MAX_NODES) " entries nearest the source are drawn; the \
                      list below has them all." }
        }
        (graph::svg(x, &drawn, &r.edges, None, &sources))
        h2 { "Reached entries and their receipts" }
        (page::pager(&base, page_no, leaves.len()))
        (receipt_table(x, rows))
        (page::pager(&base, page_no, leaves.len()))
    };
    Ok(page::layout(
        &format!("Quarantine of flag #{}", flag.index),
        body,
    ))
}

/// One row per entry: link, kind, label, receipt sentence and a link to its picture.
pub(super) fn receipt_table(x: &Explorer, rows: impl Iterator<Item = (u64, EntryId)>) -> Markup {
    html! {
        table.receipts {
            tr { th { "Entry" } th { "Kind" } th { "Label" } th { "Receipt" } th {} }
            @for (i, id) in rows { (receipt_row(x, i, &id)) }
        }
    }
}

/// One row of a receipt table.
pub(super) fn receipt_row(x: &Explorer, i: u64, id: &EntryId) -> Markup {
    let row = x.row(i);
    let row = row.as_deref();
    html! {
        tr.reached {
            td { (page::entry_link(id, Some(i))) }
            td { (row.and_then(|r| r.shape.as_ref()).map_or("unverified", |s| s.kind.name())) }
            td { (page::label(row.and_then(|r| ledger_label(&x.ledger, r)))) }
            td.receipt { @match x.receipt(id) {
                Ok(p) => (page::sentence(&p)),
                Err(e) => span.bad { "no receipt: " (page::hostile(&e, page::MAX_SHORT_CHARS)) },
            } }
            td { a.picture href=(format!("/entry/{id}#lineage")) { "picture" } }
        }
    }
}
