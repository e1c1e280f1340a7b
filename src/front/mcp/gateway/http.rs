//! An upstream server over Streamable HTTP (`spec/mcp.md` §6.11; MCP specification 2025-11-25,
//! "Transports", <https://modelcontextprotocol.io/specification/2025-11-25/basic/transports>),
//! presented to the relay as the two byte streams of a stdio server: one JSON-RPC message per
//! line each way. The relay, its door and its failure rules are the stdio gateway's, unchanged;
//! this adapter only carries messages.
//!
//! - Each line the relay writes is POSTed to the server's endpoint as it is (`Accept:
//!   application/json, text/event-stream`; the session's `Mcp-Session-Id` and
//!   `MCP-Protocol-Version` once known). The answer is one JSON message, or an SSE stream
//!   whose events each carry one; each message is given to the relay as a line. `202
//!   Accepted` (a notification or response) gives nothing.
//! - A request the server answers with an HTTP error, or that cannot be sent, is answered to
//!   the relay with a JSON-RPC error for its id (so the client hears of it at once, not at the
//!   deadline); a response or notification that fails is logged.
//! - Once the client has sent `notifications/initialized`, a GET opens the server's own
//!   stream (its requests and notifications outside any answer); `405` means it offers none.
//! - When the relay closes its side, the session is ended with a DELETE, then the lines end.
//!
//! Bounds: an SSE event or JSON body longer than [`MAX_LINE_BYTES`] ends that answer (what it
//! answered then times out at the relay's deadline); nothing is buffered beyond one event per
//! answer, and at most `MAX_POSTS` (32) answers are read at once (past it, a request is answered
//! with the gateway's error).
//! Not done: resuming a broken stream (`Last-Event-ID`), authorisation flows (a fixed header
//! such as a bearer token can be given).

use super::wire::{error_response, INTERNAL_ERROR};
use crate::front::mcp::stdio::{read_line, Line, MAX_LINE_BYTES};
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncWriteExt, BufReader, DuplexStream, WriteHalf};

/// Bytes the pipes between the adapter and the relay hold before a writer waits.
const PIPE_BYTES: usize = 1 << 16;
/// Most POSTs whose answers are read at once. Each holds a connection and up to two
/// [`MAX_LINE_BYTES`] buffers (an SSE line and an event's data) for as long as the server keeps
/// its answer open, which a hostile server can make forever: past it, a request is answered
/// with the gateway's error at once, and a notification or response is dropped (logged).
const MAX_POSTS: usize = 32;
/// How long the DELETE that ends the session may take.
const END_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Why an HTTP upstream cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The URL is not an absolute `http` or `https` URL.
    #[error("upstream URL {url:?}: give an absolute http:// or https:// URL")]
    Url {
        /// The URL, as given.
        url: String,
    },
    /// A header is not `Name: value` with a valid name and value.
    #[error("header {name:?}: give `Name: value`")]
    Header {
        /// The header's name as given: the text before its first `:` (all of it when it has
        /// none). Its value is not kept.
        name: String,
    },
    /// The HTTP client cannot be built (its TLS set-up).
    #[error("the HTTP client cannot be built: {0}")]
    Client(#[source] reqwest::Error),
}

/// The two ends the relay is given for an HTTP upstream: `output` stands for the server's
/// standard output (the relay reads it), `input` for its standard input (the relay writes it).
pub struct Pipes {
    /// What the server sends, one message per line.
    pub output: DuplexStream,
    /// What the relay sends the server, one message per line.
    pub input: DuplexStream,
}

/// Connects to the Streamable HTTP endpoint `url` (e.g. `http://127.0.0.1:3001/mcp`), sending
/// `headers` (`Name: value`) with every request, and starts carrying messages on the current
/// tokio runtime. Nothing is sent before the relay writes its first line.
///
/// # Errors
/// [`HttpError`] for a bad URL or header, or a client that cannot be built.
pub fn connect(url: &str, headers: &[String]) -> Result<Pipes, HttpError> {
    let parsed = reqwest::Url::parse(url).map_err(|_| HttpError::Url {
        url: url.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(HttpError::Url {
            url: url.to_string(),
        });
    }
    let mut fixed = reqwest::header::HeaderMap::new();
    for h in headers {
        let bad = || HttpError::Header {
            name: h.split(':').next().unwrap_or_default().to_string(),
        };
        let (name, value) = h.split_once(':').ok_or_else(bad)?;
        let name =
            reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| bad())?;
        let mut value = reqwest::header::HeaderValue::from_str(value.trim()).map_err(|_| bad())?;
        value.set_sensitive(true);
        fixed.insert(name, value);
    }
    let client = reqwest::Client::builder()
        .default_headers(fixed)
        .connect_timeout(std::time::Duration::from_secs(10))
        // A redirect is an error, not followed: what was decided goes to the endpoint
        // configured, nowhere else (the official Python SDK follows same-origin ones only).
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(HttpError::Client)?;
    let (output, to_relay) = tokio::io::duplex(PIPE_BYTES);
    let (input, from_relay) = tokio::io::duplex(PIPE_BYTES);
    let (_, writer) = tokio::io::split(to_relay);
    let up = Upstream {
        client,
        url: parsed,
        state: Arc::new(Mutex::new(Session::default())),
        out: Arc::new(tokio::sync::Mutex::new(writer)),
        posts: Arc::new(tokio::sync::Semaphore::new(MAX_POSTS)),
    };
    tokio::spawn(up.pump(from_relay));
    Ok(Pipes { output, input })
}

/// What the adapter learns of the HTTP session.
#[derive(Debug, Default)]
struct Session {
    /// `Mcp-Session-Id`, as the answer to the latest `initialize` gave it.
    id: Option<String>,
    /// The protocol version the server chose in its `initialize` result.
    protocol: Option<String>,
    /// The id of the client's `initialize` request, while its answer is awaited.
    initialize: Option<Value>,
    /// Whether the GET stream was asked for.
    listening: bool,
}

#[derive(Clone)]
struct Upstream {
    client: reqwest::Client,
    url: reqwest::Url,
    state: Arc<Mutex<Session>>,
    out: Arc<tokio::sync::Mutex<WriteHalf<DuplexStream>>>,
    /// The POSTs that may be in flight ([`MAX_POSTS`]).
    posts: Arc<tokio::sync::Semaphore>,
}

impl Upstream {
    fn session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads the relay's lines and POSTs each; at the end, ends the HTTP session.
    async fn pump(self, from_relay: DuplexStream) {
        let mut input = BufReader::with_capacity(PIPE_BYTES, from_relay);
        let mut buf = Vec::new();
        let mut posts = tokio::task::JoinSet::new();
        loop {
            buf.clear();
            match read_line(&mut input, &mut buf, MAX_LINE_BYTES).await {
                Ok(Line::Complete) => {
                    if buf.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let up = self.clone();
                    let body = std::mem::take(&mut buf);
                    match self.posts.clone().try_acquire_owned() {
                        Ok(permit) => posts.spawn(async move {
                            up.post(body).await;
                            drop(permit);
                        }),
                        Err(_) => posts.spawn(async move {
                            let why = format!(
                                "more than {MAX_POSTS} messages to the upstream are unanswered"
                            );
                            up.failed(request(&body).1.as_ref(), &why).await;
                        }),
                    };
                }
                // The relay writes its own lines, bounded: not expected.
                Ok(Line::Oversized) => continue,
                Ok(Line::Eof) | Err(_) => break,
            }
            // Finished posts are reaped as the relay writes, so the set stays small.
            while posts.try_join_next().is_some() {}
        }
        // The client is gone: end the session (best effort), then let the answers in flight
        // end; the lines end when the last writer is dropped.
        let id = self.session().id.clone();
        if let Some(id) = id {
            let end = self
                .client
                .delete(self.url.clone())
                .header("Mcp-Session-Id", id)
                .send();
            let _ = tokio::time::timeout(END_WAIT, end).await;
        }
        while posts.join_next().await.is_some() {}
    }

    /// POSTs one message and gives the relay what comes back.
    async fn post(self, body: Vec<u8>) {
        let (method, id) = request(&body);
        let initialize = method.as_deref() == Some("initialize");
        let (session, protocol) = {
            let mut s = self.session();
            if initialize {
                // A new session, named by none (MCP 2025-11-25, "Session Management": after
                // a 404 the client MUST initialise again without the ended session's id).
                *s = Session {
                    initialize: id.clone(),
                    ..Session::default()
                };
            }
            (s.id.clone(), s.protocol.clone())
        };
        let mut request = self
            .client
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .body(body);
        if let Some(s) = &session {
            request = request.header("Mcp-Session-Id", s);
        }
        if let (Some(p), false) = (&protocol, initialize) {
            request = request.header("MCP-Protocol-Version", p);
        }
        let response = match request.send().await {
            Ok(r) => r,
            // Without the URL: it may carry a credential (`?token=`), and this sentence is the
            // client's answer, which the ledger keeps.
            Err(e) if e.is_builder() => {
                let why = format!(
                    "the request to the upstream cannot be made (a header the upstream set, such \
                     as its protocol version, is not a valid header value): {}",
                    e.without_url()
                );
                return self.failed(id.as_ref(), &why).await;
            }
            Err(e) => {
                let why = format!("the upstream cannot be reached: {}", e.without_url());
                return self.failed(id.as_ref(), &why).await;
            }
        };
        // The session is the one the `initialize` answer names (the specification's only
        // place for it); another answer's header is not read.
        if let Some(given) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .filter(|_| initialize)
        {
            self.session().id = Some(given.to_string());
        }
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND && session.is_some() {
            let why = "the upstream ended the HTTP session (404): the client must initialise again";
            return self.failed(id.as_ref(), why).await;
        }
        if !status.is_success() {
            let why = format!("the upstream answered HTTP {status}");
            return self.failed(id.as_ref(), &why).await;
        }
        if method.as_deref() == Some("notifications/initialized") {
            self.listen();
        }
        if status == reqwest::StatusCode::ACCEPTED {
            return;
        }
        let answered = self.deliver_body(response).await;
        if let (Err(why), Some(_)) = (&answered, &id) {
            tracing::warn!(why = %why, "memlineage gateway: an HTTP answer was cut short");
        }
    }

    /// Gives the relay the messages of one answer: a JSON body, or an SSE stream.
    async fn deliver_body(&self, mut response: reqwest::Response) -> Result<(), String> {
        let stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| {
                t.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("text/event-stream")
            });
        if stream {
            let mut events = Events::default();
            while let Some(chunk) = response.chunk().await.map_err(shown)? {
                for data in events.feed(&chunk)? {
                    self.give_each(&data).await;
                }
            }
            // An event the stream does not end with a blank line is dropped (§9.2.6).
            return Ok(());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(shown)? {
            if body.len() + chunk.len() > MAX_LINE_BYTES {
                return Err(format!("a JSON answer longer than {MAX_LINE_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        self.give_each(&body).await;
        Ok(())
    }

    /// Gives the relay `message`, or each message of a batch (JSON-RPC 2.0 §6), as written: a
    /// batch is split by the raw text of its elements, never built into values (a body of 16
    /// MiB of `0,` would be some 256 MiB of them).
    async fn give_each(&self, message: &[u8]) {
        match batch_items(message) {
            Some(items) => {
                for m in items {
                    self.give(m.as_bytes()).await;
                }
            }
            None => self.give(message).await,
        }
    }

    /// Opens the server's own stream once (a GET), in the background.
    fn listen(&self) {
        let session = {
            let mut s = self.session();
            if s.listening {
                return;
            }
            s.listening = true;
            (s.id.clone(), s.protocol.clone())
        };
        let up = self.clone();
        tokio::spawn(async move {
            let mut get = up
                .client
                .get(up.url.clone())
                .header(reqwest::header::ACCEPT, "text/event-stream");
            if let Some(id) = &session.0 {
                get = get.header("Mcp-Session-Id", id);
            }
            if let Some(p) = &session.1 {
                get = get.header("MCP-Protocol-Version", p);
            }
            match get.send().await {
                Ok(r) if r.status().is_success() => {
                    if let Err(why) = up.deliver_body(r).await {
                        tracing::warn!(why = %why, "memlineage gateway: the upstream's stream ended");
                    }
                }
                // 405: the server offers no stream of its own.
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e.without_url(), "memlineage gateway: the upstream's stream cannot be opened")
                }
            }
        });
    }

    /// Gives the relay one message as a line. A JSON text's line breaks are white space
    /// between tokens (a string holds none unescaped), so they become spaces; anything else is
    /// the relay's to judge. Reads the protocol version from the `initialize` result.
    async fn give(&self, message: &[u8]) {
        // Read only while the `initialize` answer is awaited, and only its envelope (the rest
        // is skipped, not built).
        let awaited = self.session().initialize.clone();
        if let Some(init) = awaited {
            if let Ok(m) = serde_json::from_slice::<Answer>(message) {
                let id =
                    m.id.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
                if id.as_ref() == Some(&init) {
                    let version = m
                        .result
                        .and_then(|r| serde_json::from_str::<InitResult>(r.get()).ok())
                        .and_then(|r| r.protocol_version);
                    let mut s = self.session();
                    s.initialize = None;
                    s.protocol = version;
                }
            }
        }
        let mut line: Vec<u8> = message
            .iter()
            .map(|b| if matches!(b, b'\n' | b'\r') { b' ' } else { *b })
            .collect();
        line.push(b'\n');
        let mut out = self.out.lock().await;
        let _ = out.write_all(&line).await;
        let _ = out.flush().await;
    }

    /// Answers request `id` with the gateway's error (nothing for a notification or response).
    async fn failed(&self, id: Option<&Value>, why: &str) {
        tracing::warn!(why, "memlineage gateway: HTTP upstream");
        if let Some(id) = id {
            let e = error_response(id, INTERNAL_ERROR, &format!("memlineage gateway: {why}"));
            self.give(e.to_string().as_bytes()).await;
        }
    }
}

/// The raw texts of the elements of `message` when it is a JSON array, else `None`.
fn batch_items(message: &[u8]) -> Option<Vec<&str>> {
    let first = message.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'[' {
        return None;
    }
    let items = serde_json::from_slice::<Vec<&RawValue>>(message).ok()?;
    Some(items.into_iter().map(RawValue::get).collect())
}

/// A message's envelope, its other members skipped unread.
#[derive(serde::Deserialize)]
struct Answer<'a> {
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

/// What the gateway reads of an `initialize` result.
#[derive(serde::Deserialize)]
struct InitResult {
    #[serde(rename = "protocolVersion", default)]
    protocol_version: Option<String>,
}

/// The method of the message `body`, and its id when it is a request.
fn request(body: &[u8]) -> (Option<String>, Option<Value>) {
    let Ok(m) = serde_json::from_slice::<Answer>(body) else {
        return (None, None);
    };
    let method = m
        .method
        .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
    let id =
        m.id.filter(|_| method.is_some())
            .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
    (method, id)
}

/// `url` as logs may show it: without its user, password and query, which may carry a
/// credential; an unparsable one as `<unparsable URL>`.
pub fn redacted(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => "<unparsable URL>".into(),
    }
}

/// An HTTP error as a sentence, without the URL (it may carry a credential, `?token=`).
fn shown(e: reqwest::Error) -> String {
    e.without_url().to_string()
}

/// A parser of `text/event-stream` (WHATWG HTML, "Server-sent events", §9.2.6 "Interpreting an
/// event stream"), bounded: the `data` of each event, in order. Event types, ids and `retry`
/// are read and not used (every MCP message is a `message` event's data).
#[derive(Debug, Default)]
pub struct Events {
    /// The bytes of the line being read.
    line: Vec<u8>,
    /// The data of the event being read.
    data: Vec<u8>,
    /// Whether the event has a data field (an empty one counts).
    has_data: bool,
    /// Whether the last byte was a CR (a LF right after it ends no second line).
    after_cr: bool,
    /// Whether the stream's first bytes were seen (a leading byte order mark is dropped).
    started: bool,
}

impl Events {
    /// Reads `chunk`; returns the data of each event it completes.
    ///
    /// # Errors
    /// A sentence when a line or an event's data exceeds [`MAX_LINE_BYTES`]: the stream must
    /// be dropped.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        if !self.started && !chunk.is_empty() {
            self.started = true;
            chunk = chunk.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(chunk);
        }
        let mut out = Vec::new();
        for &b in chunk {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    if let Some(data) = self.end_line() {
                        out.push(data);
                    }
                }
                _ => {
                    self.after_cr = false;
                    if self.line.len() >= MAX_LINE_BYTES {
                        return Err(format!("an SSE line longer than {MAX_LINE_BYTES} bytes"));
                    }
                    self.line.push(b);
                }
            }
            if self.data.len() > MAX_LINE_BYTES {
                return Err(format!("an SSE event longer than {MAX_LINE_BYTES} bytes"));
            }
        }
        Ok(out)
    }

    /// Processes the line read; the event's data when the line is blank and ends one.
    fn end_line(&mut self) -> Option<Vec<u8>> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if !self.has_data {
                return None;
            }
            self.has_data = false;
            let mut data = std::mem::take(&mut self.data);
            if data.last() == Some(&b'\n') {
                data.pop();
            }
            return Some(data);
        }
        if line[0] == b':' {
            return None;
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (&line[..], &[][..]),
        };
        if field == b"data" {
            self.has_data = true;
            self.data.extend_from_slice(value);
            self.data.push(b'\n');
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<String> {
        let mut e = Events::default();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(e.feed(c).expect("bounded"));
        }
        out.into_iter()
            .map(|d| String::from_utf8(d).expect("utf-8"))
            .collect()
    }

    /// The examples of WHATWG HTML §9.2.6 and the line endings it allows.
    #[test]
    fn events_are_read_as_the_standard_reads_them() {
        assert_eq!(
            all(&[b"data: YHOO\ndata: +2\ndata: 10\n\n"]),
            ["YHOO\n+2\n10"]
        );
        // A comment, then an event with an empty data line, then one without the space.
        assert_eq!(
            all(&[
                b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata\n\n"
            ]),
            ["first event", "second event", ""]
        );
        // `data:  x` keeps the second space; a field without data ends no event.
        assert_eq!(all(&[b"data:  x\n\nevent: ping\n\n"]), [" x"]);
        // CR, LF and CRLF, split anywhere across chunks, and a leading byte order mark.
        assert_eq!(
            all(&[
                b"\xEF\xBB\xBFdata: a\r",
                b"\n\r",
                b"\ndata: b\r\rdata: c\n",
                b"\n"
            ]),
            ["a", "b", "c"]
        );
        // An event the stream does not end with a blank line is dropped.
        let mut e = Events::default();
        assert!(e.feed(b"data: {\"jsonrpc\":\"2.0\"}\n").unwrap().is_empty());
    }

    #[test]
    fn a_line_without_end_is_refused_before_it_grows_past_the_bound() {
        let mut e = Events::default();
        let piece = vec![b'x'; 1 << 20];
        let mut fed = 0;
        let err = loop {
            match e.feed(&piece) {
                Ok(_) => fed += piece.len(),
                Err(why) => break why,
            }
            assert!(fed <= MAX_LINE_BYTES, "kept more than the bound");
        };
        assert!(err.contains("longer than"), "{err}");
    }

    #[test]
    fn batches_are_split_as_written_and_urls_shown_without_credentials() {
        let body = br#" [ {"jsonrpc":"2.0","id":1,"result":{"a":[1, 2]}} ,{"jsonrpc":"2.0","method":"x"}]"#;
        assert_eq!(
            batch_items(body).unwrap(),
            [
                r#"{"jsonrpc":"2.0","id":1,"result":{"a":[1, 2]}}"#,
                r#"{"jsonrpc":"2.0","method":"x"}"#
            ]
        );
        assert!(batch_items(br#"{"jsonrpc":"2.0","id":1}"#).is_none());
        assert!(batch_items(b"[1, ").is_none(), "not JSON: passed on whole");
        assert_eq!(
            redacted("https://me:secret@mcp.example:8443/mcp?token=t0k#x"),
            "https://mcp.example:8443/mcp"
        );
        assert_eq!(redacted("not a url"), "<unparsable URL>");
        assert_eq!(
            request(br#"{"jsonrpc":"2.0","id":"7","method":"initialize","params":{}}"#),
            (Some("initialize".into()), Some(serde_json::json!("7")))
        );
        assert_eq!(
            request(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            (None, None)
        );
    }

    #[test]
    fn urls_and_headers_are_checked() {
        for bad in ["ftp://x/mcp", "/mcp", "http://", "not a url"] {
            assert!(
                matches!(connect_checked(bad, &[]), Err(HttpError::Url { .. })),
                "{bad}"
            );
        }
        for bad in ["NoColon", "Bad Name: v", "X: a\nb"] {
            assert!(
                matches!(
                    connect_checked("http://127.0.0.1:1/mcp", &[bad.to_string()]),
                    Err(HttpError::Header { .. })
                ),
                "{bad}"
            );
        }
    }

    /// [`connect`] on a runtime of its own (it spawns its pump).
    fn connect_checked(url: &str, headers: &[String]) -> Result<(), HttpError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async { connect(url, headers).map(|_| ()) })
    }
}
