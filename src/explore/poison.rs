//! What is poisoned, computed once by the background indexing (`spec/explorer.md` §3.4): the
//! size of each active flag's reach, and every quarantined entry grouped under the source its
//! receipt path starts from. Pages read these; none walks the log per request. Receipt
//! sentences are made the first time a page shows them and kept.

use super::index::EntryIndex;
use crate::forensics::receipt::{receipt, Piece};
use crate::ledger::Ledger;
use crate::lineage::quarantine::{Flag, Reach};
use crate::record::EntryId;
use crate::store::Store;
use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::Mutex;

/// Receipts kept at most; past that they are made again when shown.
const MAX_KEPT_RECEIPTS: usize = 200_000;

/// An active flag and the number of entries its reach covers (its source included).
#[derive(Clone, Copy, Debug)]
pub(super) struct FlagRow {
    pub flag: Flag,
    pub reached: u64,
}

/// A flagged source and the quarantined entries whose receipt starts from it.
#[derive(Clone, Debug)]
pub(super) struct Group {
    /// The source's leaf and id.
    pub source: (u64, EntryId),
    /// The earliest active flag on the source (the one its receipts cite for reach all, or
    /// else for reach strong).
    pub flag: Option<Flag>,
    /// Its members (the source first when it is quarantined itself), in leaf order.
    pub members: Vec<(u64, EntryId)>,
}

/// The order of the groups on the landing page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(super) enum Sort {
    /// Largest group first (ties: source in leaf order).
    #[default]
    Largest,
    /// Sources in leaf order.
    Source,
    /// Newest source first.
    Newest,
}

impl Sort {
    /// Every order, with the name its query value is.
    pub(super) const ALL: [(Sort, &'static str); 3] = [
        (Sort::Largest, "largest"),
        (Sort::Source, "source"),
        (Sort::Newest, "newest"),
    ];

    /// Parses a `sort=` value.
    pub(super) fn from_name(s: &str) -> Option<Sort> {
        Sort::ALL.iter().find(|(_, n)| *n == s).map(|(o, _)| *o)
    }

    /// Its query value.
    pub(super) fn name(self) -> &'static str {
        Sort::ALL
            .iter()
            .find(|(o, _)| *o == self)
            .map_or("largest", |(_, n)| n)
    }
}

/// The poison of a ledger as the explorer opened it.
#[derive(Debug, Default)]
pub(super) struct Poison {
    /// Active flags, largest reach first, then in log order.
    pub flags: Vec<FlagRow>,
    /// Groups in source leaf order.
    pub groups: Vec<Group>,
    /// Quarantined entries in all.
    pub entries: usize,
}

impl Poison {
    /// Computes reach sizes (once per distinct source and reach) over the verified index, and
    /// the receipt source of every quarantined entry (the receipts' own search and tie rule,
    /// `Quarantine::path_to_source`, over the index's verified parents).
    pub(super) fn build<S: Store>(ledger: &Ledger<S>, index: &EntryIndex) -> Poison {
        let policy = ledger.label_policy();
        let q = ledger.quarantine();
        let mut sizes: HashMap<(u64, Reach), u64> = HashMap::new();
        let mut flags: Vec<FlagRow> = q
            .flags()
            .map(|f| {
                let reached = *sizes.entry((f.source_index, f.reach)).or_insert_with(|| {
                    index.reach(f.source_index, f.reach, &policy).nodes.len() as u64
                });
                FlagRow { flag: *f, reached }
            })
            .collect();
        flags.sort_by(|a, b| {
            b.reached
                .cmp(&a.reached)
                .then(a.flag.index.cmp(&b.flag.index))
        });
        let leaf = |id: &EntryId| index.leaf_of(id).or_else(|| ledger.index_of(id));
        let mut groups: BTreeMap<u64, Group> = BTreeMap::new();
        let all = q.entries();
        for id in &all {
            let Some(at) = leaf(id) else { continue };
            let path = q
                .path_to_source(id, &policy, |p| Ok::<_, Infallible>(index.parents(p)))
                .unwrap_or_else(|e| match e {});
            let source = path.and_then(|(p, _)| p.first().copied()).unwrap_or(*id);
            let s_at = leaf(&source).unwrap_or(at);
            groups
                .entry(s_at)
                .or_insert_with(|| Group {
                    source: (s_at, source),
                    flag: earliest_flag(&q.flags_on(&source)),
                    members: Vec::new(),
                })
                .members
                .push((at, *id));
        }
        let mut groups: Vec<Group> = groups.into_values().collect();
        for g in &mut groups {
            g.members.sort_unstable();
        }
        Poison {
            flags,
            groups,
            entries: all.len(),
        }
    }

    /// The groups in `sort` order.
    pub(super) fn sorted(&self, sort: Sort) -> Vec<&Group> {
        let mut g: Vec<&Group> = self.groups.iter().collect();
        match sort {
            Sort::Largest => g.sort_by(|a, b| {
                b.members
                    .len()
                    .cmp(&a.members.len())
                    .then(a.source.0.cmp(&b.source.0))
            }),
            Sort::Source => {}
            Sort::Newest => g.reverse(),
        }
        g
    }

    /// Makes and keeps in `kept` the receipts of the first `rows` rows of the landing page
    /// (default order).
    pub(super) fn warm<S: Store>(&self, ledger: &Ledger<S>, kept: &ReceiptCache, rows: usize) {
        for g in self.sorted(Sort::default()) {
            for (_, id) in &g.members {
                if kept.len() >= rows {
                    return;
                }
                let _ = kept.get(ledger, id);
            }
        }
    }
}

/// The flag the receipts of a group cite: the earliest active one on the source, reach all
/// first (a path of reach all wins ties).
fn earliest_flag(on: &[Flag]) -> Option<Flag> {
    on.iter()
        .find(|f| f.reach == Reach::All)
        .or_else(|| on.first())
        .copied()
}

/// Receipt sentences already made, shared by every reader.
#[derive(Debug, Default)]
pub(super) struct ReceiptCache(Mutex<HashMap<EntryId, Result<Vec<Piece>, String>>>);

impl ReceiptCache {
    /// Receipts kept.
    pub(super) fn len(&self) -> usize {
        super::lock(&self.0).len()
    }

    /// The receipt of `id` as pieces, made once and kept (an error as its sentence).
    pub(super) fn get<S: Store>(
        &self,
        ledger: &Ledger<S>,
        id: &EntryId,
    ) -> Result<Vec<Piece>, String> {
        if let Some(r) = super::lock(&self.0).get(id) {
            return r.clone();
        }
        let r = receipt(ledger, id)
            .map(|r| r.pieces())
            .map_err(|e| e.to_string());
        let mut kept = super::lock(&self.0);
        if kept.len() < MAX_KEPT_RECEIPTS {
            kept.insert(*id, r.clone());
        }
        r
    }
}
