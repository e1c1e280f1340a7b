//! The overview page: size, checkpoint, the on-demand audit, counts by label, active flags
//! (`spec/explorer.md` §2.1).

use super::page::{self, n_of};
use super::verify::VerifyState;
use super::Explorer;
use crate::ledger::{Ledger, StoreSource};
use crate::lineage::Label;
use crate::log::{tree_root, VerifiedCheckpoint};
use crate::store::{SqliteStore, Store};
use maud::{html, Markup};
use std::sync::atomic::Ordering;

/// The latest stored checkpoint as this process verified it at start.
pub(super) enum Head {
    /// No checkpoint is stored.
    None,
    /// Verified under the log key; `root_matches`: the stored tree hashes give its root.
    Verified {
        checkpoint: VerifiedCheckpoint,
        root_matches: bool,
    },
    /// A stored checkpoint that does not verify, or could not be read.
    Bad(String),
}

impl Head {
    /// Reads and verifies the latest stored checkpoint of `ledger` (read only: nothing is
    /// signed, unlike [`Ledger::checkpoint`]).
    pub(super) fn read(ledger: &Ledger<SqliteStore>) -> Head {
        let note = match ledger.store().latest_checkpoint() {
            Ok(Some((_, note))) => note,
            Ok(None) => return Head::None,
            Err(e) => return Head::Bad(e.to_string()),
        };
        let checkpoint = match ledger.verifier().map(|v| v.verify(&note)) {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Head::Bad(e.to_string()),
            Err(e) => return Head::Bad(e.to_string()),
        };
        let root_matches = checkpoint.size() <= ledger.len()
            && tree_root(checkpoint.size(), &StoreSource(ledger.store()))
                .is_ok_and(|r| r == checkpoint.root());
        Head::Verified {
            checkpoint,
            root_matches,
        }
    }

    /// The verified checkpoint, if any.
    pub(super) fn checkpoint(&self) -> Option<&VerifiedCheckpoint> {
        match self {
            Head::Verified { checkpoint, .. } => Some(checkpoint),
            _ => None,
        }
    }
}

/// The overview page.
pub(super) fn render(x: &Explorer, verify: &VerifyState) -> Markup {
    let size = x.ledger.len();
    let counted = x.indexed.as_ref().map(|ix| ix.index.label_counts());
    let q = x.ledger.quarantine();
    let flags = q.flags().count();
    let body = html! {
        table {
            tr { th { "Ledger file" } td { code { (x.path.display().to_string()) } } }
            tr { th { "Entries" } td { (size) } }
            tr { th { "Log key" } td { code { (x.ledger.vkey()) } } }
            (head_rows(&x.head))
            (rows_row(x))
        }
        h2 { "Verification" }
        (super::verify::summary(verify))
        form method="post" action="/verify" {
            button type="submit" { "Verify the whole ledger now" }
            " (the same audit as " code { "memlineage verify" } ": every signature, label and \
             the tree root, against the log key)"
        }
        h2 { "Entries by label" }
        @if let Some((counts, unverified)) = counted {
            table {
                tr { th { "Label" } th { "Entries" } }
                @for (l, n) in Label::ALL.iter().zip(counts) {
                    tr {
                        td { a href=(format!("/entries?label={}", l.name())) { (page::label(Some(*l))) } }
                        td { (n_of(n, size)) }
                    }
                }
                @if unverified > 0 {
                    tr {
                        td { a href="/entries?label=UNVERIFIED" { (page::label(None)) } }
                        td { (n_of(unverified, size)) }
                    }
                }
            }
        } @else {
            p.counting { (counting(x)) }
        }
        h2 { "Quarantine" }
        p {
            (flags) " active flag" @if flags != 1 { "s" } " reach "
            a href="/quarantine" { (n_of(q.len() as u64, size)) } " entries."
        }
        h2 { "Tool calls" }
        @if let Some(ix) = &x.indexed {
            p {
                a href="/calls" { (ix.index.tool_calls().len()) " tool-call entries" }
                ", each with the gate's decision now."
            }
        } @else {
            p.counting { (counting(x)) }
        }
    };
    page::layout("Ledger overview", body)
}

/// What is said in place of a count the index has not given yet: never a number that may be
/// wrong (`spec/explorer.md` §3.3).
fn counting(x: &Explorer) -> String {
    match x.indexing.failed.get() {
        Some(e) => format!("not counted: indexing failed ({e})"),
        None => format!(
            "counting… ({} of {} entries verified so far; reload to see the counts)",
            x.indexing.progress.load(Ordering::Relaxed),
            x.ledger.len()
        ),
    }
}

/// Whether every leaf has its row in the store (`Ledger::check_rows_chain`, run by the
/// background indexing).
fn rows_row(x: &Explorer) -> Markup {
    html! {
        tr { th { "Stored rows" } @match x.indexing.rows.get() {
            None => td { "checking…" },
            Some(Ok(())) => td.ok { "every leaf has its row" },
            Some(Err(e)) => td.bad { "NOT confirmed: " (e) " (a missing leaf is shown as UNVERIFIED)" },
        } }
    }
}

fn head_rows(head: &Head) -> Markup {
    match head {
        Head::None => html! {
            tr { th { "Checkpoint" } td.warn { "none stored: nothing is committed by a signed tree head yet" } }
        },
        Head::Bad(e) => html! {
            tr { th { "Checkpoint" } td.bad { "does not verify under the log key: " (e) } }
        },
        Head::Verified {
            checkpoint: c,
            root_matches,
        } => html! {
            tr { th { "Checkpoint origin" } td { code { (c.origin()) } } }
            tr { th { "Checkpoint size" } td { (c.size()) } }
            tr { th { "Checkpoint root" } td { code { (c.root().to_string()) } } }
            tr {
                th { "Signature" }
                @if *root_matches {
                    td.ok { "verified under the log key; the stored tree gives this root" }
                } @else {
                    td.bad { "verified, but the stored tree does NOT give this root" }
                }
            }
        },
    }
}
