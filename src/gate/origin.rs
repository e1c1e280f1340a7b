//! The origin of a value (`spec/gate.md` §3.1–3.2): the ancestry of a justification over
//! every recorded edge, the entries that hold the value, and who has authority for it.

use super::matching::Haystack;
use super::*;

impl Policy {
    /// The full gate (`spec/gate.md` §3): the label decision of [`Policy::decide`], then, for
    /// each argument in order, the origin check of §3.1 on its value in `values` (an argument
    /// absent from `values` gets only the writer check of §3.2 on its justifying entries).
    /// Denies with [`DenyReason::UntrustedOrigin`] when an entry in the justification's
    /// ancestry over every recorded edge holds the value and is labelled worse than the
    /// parameter allows (External for a shared-writable writer or an entry that cannot be
    /// verified), unless an entry by a principal with authority for the parameter (the user,
    /// or one [`Policy::is_authoritative`] names) holds it too. Weights play no part.
    ///
    /// Cost: one [`OriginView::origin_node`] per distinct entry in the ancestry of the
    /// justifying entries, plus a text search of each per argument.
    pub fn decide_with_origin(
        &self,
        call: &ToolCall,
        values: &Map<String, Value>,
        view: &impl OriginView,
    ) -> Decision {
        match self.decide(call, view) {
            Decision::Allow => self.check_origin(call, values, view),
            deny => deny,
        }
    }

    /// The origin check of `spec/gate.md` §3.1–3.2 alone, without the label decision (for a
    /// call whose labels were judged otherwise, e.g. after authority repair,
    /// `spec/forensics.md` §7). See [`Policy::decide_with_origin`].
    pub fn check_origin(
        &self,
        call: &ToolCall,
        values: &Map<String, Value>,
        view: &impl OriginView,
    ) -> Decision {
        if !self.is_sensitive(call) {
            return Decision::Allow;
        }
        let mut seen: HashMap<EntryId, Seen> = HashMap::new();
        for (param, entries) in &call.args {
            let found = self.untrusted_origin(
                &call.tool,
                param,
                entries,
                values.get(param),
                view,
                &mut seen,
            );
            if let Some((path, label)) = found {
                let entry = path.last().copied();
                return self.deny(
                    call,
                    param,
                    entry,
                    DenyReason::UntrustedOrigin { label },
                    path,
                );
            }
        }
        Decision::Allow
    }

    /// §3.1 for one argument: the path (untrusted ancestor first, justifying entry last) and
    /// the counted label of the first untrusted holder of `value` found breadth first, or
    /// `None` when there is none or an authority holds the value too.
    fn untrusted_origin(
        &self,
        tool: &str,
        param: &str,
        entries: &[EntryId],
        value: Option<&Value>,
        view: &impl OriginView,
        seen: &mut HashMap<EntryId, Seen>,
    ) -> Option<(Vec<EntryId>, Label)> {
        let max = self.max_label(tool, param);
        let mut prev: HashMap<EntryId, EntryId> = HashMap::new();
        let mut queue: VecDeque<EntryId> = VecDeque::new();
        let mut visited: BTreeSet<EntryId> = BTreeSet::new();
        for id in entries {
            if visited.insert(*id) {
                queue.push_back(*id);
            }
        }
        let mut untrusted: Option<(EntryId, Label)> = None;
        while let Some(cur) = queue.pop_front() {
            let s = seen
                .entry(cur)
                .or_insert_with(|| Seen::new(view.origin_node(&cur)));
            let holds = value.is_some_and(|v| s.holds(v));
            // A justifying entry counts whether or not it holds the value (§3.2: a
            // shared-writable writer's entry is External as a justification too).
            let counts = holds || entries.contains(&cur);
            match self.origin_class(tool, param, &s.node) {
                Class::Authority if holds => return None,
                Class::Counted(label) if counts && label > max && untrusted.is_none() => {
                    untrusted = Some((cur, label));
                }
                _ => {}
            }
            if value.is_none() {
                // No value to look for: only the justifying entries are checked.
                continue;
            }
            for p in s.node.parents.clone() {
                if visited.insert(p) {
                    prev.insert(p, cur);
                    queue.push_back(p);
                }
            }
        }
        let (origin, label) = untrusted?;
        let mut path = vec![origin];
        let mut at = origin;
        while let Some(p) = prev.get(&at) {
            path.push(*p);
            at = *p;
        }
        Some((path, label))
    }

    /// How the origin check counts an entry for `param` of `tool` (§3.1, §3.2).
    fn origin_class(&self, tool: &str, param: &str, n: &OriginNode) -> Class {
        let (Some(label), Some((role, name))) = (n.label, n.writer.as_ref()) else {
            return Class::Counted(Label::External);
        };
        // The user's own statement (a prompt: role user, labelled Trusted), or a principal the
        // policy names for the parameter; never the agent's memory, whatever its label.
        let authority = (*role == Role::User && label == Label::Trusted)
            || self.is_authoritative(tool, param, name);
        if authority && n.live && n.text.is_some() {
            return Class::Authority;
        }
        if self.is_shared_writable(name) && !self.is_authoritative(tool, param, name) {
            return Class::Counted(Label::External);
        }
        Class::Counted(label)
    }
}

/// How the origin check counts one entry.
enum Class {
    /// Written by a principal with authority for the parameter, live and readable.
    Authority,
    /// Counted with this label.
    Counted(Label),
}

/// An entry the origin check has read, with its search forms built once per decision.
pub(super) struct Seen {
    node: OriginNode,
    hay: Option<Haystack>,
    normalised: Option<String>,
}

impl Seen {
    pub(super) fn new(node: OriginNode) -> Self {
        let hay = node.text.as_deref().map(Haystack::new);
        let normalised = node.text.as_deref().map(normalise);
        Seen {
            node,
            hay,
            normalised,
        }
    }

    /// Whether the entry holds `value` (§3.1): the matching rules of `spec/hooks.md` §4 on its
    /// verified text, or a string value's normalised form (letters and digits, upper-cased,
    /// at least [`MIN_NORMALISED_CHARS`]) in the normalised text; an entry without a readable
    /// text holds every value a text could hold.
    pub(super) fn holds(&self, value: &Value) -> bool {
        match (&self.hay, &self.normalised) {
            (Some(h), Some(n)) => h.matches(value) || normalised_in(n, value),
            _ => Haystack::unverifiable().matches(value),
        }
    }
}

/// `s` without anything but letters and digits, upper-cased.
pub(super) fn normalise(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_uppercase)
        .collect()
}

pub(super) fn normalised_in(text: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => {
            let n = normalise(s);
            n.chars().count() >= MIN_NORMALISED_CHARS && text.contains(&n)
        }
        Value::Array(items) => items.iter().any(|v| normalised_in(text, v)),
        Value::Object(m) => m.values().any(|v| normalised_in(text, v)),
        _ => false,
    }
}
