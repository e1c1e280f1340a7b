//! What is left open of commands handed to another program (`spec/hooks.md` §16.2, "Handed
//! commands", attack review 41): the closed cases are the corpus
//! `tests/hooks/shell-rewrites/handed-commands.json`, run by `tests/shell_rewrites.rs`.

#[path = "common/cli_support.rs"]
mod cli_support;
#[path = "common/installed_hook.rs"]
mod installed_hook;
use installed_hook::{bash, fixture, open_session, Answer};

/// Not closed: a runner named by two words (`poetry run`, `uv run`, `pipenv run`, `bundle
/// exec`, `conda run -n ENV`) runs its third word as the program, which the screen does not
/// take for the program: `git checkout -- .` rewrites a tree that holds the agent's settings.
#[test]
#[ignore = "two-word runners (poetry run, uv run, bundle exec, conda run) are not wrappers of the shell analyses: their program is read as an argument"]
fn a_program_run_by_a_two_word_runner_is_judged_as_that_program() {
    let f = fixture();
    open_session(&f, "clean", false);
    assert!(matches!(
        bash(&f, "clean", "git checkout -- ."),
        Answer::Deny(_)
    ));
    for c in ["poetry run git checkout -- .", "uv run git checkout -- ."] {
        let got = bash(&f, "clean", c);
        assert!(matches!(got, Answer::Deny(_)), "{c}: {got:?}");
    }
}
