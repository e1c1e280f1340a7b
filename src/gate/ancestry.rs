//! An entry's ancestry kept between origin checks (`spec/gate.md` §3.3): every entry reachable
//! from it over every recorded edge, grouped by what the check's class of an entry depends on
//! apart from the policy (label and writer), so that a check whose justification a view has
//! seen before decides "passes" from the groups that can matter, not by visiting every
//! ancestor.

use super::*;

/// Every entry reachable from one entry over every recorded edge, itself included, grouped by
/// (label, writer role, writer name). Built only when every one of them is in the log and its
/// bytes and writer verified: an ancestry with an entry that did not is walked at every check.
///
/// Made only by the gate (a view keeps what `build` gave it, `OriginView::ancestry`): no
/// `Default`, no constructor, so a view cannot hand the check an ancestry that leaves entries
/// out.
#[derive(Debug)]
pub struct Ancestry {
    groups: Vec<Group>,
    entries: usize,
}

#[derive(Debug)]
struct Group {
    label: Label,
    role: Role,
    name: String,
    ids: Vec<EntryId>,
}

impl Ancestry {
    /// The ancestry of `id` as `view` shows it now, breadth first over every recorded edge;
    /// `None` when an entry of it is not in the log or did not verify (its parents then
    /// cannot be known).
    pub(super) fn build(id: &EntryId, view: &impl OriginView) -> Option<Ancestry> {
        let mut visited: BTreeSet<EntryId> = BTreeSet::from([*id]);
        let mut queue = VecDeque::from([*id]);
        let mut index: HashMap<(Label, Role, String), usize> = HashMap::new();
        let mut a = Ancestry {
            groups: Vec::new(),
            entries: 0,
        };
        while let Some(cur) = queue.pop_front() {
            let e = view.origin_entry(&cur);
            let (Some(label), Some((role, name))) = (e.label, e.writer) else {
                return None;
            };
            let at = *index.entry((label, role, name.clone())).or_insert_with(|| {
                a.groups.push(Group {
                    label,
                    role,
                    name,
                    ids: Vec::new(),
                });
                a.groups.len() - 1
            });
            a.groups[at].ids.push(cur);
            a.entries += 1;
            for p in e.parents.iter() {
                if visited.insert(*p) {
                    queue.push_back(*p);
                }
            }
        }
        Some(a)
    }

    /// Every entry it holds, by group.
    pub fn ids(&self) -> impl Iterator<Item = &EntryId> {
        self.groups.iter().flat_map(|g| g.ids.iter())
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether it holds none (never true of a built ancestry: the entry itself is in it).
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }
}

impl Policy {
    /// Whether the argument `param` with `value` and justifying `entries` certainly passes the
    /// origin check (§3.1 step 5), decided from the ancestries `view` kept of the justifying
    /// entries: an entry with authority holds the value, or no entry untrusted for `param`
    /// holds it or justifies it. `false` when that cannot be told this way (no value, an
    /// ancestry not kept or not buildable) or the argument might be refused: the caller then
    /// walks (§3.1), which also names the path of a refusal.
    ///
    /// The same answer as the walk's: both look at the same entries (the union of the
    /// justifying entries' ancestries over every recorded edge), the class of each as
    /// `origin_class` counts it, and the same two existence questions; only the order
    /// differs, which matters for the path of a refusal alone.
    pub(super) fn passes_by_ancestry(
        &self,
        call: &ToolCall,
        param: &str,
        entries: &[EntryId],
        value: Option<&Value>,
        view: &impl OriginView,
    ) -> bool {
        let Some(value) = value else {
            return false;
        };
        let tool = call.tool.as_str();
        let mut kept = Vec::with_capacity(entries.len());
        for id in entries {
            match view.ancestry(id, &mut || Ancestry::build(id, view)) {
                Some(a) => kept.push(a),
                None => return false,
            }
        }
        let max = self.max_label(tool, param);
        let holds = |id: &EntryId| view.origin_entry(id).text.holds(value);
        // Each group's class for this parameter, computed once.
        let classes: Vec<Vec<(bool, Label)>> = kept
            .iter()
            .map(|a| {
                a.groups
                    .iter()
                    .map(|g| self.writer_class(tool, param, g.label, g.role, &g.name))
                    .collect()
            })
            .collect();
        let groups = || {
            kept.iter()
                .zip(&classes)
                .flat_map(|(a, c)| a.groups.iter().zip(c.iter().copied()))
        };
        // An entry with authority (live, readable) that holds the value: the argument passes.
        let mut asked: BTreeSet<EntryId> = BTreeSet::new();
        for (g, (authority, _)) in groups() {
            if !authority {
                continue;
            }
            for id in &g.ids {
                if asked.insert(*id) {
                    let e = view.origin_entry(id);
                    if e.live && e.text.is_readable() && e.text.holds(value) {
                        return true;
                    }
                }
            }
        }
        // Otherwise it passes when no entry counted worse than allowed holds the value or
        // justifies the argument. An authoritative group's entry that is not live or not
        // readable is counted as its group is.
        for (g, (authority, counted)) in groups() {
            if counted <= max {
                continue;
            }
            for id in &g.ids {
                if authority {
                    // Live and readable, it has authority and is never counted (§3.1 step 4).
                    let e = view.origin_entry(id);
                    if e.live && e.text.is_readable() {
                        continue;
                    }
                }
                if entries.contains(id) || holds(id) {
                    return false;
                }
            }
        }
        true
    }
}
