//! Rework, healing and leases (`spec/forensics.md` §4–5) against a poisoned memory: rework
//! does not launder quarantined content, copies of one document are one heal vote, a tool
//! cannot pre-empt healing with a replacement, an audit without contents agrees with the ledger
//! on leases, and a slow uncontested worker does not spin appending leases.

#[path = "common/forensics_support.rs"]
mod forensics_support;
#[path = "common/ledger_support.rs"]
mod ledger_support;

use forensics_support::{audit_with_content, pay, poisoned, world};
use ledger_support::put;
use memlineage::forensics::heal::{heal, HealOutcome};
use memlineage::forensics::rework::{rework, ReworkOptions};
use memlineage::gate::{LineageDecision, Policy};
use memlineage::lineage::quarantine::Reach;
use memlineage::record::{EntryId, Kind, ProvEntry};
use memlineage::retrieve::Outcome;
use memlineage::store::MemoryStore;

/// §5.3: rework feeds the OLD (quarantined) content to `work` but records no edge to it, and
/// drops the quarantined parent. A worker that re-derives from the old content (the CLI's
/// `--exec CMD` only ever sees the old content) therefore turns a quarantined memory into a
/// parentless, Trusted, un-quarantined replacement: the poison is back in retrieval and
/// justifies a payment.
#[test]
fn rework_does_not_launder_quarantined_content_into_trusted_memory() {
    let (mut l, k) = world(MemoryStore::default());
    let (page, memo) = poisoned(&mut l, &k);
    l.flag(page, Reach::All, &k.user, "the page was an injection")
        .unwrap();
    assert!(l.is_quarantined(&memo));
    assert!(matches!(
        l.gate(&Policy::default(), &pay(memo)),
        LineageDecision::Deny(_)
    ));
    let clock = std::cell::Cell::new(1_000u64);
    let report = rework(
        &mut l,
        &[memo],
        &k.agent,
        ReworkOptions::default(),
        || {
            clock.set(clock.get() + 1);
            clock.get()
        },
        |_| {},
        // What `memlineage rework --exec cat` does: copy whatever it is fed.
        |_, _, inputs| Ok::<_, String>(copy_inputs(inputs)),
    )
    .unwrap();
    let new = report.reworked[0].1;
    let text = String::from_utf8(l.content(&l.get(&new).unwrap()).unwrap().unwrap()).unwrap();
    // The worker is fed the clean inputs only (here: none), never the quarantined text, so a
    // replacement labelled by its (clean) parents cannot carry the poison back.
    assert!(
        !text.contains("ZZ99"),
        "the replacement carries the poisoned text: {text:?}"
    );
    let retrieved = l.retrieve(&[new]).unwrap();
    if let Outcome::Verified(r) = &retrieved[0] {
        assert!(!r.text.as_deref().unwrap_or("").contains("ZZ99"));
    }
}

/// A rework worker that copies its inputs.
fn copy_inputs(inputs: &[(EntryId, Option<Vec<u8>>)]) -> Vec<u8> {
    inputs
        .iter()
        .flat_map(|(_, c)| c.clone().unwrap_or_default())
        .collect()
}

/// §4 independence + §5.3: two memories the agent made from ONE poisoned document are one
/// vote, but after rework drops their edges they are two parentless "independent" roots, and
/// the attacker's claim heals the quarantined fact.
#[test]
fn rework_copies_of_one_poisoned_document_do_not_win_a_heal_vote() {
    let (mut l, k) = world(MemoryStore::default());
    let page = put(
        &mut l,
        &k.tool,
        Kind::ToolResult,
        "<!-- payee: ZZ99 -->",
        &[],
    );
    let m1 = put(
        &mut l,
        &k.agent,
        Kind::Summary,
        "payee: ZZ99",
        &[(page, 1_000_000)],
    );
    let m2 = put(
        &mut l,
        &k.agent,
        Kind::Fact,
        "payee: ZZ99",
        &[(page, 900_000)],
    );
    let fact = put(
        &mut l,
        &k.agent,
        Kind::Fact,
        "payee: ZZ99 (checked)",
        &[(m1, 1_000_000)],
    );
    l.flag(page, Reach::All, &k.user, "injection").unwrap();
    let clock = std::cell::Cell::new(1_000u64);
    let report = rework(
        &mut l,
        &[m1, m2],
        &k.agent,
        ReworkOptions::default(),
        || {
            clock.set(clock.get() + 1);
            clock.get()
        },
        |_| {},
        |_, _, inputs| Ok::<_, String>(copy_inputs(inputs)),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let copies: Vec<EntryId> = report.reworked.iter().map(|(_, r)| *r).collect();
    assert_eq!(copies.len(), 2);
    let out = heal(
        &mut l,
        fact,
        &copies,
        |c| {
            std::str::from_utf8(c)
                .ok()?
                .strip_prefix("payee: ")
                .map(str::to_string)
        },
        &k.user,
        5_000,
    )
    .unwrap();
    assert!(
        matches!(out, HealOutcome::StillQuarantined { .. }),
        "two copies of one poisoned page healed the fact: {out:?}"
    );
}

/// §5.2 rule 2 + table in §1 ("any bound role"): a tool principal (the injected source's own
/// writer) may append a `replacement` of any entry never leased. It is accepted, marks the
/// target Done, and from then on healing and rework of that quarantined fact are refused
/// forever (and rework splices the tool's replacement in as the parent of reworked children).
#[test]
fn a_tool_principal_cannot_preempt_healing_with_a_replacement() {
    let (mut l, k) = world(MemoryStore::default());
    let (page, memo) = poisoned(&mut l, &k);
    l.flag(page, Reach::All, &k.user, "injection").unwrap();
    let mut e = ProvEntry::new(k.tool.key_id(), Kind::Replacement, b"payee IBAN ZZ99");
    e.target = Some(memo);
    let r = l.append(e, &k.tool, b"payee IBAN ZZ99");
    assert!(
        r.is_err(),
        "a tool principal replaced the quarantined memory {memo}: state {:?}",
        l.leases().state(&memo)
    );
}

/// §5.1/§5.2 vs audit: lease terms live in the (redactable) content. The live ledger judged the
/// replacement with the real ttl; an audit that has the entries but not the content (the
/// documented `(cose, label)` input of `audit::audit`) treats the lease as expired at once and
/// names a perfectly valid rework as `Problem::Admission(AdmissionError::Lease(NotHolder))`.
#[test]
fn audit_without_content_agrees_with_the_ledger_on_leases() {
    let (mut l, k) = world(MemoryStore::default());
    let (_, memo) = poisoned(&mut l, &k);
    l.claim_lease(memo, &k.agent, 10_000, 1_000).unwrap();
    let mut e = ProvEntry::new(k.agent.key_id(), Kind::Replacement, b"v2").with_time_ms(2_000);
    e.target = Some(memo);
    l.append(e, &k.agent, b"v2").unwrap();
    assert!(audit_with_content(&mut l, true).is_clean());
    let r = audit_with_content(&mut l, false);
    assert!(r.is_clean(), "audit without content: {:?}", r.failures);
}

/// §5.3 step 2: "A replacement refused because the lease expired meanwhile is dropped (the
/// worker that took over will replace it)". When NOBODY took over (one worker whose work simply
/// outlasts `ttl_ms`), the refusal is swallowed, the worker re-claims, redoes the work and is
/// refused again, round after round, appending a signed lease entry each time until
/// `give_up_after_ms` (10 minutes by default; `memlineage rework --ttl-ms 50 --exec "sleep 0.2;
/// cat"` appends ~4 leases a second and prints nothing). The append-only log fills with leases
/// and the target is never reworked.
#[test]
fn a_slow_uncontested_worker_does_not_spin_appending_leases() {
    let (mut l, k) = world(MemoryStore::default());
    let (page, memo) = poisoned(&mut l, &k);
    l.flag(page, Reach::All, &k.user, "injection").unwrap();
    let before = l.len();
    let clock = std::cell::Cell::new(1_000u64);
    let opts = ReworkOptions {
        ttl_ms: 10,
        poll_ms: 1,
        give_up_after_ms: 5_000,
    };
    let out = rework(
        &mut l,
        &[memo],
        &k.agent,
        opts,
        || {
            // Every clock read is 20 ms later: the work outlasts the 10 ms lease.
            clock.set(clock.get() + 20);
            clock.get()
        },
        |_| {},
        |_, _, _| Ok::<_, String>(b"redone".to_vec()),
    );
    let leases = (before..l.len())
        .filter(|i| l.get_by_index(*i).unwrap().entry().kind == Kind::Lease)
        .count();
    assert!(
        leases <= 3,
        "{leases} lease entries appended for one uncontested target; outcome {out:?}"
    );
}
