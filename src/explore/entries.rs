//! The entry list: paged, filterable by kind, writer, label and quarantine
//! (`spec/explorer.md` §2.2). A filter value the explorer does not know is refused (`400`),
//! never read as "no filter".

use super::index::{ledger_label, verify_rows, writer_name, Row};
use super::page::{self, BadQuery};
use super::routes::PageError;
use super::Explorer;
use crate::lineage::Label;
use crate::quote;
use crate::record::{KeyId, Kind};
use axum::http::StatusCode;
use maud::{html, Markup};
use std::borrow::Cow;

/// The filters of `/entries`, from its query string, as given; empty fields do not filter.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub(super) struct Filter {
    kind: Option<String>,
    writer: Option<String>,
    label: Option<String>,
    quarantined: Option<String>,
    page: Option<String>,
}

/// The filters, parsed.
#[derive(Default)]
struct Parsed {
    kind: Option<Kind>,
    /// A writer's key (the query gives its 64 hex digits).
    writer: Option<KeyId>,
    /// A label; `None` inside: `UNVERIFIED`.
    label: Option<Option<Label>>,
    quarantined: Option<bool>,
}

/// Every kind, for the filter's choices: the registry's codes are contiguous from 0
/// (`spec/record.md` §4.1), so the list follows the registry when a kind is added.
fn kinds() -> impl Iterator<Item = Kind> {
    (0..).map_while(Kind::from_code)
}

fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

impl Filter {
    fn parse(&self) -> Result<Parsed, BadQuery> {
        let bad = |what: &str| BadQuery(what.to_string());
        let kind = given(&self.kind)
            .map(|k| {
                kinds()
                    .find(|x| x.name() == k)
                    .ok_or_else(|| bad("kind is a kind name (spec/record.md §4)"))
            })
            .transpose()?;
        let writer = given(&self.writer)
            .map(|w| {
                let mut key = [0u8; 32];
                hex::decode_to_slice(w, &mut key)
                    .map(|()| KeyId(key))
                    .map_err(|_| bad("writer is a writer's key, 64 hex digits"))
            })
            .transpose()?;
        let label = given(&self.label)
            .map(|l| match Label::from_name(&l.to_ascii_uppercase()) {
                Some(l) => Ok(Some(l)),
                None if l.eq_ignore_ascii_case("UNVERIFIED") => Ok(None),
                None => Err(bad(
                    "label is TRUSTED, DERIVED_TRUSTED, DERIVED_UNTRUSTED, EXTERNAL or UNVERIFIED",
                )),
            })
            .transpose()?;
        let quarantined = match given(&self.quarantined) {
            None => None,
            Some("yes") => Some(true),
            Some("no") => Some(false),
            Some(_) => return Err(bad("quarantined is yes or no")),
        };
        Ok(Parsed {
            kind,
            writer,
            label,
            quarantined,
        })
    }

    /// Whether any filter is given (a filtered list needs the complete index).
    pub(super) fn is_filtered(&self) -> bool {
        [&self.kind, &self.writer, &self.label, &self.quarantined]
            .into_iter()
            .any(|v| given(v).is_some())
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
            if let Some(v) = given(v) {
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

impl Parsed {
    fn keeps(&self, x: &Explorer, row: &Row) -> bool {
        if let Some(k) = self.kind {
            if row.shape.as_ref().map(|s| s.kind) != Some(k) {
                return false;
            }
        }
        if let Some(w) = &self.writer {
            if row.shape.as_ref().map(|s| &s.writer) != Some(w) {
                return false;
            }
        }
        if let Some(l) = self.label {
            if ledger_label(&x.ledger, row) != l {
                return false;
            }
        }
        if let Some(q) = self.quarantined {
            // An unverified row counts as quarantined (fail closed).
            let is_q = row.shape.is_none() || x.ledger.is_quarantined(&row.id);
            if q != is_q {
                return false;
            }
        }
        true
    }
}

/// Percent-encodes a query value (everything but unreserved characters).
fn url_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The `/entries` page. Filtered, over the complete index; unfiltered before it is complete,
/// the page's leaves are read and verified now (`spec/explorer.md` §3.3).
pub(super) fn render(x: &Explorer, f: &Filter) -> Result<Markup, PageError> {
    let p = f.parse()?;
    // Unfiltered, a page needs only its own leaves; a filter needs every entry's shape.
    let ix = match (&x.indexed, f.is_filtered()) {
        (None, false) => None,
        _ => Some(x.indexed()?),
    };
    let (total, page_no, shown): (usize, usize, Vec<(u64, Cow<'_, Row>)>) = match ix {
        Some(ix) => {
            let rows: Vec<(u64, &Row)> = ix
                .index
                .rows()
                .iter()
                .enumerate()
                .map(|(i, r)| (i as u64, r))
                .filter(|(_, r)| p.keeps(x, r))
                .collect();
            let (page_no, shown) = page::page_of(f.page.as_deref(), rows.len())?;
            let shown = rows[shown]
                .iter()
                .map(|(i, r)| (*i, Cow::Borrowed(*r)))
                .collect();
            (rows.len(), page_no, shown)
        }
        None => {
            let total = usize::try_from(x.ledger.len()).unwrap_or(usize::MAX);
            let (page_no, shown) = page::page_of(f.page.as_deref(), total)?;
            let (from, to) = (shown.start as u64, shown.end as u64);
            let rows = verify_rows(&x.ledger, from, to).map_err(|e| {
                PageError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Store error",
                    e.to_string(),
                )
            })?;
            let shown = (from..).zip(rows.into_iter().map(Cow::Owned)).collect();
            (total, page_no, shown)
        }
    };
    let body = html! {
        (form(x, f))
        (page::pager(&f.query(), page_no, total))
        table.entries {
            tr { th { "Leaf" } th { "Id" } th { "Writer" } th { "Role" } th { "Kind" } th { "Label" } th { "Quarantined" } th { "Time (writer's claim, UTC)" } }
            @for (i, r) in &shown { (row(x, *i, r)) }
        }
        (page::pager(&f.query(), page_no, total))
    };
    Ok(page::layout("Entries", body))
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
                    td { (page::quoted(&quote::name(&name))) }
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
    let sel = |v: &Option<String>, o: &str| given(v).is_some_and(|g| g.eq_ignore_ascii_case(o));
    html! {
        form.filters method="get" action="/entries" {
            label { "Kind " select name="kind" {
                option value="" { "any" }
                @for k in kinds() { option value=(k.name()) selected[sel(&f.kind, k.name())] { (k.name()) } }
            } }
            // The option's value is the writer's key (hex), never its name: a name may hold
            // NUL, CR, LF or anything else (spec/explorer.md §2.2).
            label { "Writer " select name="writer" {
                option value="" { "any" }
                @if let Some(ix) = &x.indexed {
                    @for (key, (w, n)) in ix.index.writers() {
                        @let hex = key.to_string();
                        option value=(hex) selected[sel(&f.writer, &hex)] { (quote::name(w).to_string()) " (" (n) ")" }
                    }
                } @else {
                    option value="" disabled { "(listed once every entry is indexed)" }
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
