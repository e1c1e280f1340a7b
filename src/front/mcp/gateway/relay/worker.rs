//! The relay's worker (`spec/mcp.md` §6.7): one thread that asks the [`Door`] the queued
//! questions in arrival order, records of tool output first and together, and refuses every
//! decision once a record has failed.

use super::super::door::Door;
use super::closed;
use crate::front::hook::{HookEvent, HookOutcome};
use tokio::sync::oneshot;

/// One question to the door and where its answer goes; `event` `None` is a barrier, answered
/// once every question queued before it is.
pub(super) struct Job {
    pub(super) event: Option<HookEvent>,
    pub(super) input: Vec<u8>,
    pub(super) reply: oneshot::Sender<HookOutcome>,
}

/// Most records the door is given at once.
const MAX_BATCH: usize = 64;

/// Answers the queued questions (`spec/mcp.md` §6.7): no question is answered before a record
/// of tool output queued before it, and the records waiting are given to the door together
/// ([`Door::answer_all`], at most [`MAX_BATCH`]), ahead of decisions queued before some of them:
/// a read recorded early can only make a decision stricter (more sources, more untrusted
/// reads). A user's statement and a barrier keep their place. Once a record of text the client
/// was given has failed, every later decision is refused: the read set lacks that text, and the
/// mark the hooks' rule leaves on the session may not have been written either.
pub(super) fn worker<D: Door>(mut door: D, queue: std::sync::mpsc::Receiver<Job>) {
    let mut unrecorded: Option<String> = None;
    let mut waiting: std::collections::VecDeque<Job> = std::collections::VecDeque::new();
    loop {
        if waiting.is_empty() {
            match queue.recv() {
                Ok(job) => waiting.push_back(job),
                Err(_) => return,
            }
        }
        waiting.extend(queue.try_iter());
        let is_record = |j: &Job| j.event.is_some_and(HookEvent::carries_output);
        let mut batch = Vec::new();
        let mut rest = std::collections::VecDeque::with_capacity(waiting.len());
        for job in waiting.drain(..) {
            if is_record(&job) && batch.len() < MAX_BATCH {
                batch.push(job);
            } else {
                rest.push_back(job);
            }
        }
        waiting = rest;
        if !batch.is_empty() {
            record(&mut door, batch, &mut unrecorded);
        }
        // The questions now at the front: none waits behind a record queued before it.
        while waiting.front().is_some_and(|j| !is_record(j)) {
            if let Some(job) = waiting.pop_front() {
                answer(&mut door, job, &unrecorded);
            }
        }
    }
}

/// Gives the door a batch of records; the first that fails refuses every later decision.
fn record<D: Door>(door: &mut D, batch: Vec<Job>, unrecorded: &mut Option<String>) {
    let mut batch = batch;
    let events: Vec<(HookEvent, Vec<u8>)> = batch
        .iter_mut()
        .filter_map(|j| Some((j.event?, std::mem::take(&mut j.input))))
        .collect();
    let started = std::time::Instant::now();
    let outcomes = door.answer_all(&events);
    tracing::debug!(
        records = events.len(),
        ms = started.elapsed().as_millis() as u64,
        "memlineage gateway: recorded"
    );
    for (i, job) in batch.into_iter().enumerate() {
        let outcome = outcomes
            .get(i)
            .cloned()
            .unwrap_or_else(|| closed("the door gave no outcome"));
        if !outcome.allows() && unrecorded.is_none() {
            *unrecorded = Some(outcome.stderr.trim().to_string());
        }
        let _ = job.reply.send(outcome);
    }
}

/// Answers one question that is not a record of tool output: a decision (refused once a record
/// failed), a user's statement, or a barrier.
fn answer<D: Door>(door: &mut D, job: Job, unrecorded: &Option<String>) {
    let outcome = match (job.event, unrecorded) {
        (None, _) => closed("barrier"),
        (Some(HookEvent::PreToolUse), Some(why)) => closed(&format!(
            "an earlier answer of the upstream server could not be recorded ({}), so argument \
             provenance is unknown: every call is refused until the gateway restarts",
            crate::front::mcp::cut(why, 256)
        )),
        (Some(event), _) => door.answer(event, &job.input),
    };
    let _ = job.reply.send(outcome);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::hook::EXIT_BLOCK;
    use std::sync::Mutex;

    /// A door that logs what it is asked (`R<input>` for each record of a batch, in brackets;
    /// `D<input>` for a decision, `P<input>` for a statement) and fails the record `"bad"`.
    struct Logged(std::sync::Arc<Mutex<Vec<String>>>);

    impl Door for Logged {
        fn answer(&mut self, event: HookEvent, input: &[u8]) -> HookOutcome {
            let tag = if event == HookEvent::PreToolUse {
                "D"
            } else {
                "P"
            };
            let mut log = self.0.lock().unwrap();
            log.push(format!("{tag}{}", String::from_utf8_lossy(input)));
            HookOutcome {
                code: 0,
                stdout: String::new(),
                stderr: String::new(),
            }
        }

        fn answer_all(&mut self, events: &[(HookEvent, Vec<u8>)]) -> Vec<HookOutcome> {
            let names: Vec<String> = events
                .iter()
                .map(|(_, i)| format!("R{}", String::from_utf8_lossy(i)))
                .collect();
            self.0
                .lock()
                .unwrap()
                .push(format!("[{}]", names.join(" ")));
            events
                .iter()
                .map(|(_, i)| HookOutcome {
                    code: if i == b"bad" { EXIT_BLOCK } else { 0 },
                    stdout: String::new(),
                    stderr: "not recorded".into(),
                })
                .collect()
        }
    }

    /// Queues `jobs` (event, input) before the worker starts; returns the door's log and each
    /// job's outcome code.
    fn run_worker(jobs: &[(Option<HookEvent>, &str)]) -> (Vec<String>, Vec<u8>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut answers = Vec::new();
        for (event, input) in jobs {
            let (reply, answer) = oneshot::channel();
            tx.send(Job {
                event: *event,
                input: input.as_bytes().to_vec(),
                reply,
            })
            .unwrap();
            answers.push(answer);
        }
        drop(tx);
        let log = std::sync::Arc::new(Mutex::new(Vec::new()));
        worker(Logged(log.clone()), rx);
        let codes = answers
            .into_iter()
            .map(|mut a| a.try_recv().unwrap().code)
            .collect();
        let log = log.lock().unwrap().clone();
        (log, codes)
    }

    #[test]
    fn records_are_taken_together_and_before_any_decision_queued_after_one() {
        let (d, r, p) = (
            Some(HookEvent::PreToolUse),
            Some(HookEvent::PostToolUse),
            Some(HookEvent::UserPromptSubmit),
        );
        let (log, codes) = run_worker(&[
            (r, "1"),
            (d, "1"),
            (r, "2"),
            (p, "1"),
            (d, "2"),
            (None, ""),
            (r, "3"),
        ]);
        assert_eq!(log, ["[R1 R2 R3]", "D1", "P1", "D2"]);
        assert_eq!(
            codes,
            [0, 0, 0, 0, 0, EXIT_BLOCK, 0],
            "the barrier answers closed"
        );
        // A record that fails refuses every decision after it, without asking the door (the
        // first too: the record was taken ahead of it).
        let (log, codes) = run_worker(&[(d, "1"), (r, "bad"), (d, "2"), (p, "x")]);
        assert_eq!(log, ["[Rbad]", "Px"]);
        assert_eq!(codes, [EXIT_BLOCK, EXIT_BLOCK, EXIT_BLOCK, 0]);
    }
}
