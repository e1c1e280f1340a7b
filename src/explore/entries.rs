//! The entry list: paged, filterable by kind, writer, label and quarantine
//! (`spec/explorer.md` §2.2).

use super::index::{ledger_label, writer_name, Row};
use super::page::{self, MAX_SHORT_CHARS};
use super::{Explorer, PAGE_SIZE};
use crate::lineage::Label;
use crate::record::Kind;
use maud::{html, Markup};

/// The filters of `/entries`, from its query string; empty fields do not filter.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub(super) struct Filter {
    kind: Option<String>,
    writer: Option<String>,
    label: Option<String>,
    quarantined: Option<String>,
    page: Option<usize>,
}

/// Every kind, for the filter's choices: the registry's codes are contiguous from 0
/// (`spec/record.md` §4.1), so the list follows the registry when a kind is added.
fn kinds() -> impl Iterator<Item = Kind> {
    (0..).map_while(Kind::from_code)
}

impl Filter {
    fn given(v: &Option<String>) -> Option<&str> {
        v.as_deref().filter(|s| !s.is_empty())
    }

    fn keeps(&self, x: &Explorer, row: &Row) -> bool {
        if let Some(k) = Self::given(&self.kind) {
            if row.shape.as_ref().map(|s| s.kind.name()) != Some(k) {
                return false;
            }
        }
        if let Some(w) = Self::given(&self.writer) {
            match &row.shape {
                Some(s) if writer_name(&x.ledger, &s.writer) == w => {}
                _ => return false,
            }
        }
        if let Some(l) = Self::given(&self.label) {
            let shown = ledger_label(&x.ledger, row).map_or("UNVERIFIED", Label::name);
            if !shown.eq_ignore_ascii_case(l) {
                return false;
            }
        }
        if let Some(q) = Self::given(&self.quarantined) {
            // An unverified row counts as quarantined (fail closed).
            let is_q = row.shape.is_none() || x.ledger.is_quarantined(&row.id);
            if (q == "yes") != is_q {
                return false;
            }
        }
        true
    }

    /// The query string of these filters without the page.
    fn query(&self) -> String {
        let mut parts = Vec::new();
        for (k, v) in [
            ("kind", &self.kind),
            ("writer", &self.writer),
            ("label", &self.label),
            ("quarantined", &self.quarantined),
        ] {
            if let Some(v) = Self::given(v) {
                parts.push(format!("{k}={}", url_encode(v)));
            }
        }
        if parts.is_empty() {
            "/entries".to_string()
        } else {
            format!("/entries?{}", parts.join("&"))
        }
    }
}

/// Percent-encodes a query value (everything but unreserved characters).
fn url_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The `/entries` page.
pub(super) fn render(x: &Explorer, f: &Filter) -> Markup {
    let rows: Vec<(u64, &Row)> = x
        .index
        .rows()
        .iter()
        .enumerate()
        .map(|(i, r)| (i as u64, r))
        .filter(|(_, r)| f.keeps(x, r))
        .collect();
    let page_no = f.page.unwrap_or(1).max(1);
    let shown = rows.iter().skip((page_no - 1) * PAGE_SIZE).take(PAGE_SIZE);
    let body = html! {
        (form(x, f))
        (page::pager(&f.query(), page_no, rows.len(), PAGE_SIZE))
        table.entries {
            tr { th { "Leaf" } th { "Id" } th { "Writer" } th { "Role" } th { "Kind" } th { "Label" } th { "Quarantined" } th { "Time (UTC)" } }
            @for (i, r) in shown { (row(x, *i, r)) }
        }
        (page::pager(&f.query(), page_no, rows.len(), PAGE_SIZE))
    };
    page::layout("Entries", body)
}

fn row(x: &Explorer, i: u64, r: &Row) -> Markup {
    let label = ledger_label(&x.ledger, r);
    match &r.shape {
        None => html! {
            tr.unverified {
                td { (i) } td { (page::entry_link(&r.id, None)) }
                td colspan="3" { "did not verify" } td { (page::label(None)) } td { "counted as quarantined" } td {}
            }
        },
        Some(s) => {
            let (role, name) = match x.ledger.principal(&s.writer) {
                Some((role, name)) => (role.name(), name.to_string()),
                None => ("unbound", writer_name(&x.ledger, &s.writer)),
            };
            html! {
                tr {
                    td { (i) }
                    td { (page::entry_link(&r.id, None)) }
                    td { (page::hostile(&name, MAX_SHORT_CHARS)) }
                    td { (role) }
                    td { (s.kind.name()) }
                    td { (page::label(label)) }
                    td { @if x.ledger.is_quarantined(&r.id) { "yes" } @else { "no" } }
                    td { (page::time(s.time_ms)) }
                }
            }
        }
    }
}

fn form(x: &Explorer, f: &Filter) -> Markup {
    let sel = |v: &Option<String>, o: &str| Filter::given(v) == Some(o);
    html! {
        form.filters method="get" action="/entries" {
            label { "Kind " select name="kind" {
                option value="" { "any" }
                @for k in kinds() { option value=(k.name()) selected[sel(&f.kind, k.name())] { (k.name()) } }
            } }
            label { "Writer " select name="writer" {
                option value="" { "any" }
                @for (w, n) in x.index.writers() {
                    option value=(w) selected[sel(&f.writer, w)] { (page::hostile(w, MAX_SHORT_CHARS)) " (" (n) ")" }
                }
            } }
            label { "Label " select name="label" {
                option value="" { "any" }
                @for l in Label::ALL { option value=(l.name()) selected[sel(&f.label, l.name())] { (l.name()) } }
                option value="UNVERIFIED" selected[sel(&f.label, "UNVERIFIED")] { "UNVERIFIED" }
            } }
            label { "Quarantined " select name="quarantined" {
                option value="" { "any" }
                option value="yes" selected[sel(&f.quarantined, "yes")] { "yes" }
                option value="no" selected[sel(&f.quarantined, "no")] { "no" }
            } }
            button type="submit" { "Filter" }
        }
    }
}
