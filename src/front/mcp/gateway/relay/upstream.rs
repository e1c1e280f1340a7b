//! The upstream server's side of the relay (`spec/mcp.md` §6.2): its lines read in order, its
//! answers passed on to the client and recorded on the door's queue (a `tools/call` result as
//! tool output, §6.7), and its own requests to the client.

use super::*;

impl Relay {
    pub(super) async fn read_upstream(self, output: impl AsyncRead + Unpin) -> std::io::Result<()> {
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
        let gone: Vec<Taken> = {
            let mut st = self.state();
            st.upstream_gone = true;
            let gone: Vec<Pending> = st.pending.drain().map(|(_, p)| p).collect();
            gone.into_iter()
                .map(|p| self.answering(&mut st, p))
                .collect()
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
        // Held until the answer is written: the relay does not end before it is.
        if let Some(_taken) = self.take(&key) {
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
