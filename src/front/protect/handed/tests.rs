//! What simple commands hand to programs, read as the programs read it.

use super::{handed_commands, words_of};
use crate::front::protect::shell::lex;

fn handed(text: &str) -> Vec<Option<String>> {
    let lexed = lex(text);
    handed_commands(&words_of(&lexed))
}

fn some(texts: &[&str]) -> Vec<Option<String>> {
    texts.iter().map(|t| Some(t.to_string())).collect()
}

#[test]
fn variables_are_handed_with_the_arguments_their_program_gives() {
    assert_eq!(
        handed("GIT_SSH_COMMAND='ssh -p 2' git fetch"),
        some(&["ssh -p 2 host.invalid true"])
    );
    assert_eq!(
        handed("export EDITOR=vim; git commit"),
        some(&["vim handed-argument"])
    );
    assert_eq!(handed("GIT_PAGER=less git log"), some(&[": | less"]));
    // A pager that is a shell runs the program's output as code.
    assert_eq!(handed("PAGER=sh git log"), vec![None]);
    assert_eq!(handed("LD_PRELOAD=/tmp/x.so ls"), vec![None]);
    assert_eq!(handed("export GIT_EDITOR=\"$E\"; git commit"), vec![None]);
    assert!(handed("RUST_LOG=debug cargo test").is_empty());
    assert!(handed("GIT_CONFIG_GLOBAL=/dev/null git status").is_empty());
    // The user's configuration moved where the agent may have written it (attack review 56).
    assert_eq!(handed("HOME=/tmp/h git log"), vec![None]);
    assert_eq!(handed("export XDG_CONFIG_HOME=/tmp/x; git log"), vec![None]);
    assert_eq!(handed("ZDOTDIR=/tmp/z zsh -c true"), vec![None]);
    assert!(handed("HOME=/dev/null git log").is_empty());
    // npm's settings that run code, in any case (attack review 56).
    assert_eq!(
        handed("npm_config_script_shell=/tmp/x.sh npm run build"),
        vec![None]
    );
    assert_eq!(handed("NPM_CONFIG_USERCONFIG=/tmp/rc npm test"), vec![None]);
    assert!(handed("npm_config_registry=https://r.example npm ci").is_empty());
}

#[test]
fn wrappers_hand_their_c_value_and_a_command_word() {
    assert_eq!(
        handed("script -qc 'cargo test' /dev/null"),
        some(&["cargo test"])
    );
    assert_eq!(handed("script -qccargo /dev/null"), some(&["cargo"]));
    assert_eq!(handed("flock /tmp/l -c 'make'"), some(&["make"]));
    assert_eq!(handed("env -S 'a b'"), some(&["a b"]));
    assert_eq!(handed("watch -n 1 ls -l"), some(&["ls -l"]));
    assert_eq!(handed("srun -n 2 bash -c 'x y'"), some(&["bash -c 'x y'"]));
    // A shell named, not started.
    assert!(handed("man bash").is_empty());
}

#[test]
fn program_options_in_their_abbreviations_and_clusters() {
    assert_eq!(handed("tar -cf a --use-comp=zstd src"), some(&["zstd"]));
    assert_eq!(handed("tar -cIzstd -f a src"), some(&["zstd"]));
    assert_eq!(handed("tar cIf zstd a src"), some(&["zstd"]));
    assert!(handed("tar czf a.tgz src").is_empty());
    assert!(handed("tar -xzf a.tgz -C d").is_empty());
    assert_eq!(handed("zip -TT 'u -t' a.zip f"), some(&["u -t"]));
    assert_eq!(
        handed("rsync -avze 'ssh -p 2' a h:b"),
        // The remote path, read in the home directory of a host that may be this machine.
        some(&[
            "ssh -p 2 host.invalid true",
            "cd && cp -r b handed-argument"
        ])
    );
    assert_eq!(
        handed("ssh -vo ProxyCommand=nc h true"),
        some(&["nc", "cd && true"])
    );
    assert_eq!(handed("man -Pcat ls"), some(&["cat"]));
    assert_eq!(handed("less '+!x y' f"), some(&["x y"]));
    assert!(handed("less +G f").is_empty());
    assert_eq!(handed("vim -c '!x y' -c q"), some(&["x y"]));
    assert!(handed("vim -c 'set ff=unix' -c wq f").is_empty());
    assert_eq!(handed("vim -c 'call system(\"x\")'"), vec![None]);
    assert_eq!(handed("make SHELL=/bin/sh t"), some(&["/bin/sh -c :"]));
    assert_eq!(handed("sqlite3 d '.shell x y'"), some(&["x y"]));
    assert!(handed("sqlite3 d .tables").is_empty());
    assert_eq!(handed("strace -o '|x y' ls"), some(&["x y"]));
    assert!(handed("strace -o out.txt ls").is_empty());
    assert_eq!(handed("gdb -ex 'shell x'"), some(&["x"]));
    assert_eq!(handed("npx -c 'x y'"), some(&["x y"]));
    assert_eq!(handed("parallel ::: 'x y' z"), some(&["x y", "z"]));
    assert_eq!(handed("crontab -"), vec![None]);
    assert!(handed("crontab -l").is_empty());
}

#[test]
fn git_keys_that_run_commands_or_name_code() {
    assert_eq!(
        handed("git -c merge.m.driver='x %O' merge b"),
        some(&["x %O handed-argument"])
    );
    assert_eq!(handed("git -c core.pager=sh log"), vec![None]);
    assert_eq!(handed("git -c core.hooksPath=h commit"), vec![None]);
    assert!(handed("git -c core.hooksPath=/dev/null commit").is_empty());
    assert!(handed("git -c user.name=\"$N\" commit").is_empty());
    assert_eq!(
        handed("X='!x y' git --config-env=alias.a=X a"),
        some(&["x y"])
    );
    assert_eq!(handed("git --config-env=alias.a=Y a"), vec![None]);
    assert_eq!(
        handed("git ls-remote 'ext::sh -c x% y'"),
        some(&["sh -c x y"])
    );
}

#[test]
fn awk_literals_are_commands_and_built_ones_unknown() {
    assert_eq!(handed("awk '{print | \"sort\"}' f"), some(&["sort"]));
    assert_eq!(handed("awk 'BEGIN{system(\"x y\")}'"), some(&["x y"]));
    assert_eq!(handed("awk '{system($0)}'"), vec![None]);
    assert_eq!(
        handed("awk '{system(\"x \" $1)}'"),
        some(&["x "]).into_iter().chain([None]).collect::<Vec<_>>()
    );
    assert!(handed("awk '/a|b/ {print $1}' f").is_empty());
    assert_eq!(handed("sed '1e x' f"), vec![None]);
    assert!(handed("sed -n 1,5p f").is_empty());
}

#[test]
fn code_fed_by_xargs_is_only_known_when_it_runs() {
    assert_eq!(handed("xargs -I{} sh -c '{}'"), vec![None]);
    assert_eq!(handed("xargs sh -c"), vec![None]);
    assert!(handed("xargs sh -c 'echo \"$1\"' _").is_empty());
    assert!(handed("xargs grep fn").is_empty());
}

#[test]
fn git_subcommand_options_that_take_a_command() {
    assert_eq!(
        handed("git rebase -x 'make test' HEAD~2"),
        some(&["make test handed-argument"])
    );
    assert!(handed("git cherry-pick -x abc").is_empty());
    assert!(handed("git push -u origin main").is_empty());
    assert!(handed("git show-ref --head").is_empty());
    assert!(handed("git fetch --tag origin").is_empty());
    assert_eq!(
        handed("git -C d fetch --upload-p=x origin"),
        some(&["x handed-argument"])
    );
    assert_eq!(
        handed("git submodule foreach git pull"),
        some(&["git pull"])
    );
    assert_eq!(handed("git --git-dir=/x/.git status"), vec![None]);
    assert_eq!(
        handed("rg --pre=pdftotext fn"),
        some(&["pdftotext handed-argument"])
    );
    assert_eq!(handed("curl -K opts https://h/"), vec![None]);
}

#[test]
fn builtins_that_set_a_handed_variable_or_run_code() {
    assert_eq!(handed("read -r GIT_PAGER"), vec![None]);
    assert_eq!(handed("printf -v PAGER %s x"), vec![None]);
    assert!(handed("printf '%s\\n' PAGER").is_empty());
    assert!(handed("read -r line").is_empty());
    assert_eq!(handed("trap 'x y' EXIT"), some(&["x y"]));
    assert_eq!(handed("complete -C 'x y' git"), some(&["x y"]));
    assert_eq!(handed("enable -f ./b.so b"), vec![None]);
    assert_eq!(handed("GIT_PAGER+='x y' git log"), some(&[": | x y"]));
}

#[test]
fn a_path_assignment_hands_the_program_found_in_its_literal_directories() {
    assert_eq!(
        handed("PATH=bin:$PATH git status"),
        some(&["bin/git status"])
    );
    assert!(handed("PATH=$HOME/bin:$PATH git status").is_empty());
    assert!(handed("PATH=/nonexistent/dir:$PATH git status").is_empty());
}

#[test]
fn a_program_word_is_a_command_line_only_when_the_shell_splits_it() {
    // `watch 'ls -l'`: watch hands `sh -c` its words, which the shell splits at blanks.
    assert_eq!(handed("watch 'ls -l'"), some(&["ls -l"]));
    // A carriage return (a script with CRLF line ends), a vertical tab or a form feed is a
    // character of its word for the shell: handing the word on would hand it back unchanged,
    // for ever (the screen refused every CRLF script as nesting too deeply).
    for text in ["\r", "x\r", "echo\x0bhi", "a\x0cb"] {
        assert_eq!(handed(text), Vec::<Option<String>>::new(), "{text:?}");
    }
}
