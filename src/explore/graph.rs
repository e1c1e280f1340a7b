//! The lineage graph of a flag's reach as server-rendered SVG (`spec/explorer.md` §2.4): the
//! source at the top, each entry one row below its nearest parent in the reach, edges drawn
//! from parent to child (thick: strong, `w > τ`). Boxes say only the kind and leaf index, so
//! no entry text reaches the picture; each box links to the entry's page.

use super::index::ledger_label;
use super::Explorer;
use maud::{html, Markup};
use std::collections::HashMap;

/// Boxes drawn at most; the rest of the reach is listed, not drawn.
pub const MAX_NODES: usize = 300;

const BOX_W: u64 = 120;
const BOX_H: u64 = 34;
const GAP_X: u64 = 16;
const GAP_Y: u64 = 40;
const MARGIN: u64 = 10;

/// `reach`: (leaf, depth from the source) in breadth-first order from the source; `edges`:
/// (parent leaf, child leaf, strong) between reached entries.
pub(super) fn svg(
    x: &Explorer,
    source: u64,
    reach: &[(u64, u32)],
    edges: &[(u64, u64, bool)],
) -> Markup {
    let drawn = &reach[..reach.len().min(MAX_NODES)];
    let mut layers: Vec<Vec<u64>> = Vec::new();
    for (leaf, depth) in drawn {
        let d = *depth as usize;
        if layers.len() <= d {
            layers.resize(d + 1, Vec::new());
        }
        layers[d].push(*leaf);
    }
    let mut at: HashMap<u64, (u64, u64)> = HashMap::new();
    for (d, layer) in layers.iter_mut().enumerate() {
        layer.sort_unstable();
        for (n, leaf) in layer.iter().enumerate() {
            let px = MARGIN + n as u64 * (BOX_W + GAP_X);
            let py = MARGIN + d as u64 * (BOX_H + GAP_Y);
            at.insert(*leaf, (px, py));
        }
    }
    let widest = layers.iter().map(Vec::len).max().unwrap_or(1) as u64;
    let w = 2 * MARGIN + widest * (BOX_W + GAP_X) - GAP_X;
    let h = 2 * MARGIN + (layers.len() as u64).max(1) * (BOX_H + GAP_Y) - GAP_Y;
    html! {
        svg.reach xmlns="http://www.w3.org/2000/svg" width=(w) height=(h)
            viewBox=(format!("0 0 {w} {h}")) role="img" aria-label="lineage graph of the reach" {
            @for (p, c, strong) in edges {
                @if let (Some((px, py)), Some((cx, cy))) = (at.get(p), at.get(c)) {
                    line class=(if *strong { "strong" } else { "weak" })
                        x1=(px + BOX_W / 2) y1=(py + BOX_H) x2=(cx + BOX_W / 2) y2=(cy) {}
                }
            }
            @for (leaf, _) in drawn {
                @if let (Some((px, py)), Some(row)) = (at.get(leaf), x.index.row(*leaf)) {
                    @let label = ledger_label(&x.ledger, row)
                        .map_or("unverified".to_string(), |l| l.name().to_ascii_lowercase());
                    @let class = if *leaf == source { format!("n-{label} n-source") } else { format!("n-{label}") };
                    a href=(format!("/entry/{}", row.id)) {
                        rect class=(class) x=(px) y=(py) width=(BOX_W) height=(BOX_H) rx="4" {}
                        text x=(px + 6) y=(py + 14) {
                            (row.shape.as_ref().map_or("unverified", |s| s.kind.name()))
                        }
                        text x=(px + 6) y=(py + 28) { "#" (leaf) }
                    }
                }
            }
        }
    }
}
