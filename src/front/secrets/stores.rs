//! Commands that print what a credential store holds (`spec/hooks.md` §16.1 item 3): the
//! policy's `secrets.secret_commands` — a credential helper (`git credential fill`,
//! `docker-credential-* get`), a command line's token printer (`gh auth token`, `aws configure
//! get`, `gcloud auth print-access-token`), a password manager or keyring (`pass`, `secret-tool
//! lookup`, `op read`). None of their words names a secret file: the program reads its store
//! itself (a file of `secrets.paths` such as `~/.config/gh/hosts.yml`, a keyring, a server), so
//! the path rules never saw them, and `gh auth token | mytool` passed with exit 0 in a session
//! that had read nothing, as did the others (`tests/secret_commands.rs`).

/// The entry of `entries` that the program `prog` (a basename, after wrappers) with the words
/// `args` after it runs, if any. An entry is a program and the words it needs, in order, any
/// other words between them skipped (options and their values wherever the program's parser
/// takes them: `gh auth --hostname x token`, `git -c a=b credential fill`; a stray word can only
/// make a command match, never hide one); a program word ending in `*` matches every program
/// whose name begins with what comes before it (`docker-credential-*`); an option among the
/// entry's words must be among the command's, alone or with `=VALUE` (`gh auth status
/// --show-token`: without it, `gh auth status` prints no token).
pub(super) fn printed<'e>(entries: &'e [String], prog: &str, args: &[String]) -> Option<&'e str> {
    entries
        .iter()
        .find(|e| {
            let mut words = e.split_whitespace();
            let Some(first) = words.next() else {
                return false;
            };
            let named = match first.strip_suffix('*') {
                Some(stem) => prog.starts_with(stem),
                None => prog == first,
            };
            let (options, plain): (Vec<&str>, Vec<&str>) = words.partition(|w| w.starts_with('-'));
            let has = |o: &str| {
                args.iter()
                    .any(|a| a == o || a.strip_prefix(o).is_some_and(|v| v.starts_with('=')))
            };
            let mut rest = args.iter();
            named && options.iter().all(|o| has(o)) && plain.iter().all(|w| rest.any(|a| a == w))
        })
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::printed;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// An entry matches its program with the words it needs, options skipped; a program
    /// pattern matches by its beginning; other subcommands do not match.
    #[test]
    fn an_entry_matches_its_program_and_words() {
        let entries: Vec<String> = [
            "gh auth token",
            "docker-credential-* get",
            "pass",
            "git credential fill",
            "gh auth status --show-token",
            "gh auth status -t",
        ]
        .map(String::from)
        .to_vec();
        for (prog, args, want) in [
            ("gh", "auth token", Some("gh auth token")),
            ("gh", "auth token -h github.com", Some("gh auth token")),
            ("gh", "auth --hostname x token", Some("gh auth token")),
            ("gh", "auth status", None),
            (
                "gh",
                "auth status --show-token",
                Some("gh auth status --show-token"),
            ),
            ("gh", "auth status -h x -t", Some("gh auth status -t")),
            (
                "gh",
                "auth status --show-token=true",
                Some("gh auth status --show-token"),
            ),
            ("gh", "auth status --show-tokens", None),
            ("gh", "pr list", None),
            (
                "docker-credential-desktop",
                "get",
                Some("docker-credential-* get"),
            ),
            ("docker-credential-pass", "list", None),
            ("pass", "show github", Some("pass")),
            ("pass", "", Some("pass")),
            ("passwd", "", None),
            ("git", "-c a=b credential fill", Some("git credential fill")),
            ("git", "credential approve", None),
            ("gh", "token auth", None),
            ("gh", "api auth/token", None),
        ] {
            assert_eq!(printed(&entries, prog, &words(args)), want, "{prog} {args}");
        }
    }
}
