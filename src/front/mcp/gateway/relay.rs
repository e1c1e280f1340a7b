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

mod worker;

use super::door::{Decision, Door, Events};
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
    /// Notified whenever a request leaves the table.
    idle: Notify,
    /// A random string in the ids of the gateway's own requests to the client, which no
    /// upstream id can be mistaken for.
    nonce: String,
    /// How many the gateway has sent.
    asked: std::sync::atomic::AtomicU64,
}

#[derive(Clone)]
struct Relay(Arc<Inner>);

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

    /// Removes the request `key` from the table if it is still there; `true` if it was (then
    /// the caller answers it).
    fn take(&self, key: &str) -> Option<Pending> {
        let p = self.state().pending.remove(key);
        if p.is_some() {
            self.0.idle.notify_waiters();
        }
        p
    }

    /// Waits until no request is in flight, or the upstream is gone.
    async fn drain(&self) {
        loop {
            let idle = self.0.idle.notified();
            {
                let st = self.state();
                if st.pending.is_empty() || st.upstream_gone {
                    return;
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

    // ---- the client's side ----

    async fn read_client(self, input: impl AsyncRead + Unpin) -> std::io::Result<()> {
        let mut input = BufReader::with_capacity(1 << 16, input);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let line = match read_line(&mut input, &mut buf, MAX_LINE_BYTES).await? {
                Read::Eof => return Ok(()),
                Read::Oversized => Line::Bad {
                    id: None,
                    code: PARSE_ERROR,
                    why: format!("message longer than {MAX_LINE_BYTES} bytes"),
                },
                Read::Complete => wire::parse(&buf),
            };
            match line {
                Line::Blank => {}
                Line::Bad { .. } => {
                    if let Some(a) = line.answer() {
                        self.to_client(&a.to_string()).await;
                    }
                }
                Line::Message(Message::Request { id, method, params }, text) => {
                    self.client_request(id, method, params, text).await
                }
                Line::Message(Message::Notification { method, params }, text) => {
                    self.client_notification(&method, &params, &text).await
                }
                Line::Message(Message::Response { id, outcome }, text) => {
                    self.client_response(&id, &outcome, &text).await
                }
            }
        }
    }

    async fn client_request(&self, id: Value, method: String, params: Value, text: String) {
        let key = id_key(&id);
        let refused = {
            let st = self.state();
            if st.upstream_gone {
                Some((
                    INTERNAL_ERROR,
                    "memlineage gateway: the upstream server has exited",
                ))
            } else if st.pending.contains_key(&key) {
                Some((
                    INVALID_REQUEST,
                    "memlineage gateway: a request with this id is already in flight",
                ))
            } else {
                None
            }
        };
        if let Some((code, why)) = refused {
            return self.answer_error(&id, code, why).await;
        }
        if method == "initialize" {
            // Form elicitation: `{}` (the 2025-06-18 form) or with `form` (2025-11-25).
            let e = params
                .get("capabilities")
                .and_then(|c| c.get("elicitation"));
            let form = e
                .and_then(Value::as_object)
                .is_some_and(|e| e.is_empty() || e.contains_key("form"));
            self.state().client_elicits = form;
        }
        let tool = if method == "tools/call" {
            match tool_call(&params) {
                Ok(t) => Some(t),
                Err(why) => return self.answer_error(&id, INVALID_PARAMS, &why).await,
            }
        } else {
            None
        };
        let now = Instant::now();
        let deadline = self.0.options.deadline;
        let deciding = tool.is_some();
        let pending = Pending {
            id: id.clone(),
            method,
            params: params.clone(),
            tool,
            phase: if deciding {
                Phase::Deciding
            } else {
                Phase::Forwarded
            },
            progress: params
                .get("_meta")
                .and_then(|m| m.get("progressToken"))
                .map(id_key),
            deadline: now + deadline,
            cap: now + deadline * PROGRESS_CAP,
        };
        self.state().pending.insert(key.clone(), pending);
        self.watch(key.clone());
        if deciding {
            let relay = self.clone();
            tokio::spawn(async move { relay.decide(key, id, params).await });
        } else {
            self.to_upstream(&text).await;
        }
    }

    /// Decides the `tools/call` `key` and forwards it, or answers the refusal.
    async fn decide(self, key: String, id: Value, params: Value) {
        let Some((tool, args)) = self.state().pending.get(&key).and_then(|p| p.tool.clone()) else {
            return;
        };
        let event = self.events().pre_tool_use(&tool, &args);
        let outcome = self.door(HookEvent::PreToolUse, event).await;
        let refusal = match Decision::of(&outcome) {
            Decision::Forward => None,
            Decision::Refuse(text) => Some(text),
            Decision::Ask(receipt) => (self.ask_user(&tool, &args, &receipt).await)
                .err()
                .map(|why| Decision::unasked(&receipt, &why)),
        };
        let Some(text) = refusal else {
            return self.forward_decided(&key, &id, &params).await;
        };
        tracing::info!(tool = %tool, reason = %text, "memlineage gateway: refused a tools/call");
        // The receipt is what the model reads in place of the tool's output: recorded as the
        // call's failure (queued before any later decision, so it counts for them).
        let record = self
            .events()
            .post_tool_use_failure(&tool, &Value::Object(args), &json!(text));
        let recorded = self.ask(HookEvent::PostToolUseFailure, record);
        tokio::spawn(async move {
            if let Ok(o) = recorded.await {
                if !o.allows() {
                    tracing::warn!(reason = %o.stderr.trim(), "memlineage gateway: a refusal was not recorded");
                }
            }
        });
        if self.take(&key).is_some() {
            let result = json!({
                "jsonrpc": "2.0",
                "id": id,
                "result": {"content": [{"type": "text", "text": text}], "isError": true},
            });
            self.to_client(&result.to_string()).await;
        }
    }

    /// Forwards the decided `tools/call` `key`, as parsed, if it is still waiting for its
    /// decision (not timed out or cancelled).
    async fn forward_decided(&self, key: &str, id: &Value, params: &Value) {
        let forward = {
            let mut st = self.state();
            match st.pending.get_mut(key) {
                Some(p) if p.phase == Phase::Deciding => {
                    p.phase = Phase::Forwarded;
                    true
                }
                _ => false,
            }
        };
        if forward {
            // What was decided is what is forwarded: the call as parsed.
            let call =
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
            self.to_upstream(&call.to_string()).await;
        }
    }

    /// Puts an asked call to the user through an elicitation (`spec/mcp.md` §6.3): `Ok` when
    /// the user accepted; `Err` with why not (no elicitation offered, declined, cancelled, an
    /// error, no answer before the request's deadline).
    async fn ask_user(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        receipt: &str,
    ) -> Result<(), String> {
        if !self.state().client_elicits {
            return Err("the client offers no elicitation to ask the user".into());
        }
        let n = self
            .0
            .asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = json!(format!("memlineage-ask-{}-{n}", self.0.nonce));
        let (reply, answer) = oneshot::channel();
        self.state().asks.insert(id_key(&id), reply);
        let shown = Value::Object(args.clone()).to_string();
        let message = format!(
            "memlineage: allow the call of {} on server {} with {}? {receipt}",
            crate::quote::word(tool),
            crate::quote::word(&self.events().server),
            crate::front::mcp::cut(&shown, MAX_SHOWN_ARGS),
        );
        let ask = json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
                         "params": {"message": message,
                                    "requestedSchema": {"type": "object", "properties": {}}}});
        self.to_client(&ask.to_string()).await;
        let answered = tokio::time::timeout(self.0.options.deadline, answer).await;
        self.state().asks.remove(&id_key(&id));
        match answered {
            Ok(Ok(Ok(result))) => match result.get("action").and_then(Value::as_str) {
                Some("accept") => Ok(()),
                Some(other) => Err(format!("the user answered {}", crate::quote::word(other))),
                None => Err("the client's answer has no action".into()),
            },
            Ok(Ok(Err(error))) => Err(format!(
                "the client could not ask the user: {}",
                crate::front::mcp::cut(&error.to_string(), 256)
            )),
            _ => Err("the user did not answer in time".into()),
        }
    }

    async fn client_notification(&self, method: &str, params: &Value, text: &str) {
        if method == "notifications/cancelled" {
            if let Some(request) = params.get("requestId") {
                // The client will not read an answer: a call still being decided is never
                // forwarded, and a late answer is dropped.
                if let Some(p) = self.take(&id_key(request)) {
                    if p.phase == Phase::Deciding {
                        return;
                    }
                }
            }
        }
        self.to_upstream(text).await;
    }

    async fn client_response(&self, id: &Value, outcome: &Result<Value, Value>, text: &str) {
        // The answer to one of the gateway's own questions: never forwarded.
        let ours = self.state().asks.remove(&id_key(id));
        if let Some(reply) = ours {
            let _ = reply.send(outcome.clone());
            return;
        }
        let asked = self.state().server_requests.remove(&id_key(id));
        if let (Some((method, request)), Ok(result)) = (asked, outcome) {
            if method == "elicitation/create" {
                if let Some(statement) = label::elicited_statement(&request, result) {
                    // Queued before any later decision; a statement not recorded only makes
                    // later decisions stricter.
                    let event = self.events().user_prompt(&statement);
                    drop(self.ask(HookEvent::UserPromptSubmit, event));
                }
            }
        }
        self.to_upstream(text).await;
    }

    /// Answers request `key` with a timeout error when its deadline passes, unless it was
    /// answered before.
    fn watch(&self, key: String) {
        let relay = self.clone();
        tokio::spawn(async move {
            loop {
                let at = match relay.state().pending.get(&key) {
                    None => return,
                    Some(p) => p.deadline.min(p.cap),
                };
                tokio::time::sleep_until(at.into()).await;
                let due = match relay.state().pending.get(&key) {
                    None => return,
                    Some(p) => Instant::now() >= p.deadline.min(p.cap),
                };
                if due {
                    if let Some(p) = relay.take(&key) {
                        relay.timed_out(p).await;
                    }
                    return;
                }
            }
        });
    }

    async fn timed_out(&self, p: Pending) {
        let ms = self.0.options.deadline.as_millis();
        let why = match p.phase {
            Phase::Deciding => format!(
                "memlineage gateway: the call was not decided within {ms} ms, so it was not \
                 forwarded"
            ),
            Phase::Forwarded => {
                format!("memlineage gateway: the upstream server did not answer within {ms} ms")
            }
            Phase::Answered => format!(
                "memlineage gateway: the upstream's answer could not be passed on within {ms} ms"
            ),
        };
        tracing::warn!(method = %p.method, "{why}");
        if p.phase == Phase::Forwarded {
            let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                "params": {"requestId": p.id, "reason": why}});
            self.to_upstream(&cancel.to_string()).await;
        }
        self.answer_error(&p.id, REQUEST_TIMEOUT, &why).await;
    }

    // ---- the upstream's side ----

    async fn read_upstream(self, output: impl AsyncRead + Unpin) -> std::io::Result<()> {
        let mut output = BufReader::with_capacity(1 << 16, output);
        let mut buf = Vec::new();
        let read = loop {
            buf.clear();
            let line = match read_line(&mut output, &mut buf, MAX_LINE_BYTES).await {
                Err(e) => break Err(e),
                Ok(Read::Eof) => break Ok(()),
                Ok(Read::Oversized) => {
                    tracing::warn!("memlineage gateway: dropped an upstream message longer than {MAX_LINE_BYTES} bytes");
                    continue;
                }
                Ok(Read::Complete) => wire::parse(&buf),
            };
            self.upstream_line(line).await;
        };
        self.upstream_closed().await;
        read
    }

    async fn upstream_closed(&self) {
        let gone: Vec<Pending> = {
            let mut st = self.state();
            st.upstream_gone = true;
            st.pending.drain().map(|(_, p)| p).collect()
        };
        self.0.idle.notify_waiters();
        for p in gone {
            let why = "memlineage gateway: the upstream server closed its output before answering";
            self.answer_error(&p.id, INTERNAL_ERROR, why).await;
        }
    }

    async fn upstream_line(&self, line: Line) {
        match line {
            Line::Blank => {}
            Line::Bad { id, why, .. } => {
                let taken = id.as_ref().and_then(|id| self.take(&id_key(id)));
                match taken {
                    Some(p) => {
                        let msg = format!(
                            "memlineage gateway: malformed answer from the upstream server: {why}"
                        );
                        self.answer_error(&p.id, INTERNAL_ERROR, &msg).await;
                    }
                    None => {
                        tracing::warn!(%why, "memlineage gateway: dropped a malformed upstream line")
                    }
                }
            }
            Line::Message(Message::Response { id, outcome }, text) => {
                self.upstream_response(&id, outcome, text)
            }
            Line::Message(Message::Request { id, method, params }, text) => {
                let relay = self.clone();
                tokio::spawn(async move { relay.upstream_request(id, method, params, text).await });
            }
            Line::Message(Message::Notification { method, params }, text) => {
                if method == "notifications/progress" {
                    self.progressed(&params);
                }
                self.to_client(&text).await;
            }
        }
    }

    /// A progress notification starts its request's deadline again (up to its cap).
    fn progressed(&self, params: &Value) {
        let Some(token) = params.get("progressToken").map(id_key) else {
            return;
        };
        let deadline = Instant::now() + self.0.options.deadline;
        let mut st = self.state();
        for p in st.pending.values_mut() {
            if p.progress.as_deref() == Some(token.as_str()) && p.phase == Phase::Forwarded {
                p.deadline = deadline;
            }
        }
    }

    fn upstream_response(&self, id: &Value, outcome: Result<Value, Value>, text: String) {
        let key = id_key(id);
        let found = {
            let mut st = self.state();
            match st.pending.get_mut(&key) {
                Some(p) if p.phase == Phase::Forwarded => {
                    p.phase = Phase::Answered;
                    Some((p.method.clone(), p.params.clone(), p.tool.clone()))
                }
                _ => None,
            }
        };
        let Some((method, params, tool)) = found else {
            tracing::debug!(id = %key, "memlineage gateway: dropped an answer to no request in flight");
            return;
        };
        let relay = self.clone();
        tokio::spawn(async move {
            relay
                .record_answer(key, method, params, tool, outcome, text)
                .await
        });
    }

    /// Passes the upstream's answer to request `key` on and queues its record; answers an
    /// error instead when it is malformed.
    async fn record_answer(
        &self,
        key: String,
        method: String,
        params: Value,
        tool: Option<(String, Map<String, Value>)>,
        outcome: Result<Value, Value>,
        text: String,
    ) {
        let event = match self.event_of_answer(&method, &params, tool, &outcome) {
            Ok(e) => e,
            Err(why) => {
                if let Some(p) = self.take(&key) {
                    let msg = format!(
                        "memlineage gateway: malformed answer from the upstream server: {why}"
                    );
                    self.answer_error(&p.id, INTERNAL_ERROR, &msg).await;
                }
                return;
            }
        };
        if let Some((event, input, once)) = event {
            // Queued now, before any later decision: no call is decided on a read set that
            // lacks what the client was given (`spec/mcp.md` §6.7).
            let recorded = self.ask(event, input);
            let relay = self.clone();
            tokio::spawn(async move { relay.recorded(recorded, once).await });
        }
        if self.take(&key).is_some() {
            self.to_client(&text).await;
        }
    }

    /// Waits for the record of an answer already passed on. A record that fails has marked the
    /// session (the hooks' rule: its sensitive calls are refused), and the door refuses every
    /// later call of this gateway ([`worker`]), in case the mark could not be written either.
    async fn recorded(&self, recorded: oneshot::Receiver<HookOutcome>, once: Option<[u8; 32]>) {
        let outcome = recorded
            .await
            .unwrap_or_else(|_| closed("the gateway's door has stopped"));
        if outcome.allows() {
            if let Some(h) = once {
                self.state().once.insert(h);
            }
        } else {
            let why = outcome.stderr.trim().to_string();
            tracing::error!(%why, "memlineage gateway: an answer could not be recorded");
        }
    }

    /// The hook event that records an answer (`None`: nothing to record), with the hash to
    /// remember for a read recorded once; `Err` when the answer is malformed.
    #[allow(clippy::type_complexity)]
    fn event_of_answer(
        &self,
        method: &str,
        params: &Value,
        tool: Option<(String, Map<String, Value>)>,
        outcome: &Result<Value, Value>,
    ) -> Result<Option<(HookEvent, Vec<u8>, Option<[u8; 32]>)>, String> {
        let ev = self.events();
        if let Ok(result) = outcome {
            if !result.is_object() {
                return Err(format!("the result of {method} is not a JSON object"));
            }
        }
        // The output of a tool: of the call, or of the task it created (SEP-1686).
        let tool = tool.or_else(|| {
            (method == "tasks/result")
                .then(|| params.get("taskId").and_then(Value::as_str))
                .flatten()
                .and_then(|t| self.state().tasks.get(t).cloned())
        });
        if let Some((name, args)) = tool {
            let args = Value::Object(args);
            return Ok(Some(match outcome {
                Ok(result) => {
                    check_tool_result(result)?;
                    if let Some(task) = created_task(params, result) {
                        let mut st = self.state();
                        if st.tasks.len() < MAX_SERVER_REQUESTS {
                            st.tasks.insert(
                                task,
                                (name.clone(), args.as_object().cloned().unwrap_or_default()),
                            );
                        }
                    }
                    (
                        HookEvent::PostToolUse,
                        ev.post_tool_use(&name, &args, result),
                        None,
                    )
                }
                Err(error) => (
                    HookEvent::PostToolUseFailure,
                    ev.post_tool_use_failure(&name, &args, error),
                    None,
                ),
            }));
        }
        let result = match outcome {
            Ok(r) => r,
            // An error's message may be shown to the model: the read of a failed method.
            Err(error) => {
                return Ok(
                    match label::of_result(method, params, error, self.0.options.declarations) {
                        Record::Nothing => None,
                        Record::Read { name, input, .. } => Some((
                            HookEvent::PostToolUseFailure,
                            ev.post_tool_use_failure(&name, &input, error),
                            None,
                        )),
                    },
                )
            }
        };
        Ok(
            match label::of_result(method, params, result, self.0.options.declarations) {
                Record::Nothing => None,
                Record::Read {
                    name,
                    input,
                    output,
                    once,
                } => {
                    let event = ev.post_tool_use(&name, &input, &output);
                    let hash = once.then(|| crate::record::Hash32::digest(&event).0);
                    if hash.is_some_and(|h| self.state().once.contains(&h)) {
                        None
                    } else {
                        Some((HookEvent::PostToolUse, event, hash))
                    }
                }
            },
        )
    }

    /// A request of the upstream to the client (sampling, elicitation, roots, ping): recorded
    /// first when it carries text for the model or the user, then passed on. One that cannot
    /// be recorded is answered with an error and never reaches the client.
    async fn upstream_request(self, id: Value, method: String, params: Value, text: String) {
        if let Record::Read {
            name,
            input,
            output,
            ..
        } = label::of_server_request(&method, &params)
        {
            let event = self.events().post_tool_use(&name, &input, &output);
            let outcome = self.door(HookEvent::PostToolUse, event).await;
            if !outcome.allows() {
                let why = format!(
                    "memlineage gateway: the request could not be recorded, so the client was not \
                     asked: {}",
                    outcome.stderr.trim()
                );
                let answer = error_response(&id, INTERNAL_ERROR, &why);
                self.to_upstream(&answer.to_string()).await;
                return;
            }
        }
        {
            let mut st = self.state();
            if st.server_requests.len() < MAX_SERVER_REQUESTS {
                st.server_requests.insert(id_key(&id), (method, params));
            }
        }
        self.to_client(&text).await;
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
