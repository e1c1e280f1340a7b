//! Retrieval into a session: verified entries rendered and added to the read set, within a
//! budget of text the agent is shown, and a tool output that is nothing but the MCP server's
//! view of verified entries (`spec/mcp.md` §2.2) read as those entries (`spec/hooks.md` §3).

use super::write::{Ref, Spec};
use super::{haystack_of, Front, FrontError, Keys, Session};
use crate::ledger::retrieve::Outcome;
use crate::record::{EntryId, Kind, Role, Weight};
use crate::store::Store;
use serde_json::Value;

impl<S: Store, K: Keys> Front<S, K> {
    /// Verifies and renders `ids` ([`Ledger::retrieve`](crate::ledger::Ledger::retrieve)); each verified entry joins the read
    /// set, so later calls whose arguments come from it are tied to it.
    ///
    /// # Errors
    /// Only when no checkpoint can be produced.
    pub fn retrieve(
        &mut self,
        session: &mut Session,
        ids: &[EntryId],
    ) -> Result<Vec<Outcome>, FrontError> {
        Ok(self
            .retrieve_within(session, ids, usize::MAX)?
            .into_iter()
            .map(|(o, _)| o)
            .collect())
    }

    /// [`Front::retrieve`] for a caller that shows the agent at most `budget` bytes of text:
    /// verified entries, in order, are shown while their texts fit in what is left of the
    /// budget (an entry that does not fit is skipped, later smaller ones may still fit), and
    /// only the shown ones join the read set — the read set is what the agent saw, never more
    /// (a withheld entry's text cannot justify a value the agent never read; issue 24
    /// review). Returns each outcome with whether it was shown.
    ///
    /// # Errors
    /// Only when no checkpoint can be produced.
    pub fn retrieve_within(
        &mut self,
        session: &mut Session,
        ids: &[EntryId],
        budget: usize,
    ) -> Result<Vec<(Outcome, bool)>, FrontError> {
        let intact = self.session_sealed(session);
        let out = self.ledger.retrieve(ids)?;
        let mut left = budget;
        let mut shown = Vec::with_capacity(out.len());
        for o in out {
            let show = match &o {
                Outcome::Verified(r) => {
                    let size = r.text.as_ref().map_or(0, String::len);
                    let fits = size <= left;
                    if fits {
                        left -= size;
                        session.read(r.id);
                        if let Some(t) = &r.text {
                            self.index_mut().insert(r.id, haystack_of(&r.writer, t));
                        }
                    }
                    fits
                }
                _ => false,
            };
            shown.push((o, show));
        }
        self.reseal(session, intact);
        Ok(shown)
    }

    /// Reads a tool output that is nothing but a view of verified entries — the result of the
    /// memlineage MCP server's `ledger_retrieve` (`spec/mcp.md` §2.2), as the agent received it
    /// (`output`: the JSON object, or a text or content blocks holding it) — as those entries
    /// instead of as new External text (`spec/hooks.md` §3 item 2): each listed entry must
    /// verify and render exactly as listed (id, label, kind, writer, text, rendering), and
    /// every withheld one must carry one of the server's own reasons. Then the listed entries
    /// join the read set and `Some(ids)` is returned; for anything else (another tool's output,
    /// a server that only looks like ours, one byte of text not accounted for) `None`, and the
    /// caller records the output as External as usual. Whatever the tool's name, only verified
    /// entries' texts are read this way, so nothing it adds can be unrecorded text. The
    /// retrieval is written to the ledger as a context entry of the agent principal whose
    /// parents are the listed entries, so that a session rebuilt from the ledger
    /// ([`Front::catch_up`]) reads them again.
    ///
    /// # Errors
    /// When no checkpoint can be produced, or the context entry cannot be written.
    pub fn read_retrieved_view(
        &mut self,
        session: &mut Session,
        output: &Value,
    ) -> Result<Option<Vec<EntryId>>, FrontError> {
        let Some(listed) = retrieved_view(output) else {
            return Ok(None);
        };
        let ids: Vec<EntryId> = listed.iter().map(|l| l.0).collect();
        let got = self.ledger.retrieve(&ids)?;
        for ((id, fields), o) in listed.iter().zip(&got) {
            let Outcome::Verified(r) = o else {
                return Ok(None);
            };
            let want = [
                r.label.to_string(),
                r.kind.name().to_string(),
                r.writer.clone(),
                r.render(),
            ];
            if r.id != *id || r.text != fields.text || fields.rest != want {
                return Ok(None);
            }
        }
        let intact = self.session_sealed(session);
        // The retrieval is recorded in the ledger as a context entry of the agent naming what
        // was shown, so that the session's record is not the only place that knows it
        // (`Front::catch_up` reads it back; spec/hooks.md §6).
        let receipts: Vec<Spec> = ids
            .chunks(crate::record::MAX_PARENTS)
            .map(|chunk| {
                let parents = chunk
                    .iter()
                    .map(|id| (Ref::Entry(*id), Weight::ONE))
                    .collect();
                Spec::new(&self.agent, Role::Agent, Kind::Context, "").with_parents(parents)
            })
            .collect();
        if !receipts.is_empty() {
            self.write_batch(session, receipts)?;
        }
        for o in got {
            if let Outcome::Verified(r) = o {
                session.read(r.id);
                if let Some(t) = &r.text {
                    self.index_mut().insert(r.id, haystack_of(&r.writer, t));
                }
            }
        }
        self.reseal(session, intact);
        Ok(Some(ids))
    }
}

/// One entry of a `ledger_retrieve` result: its text and, in order, label, kind, writer and
/// rendering.
struct ViewEntry {
    text: Option<String>,
    rest: [String; 4],
}

/// Why the MCP server's `ledger_retrieve` withholds an entry (`spec/mcp.md` §2.2): deleted.
pub const WITHHELD_TOMBSTONED: &str = "deleted by a tombstone";
/// … quarantined.
pub const WITHHELD_QUARANTINED: &str = "quarantined: a flagged source reaches it";
/// … past the response's text budget of 4 MiB (`front::mcp::MAX_TEXT_BYTES`).
pub const WITHHELD_OVER_BUDGET: &str =
    "over this response's 4194304-byte text budget: retrieve it in another call";
/// The reasons a view of retrieved entries may carry ([`Front::read_retrieved_view`]).
const WITHHELD_REASONS: [&str; 3] = [
    WITHHELD_TOMBSTONED,
    WITHHELD_QUARANTINED,
    WITHHELD_OVER_BUDGET,
];

/// The entries a `ledger_retrieve` result lists, if `output` is exactly one (a JSON object
/// `{"entries": [...], "withheld": [...]}` with no other member, given as is, as a JSON text,
/// or as content blocks whose texts are all that object); `None` otherwise.
fn retrieved_view(output: &Value) -> Option<Vec<(EntryId, ViewEntry)>> {
    let object = match output {
        Value::Object(_) => output.clone(),
        Value::String(s) => serde_json::from_str(s).ok()?,
        Value::Array(blocks) => {
            let mut one: Option<Value> = None;
            for b in blocks {
                let Value::Object(m) = b else { return None };
                if m.get("type").and_then(Value::as_str) != Some("text") || m.len() != 2 {
                    return None;
                }
                let v: Value = serde_json::from_str(m.get("text")?.as_str()?).ok()?;
                if one.as_ref().is_some_and(|o| *o != v) {
                    return None;
                }
                one = Some(v);
            }
            one?
        }
        _ => return None,
    };
    let Value::Object(top) = object else {
        return None;
    };
    if top.len() != 2 {
        return None;
    }
    for w in top.get("withheld")?.as_array()? {
        let w = w.as_object()?;
        let reason = w.get("reason")?.as_str()?;
        if w.len() != 2
            || EntryId::from_hex(w.get("id")?.as_str()?).is_err()
            || !WITHHELD_REASONS.contains(&reason)
        {
            return None;
        }
    }
    let mut out = Vec::new();
    for e in top.get("entries")?.as_array()? {
        let e = e.as_object()?;
        if e.len() != 6 {
            return None;
        }
        let s = |k: &str| e.get(k)?.as_str().map(str::to_string);
        let text = match e.get("text")? {
            Value::Null => None,
            Value::String(t) => Some(t.clone()),
            _ => return None,
        };
        let id = EntryId::from_hex(&s("id")?).ok()?;
        let rest = [s("label")?, s("kind")?, s("writer")?, s("rendered")?];
        out.push((id, ViewEntry { text, rest }));
    }
    Some(out)
}
