//! The injected Claude Code session of `tests/hooks/claude-injected.jsonl` recorded through
//! the real `memlineage hook` binary into a real SQLite ledger file (shared by the fail-closed
//! and store-attacker test files): the user's prompt and the injected bill, then the two
//! payments the bill asks for, which must stay refused (exit 2).
// Each test file uses some of these helpers.
#![allow(dead_code)]

use crate::cli_support::{ok, run};
use memlineage::record::{Kind, SignedEntry};
use memlineage::store::{SqliteStore, Store};
use rusqlite::Connection;
use serde_json::Value;
use std::path::PathBuf;

/// One hook event of the fixture: the hook name and the bytes on stdin.
pub struct Event {
    pub hook: String,
    pub input: Vec<u8>,
}

fn fixture() -> Vec<Event> {
    let text = std::fs::read_to_string("tests/hooks/claude-injected.jsonl").unwrap();
    text.lines()
        .map(|line| {
            let c: Value = serde_json::from_str(line).unwrap();
            Event {
                hook: c["hook"].as_str().unwrap().to_string(),
                input: serde_json::to_vec(&c["event"]).unwrap(),
            }
        })
        .collect()
}

/// The events of the fixture after its `SessionStart` ([`start`]): the prompt, the bill, the
/// payments.
pub fn events() -> Vec<Event> {
    fixture()
        .into_iter()
        .filter(|e| e.hook != "session-start")
        .collect()
}

/// The fixture's `SessionStart` (`spec/hooks.md` §3.1).
pub fn start() -> Event {
    fixture()
        .into_iter()
        .find(|e| e.hook == "session-start")
        .unwrap()
}

/// A ledger in a temp dir with the prompt and the injected bill recorded by the hooks.
pub struct Recorded {
    pub dir: tempfile::TempDir,
    pub events: Vec<Event>,
}

impl Recorded {
    pub fn new() -> Self {
        Self::new_with(2)
    }

    /// A ledger with the session started and its first `n` events recorded (1: the prompt
    /// only; 0: nothing, not even the start).
    pub fn new_with(n: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        ok(&run(&["init", "l.db"], dir.path(), None));
        let r = Recorded {
            dir,
            events: events(),
        };
        let begun = (n > 0).then(start);
        for e in begun.iter().chain(r.events.iter().take(n)) {
            let out = r.hook(e);
            assert_eq!(out.status.code(), Some(0), "{out:?}");
        }
        r
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn hook(&self, e: &Event) -> std::process::Output {
        run(&["hook", &e.hook, "l.db"], self.dir.path(), Some(&e.input))
    }

    /// [`Recorded::hook`] in the hook process itself, with no resident hook server (which may
    /// still hold what it read before a file was changed under it).
    pub fn hook_in_process(&self, e: &Event) -> std::process::Output {
        crate::cli_support::run_command(
            std::process::Command::new(crate::cli_support::BIN)
                .args(["hook", &e.hook, "l.db"])
                .current_dir(self.dir.path())
                .env("XDG_STATE_HOME", self.dir.path().join(".state"))
                .env("MEMLINEAGE_HOOK_SERVER", "off"),
            Some(&e.input),
        )
    }

    /// Runs the two payment attempts of the fixture (to the attacker's IBAN, and of the
    /// bill's amount); both must exit 2.
    pub fn assert_payments_refused(&self, what: &str) {
        for e in &self.events[2..4] {
            let out = self.hook(e);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{what}: a payment from the injected bill must stay refused; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// [`Recorded::assert_payments_refused`] with every hook in process
    /// ([`Recorded::hook_in_process`]).
    pub fn assert_payments_refused_in_process(&self, what: &str) {
        for e in &self.events[2..4] {
            let out = self.hook_in_process(e);
            assert_eq!(out.status.code(), Some(2), "{what}, in process: {out:?}");
        }
    }

    pub fn cli(&self, args: &[&str]) -> String {
        ok(&run(args, self.dir.path(), None))
    }

    /// The id (hex) of the first entry of `kind`.
    pub fn first(&self, kind: Kind) -> String {
        let store = SqliteStore::open(&self.path("l.db")).unwrap();
        for i in 0..store.tree_size().unwrap() {
            let bytes = store.entry_bytes(i).unwrap().unwrap();
            let e = SignedEntry::decode(&bytes).unwrap();
            if e.entry().kind == kind {
                return e.id().to_string();
            }
        }
        panic!("no {kind:?} entry");
    }

    pub fn sql(&self, statement: &str) -> usize {
        let c = Connection::open(self.path("l.db")).unwrap();
        c.execute(statement, []).unwrap()
    }
}
