//! The origin check with what a handle keeps between checks (`spec/gate.md` §3.3) against the
//! walk of §3.1 as the spec states it: for any lineage on a real SQLite ledger, any
//! justification and any value, `Ledger::gate_values` (first and repeated, with the entries it
//! kept) decides exactly what an eager breadth-first walk decides that reads every entry
//! afresh through `OriginView::origin_node` and asks every entry whether it holds the value —
//! before and after tombstones, flags, redactions by another handle and a store-only attacker
//! deleting content.

#[path = "common/sqlite_support.rs"]
mod sqlite_support;
use sqlite_support::sqlite_ledger;
#[path = "common/ledger_support.rs"]
mod ledger_support;
use ledger_support::picked_parents;

use memlineage::gate::{
    DenyReason, HeldText, LineageDecision, LineageDenial, LineageView, OriginNode, OriginView,
    Policy, ToolCall,
};
use memlineage::lineage::quarantine::Reach;
use memlineage::lineage::Label;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, ProvEntry, Role, WriterKey};
use memlineage::store::{SqliteStore, Store};
use memlineage::Ledger;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap, VecDeque};

fn signer() -> LogSigner {
    LogSigner::new("test.example/origin-memory", WriterKey::for_label("om/log")).unwrap()
}

/// The values the texts are made of and the calls carry: IBANs in two spellings, an invoice
/// number, amounts.
const PIECES: &[&str] = &[
    "GB29 NWBK 6016 1331 9268 19",
    "gb29nwbk60161331926819",
    "ZZ99ATTACKER0001",
    "invoice 4711-B",
    "1200",
    "pay the rent",
];

/// Writers: (role, principal name, kind written). The default policy makes
/// `tool:get_scheduled_transactions` authoritative for `send_money`'s recipient; `docs` is an
/// agent principal whose name the policy lists as shared-writable.
const WRITERS: &[(Role, &str, Kind)] = &[
    (Role::User, "user", Kind::Prompt),
    (Role::Agent, "agent", Kind::Summary),
    (Role::Tool, "tool:get_webpage", Kind::ToolResult),
    (
        Role::Tool,
        "tool:get_scheduled_transactions",
        Kind::ToolResult,
    ),
    (Role::Agent, "docs", Kind::Summary),
];

/// One entry to append: its writer, the pieces of its text, its parents (earlier entries, by
/// position modulo how many there are) with weights in tenths.
#[derive(Clone, Debug)]
struct Spec {
    writer: usize,
    pieces: Vec<usize>,
    parents: Vec<(usize, u8)>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0..WRITERS.len(),
        proptest::collection::vec(0..PIECES.len(), 0..3),
        proptest::collection::vec((0usize..64, 1u8..=10), 0..3),
    )
        .prop_map(|(writer, pieces, parents)| Spec {
            writer,
            pieces,
            parents,
        })
}

/// A change between two rounds of decisions.
#[derive(Clone, Debug)]
enum Change {
    Tombstone(usize),
    Flag(usize),
    /// A redaction through another store handle.
    Redact(usize),
    /// The store-only attacker deletes an entry's content with SQL (no key).
    Delete(usize),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0usize..64).prop_map(Change::Tombstone),
        (0usize..64).prop_map(Change::Flag),
        (0usize..64).prop_map(Change::Redact),
        (0usize..64).prop_map(Change::Delete),
    ]
}

/// A call of `send_money`: per argument, the justifying entries (positions; 64 and above name
/// an entry not in the log) and the value.
#[derive(Clone, Debug)]
struct Call {
    args: Vec<(Vec<usize>, usize)>,
}

fn call() -> impl Strategy<Value = Call> {
    proptest::collection::vec(
        (
            proptest::collection::vec(0usize..70, 1..3),
            0..PIECES.len() + 1,
        ),
        1..3,
    )
    .prop_map(|args| Call { args })
}

struct World {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    keys: Vec<WriterKey>,
    ids: Vec<EntryId>,
    texts: Vec<String>,
}

fn world(specs: &[Spec]) -> (World, Ledger<SqliteStore>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("om.ledger");
    let mut l = sqlite_ledger(&path, signer());
    let keys: Vec<WriterKey> = WRITERS
        .iter()
        .map(|(_, name, _)| WriterKey::for_label(&format!("om/{name}")))
        .collect();
    for ((role, name, _), key) in WRITERS.iter().zip(&keys) {
        l.bind(key.key_id(), *role, name).unwrap();
    }
    let mut ids: Vec<EntryId> = Vec::new();
    let mut texts = Vec::new();
    for (n, s) in specs.iter().enumerate() {
        let (_, name, kind) = WRITERS[s.writer];
        // Every text is distinct (its position), so no two entries share a content row.
        let mut text = format!("entry {n} by {name}:");
        for p in &s.pieces {
            text.push(' ');
            text.push_str(PIECES[*p]);
        }
        let parents = picked_parents(&ids, &s.parents);
        let key = &keys[s.writer];
        let e = ProvEntry::new(key.key_id(), kind, text.as_bytes())
            .with_parents(parents)
            .with_time_ms(1_700_000_000_000 + n as u64);
        ids.push(l.append(e, key, text.as_bytes()).unwrap().id);
        texts.push(text);
    }
    let w = World {
        _dir: dir,
        path,
        keys,
        ids,
        texts,
    };
    (w, l)
}

impl World {
    fn entry(&self, at: usize) -> EntryId {
        match at {
            at if at >= 64 => EntryId([at as u8; 32]),
            at => self.ids[at % self.ids.len()],
        }
    }

    fn tool_call(&self, c: &Call) -> (ToolCall, Map<String, Value>) {
        let names = ["recipient", "amount"];
        let mut args = Vec::new();
        let mut values = Map::new();
        for (i, (entries, value)) in c.args.iter().enumerate() {
            let name = names[i % names.len()].to_string();
            args.push((
                name.clone(),
                entries.iter().map(|e| self.entry(*e)).collect::<Vec<_>>(),
            ));
            // One past the pieces: an argument without a value (only its justification checked).
            if let Some(p) = PIECES.get(*value) {
                values.insert(name, json!(p));
            }
        }
        let call = ToolCall {
            tool: "send_money".into(),
            sensitive: false,
            args,
        };
        (call, values)
    }

    fn apply(&self, l: &mut Ledger<SqliteStore>, c: &Change) {
        let user = &self.keys[0];
        match c {
            Change::Tombstone(at) => {
                let _ = l.tombstone(self.entry(*at % 64), user, "wrong");
            }
            Change::Flag(at) => {
                let _ = l.flag(self.entry(*at % 64), Reach::Strong, user, "injected");
            }
            Change::Redact(at) => {
                let hash = l.get(&self.entry(*at % 64)).unwrap().entry().content_hash;
                let mut other = SqliteStore::open(&self.path).unwrap();
                other.redact(&hash).unwrap();
            }
            Change::Delete(at) => {
                let text = &self.texts[*at % self.texts.len()];
                let conn = rusqlite::Connection::open(&self.path).unwrap();
                conn.execute("DELETE FROM content WHERE CAST(bytes AS TEXT) = ?1", [text])
                    .unwrap();
            }
        }
    }
}

/// The ledger as a plain view: every entry read afresh through `origin_node`, nothing kept
/// (the trait's default `origin_entry`).
struct Fresh<'a>(&'a Ledger<SqliteStore>);

impl LineageView for Fresh<'_> {
    fn label_of(&self, id: &EntryId) -> Option<Label> {
        self.0.label_of(id)
    }
    fn tombstoned(&self, id: &EntryId) -> bool {
        LineageView::tombstoned(self.0, id)
    }
    fn path_to_source(&self, id: &EntryId) -> Vec<EntryId> {
        self.0.path_to_source(id)
    }
    fn quarantined(&self, id: &EntryId) -> bool {
        LineageView::quarantined(self.0, id)
    }
    fn principal_of(&self, id: &EntryId) -> Option<String> {
        self.0.principal_of(id)
    }
    fn role_of(&self, id: &EntryId) -> Option<Role> {
        self.0.role_of(id)
    }
}

impl OriginView for Fresh<'_> {
    fn origin_node(&self, id: &EntryId) -> OriginNode {
        self.0.origin_node(id)
    }
}

/// `spec/gate.md` §3.1–3.2 as written: the label decision, then for each argument in order a
/// breadth-first walk over every recorded edge from its justifying entries (parents in their
/// recorded order), every entry read through `origin_node` and asked whether it holds the
/// value. An entry counts when it holds the value or justifies the argument; the first
/// counted entry labelled worse than the parameter allows (External when it cannot be
/// verified or its writer is shared-writable without authority) is the untrusted origin,
/// unless a live, readable entry of a principal with authority (the user's Trusted prompt,
/// or a principal the policy names) holds the value.
fn walk(
    policy: &Policy,
    call: &ToolCall,
    values: &Map<String, Value>,
    v: &Fresh,
) -> LineageDecision {
    let d = policy.decide(call, v);
    if !d.is_allow() || !policy.is_sensitive(call) {
        return d;
    }
    for (param, entries) in &call.args {
        let value = values.get(param);
        let max = policy.max_label(&call.tool, param);
        let mut queue: VecDeque<EntryId> = VecDeque::new();
        let mut visited = BTreeSet::new();
        let mut prev: HashMap<EntryId, EntryId> = HashMap::new();
        for id in entries {
            if visited.insert(*id) {
                queue.push_back(*id);
            }
        }
        let mut found: Option<(EntryId, Label)> = None;
        let mut authority = false;
        while let Some(cur) = queue.pop_front() {
            let n = v.origin_node(&cur);
            let holds = value.is_some_and(|x| HeldText::new(n.text.clone()).holds(x));
            let counts = holds || entries.contains(&cur);
            let class = match (n.label, &n.writer) {
                (Some(label), Some((role, name))) => {
                    let auth = (*role == Role::User && label == Label::Trusted)
                        || policy.is_authoritative(&call.tool, param, name);
                    if auth && n.live && n.text.is_some() {
                        None
                    } else if policy.is_shared_writable(name)
                        && !policy.is_authoritative(&call.tool, param, name)
                    {
                        Some(Label::External)
                    } else {
                        Some(label)
                    }
                }
                _ => Some(Label::External),
            };
            match class {
                None if holds => {
                    authority = true;
                    break;
                }
                Some(label) if counts && label > max && found.is_none() => {
                    found = Some((cur, label));
                }
                _ => {}
            }
            if value.is_none() {
                continue;
            }
            for p in n.parents {
                if visited.insert(p) {
                    prev.insert(p, cur);
                    queue.push_back(p);
                }
            }
        }
        if authority {
            continue;
        }
        if let Some((origin, label)) = found {
            let mut path = vec![origin];
            let mut at = origin;
            while let Some(p) = prev.get(&at) {
                path.push(*p);
                at = *p;
            }
            // The denial names the justifying entry the walk reached the origin from.
            return LineageDecision::Deny(LineageDenial {
                tool: call.tool.clone(),
                param: param.clone(),
                entry: path.last().copied(),
                reason: DenyReason::UntrustedOrigin { label },
                path,
            });
        }
    }
    LineageDecision::Allow
}

/// Every call decided by the handle (twice: the second from what it kept) and by the walk.
fn agree(w: &World, l: &Ledger<SqliteStore>, policy: &Policy, calls: &[Call], round: &str) {
    for c in calls {
        let (call, values) = w.tool_call(c);
        let want = walk(policy, &call, &values, &Fresh(l));
        let first = l.gate_values(policy, &call, &values);
        let again = l.gate_values(policy, &call, &values);
        assert_eq!(first, want, "{round}: first check of {c:?}");
        assert_eq!(again, want, "{round}: repeated check of {c:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn the_origin_check_decides_as_the_walk_before_and_after_changes(
        specs in proptest::collection::vec(spec(), 1..14),
        calls in proptest::collection::vec(call(), 1..6),
        changes in proptest::collection::vec(change(), 1..4),
    ) {
        let policy = Policy::default();
        let (w, mut l) = world(&specs);
        agree(&w, &l, &policy, &calls, "before");
        for c in &changes {
            w.apply(&mut l, c);
            l.refresh().unwrap();
            agree(&w, &l, &policy, &calls, &format!("after {c:?}"));
        }
    }
}

/// A user prompt, a web page and the agent's memo of both (strong edge to the prompt, weak
/// to the page), with these pieces of text.
fn memo(prompt: [usize; 1], page: [usize; 1], memo: [usize; 1]) -> Vec<Spec> {
    let entry = |writer: usize, pieces: [usize; 1], parents: Vec<(usize, u8)>| Spec {
        writer,
        pieces: pieces.to_vec(),
        parents,
    };
    vec![
        entry(0, prompt, vec![]),
        entry(2, page, vec![]),
        entry(1, memo, vec![(0, 10), (1, 4)]),
    ]
}

/// The chains where keeping matters: the page's text deleted by the store-only attacker
/// after a handle checked a call and kept the page. The same handle must then count the page
/// as holding every value, as a fresh handle does (fails when the kept text outlives the
/// store's content epoch).
#[test]
fn a_text_deleted_after_a_check_is_not_held_as_verified_by_the_handle_that_kept_it() {
    let specs = memo([4], [2], [3]);
    let (w, mut l) = world(&specs);
    let policy = Policy::default();
    // "invoice 4711-B" is in the memo, not in the page: allowed.
    let call = Call {
        args: vec![(vec![2], 3)],
    };
    let (tc, values) = w.tool_call(&call);
    assert!(l.gate_values(&policy, &tc, &values).is_allow());
    assert!(l.gate_values(&policy, &tc, &values).is_allow(), "kept");
    w.apply(&mut l, &Change::Delete(1));
    let d = l.gate_values(&policy, &tc, &values);
    let LineageDecision::Deny(d) = d else {
        panic!("the deleted page was held as verified: {d:?}")
    };
    assert_eq!(
        d.reason,
        DenyReason::UntrustedOrigin {
            label: Label::External
        }
    );
    assert_eq!(d.path, vec![w.ids[1], w.ids[2]]);
}

/// The user's prompt states the IBAN; the agent's memo cites it (strong) and a page holding
/// the same IBAN (weak). The prompt's authority lets the IBAN through, from the memo's kept
/// ancestry too; once the prompt is tombstoned (by this handle, or by another one and seen at
/// refresh) it has no authority and the page's copy refuses the IBAN (fails when a kept
/// ancestry answers with the authority of an entry that is no longer live).
#[test]
fn a_tombstoned_statement_loses_its_authority_in_a_kept_ancestry() {
    let specs = memo([2], [2], [2]);
    let policy = Policy::default();
    let call = Call {
        args: vec![(vec![2], 2)],
    };
    for other_handle in [false, true] {
        let (w, mut l) = world(&specs);
        let (tc, values) = w.tool_call(&call);
        assert!(l.gate_values(&policy, &tc, &values).is_allow());
        assert!(l.gate_values(&policy, &tc, &values).is_allow(), "kept");
        if other_handle {
            let mut o = Ledger::open(SqliteStore::open(&w.path).unwrap(), signer()).unwrap();
            o.tombstone(w.ids[0], &w.keys[0], "wrong").unwrap();
            l.refresh().unwrap();
        } else {
            l.tombstone(w.ids[0], &w.keys[0], "wrong").unwrap();
        }
        let d = l.gate_values(&policy, &tc, &values);
        let LineageDecision::Deny(d) = d else {
            panic!("a tombstoned prompt kept its authority (other handle: {other_handle})")
        };
        assert_eq!(d.path, vec![w.ids[1], w.ids[2]]);
        assert_eq!(d, {
            let LineageDecision::Deny(want) = walk(&policy, &tc, &values, &Fresh(&l)) else {
                panic!("the walk allows")
            };
            want
        });
    }
}
