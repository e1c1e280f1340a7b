//! Programs that serve a directory to whoever connects (`spec/hooks.md` §16.2, "Servers",
//! attack review 43): a file server sends every file under the directory it serves, on
//! request, to a destination nobody names — whoever reaches its port. Before, `python3 -m
//! http.server 8000 --directory ~/.aws`, `cd ~/.aws && python3 -m http.server` and `busybox
//! httpd -f -p 8000 -h ~/.aws` were allowed, exit 0, in a session that had read nothing, and
//! served the credentials to the network
//! (`tests/names_that_carry_data.rs::a_file_server_sends_what_it_serves`).
//!
//! What is read here: the directory served (an option or operand; the working directory by
//! default) and the address it listens on. A server bound to a loopback address sends only to
//! this machine; any other listens for the network, an unnamed destination.

use crate::front::protect::shell::{Piece, Word};
/// A file server: the directory it serves (`None`: the working directory) and the address
/// it binds (`None`: every interface).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Served {
    /// The directory's text as written, `None` for the working directory.
    pub(super) dir: Option<String>,
    /// The address it listens on, when given.
    pub(super) bind: Option<String>,
    /// The server, for a reason.
    pub(super) via: &'static str,
}

/// The value of option `names` (alone, followed by its value, or glued with `=`).
fn value(args: &[String], names: &[&str]) -> Option<String> {
    for (k, a) in args.iter().enumerate() {
        for n in names {
            if a == n {
                return args.get(k + 1).cloned();
            }
            if let Some(v) = a.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                return Some(v.to_string());
            }
        }
    }
    None
}

/// The operands after the words `skip` (options and their `valued` values skipped).
fn operands<'a>(args: &'a [String], valued: &[&str]) -> Vec<&'a String> {
    let mut out = Vec::new();
    let mut k = 0;
    while let Some(a) = args.get(k) {
        if valued.contains(&a.as_str()) {
            k += 2;
            continue;
        }
        if !a.starts_with('-') {
            out.push(a);
        }
        k += 1;
    }
    out
}

/// The file server `prog args…` starts, if it is one (`python3 -m http.server`, `python -m
/// SimpleHTTPServer`, `busybox httpd`, `ruby -run -e httpd`, `php -S`, `darkhttpd`,
/// `miniserve`, `updog`, `npx http-server`/`serve`, `git daemon`).
pub(super) fn file_server(prog: &str, args: &[String]) -> Option<Served> {
    let after = |w: &str| args.iter().position(|a| a == w).map(|p| &args[p + 1..]);
    if prog.starts_with("python") {
        let m = args.iter().position(|a| a == "-m")?;
        let module = args.get(m + 1)?;
        if module != "http.server" && module != "SimpleHTTPServer" {
            return None;
        }
        let rest = &args[m + 2..];
        return Some(Served {
            dir: value(rest, &["--directory", "-d"]),
            bind: value(rest, &["--bind", "-b"]),
            via: "python3 -m http.server",
        });
    }
    match prog {
        "busybox" | "httpd" => {
            let rest = if prog == "busybox" {
                after("httpd")?
            } else {
                args
            };
            let port = value(rest, &["-p"]);
            Some(Served {
                dir: value(rest, &["-h"]),
                bind: port.and_then(|p| p.rsplit_once(':').map(|(a, _)| a.to_string())),
                via: "httpd",
            })
        }
        "ruby" if args.iter().any(|a| a == "-run") && args.iter().any(|a| a == "httpd") => {
            let rest = after("httpd")?;
            Some(Served {
                dir: operands(rest, &["-p", "-b", "--port", "--bind-address"])
                    .first()
                    .map(|d| d.to_string()),
                bind: value(rest, &["-b", "--bind-address"]),
                via: "ruby -run -e httpd",
            })
        }
        "php" => {
            let addr = value(args, &["-S"])?;
            Some(Served {
                dir: value(args, &["-t"]),
                bind: addr.rsplit_once(':').map(|(a, _)| a.to_string()),
                via: "php -S",
            })
        }
        "darkhttpd" | "miniserve" | "updog" => Some(Served {
            dir: value(args, &["-d", "--directory"]).or_else(|| {
                operands(args, &["--addr", "-i", "--interfaces", "-p", "--port"])
                    .first()
                    .map(|d| d.to_string())
            }),
            bind: value(args, &["--addr", "-i", "--interfaces"]),
            via: "a file server",
        }),
        "npx" | "pnpx" | "bunx" => {
            let name = args.iter().find(|a| !a.starts_with('-'))?;
            let pkg = name.split('@').next().unwrap_or(name);
            if !matches!(pkg, "http-server" | "serve" | "live-server") {
                return None;
            }
            let rest = after(name)?;
            Some(Served {
                dir: operands(rest, &["-p", "-a", "-l", "--listen", "--port"])
                    .first()
                    .map(|d| d.to_string()),
                bind: value(rest, &["-a"]),
                via: "a file server",
            })
        }
        "git" => {
            let rest = after("daemon")?;
            Some(Served {
                dir: value(rest, &["--base-path"])
                    .or_else(|| operands(rest, &[]).last().map(|d| d.to_string())),
                bind: value(rest, &["--listen"]),
                via: "git daemon",
            })
        }
        _ => None,
    }
}

/// Whether `addr` is a loopback address or name.
pub(super) fn loopback(addr: &str) -> bool {
    let a = addr.trim_matches(['[', ']']);
    a == "localhost" || a == "::1" || a.starts_with("127.")
}

/// The word of `rest` that names the directory a server serves (`dir`, as its squeezed text:
/// the whole word, or what follows `=` in `--directory=DIR`), its pieces kept (`~`, an
/// expansion); the working directory when it names none.
pub(super) fn served_word(rest: &[&Word], dir: Option<&str>) -> Word {
    let Some(d) = dir else {
        return Word {
            pieces: vec![Piece::Lit('.')],
        };
    };
    for w in rest {
        if w.squeezed() == d {
            return (*w).clone();
        }
        if let Some(p) = w.pieces.iter().position(|x| *x == Piece::Lit('=')) {
            let after = Word {
                pieces: w.pieces[p + 1..].to_vec(),
            };
            if after.squeezed() == d {
                return after;
            }
        }
    }
    Word {
        pieces: d.chars().map(Piece::Lit).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(s: &str) -> Option<Served> {
        let w: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        file_server(&w[0], &w[1..])
    }

    #[test]
    fn servers_and_what_they_serve() {
        let s = served("python3 -m http.server 8000 --directory /d").unwrap();
        assert_eq!(s.dir.as_deref(), Some("/d"));
        assert_eq!(s.bind, None);
        let s = served("python3 -m http.server -b 127.0.0.1").unwrap();
        assert_eq!((s.dir, s.bind.as_deref()), (None, Some("127.0.0.1")));
        let s = served("busybox httpd -f -p 127.0.0.1:80 -h /d").unwrap();
        assert_eq!(
            (s.dir.as_deref(), s.bind.as_deref()),
            (Some("/d"), Some("127.0.0.1"))
        );
        let s = served("php -S 0.0.0.0:8000 -t /d").unwrap();
        assert_eq!(
            (s.dir.as_deref(), s.bind.as_deref()),
            (Some("/d"), Some("0.0.0.0"))
        );
        let s = served("ruby -run -e httpd /d -p 8000").unwrap();
        assert_eq!(s.dir.as_deref(), Some("/d"));
        let s = served("npx http-server /d -p 8080").unwrap();
        assert_eq!(s.dir.as_deref(), Some("/d"));
        let s = served("git daemon --export-all --base-path=/d").unwrap();
        assert_eq!(s.dir.as_deref(), Some("/d"));
        assert!(served("python3 -m pytest").is_none());
        assert!(served("npx tsc").is_none());
        assert!(served("git status").is_none());
        assert!(loopback("127.0.0.1") && loopback("[::1]") && !loopback("0.0.0.0"));
    }
}
