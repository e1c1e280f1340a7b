//! Entries a caller cites for an argument (`Front::check`'s `given`) can make a decision
//! stricter, never looser (`spec/gate.md` §7): they add sources to taint the argument, but an
//! argument nothing the session read holds stays unsourced (`unsourced = "deny"`) and a call
//! whose arguments the agent composed after untrusted input stays composed (`spec/hooks.md`
//! §15.1), whatever trusted entry the caller names for it.

#[path = "common/front_support.rs"]
mod front_support;

use front_support::{memory_front, CODING_POLICY, UNSOURCED_DENY_POLICY};
use memlineage::front::{DerivedKeys, Front, Refusal, Session, Verdict};
use memlineage::record::EntryId;
use memlineage::store::MemoryStore;
use serde_json::json;
use std::collections::HashMap;

fn front(policy: &str) -> Front<MemoryStore, DerivedKeys> {
    memory_front("cited", policy)
}

/// The verdict of `tool` with `args` in session `s`, with the entries `given` cited.
fn verdict(
    f: &mut Front<MemoryStore, DerivedKeys>,
    s: &Session,
    tool: &str,
    args: &serde_json::Value,
    given: &HashMap<String, Vec<EntryId>>,
) -> Verdict {
    let args = args.as_object().expect("object");
    f.check(s, tool, args, given).expect("check").verdict
}

/// A session whose user stated the payment (`pay 5000 to ZZ77ACCOUNT0001`), under the coding
/// policy, and the payment's arguments.
fn stated_payment() -> (Front<MemoryStore, DerivedKeys>, Session, serde_json::Value) {
    let mut f = front(CODING_POLICY);
    let mut s = Session::new("s");
    f.record_prompt(&mut s, "pay 5000 to ZZ77ACCOUNT0001")
        .expect("prompt");
    let pay = json!({"recipient": "ZZ77ACCOUNT0001", "amount": 5000});
    (f, s, pay)
}

/// The payment's verdict in a session that read the user's prompt and a page holding neither
/// of its values, without citations and with the prompt cited for both arguments.
fn uncited_and_cited(policy: &str) -> (Verdict, Verdict) {
    let mut f = front(policy);
    let mut s = Session::new("s");
    let prompt = f.record_prompt(&mut s, "pay my bills").expect("prompt");
    f.record_tool_result(
        &mut s,
        "WebFetch",
        &json!({"url": "https://page.example/"}),
        "the meeting moved to Thursday",
    )
    .expect("page");
    let pay = json!({"recipient": "ZZ77ACCOUNT0001", "amount": 5000});
    let uncited = verdict(&mut f, &s, "send_money", &pay, &HashMap::new());
    let given: HashMap<String, Vec<EntryId>> = [
        ("recipient".to_string(), vec![prompt.id]),
        ("amount".to_string(), vec![prompt.id]),
    ]
    .into();
    let cited = verdict(&mut f, &s, "send_money", &pay, &given);
    (uncited, cited)
}

#[test]
fn a_cited_prompt_does_not_take_a_composed_call_out_of_the_ask() {
    let (uncited, cited) = uncited_and_cited(CODING_POLICY);
    assert!(matches!(uncited, Verdict::Ask(_)), "{uncited:?}");
    assert!(matches!(cited, Verdict::Ask(_)), "{cited:?}");
}

#[test]
fn a_cited_prompt_does_not_source_an_argument_the_policy_denies_unsourced() {
    let (uncited, cited) = uncited_and_cited(UNSOURCED_DENY_POLICY);
    assert!(
        matches!(uncited, Verdict::Deny(Refusal::Gate(_))),
        "{uncited:?}"
    );
    assert!(
        matches!(cited, Verdict::Deny(Refusal::Gate(_))),
        "{cited:?}"
    );
}

/// Citing an untrusted entry for a clean value still denies (stricter).
#[test]
fn a_cited_untrusted_entry_still_denies() {
    let (mut f, mut s, pay) = stated_payment();
    let (_, page) = f
        .record_tool_result(
            &mut s,
            "WebFetch",
            &json!({"url": "https://page.example/"}),
            "the meeting moved to Thursday",
        )
        .expect("page");
    let allowed = verdict(&mut f, &s, "send_money", &pay, &HashMap::new());
    assert!(matches!(allowed, Verdict::Allow), "{allowed:?}");
    let given: HashMap<String, Vec<EntryId>> = [("recipient".to_string(), vec![page.id])].into();
    let cited = verdict(&mut f, &s, "send_money", &pay, &given);
    assert!(
        matches!(cited, Verdict::Deny(Refusal::Gate(_))),
        "{cited:?}"
    );
}

/// An entry the caller cites that the ledger does not hold, or holds but cannot verify, refuses
/// the call as unreadable, for a parameter of the call or for one it does not have; a call the
/// policy does not gate is not asked about its citations.
#[test]
fn a_cited_entry_that_does_not_verify_refuses_the_call() {
    let (mut f, s, pay) = stated_payment();
    let allowed = verdict(&mut f, &s, "send_money", &pay, &HashMap::new());
    assert!(matches!(allowed, Verdict::Allow), "{allowed:?}");
    let unknown = EntryId([0xab; 32]);
    for param in ["recipient", "memo"] {
        let given: HashMap<String, Vec<EntryId>> = [(param.to_string(), vec![unknown])].into();
        let cited = verdict(&mut f, &s, "send_money", &pay, &given);
        match &cited {
            Verdict::Deny(Refusal::Unreadable { reason: why }) => {
                assert!(why.contains("cannot be verified"), "{why}");
            }
            other => panic!("{param}: {other:?}"),
        }
    }
    let read = json!({"file_path": "notes.md"});
    let given: HashMap<String, Vec<EntryId>> = [("file_path".to_string(), vec![unknown])].into();
    let not_gated = verdict(&mut f, &s, "Read", &read, &given);
    assert!(matches!(not_gated, Verdict::Allow), "{not_gated:?}");
}
