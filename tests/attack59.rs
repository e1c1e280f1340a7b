//! Attack review 59: the store-only attacker (who writes every byte of the ledger's directory
//! but not the hooks' state directory, and holds no key) against what the user does with the
//! CLI beside installed hooks. The user flags a source with `memlineage flag`; before any hook
//! wrote again, the attacker puts the ledger's files back as they were before the flag (a state
//! the ledger was in). Before review 59 the commands of the CLI opened and wrote without the
//! pin the hooks keep: the flag was in no pinned checkpoint, the next hook took the rolled-back
//! ledger as current, and the payment the flag refuses was allowed with exit 0. Now the
//! commands open against the pin of the hooks' default state directory and advance it after
//! they write (`spec/hooks.md` §6.2), so the hook refuses the ledger as behind its pin.
//! The Python front's side of the same review is `python/tests/test_attack59.py`.

#[path = "common/cli_support.rs"]
mod cli_support;
use cli_support::{ok, run, run_command};
use memlineage::record::{Kind, SignedEntry};
use memlineage::store::{SqliteStore, Store};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

const IBAN: &str = "GB33BUKB20201555555555";
const SESSION: &str = "a59-rent";

/// A ledger with the Claude Code hooks installed (state directory: the default, under the
/// test's `XDG_STATE_HOME`), a session whose user states the landlord's IBAN, and the
/// installed PreToolUse command.
struct Installed {
    dir: tempfile::TempDir,
    pre: String,
}

impl Installed {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("proj")).unwrap();
        ok(&run(&["init", "l.db"], dir.path(), None));
        install(dir.path());
        let text = std::fs::read_to_string(dir.path().join("proj/.claude/settings.json")).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let command = |event: &str| {
            let c = v["hooks"][event][0]["hooks"][0]["command"]
                .as_str()
                .unwrap();
            assert!(c.contains(" --state "), "{c}");
            c.to_string()
        };
        let i = Installed {
            pre: command("PreToolUse"),
            dir,
        };
        let start = json!({"session_id": SESSION, "hook_event_name": "SessionStart",
            "source": "startup"});
        assert_eq!(
            i.sh(&command("SessionStart"), &start).status.code(),
            Some(0)
        );
        let prompt = json!({"session_id": SESSION, "hook_event_name": "UserPromptSubmit",
            "prompt": format!("Pay my rent, 900 EUR, to my landlord's IBAN {IBAN}.")});
        assert_eq!(
            i.sh(&command("UserPromptSubmit"), &prompt).status.code(),
            Some(0)
        );
        i
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// Runs an installed hook command through `sh -c`, as the agent does.
    fn sh(&self, command: &str, event: &Value) -> Output {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(command)
            .current_dir(self.dir.path())
            .env("XDG_STATE_HOME", self.path(".state"));
        run_command(&mut c, Some(event.to_string().as_bytes()))
    }

    /// The installed PreToolUse hook's answer to paying the rent.
    fn pay(&self) -> Output {
        self.sh(&self.pre, &pay_event())
    }

    /// The same answered by `memlineage hook pre-tool-use l.db` written by hand, without
    /// `--state`.
    fn pay_by_hand(&self) -> Output {
        let e = pay_event().to_string();
        run(
            &["hook", "pre-tool-use", "l.db"],
            self.dir.path(),
            Some(e.as_bytes()),
        )
    }

    /// The user flags the session's prompt with `memlineage flag`; returns its id.
    fn flag_the_prompt(&self) -> String {
        let prompt = self.prompt_id();
        ok(&run(
            &[
                "flag",
                "l.db",
                &prompt,
                "--reason",
                "that IBAN is not my landlord's",
            ],
            self.dir.path(),
            None,
        ));
        prompt
    }

    /// The id of the session's prompt.
    fn prompt_id(&self) -> String {
        let store = SqliteStore::open(&self.path("l.db")).unwrap();
        (0..store.entry_count().unwrap())
            .filter_map(|i| store.entry_bytes(i).unwrap())
            .map(|b| SignedEntry::decode(&b).unwrap())
            .find(|e| e.entry().kind == Kind::Prompt)
            .unwrap()
            .id()
            .to_string()
    }
}

/// The PreToolUse event of paying the rent to the stated IBAN.
fn pay_event() -> Value {
    json!({"session_id": SESSION, "hook_event_name": "PreToolUse",
        "tool_name": "mcp__bank__send_money",
        "tool_input": {"recipient": IBAN, "amount": 900}})
}

/// `memlineage hook install` of the Claude Code hooks for `l.db` into `dir/proj`, with the
/// default state directory.
fn install(dir: &Path) {
    let args = [
        "hook",
        "install",
        "--agent",
        "claude-code",
        "--ledger",
        "l.db",
        "--dir",
        "proj",
    ];
    ok(&run(&args, dir, None));
}

/// The ledger's files in the ledger's directory (what the attacker copies and puts back).
fn ledger_files(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("l.db") && p.is_file()
        })
        .collect()
}

/// The attacker's copy of the ledger's files, taken now.
fn snapshot(i: &Installed) -> std::path::PathBuf {
    let snap = i.path("snap");
    std::fs::create_dir(&snap).unwrap();
    for f in ledger_files(i.dir.path()) {
        std::fs::copy(&f, snap.join(f.file_name().unwrap())).unwrap();
    }
    snap
}

/// The attacker puts the ledger's directory back as it was at `snap`.
fn put_back(i: &Installed, snap: &Path) {
    for f in ledger_files(i.dir.path()) {
        std::fs::remove_file(f).unwrap();
    }
    for f in std::fs::read_dir(snap).unwrap().flatten() {
        std::fs::copy(f.path(), i.path(&f.file_name().to_string_lossy())).unwrap();
    }
}

/// `out` is a refusal because the ledger is behind a checkpoint already signed (the pin).
fn refused_as_behind_the_pin(out: &Output) {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already signed a checkpoint"),
        "{out:?}"
    );
}

#[test]
fn a_ledger_rolled_back_behind_a_flag_the_cli_wrote_is_refused() {
    let i = Installed::new();
    assert_eq!(i.pay().status.code(), Some(0), "stated by the user: paid");
    let snap = snapshot(&i);
    let prompt = i.flag_the_prompt();
    put_back(&i, &snap);
    refused_as_behind_the_pin(&i.pay());
    // The CLI's reading commands refuse it too, and `verify` names it (before review 59 it
    // said OK: the rolled-back directory is consistent in itself).
    let explained = run(&["explain", "l.db", &prompt], i.dir.path(), None);
    assert!(!explained.status.success(), "{explained:?}");
    let verified = run(&["verify", "l.db"], i.dir.path(), None);
    let text = String::from_utf8_lossy(&verified.stdout);
    assert_eq!(verified.status.code(), Some(1), "{verified:?}");
    assert!(text.contains("hooks' pin: MISMATCH"), "{text}");
}

/// A hook command written by hand, without `--state`, beside installed hooks: it takes their
/// pin (before, it opened unpinned and allowed the rolled-back ledger's payment, exit 0).
#[test]
fn a_hook_run_without_state_beside_installed_hooks_takes_their_pin() {
    let i = Installed::new();
    let snap = snapshot(&i);
    i.flag_the_prompt();
    put_back(&i, &snap);
    let out = i.pay_by_hand();
    refused_as_behind_the_pin(&out);
}

/// The MCP server started by hand (`memlineage mcp l.db`, no `--state`) beside installed
/// hooks: its `ledger_flag` advances their pin (before, the flag was in no pinned checkpoint
/// and a rollback of the directory to before it let the installed hook allow the payment).
#[tokio::test(flavor = "current_thread")]
async fn the_mcp_server_run_without_state_advances_the_installed_pin() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    use rmcp::ServiceExt;
    let i = Installed::new();
    assert_eq!(i.pay().status.code(), Some(0), "stated by the user: paid");
    let snap = snapshot(&i);
    let state = i.path(".state");
    let cmd = tokio::process::Command::new(cli_support::BIN).configure(|c| {
        c.args(["mcp", "l.db"])
            .current_dir(i.dir.path())
            .env("XDG_STATE_HOME", &state);
    });
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let Value::Object(args) = json!({"source": i.prompt_id(),
        "reason": "that IBAN is not my landlord's"})
    else {
        unreachable!("an object")
    };
    let r = client
        .call_tool(CallToolRequestParams::new("ledger_flag").with_arguments(args))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    client.cancel().await.unwrap();
    put_back(&i, &snap);
    refused_as_behind_the_pin(&i.pay());
}

#[test]
fn without_a_rollback_the_flag_refuses_and_the_commands_keep_working() {
    let i = Installed::new();
    let prompt = i.flag_the_prompt();
    assert_eq!(i.pay().status.code(), Some(2));
    ok(&run(&["explain", "l.db", &prompt], i.dir.path(), None));
    ok(&run(&["checkpoint", "l.db"], i.dir.path(), None));
    let verified = ok(&run(&["verify", "l.db"], i.dir.path(), None));
    assert!(verified.contains("hooks' pin: size"), "{verified}");
    // `hook install` again re-pins (a ledger replaced on purpose stays the operator's act).
    install(i.dir.path());
}

/// The attacker replaces the ledger, its key file and side checkpoint by links to a ledger of
/// its own (`memlineage init` elsewhere). A command or hook without `--state` found the state
/// directory by the link's target, which holds no pin, and took that ledger unpinned; the
/// directory is now found by the path as written too.
#[test]
fn a_ledger_replaced_by_a_link_keeps_its_pin() {
    let i = Installed::new();
    std::fs::create_dir(i.path("elsewhere")).unwrap();
    ok(&run(&["init", "elsewhere/l.db"], i.dir.path(), None));
    for f in ledger_files(i.dir.path()) {
        std::fs::remove_file(f).unwrap();
    }
    for suffix in ["", ".key", ".checkpoint"] {
        let theirs = i.path(&format!("elsewhere/l.db{suffix}"));
        if theirs.exists() {
            std::os::unix::fs::symlink(theirs, i.path(&format!("l.db{suffix}"))).unwrap();
        }
    }
    let out = i.pay_by_hand();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not the one pinned"),
        "{out:?}"
    );
    let verified = run(&["verify", "l.db"], i.dir.path(), None);
    assert_eq!(verified.status.code(), Some(1), "{verified:?}");
    assert!(
        String::from_utf8_lossy(&verified.stdout).contains("hooks' pin: MISMATCH"),
        "{verified:?}"
    );
}

/// `hook prune LEDGER` prunes the records the installed hooks keep in their state directory
/// (before, only those beside the ledger: with the hooks installed it pruned nothing).
#[test]
fn prune_finds_the_records_in_the_installed_state_directory() {
    let i = Installed::new();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let args = ["hook", "prune", "l.db", "--older-than-days", "0"];
    let out = ok(&run(&args, i.dir.path(), None));
    assert!(out.contains("pruned 1 session(s)"), "{out}");
    let paid = i.pay();
    assert_eq!(paid.status.code(), Some(2), "{paid:?}");
    assert!(
        String::from_utf8_lossy(&paid.stderr).contains("was pruned"),
        "{paid:?}"
    );
}
