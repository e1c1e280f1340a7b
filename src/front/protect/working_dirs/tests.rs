use super::*;
use crate::front::protect::shell::lex;
use crate::front::protect::simple::simple_commands;

/// A target resolved as the shells do for a literal word: under the working directory
/// unless absolute; `~` is `/h`.
fn resolve(w: &Word, here: Option<&Path>) -> Option<PathBuf> {
    if let Some((Piece::Home, rest)) = w.pieces.split_first() {
        let rest = Word {
            pieces: rest.to_vec(),
        };
        return Some(PathBuf::from(format!("/h{}", rest.literal()?)));
    }
    let l = w.literal()?;
    match l.starts_with('/') {
        true => Some(PathBuf::from(l)),
        false => here.map(|h| h.join(l)),
    }
}

/// Where each simple command of `text`, started in `/p`, may run.
fn walk(text: &str) -> Vec<Vec<String>> {
    let lexed = lex(text);
    let mut wd = WorkingDirs::new(text, &lexed, Some(PathBuf::from("/p")));
    let mut out = Vec::new();
    for s in simple_commands(&lexed) {
        out.push(
            wd.here()
                .iter()
                .map(|d| d.as_ref().map_or("?".into(), |d| d.display().to_string()))
                .collect(),
        );
        wd.step(&s.words, s.ends, &resolve);
    }
    out
}

/// Where the last simple command of `text` may run.
fn last(text: &str) -> Vec<String> {
    walk(text).pop().unwrap_or_default()
}

#[test]
fn a_move_joined_by_and_is_certain() {
    assert_eq!(last("cd src && cargo test"), ["/p/src"]);
    assert_eq!(last("cd src && cd .. && ls"), ["/p/src/.."]);
    assert_eq!(last("cd /a && cd b && ls"), ["/a/b"]);
    assert_eq!(last("cd && ls"), ["/h"]);
    assert_eq!(last("cd -P -- /a && ls"), ["/a"]);
    assert_eq!(last("builtin cd /a && ls"), ["/a"]);
    assert_eq!(last("command cd /a && ls"), ["/a"]);
    assert_eq!(last("X=1 cd /a && ls"), ["/a"]);
    assert_eq!(last("ls; ls && ls"), ["/p"]);
}

#[test]
fn a_move_that_may_fail_or_not_apply_keeps_both() {
    for text in [
        "cd /a; ls",
        "cd /a\nls",
        "cd /a || ls",
        "true || cd /a && ls",
        "cd /a && true; ls",
        "(cd /a); ls",
        "cd /a | true; ls",
        "true | cd /a; ls",
        "cd /a & ls",
        "if false; then cd /a; fi; ls",
        "{ cd /a; }; ls",
        "f() { cd /a; }; ls",
        "for d in x; do cd /a; done; ls",
    ] {
        let got = last(text);
        assert!(
            got.contains(&"/p".to_string()) && got.contains(&"/a".to_string()),
            "{text}: {got:?}"
        );
    }
}

#[test]
fn the_previous_directory_and_the_stack_are_followed() {
    assert_eq!(last("cd /a && cd /b && cd - && ls"), ["/a"]);
    assert_eq!(last("cd /a && pushd /b && popd && ls"), ["/a"]);
    assert_eq!(last("pushd /a && pushd /b && pushd && ls"), ["/a"]);
    assert_eq!(last("cd /a && pushd -n /b && ls"), ["/a"]);
    assert_eq!(last("pushd /a && popd -n && ls"), ["/a"]);
    // The stack before the text, `$OLDPWD` and entries are not known.
    for text in [
        "cd - && ls",
        "popd && ls",
        "pushd && ls",
        "pushd /a && pushd /b && pushd +1 && ls",
        "cd /a && popd +1 && ls",
        "cd -1 && ls",
        "(pushd /a); popd && ls",
        "pushd /a && dirs -c && popd && ls",
        "pushd /a && DIRSTACK[1]=/b && popd && ls",
    ] {
        assert!(last(text).contains(&"?".to_string()), "{text}");
    }
}

#[test]
fn code_this_shell_runs_and_a_program_only_known_when_it_runs_may_move_it() {
    for text in [
        "eval \"$X\" && ls",
        ". ./x.sh && ls",
        "source x.sh && ls",
        "trap 'cd /a' DEBUG && ls",
        "alias c='cd /a' && c && ls",
        "$c /a && ls",
    ] {
        assert!(last(text).contains(&"?".to_string()), "{text}");
    }
    assert_eq!(last("echo eval && ls"), ["/p"]);
    assert_eq!(last("\"$@\" && ls"), ["/p"]);
    // Code that cannot move it leaves it where it was.
    assert_eq!(last("trap 'rm -f x' INT && ls"), ["/p"]);
    assert_eq!(last("trap \"rm -f $T\" EXIT && ls"), ["/p"]);
    assert!(last("trap \"rm -f $T\" INT && ls").contains(&"?".to_string()));
    assert_eq!(last("alias ll='ls -l' && ls"), ["/p"]);
    // `eval` of words all known is read as its text.
    assert_eq!(last("eval cd /a && ls"), ["/a"]);
    assert_eq!(last("eval 'cd /a && cd b' && ls"), ["/a/b"]);
    assert_eq!(last("eval 'cd /a; cd b' && ls"), ["/p/b", "/a/b"]);
    assert_eq!(last("cd /a && eval 'pushd /b' && popd && ls"), ["/a"]);
}

#[test]
fn cdpath_entries_are_where_a_relative_cd_may_go() {
    assert_eq!(last("CDPATH=/x cd a && ls"), ["/p/a", "/x/a"]);
    assert_eq!(
        last("export CDPATH=/x:y:; cd /p && cd a && ls"),
        ["/p/a", "/x/a", "/p/y/a"]
    );
    assert_eq!(last("CDPATH=~ cd a && ls"), ["/p/a", "/h/a"]);
    // Neither an absolute target nor one starting with `.` or `..` is looked for there.
    assert_eq!(last("CDPATH=/x cd ./a && ls"), ["/p/./a"]);
    assert_eq!(last("CDPATH=/x cd /a && ls"), ["/a"]);
}

#[test]
fn zsh_s_cd_old_new_replaces_in_the_working_directory() {
    assert_eq!(
        last("cd /a/src/b && cd src lib && ls"),
        ["/a/src/b", "/a/lib/b"]
    );
    assert_eq!(last("cd /a && cd src lib && ls"), ["/a"]);
    assert!(last("cd $X lib && ls").contains(&"?".to_string()));
}

#[test]
fn cdpath_not_read_and_its_kin_make_a_relative_cd_unknown() {
    for text in [
        "read CDPATH; cd a && ls",
        "CDPATH=/x; echo $CDPATH; cd a && ls",
        "shopt -s cdable_vars; cd /p && cd a && ls",
        "setopt CDABLEVARS; cd /p && cd a && ls",
        "PWD=/x/y; cd /p && cd .. && ls",
        "HOME=/x; cd /p && cd && ls",
        "setopt auto_cd; ls",
    ] {
        assert!(last(text).contains(&"?".to_string()), "{text}");
    }
    assert_eq!(last("CDPATH=/x cd /a && ls"), ["/a"]);
    assert_eq!(last("HOME=/x; cd /a && ls"), ["/a"]);
}

#[test]
fn too_many_directories_are_one_not_known() {
    let text: String = (0..12).map(|i| format!("cd /d{i}; ")).collect::<String>() + "ls";
    let got = last(&text);
    assert!(
        got.contains(&"?".to_string()) && got.len() <= MAX_DIRS,
        "{got:?}"
    );
}

#[test]
fn a_sourced_file_moves_the_shell_when_its_code_may() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    std::fs::write(dir.path().join("env.sh"), "export A=1\nhash -r\n").unwrap();
    std::fs::write(dir.path().join("go.sh"), "A=1\ncd /elsewhere\n").unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(dir.path().join("fifo.sh"))
        .status();
    assert!(fifo.is_ok_and(|s| s.success()), "mkfifo");
    assert_eq!(last(&format!(". {d}/env.sh && ls")), ["/p"]);
    assert_eq!(last(&format!("source {d}/env.sh && ls")), ["/p"]);
    // Past the bound, a sourced file may move it.
    let many: String = (0..MAX_SOURCED_FILES)
        .map(|i| {
            let name = format!("e{i}.sh");
            std::fs::write(dir.path().join(&name), "A=1\n").unwrap();
            format!(". {d}/{name} && ")
        })
        .collect();
    assert_eq!(last(&format!("{many}ls")), ["/p"]);
    std::fs::write(dir.path().join("last.sh"), "A=1\n").unwrap();
    let over = format!("{many}. {d}/last.sh && ls");
    assert!(last(&over).contains(&"?".to_string()));
    for text in [
        format!(". {d}/go.sh && ls"),
        format!(". {d}/missing.sh && ls"),
        // A FIFO is not read (it would block): it may move it.
        format!(". {d}/fifo.sh && ls"),
        // The command may write it first.
        format!("echo 'cd /x' > {d}/env.sh; . {d}/env.sh && ls"),
        // bash looks a name without `/` up in `PATH`.
        "source env.sh && ls".to_string(),
    ] {
        assert!(last(&text).contains(&"?".to_string()), "{text}");
    }
}
