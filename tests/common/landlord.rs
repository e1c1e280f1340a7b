//! The landlord scene several store-attacker tests start from (`tests/flat_open_under_store_edits.rs`,
//! `tests/fail_closed.rs`): a user's prompt, a forum post (tool output) and the agent's memo
//! derived from both, the post over a weak edge (0.1), so that the memo is Derived-Trusted and
//! may justify the payment [`pay`] until the post is flagged.

// Not every test file that includes this module reads every field.
#![allow(dead_code)]

use memlineage::gate::ToolCall;
use memlineage::record::{EntryId, Kind, Role, WriterKey};
use memlineage::store::Store;
use memlineage::Ledger;

/// Included here, so that a test file that includes this module reaches `put` through it.
#[path = "ledger_support.rs"]
pub mod ledger_support;

/// The scene's writers, from public test labels `{prefix}/user`, `{prefix}/agent` and
/// `{prefix}/tool`.
pub struct Principals {
    pub user: WriterKey,
    pub agent: WriterKey,
    pub tool: WriterKey,
}

impl Principals {
    pub fn new(prefix: &str) -> Self {
        Principals {
            user: WriterKey::for_label(&format!("{prefix}/user")),
            agent: WriterKey::for_label(&format!("{prefix}/agent")),
            tool: WriterKey::for_label(&format!("{prefix}/tool")),
        }
    }
}

/// The scene's entries.
pub struct Landlord {
    pub prompt: EntryId,
    pub post: EntryId,
    pub memo: EntryId,
}

/// Binds `p` (`user`, `agent`, `tool:web`) on `l` and appends the scene.
pub fn landlord<S: Store>(l: &mut Ledger<S>, p: &Principals) -> Landlord {
    l.bind(p.user.key_id(), Role::User, "user").unwrap();
    l.bind(p.agent.key_id(), Role::Agent, "agent").unwrap();
    l.bind(p.tool.key_id(), Role::Tool, "tool:web").unwrap();
    let put = ledger_support::put;
    let prompt = put(l, &p.user, Kind::Prompt, "pay my landlord", &[]);
    let post = put(l, &p.tool, Kind::ToolResult, "landlord IBAN is XX99", &[]);
    let memo = put(
        l,
        &p.agent,
        Kind::Summary,
        "landlord: XX99",
        &[(prompt, 1_000_000), (post, 100_000)],
    );
    Landlord { prompt, post, memo }
}

/// The sensitive payment to the IBAN `memo` names.
pub fn pay(memo: EntryId) -> ToolCall {
    ToolCall {
        tool: "send_money".into(),
        sensitive: true,
        args: vec![("recipient".into(), vec![memo])],
    }
}
