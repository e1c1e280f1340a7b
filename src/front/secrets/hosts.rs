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
            // `git push [REMOTE] …` (and `fetch`, `pull`, `ls-remote`): the word after the
            // subcommand; none is the default remote.
            let remote_taking = ["push", "fetch", "pull", "ls-remote"];
            if let Some(p) = plain
                .iter()
                .position(|a| remote_taking.contains(&a.as_str()))
            {
                match plain.get(p + 1) {
                    Some(r) if url_host(r).is_none() => out.push((*r).clone()),
                    Some(_) => {}
                    None => out.push("the default remote".to_string()),
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
