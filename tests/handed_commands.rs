//! Commands handed to another program (`spec/hooks.md` §16.2, "Handed commands", attack
//! review 41) and programs run by a runner (§13.3, "Runners"): the closed cases of the first
//! are the corpus `tests/hooks/shell-rewrites/handed-commands.json`, run by
//! `tests/shell_rewrites.rs`.

#[path = "common/cli_support.rs"]
mod cli_support;
#[path = "common/installed_hook.rs"]
mod installed_hook;
use installed_hook::{bash, fixture, open_session, Answer};

/// A runner named by two words (`poetry run`, `uv run`, `pipenv run`, `bundle exec`, `conda
/// run -n ENV`) runs its third word as the program (`spec/hooks.md` §13.3, "Runners"): before,
/// the screen did not take it for the program, and `git checkout -- .` rewrote a tree that
/// holds the agent's settings, exit 0. A runner whose options the table cannot read, or whose
/// code comes from files nothing here reads (`nix develop`), is code only known when it runs.
#[test]
fn a_program_run_by_a_two_word_runner_is_judged_as_that_program() {
    let f = fixture();
    open_session(&f, "clean", false);
    assert!(matches!(
        bash(&f, "clean", "git checkout -- ."),
        Answer::Deny(_)
    ));
    for c in [
        "poetry run git checkout -- .",
        "uv run git checkout -- .",
        "uv run --no-sync -- git checkout -- .",
        "pipenv run git checkout -- .",
        "pdm run git checkout -- .",
        "hatch run git checkout -- .",
        "rye run git checkout -- .",
        "pixi run git checkout -- .",
        "conda run -n base git checkout -- .",
        "bundle exec git checkout -- .",
        "npx git checkout -- .",
        "mise exec node@20 -- git checkout -- .",
        "asdf exec git checkout -- .",
        "direnv exec . git checkout -- .",
        "sudo -u me poetry run nice git checkout -- .",
        // Options the table cannot read; code nothing here reads.
        "uv run --frobnicate x git status",
        "poetry --frobnicate x run git status",
        "nix develop -c git status",
        "nix-shell --run 'git status'",
    ] {
        let got = bash(&f, "clean", c);
        assert!(matches!(got, Answer::Deny(_)), "{c}: {got:?}");
    }
}

/// Ordinary runs through a runner pass as the program does alone.
#[test]
fn ordinary_runs_through_a_runner_still_pass() {
    let f = fixture();
    open_session(&f, "clean", false);
    for c in [
        "uv run pytest",
        "uv run pytest -q tests",
        "poetry run python -c 'print(1)'",
        "poetry run pytest -x",
        "pipenv run python -c 'print(1)'",
        "pdm run pytest",
        "hatch run test",
        "conda run -n base python -c 'print(1)'",
        "npx tsc --noEmit",
        "pnpm exec eslint src",
        "yarn exec jest",
        "bundle exec rake test",
        "cargo run --release",
        "cargo build",
        "uv pip list",
        "poetry --version",
    ] {
        assert_eq!(bash(&f, "clean", c), Answer::Proceed, "{c}");
    }
}
