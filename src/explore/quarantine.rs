//! The quarantine views (`spec/explorer.md` §2.4): the active flags with what each reached
//! ("N of SIZE"), every quarantined entry with its receipt sentence, and one flag's reach
//! with its receipts and lineage graph.

use super::graph;
use super::index::ledger_label;
use super::page::{self, n_of, MAX_SHORT_CHARS, MAX_TEXT_CHARS};
use super::{Explorer, PAGE_SIZE};
use crate::forensics::receipt::receipt;
use crate::lineage::quarantine::{Flag, Reach};
use crate::record::EntryId;
use maud::{html, Markup};
use std::collections::{HashMap, VecDeque};

/// What one flag reaches: (leaf, depth from the source) breadth-first from the source, and
/// the edges (parent, child, strong) that carry it.
pub(super) struct Reached {
    pub nodes: Vec<(u64, u32)>,
    pub edges: Vec<(u64, u64, bool)>,
}

/// The entries `flag` reaches: its source and every descendant over any edge (reach all) or
/// over strong edges (reach strong), walking the verified index's children.
pub(super) fn reach(x: &Explorer, flag: &Flag) -> Reached {
    let policy = x.ledger.policy();
    let mut depth: HashMap<u64, u32> = HashMap::from([(flag.source_index, 0)]);
    let mut nodes = vec![(flag.source_index, 0)];
    let mut edges = Vec::new();
    let mut queue = VecDeque::from([flag.source_index]);
    while let Some(cur) = queue.pop_front() {
        let d = depth.get(&cur).copied().unwrap_or(0);
        for c in x.index.children(cur) {
            let Some(shape) = x.index.row(*c).and_then(|r| r.shape.as_ref()) else {
                continue;
            };
            let strong = shape
                .parents
                .iter()
                .filter(|(_, leaf, _)| *leaf == Some(cur))
                .any(|(_, _, w)| policy.is_strong(*w));
            if flag.reach == Reach::Strong && !strong {
                continue;
            }
            edges.push((cur, *c, strong));
            if !depth.contains_key(c) {
                depth.insert(*c, d + 1);
                nodes.push((*c, d + 1));
                queue.push_back(*c);
            }
        }
    }
    Reached { nodes, edges }
}

/// The recorded reason of a flag (its entry's verified text).
fn reason(x: &Explorer, flag: &EntryId) -> String {
    match x.ledger.verified_text(flag) {
        Ok(Some(t)) => t,
        Ok(None) => "(redacted)".into(),
        Err(_) => "(does not verify)".into(),
    }
}

/// The `/quarantine` page: flags, then every quarantined entry with its receipt, paged.
pub(super) fn render_all(x: &Explorer, page_no: usize) -> Markup {
    let size = x.ledger.len();
    let mut entries: Vec<(u64, EntryId)> = x
        .ledger
        .quarantine()
        .entries()
        .into_iter()
        .filter_map(|id| Some((x.ledger.index_of(&id)?, id)))
        .collect();
    entries.sort_unstable();
    let flags: Vec<&Flag> = x.ledger.quarantine().flags().collect();
    let page_no = page_no.max(1);
    let body = html! {
        h2 { "Active flags" }
        @if flags.is_empty() { p { "No active flag: nothing is quarantined." } } @else {
            table.flags {
                tr { th { "Flag" } th { "Source" } th { "Reach" } th { "Reason" } th { "Reached" } }
                @for f in &flags {
                    tr {
                        td { a href=(format!("/quarantine/{}", f.entry)) { "flag #" (f.index) } }
                        td { (page::entry_link(&f.source, Some(f.source_index))) }
                        td { (f.reach.name()) }
                        td { (page::hostile(&reason(x, &f.entry), MAX_SHORT_CHARS)) }
                        td { (n_of(reach(x, f).nodes.len() as u64, size)) }
                    }
                }
            }
        }
        h2 { "Quarantined entries" }
        p.count { span.reached-count { (entries.len()) } " of " (size) " entries are quarantined." }
        (page::pager("/quarantine", page_no, entries.len(), PAGE_SIZE))
        (receipt_table(x, entries.iter().skip((page_no - 1) * PAGE_SIZE).take(PAGE_SIZE).map(|(i, id)| (*i, *id))))
        (page::pager("/quarantine", page_no, entries.len(), PAGE_SIZE))
    };
    page::layout("Quarantine", body)
}

/// The `/quarantine/FLAG` page.
pub(super) fn render_flag(x: &Explorer, flag: &Flag, page_no: usize) -> Markup {
    let size = x.ledger.len();
    let r = reach(x, flag);
    let page_no = page_no.max(1);
    let mut leaves: Vec<u64> = r.nodes.iter().map(|(l, _)| *l).collect();
    leaves.sort_unstable();
    let rows = leaves
        .iter()
        .skip((page_no - 1) * PAGE_SIZE)
        .take(PAGE_SIZE)
        .filter_map(|l| Some((*l, x.index.row(*l)?.id)));
    let base = format!("/quarantine/{}", flag.entry);
    let body = html! {
        table {
            tr { th { "Flag entry" } td { (page::entry_link(&flag.entry, Some(flag.index))) } }
            tr { th { "Source" } td { (page::entry_link(&flag.source, Some(flag.source_index))) } }
            tr { th { "Reach" } td { (flag.reach.name())
                @if flag.reach == Reach::All { " (every recorded edge)" } @else { " (strong edges, w > τ, only)" } } }
            tr { th { "Reason" } td { (page::hostile(&reason(x, &flag.entry), MAX_TEXT_CHARS)) } }
            tr { th { "Reached" } td.reached-count { (n_of(r.nodes.len() as u64, size)) } }
        }
        h2 { "Lineage graph of the reach" }
        @if r.nodes.len() > graph::MAX_NODES {
            p.warn { "The first " (graph::MAX_NODES) " entries nearest the source are drawn; the \
                      list below has them all." }
        }
        (graph::svg(x, flag.source_index, &r.nodes, &r.edges))
        h2 { "Reached entries and their receipts" }
        (page::pager(&base, page_no, leaves.len(), PAGE_SIZE))
        (receipt_table(x, rows))
        (page::pager(&base, page_no, leaves.len(), PAGE_SIZE))
    };
    page::layout(&format!("Quarantine of flag #{}", flag.index), body)
}

/// One row per entry: link, kind, label and receipt sentence.
fn receipt_table(x: &Explorer, rows: impl Iterator<Item = (u64, EntryId)>) -> Markup {
    html! {
        table.receipts {
            tr { th { "Entry" } th { "Kind" } th { "Label" } th { "Receipt" } }
            @for (i, id) in rows {
                @let row = x.index.row(i);
                tr.reached {
                    td { (page::entry_link(&id, Some(i))) }
                    td { (row.and_then(|r| r.shape.as_ref()).map_or("unverified", |s| s.kind.name())) }
                    td { (page::label(row.and_then(|r| ledger_label(&x.ledger, r)))) }
                    td.receipt { @match receipt(&x.ledger, &id) {
                        Ok(r) => span.sentence { (page::hostile(&r.sentence(), MAX_TEXT_CHARS)) },
                        Err(e) => span.bad { "no receipt: " (page::hostile(&e.to_string(), MAX_SHORT_CHARS)) },
                    } }
                }
            }
        }
    }
}
