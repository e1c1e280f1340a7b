//! A pattern in a command (`rm …/agent.led*/*.json`) is matched against the protected files
//! as they are when the call is screened (`spec/hooks.md` §13.3), not as they were when the
//! front was made: the resident hook server builds its protected set once and keeps it for
//! its life, while session records, their marks and the state directory's files are created
//! later. A session record deleted through a glob loses what the ledger cannot give back (its
//! count of unrecorded outputs, §6), so the hook server must refuse it as a hook process does.

use memlineage::front::protect::Protected;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

fn bash(command: &str) -> Map<String, Value> {
    json!({ "command": command })
        .as_object()
        .cloned()
        .expect("object")
}

fn touches(p: &Protected, command: &str, cwd: &Path) -> bool {
    p.touch("Bash", &bash(command), Some(cwd)).is_some()
}

/// A ledger file in `dir` with its (empty) sessions directory and a working directory beside
/// it: `(ledger, sessions, work)`.
fn ledger_in(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ledger = dir.join("agent.ledger");
    std::fs::write(&ledger, b"x").expect("ledger");
    let sessions = dir.join("agent.ledger.sessions");
    std::fs::create_dir_all(&sessions).expect("sessions");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).expect("work");
    (ledger, sessions, work)
}

#[test]
fn a_session_record_made_after_the_protected_set_is_protected_from_patterns() {
    let dir = tempfile::tempdir().expect("dir");
    let (ledger, sessions, work) = ledger_in(dir.path());
    // Made before any session record exists (a server started with the session).
    let kept = Protected::for_ledger(&ledger, None, None, None, None);
    std::fs::write(sessions.join("ab12.json"), b"{}").expect("record");
    std::fs::create_dir_all(sessions.join("ab12.unrecorded")).expect("marks");
    let fresh = Protected::for_ledger(&ledger, None, None, None, None);
    let root = dir.path().display();
    for command in [
        format!("rm -f {root}/agent.led*/*.json"),
        format!("rm -rf {root}/*.sessions/*.unrecorded"),
    ] {
        assert!(touches(&fresh, &command, &work), "fresh: {command}");
        assert!(touches(&kept, &command, &work), "kept: {command}");
    }
}

#[test]
fn the_state_directorys_session_records_are_protected_from_patterns() {
    let dir = tempfile::tempdir().expect("dir");
    let ledger = dir.path().join("agent.ledger");
    std::fs::write(&ledger, b"x").expect("ledger");
    let state = dir
        .path()
        .join("state")
        .join("ledgers")
        .join("0123456789abcdef");
    std::fs::create_dir_all(state.join("sessions")).expect("state");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work");
    let p = Protected::for_ledger(&ledger, None, Some(&state), None, None);
    std::fs::write(state.join("sessions").join("ab12.json"), b"{}").expect("record");
    let marks = state.join("sessions").join("ab12.unrecorded");
    std::fs::create_dir_all(&marks).expect("marks");
    std::fs::write(marks.join("1-1"), b"").expect("mark");
    let root = dir.path().display();
    for command in [
        format!("rm -f {root}/state/ledgers/*/sessions/*.json"),
        format!("rm -f {root}/state/ledgers/*/sessions/*.unrecorded/*"),
    ] {
        assert!(touches(&p, &command, &work), "{command}");
    }
    // A glob elsewhere is not refused (`*.json` would be: it may name the project's
    // `.mcp.json`).
    assert!(!touches(&p, &format!("rm -f {root}/work/*.txt"), &work));
}

/// A directory of session records too large to list whole (a ledger that served many
/// sessions) stays protected whole: a pattern naming one record that the listing did not take
/// is refused as one naming a listed record is (`spec/hooks.md` §13.3), and a pattern naming
/// nothing in it is not.
#[test]
fn session_records_beyond_what_is_listed_are_protected_from_patterns() {
    let dir = tempfile::tempdir().expect("dir");
    let (ledger, sessions, work) = ledger_in(dir.path());
    for i in 0..1_200 {
        std::fs::write(sessions.join(format!("{i:04x}c0ffee.json")), b"{}").expect("record");
    }
    let p = Protected::for_ledger(&ledger, None, None, None, None);
    // The directory's own order: the last records are those a listing of the first thousand
    // leaves out.
    let names: Vec<String> = std::fs::read_dir(&sessions)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1_200);
    let root = dir.path().display();
    for name in names.iter().rev().take(20).chain(names.iter().take(2)) {
        let stem = name.trim_end_matches(".json");
        let command = format!("rm -f {root}/agent.led*.sessions/{stem}*");
        assert!(touches(&p, &command, &work), "{command}");
    }
    assert!(!touches(&p, &format!("rm -f {root}/notes*.txt"), &work));
    assert!(!touches(&p, &format!("rm -f {root}/work/*.tmp"), &work));
}

/// Staging is reading (`spec/hooks.md` §13.3, "Staged files"): with the ledger inside the
/// project, `git add -A` (and `.`, the ledger's directory, a glob pathspec, `git stash -u`)
/// would stage the signing key, and a commit and `git push origin` would publish it. Before,
/// each passed the screen. Staging what does not hold the key, and staging tracked files only,
/// still pass (a plain `git stash` is refused for another reason: it rewrites a tree holding
/// the ledger).
#[test]
fn staging_a_tree_that_holds_the_signing_key_is_reading_it() {
    let dir = tempfile::tempdir().expect("dir");
    let project = std::fs::canonicalize(dir.path()).expect("canonical");
    std::fs::create_dir_all(project.join(".git")).expect("git");
    std::fs::create_dir_all(project.join(".memlineage")).expect("ledger dir");
    std::fs::create_dir_all(project.join("src/deep")).expect("src");
    let ledger = project.join(".memlineage/agent.ledger");
    std::fs::write(&ledger, b"x").expect("ledger");
    std::fs::write(project.join(".memlineage/agent.ledger.key"), b"k").expect("key");
    let p = Protected::for_ledger(&ledger, None, None, None, None);
    let src = project.join("src/deep");
    for (command, cwd) in [
        ("git add -A", &project),
        ("git add --all", &src),
        ("git add .", &project),
        ("git add .memlineage", &project),
        ("git add -- '*.key'", &src),
        ("git -C ../.. add -A", &src),
        ("git stash -u", &project),
        ("git stash push --include-untracked", &src),
    ] {
        assert!(touches(&p, command, cwd), "{command} in {}", cwd.display());
    }
    for (command, cwd) in [
        ("git add src", &project),
        ("git add .", &src),
        ("git add -u", &project),
        ("git commit -am wip", &project),
        ("git add src/deep/x.rs", &project),
    ] {
        assert!(!touches(&p, command, cwd), "{command} in {}", cwd.display());
    }
}
