//! The gateway's door in the binary (`spec/mcp.md` §6.1): the resident hook server's handler
//! (`hookd::State`), in process. A decision is one hook event, answered as `memlineage hook
//! serve` answers it; records queued together are answered under one `LEDGER.key.lock`, in one
//! store transaction (one commit for all their entries), with the session records written back
//! once and one checkpoint and pin for the batch, each event still handled by
//! `front::hook::handle`.

use crate::hookd;
use memlineage::front::hook::{failed_in, handle, FileSessions, HookError, HookEvent, HookOutcome};
use memlineage::front::mcp::gateway::Door;
use memlineage::front::pin::StateDir;
use memlineage::front::Session;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

/// How long a batch of records waits for `LEDGER.key.lock` (as the hook server's events).
const LOCK_WAIT: Duration = Duration::from_secs(12);

/// The door of `memlineage mcp proxy`.
pub struct GatewayDoor {
    server: hookd::State,
    state: Option<StateDir>,
}

impl GatewayDoor {
    /// A door over the (absolute) `ledger`, `policy` and `state`; `config`, the gateway's
    /// configuration file when it was started from one, is protected as they are.
    pub fn new(
        ledger: PathBuf,
        policy: Option<PathBuf>,
        state: Option<StateDir>,
        config: Option<PathBuf>,
    ) -> Self {
        let mut server = hookd::State::new(ledger, policy, state.clone());
        if let Some(c) = config {
            server.protect_config(c);
        }
        GatewayDoor { server, state }
    }

    /// Opens the ledger now, so that one that cannot be opened is said at start.
    pub fn open(&mut self) -> crate::Res<()> {
        self.server.front().map(|_| ())
    }
}

impl Door for GatewayDoor {
    fn answer(&mut self, event: HookEvent, input: &[u8]) -> HookOutcome {
        self.server.outcome(event, input, |_| {})
    }

    fn answer_all(&mut self, events: &[(HookEvent, Vec<u8>)]) -> Vec<HookOutcome> {
        if events.len() == 1 {
            return vec![self.answer(events[0].0, &events[0].1)];
        }
        let dir = self.state.clone();
        let mut out = Vec::with_capacity(events.len());
        let (first, input) = (events[0].0, &events[0].1);
        let locked = self
            .server
            .locked(first, input, LOCK_WAIT, |server, files| {
                let mut sessions = WriteBack {
                    files,
                    dirty: HashMap::new(),
                };
                let mut lost = None;
                match server.front() {
                    Ok(front) => {
                        // The batch's records in one store transaction (`spec/mcp.md` §6.9); a
                        // group that cannot be started leaves each record its own.
                        let grouped = front.ledger_mut().begin_group().is_ok();
                        out.extend(
                            events
                                .iter()
                                .map(|(e, i)| handle(front, &mut sessions, *e, i)),
                        );
                        let committed = match grouped {
                            true => front.ledger_mut().end_group(),
                            false => Ok(()),
                        };
                        // One checkpoint and pin for the batch (`hook::decide` per event), once
                        // its records are stored.
                        let wrote = out.iter().any(HookOutcome::allows);
                        match (committed, wrote, dir.as_ref()) {
                            (Err(e), _, _) => lost = Some(format!("records not committed: {e}")),
                            (Ok(()), true, Some(st)) => {
                                if let Err(e) = crate::open::advance_pin(front.ledger_mut(), st) {
                                    let why = format!("pin: {e}");
                                    fail_all(&mut out, events, &why);
                                }
                            }
                            (Ok(()), _, _) => {}
                        }
                    }
                    Err(e) => {
                        let why = e.to_string();
                        out.extend(events.iter().map(|(ev, i)| {
                            memlineage::front::hook::failed(&mut sessions, *ev, i, &why)
                        }));
                    }
                }
                match lost {
                    // Nothing of the batch is stored: the sessions as the batch left them name
                    // reads the ledger does not hold, and the front's handle is ahead of the
                    // store. Drop both; every event failed, its session marked as having output
                    // that was not recorded (`spec/mcp.md` §6.9).
                    Some(why) => {
                        server.forget_front();
                        sessions.dirty.clear();
                        for (o, (e, i)) in out.iter_mut().zip(events) {
                            *o = memlineage::front::hook::failed(sessions.files, *e, i, &why);
                        }
                    }
                    None => {
                        if let Err(e) = sessions.flush() {
                            fail_all(&mut out, events, &e.to_string());
                        }
                    }
                }
                HookOutcome {
                    code: 0,
                    stdout: String::new(),
                    stderr: String::new(),
                }
            });
        if out.len() != events.len() {
            // The lock was not had: nothing was recorded.
            let why = locked.stderr.trim().to_string();
            out = events
                .iter()
                .map(|(e, _)| failed_in(None, *e, None, &why))
                .collect();
        }
        out
    }
}

/// Every outcome of the batch turned into a failure of its event (a session record or the
/// pin could not be written).
fn fail_all(out: &mut [HookOutcome], events: &[(HookEvent, Vec<u8>)], why: &str) {
    for (o, (e, _)) in out.iter_mut().zip(events) {
        *o = failed_in(None, *e, None, why);
    }
}

/// Session records read from the files once and written back once, at the end of a batch.
struct WriteBack<'a> {
    files: &'a mut FileSessions,
    dirty: HashMap<String, Session>,
}

impl WriteBack<'_> {
    fn flush(&mut self) -> Result<(), HookError> {
        use memlineage::front::hook::Sessions;
        for s in self.dirty.values() {
            self.files.save(s)?;
        }
        self.dirty.clear();
        Ok(())
    }
}

impl memlineage::front::hook::Sessions for WriteBack<'_> {
    fn load(&mut self, id: &str) -> Result<Session, HookError> {
        match self.dirty.get(id) {
            Some(s) => Ok(s.clone()),
            None => self.files.load(id),
        }
    }

    fn save(&mut self, session: &Session) -> Result<(), HookError> {
        self.dirty.insert(session.id.clone(), session.clone());
        Ok(())
    }
}
