//! The client's side of the relay (`spec/mcp.md` §6.2): its lines read in order, a
//! `tools/call` decided by the door before it is forwarded, the user's statements and answers
//! recorded, and each request's deadline watched.

use super::*;

/// A `tools/call` being decided: the request's key in the table, which request it is
/// ([`Pending::serial`]), its id and its parameters as parsed (what is forwarded).
struct Call {
    key: String,
    serial: u64,
    id: Value,
    params: Value,
}

impl Relay {
    pub(super) async fn read_client(self, input: impl AsyncRead + Unpin) -> std::io::Result<()> {
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
        if method != "tools/call" && may_be_a_call(&method) {
            let why = "memlineage gateway: method not found (a call's method is spelled \
                       `tools/call`; one a server may read as it is never passed on undecided)";
            return self
                .answer_error(&id, crate::front::mcp::stdio::METHOD_NOT_FOUND, why)
                .await;
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
        let deciding = tool.clone();
        let serial = self
            .0
            .serials
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let pending = Pending {
            serial,
            id: id.clone(),
            method,
            params: params.clone(),
            tool,
            phase: if deciding.is_some() {
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
        self.watch(key.clone(), serial);
        match deciding {
            Some((tool, args)) => {
                let relay = self.clone();
                let call = Call {
                    key,
                    serial,
                    id,
                    params,
                };
                tokio::spawn(async move { relay.decide(call, tool, args).await });
            }
            None => self.to_upstream(&text).await,
        }
    }

    /// Decides the `tools/call` `call` (of `tool` with `args`, read from its parameters) and
    /// forwards it, or answers the refusal. The decision, the forwarded bytes and the answer
    /// are those of this one request, whatever the client sent since under its id.
    async fn decide(self, call: Call, tool: String, args: Map<String, Value>) {
        let Call {
            key,
            serial,
            id,
            params,
        } = call;
        let waiting = matches!(self.state().pending.get(&key), Some(p) if p.serial == serial);
        if !waiting {
            // Cancelled before its decision began: never decided, never forwarded.
            return;
        }
        let event = self.events().pre_tool_use(&tool, &args);
        let outcome = self.door(HookEvent::PreToolUse, event).await;
        let refusal = match Disposition::of(&outcome) {
            Disposition::Forward => None,
            Disposition::Refuse(text) => Some(text),
            Disposition::Ask(receipt) => (self.ask_user(&tool, &args, &receipt).await)
                .err()
                .map(|why| Disposition::unasked(&receipt, &why)),
        };
        let Some(text) = refusal else {
            return self.forward_decided(&key, serial, &id, &params).await;
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
        if let Some(_taken) = self.take_own(&key, serial) {
            let result = json!({
                "jsonrpc": "2.0",
                "id": id,
                "result": {"content": [{"type": "text", "text": text}], "isError": true},
            });
            self.to_client(&result.to_string()).await;
        }
    }

    /// Forwards the decided `tools/call` `key`, as parsed, if it is still the request
    /// `serial` waiting for its decision (not timed out, cancelled or replaced).
    async fn forward_decided(&self, key: &str, serial: u64, id: &Value, params: &Value) {
        let forward = {
            let mut st = self.state();
            match st.pending.get_mut(key) {
                Some(p) if p.serial == serial && p.phase == Phase::Deciding => {
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
        if may_be_a_call(method) {
            // A call without an id is never decided (there is no answer to refuse it with),
            // and a server may run it all the same (JSON-RPC 2.0 §4.1): dropped.
            tracing::warn!("memlineage gateway: dropped a notification named as a tools/call");
            return;
        }
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

    /// Answers request `key` (the request `serial`) with a timeout error when its deadline
    /// passes, unless it was answered before.
    fn watch(&self, key: String, serial: u64) {
        let relay = self.clone();
        tokio::spawn(async move {
            loop {
                let at = match relay.state().pending.get(&key) {
                    Some(p) if p.serial == serial => p.deadline.min(p.cap),
                    _ => return,
                };
                tokio::time::sleep_until(at.into()).await;
                let due = match relay.state().pending.get(&key) {
                    Some(p) if p.serial == serial => Instant::now() >= p.deadline.min(p.cap),
                    _ => return,
                };
                if due {
                    if let Some(p) = relay.take_own(&key, serial) {
                        relay.timed_out(p).await;
                    }
                    return;
                }
            }
        });
    }

    async fn timed_out(&self, p: Taken) {
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
}
