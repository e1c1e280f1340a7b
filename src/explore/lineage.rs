//! The lineage picture of an entry's page (`spec/explorer.md` §2.3): its ancestors and
//! descendants to [`DEPTH`] hops over the verified index, drawn by [`super::graph`].

use super::graph;
use super::{Explorer, Indexed};
use maud::{html, Markup};
use std::collections::{HashSet, VecDeque};

/// Hops drawn above and below the entry.
pub(super) const DEPTH: i32 = 3;
/// Boxes drawn on each side of the entry at most (nearest first).
pub(super) const MAX_SIDE: usize = 40;

/// The `#lineage` section of the page of leaf `i`.
pub(super) fn picture(x: &Explorer, ix: &Indexed, i: u64) -> Markup {
    let policy = x.ledger.label_policy();
    let mut nodes = vec![(i, 0)];
    let (up, up_more) = walk(i, -1, |l| {
        ix.index
            .row(l)
            .and_then(|r| r.shape.as_ref())
            .map(|s| s.parents.iter().filter_map(|(_, leaf, _)| *leaf).collect())
            .unwrap_or_default()
    });
    let (down, down_more) = walk(i, 1, |l| ix.index.children(l).to_vec());
    nodes.extend(up);
    nodes.extend(down);
    let drawn: HashSet<u64> = nodes.iter().map(|(l, _)| *l).collect();
    let mut edges = Vec::new();
    for c in &drawn {
        let Some(s) = ix.index.row(*c).and_then(|r| r.shape.as_ref()) else {
            continue;
        };
        let mut seen = HashSet::new();
        for (_, p, w) in &s.parents {
            if let Some(p) = p.filter(|p| drawn.contains(p)) {
                if seen.insert(p) {
                    edges.push((p, *c, policy.is_strong(*w)));
                }
            }
        }
    }
    edges.sort_unstable();
    let sources: HashSet<u64> = ix
        .poison
        .flags
        .iter()
        .map(|f| f.flag.source_index)
        .filter(|s| drawn.contains(s))
        .collect();
    html! {
        h2 id="lineage" { "Lineage picture" }
        p { "Ancestors (above) and descendants (below) to " (DEPTH) " hops: " (nodes.len())
            " entries drawn"
            @if up_more || down_more { ", the nearest " (MAX_SIDE) " on a side; the lists below \
                                        name every parent and child" }
            "." }
        (graph::svg(x, &nodes, &edges, Some(i), &sources))
    }
}

/// Breadth-first from `start` over `next` to [`DEPTH`] hops: (leaf, layer = hops × `dir`), at
/// most [`MAX_SIDE`], and whether more were left out.
fn walk(start: u64, dir: i32, next: impl Fn(u64) -> Vec<u64>) -> (Vec<(u64, i32)>, bool) {
    let mut seen = HashSet::from([start]);
    let mut out = Vec::new();
    let mut queue = VecDeque::from([(start, 0)]);
    while let Some((cur, d)) = queue.pop_front() {
        if d == DEPTH {
            continue;
        }
        for n in next(cur) {
            if seen.insert(n) {
                if out.len() == MAX_SIDE {
                    return (out, true);
                }
                out.push((n, (d + 1) * dir));
                queue.push_back((n, d + 1));
            }
        }
    }
    (out, false)
}
