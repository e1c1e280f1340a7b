use super::*;
use crate::front::protect::shell::lex;
use crate::front::protect::simple::simple_commands;

/// The program the first simple command of `text` runs, after wrappers and runners.
fn program(text: &str) -> Option<String> {
    let l = lex(text);
    simple_commands(&l).first()?.program_name()
}

/// What the runner that starts `text` runs.
fn what(text: &str) -> Option<Runs> {
    let l = lex(text);
    let s = simple_commands(&l);
    runs(&s.first()?.words, 0).map(|(_, r)| r)
}

#[test]
fn a_runners_program_is_the_program() {
    for (c, p) in [
        ("uv run python tools/k.py", "python"),
        ("uv run --with rich --no-sync -- python x.py", "python"),
        ("uv run tools/k.py", "k.py"),
        ("uv -q run pytest -x", "pytest"),
        ("poetry run python -c 'print(1)'", "python"),
        ("pipenv run --python 3.12 python x.py", "python"),
        ("pdm run test", "test"),
        ("hatch run test:cov", "test:cov"),
        ("conda run -n env python x.py", "python"),
        ("npx tsx tools/k.ts", "tsx"),
        ("npx -y -p tsx tsx tools/k.ts", "tsx"),
        ("npm exec -- tsx tools/k.ts", "tsx"),
        ("npm x -y tsx tools/k.ts", "tsx"),
        ("pnpm exec tsx x.ts", "tsx"),
        ("pnpm dlx tsx x.ts", "tsx"),
        ("yarn exec tsx x.ts", "tsx"),
        ("yarn node x.js", "node"),
        ("bunx tsx x.ts", "tsx"),
        ("rye run python x.py", "python"),
        ("pixi run -e dev python x.py", "python"),
        ("mise exec node@20 -- node x.js", "node"),
        ("asdf exec node x.js", "node"),
        ("direnv exec . python x.py", "python"),
        ("bundle exec ruby x.rb", "ruby"),
        ("deno task build", "build"),
        (
            "sudo -u me env A=1 poetry run nice git checkout -- .",
            "git",
        ),
    ] {
        assert_eq!(program(c).as_deref(), Some(p), "{c}");
    }
}

#[test]
fn other_subcommands_are_not_runners() {
    for c in [
        "uv pip list",
        "cargo build",
        "poetry --version",
        "npm test",
        "yarn install",
    ] {
        assert_eq!(what(c), None, "{c}");
    }
    assert_eq!(what("cargo run --release"), Some(Runs::Project));
    assert_eq!(what("cargo +nightly run"), Some(Runs::Project));
    assert_eq!(what("cargo run -- --flag"), Some(Runs::Project));
    assert_eq!(what("dotnet run"), Some(Runs::Project));
}

/// An option the table does not know (its value may be the next word), a word that is not
/// literal, an option that moves the project, a runner of code nothing here reads: unknown.
#[test]
fn what_cannot_be_read_is_unknown() {
    for c in [
        "uv run --directory ../x python k.py",
        "uv run --env-file .env node x.js",
        "uv --unknown-global run python x.py",
        "poetry run --foo python x.py",
        "pnpm exec -c 'cat x'",
        "conda run --cwd /tmp python x.py",
        "npx $P x",
        "cargo run --manifest-path ../o/Cargo.toml",
        "cargo run --config 'build.rustc-wrapper=\"x\"'",
        "dotnet run --project ../o",
        "mise exec node@20",
        "nix run .#k",
        "nix develop -c python x.py",
        "nix-shell --run 'python x.py'",
    ] {
        assert_eq!(what(c), Some(Runs::Unknown), "{c}");
    }
}

#[test]
fn every_runner_cites_its_documentation() {
    assert!(RUNNERS.iter().all(|r| !r.doc.is_empty()));
}
