//! A session that read nothing (only the secrecy rule can refuse there, `spec/hooks.md` §16),
//! in a home holding the user's AWS credentials and a project holding a secret `.env`, and
//! what the installed Claude Code hook answers to shell commands in it (shared by the attack
//! reviews' tests of the secrecy rule).
// Each test file uses some of these helpers.
#![allow(dead_code)]

use super::installed_hook::{
    bash, fixture, open_session, plant_aws_credentials, post_tool_use, pre_tool_use, Answer,
    Fixture,
};

/// A fixture whose session `clean` read only the user's prompt.
pub fn clean_session() -> Fixture {
    let f = fixture();
    plant_aws_credentials(&f);
    std::fs::write(f.project.join(".env"), "TOKEN=abcdef123456XYZ\n").unwrap();
    open_session(&f, "clean", false);
    f
}

/// Records a `Read` of the project's `.env` in session `clean`: the session holds a secret.
pub fn read_env(f: &Fixture) {
    let env = f.project.join(".env");
    post_tool_use(
        f,
        "clean",
        "Read",
        serde_json::json!({"file_path": env}),
        serde_json::json!({"type": "text", "file": {"filePath": env, "content": "TOKEN=abcdef123456XYZ\n"}}),
    );
}

/// Writes each `(path, text)` of `files` under `root`, making its directories.
pub fn plant_files(root: &std::path::Path, files: &[(&str, &str)]) {
    for (at, text) in files {
        let file = root.join(at);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
}

/// Each of `commands` is refused in session `clean` by the secrecy rule (§16).
pub fn all_refused(f: &Fixture, commands: &[&str]) {
    let mut wrong = Vec::new();
    for c in commands {
        let got = bash(f, "clean", c);
        if !matches!(&got, Answer::Deny(why) if why.contains("§16")) {
            wrong.push(format!("{c}: {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Each of `commands` is refused in session `clean`, by whichever rule (§13 or §16).
pub fn refused_by_any_rule<S: AsRef<str>>(f: &Fixture, commands: &[S]) {
    let wrong: Vec<String> = commands
        .iter()
        .filter_map(|c| match bash(f, "clean", c.as_ref()) {
            Answer::Deny(_) => None,
            got => Some(format!("{}: {got:?}", c.as_ref())),
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Each `(tool, input)` of `calls` is refused in session `clean` by the secrecy rule (§16).
pub fn calls_refused(f: &Fixture, calls: Vec<(&str, serde_json::Value)>) {
    let mut wrong = Vec::new();
    for (tool, input) in calls {
        let got = pre_tool_use(f, "clean", tool, input);
        if !matches!(&got, Answer::Deny(why) if why.contains("§16")) {
            wrong.push(format!("{tool}: {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// None of `commands` is refused in session `clean`.
pub fn none_refused(f: &Fixture, commands: &[&str]) {
    let mut wrong = Vec::new();
    for c in commands {
        let got = bash(f, "clean", c);
        if matches!(got, Answer::Deny(_)) {
            wrong.push(format!("{c}: {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
