//! The relay between the client and the upstream server (`spec/mcp.md` §6.2): two readers, one
//! per peer, a table of the client's requests in flight with their deadlines, and one worker
//! thread that asks the [`Door`] in arrival order.
//!
//! Every message is passed on as the peer sent it (its line, lone surrogates replaced), but
//! for a `tools/call`, which is forwarded as the gateway parsed it, so that what reaches the
//! upstream is what was decided. A request of the client is answered exactly once: by the
//! upstream, by the gateway's refusal, or by the gateway's error when the deadline passes,
//! the upstream's answer is malformed, or the upstream has exited. A late answer is dropped.
//! An answer is passed on, then recorded on the door's queue, ahead of every decision queued
//! after it (`spec/mcp.md` §6.7).

mod client;
mod upstream;
mod worker;

use super::door::{Disposition, Door, Events};
use super::label::{self, Record};
use super::wire::{self, error_response, id_key, Line, Message, INTERNAL_ERROR, REQUEST_TIMEOUT};
use crate::front::hook::{HookEvent, HookOutcome, EXIT_BLOCK};
use crate::front::mcp::stdio::{
    read_line, Line as Read, INVALID_PARAMS, INVALID_REQUEST, MAX_LINE_BYTES, PARSE_ERROR,
};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{oneshot, Notify};
use worker::{worker, Job};

/// Most server requests remembered until the client answers them (to read an elicitation's
/// answer); past it, an answer is passed on without being read as the user's statement.
const MAX_SERVER_REQUESTS: usize = 4096;
/// How many times the deadline a request may be kept alive by progress notifications.
pub const PROGRESS_CAP: u32 = 10;
/// How long the gateway waits for the upstream server to finish after the client closed its
/// input and every request was answered.
const GRACE: Duration = Duration::from_secs(2);

/// The gateway's settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// The hook events it writes (server name, session, working directory).
    pub events: Events,
    /// How long a client request may wait for its answer, from its arrival: decision,
    /// upstream, recording. A progress notification for the request starts it again, up to
    /// [`PROGRESS_CAP`] times the deadline in all.
    pub deadline: Duration,
    /// Whether the server's own declarations (instructions, tool and prompt descriptions) are
    /// recorded as reads (`label::of_result`).
    pub declarations: bool,
}

/// Why the relay stopped.
///
/// Exhaustive: each end sets the exit status of `memlineage mcp proxy`; a new one must be
/// handled there, not fall into a wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The client closed its input (and every request in flight was answered or timed out).
    ClientClosed,
    /// The upstream server closed its output (it exited); requests in flight were answered
    /// with errors.
    UpstreamClosed,
}

/// Relays between the client (`client_in`, `client_out`) and the upstream server (its standard
/// output `upstream_out` and input `upstream_in`), deciding and recording through `door`,
/// until one side closes.
///
/// # Errors
/// I/O errors reading either peer.
pub async fn run<D, CR, CW, UR, UW>(
    options: Options,
    door: D,
    client_in: CR,
    client_out: CW,
    upstream_out: UR,
    upstream_in: UW,
) -> std::io::Result<Ended>
where
    D: Door,
    CR: AsyncRead + Unpin + Send + 'static,
    CW: AsyncWrite + Unpin + Send + 'static,
    UR: AsyncRead + Unpin + Send + 'static,
    UW: AsyncWrite + Unpin + Send + 'static,
{
    let (jobs, queue) = std::sync::mpsc::channel::<Job>();
    // The door's own thread: it may block (a lock, a disk) without stalling either peer.
    std::thread::Builder::new()
        .name("memlineage-gateway-door".into())
        .spawn(move || worker(door, queue))?;
    // A session of the gateway's own begins with it (spec/mcp.md §6.4), before any message is
    // relayed, so that no record is taken ahead of it. A start that fails is not fatal here:
    // the session then has no start, and the door refuses its gated calls.
    if let Some(input) = options.events.session_start() {
        let (reply, started) = oneshot::channel();
        let start = Job {
            event: Some(HookEvent::SessionStart),
            input,
            reply,
        };
        if jobs.send(start).is_ok() {
            match tokio::time::timeout(options.deadline, started).await {
                Ok(Ok(outcome)) if outcome.allows() => {}
                Ok(Ok(outcome)) => tracing::warn!(
                    why = outcome.stderr.trim(),
                    "memlineage gateway: the session's start was not recorded"
                ),
                _ => tracing::warn!("memlineage gateway: the session's start got no answer"),
            }
        }
    }
    let relay = Relay(Arc::new(Inner {
        options,
        jobs: Mutex::new(jobs),
        client: tokio::sync::Mutex::new(Box::new(client_out)),
        upstream: tokio::sync::Mutex::new(Some(Box::new(upstream_in))),
        state: Mutex::new(State::default()),
        idle: Notify::new(),
        nonce: nonce(),
        asked: std::sync::atomic::AtomicU64::new(0),
        serials: std::sync::atomic::AtomicU64::new(0),
    }));
    let mut upstream = tokio::spawn(relay.clone().read_upstream(upstream_out));
    let ended = tokio::select! {
        read = relay.clone().read_client(client_in) => {
            read?;
            relay.drain().await;
            relay.close_upstream().await;
            let _ = tokio::time::timeout(GRACE, &mut upstream).await;
            upstream.abort();
            Ended::ClientClosed
        }
        read = &mut upstream => {
            read.map_err(std::io::Error::other)??;
            Ended::UpstreamClosed
        }
    };
    // What the client was given is recorded before the process ends: wait for every question
    // queued so far (at most a deadline).
    let (reply, done) = oneshot::channel();
    relay.queue(Job {
        event: None,
        input: Vec::new(),
        reply,
    });
    let _ = tokio::time::timeout(relay.0.options.deadline, done).await;
    Ok(ended)
}

/// A client request in flight.
struct Pending {
    /// Which request this is, among all the client sent: a client may cancel a request and
    /// send another under the same id while the first is being decided, and only the request
    /// that was decided may be forwarded or answered with its refusal.
    serial: u64,
    id: Value,
    method: String,
    params: Value,
    /// A `tools/call`'s tool and arguments.
    tool: Option<(String, Map<String, Value>)>,
    phase: Phase,
    /// The key of its progress token, if it has one.
    progress: Option<String>,
    deadline: Instant,
    /// The latest the deadline may be pushed to by progress.
    cap: Instant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// A `tools/call` the door is deciding: not forwarded yet.
    Deciding,
    /// Forwarded to the upstream server.
    Forwarded,
    /// Answered by the upstream; its answer is being checked and passed on.
    Answered,
}

#[derive(Default)]
struct State {
    pending: HashMap<String, Pending>,
    /// The upstream's requests the client has not answered: method and parameters.
    server_requests: HashMap<String, (String, Value)>,
    /// Hashes of the reads recorded once (`Record::Read::once`).
    once: HashSet<[u8; 32]>,
    /// Tasks (SEP-1686) created by a `tools/call`: their tool and arguments.
    tasks: HashMap<String, (String, Map<String, Value>)>,
    upstream_gone: bool,
    /// Requests taken from `pending` whose answer is still being written to the client
    /// ([`Taken`]): the relay does not end before they are written.
    answering: usize,
    /// Whether the client's `initialize` offered form elicitation: then an asked call is put
    /// to the user.
    client_elicits: bool,
    /// The gateway's own elicitations in flight, by id key: where the answer goes.
    asks: HashMap<String, oneshot::Sender<Result<Value, Value>>>,
}

type Writer = Box<dyn AsyncWrite + Send + Unpin>;

struct Inner {
    options: Options,
    jobs: Mutex<std::sync::mpsc::Sender<Job>>,
    client: tokio::sync::Mutex<Writer>,
    upstream: tokio::sync::Mutex<Option<Writer>>,
    state: Mutex<State>,
    /// Notified whenever a request leaves the table or its answer has been written.
    idle: Notify,
    /// A random string in the ids of the gateway's own requests to the client, which no
    /// upstream id can be mistaken for.
    nonce: String,
    /// How many the gateway has sent.
    asked: std::sync::atomic::AtomicU64,
    /// How many requests the client has sent ([`Pending::serial`]).
    serials: std::sync::atomic::AtomicU64,
}

#[derive(Clone)]
struct Relay(Arc<Inner>);

/// A request taken from the table to be answered: counted in [`State::answering`] until
/// dropped (after its answer is written, or when the task writing it ends), so that
/// [`Relay::drain`] waits for the write.
struct Taken {
    pending: Pending,
    relay: Relay,
}

impl std::ops::Deref for Taken {
    type Target = Pending;

    fn deref(&self) -> &Pending {
        &self.pending
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        {
            let mut st = self.relay.state();
            st.answering = st.answering.saturating_sub(1);
        }
        self.relay.0.idle.notify_waiters();
    }
}

/// 128 random bits in hex.
fn nonce() -> String {
    use rand_core::RngCore;
    let mut b = [0u8; 16];
    rand_core::OsRng.fill_bytes(&mut b);
    hex::encode(b)
}

/// Most bytes of a call's arguments shown in the question put to the user.
const MAX_SHOWN_ARGS: usize = 2048;

/// A closed outcome for a failure of the gateway's own machinery.
fn closed(why: &str) -> HookOutcome {
    HookOutcome {
        code: EXIT_BLOCK,
        stdout: String::new(),
        stderr: format!("memlineage: deny: {why}\n"),
    }
}

impl Relay {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn events(&self) -> &Events {
        &self.0.options.events
    }

    /// Queues a question for the door; the answer comes on the receiver. Questions are
    /// answered in the order they are queued.
    fn ask(&self, event: HookEvent, input: Vec<u8>) -> oneshot::Receiver<HookOutcome> {
        let (reply, answer) = oneshot::channel();
        self.queue(Job {
            event: Some(event),
            input,
            reply,
        });
        answer
    }

    fn queue(&self, job: Job) {
        let jobs = self.0.jobs.lock().unwrap_or_else(|e| e.into_inner());
        // A worker that is gone drops the reply: the receiver then reads as closed.
        let _ = jobs.send(job);
    }

    async fn door(&self, event: HookEvent, input: Vec<u8>) -> HookOutcome {
        self.ask(event, input)
            .await
            .unwrap_or_else(|_| closed("the gateway's door has stopped"))
    }

    async fn to_client(&self, line: &str) {
        let mut w = self.0.client.lock().await;
        if let Err(e) = write_line(&mut *w, line).await {
            tracing::debug!(error = %e, "memlineage gateway: writing to the client failed");
        }
    }

    async fn to_upstream(&self, line: &str) {
        let mut w = self.0.upstream.lock().await;
        let Some(w) = w.as_mut() else { return };
        if let Err(e) = write_line(w, line).await {
            tracing::debug!(error = %e, "memlineage gateway: writing to the upstream failed");
        }
    }

    async fn answer_error(&self, id: &Value, code: i64, message: &str) {
        let answer = error_response(id, code, message);
        self.to_client(&answer.to_string()).await;
    }

    /// Removes the request `key` from the table if it is still there; `Some` if it was (then
    /// the caller answers it while it holds the [`Taken`]).
    fn take(&self, key: &str) -> Option<Taken> {
        let mut st = self.state();
        let p = st.pending.remove(key)?;
        Some(self.answering(&mut st, p))
    }

    /// `p`, just removed from the table, counted as being answered until the [`Taken`] is
    /// dropped.
    fn answering(&self, st: &mut State, p: Pending) -> Taken {
        st.answering += 1;
        Taken {
            pending: p,
            relay: self.clone(),
        }
    }

    /// [`Relay::take`] of the request `key` only if it is still the request `serial` (not
    /// another the client sent under the same id after cancelling this one).
    fn take_own(&self, key: &str, serial: u64) -> Option<Taken> {
        let mut st = self.state();
        match st.pending.get(key) {
            Some(p) if p.serial == serial => {
                let p = st.pending.remove(key)?;
                Some(self.answering(&mut st, p))
            }
            _ => None,
        }
    }

    /// Waits until no request is in flight (or the upstream is gone) and every answer taken
    /// from the table has been written to the client: the caller may then end the process
    /// without losing an answer another task was writing. A write the client does not take
    /// (it stopped reading, its pipe full) is waited for at most the deadline: the gateway
    /// never hangs on such a client.
    async fn drain(&self) {
        let mut settled_at: Option<Instant> = None;
        loop {
            let idle = self.0.idle.notified();
            {
                let st = self.state();
                if st.pending.is_empty() || st.upstream_gone {
                    let since = *settled_at.get_or_insert_with(Instant::now);
                    if st.answering == 0 || since.elapsed() >= self.0.options.deadline {
                        return;
                    }
                }
            }
            let _ = tokio::time::timeout(Duration::from_millis(100), idle).await;
        }
    }

    async fn close_upstream(&self) {
        let mut w = self.0.upstream.lock().await;
        if let Some(mut w) = w.take() {
            let _ = w.shutdown().await;
        }
    }
}

/// Writes `line` and a line feed, whole, and flushes.
async fn write_line<W: AsyncWrite + Unpin + ?Sized>(w: &mut W, line: &str) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    w.write_all(&bytes).await?;
    w.flush().await
}

/// Whether a peer may read `method` as `tools/call`: the same letters once case, blanks,
/// control characters and separators are set aside (`Tools/Call`, ` tools/call`,
/// `tools.call`). A message so named that the gateway does not decide as a `tools/call` (a
/// request spelled otherwise, a notification) is never passed on: a lenient server would run
/// it undecided (attack review 37).
fn may_be_a_call(method: &str) -> bool {
    let folded: String = method
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    folded == "toolscall"
}

/// The tool name and arguments of a `tools/call`'s parameters.
fn tool_call(params: &Value) -> Result<(String, Map<String, Value>), String> {
    let name = match params.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err("invalid params: tools/call needs `name`, a non-empty string".into()),
    };
    let args = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err("invalid params: tools/call `arguments` must be an object".into()),
    };
    Ok((name, args))
}

/// Checks the shape of a `tools/call` result (MCP 2025-11-25 `CallToolResult`, or a
/// `CreateTaskResult`): `content`, when present, an array of objects with a string `type`;
/// `isError`, when present, a boolean.
fn check_tool_result(result: &Value) -> Result<(), String> {
    if let Some(content) = result.get("content") {
        let Some(blocks) = content.as_array() else {
            return Err("tools/call `content` is not an array".into());
        };
        if !blocks
            .iter()
            .all(|b| b.get("type").is_some_and(Value::is_string))
        {
            return Err("a tools/call content block has no string `type`".into());
        }
    }
    if result.get("isError").is_some_and(|e| !e.is_boolean()) {
        return Err("tools/call `isError` is not a boolean".into());
    }
    Ok(())
}

/// The id of the task a task-augmented `tools/call` created, if it did.
fn created_task(params: &Value, result: &Value) -> Option<String> {
    params.get("task")?;
    result
        .get("task")?
        .get("taskId")?
        .as_str()
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::AsyncBufReadExt;

    /// A client whose standard input is slow: each write waits `delay` first.
    struct SlowClient {
        written: Arc<Mutex<Vec<u8>>>,
        delay: Option<Pin<Box<tokio::time::Sleep>>>,
    }

    impl AsyncWrite for SlowClient {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            let delay = self
                .delay
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(300))));
            if delay.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.delay = None;
            self.written.lock().unwrap().extend_from_slice(buf);
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// A client that never takes what it is written (it stopped reading, its pipe full).
    struct Stuck;

    impl AsyncWrite for Stuck {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            Poll::Pending
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// A door that allows everything.
    struct Open;

    impl Door for Open {
        fn answer(&mut self, _: HookEvent, _: &[u8]) -> HookOutcome {
            HookOutcome {
                code: 0,
                stdout: String::new(),
                stderr: String::new(),
            }
        }
    }

    /// The client sends a request and closes its output at once; the upstream answers it and
    /// ends when its input closes. The answer reaches the client before the relay returns,
    /// however long writing it takes (the binary exits when the relay returns: an answer still
    /// being written by another task was lost, which made `memlineage mcp proxy --url` answer
    /// nothing now and then under load).
    /// An upstream that answers every request with an empty result and ends when its input
    /// closes; the relay's ends of its two pipes.
    fn answering_upstream() -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
        let (relay_in, upstream_in) = tokio::io::duplex(4096);
        let (mut upstream_out, relay_out) = tokio::io::duplex(4096);
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(upstream_in).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let v: Value = serde_json::from_str(&line).unwrap();
                let answer = json!({"jsonrpc": "2.0", "id": v["id"], "result": {}});
                let _ = upstream_out
                    .write_all(format!("{answer}\n").as_bytes())
                    .await;
            }
        });
        (relay_out, relay_in)
    }

    /// A client's output holding one request (`ping`, id 7), then closed.
    async fn one_request_then_closed() -> tokio::io::DuplexStream {
        let (mut client, client_in) = tokio::io::duplex(4096);
        client
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        client_in
    }

    fn options(deadline: Duration) -> Options {
        Options {
            events: Events {
                server: "t".into(),
                session: "not-a-gateway-session".into(),
                cwd: None,
            },
            deadline,
            declarations: false,
        }
    }

    /// A client that closed its input and stopped reading does not keep the gateway forever:
    /// the answer it does not take is waited for at most the deadline.
    #[tokio::test]
    async fn a_client_that_stopped_reading_does_not_hold_the_relay() {
        let client_in = one_request_then_closed().await;
        let (relay_out, relay_in) = answering_upstream();
        let run = run(
            options(Duration::from_millis(200)),
            Open,
            client_in,
            Stuck,
            relay_out,
            relay_in,
        );
        let ended = tokio::time::timeout(Duration::from_secs(20), run).await;
        assert!(
            matches!(ended, Ok(Ok(Ended::ClientClosed))),
            "{:?}",
            ended.map(|r| r.map(|_| ()))
        );
    }

    #[tokio::test]
    async fn every_answer_is_written_before_the_relay_ends() {
        let options = options(Duration::from_secs(10));
        let client_in = one_request_then_closed().await;
        let (relay_out, relay_in) = answering_upstream();
        let written = Arc::new(Mutex::new(Vec::new()));
        let client_out = SlowClient {
            written: written.clone(),
            delay: None,
        };
        let ended = run(options, Open, client_in, client_out, relay_out, relay_in)
            .await
            .unwrap();
        assert!(matches!(ended, Ended::ClientClosed));
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        assert!(text.contains("\"id\":7"), "{text:?}");
    }

    #[test]
    fn methods_a_peer_may_read_as_a_call_are_recognised() {
        for m in [
            "tools/call",
            "Tools/Call",
            " tools/call",
            "tools.call\n",
            "TOOLS_CALL\0",
        ] {
            assert!(may_be_a_call(m), "{m:?}");
        }
        for m in ["tools/list", "tasks/call", "tools/called", ""] {
            assert!(!may_be_a_call(m), "{m:?}");
        }
    }

    #[test]
    fn tool_calls_and_their_results_are_checked() {
        assert!(tool_call(&json!({"name": "t"})).is_ok());
        assert!(tool_call(&json!({"name": "t", "arguments": null})).is_ok());
        assert!(tool_call(&json!({"name": ""})).is_err());
        assert!(tool_call(&json!({"name": "t", "arguments": [1]})).is_err());
        assert!(check_tool_result(&json!({"content": [{"type": "text", "text": "x"}]})).is_ok());
        assert!(check_tool_result(&json!({"task": {"taskId": "a"}})).is_ok());
        assert!(check_tool_result(&json!({"content": "x"})).is_err());
        assert!(check_tool_result(&json!({"content": [{"text": "x"}]})).is_err());
        assert!(check_tool_result(&json!({"content": [], "isError": "yes"})).is_err());
        assert_eq!(
            created_task(&json!({"task": {}}), &json!({"task": {"taskId": "t1"}})),
            Some("t1".into())
        );
        assert_eq!(
            created_task(&json!({}), &json!({"task": {"taskId": "t1"}})),
            None
        );
    }
}
