//! The id box (`/find?id=`, `spec/explorer.md` §2.6): a short id names several entries.

use super::page;
use crate::record::EntryId;
use maud::{html, Markup};

/// The page listing the entries whose ids start with the digits `asked`.
pub(super) fn ambiguous(asked: &str, matches: &[(EntryId, u64)]) -> Markup {
    let shown = &matches[..matches.len().min(super::PAGE_SIZE)];
    page::layout(
        "Several entries",
        html! {
            p { "These entries' ids start with " code { (page::hostile(asked, 64)) } ":" }
            ul { @for (id, i) in shown { li { (page::entry_link(id, Some(*i))) } } }
            @if matches.len() > shown.len() { p { "… and more: give more digits." } }
        },
    )
}
