//! The content epoch on PostgreSQL (`spec/storage.md` §11.2, `Store::content_epoch`): a
//! handle keeps what it verified of entries (warm retrievals, `spec/log.md` §11; the origin
//! check's texts, `spec/gate.md` §3.3; a session's judgements, `spec/hooks.md` §4.7) only
//! while the epoch stays. It must move with every statement that changes or removes stored
//! content or rewrites or removes entry rows, by any connection (a redaction, `psql`), and not
//! with the ledger's own appends, sequencing, integration and sealing — otherwise a handle of a
//! ledger with many writers would keep nothing. Against a real server (`DATABASE_URL`; fails
//! without it).

#[path = "common/pg_support.rs"]
mod pg_support;

#[path = "common/faulty_store.rs"]
mod faulty_store;

use faulty_store::Faulty;
use memlineage::gate::{Policy, ToolCall};
use memlineage::ledger::Integrator;
use memlineage::lineage::LabelPolicy;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Parent, ProvEntry, Role, SignedEntry, Weight, WriterKey};
use memlineage::retrieve::Outcome;
use memlineage::store::{PgStore, Store, StoreError};
use memlineage::Ledger;
use pg_support::psql;

fn log() -> LogSigner {
    LogSigner::new("test.example/pg-epoch", WriterKey::for_label("pge/log")).unwrap()
}

fn user() -> WriterKey {
    WriterKey::for_label("pge/user")
}

fn tool() -> WriterKey {
    WriterKey::for_label("pge/tool")
}

fn agent() -> WriterKey {
    WriterKey::for_label("pge/agent")
}

/// A fresh ledger: a user's prompt, three pages of a tool, and the agent's
/// memory of the prompt and (by a weak edge, which leaves its label trusted) the first page;
/// returns its name and the ids in that order.
fn build(url: &str) -> (String, Vec<EntryId>) {
    let name = pg_support::fresh_ledger("pgepoch");
    let mut l = Ledger::create(
        PgStore::connect(url, &name).unwrap(),
        log(),
        LabelPolicy::default(),
    )
    .unwrap();
    let (user, tool) = (user(), tool());
    l.bind(user.key_id(), Role::User, "user").unwrap();
    l.bind(tool.key_id(), Role::Tool, "tool:web").unwrap();
    let text = b"Pay this month's rent, please.";
    let e = ProvEntry::new(user.key_id(), Kind::Prompt, text);
    let mut ids = vec![l.append(e, &user, text).unwrap().id];
    for i in 0..3 {
        let text = format!("page {i}: nothing to pay");
        let e = ProvEntry::new(tool.key_id(), Kind::ToolResult, text.as_bytes());
        ids.push(l.append(e, &tool, text.as_bytes()).unwrap().id);
    }
    let agent = agent();
    l.bind(agent.key_id(), Role::Agent, "agent").unwrap();
    let text = b"The user pays 1200 to GB29NWBK60161331926819.";
    let e = ProvEntry::new(agent.key_id(), Kind::Summary, text).with_parents(vec![
        Parent {
            id: ids[0],
            weight: Weight::ONE,
        },
        Parent {
            id: ids[1],
            weight: Weight::new(50_000).unwrap(),
        },
    ]);
    ids.push(l.append(e, &agent, text).unwrap().id);
    l.checkpoint().unwrap();
    (name, ids)
}

fn epoch(store: &PgStore) -> u64 {
    store
        .content_epoch()
        .unwrap()
        .expect("PostgreSQL tells its content epoch")
}

#[test]
fn the_epoch_moves_when_stored_bytes_change_or_go_and_not_when_entries_are_added() {
    let url = pg_support::database_url("pg_content_epoch");
    let (name, ids) = build(&url);
    let probe = PgStore::connect(&url, &name).unwrap();
    let before = epoch(&probe);

    // The ledger's own work: appends, sequencing (which sets the context column), integration,
    // and sealing the sequenced rows (which sets their tags).
    let tool = tool();
    let mut l = Ledger::open(PgStore::connect(&url, &name).unwrap(), log()).unwrap();
    let text = b"page 3: appended";
    let e = ProvEntry::new(tool.key_id(), Kind::ToolResult, &text[..]);
    l.append(e, &tool, text).unwrap();
    let text = b"page 4: sequenced";
    let e = SignedEntry::sign(
        ProvEntry::new(tool.key_id(), Kind::ToolResult, &text[..]),
        &tool,
    )
    .unwrap();
    l.submit_signed(vec![(e, &text[..])]).unwrap();
    let integrator =
        Integrator::new(Ledger::open(PgStore::connect(&url, &name).unwrap(), log()).unwrap());
    integrator.integrate(&probe, 100).unwrap();
    l.refresh().unwrap();
    l.checkpoint().unwrap();
    assert_eq!(
        l.len(),
        10,
        "three keyring entries, a prompt, five pages, a memory"
    );
    assert_eq!(
        epoch(&probe),
        before,
        "the ledger's own writes moved the epoch"
    );

    // Every change or removal of stored bytes moves it, whoever makes it, even one that
    // changes no row's value.
    let hash = l.get(&ids[1]).unwrap().entry().content_hash;
    let hex: String = hash.0.iter().map(|b| format!("{b:02x}")).collect();
    let mut last = before;
    let moved = |what: &str, last: &mut u64| {
        let now = epoch(&probe);
        assert_ne!(now, *last, "{what} did not move the content epoch");
        *last = now;
    };
    let mut other = PgStore::connect(&url, &name).unwrap();
    assert!(other.redact(&hash).unwrap());
    moved("a redaction by another handle", &mut last);
    for sql in [
        "UPDATE content SET bytes = bytes".to_string(),
        format!("DELETE FROM content WHERE hash = '\\x{hex}'::bytea"),
        "DELETE FROM content WHERE false".to_string(),
        "UPDATE entries SET cose = cose WHERE idx = 2".to_string(),
        "UPDATE entries SET label = label".to_string(),
        "UPDATE entries SET content_hash = NULL WHERE idx = 3".to_string(),
        "DELETE FROM entries WHERE idx = 9".to_string(),
        // Attack review 48: the other statements that rewrite rows (an upsert's update, a
        // data-modifying CTE) fire the statement triggers too, column list included.
        "INSERT INTO entries SELECT * FROM entries WHERE idx = 2 \
         ON CONFLICT (idx) DO UPDATE SET cose = excluded.cose"
            .to_string(),
        "INSERT INTO content SELECT * FROM content \
         ON CONFLICT (hash) DO UPDATE SET bytes = excluded.bytes"
            .to_string(),
        "WITH u AS (UPDATE entries SET kind = kind WHERE idx = 4 RETURNING 1) \
         SELECT count(*) FROM u"
            .to_string(),
        "TRUNCATE content".to_string(),
    ] {
        psql(&url, &name, &sql);
        moved(&sql, &mut last);
    }
}

/// A handle on PostgreSQL answers a repeated retrieval and a repeated origin check from what it
/// verified, reading no entry again; once content is deleted by SQL, it reads again and fails
/// closed exactly as a fresh handle does.
#[test]
fn a_warm_handle_reads_nothing_again_and_a_deleted_text_is_read_again() {
    let url = pg_support::database_url("pg_content_epoch");
    let (name, ids) = build(&url);
    let store = Faulty {
        epoch: true,
        ..Faulty::new(PgStore::connect(&url, &name).unwrap())
    };
    let mut l = Ledger::open(store, log()).unwrap();
    let verified = |o: &Outcome| match o {
        Outcome::Verified(r) => r.text.clone(),
        other => panic!("not verified: {other:?}"),
    };
    let first = l.retrieve(&ids).unwrap();
    assert!(first.iter().all(|o| verified(o).is_some()));
    let (_, bytes, _) = l.store().reads();
    let again = l.retrieve(&ids).unwrap();
    let texts = |o: &[Outcome]| o.iter().map(verified).collect::<Vec<_>>();
    assert_eq!(texts(&again), texts(&first));
    assert_eq!(
        l.store().reads().1,
        bytes,
        "a warm retrieval read entries again"
    );

    // The origin check of the memory, which states the IBAN and the amount: neither the
    // prompt nor the page it also cites does; kept after the first check.
    let policy = Policy::default();
    let call = ToolCall {
        tool: "send_money".into(),
        sensitive: false,
        args: vec![
            ("recipient".into(), vec![ids[4]]),
            ("amount".into(), vec![ids[4]]),
        ],
    };
    let values = serde_json::json!({"recipient": "GB29NWBK60161331926819", "amount": 1200});
    let values = values.as_object().unwrap();
    assert!(l.gate_values(&policy, &call, values).is_allow());
    let (_, bytes, _) = l.store().reads();
    assert!(l.gate_values(&policy, &call, values).is_allow());
    assert_eq!(
        l.store().reads().1,
        bytes,
        "a warm origin check read entries again"
    );

    // The page's text deleted by SQL: no longer rendered, and the memory citing it is refused
    // (an untrusted text that cannot be read holds every value), as on a fresh handle.
    let hash = l.get(&ids[1]).unwrap().entry().content_hash;
    let hex: String = hash.0.iter().map(|b| format!("{b:02x}")).collect();
    psql(
        &url,
        &name,
        &format!("DELETE FROM content WHERE hash = '\\x{hex}'::bytea"),
    );
    assert_eq!(verified(&l.retrieve(&ids[1..2]).unwrap()[0]), None);
    let mut fresh = Ledger::open(PgStore::connect(&url, &name).unwrap(), log()).unwrap();
    assert_eq!(verified(&fresh.retrieve(&ids[1..2]).unwrap()[0]), None);
    let warm = l.gate_values(&policy, &call, values);
    assert!(!warm.is_allow(), "a deleted text still justified a payment");
    assert_eq!(warm, fresh.gate_values(&policy, &call, values));
}

/// A ledger created before the content epoch gets it when first connected (and keeps its
/// entries); a store whose epoch trigger was turned off is refused by the catalog check.
#[test]
fn an_older_ledger_gets_the_epoch_and_a_disabled_trigger_is_refused() {
    let url = pg_support::database_url("pg_content_epoch");
    let (name, _) = build(&url);
    psql(
        &url,
        &name,
        "DROP TRIGGER content_changed ON content; DROP TRIGGER entries_changed ON entries; \
         DROP FUNCTION content_changed(); DROP TABLE content_epoch",
    );
    let store = PgStore::connect(&url, &name).unwrap();
    let at = epoch(&store);
    let l = Ledger::open(store, log()).unwrap();
    assert_eq!(l.len(), 8);
    let mut other = PgStore::connect(&url, &name).unwrap();
    let hash = l
        .get(&l.store().meta_at(5).unwrap().unwrap().id)
        .unwrap()
        .entry()
        .content_hash;
    assert!(other.redact(&hash).unwrap());
    assert_ne!(
        epoch(l.store()),
        at,
        "the added trigger does not move the epoch"
    );

    psql(
        &url,
        &name,
        "ALTER TABLE content DISABLE TRIGGER content_changed",
    );
    match PgStore::connect(&url, &name) {
        Err(StoreError::Corrupt { reason }) => {
            assert!(reason.contains("content_changed"), "{reason}")
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("a store whose content epoch trigger is off was used"),
    }
}
