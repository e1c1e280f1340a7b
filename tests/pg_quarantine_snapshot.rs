//! The quarantine snapshot on PostgreSQL (`spec/lineage.md` §5.3) with sequenced entries
//! (`submit_signed`, integrated by an [`Integrator`]): a memory of a flagged page sequenced by
//! another handle after the snapshot stays quarantined for a live handle that catches up, for a
//! fresh open with the snapshot, and under an older seal replayed by a store-only attacker with
//! the memory's row moved below the snapshot's size (attack review 48: held; that open is refused).
//! Against a real server (`DATABASE_URL`; fails without it).

#[path = "common/pg_support.rs"]
mod pg_support;

use memlineage::ledger::Integrator;
use memlineage::lineage::quarantine::Reach;
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{Kind, Parent, ProvEntry, Role, SignedEntry, Weight, WriterKey};
use memlineage::store::{PgStore, Store};
use memlineage::Ledger;
use pg_support::psql;

fn log() -> LogSigner {
    LogSigner::new("test.example/pg-qsnap", WriterKey::for_label("pgq/log")).unwrap()
}

#[test]
fn a_sequenced_memory_of_a_flagged_page_stays_quarantined() {
    let url = pg_support::database_url("pg_quarantine_snapshot");
    let name = pg_support::fresh_ledger("pgqsnap");
    let connect = || PgStore::connect(&url, &name).unwrap();
    let mut a = Ledger::create(connect(), log(), LabelPolicy::default()).unwrap();
    let (user, tool, agent) = (
        WriterKey::for_label("pgq/user"),
        WriterKey::for_label("pgq/tool"),
        WriterKey::for_label("pgq/agent"),
    );
    a.bind(user.key_id(), Role::User, "user").unwrap();
    a.bind(tool.key_id(), Role::Tool, "tool").unwrap();
    a.bind(agent.key_id(), Role::Agent, "agent").unwrap();
    let text = b"advisory target";
    let e = ProvEntry::new(tool.key_id(), Kind::ToolResult, &text[..]);
    let bad = a.append(e, &tool, text).unwrap();
    let older_seal = a.store().meta("label_seal").unwrap().unwrap();
    let text = b"a page";
    let e = ProvEntry::new(tool.key_id(), Kind::ToolResult, &text[..]);
    let page = a.append(e, &tool, text).unwrap();
    a.flag(bad.id, Reach::All, &user, "advisory").unwrap();
    let snapshot = a.store().meta("quarantine_seal").unwrap().unwrap();

    // Another handle sequences a memory of the flagged page; an integrator integrates it.
    let mut b = Ledger::open(connect(), log()).unwrap();
    let text = b"memory of the flagged page";
    let e = SignedEntry::sign(
        ProvEntry::new(agent.key_id(), Kind::Summary, &text[..]).with_parents(vec![Parent {
            id: bad.id,
            weight: Weight::ONE,
        }]),
        &agent,
    )
    .unwrap();
    let memory = e.id();
    b.submit_signed(vec![(e, &text[..])]).unwrap();
    let probe = connect();
    Integrator::new(Ledger::open(connect(), log()).unwrap())
        .integrate(&probe, 100)
        .unwrap();
    assert_eq!(
        a.store().meta("quarantine_seal").unwrap().unwrap(),
        snapshot
    );
    a.refresh().unwrap();
    assert!(a.is_quarantined(&memory), "the live handle freed it");
    let fresh = Ledger::open(connect(), log()).unwrap();
    assert!(fresh.is_quarantined(&memory), "a fresh open freed it");
    drop((a, b, fresh));

    // The attacker: the seal of before the flag, the memory swapped with the page below the
    // snapshot's size, tags dropped, checkpoints deleted.
    let m_index = {
        let l = Ledger::open(connect(), log()).unwrap();
        l.index_of(&memory).unwrap()
    };
    assert!(page.index < m_index);
    let (p, m) = (page.index, m_index);
    psql(
        &url,
        &name,
        &format!(
            "DELETE FROM checkpoints; UPDATE meta SET value = '{older_seal}' \
             WHERE key = 'label_seal'; \
             UPDATE entries SET idx = 1000000, tag = NULL WHERE idx = {p}; \
             UPDATE entries SET idx = {p}, tag = NULL WHERE idx = {m}; \
             UPDATE entries SET idx = {m} WHERE idx = 1000000"
        ),
    );
    // On PostgreSQL the integrator signed a checkpoint over the memory: with it deleted the
    // stored labelling parameters are not signed, and the open refuses (fail closed); an open
    // that reads the store must keep the memory quarantined.
    if let Ok(l) = Ledger::open(connect(), log()) {
        assert!(
            l.is_quarantined(&memory),
            "the memory moved below the snapshot under an older seal is freed"
        );
    }
}
