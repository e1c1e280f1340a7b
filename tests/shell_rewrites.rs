//! A command rewritten as bash would run it identically is answered at least as strictly as
//! the command itself (`spec/hooks.md` §13.3): each case of `tests/hooks/shell-rewrites/*.json`
//! pairs a command the screen refuses or asks (the protected set §13, the secrecy rule §16,
//! code, packages and gated writes §17) with rewrites of it that change only how the shell
//! reads the text — a bracket, a here-document, a carriage return, a locale quote — run
//! through the installed Claude Code hook in a session that read an injected page and in one
//! that read nothing. Benign commands using the same syntax still run.

#[path = "common/cli_support.rs"]
mod cli_support;
#[path = "common/installed_hook.rs"]
mod installed_hook;
use installed_hook::{answer, fixture, open_session, pre_event, sh, Answer, Fixture};
use serde_json::{json, Value};

/// Deny > ask > proceed.
fn strictness(a: &Answer) -> u8 {
    match a {
        Answer::Proceed => 0,
        Answer::Ask(_) => 1,
        Answer::Deny(_) => 2,
    }
}

fn run(f: &Fixture, session: &str, command: &str) -> Answer {
    let case = json!({"tool_name": "Bash", "tool_input": {"command": command}});
    answer(&sh(f, &f.pre, &pre_event(f, session, &case)))
}

fn corpus(f: &Fixture) -> Vec<Value> {
    let mut files: Vec<_> = std::fs::read_dir("tests/hooks/shell-rewrites")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let mut text = std::fs::read_to_string(p).unwrap();
            for (k, v) in &f.places {
                text = text.replace(k, v);
            }
            serde_json::from_str(&text).unwrap()
        })
        .collect()
}

#[test]
fn a_rewrite_bash_runs_identically_is_answered_at_least_as_strictly() {
    let f = fixture();
    // A secret the cases send, where the credentials file is.
    std::fs::create_dir_all(f.home.join(".aws")).unwrap();
    std::fs::write(f.home.join(".aws/credentials"), "[default]\n").unwrap();
    std::fs::create_dir_all(f.home.join(".ssh")).unwrap();
    std::fs::write(f.home.join(".ssh/id_rsa"), "key\n").unwrap();
    std::fs::create_dir_all(f.project.join(".git/hooks")).unwrap();
    let mut weaker = Vec::new();
    let mut checked = 0;
    for (session, injected) in [("injected", true), ("clean", false)] {
        open_session(&f, session, injected);
        for file in corpus(&f) {
            for case in file["cases"].as_array().unwrap() {
                let base = run(&f, session, case["base"].as_str().unwrap());
                for v in case["variants"].as_array().unwrap() {
                    let got = run(&f, session, v["command"].as_str().unwrap());
                    checked += 1;
                    if strictness(&got) < strictness(&base) {
                        weaker.push(format!(
                            "{session} session, {} / {}: base {base:?}, variant {got:?}",
                            case["id"], v["id"]
                        ));
                    }
                }
            }
        }
    }
    assert!(checked >= 10, "{checked} variants checked");
    assert!(
        weaker.is_empty(),
        "rewrites answered less strictly than their base:\n{}",
        weaker.join("\n")
    );
}

#[test]
fn benign_commands_with_the_same_syntax_still_run() {
    let f = fixture();
    std::fs::write(f.project.join("Cargo.toml"), "[package]\n").unwrap();
    let mut hit = Vec::new();
    for (session, injected) in [("injected", true), ("clean", false)] {
        open_session(&f, session, injected);
        for file in corpus(&f) {
            for c in file["benign"].as_array().unwrap() {
                let got = run(&f, session, c.as_str().unwrap());
                if got != Answer::Proceed {
                    hit.push(format!("{session} session, {c:?}: {got:?}"));
                }
            }
        }
    }
    assert!(
        hit.is_empty(),
        "benign commands not run:\n{}",
        hit.join("\n")
    );
}
