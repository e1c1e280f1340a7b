//! Git printing a credential its configuration holds (`spec/hooks.md` §16.1 item 3, attack
//! review 53): the `http.<url>.extraheader` that `actions/checkout` persists (`git config
//! --get http.https://github.com/.extraheader`), and a token written in a remote's URL
//! (`https://x-access-token:ghs_…@github.com/o/r`), which `git remote -v`, `git remote
//! get-url`, `git config remote.origin.url` and `git ls-remote --get-url` print. Attack review
//! 51 made `.git/config` and `git config --list` secret but left these: reading every remote's
//! URL as a secret would make most sessions hold one. So the configuration is read when the
//! call is decided: a command that prints a remote's URL reads a secret only when a URL there
//! holds a user name or password (`scheme://USERINFO@`, not ssh's `git@host:`), and a
//! command that prints an `extraheader` always does (it exists to hold a token).
//!
//! Attack review 55: git reads its configuration from places the command names, which the
//! hook did not read: `HOME=/tmp/h git remote -v`, `XDG_CONFIG_HOME=…`,
//! `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=include.path …`, `git -C $D remote -v`, `cd $D && git
//! remote -v`, a submodule's configuration (its `.git` is a file naming its git directory;
//! the repository above was read instead), and a call whose working directory is not known
//! (Codex's PreToolUse) each printed a URL nobody checked, exit 0 in a session that had read
//! nothing. Such a command now counts as printing a credential (fail closed); `.git` files,
//! bare repositories, `commondir` and the system's files are read; `git remote show` prints
//! the URLs too.

use super::commands::UNKNOWN_CWD;
use super::vars::Assigned;
use crate::front::protect::pattern::{candidate, Candidate};
use crate::front::protect::shell::Word;
use std::path::{Path, PathBuf};

/// The largest configuration file read; a longer one counts as holding a credential.
const MAX_CONFIG: u64 = 1 << 20;

/// The system's configuration files git may read (`$(prefix)/etc/gitconfig`: a distribution's,
/// Homebrew's on Intel and on Apple silicon); one that is absent holds nothing.
const SYSTEM_CONFIG: &[&str] = &[
    "/etc/gitconfig",
    "/usr/local/etc/gitconfig",
    "/opt/homebrew/etc/gitconfig",
];

/// Variables of the environment that make git read its configuration from elsewhere than the
/// files [`config_files`] reads (git(1), "ENVIRONMENT VARIABLES"; git-config(1), "FILES"):
/// another repository, other global or system files, keys given in the environment
/// (`GIT_CONFIG_COUNT` with `GIT_CONFIG_KEY_<n>`, which may be `include.path`), another home.
const CONFIG_VARIABLES: &[&str] = &[
    "GIT_DIR",
    "GIT_COMMON_DIR",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "HOME",
    "XDG_CONFIG_HOME",
];

/// Wrappers that run a program as another user, whose home holds the user's configuration
/// git reads (`sudo -u other git remote -v`; `sudo` sets `HOME` to the target's by default on
/// many systems).
const OTHER_USER: &[&str] = &["sudo", "doas", "runuser", "pkexec", "su", "machinectl"];

/// A git command and where it runs, for [`credential_printed`].
pub(super) struct GitCall<'a> {
    /// The program's basename.
    pub(super) prog: &'a str,
    /// Its words before the program (assignments, wrappers and their options).
    pub(super) before: &'a [&'a Word],
    /// Its words after the program.
    pub(super) rest: &'a [&'a Word],
    /// The working directory (`None`, or one under [`UNKNOWN_CWD`]: unknown).
    pub(super) cwd: Option<&'a Path>,
    /// The home directory (`~/.gitconfig`, `~/.config/git/config`).
    pub(super) home: Option<&'a Path>,
    /// The variables the command assigns (its environment's, `VAR=x git …`, `env VAR=x git`,
    /// `export VAR=x; git …`).
    pub(super) vars: &'a Assigned,
}

/// The secret `git ARGS` prints from git's configuration, if any. The repository's
/// configuration is looked for as git discovers it (the first `.git` at or above the working
/// directory or `-C DIR`, a `.git` file followed to its git directory, a bare repository), the
/// user's and the system's files too. A command that prints a remote's URL from a
/// configuration the hook does not read — one the command's environment or git's options point
/// at (`GIT_CONFIG_GLOBAL=…`, `HOME=…`, `--git-dir`, `-c include.path=…`, `--config-env`), or
/// one of a working directory it does not know (Codex's PreToolUse carries none, `cd $D`, `-C
/// $D`) — counts as printing a credential (fail closed; attack review 55).
pub(super) fn credential_printed(call: &GitCall<'_>) -> Option<String> {
    if call.prog != "git" {
        return None;
    }
    let args: Vec<String> = call.rest.iter().map(|w| w.squeezed()).collect();
    let skip = crate::gate::extract::git_global_options(&args);
    let plain: Vec<&str> = args
        .get(skip..)?
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let flag = |f: &[&str]| {
        args.get(skip..)
            .is_some_and(|r| r.iter().any(|a| f.contains(&a.as_str())))
    };
    let keys: Vec<String> = match plain.first() {
        Some(&"config") => plain[1..]
            .iter()
            .filter(|k| !matches!(**k, "get" | "get-all"))
            .map(|k| k.to_lowercase())
            .collect(),
        _ => Vec::new(),
    };
    if keys.iter().any(|k| k.ends_with(".extraheader")) {
        return Some("the `extraheader` that `git config` prints (a token)".to_string());
    }
    let url_key =
        |k: &String| k.ends_with(".url") || k.ends_with(".pushurl") || k.starts_with("url.");
    let remote = plain.first() == Some(&"remote");
    let prints_url = keys.iter().any(url_key)
        || (remote
            && (flag(&["-v", "--verbose"]) || matches!(plain.get(1), Some(&("get-url" | "show")))))
        || (plain.first() == Some(&"ls-remote") && flag(&["--get-url"]));
    if !prints_url {
        return None;
    }
    if let Some(place) = unread(call, &args[..skip]) {
        return Some(format!(
            "a remote's URL from {place}, which the hook does not read (counted as holding a \
             credential)"
        ));
    }
    let dir = repository_dir(call, skip).flatten();
    config_files(dir.as_deref(), call.home)
        .into_iter()
        .find(|f| holds_credential(f))
        .map(|f| {
            format!(
                "a credential in a remote's URL in `{}`, which git prints",
                f.display()
            )
        })
}

/// Where git's configuration comes from that [`config_files`] does not read, if anywhere:
/// `options` are git's own options before its subcommand.
fn unread(call: &GitCall<'_>, options: &[String]) -> Option<String> {
    if let Some(v) = CONFIG_VARIABLES.iter().find(|v| call.vars.sets(v)) {
        return Some(format!("the `${v}` the command sets"));
    }
    let user = call.before.iter().find_map(|w| {
        let l = w.literal()?;
        let b = crate::front::protect::simple::basename(&l).to_string();
        OTHER_USER.contains(&b.as_str()).then_some(b)
    });
    if let Some(u) = user {
        return Some(format!("the home of the user `{u}` runs it as"));
    }
    if call.cwd.is_none_or(|c| c.starts_with(UNKNOWN_CWD)) {
        return Some("a working directory that is not known".to_string());
    }
    for (k, o) in options.iter().enumerate() {
        let value = || options.get(k + 1).map(String::as_str).unwrap_or_default();
        let unread = match o.as_str() {
            "--bare" => true,
            "-C" => repository_dir(call, options.len()).is_some_and(|d| d.is_none()),
            "-c" => value().to_ascii_lowercase().starts_with("include"),
            _ => ["--git-dir", "--config-env"]
                .iter()
                .any(|n| o == n || o.starts_with(&format!("{n}="))),
        };
        if unread {
            return Some(format!("git's option `{o}`"));
        }
    }
    None
}

/// The directory git starts from: the working directory moved by each `-C DIR` among its
/// `skip` first words (relative to the one before, `~` the home directory); `Some(None)` when
/// one is only known when it runs, `None` when the working directory is not known.
fn repository_dir(call: &GitCall<'_>, skip: usize) -> Option<Option<PathBuf>> {
    let mut dir = call.cwd?.to_path_buf();
    let options = call.rest.get(..skip).unwrap_or(call.rest);
    for (k, w) in options.iter().enumerate() {
        if w.literal().as_deref() != Some("-C") {
            continue;
        }
        let next = options
            .get(k + 1)
            .map(|d| candidate(d, Some(&dir), call.home));
        match next.and_then(Candidate::path) {
            Some(d) => dir = d,
            None => return Some(None),
        }
    }
    Some(Some(dir))
}

/// The configuration files git reads: the repository's ([`repository_config`]) for `dir`, the
/// user's and the system's that exist (one whose existence cannot be told counts as present).
fn config_files(dir: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = dir.map(repository_config).unwrap_or_default();
    let user = home.map(|h| [h.join(".gitconfig"), h.join(".config/git/config")]);
    out.extend(user.into_iter().flatten().filter(|f| present(f)));
    out.extend(
        SYSTEM_CONFIG
            .iter()
            .map(PathBuf::from)
            .filter(|f| present(f)),
    );
    out
}

/// Whether `f` exists, or its existence cannot be told (a directory not searchable).
fn present(f: &Path) -> bool {
    f.try_exists().unwrap_or(true)
}

/// The configuration files of the repository git finds from `dir` (gitrepository-layout(5)):
/// at the first directory at or above it that holds `.git` (a directory, or a file
/// `gitdir: PATH` naming one, as a submodule's and a linked worktree's do) or is a bare
/// repository (`HEAD` and `objects/`), its git directory's `config` and `config.worktree`, and
/// the `config` of the directory its `commondir` names. A git directory that a `.git` file
/// names and that cannot be read gives its missing `config`, which counts as holding a
/// credential ([`holds_credential`]).
fn repository_config(dir: &Path) -> Vec<PathBuf> {
    for d in dir.ancestors() {
        let dot = d.join(".git");
        let gitdir = if dot.is_dir() {
            dot
        } else if dot.is_file() {
            let named = std::fs::read_to_string(&dot).ok().and_then(|t| {
                let path = t.trim().strip_prefix("gitdir:")?.trim().to_string();
                Some(d.join(path))
            });
            match named.filter(|g| g.is_dir()) {
                Some(g) => g,
                None => return vec![dot.join("config")],
            }
        } else if d.join("HEAD").is_file() && d.join("objects").is_dir() {
            d.to_path_buf()
        } else {
            continue;
        };
        let common = std::fs::read_to_string(gitdir.join("commondir"))
            .ok()
            .map(|c| gitdir.join(c.trim()).join("config"));
        let files = [gitdir.join("config"), gitdir.join("config.worktree")];
        return files
            .into_iter()
            .chain(common)
            .filter(|f| present(f))
            .collect();
    }
    Vec::new()
}

/// Whether the configuration file `f` holds a URL with a user name or password: a
/// `SCHEME://USERINFO@` whose scheme is not ssh's. A file that cannot be read, is longer than
/// [`MAX_CONFIG`] (it is then not read), or includes another file (`[include]`,
/// `[includeIf …]`: git prints what the included file holds, which is not followed here)
/// counts as holding one (fail closed).
fn holds_credential(f: &Path) -> bool {
    if std::fs::metadata(f).map_or(true, |m| m.len() > MAX_CONFIG) {
        return true;
    }
    let Ok(text) = std::fs::read_to_string(f) else {
        return true;
    };
    text.lines().any(|l| url_with_userinfo(l) || includes(l))
}

/// Whether `line` opens an `[include]` or `[includeIf "…"]` section (git-config(1),
/// "Includes"; section names are case-insensitive).
fn includes(line: &str) -> bool {
    line.trim_start().strip_prefix('[').is_some_and(|rest| {
        rest.trim_start()
            .to_ascii_lowercase()
            .starts_with("include")
    })
}

/// Whether `line` holds `SCHEME://USERINFO@HOST` with a scheme other than `ssh`/`git+ssh`
/// (whose user, `git@`, is no credential).
fn url_with_userinfo(line: &str) -> bool {
    line.match_indices("://").any(|(at, _)| {
        let scheme = line[..at]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let authority = line[at + 3..]
            .split(|c: char| c == '/' || c.is_whitespace() || c == '"')
            .next()
            .unwrap_or_default();
        !scheme.ends_with("ssh") && authority.contains('@')
    })
}

#[cfg(test)]
mod tests {
    use super::{repository_config, url_with_userinfo, GitCall};
    use crate::front::protect::shell::{lex, Token, Word};
    use crate::front::secrets::vars::Assigned;
    use std::path::Path;

    /// A submodule's `.git` file is followed to its git directory, a linked worktree's to its
    /// own and its common directory's; a git file that cannot be followed gives a missing
    /// `config` (which holds a credential, fail closed); a bare repository is its own.
    #[test]
    fn the_repository_s_configuration_is_found_as_git_finds_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |at: &str, text: &str| {
            let f = root.join(at);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        };
        write(".git/config", "");
        write("sub/.git", "gitdir: ../.git/modules/sub\n");
        write(".git/modules/sub/config", "");
        write("wt/.git", "gitdir: ../.git/worktrees/wt\n");
        write(".git/worktrees/wt/commondir", "../..\n");
        write("lost/.git", "gitdir: /nonexistent/x\n");
        write("bare.git/HEAD", "ref: refs/heads/main\n");
        write("bare.git/config", "");
        std::fs::create_dir_all(root.join("bare.git/objects")).unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        let found = |d: &str| repository_config(&root.join(d));
        assert_eq!(found("src/deep"), [root.join(".git/config")]);
        assert_eq!(found("sub"), [root.join("sub/../.git/modules/sub/config")]);
        assert_eq!(
            found("wt"),
            [root.join("wt/../.git/worktrees/wt/../../config")]
        );
        let lost = found("lost");
        assert!(super::holds_credential(&lost[0]), "{lost:?}");
        assert_eq!(found("bare.git"), [root.join("bare.git/config")]);
    }

    /// Where git's configuration comes from that the hook does not read.
    #[test]
    fn configuration_from_elsewhere_is_told() {
        let unread = |command: &str, cwd: Option<&Path>| {
            let lexed = lex(command);
            let mut vars = Assigned::default();
            vars.collect(&lexed);
            let words: Vec<Word> = lexed
                .tokens
                .into_iter()
                .filter_map(|t| match t {
                    Token::Word(w) => Some(w),
                    _ => None,
                })
                .collect();
            let at = words
                .iter()
                .position(|w| w.literal().as_deref() == Some("git"));
            let rest: Vec<&Word> = words[at.unwrap_or(0) + 1..].iter().collect();
            let args: Vec<String> = rest.iter().map(|w| w.squeezed()).collect();
            let skip = crate::gate::extract::git_global_options(&args);
            let before: Vec<&Word> = words[..at.unwrap_or(0)].iter().collect();
            let call = GitCall {
                prog: "git",
                before: &before,
                rest: &rest,
                cwd,
                home: None,
                vars: &vars,
            };
            super::unread(&call, &args[..skip]).is_some()
        };
        let here = Some(Path::new("/p"));
        for c in [
            "HOME=/tmp git remote -v",
            "env XDG_CONFIG_HOME=/x git remote -v",
            "GIT_CONFIG_COUNT=1 git remote -v",
            "git --git-dir=/x remote -v",
            "git --bare remote -v",
            "git -c Include.Path=/x remote -v",
            "git -C $D remote -v",
            "git --config-env=remote.o.url=U remote -v",
            "sudo -u other git remote -v",
        ] {
            assert!(unread(c, here), "{c}");
        }
        assert!(unread("git remote -v", None));
        assert!(unread("git remote -v", Some(Path::new(super::UNKNOWN_CWD))));
        for c in [
            "git remote -v",
            "git -C sub remote -v",
            "git -C /p -C ../q remote -v",
            "git -c color.ui=never remote -v",
            "GIT_PAGER=cat git remote -v",
        ] {
            assert!(!unread(c, here), "{c}");
        }
    }

    /// A file git includes is not read: a configuration that includes one counts as holding a
    /// credential, as one too long to read does (fail closed).
    #[test]
    fn a_configuration_that_includes_another_or_is_too_long_holds_a_credential() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("config");
        std::fs::write(&f, "[remote \"origin\"]\n\turl = https://github.com/o/r\n").unwrap();
        assert!(!super::holds_credential(&f));
        for include in [
            "[include]\n\tpath = creds",
            "[includeIf \"gitdir:~/w/\"]\n\tpath = c",
        ] {
            std::fs::write(&f, format!("[core]\n\tbare = false\n{include}\n")).unwrap();
            assert!(super::holds_credential(&f), "{include}");
        }
        std::fs::write(&f, "#".repeat(super::MAX_CONFIG as usize + 1)).unwrap();
        assert!(super::holds_credential(&f));
        assert!(super::holds_credential(&dir.path().join("missing")));
    }

    #[test]
    fn a_url_with_a_user_or_password_is_told_from_others() {
        assert!(url_with_userinfo(
            "\turl = https://x-access-token:ghs_abc@github.com/o/r.git"
        ));
        assert!(url_with_userinfo("\turl = https://ghp_abc@github.com/o/r"));
        assert!(url_with_userinfo("[url \"https://u:t@git.example/\"]"));
        assert!(!url_with_userinfo("\turl = https://github.com/o/r.git"));
        assert!(!url_with_userinfo("\turl = ssh://git@github.com/o/r.git"));
        assert!(!url_with_userinfo("\turl = git@github.com:o/r.git"));
        assert!(!url_with_userinfo("\temail = a@b.example"));
    }
}
