//! Retrieval into a session: verified entries rendered and added to the read set, within a
//! budget of text the agent is shown, and a tool output that is nothing but the MCP server's
//! view of verified entries (`spec/mcp.md` §2.2) read as those entries (`spec/hooks.md` §3).

use super::unique_json::parse_unique;
use super::write::{Ref, Spec};
use super::{haystack_of, Front, FrontError, Keys, Session};
use crate::ledger::retrieve::{Outcome, Retrieved};
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
                        self.read_shown(session, r);
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

    /// [`Front::retrieve`] whose retrieval is also written to the ledger: a context entry of
    /// the agent principal for the session naming the verified entries, so that a session
    /// rebuilt from the ledger ([`Front::catch_up`]) reads them again, as
    /// [`Front::read_retrieved_view`] writes its receipt. For a front whose reads of existing
    /// entries no entry written for the session holds (the Python store's `get`, `search` and
    /// `list_namespaces`): before attack review 50 the session's record was the only place
    /// that knew them, and a store-only attacker who deleted it (or put back the copy from
    /// before the read) dropped the read, and the payment it tainted was allowed.
    ///
    /// # Errors
    /// When no checkpoint can be produced, or the receipt cannot be written (then nothing is
    /// read).
    pub fn retrieve_recorded(
        &mut self,
        session: &mut Session,
        ids: &[EntryId],
    ) -> Result<Vec<Outcome>, FrontError> {
        let intact = self.session_sealed(session);
        let out = self.ledger.retrieve(ids)?;
        let verified: Vec<EntryId> = out
            .iter()
            .filter_map(|o| match o {
                Outcome::Verified(r) => Some(r.id),
                _ => None,
            })
            .collect();
        self.write_receipts(session, &verified)?;
        for o in &out {
            if let Outcome::Verified(r) = o {
                self.read_shown(session, r);
            }
        }
        self.reseal(session, intact);
        Ok(out)
    }

    /// Adds the verified entry `r` to the session's reads and its text to this front's index
    /// of read texts: what every retrieval the agent is shown does with an entry it shows.
    fn read_shown(&mut self, session: &mut Session, r: &Retrieved) {
        session.read(r.id);
        if let Some(t) = &r.text {
            self.index_mut().insert(r.id, haystack_of(&r.writer, t));
        }
    }

    /// Writes context entries of the agent for `session` whose parents are `ids` (at most
    /// `MAX_PARENTS` each): what [`Front::catch_up`] reads back as the session's reads.
    fn write_receipts(&mut self, session: &mut Session, ids: &[EntryId]) -> Result<(), FrontError> {
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
        Ok(())
    }

    /// Reads a tool output that is nothing but a view of verified entries — the result of the
    /// memlineage MCP server's `ledger_retrieve` (`spec/mcp.md` §2.2), as the agent received it
    /// (`output`: the JSON object, or a text or content blocks holding it) — as those entries
    /// instead of as new External text (`spec/hooks.md` §3 item 2): each listed entry must
    /// verify and render exactly as listed (id, label, kind, writer, text, rendering), every
    /// withheld one must be an entry of the ledger that the server withholds for the reason
    /// given (tombstoned, quarantined, or verified and past the text budget), and no object of
    /// the JSON text may name a member twice (the parser keeps one, the model reads both).
    /// Then the listed entries join the read set and `Some(ids)` is returned; for anything
    /// else (another tool's output, a server that only looks like ours, one byte of text not
    /// accounted for) `None`, and the caller records the output as External as usual.
    /// Whatever the tool's name, only verified entries' texts and the ids of entries of the
    /// ledger are read this way, so nothing it adds can be unrecorded text (attack review 39:
    /// a withheld id was any 64 hex digits, and a member named twice was dropped unseen). The
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
        let Some(View { listed, withheld }) = retrieved_view(output) else {
            return Ok(None);
        };
        let ids: Vec<EntryId> = listed.iter().map(|l| l.0).collect();
        let got = self.ledger.retrieve(&ids)?;
        // A withheld id is an entry the server withholds, for that very reason: else its 64
        // hex digits are text the agent read that no entry holds.
        let held: Vec<EntryId> = withheld.iter().map(|w| w.0).collect();
        for ((id, reason), o) in withheld.iter().zip(self.ledger.retrieve(&held)?) {
            let as_given = match o {
                Outcome::Tombstoned(t) => t == *id && *reason == WITHHELD_TOMBSTONED,
                Outcome::Quarantined(q) => q == *id && *reason == WITHHELD_QUARANTINED,
                Outcome::Verified(r) => r.id == *id && *reason == WITHHELD_OVER_BUDGET,
                Outcome::Rejected(..) => false,
            };
            if !as_given {
                return Ok(None);
            }
        }
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
        self.write_receipts(session, &ids)?;
        for o in got {
            if let Outcome::Verified(r) = o {
                self.read_shown(session, &r);
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

/// What a `ledger_retrieve` result shows: the entries it lists, and the entries it withholds
/// with the reason given for each.
struct View {
    listed: Vec<(EntryId, ViewEntry)>,
    withheld: Vec<(EntryId, &'static str)>,
}

/// The entries a `ledger_retrieve` result lists and withholds, if `output` is exactly one (a
/// JSON object `{"entries": [...], "withheld": [...]}` with no other member, given as is, as a
/// JSON text, or as content blocks whose texts are all that object; a text whose objects name
/// a member twice is none); `None` otherwise.
fn retrieved_view(output: &Value) -> Option<View> {
    let object = match output {
        Value::Object(_) => output.clone(),
        Value::String(s) => parse_unique(s)?,
        Value::Array(blocks) => {
            let mut one: Option<Value> = None;
            for b in blocks {
                let Value::Object(m) = b else { return None };
                if m.get("type").and_then(Value::as_str) != Some("text") || m.len() != 2 {
                    return None;
                }
                let v = parse_unique(m.get("text")?.as_str()?)?;
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
    let mut withheld = Vec::new();
    for w in top.get("withheld")?.as_array()? {
        let w = w.as_object()?;
        let given = w.get("reason")?.as_str()?;
        let reason = WITHHELD_REASONS.into_iter().find(|r| *r == given)?;
        if w.len() != 2 {
            return None;
        }
        withheld.push((EntryId::from_hex(w.get("id")?.as_str()?).ok()?, reason));
    }
    let mut listed = Vec::new();
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
        listed.push((id, ViewEntry { text, rest }));
    }
    Some(View { listed, withheld })
}
