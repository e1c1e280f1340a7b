//! Forensics: receipts. For a quarantined or untrusted entry, the shortest lineage path back to
//! its source, as a sentence in plain words and as a Graphviz DOT picture
//! (`spec/forensics.md` §3).
//!
//! Example sentence: "the send_money call (parameter `recipient`) was justified by memory 41
//! (written by agent `agent`), summarised from tool output 17 (written by tool
//! `tool:read_file`), which the advisory flagged: `forum thread was a prompt injection`". Names
//! and the reason are quoted literals ([`crate::quote`]): no name can read as more of the
//! sentence.
//!
//! Tie rule: see [`crate::lineage::quarantine::Quarantine::path_to_source`] (one reach per path,
//! breadth-first, parents in ascending id order) and [`Ledger::untrusted_path`]. The flag
//! cited is the earliest active one, in log order, on the path's source with the path's reach.

use crate::gate::LineageDenial;
use crate::ledger::{Ledger, LedgerError};
use crate::lineage::Label;
use crate::quote::{self, Quoted};
use crate::record::{EntryId, Kind};
use crate::store::Store;
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

/// Why the receipt's tip is suspect.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cause {
    /// A flag quarantined the source; `reason` is the flag entry's content.
    Flagged {
        /// The flag entry.
        flag: EntryId,
        /// The advisory's reason as recorded (lossy UTF-8; empty when redacted).
        reason: String,
    },
    /// The source is External (written by a tool or external principal).
    External,
}

/// One hop of a receipt path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The entry.
    pub id: EntryId,
    /// Its leaf index (the number used in sentences).
    pub index: u64,
    /// Its kind.
    pub kind: Kind,
    /// Its writer's role name and principal name.
    pub writer: (String, String),
    /// Its label.
    pub label: Label,
    /// The weight of the edge from this hop to the next one towards the tip, in millionths
    /// (`None` for the tip).
    pub weight_to_next: Option<u32>,
}

/// A receipt: path from the source (first) to the tip (last), and why the source is suspect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// Source first, tip last; never empty.
    pub path: Vec<Hop>,
    /// Why the source is suspect.
    pub cause: Cause,
    /// The gate denial this receipt explains, if it was made for one: (tool, parameter).
    pub call: Option<(String, String)>,
}

/// A receipt could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiptError {
    /// The entry is neither quarantined nor untrusted: there is nothing to explain.
    #[error("entry {0} is neither quarantined nor untrusted")]
    Clean(EntryId),
    /// Reading the ledger failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// Graphviz `dot` is not installed (install it with `apt-get install graphviz`, or
    /// `brew install graphviz`) or failed.
    #[error("graphviz `dot` failed or is not installed (apt-get install graphviz): {detail}")]
    Dot {
        /// The error running it, or what it wrote on standard error when it failed.
        detail: String,
    },
}

/// The receipt of `id`: the quarantine path if it is quarantined, else the untrusted path.
///
/// # Errors
/// [`ReceiptError::Clean`] when `id` is neither; ledger errors (unknown entry, store).
pub fn receipt<S: Store>(ledger: &Ledger<S>, id: &EntryId) -> Result<Receipt, ReceiptError> {
    if let Some((path, reach)) = ledger.quarantine_path(id)? {
        let source = path.first().copied().unwrap_or(*id);
        // The earliest active flag on the source whose reach the path follows.
        let flag = ledger
            .quarantine()
            .flags_on(&source)
            .iter()
            .find(|f| f.reach == reach)
            .map(|f| f.entry)
            .unwrap_or(source);
        let reason = match ledger.get(&flag) {
            Ok(e) => ledger
                .content(&e)?
                .map(|c| String::from_utf8_lossy(&c).into_owned())
                .unwrap_or_default(),
            Err(_) => String::new(),
        };
        return Ok(Receipt {
            path: hops(ledger, &path)?,
            cause: Cause::Flagged { flag, reason },
            call: None,
        });
    }
    let path = ledger.untrusted_path(id)?;
    if path.is_empty() {
        return Err(ReceiptError::Clean(*id));
    }
    Ok(Receipt {
        path: hops(ledger, &path)?,
        cause: Cause::External,
        call: None,
    })
}

/// The receipt of a gate denial: the offending entry's receipt, with the call named.
///
/// # Errors
/// As [`receipt`]; [`ReceiptError::Clean`] for a denial with no entry (unsourced argument).
pub fn for_denial<S: Store>(
    ledger: &Ledger<S>,
    denial: &LineageDenial,
) -> Result<Receipt, ReceiptError> {
    let Some(entry) = denial.entry else {
        return Err(ReceiptError::Clean(EntryId::default()));
    };
    let mut r = receipt(ledger, &entry)?;
    r.call = Some((denial.tool.clone(), denial.param.clone()));
    Ok(r)
}

fn hops<S: Store>(ledger: &Ledger<S>, path: &[EntryId]) -> Result<Vec<Hop>, LedgerError> {
    let mut out = Vec::with_capacity(path.len());
    for (i, id) in path.iter().enumerate() {
        let e = ledger.get(id)?;
        let writer = match ledger.principal(&e.writer()) {
            Some((role, name)) => (role.name().to_string(), name.to_string()),
            None => ("unbound".to_string(), e.writer().short()),
        };
        let weight_to_next = match path.get(i + 1) {
            Some(next) => ledger
                .parents_of(next)?
                .iter()
                .find(|p| p.id == *id)
                .map(|p| p.weight.millionths()),
            None => None,
        };
        out.push(Hop {
            id: *id,
            index: ledger.index_of(id).ok_or(LedgerError::UnknownEntry(*id))?,
            kind: e.entry().kind,
            writer,
            label: ledger.label(id).ok_or(LedgerError::UnknownEntry(*id))?,
            weight_to_next,
        });
    }
    Ok(out)
}

/// The noun a sentence uses for an entry of `kind`.
fn noun(kind: Kind) -> &'static str {
    match kind {
        Kind::Prompt => "prompt",
        Kind::ToolResult => "tool output",
        Kind::Summary => "memory",
        Kind::Fact => "fact",
        Kind::ToolCall => "tool call",
        Kind::Replacement => "replacement",
        Kind::Context => "session context",
        _ => "entry",
    }
}

/// How an entry of `kind` was made from its parent.
fn verb(kind: Kind) -> &'static str {
    match kind {
        Kind::Summary => "summarised from",
        Kind::ToolCall => "justified by",
        Kind::ToolResult => "produced by",
        Kind::Replacement => "rebuilt from",
        Kind::Context => "covering",
        _ => "derived from",
    }
}

impl Hop {
    fn phrase(&self, out: &mut Vec<Piece>) {
        out.push(Piece::Words(format!(
            "{} {} (written by {} ",
            noun(self.kind),
            self.index,
            self.writer.0
        )));
        out.push(Piece::Literal(quote::name(&self.writer.1)));
        out.push(Piece::Words(")".into()));
    }
}

/// A piece of a receipt sentence: the sentence's own words, or a name or reason as a quoted
/// literal (`crate::quote`, `spec/forensics.md` §3.1).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Piece {
    /// Words of the sentence itself.
    Words(String),
    /// A name or reason, quoted.
    Literal(Quoted),
}

impl std::fmt::Display for Piece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Piece::Words(w) => f.write_str(w),
            Piece::Literal(q) => write!(f, "{q}"),
        }
    }
}

impl Receipt {
    /// The path as one sentence, tip first, e.g. "memory 41 (written by agent `agent`) was
    /// summarised from tool output 17 (written by tool `tool:read_file`), which the advisory
    /// flagged: `…`". Names and the reason are quoted literals ([`crate::quote`]).
    pub fn sentence(&self) -> String {
        self.pieces().iter().map(Piece::to_string).collect()
    }

    /// The sentence of [`Receipt::sentence`] as pieces, its quoted literals apart (for a
    /// page that shows them as such).
    pub fn pieces(&self) -> Vec<Piece> {
        let mut s = Vec::new();
        let mut hops = self.path.iter().rev();
        let Some(tip) = hops.next() else {
            return s;
        };
        if let Some((tool, param)) = &self.call {
            s.push(Piece::Words("the ".into()));
            s.push(Piece::Literal(quote::word(tool)));
            s.push(Piece::Words(" call (parameter ".into()));
            s.push(Piece::Literal(quote::name(param)));
            s.push(Piece::Words(") was justified by ".into()));
        }
        tip.phrase(&mut s);
        let mut child = tip;
        let mut first = self.call.is_none();
        for hop in hops {
            let sep = if first { " was" } else { "," };
            first = false;
            s.push(Piece::Words(format!("{sep} {} ", verb(child.kind))));
            hop.phrase(&mut s);
            child = hop;
        }
        let single = self.path.len() == 1 && self.call.is_none();
        let ending = match (&self.cause, single) {
            (Cause::Flagged { .. }, true) => " is flagged by an advisory",
            (Cause::Flagged { .. }, false) => ", which the advisory flagged",
            (Cause::External, true) => " is External (untrusted input)",
            (Cause::External, false) => ", which is External (untrusted input)",
        };
        s.push(Piece::Words(ending.into()));
        if let Cause::Flagged { reason, .. } = &self.cause {
            if !reason.is_empty() {
                s.push(Piece::Words(": ".into()));
                s.push(Piece::Literal(quote::reason(reason)));
            }
        }
        s
    }

    /// The path as a Graphviz DOT digraph: source at the top, edges labelled with weights, the
    /// source filled red (flagged) or orange (External). Node ids are `e<index>`; all text is
    /// escaped, so entry content never reaches the picture.
    pub fn to_dot(&self) -> String {
        let mut s = String::from(
            "digraph receipt {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n",
        );
        for (i, h) in self.path.iter().enumerate() {
            let fill = match (i, &self.cause) {
                (0, Cause::Flagged { .. }) => ", style=filled, fillcolor=\"#f4a6a6\"",
                (0, Cause::External) => ", style=filled, fillcolor=\"#f8d49a\"",
                _ => "",
            };
            let _ = writeln!(
                s,
                "  e{} [label=\"{} {}\\n{} {}\\n{}\"{}];",
                h.index,
                dot_escape(noun(h.kind)),
                h.index,
                dot_escape(&h.writer.0),
                dot_escape(&h.writer.1),
                h.label,
                fill
            );
        }
        for pair in self.path.windows(2) {
            let w = pair[0]
                .weight_to_next
                .map(|m| format!("{}.{:06}", m / 1_000_000, m % 1_000_000))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  e{} -> e{} [label=\"w={}\"];",
                pair[0].index, pair[1].index, w
            );
        }
        if let Some((tool, param)) = &self.call {
            if let Some(tip) = self.path.last() {
                let _ = writeln!(
                    s,
                    "  call [shape=octagon, label=\"{}({})\", style=filled, fillcolor=\"#dddddd\"];\n  e{} -> call;",
                    dot_escape(tool),
                    dot_escape(param),
                    tip.index
                );
            }
        }
        s.push_str("}\n");
        s
    }
}

fn dot_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Renders DOT to SVG with Graphviz's `dot -Tsvg` (found on `PATH`).
///
/// # Errors
/// [`ReceiptError::Dot`] when `dot` is missing or fails (install: `apt-get install graphviz`).
pub fn render_svg(dot: &str) -> Result<String, ReceiptError> {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ReceiptError::Dot {
            detail: e.to_string(),
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(dot.as_bytes())
            .map_err(|e| ReceiptError::Dot {
                detail: e.to_string(),
            })?;
    }
    let out = child.wait_with_output().map_err(|e| ReceiptError::Dot {
        detail: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(ReceiptError::Dot {
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    String::from_utf8(out.stdout).map_err(|e| ReceiptError::Dot {
        detail: e.to_string(),
    })
}
