//! The ledger behind a Python handle: a [`Front`] (the same recording, matching and gate as the
//! hooks, `spec/hooks.md`), the sessions' read sets, and the index of store items
//! ([`ItemIndex`]). Generic over the store and key source; Python holds it as `dyn Engine`.
//!
//! Every operation runs under the key-file lock of a file ledger (`LEDGER.key.lock`, the lock
//! the hooks and the CLI take), after catching up with what other processes appended, and
//! saves the session it changed (`LEDGER.sessions/`, the hooks' session files).

use crate::errors::BindError;
use crate::items::{self, ItemIndex, Path};
use crate::namespaces::{self, Listing};
use crate::search::{self, Ranked};
use crate::sessions::{Mark, SessionCache};
use crate::vectors::Vector;
use crate::verdicts;
use memlineage::audit::{audit, reach_quarantine};
use memlineage::forensics::receipt::{receipt, Cause};
use memlineage::front::pin::StateDir;
use memlineage::front::{session_context, Front, Keys, Session};
use memlineage::lineage::quarantine::Reach;
use memlineage::log::LogVerifier;
use memlineage::record::{EntryId, Kind, Parent, Weight};
use memlineage::retrieve::Outcome;
use memlineage::store::Store;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// The principal that signs flags (role system), as the MCP server's (`spec/mcp.md` §2.5).
pub const FLAGGER: &str = "advisory";
/// Most item versions a handle remembers as verified (cleared when full).
const MAX_WARM: usize = 1 << 20;
/// How long a call waits for the ledger's key-file lock before it fails.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Takes the key file's lock at `path` (waiting up to [`LOCK_WAIT`]), held until the file is
/// dropped.
///
/// # Errors
/// `ValueError` (misuse) naming the lock when it cannot be taken.
pub fn lock(path: &std::path::Path) -> Result<std::fs::File, BindError> {
    memlineage::store::durable::lock_file(path, LOCK_WAIT)
        .map_err(|e| BindError::misuse(format!("lock {}: {e}", path.display())))
}

/// What a Python `Ledger` handle can do. Results are JSON values the Python layer decodes.
pub trait Engine: Send {
    /// Records a user prompt (Trusted) in `session`; returns the entry.
    fn record_prompt(&mut self, session: &str, text: &str) -> Result<Value, BindError>;
    /// Records a tool call and its output (External, principal `tool:<tool>`).
    fn record_tool_result(
        &mut self,
        session: &str,
        tool: &str,
        args: &Value,
        output: &str,
    ) -> Result<Value, BindError>;
    /// Counts one tool output of `session` that could not be recorded; returns the count.
    fn mark_unrecorded(&mut self, session: &str) -> Result<u64, BindError>;
    /// Records a memory of the agent with `parents`.
    fn remember(
        &mut self,
        session: &str,
        kind: Kind,
        text: &str,
        parents: Vec<Parent>,
    ) -> Result<Value, BindError>;
    /// Verifies and renders `ids`; verified ones join the session's reads.
    fn retrieve(&mut self, session: &str, ids: &[EntryId]) -> Result<Value, BindError>;
    /// Decides a proposed tool call in `session`.
    fn check(
        &mut self,
        session: &str,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<Value, BindError>;
    /// Whether the policy classifies `tool` (`spec/hooks.md` §15.3).
    fn classifies(&mut self, tool: &str) -> bool;
    /// The session's read set.
    fn reads(&mut self, session: &str) -> Result<Value, BindError>;
    /// An entry's label, writer, kind, parents, untrusted path and receipt.
    fn explain(&mut self, id: &EntryId) -> Result<Value, BindError>;
    /// Flags `id` as a bad source.
    fn flag(&mut self, id: &EntryId, reach: Reach, reason: &str) -> Result<Value, BindError>;
    /// Deletes `id` with a tombstone signed by the agent.
    fn tombstone(&mut self, id: &EntryId, reason: &str) -> Result<Value, BindError>;
    /// Signs a checkpoint of the current tree; returns the note.
    fn checkpoint(&mut self) -> Result<String, BindError>;
    /// The full offline audit (`memlineage verify`).
    fn verify(&mut self) -> Result<Value, BindError>;
    /// Writes an item version with the vectors of its embedded fields (`None` for a store
    /// without an index); returns the item.
    fn item_put(
        &mut self,
        session: &str,
        path: Path,
        value: Value,
        weights: &HashMap<EntryId, Weight>,
        vectors: Option<Vec<Vector>>,
    ) -> Result<Value, BindError>;
    /// Deletes an item (tombstone of its current version); whether there was one.
    fn item_delete(&mut self, session: &str, path: &Path) -> Result<bool, BindError>;
    /// Searches the live, unquarantined items ([`search::rank`]); verifies the page and
    /// records it as read by `session`. Returns `{"items": [...]}` (each with its `score`),
    /// or `{"unembedded": [{"entry_id", "value"}, ...]}` when matching items need vectors
    /// first ([`Engine::item_embed`]).
    fn item_search(&mut self, session: &str, req: &search::Request<'_>)
        -> Result<Value, BindError>;
    /// Attaches vectors to the current versions held by these entries (others are ignored).
    fn item_embed(&mut self, vectors: Vec<(EntryId, Vec<Vector>)>) -> Result<(), BindError>;
    /// The current item at `path`, verified and recorded, if any.
    fn item_get(&mut self, session: &str, path: &Path) -> Result<Value, BindError>;
    /// The namespaces holding a live, non-quarantined item that `listing` shows
    /// ([`namespaces::page`]); the items behind each are verified and recorded as read by
    /// `session`, and a namespace none of whose items verifies is left out.
    fn item_namespaces(&mut self, session: &str, listing: &Listing) -> Result<Value, BindError>;
    /// Number of entries in the log.
    fn len(&mut self) -> Result<u64, BindError>;
}

/// A front, its sessions and its item index.
pub struct Core<S: Store, K: Keys> {
    front: Front<S, K>,
    sessions: SessionCache,
    /// The key-file lock of a file ledger.
    lock: Option<PathBuf>,
    items: ItemIndex,
    /// Item versions this handle verified (signature, inclusion) when it returned them.
    warm: HashSet<EntryId>,
    /// Reads the audit from the store (the SQLite file's own audit iterator, or the trait).
    audit_source: AuditSource,
    /// The state directory whose pin this handle learns before each call and advances after
    /// each call that saw the ledger grow (`spec/python.md` §3.2); `None`: nothing pinned.
    state: Option<StateDir>,
    /// The ledger's size the pin was last advanced to by this handle.
    pinned: u64,
}

/// Where [`Engine::verify`] reads the entries it audits.
pub enum AuditSource {
    /// The SQLite file at this path, opened afresh (what `memlineage verify` reads).
    Sqlite(PathBuf),
    /// The front's own store.
    Store,
}

impl<S: Store + Send, K: Keys + Send> Core<S, K> {
    /// A core over `front`.
    /// `state`: the state directory `front`'s ledger was opened against
    /// ([`crate::state::open_pinned`]), if any.
    pub fn new(
        front: Front<S, K>,
        sessions: SessionCache,
        lock: Option<PathBuf>,
        audit_source: AuditSource,
        state: Option<StateDir>,
    ) -> Self {
        let pinned = front.ledger().len();
        Core {
            front,
            sessions,
            lock,
            items: ItemIndex::default(),
            warm: HashSet::new(),
            audit_source,
            state,
            pinned,
        }
    }

    /// Takes the lock, learns the pin as it is now (other fronts advanced it since this
    /// handle opened) and catches up with other writers: a store cut below the pin is refused
    /// here as on open (attack review 57).
    fn enter(&mut self) -> Result<Option<std::fs::File>, BindError> {
        let held = match &self.lock {
            Some(p) => Some(lock(p)?),
            None => None,
        };
        if let Some(st) = &self.state {
            st.teach(self.front.ledger_mut())?;
        }
        self.front.ledger_mut().refresh()?;
        Ok(held)
    }

    /// Runs `f` under the lock ([`Core::enter`]), then, when the ledger grew, signs its
    /// checkpoint and advances the pin to it before the lock is let go (`spec/hooks.md` §6.2:
    /// what a front appended cannot be rolled back behind what it answered). What was
    /// appended before a failure is pinned too; a pin that cannot be advanced fails the call.
    fn locked<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, BindError>,
    ) -> Result<T, BindError> {
        let _held = self.enter()?;
        let out = f(self);
        let pinned = self.advance_pin();
        let out = out?;
        pinned?;
        Ok(out)
    }

    /// [`Core::locked`]'s second half.
    fn advance_pin(&mut self) -> Result<(), BindError> {
        let Some(st) = &self.state else {
            return Ok(());
        };
        let len = self.front.ledger().len();
        if len == self.pinned {
            return Ok(());
        }
        let c = self.front.ledger_mut().checkpoint()?;
        st.advance(&self.front.ledger().vkey(), &c)?;
        self.pinned = len;
        Ok(())
    }

    /// Runs `f` on the front and session `id` (under the lock); saves the session afterwards
    /// if `f` changed it.
    fn with_session<T>(
        &mut self,
        id: &str,
        f: impl FnOnce(&mut Self, &mut Session) -> Result<T, BindError>,
    ) -> Result<T, BindError> {
        if id.is_empty() {
            return Err(BindError::misuse("a session id is not empty"));
        }
        self.locked(|c| {
            let mut session = c.sessions.take(id)?;
            let caught = c.front.catch_up(&mut session);
            let start = c.front.ledger().len();
            let before = Mark::of(&session);
            let out = match caught {
                Ok(()) => f(c, &mut session),
                Err(e) => Err(e.into()),
            };
            // What was recorded before a failure stays recorded.
            let save = c.must_save(&session, &before, start);
            c.sessions.give_back(session, save)?;
            out
        })
    }

    /// Whether a call that turned `before` into `session` must write the session's file: yes,
    /// unless all it added are reads of entries it appended for the session whose kind the
    /// session record is caught up with from the ledger (prompts, tool results, memories:
    /// `Front::catch_up`, `spec/hooks.md` §6), so that the next loader of the file recovers
    /// them from the signed entries (a put then costs one commit, not one commit and a synced
    /// file). What `catch_up` added itself came from the ledger the same way. A fold (the
    /// session's context entry) left unsaved is made again by the next writer that loads the
    /// file: more context entries, no lost read.
    fn must_save(&mut self, session: &Session, before: &Mark, start: u64) -> bool {
        let now = Mark::of(session);
        if now == *before {
            return false;
        }
        if !now.only_reads_grew_from(before) {
            return true;
        }
        let want = session_context(&session.id);
        let l = self.front.ledger();
        session.reads()[before.reads()..].iter().any(|id| {
            let ours = l.index_of(id).is_some_and(|i| i >= start);
            let recovered = l.get(id).is_ok_and(|e| {
                let e = e.entry();
                e.context_hash == want
                    && matches!(
                        e.kind,
                        Kind::Prompt | Kind::ToolResult | Kind::Summary | Kind::Fact
                    )
            });
            !(ours && recovered)
        })
    }

    /// A hop of a lineage path: id, kind, writer, label.
    fn hop(&mut self, id: &EntryId) -> Value {
        let l = self.front.ledger();
        let (kind, writer) = match l.get(id) {
            Ok(e) => (
                e.entry().kind.name().to_string(),
                l.principal(&e.writer())
                    .map(|(r, n)| format!("{n} ({})", r.name()))
                    .unwrap_or_else(|| e.writer().short()),
            ),
            Err(_) => ("unverifiable".to_string(), "unknown".to_string()),
        };
        let label = l
            .label(id)
            .map_or_else(|| "unknown".to_string(), label_name);
        json!({"id": id.to_string(), "kind": kind, "writer": writer, "label": label})
    }

    /// A `get` of a version this handle already verified and `session` already read (a
    /// thread reading its memory again): nothing to verify or record, so the item is rendered
    /// from the index (`spec/python.md` §2.3). `None` when that is not the case.
    fn warm_get(&mut self, session: &Session, path: &Path, entry: &EntryId) -> Option<Value> {
        if !self.warm.contains(entry) || !session.has_read(entry) {
            return None;
        }
        let l = self.front.ledger();
        if l.is_quarantined(entry) || l.is_tombstoned(entry) {
            return None;
        }
        let label = l.label(entry)?;
        let slot = self.items.current(path)?;
        Some(items::render(
            path,
            slot,
            slot.value.clone(),
            &label_name(label),
        ))
    }

    fn items_read(
        &mut self,
        session: &mut Session,
        entries: &[EntryId],
    ) -> Result<Value, BindError> {
        self.items.scan(self.front.ledger())?;
        // Written to the ledger too: the session's file is not the only place that knows the
        // read (attack review 50).
        let out = self.front.retrieve_recorded(session, entries)?;
        let mut items = Vec::new();
        for o in out {
            let Outcome::Verified(r) = o else { continue };
            let Some((ns, key, value)) = r.text.as_deref().and_then(items::parse) else {
                continue;
            };
            let path = (ns, key);
            // Only the current version of its path is an item.
            let Some(slot) = self.items.current(&path).filter(|s| s.entry == r.id) else {
                continue;
            };
            items.push(items::render(&path, slot, value, &label_name(r.label)));
            if self.warm.len() >= MAX_WARM {
                self.warm.clear();
            }
            self.warm.insert(r.id);
        }
        Ok(Value::Array(items))
    }
}

/// The live items of `items` in `InMemoryStore`'s order: current versions neither quarantined
/// nor tombstoned (what `search` and `list_namespaces` show).
fn live<'a, S: Store>(
    items: &'a ItemIndex,
    l: &'a memlineage::Ledger<S>,
) -> impl Iterator<Item = (&'a Path, &'a items::Slot)> {
    items
        .in_order()
        .filter(|(_, x)| !l.is_quarantined(&x.entry) && !l.is_tombstoned(&x.entry))
}

/// A label as the policy files spell it: `trusted`, `derived_trusted`, `derived_untrusted`,
/// `external`.
pub fn label_name(l: memlineage::lineage::Label) -> String {
    l.name().to_ascii_lowercase()
}

fn appended(a: &memlineage::Appended) -> Value {
    json!({"id": a.id.to_string(), "index": a.index, "label": label_name(a.label)})
}

impl<S: Store + Send, K: Keys + Send> Engine for Core<S, K> {
    fn record_prompt(&mut self, session: &str, text: &str) -> Result<Value, BindError> {
        self.with_session(session, |c, s| {
            Ok(appended(&c.front.record_prompt(s, text)?))
        })
    }

    fn record_tool_result(
        &mut self,
        session: &str,
        tool: &str,
        args: &Value,
        output: &str,
    ) -> Result<Value, BindError> {
        self.with_session(session, |c, s| {
            let (call, result) = c.front.record_tool_result(s, tool, args, output)?;
            Ok(json!({"call": appended(&call), "result": appended(&result)}))
        })
    }

    fn mark_unrecorded(&mut self, session: &str) -> Result<u64, BindError> {
        self.with_session(session, |c, s| {
            // In the ledger too, when it takes it: the count lives only in the session's file
            // (attack review 50). A ledger that cannot take it leaves the count alone.
            let _ = c
                .front
                .record_unrecorded(s, "a tool output of this session");
            s.unrecorded = s.unrecorded.saturating_add(1);
            Ok(s.unrecorded)
        })
    }

    fn remember(
        &mut self,
        session: &str,
        kind: Kind,
        text: &str,
        parents: Vec<Parent>,
    ) -> Result<Value, BindError> {
        self.with_session(session, |c, s| {
            Ok(appended(&c.front.remember(s, kind, text, parents)?))
        })
    }

    fn retrieve(&mut self, session: &str, ids: &[EntryId]) -> Result<Value, BindError> {
        self.with_session(session, |c, s| {
            // Receipted in the ledger, as the store's reads (attack review 50).
            let out = c.front.retrieve_recorded(s, ids)?;
            Ok(Value::Array(
                out.into_iter()
                    .map(|o| match o {
                        Outcome::Verified(r) => json!({
                            "id": r.id.to_string(), "status": "verified",
                            "label": label_name(r.label), "kind": r.kind.name(),
                            "writer": r.writer, "text": r.text, "rendered": r.render(),
                        }),
                        Outcome::Tombstoned(id) => {
                            json!({"id": id.to_string(), "status": "tombstoned"})
                        }
                        Outcome::Quarantined(id) => {
                            json!({"id": id.to_string(), "status": "quarantined"})
                        }
                        Outcome::Rejected(id, e) => json!({
                            "id": id.to_string(), "status": "rejected", "error": e.to_string(),
                        }),
                    })
                    .collect(),
            ))
        })
    }

    fn check(
        &mut self,
        session: &str,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<Value, BindError> {
        self.with_session(session, |c, s| {
            let checked = c.front.check(s, tool, args, &HashMap::new())?;
            let classified = c.front.classifies(tool);
            Ok(verdicts::render(&checked, classified, |h| c.hop(h)))
        })
    }

    fn classifies(&mut self, tool: &str) -> bool {
        self.front.classifies(tool)
    }

    fn reads(&mut self, session: &str) -> Result<Value, BindError> {
        self.with_session(session, |_, s| {
            Ok(json!({
                "reads": s.reads().iter().map(EntryId::to_string).collect::<Vec<_>>(),
                "unrecorded": s.unrecorded,
            }))
        })
    }

    fn explain(&mut self, id: &EntryId) -> Result<Value, BindError> {
        self.locked(|c| {
            let l = c.front.ledger();
            let e = l.get(id)?;
            let parents: Vec<Value> = e
                .entry()
                .parents
                .iter()
                .map(|p| json!({"id": p.id.to_string(), "weight": f64::from(p.weight.millionths()) / 1e6}))
                .collect();
            let untrusted = l.untrusted_path(id)?;
            let quarantined = l.is_quarantined(id);
            let tombstoned = l.is_tombstoned(id);
            let receipt = match receipt(l, id) {
                Ok(r) => {
                    let cause = match &r.cause {
                        Cause::Flagged { flag, reason } => {
                            json!({"cause": "flagged", "flag": flag.to_string(), "reason": reason})
                        }
                        Cause::External => json!({"cause": "external"}),
                        // A cause this build does not name (the enum is non-exhaustive).
                        _ => json!({"cause": "other"}),
                    };
                    json!({"sentence": r.sentence(), "cause": cause})
                }
                Err(_) => Value::Null,
            };
            let mut out = c.hop(id);
            out["parents"] = Value::Array(parents);
            out["untrusted_path"] = Value::Array(untrusted.iter().map(|h| c.hop(h)).collect());
            out["quarantined"] = json!(quarantined);
            out["tombstoned"] = json!(tombstoned);
            out["receipt"] = receipt;
            Ok(out)
        })
    }

    fn flag(&mut self, id: &EntryId, reach: Reach, reason: &str) -> Result<Value, BindError> {
        if reason.trim().is_empty() {
            return Err(BindError::misuse("a flag needs a reason (the advisory)"));
        }
        self.locked(|c| {
            // No session names who asks: the reason is tied to no reads (`spec/lineage.md` §4.2).
            let before = c.front.ledger().quarantine().len() as u64;
            let f = c
                .front
                .flag(&mut Session::new(""), FLAGGER, *id, reach, reason)?;
            let l = c.front.ledger_mut();
            l.checkpoint()?;
            let now = l.quarantine().len() as u64;
            Ok(json!({
                "flag": f.id.to_string(), "source": id.to_string(), "reach": reach.name(),
                "quarantined": now, "newly_quarantined": now.saturating_sub(before),
            }))
        })
    }

    fn tombstone(&mut self, id: &EntryId, reason: &str) -> Result<Value, BindError> {
        self.locked(|c| {
            Ok(appended(&c.front.tombstone(
                &mut Session::new(""),
                *id,
                reason,
            )?))
        })
    }

    fn checkpoint(&mut self) -> Result<String, BindError> {
        self.locked(|c| {
            let signed = c.front.ledger_mut().checkpoint()?;
            Ok(String::from_utf8_lossy(signed.note()).into_owned())
        })
    }

    fn verify(&mut self) -> Result<Value, BindError> {
        let note = self.checkpoint()?;
        let l = self.front.ledger();
        let verifier = LogVerifier::from_vkey(&l.vkey())?;
        let policy = l.label_policy();
        let size = l.len();
        let mut report = match &self.audit_source {
            AuditSource::Sqlite(path) => {
                let store = memlineage::store::SqliteStore::open(path)?;
                audit(
                    store.audit_items(),
                    &verifier,
                    note.as_bytes(),
                    policy,
                    verifier.key_id(),
                )?
            }
            AuditSource::Store => {
                let store = l.store();
                let items = (0..size).map(|i| {
                    store
                        .entry_bytes(i)
                        .map_err(|e| e.to_string())?
                        .map(|b| (b, None::<memlineage::lineage::Label>))
                        .ok_or_else(|| format!("entry {i} missing"))
                });
                audit(items, &verifier, note.as_bytes(), policy, verifier.key_id())?
            }
        };
        let store = l.store();
        let bytes = (0..size).map(|i| {
            store
                .entry_bytes(i)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("entry {i} missing"))
        });
        reach_quarantine(&mut report, bytes, policy)?;
        let failures: Vec<Value> = report
            .failures
            .iter()
            .map(|f| json!({"index": f.index, "id": f.id.to_string(), "problem": format!("{}", f.problem)}))
            .collect();
        Ok(json!({
            "ok": report.is_clean(),
            "entries": report.entries,
            "verified": report.verified,
            "checkpoint_size": report.checkpoint.size(),
            "root_matches": report.root_matches,
            "labels": {
                "trusted": report.label_counts[0], "derived_trusted": report.label_counts[1],
                "derived_untrusted": report.label_counts[2], "external": report.label_counts[3],
            },
            "quarantined": report.quarantine.len(),
            "failures": failures,
        }))
    }

    fn item_put(
        &mut self,
        session: &str,
        path: Path,
        value: Value,
        weights: &HashMap<EntryId, Weight>,
        vectors: Option<Vec<Vector>>,
    ) -> Result<Value, BindError> {
        if !value.is_object() {
            return Err(BindError::misuse("an item's value is a JSON object"));
        }
        self.with_session(session, |c, s| {
            // The front adds everything the session read (`Front::remember`); the caller's
            // weights name parents, which can only add lineage (`spec/python.md` §2.1).
            let parents: Vec<Parent> = weights
                .iter()
                .map(|(id, w)| Parent {
                    id: *id,
                    weight: *w,
                })
                .collect();
            let text = items::content(&path.0, &path.1, &value);
            // Only what reads back as this item is signed: a value the parser refuses (JSON
            // nested past serde_json's depth limit) would be an entry no read can show.
            if items::parse(&text).is_none() {
                return Err(BindError::misuse(
                    "this value would not read back as an item (JSON nested too deeply?); \
                     nothing was written",
                ));
            }
            let a = c.front.remember(s, Kind::Summary, &text, parents)?;
            c.items.scan(c.front.ledger())?;
            let slot = c
                .items
                .current_mut(&path)
                .filter(|x| x.entry == a.id)
                .ok_or_else(|| BindError::misuse("the new version was not indexed"))?;
            slot.vectors = vectors;
            Ok(items::render(&path, slot, value, &label_name(a.label)))
        })
    }

    fn item_delete(&mut self, session: &str, path: &Path) -> Result<bool, BindError> {
        self.with_session(session, |c, s| {
            c.items.scan(c.front.ledger())?;
            let Some(entry) = c.items.current(path).map(|s| s.entry) else {
                return Ok(false);
            };
            c.front.tombstone(s, entry, "deleted through the store")?;
            c.items.scan(c.front.ledger())?;
            Ok(true)
        })
    }

    fn item_search(
        &mut self,
        session: &str,
        req: &search::Request<'_>,
    ) -> Result<Value, BindError> {
        self.with_session(session, |c, s| {
            c.items.scan(c.front.ledger())?;
            let page = match search::rank(live(&c.items, c.front.ledger()), req)? {
                Ranked::Unembedded(ids) => {
                    let values: Vec<Value> = ids
                        .iter()
                        .filter_map(|id| {
                            let slot = c.items.path_of(id).and_then(|p| c.items.current(p))?;
                            Some(json!({"entry_id": id.to_string(), "value": slot.value}))
                        })
                        .collect();
                    return Ok(json!({ "unembedded": values }));
                }
                Ranked::Page(page) => page,
            };
            let ids: Vec<EntryId> = page.iter().map(|(e, _)| *e).collect();
            let scores: HashMap<String, Option<f64>> =
                page.into_iter().map(|(e, s)| (e.to_string(), s)).collect();
            let mut found = c.items_read(s, &ids)?;
            for item in found.as_array_mut().into_iter().flatten() {
                let score = item["entry_id"]
                    .as_str()
                    .and_then(|id| scores.get(id).copied().flatten());
                item["score"] = json!(score);
            }
            Ok(json!({ "items": found }))
        })
    }

    fn item_embed(&mut self, vectors: Vec<(EntryId, Vec<Vector>)>) -> Result<(), BindError> {
        self.locked(|c| {
            c.items.scan(c.front.ledger())?;
            for (id, vs) in vectors {
                let Some(path) = c.items.path_of(&id).cloned() else {
                    continue;
                };
                if let Some(slot) = c.items.current_mut(&path) {
                    slot.vectors = Some(vs);
                }
            }
            Ok(())
        })
    }

    fn item_get(&mut self, session: &str, path: &Path) -> Result<Value, BindError> {
        self.with_session(session, |c, s| {
            c.items.scan(c.front.ledger())?;
            let Some(entry) = c.items.current(path).map(|x| x.entry) else {
                return Ok(Value::Null);
            };
            if let Some(warm) = c.warm_get(s, path, &entry) {
                return Ok(warm);
            }
            let mut got = c.items_read(s, &[entry])?;
            Ok(got
                .as_array_mut()
                .and_then(|a| a.pop())
                .unwrap_or(Value::Null))
        })
    }

    fn item_namespaces(&mut self, session: &str, listing: &Listing) -> Result<Value, BindError> {
        self.with_session(session, |c, s| {
            c.items.scan(c.front.ledger())?;
            let items = live(&c.items, c.front.ledger()).map(|(p, x)| (p, x.entry));
            let page = namespaces::page(items, listing);
            // A namespace is text its items' writers chose: shown only with those items read
            // (attack review 50),
            // each verified as a `get` verifies it (a version this handle verified that the
            // session already read is not verified again, as a warm `get`).
            let ids: Vec<EntryId> = page.iter().flat_map(|(_, es)| es.iter().copied()).collect();
            let (known, fresh): (Vec<EntryId>, Vec<EntryId>) = ids
                .into_iter()
                .partition(|e| c.warm.contains(e) && s.has_read(e));
            let mut read: HashSet<EntryId> = known.into_iter().collect();
            for item in c.items_read(s, &fresh)?.as_array().into_iter().flatten() {
                if let Some(id) = item["entry_id"]
                    .as_str()
                    .and_then(|i| EntryId::from_hex(i).ok())
                {
                    read.insert(id);
                }
            }
            let shown: Vec<Vec<String>> = page
                .into_iter()
                .filter(|(_, es)| es.iter().all(|e| read.contains(e)))
                .map(|(ns, _)| ns)
                .collect();
            Ok(json!(shown))
        })
    }

    fn len(&mut self) -> Result<u64, BindError> {
        let _held = self.enter()?;
        Ok(self.front.ledger().len())
    }
}
