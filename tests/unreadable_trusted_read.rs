//! A read whose text cannot be read or verified holds every value (`spec/hooks.md` §4.6), so it
//! can never make a call more permissive than the same read with any text would: it is not a
//! source that takes a value out of the unsourced and composed rules (§15.1, `spec/gate.md`
//! §2.1 `unsourced`). A store-only attacker who deletes (or edits) the content row of the
//! user's prompt in the SQLite file must not turn a composed call after untrusted input, asked
//! before, into an allow, nor an unsourced argument, denied before, into an allow.

#[path = "common/front_support.rs"]
mod front_support;

use front_support::{afresh, args, sqlite_front, CODING_POLICY, UNSOURCED_DENY_POLICY};
use memlineage::front::{DerivedKeys, Front, Refusal, Session, Verdict};
use memlineage::store::SqliteStore;
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;

type F = Front<SqliteStore, DerivedKeys>;

fn front(path: &Path, policy: &str, create: bool) -> F {
    sqlite_front(path, "unreadable", policy, create)
}

/// The store-only attacker: the content row of `text`'s entry deleted by SQL, below the ledger.
fn delete_content(path: &Path, f: &F, id: &memlineage::record::EntryId) {
    let hash = f.ledger().get(id).expect("entry").entry().content_hash;
    let db = rusqlite::Connection::open(path).expect("sql");
    let n = db
        .execute("DELETE FROM content WHERE hash = ?1", [hash.0.to_vec()])
        .expect("delete");
    assert_eq!(n, 1);
}

/// A session that read the user's prompt, then a page (External) that holds neither value of
/// the payment; the payment's verdict in it, then by a front opened afresh after the prompt's
/// content was deleted.
fn before_and_after(policy: &str) -> (Verdict, Verdict) {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("l.db");
    let mut f = front(&path, policy, true);
    let mut s = Session::new("s");
    let prompt = f
        .record_prompt(&mut s, "pay my bills please")
        .expect("prompt");
    f.record_tool_result(
        &mut s,
        "WebFetch",
        &json!({"url": "https://page.example/"}),
        "the meeting moved to Thursday",
    )
    .expect("page");
    let pay = args(&json!({"recipient": "ZZ77ACCOUNT0001", "amount": 5000}));
    let none = HashMap::new();
    let before = f
        .check(&s, "send_money", &pay, &none)
        .expect("check")
        .verdict;
    delete_content(&path, &f, &prompt.id);
    let mut g = front(&path, policy, false);
    let after = g
        .check(&afresh(&s), "send_money", &pay, &none)
        .expect("check")
        .verdict;
    (before, after)
}

fn is_allow(v: &Verdict) -> bool {
    matches!(v, Verdict::Allow)
}

#[test]
fn a_deleted_prompt_does_not_turn_an_asked_composed_call_into_an_allow() {
    let (before, after) = before_and_after(CODING_POLICY);
    assert!(matches!(before, Verdict::Ask(_)), "{before:?}");
    assert!(!is_allow(&after), "{after:?}");
    assert!(
        matches!(after, Verdict::Deny(Refusal::Unreadable { reason: ref why }) if why.contains("cannot be read or verified")),
        "{after:?}"
    );
}

#[test]
fn a_deleted_prompt_does_not_source_an_argument_the_policy_denies_unsourced() {
    let (before, after) = before_and_after(UNSOURCED_DENY_POLICY);
    assert!(
        matches!(before, Verdict::Deny(Refusal::Gate(_))),
        "{before:?}"
    );
    assert!(!is_allow(&after), "{after:?}");
}

/// A value the prompt's verified text held is still allowed while the text can be read, and
/// a value nothing read holds is unsourced as before: the rule only concerns texts that
/// cannot be read.
#[test]
fn a_readable_prompt_still_sources_its_values() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("l.db");
    let policy = r#"
        default_max_label = "derived_trusted"
        unsourced = "deny"
        sensitive_tools = ["send_money"]
    "#;
    let mut f = front(&path, policy, true);
    let mut s = Session::new("s");
    f.record_prompt(&mut s, "pay 5000 to ZZ77ACCOUNT0001")
        .expect("prompt");
    let pay = args(&json!({"recipient": "ZZ77ACCOUNT0001", "amount": 5000}));
    let none = HashMap::new();
    let mut g = front(&path, policy, false);
    let v = g
        .check(&afresh(&s), "send_money", &pay, &none)
        .expect("check")
        .verdict;
    assert!(is_allow(&v), "{v:?}");
}
