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

use std::path::{Path, PathBuf};

/// The largest configuration file read; a longer one counts as holding a credential.
const MAX_CONFIG: u64 = 1 << 20;

/// The secret `git ARGS` prints from git's configuration, if any: `prog` is the program's
/// basename, `args` its words after it, `cwd` the working directory (the repository's
/// `.git/config` is looked for there and in each directory above it, or in `-C DIR`),
/// `home` the home directory (`~/.gitconfig`, `~/.config/git/config`).
pub(super) fn credential_printed(
    prog: &str,
    args: &[String],
    cwd: Option<&Path>,
    home: Option<&Path>,
) -> Option<String> {
    if prog != "git" {
        return None;
    }
    let skip = crate::gate::extract::git_global_options(args);
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
    let prints_url = keys.iter().any(url_key)
        || (plain.first() == Some(&"remote")
            && (flag(&["-v", "--verbose"]) || plain.get(1) == Some(&"get-url")))
        || (plain.first() == Some(&"ls-remote") && flag(&["--get-url"]));
    if !prints_url {
        return None;
    }
    let dir = cwd.map(|c| match git_dir_option(args, skip) {
        Some(d) => c.join(d),
        None => c.to_path_buf(),
    });
    config_files(dir.as_deref(), home)
        .into_iter()
        .find(|f| holds_credential(f))
        .map(|f| {
            format!(
                "a credential in a remote's URL in `{}`, which git prints",
                f.display()
            )
        })
}

/// The directory of git's `-C DIR` among its options, if literal.
fn git_dir_option(args: &[String], skip: usize) -> Option<&str> {
    let opts = args.get(..skip)?;
    opts.iter()
        .position(|a| a == "-C")
        .and_then(|k| opts.get(k + 1))
        .map(String::as_str)
}

/// The configuration files git reads: the first `.git/config` at or above `dir`, the user's.
fn config_files(dir: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = dir
        .into_iter()
        .flat_map(Path::ancestors)
        .map(|d| d.join(".git/config"))
        .filter(|f| f.exists())
        .take(1)
        .collect();
    if let Some(h) = home {
        out.push(h.join(".gitconfig"));
        out.push(h.join(".config/git/config"));
    }
    out.retain(|f| f.exists());
    out
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
    use super::url_with_userinfo;

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
