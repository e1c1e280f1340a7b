//! `memlineage serve` over HTTP (`spec/explorer.md`): the real binary on a free loopback
//! port, a real HTTP client. Security headers, escaping of hostile text, the quarantine view
//! against `memlineage receipt`, the token, the loopback and Host rules, the on-demand audit,
//! the proof bundle, and that the ledger file is left byte-identical.

#[path = "common/cli_support.rs"]
mod cli_support;

use cli_support::{append, fails, ok, run, BIN};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The CSP the explorer must send (spec/explorer.md §4.2).
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

/// The hostile text of the issue, with a bidi override, a `javascript:` URL and a bell.
const HOSTILE: &str = "<img src=x onerror=alert(1)><script>alert(2)</script> \
                       <a href=\"javascript:alert(3)\">click</a> http://evil.example/x.png \
                       \u{202E}txt.exe\u{0007}";

/// A running `memlineage serve`, killed on drop.
struct Serve {
    child: Child,
    base: String,
    /// The line printed once the index is complete.
    indexed: String,
}

impl Serve {
    fn start(dir: &Path, extra: &[&str]) -> Serve {
        let mut child = Command::new(BIN)
            .args(["serve", "l.db", "--addr", "127.0.0.1:0"])
            .args(extra)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let base = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .trim_end_matches('/')
            .to_string();
        // The index is built after the address is printed (spec/explorer.md §3.3); the pages
        // these tests read in full (children, counts, filters) wait for its line.
        let mut indexed = String::new();
        out.read_line(&mut indexed).unwrap();
        assert!(indexed.starts_with("indexed "), "{indexed:?}");
        Serve {
            child,
            base,
            indexed,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn port(&self) -> u16 {
        self.base.rsplit(':').next().unwrap().parse().unwrap()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .new_agent()
}

/// GET: status, headers and body.
fn get(agent: &ureq::Agent, url: &str) -> (u16, ureq::http::HeaderMap, String) {
    let mut r = agent.get(url).call().unwrap();
    let body = r.body_mut().read_to_string().unwrap();
    (r.status().as_u16(), r.headers().clone(), body)
}

/// A ledger with a prompt, a hostile tool output, a memory of it and a tool call justified
/// by that memory; the tool output flagged. Returns [prompt, hostile, memory, call].
fn setup(dir: &Path) -> [String; 4] {
    ok(&run(&["init", "l.db"], dir, None));
    let a = append(
        dir,
        &[
            serde_json::json!({"writer": "user", "role": "user", "kind": "prompt", "content": "pay the bill"}),
            serde_json::json!({"writer": "tool:read_file", "role": "tool", "kind": "tool_result", "content": HOSTILE}),
        ],
    );
    let memory = append(
        dir,
        &[
            serde_json::json!({"writer": "agent", "role": "agent", "kind": "summary",
            "content": "memo: pay XX99", "parents": [{"id": a[1], "weight": 1.0}]}),
        ],
    )[0]
    .clone();
    let call = append(
        dir,
        &[serde_json::json!({"writer": "agent", "kind": "tool_call",
            "content": r#"{"tool":"send_money","args":{"recipient":"XX99"}}"#,
            "parents": [{"id": memory, "weight": 1.0}]})],
    )[0]
    .clone();
    ok(&run(
        &["flag", "l.db", &a[1], "--reason", "<b>forum</b> injection"],
        dir,
        None,
    ));
    ok(&run(&["checkpoint", "l.db"], dir, None));
    [a[0].clone(), a[1].clone(), memory, call]
}

fn digest(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// The text of every receipt sentence on a page (`span.sentence`, tags removed, entities
/// decoded): what a reader sees.
fn sentences(body: &str) -> Vec<String> {
    body.split("<span class=\"sentence\">")
        .skip(1)
        .map(|s| {
            let mut depth = 0usize;
            let mut end = s.len();
            let mut i = 0;
            while let Some(at) = s[i..].find("<") {
                let tag = &s[i + at..];
                if tag.starts_with("</span>") {
                    if depth == 0 {
                        end = i + at;
                        break;
                    }
                    depth -= 1;
                } else if tag.starts_with("<span") {
                    depth += 1;
                }
                i += at + 1;
            }
            text_of(&s[..end])
        })
        .collect()
}

/// HTML to its text: tags dropped, maud's five entities decoded.
fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn hrefs(body: &str) -> Vec<String> {
    body.split("href=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap().to_string())
        .collect()
}

#[test]
fn pages_are_escaped_headed_and_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let [prompt, hostile, memory, call] = setup(dir.path());
    let before = digest(&dir.path().join("l.db"));
    let s = Serve::start(dir.path(), &[]);
    let a = agent();

    // Every page carries the CSP and the other headers.
    for path in [
        "/",
        "/entries",
        "/quarantine",
        "/calls",
        "/style.css",
        "/nope",
    ] {
        let r = a.get(&s.url(path)).call().unwrap();
        let h = r.headers();
        assert_eq!(h["content-security-policy"], CSP, "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
    }
    assert_eq!(get(&a, &s.url("/nope")).0, 404);
    assert_eq!(get(&a, &s.url("/entry/xyz")).0, 400);
    assert_eq!(
        get(&a, &s.url(&format!("/entry/{}", "0".repeat(64)))).0,
        404
    );

    // The hostile entry: text, not markup; its URLs are no links; the bidi override shows.
    let (status, _, body) = get(&a, &s.url(&format!("/entry/{hostile}")));
    assert_eq!(status, 200);
    assert!(
        body.contains("&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(2)&lt;/script&gt;")
    );
    assert!(!body.contains("<img"), "{body}");
    assert!(!body.contains("<script"), "{body}");
    assert!(body.contains("\\u{202E}") && body.contains("\\u{0007}"));
    assert!(!body.contains('\u{202E}'));
    for h in hrefs(&body) {
        assert!(h.starts_with('/'), "link to {h}");
    }
    assert!(body.contains("quarantined"));
    assert!(body.contains("EXTERNAL"));

    // The memory's page: parents with weights, its child, its receipt sentence.
    let (_, _, body) = get(&a, &s.url(&format!("/entry/{memory}")));
    assert!(body.contains(&format!("/entry/{hostile}")));
    assert!(body.contains(&format!("/entry/{call}")));
    assert!(body.contains("1.000000"));
    let receipt = ok(&run(&["receipt", "l.db", &memory], dir.path(), None));
    let sentence = receipt.trim().split_once(": ").unwrap().1;
    let shown = sentences(&body);
    assert!(
        shown.iter().any(|s| s == sentence),
        "{sentence} not in {shown:?}"
    );

    // The landing page lists every entry `memlineage receipt` reports, with the same
    // sentences, under their source.
    let all = ok(&run(&["receipt", "l.db"], dir.path(), None));
    let (_, _, body) = get(&a, &s.url("/"));
    assert_eq!(
        body.matches("<tr class=\"reached\">").count(),
        all.lines().count()
    );
    let shown = sentences(&body);
    for line in all.lines() {
        let (_, sentence) = line.split_once(": ").unwrap();
        assert!(
            shown.iter().any(|s| s == sentence),
            "{sentence} not in {shown:?}"
        );
    }
    assert!(body.contains("<tr class=\"group\">"), "{body}");
    assert!(body.contains("&lt;b&gt;forum&lt;/b&gt; injection"));
    assert!(!body.contains("<b>forum"));
    assert!(
        !body.contains(&format!("/entry/{prompt}\"")),
        "the prompt is not reached"
    );
    // The flags, with what each reached.
    let (_, _, body) = get(&a, &s.url("/quarantine"));
    assert!(body.contains("<span class=\"n\">3</span> of 9"), "{body}");
    let flag = body
        .split("href=\"/quarantine/")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let (status, _, body) = get(&a, &s.url(&format!("/quarantine/{flag}")));
    assert_eq!(status, 200);
    assert!(body.contains("reached-count\">3 of "), "{body}");
    assert!(body.contains("<svg class=\"reach\""));

    // The call is denied, on its parameter, with the path.
    let (_, _, body) = get(&a, &s.url("/calls"));
    assert!(body.contains("deny"), "{body}");
    assert!(
        body.contains("<code class=\"lit\">`recipient`</code>"),
        "{body}"
    );

    // Entry list filters.
    let (_, _, body) = get(&a, &s.url("/entries?kind=tool_call"));
    assert_eq!(body.matches(&format!("/entry/{call}\"")).count(), 1);
    assert!(!body.contains(&format!("/entry/{memory}\"")));
    let (_, _, body) = get(&a, &s.url("/entries?quarantined=no&label=TRUSTED"));
    assert!(body.contains(&format!("/entry/{prompt}\"")));
    assert!(!body.contains(&format!("/entry/{hostile}\"")));

    // The proof bundle verifies from the file alone.
    let (status, h, bundle) = get(&a, &s.url(&format!("/entry/{memory}/proof")));
    assert_eq!(status, 200);
    assert!(h["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("attachment"));
    std::fs::write(dir.path().join("m.proof"), bundle).unwrap();
    let vkey = ok(&run(&["checkpoint", "l.db", "--vkey"], dir.path(), None));
    ok(&run(
        &["verify-proof", "m.proof", "--log-key", vkey.trim()],
        dir.path(),
        None,
    ));

    // The on-demand audit runs to OK.
    let r = a.post(&s.url("/verify")).send_empty().unwrap();
    assert_eq!(r.status().as_u16(), 303);
    let t0 = Instant::now();
    loop {
        let (_, _, body) = get(&a, &s.url("/verify"));
        if body.contains("OK: verified") {
            break;
        }
        assert!(!body.contains("FAILED"), "{body}");
        assert!(t0.elapsed() < Duration::from_secs(60), "{body}");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Read only: no write method, and the file is byte-identical.
    let r = a.post(&s.url("/")).send_empty().unwrap();
    assert_eq!(r.status().as_u16(), 405);
    drop(s);
    assert!(
        before == digest(&dir.path().join("l.db")),
        "the ledger file changed"
    );
    let wal = dir.path().join("l.db-wal");
    assert!(!wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0);
}

/// A raw request (`method` and path) with the given Host and extra header lines: the status.
fn raw(port: u16, method: &str, host: &str, extra: &str) -> u16 {
    let method = if method.contains(' ') {
        method.to_string()
    } else {
        format!("{method} /")
    };
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        c,
        "{method} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    out.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn loopback_host_and_cross_site_rules() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    // A non-loopback address is refused without a token, before anything is opened.
    let err = fails(&run(
        &["serve", "l.db", "--addr", "0.0.0.0:0"],
        dir.path(),
        None,
    ));
    assert!(err.contains("not a loopback address"), "{err}");
    let s = Serve::start(dir.path(), &[]);
    let p = s.port();
    assert_eq!(raw(p, "GET", &format!("127.0.0.1:{p}"), ""), 200);
    assert_eq!(raw(p, "GET", &format!("localhost:{p}"), ""), 200);
    // DNS rebinding: a page of another name that resolves to 127.0.0.1.
    assert_eq!(raw(p, "GET", "evil.example", ""), 403);
    // A POST from another site's page.
    let host = format!("127.0.0.1:{p}");
    let evil = "Origin: http://evil.example\r\n";
    assert_eq!(raw(p, "POST /verify", &host, evil), 403);
    let site = "Sec-Fetch-Site: cross-site\r\n";
    assert_eq!(raw(p, "POST /verify", &host, site), 403);
    let same = format!("Origin: http://{host}\r\n");
    assert_eq!(raw(p, "POST /verify", &host, &same), 303);
}

#[test]
fn token_is_required_when_given() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let bad = fails(&run(
        &["serve", "l.db", "--token", "short"],
        dir.path(),
        None,
    ));
    assert!(bad.contains("16 to 256 characters"), "{bad}");
    let token = "tok-0123456789abcdef";
    std::fs::write(dir.path().join("t"), format!("{token}\n")).unwrap();
    let s = Serve::start(dir.path(), &["--token-file", "t"]);
    let a = agent();
    let (status, h, body) = get(&a, &s.url("/"));
    assert_eq!(status, 401, "{body}");
    assert_eq!(h["content-security-policy"], CSP);
    assert_eq!(get(&a, &s.url("/?token=tok-0123456789abcdeX")).0, 401);
    let r = a
        .get(&s.url("/"))
        .header("Authorization", format!("Bearer {token}"))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // First visit by address: a cookie, and the token leaves the address bar.
    let r = a
        .get(&s.url(&format!("/entries?token={token}")))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], "/entries");
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    let pair = cookie.split(';').next().unwrap().to_string();
    let r = a
        .get(&s.url("/entries"))
        .header("Cookie", pair)
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // With a token any Host is served (the token is the protection).
    let p = s.port();
    assert_eq!(
        raw(
            p,
            "GET",
            "evil.example",
            &format!("Authorization: Bearer {token}\r\n")
        ),
        200
    );
}

#[test]
fn an_entry_whose_bytes_do_not_verify_shows_as_unverified() {
    let dir = tempfile::tempdir().unwrap();
    ok(&run(&["init", "l.db"], dir.path(), None));
    let ids = append(
        dir.path(),
        &[
            serde_json::json!({"writer": "user", "role": "user", "kind": "prompt", "content": "pay the bill"}),
            serde_json::json!({"writer": "user", "kind": "prompt", "content": "and the rent"}),
        ],
    );
    // A store-only attacker flips one byte of the first prompt's signature (no flag is
    // active, so opening does not read it: the explorer's index must catch it).
    {
        let db = rusqlite::Connection::open(dir.path().join("l.db")).unwrap();
        let (idx, mut cose): (i64, Vec<u8>) = db
            .query_row(
                "SELECT idx, cose FROM entries WHERE kind = 0 ORDER BY idx LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let last = cose.len() - 1;
        cose[last] ^= 1;
        db.execute(
            "UPDATE entries SET cose = ?1 WHERE idx = ?2",
            rusqlite::params![cose, idx],
        )
        .unwrap();
    }
    let s = Serve::start(dir.path(), &[]);
    assert!(
        s.indexed.contains("(1 did not verify; stored rows chain)"),
        "{:?}",
        s.indexed
    );
    let a = agent();
    let (status, _, body) = get(&a, &s.url(&format!("/entry/{}", ids[0])));
    assert_eq!(status, 200);
    assert!(body.contains("do not verify"), "{body}");
    assert!(body.contains("UNVERIFIED"), "{body}");
    assert!(!body.contains("pay the bill"), "{body}");
    let (_, _, body) = get(&a, &s.url("/ledger"));
    assert!(body.contains("/entries?label=UNVERIFIED"), "{body}");
    let (_, _, body) = get(&a, &s.url("/entries?label=UNVERIFIED"));
    assert!(body.contains("did not verify"), "{body}");
    assert!(!body.contains(&format!("/entry/{}\"", ids[1])), "{body}");
    // Counted as quarantined by the filter (fail closed).
    let (_, _, body) = get(&a, &s.url("/entries?quarantined=yes"));
    assert!(body.contains("did not verify"), "{body}");
    // The other prompt is untouched.
    let (_, _, body) = get(&a, &s.url(&format!("/entry/{}", ids[1])));
    assert!(
        body.contains("and the rent") && body.contains("TRUSTED"),
        "{body}"
    );
}

/// A store-only attacker deletes a row from the middle of the log (`spec/storage.md` §6.1,
/// class 9). The explorer writes nothing, so it still starts (`spec/explorer.md` §3.3): the
/// address first, then the background indexing says the rows do not chain; the overview says
/// so, the leaf is listed as not verified, and its child names it as an `UNVERIFIED` parent
/// (never absent, never better).
#[test]
fn a_deleted_row_is_shown_unverified_and_the_rows_do_not_chain() {
    let dir = tempfile::tempdir().unwrap();
    ok(&run(&["init", "l.db"], dir.path(), None));
    let ids = append(
        dir.path(),
        &[
            serde_json::json!({"writer": "user", "role": "user", "kind": "prompt", "content": "pay the bill"}),
            serde_json::json!({"writer": "tool:read_file", "role": "tool", "kind": "tool_result", "content": "bill 98.70"}),
        ],
    );
    let memo = append(
        dir.path(),
        &[
            serde_json::json!({"writer": "agent", "role": "agent", "kind": "summary",
            "content": "memo: pay 98.70", "parents": [{"id": ids[1], "weight": 1.0}]}),
        ],
    )[0]
    .clone();
    let gone: i64 = {
        let db = rusqlite::Connection::open(dir.path().join("l.db")).unwrap();
        let hex = |b: Vec<u8>| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let mut q = db.prepare("SELECT idx, id FROM entries").unwrap();
        let rows: Vec<(i64, Vec<u8>)> = q
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let idx = rows
            .into_iter()
            .find(|(_, id)| hex(id.clone()) == ids[1])
            .map(|(i, _)| i)
            .unwrap();
        db.execute("DELETE FROM entries WHERE idx = ?1", [idx])
            .unwrap();
        idx
    };
    let s = Serve::start(dir.path(), &[]);
    assert!(
        s.indexed
            .contains("(1 did not verify; stored rows do NOT chain)"),
        "{:?}",
        s.indexed
    );
    let a = agent();
    let (_, _, body) = get(&a, &s.url("/ledger"));
    assert!(body.contains("NOT confirmed"), "{body}");
    let (_, _, body) = get(&a, &s.url("/entries?label=UNVERIFIED"));
    assert!(
        body.contains(&format!("<td>{gone}</td>")) && body.contains("did not verify"),
        "{body}"
    );
    let (status, _, body) = get(&a, &s.url(&format!("/entry/{memo}")));
    assert_eq!(status, 200);
    let parents = &body[body.find("<h2>Parents</h2>").unwrap()..];
    assert!(parents.contains("UNVERIFIED"), "{parents}");
}

/// A ledger `l.db` in `dir` holding an injected bill (an IBAN) and, for each of `contents`, an
/// agent's tool-call entry with that text whose parent is the bill, checkpointed: the calls' ids.
fn calls_after_a_bill(dir: &Path, contents: &[String]) -> Vec<String> {
    ok(&run(&["init", "l.db"], dir, None));
    let bill = append(
        dir,
        &[
            serde_json::json!({"writer": "tool:read_file", "role": "tool", "kind": "tool_result",
            "content": "pay GB33BUKB20201555555555"}),
        ],
    )[0]
    .clone();
    let calls = contents
        .iter()
        .map(|content| {
            append(
                dir,
                &[
                    serde_json::json!({"writer": "agent", "role": "agent", "kind": "tool_call",
                    "content": content, "parents": [{"id": bill, "weight": 1.0}]}),
                ],
            )[0]
            .clone()
        })
        .collect();
    ok(&run(&["checkpoint", "l.db"], dir, None));
    calls
}

/// A tool-call entry whose arguments are not a JSON object (a string, a list, null, missing)
/// is shown as a denial, never as an allowed call with no arguments (spec/explorer.md §2.5).
#[test]
fn a_call_with_unreadable_arguments_is_shown_denied() {
    let dir = tempfile::tempdir().unwrap();
    let mut contents: Vec<String> = [
        r#""GB33BUKB20201555555555""#,
        r#"["GB33BUKB20201555555555"]"#,
        "null",
    ]
    .iter()
    .map(|args| format!(r#"{{"tool":"send_money","args":{args}}}"#))
    .collect();
    contents.push(r#"{"tool":"send_money"}"#.to_string());
    let calls = calls_after_a_bill(dir.path(), &contents);
    let s = Serve::start(dir.path(), &[]);
    let a = agent();
    for call in &calls {
        let (status, _, body) = get(&a, &s.url(&format!("/entry/{call}")));
        assert_eq!(status, 200);
        assert!(
            body.contains("deny (fail closed): its arguments are not a JSON object"),
            "{call}: {body}"
        );
        assert!(!body.contains("allow"), "{call}: {body}");
    }
}

/// An MCP tool's call (`mcp__<server>__<tool>`, as Claude Code and the gateway name it) and a
/// call of a tool no policy key names are decided as the hooks decide them (`Policy::gates`):
/// with an argument from an injected bill, each page says deny, never allow.
#[test]
fn calls_are_shown_gated_as_the_hooks_gate_them() {
    let dir = tempfile::tempdir().unwrap();
    let contents: Vec<String> = ["mcp__bank__send_money", "frobnicate_payments"]
        .iter()
        .map(|tool| {
            format!(r#"{{"tool":"{tool}","args":{{"recipient":"GB33BUKB20201555555555"}}}}"#)
        })
        .collect();
    let calls = calls_after_a_bill(dir.path(), &contents);
    let s = Serve::start(dir.path(), &[]);
    let a = agent();
    for call in &calls {
        let (status, _, body) = get(&a, &s.url(&format!("/entry/{call}")));
        assert_eq!(status, 200);
        let text = text_of(&body);
        assert!(text.contains("deny"), "{call}: {text}");
        assert!(!text.contains("allow"), "{call}: {text}");
    }
}

/// A call the policy lets pass ungated (a file tool whose `when` paths it does not write,
/// `spec/hooks.md` §10.2) is shown allowed as not sensitive, as the hooks let it pass, and the
/// same tool writing a gated path after the bill is denied: the explorer asks the policy's one
/// question (`Policy::gates`), not a second one of its own.
#[test]
fn a_call_the_policy_lets_pass_is_shown_as_the_hooks_pass_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.toml"),
        "default_max_label = \"derived-trusted\"\n[tools.write_notes]\nmax_label = \"derived-trusted\"\n[tools.write_notes.when]\npath = [\"secrets/**\"]\n",
    )
    .unwrap();
    let contents: Vec<String> = ["notes/today.md", "secrets/today.md"]
        .iter()
        .map(|path| {
            format!(
                r#"{{"tool":"write_notes","args":{{"path":"{path}","text":"GB33BUKB20201555555555"}}}}"#
            )
        })
        .collect();
    let calls = calls_after_a_bill(dir.path(), &contents);
    let s = Serve::start(dir.path(), &["--policy", "p.toml"]);
    let a = agent();
    let texts: Vec<String> = calls
        .iter()
        .map(|call| {
            let (status, _, body) = get(&a, &s.url(&format!("/entry/{call}")));
            assert_eq!(status, 200);
            text_of(&body)
        })
        .collect();
    assert!(
        texts[0].contains("allow (not a sensitive tool)"),
        "{}",
        texts[0]
    );
    assert!(texts[1].contains("deny"), "{}", texts[1]);
    assert!(!texts[1].contains("allow"), "{}", texts[1]);
}

/// Issue 31: a filter, sort or page the explorer does not know is a `400`, never "no filter";
/// the short ids the CLI prints and `#LEAF` find their entry; a text's leading newline and a
/// writer with CR/LF/NUL in its name survive.
#[test]
fn queries_are_typed_and_short_ids_resolve() {
    let dir = tempfile::tempdir().unwrap();
    let [prompt, hostile, _, _] = setup(dir.path());
    let odd = append(
        dir.path(),
        &[
            serde_json::json!({"writer": "tool:a\r\nb\u{0}c", "role": "tool", "kind": "tool_result",
                             "content": "\nfirst line was empty"}),
        ],
    )[0]
    .clone();
    let s = Serve::start(dir.path(), &[]);
    let a = agent();
    for bad in [
        "/entries?quarantined=maybe",
        "/entries?label=bogus",
        "/entries?kind=bogus",
        "/entries?writer=agent",
        "/entries?page=18446744073709551615",
        "/entries?page=0",
        "/entries?page=x",
        "/quarantine?page=2",
        "/?sort=bogus",
        "/?page=99",
        "/calls?page=18446744073709551616",
        "/find?id=xyz",
        "/find?id=%23x",
    ] {
        let (status, h, body) = get(&a, &s.url(bad));
        assert_eq!(status, 400, "{bad}: {body}");
        assert_eq!(h["content-security-policy"], CSP, "{bad}");
    }
    // Short ids, as the CLI prints them, and leaf numbers.
    let r = a
        .get(&s.url(&format!("/entry/{}", &prompt[..8])))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], format!("/entry/{prompt}").as_str());
    let r = a
        .get(&s.url(&format!("/find?id={}", hostile[..8].to_uppercase())))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(
        r.headers()["location"],
        format!("/entry/{hostile}").as_str()
    );
    let r = a.get(&s.url("/find?id=%232")).call().unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(get(&a, &s.url("/find?id=%2399999")).0, 404);
    // The text keeps its leading newline (HTML drops the first one after <pre>).
    let (_, _, body) = get(&a, &s.url(&format!("/entry/{odd}")));
    assert!(
        body.contains("<pre class=\"text\">\n\nfirst line was empty</pre>"),
        "{body}"
    );
    // The writer filter takes the key; the odd name is a quoted literal, its controls marked.
    let (_, _, body) = get(&a, &s.url("/entries"));
    assert!(body.contains("`tool:a\\r\\nb\\u{0000}c`"), "{body}");
    assert!(!body.contains('\u{0}'));
    let key = body
        .split("<option value=\"")
        .filter_map(|o| o.split_once("\">"))
        .find(|(_, text)| text.starts_with("`tool:a\\r"))
        .map(|(v, _)| v.to_string())
        .unwrap();
    assert_eq!(key.len(), 64, "{key}");
    let (status, _, body) = get(&a, &s.url(&format!("/entries?writer={key}")));
    assert_eq!(status, 200);
    assert_eq!(body.matches("<tr><td>").count(), 1, "{body}");
    assert!(body.contains(&format!("/entry/{odd}\"")), "{body}");
}
