//! Attack review 57: the store-only attacker (who can write every byte of the SQLite file but
//! holds no key) against what a long-lived handle keeps between two decisions of the same
//! process: its view of the log (refreshed, not reopened), its warm retrievals, its origin
//! memory. Each test edits a real ledger file with SQL between two calls of one handle and
//! requires the second call to refuse as the first did, or as a fresh handle refuses.
//!
//! Found by the review: a handle that had not yet seen a flag another process appended and
//! signed a checkpoint over, refreshed after the attacker cut the flag out of the store (the
//! seal from before it put back, the flag's row and the checkpoints over it deleted), took
//! the store as it was and allowed the payment that a fresh handle refused on open
//! (`LedgerError::BehindSignedCheckpoint`, from the side file) — through the real binary too:
//! the resident hook server allowed it with exit 0 where a hook in process refused it. Refresh
//! now checks the store against the newest signed head it can find, as opening does
//! (`spec/lineage.md` §5.1), and the hook server and the MCP server hand the handle the pin
//! as it is now.

use memlineage::gate::{Policy, ToolCall};
use memlineage::ledger::{OpenOptions, META_SEAL};
use memlineage::lineage::quarantine::Reach;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, WriterKey};
use memlineage::retrieve::Outcome;
use memlineage::store::{SqliteStore, Store};
use memlineage::{Ledger, LedgerError};
use rusqlite::{params, Connection};
use std::path::{Path, PathBuf};

#[path = "common/landlord.rs"]
mod landlord;
use landlord::{landlord, pay, Landlord, Principals};

#[path = "common/sqlite_support.rs"]
mod sqlite_support;

/// The log key of every ledger here.
fn log() -> LogSigner {
    let key = WriterKey::for_label("a57/log");
    LogSigner::new("test.example/attack57", key).unwrap()
}

/// The landlord ledger of `tests/flat_open_under_store_edits.rs`, unflagged: a prompt, a
/// forum post and a memo of both that may justify the payment (Derived-Trusted).
struct Scene {
    _dir: tempfile::TempDir,
    path: PathBuf,
    p: Principals,
    post: EntryId,
    memo: EntryId,
    call: ToolCall,
}

impl Scene {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a57.db");
        let mut l = sqlite_support::sqlite_ledger(&path, log());
        let p = Principals::new("a57");
        let Landlord { post, memo, .. } = landlord(&mut l, &p);
        let call = pay(memo);
        l.checkpoint().unwrap();
        assert!(l.gate(&Policy::default(), &call).is_allow(), "unflagged");
        drop(l);
        Scene {
            _dir: dir,
            path,
            p,
            post,
            memo,
            call,
        }
    }

    /// The label seal the store holds now (what the attacker reads to put back later).
    fn seal(&self) -> String {
        let store = SqliteStore::open(&self.path).unwrap();
        store.meta(META_SEAL).unwrap().unwrap()
    }

    fn db(&self) -> Connection {
        Connection::open(&self.path).unwrap()
    }

    fn open_with(&self, opts: OpenOptions) -> Result<Ledger<SqliteStore>, LedgerError> {
        Ledger::open_with(SqliteStore::open(&self.path)?, log(), opts)
    }

    fn open(&self) -> Ledger<SqliteStore> {
        self.open_with(OpenOptions::default()).unwrap()
    }

    /// Another process flags the post (reach all) and signs a checkpoint over the flag (in the
    /// store and the side file); returns the checkpoint's note (what a front pins).
    fn flag_elsewhere(&self) -> Vec<u8> {
        let mut w = self.open();
        w.flag(self.post, Reach::All, &self.p.user, "advisory")
            .unwrap();
        assert!(!w.gate(&Policy::default(), &self.call).is_allow());
        w.checkpoint().unwrap().note().to_vec()
    }

    /// [`cut_from`] on this scene's file.
    fn cut_from(&self, size: u64, seal: &str) {
        cut_from(&self.path, size, seal);
    }
}

/// The store-only attacker cuts everything from leaf `size` on out of the ledger file at
/// `path`, in place: rows, tree hashes and checkpoints over them, and puts back the seal `seal`
/// it read before.
fn cut_from(path: &Path, size: u64, seal: &str) {
    let db = Connection::open(path).unwrap();
    let size = i64::try_from(size).unwrap();
    db.execute("DELETE FROM entries WHERE idx >= ?1", [size])
        .unwrap();
    db.execute("DELETE FROM checkpoints WHERE size > ?1", [size])
        .unwrap();
    let want = i64::try_from(memlineage::log::stored_hash_index(0, size as u64)).unwrap();
    db.execute("DELETE FROM tree_hashes WHERE idx >= ?1", [want])
        .unwrap();
    let n = db
        .execute(
            "UPDATE meta SET value = ?2 WHERE key = ?1",
            params![META_SEAL, seal],
        )
        .unwrap();
    assert_eq!(n, 1);
}

/// A long-lived handle that had not seen the flag yet must not take the cut store as current
/// when a signed head it can find (the side file) covers more than the store holds: a fresh
/// handle refuses to open it. Failed before the fix: the refresh found nothing new and the
/// payment was allowed.
#[test]
fn a_flag_cut_out_before_a_live_handle_saw_it_is_refused_as_on_open() {
    let s = Scene::new();
    let mut reader = s.open();
    assert!(reader.gate(&Policy::default(), &s.call).is_allow());
    let size = reader.len();
    let seal = s.seal();
    s.flag_elsewhere();
    s.cut_from(size, &seal);
    assert!(
        matches!(
            s.open_with(OpenOptions::default()),
            Err(LedgerError::BehindSignedCheckpoint { .. })
        ),
        "a fresh handle refuses the cut store"
    );
    match reader.refresh() {
        Err(LedgerError::BehindSignedCheckpoint { signed, stored }) => {
            assert!(signed > stored, "{signed} {stored}");
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => assert!(
            !reader.gate(&Policy::default(), &s.call).is_allow(),
            "the live handle allowed the payment a fresh handle refuses"
        ),
    }
}

/// The same cut with the side file put back too (the attacker writes the whole directory):
/// nothing in the directory tells the cut from the state before the flag, so only a head kept
/// outside it refuses it. A handle given that head (the fronts' pin) refuses the store at its
/// next refresh as it refuses it on open.
#[test]
fn a_flag_cut_out_with_the_side_file_put_back_is_refused_by_a_pin_the_handle_learns() {
    let s = Scene::new();
    let side = SqliteStore::side_checkpoint_path(&s.path);
    let old_side = std::fs::read(&side).unwrap();
    let mut reader = s.open();
    let size = reader.len();
    let seal = s.seal();
    let pin = s.flag_elsewhere();
    s.cut_from(size, &seal);
    std::fs::write(&side, &old_side).unwrap();
    // Byte for byte the state before the flag: a handle without the pin opens it.
    assert!(s.open().gate(&Policy::default(), &s.call).is_allow());
    let mut opts = OpenOptions::default();
    opts.checkpoints = vec![pin.clone()];
    assert!(matches!(
        s.open_with(opts),
        Err(LedgerError::BehindSignedCheckpoint { .. })
    ));
    reader.know_checkpoint(&pin).unwrap();
    // An older head learned after it does not take its place.
    reader.know_checkpoint(&old_side).unwrap();
    assert!(
        matches!(
            reader.refresh(),
            Err(LedgerError::BehindSignedCheckpoint { .. })
        ),
        "the live handle took the cut store after learning the pin"
    );
}

/// Pinned: a warm retrieval of the memo is not answered after another process quarantined it
/// and the attacker then rewrote the flag's row (the refresh refuses the row, or applies the
/// flag from its signed bytes).
#[test]
fn a_warm_memo_is_not_shown_after_a_flag_whose_row_was_rewritten() {
    let s = Scene::new();
    let mut reader = s.open();
    assert!(matches!(
        reader.retrieve(&[s.memo]).unwrap()[0],
        Outcome::Verified(_)
    ));
    s.flag_elsewhere();
    let db = s.db();
    db.execute(
        "UPDATE entries SET tag = NULL, kind = 0 WHERE idx = (SELECT max(idx) FROM entries)",
        [],
    )
    .unwrap();
    drop(db);
    if reader.refresh().is_ok() {
        let out = reader.retrieve(&[s.memo]).unwrap();
        assert!(!matches!(out[0], Outcome::Verified(_)), "{out:?}");
        assert!(!reader.gate(&Policy::default(), &s.call).is_allow());
    }
}

/// The check costs no false refusal: while another handle appends and signs a checkpoint after
/// every entry, a live handle's refreshes all pass (the heads are read before the store's size,
/// and a checkpoint is committed after its entries) and end with every entry seen. (A check
/// against the handle's own size instead of the store's refuses here at once; the order of the
/// two reads is argued, the window being too narrow to show.)
#[test]
fn refreshes_beside_a_writer_that_signs_after_every_append_all_pass() {
    let s = Scene::new();
    let mut reader = s.open();
    let path = s.path.clone();
    let user = WriterKey::for_label("a57/user");
    let writer = std::thread::spawn(move || {
        let mut w = Ledger::open(SqliteStore::open(&path).unwrap(), log()).unwrap();
        for i in 0..40 {
            let text = format!("later {i}");
            landlord::ledger_support::put(
                &mut w,
                &user,
                memlineage::record::Kind::Prompt,
                &text,
                &[],
            );
            w.checkpoint().unwrap();
        }
        w.len()
    });
    while !writer.is_finished() {
        reader.refresh().unwrap();
    }
    let len = writer.join().unwrap();
    reader.refresh().unwrap();
    assert_eq!(reader.len(), len);
}

#[path = "common/cli_support.rs"]
mod cli_support;

/// One Claude Code hook event of session `a57` (`hook` the subcommand, `name` its
/// `hook_event_name`, `more` its other members).
fn event(name: &str, more: serde_json::Value) -> Vec<u8> {
    let mut e = serde_json::json!({
        "session_id": "a57",
        "transcript_path": "/tmp/a57.jsonl",
        "cwd": "/tmp",
        "hook_event_name": name,
    });
    if let (Some(e), Some(more)) = (e.as_object_mut(), more.as_object()) {
        e.extend(more.clone());
    }
    serde_json::to_vec(&e).unwrap()
}

/// `memlineage hook HOOK l.db` in `dir` with `MEMLINEAGE_HOOK_SERVER` set to `server`: `only`
/// through the resident server, `off` in the hook process itself, unset (`None`) as installed
/// (the server, started when it is not up).
fn hook(dir: &Path, name: &str, input: &[u8], server: Option<&str>) -> std::process::Output {
    hook_in(dir, None, name, input, server)
}

/// [`hook`] with the state directory `state` (`--state`, `spec/hooks.md` §6.2) when given.
fn hook_in(
    dir: &Path,
    state: Option<&Path>,
    name: &str,
    input: &[u8],
    server: Option<&str>,
) -> std::process::Output {
    let mut c = std::process::Command::new(cli_support::BIN);
    c.args(["hook", name, "l.db"]);
    if let Some(st) = state {
        c.arg("--state").arg(st);
    }
    c.current_dir(dir).env("XDG_STATE_HOME", dir.join(".state"));
    if let Some(mode) = server {
        c.env("MEMLINEAGE_HOOK_SERVER", mode);
    }
    cli_support::run_command(&mut c, Some(input))
}

/// A ledger in `d` whose session `a57` started and whose user stated a payment, with the
/// resident hook server up (started by those hooks, with `state` when given) and allowing that
/// payment. Returns the payment's PreToolUse event.
fn stated_payment_served(d: &Path, state: Option<&Path>) -> Vec<u8> {
    cli_support::ok(&cli_support::run(&["init", "l.db"], d, None));
    let iban = "GB33BUKB20201555555555";
    let start = event("SessionStart", serde_json::json!({"source": "startup"}));
    let prompt = event(
        "UserPromptSubmit",
        serde_json::json!({"prompt": format!("Please send 100 EUR to {iban} for the rent.")}),
    );
    for (name, e) in [("session-start", &start), ("user-prompt-submit", &prompt)] {
        let out = hook_in(d, state, name, e, None);
        assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
    }
    let pay = event(
        "PreToolUse",
        serde_json::json!({
            "tool_name": "mcp__bank__send_money",
            "tool_input": {"recipient": iban, "amount": 100, "subject": "rent", "date": "2022-01-01"},
        }),
    );
    let began = std::time::Instant::now();
    loop {
        let out = hook_in(d, state, "pre-tool-use", &pay, Some("only"));
        if out.status.code() == Some(0) {
            return pay;
        }
        assert!(
            began.elapsed().as_secs() < 30,
            "the server never allowed the stated payment: {out:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `memlineage flag` of the ledger's first prompt (a checkpoint signed over the flag, in the
/// store and the side file). Returns the tree size and the seal from before it.
fn flag_the_prompt(d: &Path) -> (u64, String) {
    let store = SqliteStore::open(&d.join("l.db")).unwrap();
    let size = store.tree_size().unwrap();
    let seal = store.meta(META_SEAL).unwrap().unwrap();
    let prompt = (0..size)
        .map(|i| memlineage::record::SignedEntry::decode(&store.entry_bytes(i).unwrap().unwrap()))
        .map(Result::unwrap)
        .find(|e| e.entry().kind == memlineage::record::Kind::Prompt)
        .unwrap()
        .id()
        .to_string();
    drop(store);
    let args = ["flag", "l.db", &prompt, "--reason", "not the user's"];
    cli_support::ok(&cli_support::run(&args, d, None));
    (size, seal)
}

/// Through the real binary: the resident hook server, up and holding the ledger, allows a
/// payment the user's prompt states; `memlineage flag` then quarantines the prompt before the
/// server's next event, and the attacker cuts the flag out of the file in place (same inode:
/// the server does not reopen it). A hook in process refuses the payment (the store is behind
/// the side file); the server's refresh found nothing new and allowed it before the fix.
#[test]
fn the_hook_server_refuses_a_store_cut_below_a_flag_it_had_not_seen() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pay = stated_payment_served(d, None);
    let (size, seal) = flag_the_prompt(d);
    let out = hook(d, "pre-tool-use", &pay, Some("off"));
    assert_eq!(out.status.code(), Some(2), "flagged, in process: {out:?}");
    cut_from(&d.join("l.db"), size, &seal);
    let out = hook(d, "pre-tool-use", &pay, Some("off"));
    assert_eq!(out.status.code(), Some(2), "cut, in process: {out:?}");
    let out = hook(d, "pre-tool-use", &pay, Some("only"));
    assert_eq!(
        out.status.code(),
        Some(2),
        "cut, served: the server allowed what a hook in process refuses: {out:?}"
    );
}

/// The same with the state directory of installed hooks, and the side file put back too (the
/// attacker writes the whole ledger directory): only the pin, which a hook of another session
/// advanced past the flag after the server opened, tells. A hook in process refuses the
/// payment (behind the pin); the server, which read the pin only when it opened, allowed it
/// until it reads the pin again before each refresh.
#[test]
fn the_hook_server_refuses_a_store_cut_below_a_pin_advanced_since_it_opened() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = tempfile::tempdir().unwrap();
    let (d, st) = (dir.path(), Some(state_dir.path()));
    let pay = stated_payment_served(d, st);
    let side = SqliteStore::side_checkpoint_path(&d.join("l.db"));
    let old_side = std::fs::read(&side).unwrap();
    let (size, seal) = flag_the_prompt(d);
    // Another session's prompt, recorded in process: the pin advances past the flag.
    let other = String::from_utf8(event(
        "UserPromptSubmit",
        serde_json::json!({"prompt": "what is the weather"}),
    ))
    .unwrap()
    .replace("\"a57\"", "\"a57-other\"");
    let out = hook_in(d, st, "user-prompt-submit", other.as_bytes(), Some("off"));
    assert_eq!(out.status.code(), Some(0), "the other session: {out:?}");
    cut_from(&d.join("l.db"), size, &seal);
    std::fs::write(&side, &old_side).unwrap();
    let out = hook_in(d, st, "pre-tool-use", &pay, Some("off"));
    assert_eq!(out.status.code(), Some(2), "cut, in process: {out:?}");
    let out = hook_in(d, st, "pre-tool-use", &pay, Some("only"));
    assert_eq!(
        out.status.code(),
        Some(2),
        "cut, served: the server allowed what a hook in process refuses: {out:?}"
    );
}
