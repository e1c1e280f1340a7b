use super::*;
use crate::front::protect::shell::{lex, Token};

/// A pattern from a glob: `*` a star, `?` one character, `%` any run (`/` included).
fn pats(g: &str) -> Vec<Pat> {
    g.chars()
        .map(|c| match c {
            '*' => Pat::Star,
            '?' => Pat::One,
            '%' => Pat::Any,
            c => Pat::Ch(c),
        })
        .collect()
}

/// A pattern may name a path in a directory exactly when some path below it matches: each
/// answer checked against a path that matches (or against every form that could).
#[test]
fn a_pattern_may_match_under_a_directory_as_paths_below_it_match() {
    let dir = "/s/agent.ledger.sessions";
    for (g, below) in [
        (
            "/s/agent.ledger.sessions/ab*.json",
            Some("/s/agent.ledger.sessions/ab9.json"),
        ),
        ("/s/agent.led*/*", Some("/s/agent.ledger.sessions/x")),
        (
            "/s/*/?b12.unrecorded/*",
            Some("/s/agent.ledger.sessions/ab12.unrecorded/1"),
        ),
        (
            "/S/AGENT.LEDGER.SESSIONS/X",
            Some("/s/agent.ledger.sessions/x"),
        ),
        ("%.json", Some("/s/agent.ledger.sessions/a.json")),
        ("/s/%", Some("/s/agent.ledger.sessions/a")),
        ("/s/agent.ledger.sessions", None),
        ("/s/agent.ledger.sessions/", None),
        ("/s/agent.ledger.key", None),
        ("/s/*", None),
        ("/t/agent.ledger.sessions/*", None),
        ("/s/agent.ledger.sessions*", None),
    ] {
        let pat = pats(g);
        assert_eq!(may_match_under(&pat, dir), below.is_some(), "{g}");
        if let Some(path) = below {
            assert!(matches(&pat, path), "{g} should match {path}");
        }
    }
    // With a slash at the end, the same answers.
    assert!(may_match_under(
        &pats("/s/agent.ledger.sessions/*"),
        "/s/agent.ledger.sessions/"
    ));
}

/// One resolver over many paths answers what `std::fs::canonicalize` of the longest
/// existing prefix gives, for links in the middle, at the end, dangling, in a loop, and
/// for paths that do not exist; asked twice, it answers the same.
#[test]
fn a_resolver_resolves_as_the_file_system_does() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(tmp.path()).expect("canonical");
    std::fs::create_dir_all(root.join("home/.aws")).expect("dirs");
    std::fs::write(root.join("home/.aws/credentials"), "k").expect("file");
    std::os::unix::fs::symlink(root.join("home/.aws"), root.join("home/notes")).expect("ln");
    std::os::unix::fs::symlink(root.join("home/.aws/credentials"), root.join("home/todo"))
        .expect("ln");
    std::os::unix::fs::symlink(root.join("gone"), root.join("home/dangling")).expect("ln");
    std::os::unix::fs::symlink(root.join("home/loop"), root.join("home/loop")).expect("ln");
    let r = Resolver::default();
    let aws = root.join("home/.aws");
    for (asked, want) in [
        (root.join("home/notes/credentials"), aws.join("credentials")),
        (root.join("home/notes/new/x"), aws.join("new/x")),
        (root.join("home/todo"), aws.join("credentials")),
        (root.join("home/dangling/x"), root.join("home/dangling/x")),
        (root.join("home/loop/x"), root.join("home/loop/x")),
        (root.join("home/missing/a/b"), root.join("home/missing/a/b")),
        (
            root.join("home/notes/../notes/credentials"),
            aws.join("credentials"),
        ),
    ] {
        for _ in 0..2 {
            assert_eq!(r.resolved(&asked), want, "{}", asked.display());
            assert_eq!(resolved(&asked), want, "{}", asked.display());
        }
    }
}

fn word(t: &str) -> Word {
    match lex(t).tokens.into_iter().next() {
        Some(Token::Word(w)) => w,
        other => panic!("{other:?}"),
    }
}

#[test]
fn literal_words_are_absolute_normalised_paths() {
    let c = candidate(&word("../s/./agent.key"), Some(Path::new("/p/q")), None);
    assert_eq!(c, Candidate::Path(PathBuf::from("/p/s/agent.key")));
    let h = candidate(
        &word("~/.claude/settings.json"),
        None,
        Some(Path::new("/home/u")),
    );
    assert_eq!(
        h,
        Candidate::Path(PathBuf::from("/home/u/.claude/settings.json"))
    );
}

#[test]
fn globs_stay_in_one_directory_and_unknowns_cross_them() {
    let Candidate::Pattern(p) = candidate(&word("*.key"), Some(Path::new("/s")), None) else {
        panic!()
    };
    assert!(matches(&p, "/s/agent.ledger.key"));
    assert!(!matches(&p, "/s/sub/agent.ledger.key"));
    let Candidate::Pattern(q) = candidate(&word("$D/agent.ledger.KEY"), None, None) else {
        panic!()
    };
    assert!(matches(&q, "/deep/dir/agent.ledger.key"));
    assert!(!matches(&q, "/deep/dir/agent.ledger.key2"));
    let Candidate::Pattern(r) = candidate(&word("./x/../*.key"), Some(Path::new("/s")), None)
    else {
        panic!()
    };
    assert!(matches(&r, "/s/agent.ledger.key"));
}

#[test]
fn policy_globs_match_at_any_depth_or_under_home() {
    let home = Some(Path::new("/home/u"));
    let aws = glob("~/.aws/**", home);
    assert!(matches(&aws, "/home/u/.aws/credentials"));
    assert!(!matches(&aws, "/home/v/.aws/credentials"));
    let env = glob(".env", home);
    assert!(matches(&env, "/p/q/.env"));
    assert!(!matches(&env, "/p/q/.env.example"));
    let pem = glob("*.pem", home);
    assert!(matches(&pem, "/etc/ssl/x.pem"));
    let deep = glob("/srv/**/secret", home);
    assert!(matches(&deep, "/srv/secret"));
    assert!(matches(&deep, "/srv/a/b/secret"));
    assert!(!matches(&deep, "/srv/a/b/secret2"));
}

#[test]
fn patterns_overlap_when_one_path_matches_both() {
    let home = Some(Path::new("/home/u"));
    let aws = glob("~/.aws/**", home);
    let Candidate::Pattern(w) = candidate(&word("~/.aws/cred*"), None, home) else {
        panic!()
    };
    assert!(overlaps(&aws, &w));
    let Candidate::Pattern(x) = candidate(&word("$D/id_rsa"), None, home) else {
        panic!()
    };
    assert!(overlaps(&glob("id_rsa*", home), &x));
    assert!(!overlaps(&glob("*.pem", home), &glob("*.key", home)));
    let Candidate::Pattern(y) = candidate(&word("/tmp/*.txt"), None, home) else {
        panic!()
    };
    assert!(!overlaps(&aws, &y));
    // A `*` never crosses a `/`: `/a/*` and `/a/b/c` share no path.
    let star: Vec<Pat> = "/a/".chars().map(Pat::Ch).chain([Pat::Star]).collect();
    let abc: Vec<Pat> = "/a/b/c".chars().map(Pat::Ch).collect();
    assert!(!overlaps(&star, &abc));
    let any: Vec<Pat> = "/a/".chars().map(Pat::Ch).chain([Pat::Any]).collect();
    assert!(overlaps(&any, &abc));
}
