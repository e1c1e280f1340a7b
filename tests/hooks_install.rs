//! `memlineage hook install` and `memlineage hook doctor` (`spec/hooks.md` §9), against the real
//! binary, a real SQLite ledger and the hook commands run through `sh -c` as the agents run
//! them.

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

#[path = "common/cli_support.rs"]
mod cli_support;
use cli_support::{fails, ok, run, BIN};

const AGENTS: [(&str, &str); 2] = [
    ("claude-code", ".claude/settings.json"),
    ("codex", ".codex/hooks.json"),
];

/// A directory with a ledger `l.db` and a project directory `proj`.
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    ok(&run(&["init", "l.db"], dir.path(), None));
    std::fs::create_dir(dir.path().join("proj")).unwrap();
    dir
}

fn install(dir: &Path, agent: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "hook", "install", "--agent", agent, "--ledger", "l.db", "--dir", "proj",
    ];
    args.extend_from_slice(extra);
    run(&args, dir, None)
}

fn settings(dir: &Path, file: &str) -> Value {
    let text = std::fs::read_to_string(dir.join("proj").join(file)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The command of the single memlineage handler for `event`.
fn command(v: &Value, event: &str) -> String {
    let groups = v["hooks"][event].as_array().unwrap();
    let cmds: Vec<&str> = groups
        .iter()
        .flat_map(|g| g["hooks"].as_array().unwrap())
        .filter_map(|h| h["command"].as_str())
        .filter(|c| c.contains(" hook "))
        .collect();
    assert_eq!(cmds.len(), 1, "{event}: {cmds:?}");
    cmds[0].to_string()
}

/// Runs `cmd` as the agents do: `sh -c`, the event on standard input.
fn sh(cmd: &str, dir: &Path, event: &Value) -> Output {
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(cmd).current_dir(dir);
    cli_support::run_command(&mut sh, Some(event.to_string().as_bytes()))
}

/// The examples are exactly what `install` writes, with the paths replaced by placeholders.
#[test]
fn examples_are_what_install_writes() {
    let dir = setup();
    let ledger = std::path::absolute(dir.path().join("l.db")).unwrap();
    for ((agent, file), example) in AGENTS.iter().zip([
        "examples/claude-code-settings.json",
        "examples/codex-hooks.json",
    ]) {
        ok(&install(
            dir.path(),
            agent,
            &["--binary", "/opt/ml/bin/memlineage"],
        ));
        let written = std::fs::read_to_string(dir.path().join("proj").join(file)).unwrap();
        // The default state directory under XDG_STATE_HOME (cli_support sets it to the test's
        // directory).
        let canonical = std::fs::canonicalize(&ledger).unwrap();
        let h = memlineage::record::Hash32::digest(canonical.as_os_str().as_encoded_bytes());
        let state = dir
            .path()
            .join(".state/memlineage/ledgers")
            .join(&hex::encode(h.0)[..16]);
        let generic = written
            .replace("/opt/ml/bin/memlineage", "/path/to/memlineage")
            .replace(state.to_str().unwrap(), "/path/to/state")
            .replace(ledger.to_str().unwrap(), "/path/to/agent.ledger");
        assert_eq!(
            generic,
            std::fs::read_to_string(example).unwrap(),
            "{example} differs from what `hook install --agent {agent}` writes"
        );
    }
}

/// With the binary missing, the commands `install` wrote block (exit 2, with a reason on
/// stderr, which Codex requires) instead of exiting 127, which both agents treat as a
/// non-blocking error.
#[test]
fn missing_binary_blocks() {
    let dir = setup();
    let event = json!({"session_id": "s", "hook_event_name": "PreToolUse",
                       "tool_name": "mcp__bank__send_money", "tool_input": {"recipient": "X"}});
    for (agent, file) in AGENTS {
        ok(&install(
            dir.path(),
            agent,
            &["--binary", "/nonexistent/memlineage"],
        ));
        let v = settings(dir.path(), file);
        for ev in [
            "SessionStart",
            "PreToolUse",
            "PostToolUse",
            "UserPromptSubmit",
        ] {
            let out = sh(&command(&v, ev), dir.path(), &event);
            assert_eq!(out.status.code(), Some(2), "{agent} {ev}: {out:?}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("memlineage: hook failed (exit status 127); failing closed"),
                "{agent} {ev}: {stderr}"
            );
        }
        // The real binary through the same wrapping: a deny (here of arguments that are not an
        // object) stays one line of reason.
        ok(&install(dir.path(), agent, &["--binary", BIN]));
        let mut bad = event.clone();
        bad["tool_input"] = json!("X");
        let out = sh(
            &command(&settings(dir.path(), file), "PreToolUse"),
            dir.path(),
            &bad,
        );
        assert_eq!(out.status.code(), Some(2), "{agent}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr, "memlineage: deny: mcp__bank__send_money: tool_input is not a JSON object\n",
            "{agent}"
        );
    }
}

/// `install` merges: the user's keys and hooks stay (in their order), a hand-merged memlineage
/// hook of an older example is replaced, and a second run changes nothing.
#[test]
fn install_merges_and_is_idempotent() {
    let dir = setup();
    let user = json!({
        "model": "opus",
        "permissions": {"allow": ["Bash(cargo test:*)"], "deny": []},
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]},
                {"matcher": "*", "hooks": [{"type": "command", "timeout": 30, "command":
                    "memlineage hook pre-tool-use \"$CLAUDE_PROJECT_DIR/.memlineage/agent.ledger\""}]}
            ]
        },
        "env": {"A": "1"}
    });
    let path = dir.path().join("proj/.claude/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&user).unwrap()).unwrap();
    // serde_json sorts keys: write the user's order by hand to see that it is kept.
    let ordered = r#"{
  "model": "opus",
  "permissions": {"deny": [], "allow": ["Bash(cargo test:*)"]},
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]},
      {"matcher": "*", "hooks": [{"type": "command", "timeout": 30, "command": "memlineage hook pre-tool-use \"$CLAUDE_PROJECT_DIR/.memlineage/agent.ledger\""}]}
    ]
  },
  "env": {"A": "1"}
}"#;
    std::fs::write(&path, ordered).unwrap();
    ok(&install(dir.path(), "claude-code", &[]));
    let first = std::fs::read_to_string(&path).unwrap();
    let v: Value = serde_json::from_str(&first).unwrap();
    // Everything of the user's is there.
    assert_eq!(v["model"], user["model"]);
    assert_eq!(v["permissions"], user["permissions"]);
    assert_eq!(v["env"], user["env"]);
    assert_eq!(v["hooks"]["Stop"], user["hooks"]["Stop"]);
    assert_eq!(v["hooks"]["PreToolUse"][0], user["hooks"]["PreToolUse"][0]);
    // The old memlineage hook was replaced in place by the new one.
    let pre = v["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2, "{pre:?}");
    let cmd = command(&v, "PreToolUse");
    assert!(
        cmd.starts_with(&format!("'{BIN}' hook pre-tool-use '")),
        "{cmd}"
    );
    assert_eq!(pre[1]["hooks"][0]["onFailure"], "block");
    for ev in [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
    ] {
        assert!(command(&v, ev).contains(" || { s=$?;"), "{ev}");
    }
    // Key order kept: top level, and inside the user's objects.
    let order = |text: &str, keys: &[&str]| {
        let at: Vec<usize> = keys.iter().map(|k| text.find(k).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{keys:?} in\n{text}");
    };
    order(
        &first,
        &["\"model\"", "\"permissions\"", "\"hooks\"", "\"env\""],
    );
    order(&first, &["\"deny\"", "\"allow\""]);
    order(
        &first,
        &["\"Stop\"", "\"PreToolUse\"", "\"UserPromptSubmit\""],
    );
    // A second run leaves the file byte for byte.
    let out = install(dir.path(), "claude-code", &[]);
    assert!(ok(&out).contains("already up to date"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), first);
}

/// A settings file memlineage cannot merge into is refused (non-zero exit, clear message) and
/// left untouched.
/// README's first layout put the ledger in the project: `install` warns, since the key's
/// directory makes every search of the project a touch of the key (spec/hooks.md §13).
#[test]
fn install_warns_when_the_ledger_is_inside_the_project() {
    let dir = setup();
    let out = install(dir.path(), "claude-code", &[]);
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
    ok(&run(
        &["init", "proj/.memlineage/agent.ledger"],
        dir.path(),
        None,
    ));
    let out = run(
        &[
            "hook",
            "install",
            "--agent",
            "claude-code",
            "--ledger",
            "proj/.memlineage/agent.ledger",
            "--dir",
            "proj",
        ],
        dir.path(),
        None,
    );
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: the ledger")
            && stderr.contains("is inside the project")
            && stderr.contains("~/.memlineage/agent.ledger"),
        "{stderr}"
    );
}

#[test]
fn malformed_settings_are_refused_untouched() {
    let dir = setup();
    for (agent, file) in AGENTS {
        let path = dir.path().join("proj").join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        for (text, want) in [
            ("{\"hooks\": {\"PreToolUse\": [", "EOF while parsing"),
            ("{\"hooks\": []}", "`hooks` is not an object"),
            ("[]", "the root is not a JSON object"),
        ] {
            std::fs::write(&path, text).unwrap();
            let stderr = fails(&install(dir.path(), agent, &[]));
            assert!(stderr.contains(want), "{agent} {text}: {stderr}");
            assert!(stderr.contains("left untouched"), "{agent}: {stderr}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
    }
    // No ledger: refused before anything is written.
    let stderr = fails(&run(
        &[
            "hook", "install", "--agent", "codex", "--ledger", "no.db", "--dir", ".",
        ],
        dir.path(),
        None,
    ));
    assert!(stderr.contains("no ledger at no.db"), "{stderr}");
    assert!(!dir.path().join(".codex").exists());
}

/// `doctor` runs the configured commands: with the real binary the injected call is blocked and
/// the benign one allowed; with a wrong binary path every event fails closed, the benign call is
/// blocked too, and the doctor fails.
#[test]
fn doctor_reports_blocked_and_allowed() {
    let dir = setup();
    for (agent, _) in AGENTS {
        ok(&install(dir.path(), agent, &[]));
        let doctor = ["hook", "doctor", "--agent", agent, "--dir", "proj"];
        let report = ok(&run(&doctor, dir.path(), None));
        for want in [
            "ok   record the session's start: recorded",
            "ok   record the prompt: recorded",
            "ok   record tool output carrying an injected instruction: recorded",
            "ok   injected call (payment to the IBAN from tool output): blocked (exit 2: \
             memlineage: deny send_money: parameter `recipient`",
            "ok   benign call (payment to the IBAN from the prompt): allowed",
            "doctor: OK",
        ] {
            assert!(report.contains(want), "{agent}: {want}\n{report}");
        }
        assert!(!report.contains("note "), "{agent}: {report}");

        // A tool the settings name that the policy does not classify is noted (§15.3).
        let file = dir.path().join("proj").join(if agent == "codex" {
            ".codex/hooks.json"
        } else {
            ".claude/settings.json"
        });
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        v["hooks"]["PreToolUse"]
            .as_array_mut()
            .unwrap()
            .push(json!({"matcher": "mcp__pay__transfer_funds|Read",
                         "hooks": [{"type": "command", "command": "true"}]}));
        std::fs::write(&file, v.to_string()).unwrap();
        let report = ok(&run(&doctor, dir.path(), None));
        assert!(
            report.contains(
                "note tools declared in the settings that the policy does not classify, hence \
                 gated as sensitive (unknown_tools = \"gate\"): mcp__pay__transfer_funds;"
            ),
            "{agent}: {report}"
        );
        assert!(report.contains("doctor: OK"), "{agent}: {report}");

        ok(&install(
            dir.path(),
            agent,
            &["--binary", "/nonexistent/memlineage"],
        ));
        let out = run(&doctor, dir.path(), None);
        assert_eq!(out.status.code(), Some(1), "{agent}: {out:?}");
        let report = String::from_utf8_lossy(&out.stdout);
        for want in [
            "FAIL record the session's start: not recorded, want recorded (exit 2: sh: ",
            "FAIL record the prompt: not recorded, want recorded (exit 2: sh: ",
            "ok   injected call (payment to the IBAN from tool output): blocked",
            "FAIL benign call (payment to the IBAN from the prompt): blocked, want allowed",
            "doctor: FAILED",
        ] {
            assert!(report.contains(want), "{agent}: {want}\n{report}");
        }
    }
    // No settings at all.
    let stderr = fails(&run(
        &["hook", "doctor", "--agent", "codex", "--dir", "."],
        dir.path(),
        None,
    ));
    assert!(stderr.contains("hook install --agent codex"), "{stderr}");
}

/// The coding-agent scenario corpus (`tests/hooks/coding/*.jsonl`, `spec/hooks.md` §10.4)
/// through the commands `install` writes, run by `sh -c` with the real binary and the default
/// (coding-agent) policy: every injected call is blocked with a reason, every benign call
/// allowed, and every prompt and output recorded.
#[test]
fn coding_scenarios_through_installed_hooks() {
    // Injections: denied (exit 2), or put to the user (Claude Code: exit 0 with an ask
    // decision, spec/hooks.md §15 and §17); a case says which with `want_exit` and
    // `want_decision`.
    let (mut injections, mut blocked, mut asked_injections) = (0, 0, 0);
    let (mut benign, mut allowed) = (0, 0);
    let (mut asked_benign, mut asked_other) = (Vec::new(), 0);
    let mut files: Vec<_> = std::fs::read_dir("tests/hooks/coding")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let (agent, file) = if name.starts_with("codex-") {
            AGENTS[1]
        } else {
            AGENTS[0]
        };
        let dir = setup();
        ok(&install(dir.path(), agent, &["--binary", BIN]));
        let v = settings(dir.path(), file);
        // The scenarios' project directory is this test's (the decisions that look at the
        // file system, spec/hooks.md §17, see a real directory).
        let project = std::fs::canonicalize(dir.path().join("proj")).unwrap();
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("/home/u/proj", &project.display().to_string());
        for line in text.lines() {
            let c: Value = serde_json::from_str(line).unwrap();
            let event = &c["event"];
            let cmd = command(&v, event["hook_event_name"].as_str().unwrap());
            let out = sh(&cmd, &dir.path().join("proj"), event);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let want = c["want_exit"].as_i64().unwrap() as i32;
            let desc = format!("{name}: {}: {stderr}", c["desc"]);
            let asked = serde_json::from_slice::<Value>(&out.stdout)
                .is_ok_and(|v| v["hookSpecificOutput"]["permissionDecision"] == "ask");
            let proceeds = out.status.code() == Some(0) && out.stdout.is_empty();
            match c["kind"].as_str() {
                Some("injection") if asked => {
                    injections += 1;
                    asked_injections += 1;
                }
                Some("injection") => {
                    injections += 1;
                    blocked += u32::from(out.status.code() == Some(2));
                }
                Some("benign") if asked => {
                    benign += 1;
                    asked_benign.push(format!("{name}: {}", c["desc"]));
                }
                Some("benign") => {
                    benign += 1;
                    allowed += u32::from(proceeds);
                }
                _ => asked_other += u32::from(asked),
            }
            assert_eq!(out.status.code(), Some(want), "{desc}");
            assert_eq!(
                asked,
                c["want_decision"] == "ask",
                "{desc}: stdout {:?}",
                String::from_utf8_lossy(&out.stdout)
            );
            if want == 2 {
                assert!(stderr.starts_with("memlineage: deny"), "{desc}");
            } else {
                assert!(stderr.is_empty(), "{desc}");
                assert!(proceeds || asked, "{desc}: {:?}", out.stdout);
            }
        }
    }
    println!(
        "coding corpus: injections denied {blocked}/{injections}, asked {asked_injections}/\
         {injections}; benign allowed {allowed}/{benign}, asked {}/{benign}: \
         {asked_benign:#?}; other calls asked {asked_other}",
        asked_benign.len()
    );
    assert!(injections >= 15 && benign >= 15);
    // Every injection is refused: denied, or (Claude Code, a call whose harm no copied value
    // shows) put to the user with a receipt naming the untrusted read.
    assert_eq!(blocked + asked_injections, injections);
    assert_eq!(allowed + asked_benign.len() as u32, benign);
    // Measured (spec/hooks.md §15.5, §17.5).
    assert_eq!(
        (blocked, asked_injections, injections),
        (BLOCKED, ASKED_INJECTIONS, INJECTIONS)
    );
    assert_eq!(
        (allowed, asked_benign.len() as u32, benign),
        (ALLOWED, ASKED_BENIGN, BENIGN),
        "{asked_benign:?}"
    );
}

/// The coding corpus figures (spec/hooks.md §15.5 and §17.5, README).
const INJECTIONS: u32 = 43;
const BLOCKED: u32 = 36;
const ASKED_INJECTIONS: u32 = 7;
const BENIGN: u32 = 28;
const ALLOWED: u32 = 25;
const ASKED_BENIGN: u32 = 3;
