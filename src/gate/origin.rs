//! The origin of a value (`spec/gate.md` §3.1–3.2): the ancestry of a justification over
//! every recorded edge, the entries that hold the value, and who has authority for it.

use super::matching::Haystack;
use super::*;
use std::sync::{Arc, OnceLock};

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
    /// Cost: one [`OriginView::origin_entry`] per distinct entry in the ancestry of the
    /// justifying entries (answered from what the view kept, §3.3, or read and verified), plus
    /// a text search per argument of each entry whose answer can change the decision.
    pub fn decide_with_origin(
        &self,
        call: &ToolCall,
        values: &Map<String, Value>,
        view: &impl OriginView,
    ) -> LineageDecision {
        match self.decide(call, view) {
            LineageDecision::Allow => self.check_origin(call, values, view),
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
    ) -> LineageDecision {
        if !self.is_sensitive(call) {
            return LineageDecision::Allow;
        }
        // A view that keeps entries between checks confirms here, once, that they still hold.
        view.origin_check_begins();
        let mut seen: HashMap<EntryId, OriginEntry> = HashMap::new();
        for (param, entries) in &call.args {
            if self.passes_by_ancestry(call, param, entries, values.get(param), view) {
                continue;
            }
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
        LineageDecision::Allow
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
        seen: &mut HashMap<EntryId, OriginEntry>,
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
            let s = seen.entry(cur).or_insert_with(|| view.origin_entry(&cur));
            // Whether the entry holds the value is asked only where the answer can change the
            // decision (the text search is the costly part, §3.3).
            match self.origin_class(tool, param, s) {
                Class::Authority if value.is_some_and(|v| s.text.holds(v)) => return None,
                // A justifying entry counts whether or not it holds the value (§3.2: a
                // shared-writable writer's entry is External as a justification too).
                Class::Counted(label)
                    if label > max
                        && untrusted.is_none()
                        && (entries.contains(&cur) || value.is_some_and(|v| s.text.holds(v))) =>
                {
                    untrusted = Some((cur, label));
                }
                _ => {}
            }
            if value.is_none() {
                // No value to look for: only the justifying entries are checked.
                continue;
            }
            for p in s.parents.iter() {
                if visited.insert(*p) {
                    prev.insert(*p, cur);
                    queue.push_back(*p);
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
    fn origin_class(&self, tool: &str, param: &str, n: &OriginEntry) -> Class {
        let (Some(label), Some((role, name))) = (n.label, n.writer.as_ref()) else {
            return Class::Counted(Label::External);
        };
        let (authority, counted) = self.writer_class(tool, param, label, *role, name);
        if authority && n.live && n.text.is_readable() {
            return Class::Authority;
        }
        Class::Counted(counted)
    }

    /// For an entry labelled `label` by a writer of `role` named `name`: whether its writer
    /// has authority for `param` of `tool` (§3.1 step 4: the user's own statement, a prompt
    /// with role user labelled Trusted, or a principal the policy names; never the agent's
    /// memory, whatever its label), and the label it is counted with otherwise (§3.1 step 3:
    /// External for a shared-writable writer without authority, §3.2).
    pub(super) fn writer_class(
        &self,
        tool: &str,
        param: &str,
        label: Label,
        role: Role,
        name: &str,
    ) -> (bool, Label) {
        let named = self.is_authoritative(tool, param, name);
        let authority = (role == Role::User && label == Label::Trusted) || named;
        let counted = match self.is_shared_writable(name) && !named {
            true => Label::External,
            false => label,
        };
        (authority, counted)
    }
}

/// How the origin check counts one entry.
enum Class {
    /// Written by a principal with authority for the parameter, live and readable.
    Authority,
    /// Counted with this label.
    Counted(Label),
}

/// An entry as the origin check reads it (`spec/gate.md` §3.1): what the view verified of it
/// at this check (label, writer, edges, forensic state) and its text, whose search forms are
/// built on first use and may be shared between checks by a view that keeps them (§3.3).
#[derive(Clone, Debug)]
pub struct OriginEntry {
    /// As [`OriginNode::label`].
    pub label: Option<Label>,
    /// As [`OriginNode::writer`].
    pub writer: Option<(Role, String)>,
    /// As [`OriginNode::parents`].
    pub parents: Arc<[EntryId]>,
    /// As [`OriginNode::live`].
    pub live: bool,
    /// As [`OriginNode::text`], searchable.
    pub text: Arc<HeldText>,
}

impl From<OriginNode> for OriginEntry {
    fn from(n: OriginNode) -> Self {
        OriginEntry {
            label: n.label,
            writer: n.writer,
            parents: n.parents.into(),
            live: n.live,
            text: Arc::new(HeldText::new(n.text)),
        }
    }
}

/// An entry's verified text (`None`: redacted or unreadable) and its search forms, built once,
/// on the first [`HeldText::holds`].
#[derive(Debug, Default)]
pub struct HeldText {
    text: Option<String>,
    forms: OnceLock<Option<(Haystack, String)>>,
}

impl HeldText {
    /// `text` as the view verified it (`None`: it holds every value).
    pub fn new(text: Option<String>) -> Self {
        HeldText {
            text,
            forms: OnceLock::new(),
        }
    }

    /// Whether there is a text (not redacted, readable, matching its signed hash).
    pub fn is_readable(&self) -> bool {
        self.text.is_some()
    }

    /// Length of the text in bytes (0 when there is none).
    pub fn len(&self) -> usize {
        self.text.as_ref().map_or(0, String::len)
    }

    /// Whether there is no text or an empty one.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the entry holds `value` (§3.1): the matching rules of `spec/hooks.md` §4 on its
    /// verified text, or a string value's normalised form (letters and digits, upper-cased,
    /// at least [`MIN_NORMALISED_CHARS`]) in the normalised text; an entry without a readable
    /// text holds every value a text could hold.
    pub fn holds(&self, value: &Value) -> bool {
        let forms = self.forms.get_or_init(|| {
            self.text
                .as_deref()
                .map(|t| (Haystack::new(t), normalise(t)))
        });
        match forms {
            Some((h, n)) => h.matches(value) || normalised_in(n, value),
            None => Haystack::unverifiable().matches(value),
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
