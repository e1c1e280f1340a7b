//! The explorer's index of a ledger: each entry's verified shape (kind, writer, time, parents)
//! and its children, built once in the background after the explorer starts serving, from
//! entries whose signatures verified (`spec/explorer.md` §3).

use crate::ledger::{Ledger, LedgerError};
use crate::lineage::quarantine::Reach;
use crate::lineage::{Label, LabelPolicy};
use crate::record::{EntryId, KeyId, Kind, Parent, Weight};
use crate::store::Store;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

/// Entries verified per batch while indexing.
const CHUNK: u64 = 4096;

/// One leaf of the log, as the explorer knows it.
#[derive(Clone, Debug)]
pub struct Row {
    /// The leaf hash of the bytes stored at this index (all zero when none are stored).
    pub id: EntryId,
    /// The verified entry's fields; `None` when the stored bytes did not verify or are not
    /// the entry the sealed index holds at this leaf.
    pub shape: Option<Shape>,
}

/// The fields of a verified entry the pages use.
#[derive(Clone, Debug)]
pub struct Shape {
    /// Its kind.
    pub kind: Kind,
    /// Its writer's key.
    pub writer: KeyId,
    /// Writer-asserted time, milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// Its parents with their weights and leaf indexes (`None`: not in the log).
    pub parents: Vec<(EntryId, Option<u64>, Weight)>,
    /// Its target (tombstones, forensic kinds).
    pub target: Option<EntryId>,
}

/// The index: rows in leaf order, children per leaf, counts.
#[derive(Debug, Default)]
pub struct EntryIndex {
    rows: Vec<Row>,
    children: Vec<Vec<u64>>,
    /// Entries per verified label in [`Label::ALL`] order.
    label_counts: [u64; 4],
    /// Entries that did not verify (each also counted as External in `label_counts`' stead).
    unverified: u64,
    /// Entries per writer key, with the writer's name.
    writers: BTreeMap<KeyId, (String, u64)>,
    /// Verified ids with their leaf, sorted by id (exact and prefix look-ups).
    by_id: Vec<(EntryId, u64)>,
    /// Leaf indexes of tool-call entries.
    tool_calls: Vec<u64>,
}

impl EntryIndex {
    /// Reads and verifies every entry of `ledger` (batch signature checks on all cores),
    /// adding each batch's size to `progress` as it goes.
    ///
    /// # Errors
    /// Store errors. An entry that does not verify is indexed with no shape.
    pub fn build<S: Store>(
        ledger: &Ledger<S>,
        progress: &AtomicU64,
    ) -> Result<EntryIndex, LedgerError> {
        let size = ledger.len();
        let mut ix = EntryIndex {
            rows: Vec::with_capacity(usize::try_from(size).unwrap_or(0)),
            children: vec![Vec::new(); usize::try_from(size).unwrap_or(0)],
            ..EntryIndex::default()
        };
        let mut from = 0;
        while from < size {
            let to = (from + CHUNK).min(size);
            for (i, row) in (from..to).zip(verify_rows(ledger, from, to)?) {
                ix.push(ledger, i, row);
            }
            progress.store(to, Ordering::Relaxed);
            from = to;
        }
        ix.by_id.sort_unstable();
        Ok(ix)
    }

    fn push<S: Store>(&mut self, ledger: &Ledger<S>, i: u64, row: Row) {
        match (&row.shape, ledger_label(ledger, &row)) {
            (Some(s), Some(label)) => {
                self.label_counts[usize::from(label.code())] += 1;
                let w = self
                    .writers
                    .entry(s.writer)
                    .or_insert_with(|| (writer_name(ledger, &s.writer), 0));
                w.1 += 1;
                self.by_id.push((row.id, i));
                if s.kind == Kind::ToolCall {
                    self.tool_calls.push(i);
                }
                for (_, leaf, _) in &s.parents {
                    if let Some(c) = leaf.and_then(|l| usize::try_from(l).ok()) {
                        if let Some(list) = self.children.get_mut(c) {
                            list.push(i);
                        }
                    }
                }
            }
            _ => self.unverified += 1,
        }
        self.rows.push(row);
    }

    /// Number of leaves indexed.
    pub fn len(&self) -> u64 {
        self.rows.len() as u64
    }

    /// Whether no leaf is indexed.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The row at leaf `i`.
    pub fn row(&self, i: u64) -> Option<&Row> {
        self.rows.get(usize::try_from(i).ok()?)
    }

    /// All rows in leaf order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The leaf indexes of the children of leaf `i`, in leaf order.
    pub fn children(&self, i: u64) -> &[u64] {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.children.get(i))
            .map_or(&[], Vec::as_slice)
    }

    /// Entries per verified label, in [`Label::ALL`] order, and the number that did not
    /// verify.
    pub fn label_counts(&self) -> ([u64; 4], u64) {
        (self.label_counts, self.unverified)
    }

    /// Writer keys with their names and entry counts.
    pub fn writers(&self) -> &BTreeMap<KeyId, (String, u64)> {
        &self.writers
    }

    /// The leaf of the verified entry `id`.
    pub fn leaf_of(&self, id: &EntryId) -> Option<u64> {
        let at = self.by_id.binary_search_by(|(e, _)| e.cmp(id)).ok()?;
        self.by_id.get(at).map(|(_, l)| *l)
    }

    /// The verified entries whose id starts with the hex digits `prefix` (lower case), in id
    /// order, at most `max`.
    pub fn with_prefix(&self, prefix: &str, max: usize) -> Vec<(EntryId, u64)> {
        let start = self
            .by_id
            .partition_point(|(e, _)| e.to_string().as_str() < prefix);
        self.by_id[start..]
            .iter()
            .take_while(|(e, _)| e.to_string().starts_with(prefix))
            .take(max)
            .copied()
            .collect()
    }

    /// The verified parents of leaf `i`, as stored (ascending id order), for the lineage
    /// searches that would otherwise read them from the store.
    pub fn parents(&self, id: &EntryId) -> Vec<Parent> {
        self.leaf_of(id)
            .and_then(|l| self.row(l))
            .and_then(|r| r.shape.as_ref())
            .map(|s| {
                s.parents
                    .iter()
                    .map(|(id, _, weight)| Parent {
                        id: *id,
                        weight: *weight,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// What a flag on leaf `source` with `reach` covers: (leaf, depth from the source)
    /// breadth-first from the source, and the edges (parent, child, strong) that carry it,
    /// walking the verified children: over any edge (reach all) or strong edges (reach strong).
    pub fn reach(&self, source: u64, reach: Reach, policy: &LabelPolicy) -> Reached {
        let mut depth: HashMap<u64, u32> = HashMap::from([(source, 0)]);
        let mut nodes = vec![(source, 0)];
        let mut edges = Vec::new();
        let mut queue = VecDeque::from([source]);
        while let Some(cur) = queue.pop_front() {
            let d = depth.get(&cur).copied().unwrap_or(0);
            for c in self.children(cur) {
                let Some(strong) = self.edge(cur, *c, policy) else {
                    continue;
                };
                if reach == Reach::Strong && !strong {
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

    /// Whether the edge from leaf `parent` to its verified child `child` is strong (`None`:
    /// the child did not verify).
    pub fn edge(&self, parent: u64, child: u64, policy: &LabelPolicy) -> Option<bool> {
        let shape = self.row(child)?.shape.as_ref()?;
        Some(
            shape
                .parents
                .iter()
                .filter(|(_, leaf, _)| *leaf == Some(parent))
                .any(|(_, _, w)| policy.is_strong(*w)),
        )
    }

    /// Leaf indexes of tool-call entries, in leaf order.
    pub fn tool_calls(&self) -> &[u64] {
        &self.tool_calls
    }
}

/// What one flag reaches: (leaf, depth from the source) breadth-first from the source, and
/// the edges (parent, child, strong) that carry it.
pub struct Reached {
    /// Reached leaves with their depth, source first.
    pub nodes: Vec<(u64, u32)>,
    /// Edges (parent leaf, child leaf, strong) between reached entries.
    pub edges: Vec<(u64, u64, bool)>,
}

/// The rows of leaves `from..to` (at most the ledger's size), read from the store and
/// verified now: the one way a row is made, for the index built in the background and for a
/// page that shows leaves before it is complete (`spec/explorer.md` §3.2). A leaf has a shape
/// only when its stored bytes verify under their writer's bound key (batch checks on all
/// cores) and their leaf hash is the id the sealed index holds at that leaf; a leaf with no
/// bytes stored has the all-zero id.
///
/// # Errors
/// Store errors while reading bytes.
pub(super) fn verify_rows<S: Store>(
    ledger: &Ledger<S>,
    from: u64,
    to: u64,
) -> Result<Vec<Row>, LedgerError> {
    let to = to.min(ledger.len());
    let bytes = (from..to)
        .map(|i| ledger.store().entry_bytes(i))
        .collect::<Result<Vec<_>, _>>()?;
    let present: Vec<&[u8]> = bytes.iter().flatten().map(Vec::as_slice).collect();
    let mut decoded = ledger.decode_many(&present).into_iter();
    let mut rows = Vec::with_capacity(bytes.len());
    for (i, b) in (from..to).zip(&bytes) {
        let Some(b) = b else {
            rows.push(Row {
                id: EntryId::default(),
                shape: None,
            });
            continue;
        };
        let e = decoded.next().and_then(Result::ok);
        let id = e.as_ref().map_or_else(|| EntryId::of_cose(b), |e| e.id());
        let shape = e
            .filter(|_| ledger.index_of(&id) == Some(i))
            .map(|e| shape_of(ledger, e.entry()));
        rows.push(Row { id, shape });
    }
    Ok(rows)
}

/// The label to show for `row`: the sealed, verified one, or `None` (shown `UNVERIFIED`,
/// counted as External) when the row did not verify.
pub(super) fn ledger_label<S: Store>(ledger: &Ledger<S>, row: &Row) -> Option<Label> {
    row.shape.as_ref()?;
    ledger.label(&row.id)
}

/// The principal name bound to `key`, or its short hex when unbound.
pub(super) fn writer_name<S: Store>(ledger: &Ledger<S>, key: &KeyId) -> String {
    match ledger.principal(key) {
        Some((_, name)) => name.to_string(),
        None => format!("unbound {}", key.short()),
    }
}

fn shape_of<S: Store>(ledger: &Ledger<S>, e: &crate::record::ProvEntry) -> Shape {
    Shape {
        kind: e.kind,
        writer: e.writer,
        time_ms: e.time_ms,
        parents: e
            .parents
            .iter()
            .map(|p| (p.id, ledger.index_of(&p.id), p.weight))
            .collect(),
        target: e.target,
    }
}
