//! One entry's page and its proof bundle (`spec/explorer.md` §2.3).

use super::index::{ledger_label, writer_name, Row};
use super::page::{self, MAX_SHORT_CHARS, MAX_TEXT_CHARS};
use super::{Explorer, Indexed};
use crate::ledger::StoreSource;
use crate::lineage::quarantine::{Flag, Reach};
use crate::log::{prove_inclusion, ProofBundle};
use crate::quote;
use crate::record::{EntryId, Kind};
use maud::{html, Markup};
use std::collections::{HashSet, VecDeque};

/// Children listed on an entry's page; the rest are counted.
const MAX_CHILDREN: usize = 200;

/// The page of the entry at leaf `i`.
pub(super) fn render(x: &Explorer, i: u64, row: &Row) -> Markup {
    let id = row.id;
    let label = ledger_label(&x.ledger, row);
    let title = format!("Entry #{i}");
    let Some(shape) = &row.shape else {
        return page::layout(
            &title,
            html! {
                p.bad { "The bytes stored at leaf " (i) " (leaf hash " code { (id.to_string()) }
                        ") do not verify under their writer's key, or are not the entry the \
                         sealed index holds here. Nothing of it is shown; it counts as "
                         (page::label(None)) ", the worst label, and as quarantined." }
            },
        );
    };
    let quarantined = x.ledger.is_quarantined(&id);
    let tombstoned = x.ledger.is_tombstoned(&id);
    let (role, name) = match x.ledger.principal(&shape.writer) {
        Some((r, n)) => (r.name(), n.to_string()),
        None => ("unbound", writer_name(&x.ledger, &shape.writer)),
    };
    let body = html! {
        table {
            tr { th { "Id" } td { code { (id.to_string()) } } }
            tr { th { "Leaf index" } td { (i) } }
            tr { th { "Kind" } td { (shape.kind.name()) } }
            tr { th { "Writer" } td { (page::quoted(&quote::name(&name))) " (" (role) ") key " code { (shape.writer.short()) } } }
            tr { th { "Time (writer's claim)" } td { (page::time(shape.time_ms)) } }
            tr { th { "Label" } td { (page::label(label)) } }
            tr { th { "State" } td {
                @if tombstoned { "tombstoned " }
                @if quarantined { "quarantined" } @else if !tombstoned { "live" }
            } }
            @if let Some(t) = &shape.target {
                tr { th { "Target" } td { (page::entry_link(t, x.ledger.index_of(t))) } }
            }
            tr { th { "Inclusion" } td { (inclusion(x, &id)) } }
        }
        p { a href=(format!("/entry/{id}/proof")) download=(format!("{}.proof", id.short())) { "Download the proof bundle" }
            " (C2SP tlog-proof: entry, audit path, signed checkpoint; check it with "
            code { "memlineage verify-proof FILE --log-key KEY" } ")" }
        h2 { "Text" }
        (text(x, &id, tombstoned, quarantined))
        h2 { "Why this label" }
        (why(x, &id, label))
        @match x.indexed() {
            Ok(ix) => {
                (super::lineage::picture(x, ix, i))
                @if quarantined { (flags_reaching(x, ix, i)) }
            }
            Err(e) => {
                h2 id="lineage" { "Lineage picture" }
                p.warn { (e.why()) }
                @if quarantined { h2 { "Quarantine" } p.warn { "The flags that reach it are named once every entry is indexed." } }
            }
        }
        @if shape.kind == Kind::ToolCall {
            h2 { "Gate decision" }
            (super::calls::decision_block(x, &id))
        }
        h2 { "Parents" }
        @if shape.parents.is_empty() { p { "None: a root of the lineage graph." } } @else {
            table {
                tr { th { "Parent" } th { "Weight" } th { "Edge" } th { "Label" } }
                @for (p, leaf, w) in &shape.parents {
                    tr {
                        td { (page::entry_link(p, *leaf)) }
                        td { (w.to_string()) }
                        td { @if x.ledger.label_policy().is_strong(*w) { "strong (w > τ)" } @else { "weak" } }
                        td { (page::label(leaf.and_then(|l| x.row(l)).and_then(|r| ledger_label(&x.ledger, &r)))) }
                    }
                }
            }
        }
        h2 { "Children" }
        (children(x, i))
    };
    page::layout(&title, body)
}

/// The inclusion of `id` in the latest verified checkpoint, checked now.
fn inclusion(x: &Explorer, id: &EntryId) -> Markup {
    match bundle(x, id) {
        Ok(b) => html! { span.ok { "verified: leaf " (b.proof.index) " of the checkpoint of size "
        (x.head.checkpoint().map_or(0, |c| c.size())) } },
        Err(e) => html! { span.warn { (e) } },
    }
}

fn text(x: &Explorer, id: &EntryId, tombstoned: bool, quarantined: bool) -> Markup {
    if tombstoned {
        return html! { p.warn { "Tombstoned: its text is withheld (a tombstone deletes an \
        entry from retrieval)." } };
    }
    let text = match x.ledger.verified_text(id) {
        Ok(Some(t)) => t,
        Ok(None) => return html! { p { "Redacted: no content is stored." } },
        Err(e) => {
            return html! { p.bad { "Does not verify, not shown: " (page::hostile(&e.to_string(), MAX_SHORT_CHARS)) } }
        }
    };
    html! {
        @if quarantined {
            p.warn { "Quarantined: shown here for forensics only; retrieval refuses it to agents." }
        }
        p { "Verified against the signed content hash. " (text.len()) " bytes; shown as text, \
             never as markup or links." }
        // A newline right after <pre> is dropped by HTML parsers: this one, not the text's.
        pre.text { "\n" (page::hostile(&text, MAX_TEXT_CHARS)) }
    }
}

/// The explanation path of the label and, when there is one, the receipt sentence.
fn why(x: &Explorer, id: &EntryId, label: Option<crate::lineage::Label>) -> Markup {
    let path = x.ledger.untrusted_path(id).unwrap_or_default();
    let sentence = x.receipt(id);
    html! {
        @match label {
            Some(l) if !l.is_untrusted() => p { "No untrusted ancestor reaches it over \
                                                 label-propagating edges." },
            _ => {
                @if path.is_empty() { p { "No explanation path found." } } @else {
                    p { "Untrusted path, source first: "
                        @for (n, hop) in path.iter().enumerate() {
                            @if n > 0 { " → " }
                            (page::entry_link(hop, x.ledger.index_of(hop)))
                            " " (page::label(x.ledger.label(hop)))
                        }
                    }
                }
            },
        }
        @if let Ok(s) = &sentence {
            p.receipt { "Receipt: " (page::sentence(s)) }
        }
    }
}

/// The active flags that reach leaf `i`: those whose source is `i` or an ancestor over any
/// edge (reach all) or over strong edges only (reach strong).
fn flags_reaching(x: &Explorer, ix: &Indexed, i: u64) -> Markup {
    let all = ancestors(x, ix, i, false);
    let strong = ancestors(x, ix, i, true);
    let flags: Vec<&Flag> = x
        .ledger
        .quarantine()
        .flags()
        .filter(|f| match f.reach {
            Reach::All => all.contains(&f.source_index),
            Reach::Strong => strong.contains(&f.source_index),
        })
        .collect();
    html! {
        h2 { "Quarantine" }
        @if flags.is_empty() {
            p.warn { "Counted as quarantined (fail closed) with no active flag found on its ancestry." }
        } @else {
            p { "Quarantined by:" }
            ul { @for f in flags {
                li { a href=(format!("/quarantine/{}", f.entry)) { "flag #" (f.index) } ", reach "
                     (f.reach.name()) ", on source " (page::entry_link(&f.source, Some(f.source_index))) }
            } }
        }
    }
}

/// Leaf `i` and its ancestors, over every edge or over strong edges only.
fn ancestors(x: &Explorer, ix: &Indexed, i: u64, strong_only: bool) -> HashSet<u64> {
    let policy = x.ledger.label_policy();
    let mut seen = HashSet::from([i]);
    let mut queue = VecDeque::from([i]);
    while let Some(cur) = queue.pop_front() {
        let Some(shape) = ix.index.row(cur).and_then(|r| r.shape.as_ref()) else {
            continue;
        };
        for (_, leaf, w) in &shape.parents {
            if let Some(p) = leaf {
                if (!strong_only || policy.is_strong(*w)) && seen.insert(*p) {
                    queue.push_back(*p);
                }
            }
        }
    }
    seen
}

fn children(x: &Explorer, i: u64) -> Markup {
    let ix = match x.indexed() {
        Ok(ix) => ix,
        Err(e) => return html! { p.warn { (e.why()) } },
    };
    let kids = ix.index.children(i);
    html! {
        @if kids.is_empty() { p { "None." } } @else {
            p { (kids.len()) " entries name it as a parent." }
            ul.children { @for c in kids.iter().take(MAX_CHILDREN) {
                @if let Some(r) = ix.index.row(*c) {
                    li { (page::entry_link(&r.id, Some(*c))) " "
                         (r.shape.as_ref().map_or("?", |s| s.kind.name())) " "
                         (page::label(ledger_label(&x.ledger, r))) }
                }
            } }
            @if kids.len() > MAX_CHILDREN { p { "… and " (kids.len() - MAX_CHILDREN) " more." } }
        }
    }
}

/// The proof bundle of `id` against the latest stored, verified checkpoint, checked before
/// it is handed out. Read only: unlike [`crate::Ledger::prove`], never signs a checkpoint.
///
/// # Errors
/// A sentence for the page: no verified checkpoint, the entry beyond it, or a proof that
/// does not verify.
pub(super) fn bundle(x: &Explorer, id: &EntryId) -> Result<ProofBundle, String> {
    let c = x
        .head
        .checkpoint()
        .ok_or("no verified checkpoint is stored: no proof can be given")?;
    let i = x.ledger.index_of(id).ok_or("unknown entry")?;
    if i >= c.size() {
        return Err(format!(
            "leaf {i} is beyond the latest signed checkpoint (size {}): not yet provable",
            c.size()
        ));
    }
    let proof = prove_inclusion(c.size(), i, &StoreSource(x.ledger.store()))
        .map_err(|e| format!("no inclusion proof: {e}"))?;
    let entry = x
        .ledger
        .get(id)
        .map_err(|e| format!("does not verify: {e}"))?;
    c.verify_inclusion(&entry.id(), &proof)
        .map_err(|e| format!("the inclusion proof does NOT verify: {e}"))?;
    Ok(ProofBundle {
        entry: entry.cose().to_vec(),
        proof,
        checkpoint: c.note().to_vec(),
    })
}
