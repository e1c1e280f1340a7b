//! Lineage pictures as server-rendered SVG (`spec/explorer.md` §2.4, §2.3): layered, parents
//! above children, each layer ordered to cross few edges (barycentre sweeps), edges thick when
//! strong (`w > τ`). Boxes say the kind, leaf index, label and writer (a quoted name, cut), and
//! link to the entry's page; no entry text reaches the picture. A legend says what the colours,
//! lines and borders mean.

use super::index::ledger_label;
use super::Explorer;
use crate::quote;
use maud::{html, Markup};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Boxes drawn at most; the rest is listed, not drawn.
pub(super) const MAX_NODES: usize = 300;

const BOX_W: i64 = 150;
const BOX_H: i64 = 48;
const GAP_X: i64 = 18;
const GAP_Y: i64 = 44;
const MARGIN: i64 = 10;
/// Characters of a writer's quoted name shown in a box.
const NAME_CHARS: usize = 18;
/// Barycentre sweeps (down and up) ordering the layers.
const SWEEPS: usize = 4;

/// Draws `nodes` (leaf, layer: smaller above) with `edges` (parent leaf, child leaf, strong);
/// `focus` gets a blue border, `sources` (flagged sources) a red one.
pub(super) fn svg(
    x: &Explorer,
    nodes: &[(u64, i32)],
    edges: &[(u64, u64, bool)],
    focus: Option<u64>,
    sources: &HashSet<u64>,
) -> Markup {
    let drawn = &nodes[..nodes.len().min(MAX_NODES)];
    let layers = order(drawn, edges);
    let widest = layers.iter().map(Vec::len).max().unwrap_or(1) as i64;
    let w = 2 * MARGIN + widest * (BOX_W + GAP_X) - GAP_X;
    let h = 2 * MARGIN + (layers.len() as i64).max(1) * (BOX_H + GAP_Y) - GAP_Y;
    let mut at: HashMap<u64, (i64, i64)> = HashMap::new();
    for (d, layer) in layers.iter().enumerate() {
        // Each layer centred under the widest.
        let left = MARGIN + (widest - layer.len() as i64) * (BOX_W + GAP_X) / 2;
        for (n, leaf) in layer.iter().enumerate() {
            let px = left + n as i64 * (BOX_W + GAP_X);
            at.insert(*leaf, (px, MARGIN + d as i64 * (BOX_H + GAP_Y)));
        }
    }
    html! {
        svg.reach xmlns="http://www.w3.org/2000/svg" width=(w) height=(h)
            viewBox=(format!("0 0 {w} {h}")) role="img" aria-label="lineage picture" {
            @for (p, c, strong) in edges {
                @if let (Some((px, py)), Some((cx, cy))) = (at.get(p), at.get(c)) {
                    line class=(if *strong { "strong" } else { "weak" })
                        x1=(px + BOX_W / 2) y1=(py + BOX_H) x2=(cx + BOX_W / 2) y2=(cy) {}
                }
            }
            @for layer in &layers { @for leaf in layer {
                @if let (Some((px, py)), Some(row)) = (at.get(leaf), x.row(*leaf)) {
                    @let label = ledger_label(&x.ledger, &row)
                        .map_or("unverified".to_string(), |l| l.name().to_ascii_lowercase());
                    @let class = node_class(&label, sources.contains(leaf), focus == Some(*leaf));
                    @let kind = row.shape.as_ref().map_or("unverified", |s| s.kind.name());
                    @let writer = row.shape.as_ref().map(|s| super::index::writer_name(&x.ledger, &s.writer));
                    a href=(format!("/entry/{}", row.id)) {
                        title { (kind) " #" (leaf) @if let Some(w) = &writer { ", written by " (quote::name(w).to_string()) } }
                        rect class=(class) x=(px) y=(py) width=(BOX_W) height=(BOX_H) rx="4" {}
                        text x=(px + 6) y=(py + 14) { (kind) " #" (leaf) }
                        text x=(px + 6) y=(py + 28) { (label.to_ascii_uppercase()) }
                        @if let Some(w) = &writer {
                            text x=(px + 6) y=(py + 42) { (cut(&quote::name(w).literal())) }
                        }
                    }
                }
            } }
        }
        (legend(focus.is_some()))
    }
}

/// The classes of a box: its label's colour, and the borders of a source and of the focus.
fn node_class(label: &str, source: bool, focus: bool) -> String {
    let mut class = format!("n-{label}");
    if source {
        class.push_str(" n-source");
    }
    if focus {
        class.push_str(" n-focus");
    }
    class
}

/// What the picture's colours, lines and borders mean.
fn legend(with_focus: bool) -> Markup {
    html! {
        ul.legend {
            li { span.sw.l-trusted {} "TRUSTED" }
            li { span.sw.l-derived_trusted {} "DERIVED_TRUSTED" }
            li { span.sw.l-derived_untrusted {} "DERIVED_UNTRUSTED" }
            li { span.sw.l-external {} "EXTERNAL" }
            li { span.sw.l-unverified {} "UNVERIFIED (did not verify)" }
            li { span.edge.strong {} "strong edge (w > τ): carries labels" }
            li { span.edge.weak {} "weak edge" }
            li { span.sw.source {} "red border: a flagged source" }
            @if with_focus { li { span.sw.focus {} "blue border: this entry" } }
            li { "parents above their children; each box links to its entry" }
        }
    }
}

/// `s` cut after [`NAME_CHARS`] characters, marked with "…".
fn cut(s: &str) -> String {
    let mut c = s.chars();
    let head: String = c.by_ref().take(NAME_CHARS).collect();
    if c.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

/// The layers top to bottom, each ordered by the barycentre of its neighbours in the layer
/// above (sweeping down) and below (sweeping up), starting from leaf order.
fn order(nodes: &[(u64, i32)], edges: &[(u64, u64, bool)]) -> Vec<Vec<u64>> {
    let mut by_layer: BTreeMap<i32, Vec<u64>> = BTreeMap::new();
    for (leaf, layer) in nodes {
        by_layer.entry(*layer).or_default().push(*leaf);
    }
    let mut layers: Vec<Vec<u64>> = by_layer.into_values().collect();
    for l in &mut layers {
        l.sort_unstable();
        l.dedup();
    }
    let mut up: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut down: HashMap<u64, Vec<u64>> = HashMap::new();
    for (p, c, _) in edges {
        down.entry(*p).or_default().push(*c);
        up.entry(*c).or_default().push(*p);
    }
    let n = layers.len();
    for sweep in 0..SWEEPS {
        // (fixed layer, moving layer) pairs: down from the top, or up from the bottom.
        let pairs: Vec<(usize, usize)> = if sweep % 2 == 0 {
            (1..n).map(|k| (k - 1, k)).collect()
        } else {
            (0..n.saturating_sub(1)).rev().map(|k| (k + 1, k)).collect()
        };
        let near = if sweep % 2 == 0 { &up } else { &down };
        for (fixed, moving) in pairs {
            let pos: HashMap<u64, usize> = layers[fixed]
                .iter()
                .enumerate()
                .map(|(i, l)| (*l, i))
                .collect();
            let key = |leaf: &u64, i: usize| -> f64 {
                let ps: Vec<usize> = near
                    .get(leaf)
                    .into_iter()
                    .flatten()
                    .filter_map(|n| pos.get(n).copied())
                    .collect();
                if ps.is_empty() {
                    i as f64
                } else {
                    ps.iter().sum::<usize>() as f64 / ps.len() as f64
                }
            };
            let mut keyed: Vec<(f64, usize, u64)> = layers[moving]
                .iter()
                .enumerate()
                .map(|(i, l)| (key(l, i), i, *l))
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            layers[moving] = keyed.into_iter().map(|(_, _, l)| l).collect();
        }
    }
    layers
}

#[cfg(test)]
mod tests {
    use super::order;

    /// Two parents whose children are crossed in leaf order get uncrossed.
    #[test]
    fn barycentre_uncrosses() {
        let nodes = [(0, 0), (1, 0), (2, 1), (3, 1)];
        let edges = [(0, 3, true), (1, 2, true)];
        assert_eq!(order(&nodes, &edges), vec![vec![0, 1], vec![3, 2]]);
    }
}
