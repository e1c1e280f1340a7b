//! The sources of a value (`spec/hooks.md` §4): the reads of a session whose verified text the
//! value matches, the statements of the user (or of an authority for the parameter) that
//! authorise it (§4.4), and the texts of the reads, fetched and verified once per front.

use super::{matching, session_context, Front, FrontError, Keys, Session, UNSEEN_HISTORY};
use crate::gate::matching::Haystack;
use crate::gate::LineageView;
use crate::ledger::retrieve::Outcome;
use crate::lineage::Label;
use crate::record::{EntryId, Hash32, KeyId, Kind, Role};
use crate::store::Store;
use serde_json::Value;
use std::collections::HashMap;

impl<S: Store, K: Keys> Front<S, K> {
    /// The read-set entries whose text `value` matches, in read order (`spec/hooks.md` §4).
    ///
    /// Fail closed (`spec/gate.md` §7): a quarantined or tombstoned read is still searched
    /// (those remedies stop an entry from *justifying*, never from *tainting*); a read whose
    /// text cannot be read or verified (redacted, corrupted, failing its signature, missing
    /// from the ledger) cannot be proven absent from any value, so it is a source of every
    /// value that any text could match. The gate then refuses such a source: it is unknown,
    /// tombstoned, quarantined or labelled worse than allowed.
    ///
    /// The worst source decides: a value held by an untrusted read stays sourced there,
    /// whatever better-labelled entry also holds it (the agent's own memories included),
    /// unless the user stated it (`spec/hooks.md` §4.4). This form knows no tool: only
    /// statements of role `user` count; [`Front::check`] also counts the principals the
    /// policy names authoritative for the parameter.
    ///
    /// # Errors
    /// Ledger failures while fetching texts not cached yet.
    pub fn sources(
        &mut self,
        session: &Session,
        value: &Value,
    ) -> Result<Vec<EntryId>, FrontError> {
        self.sources_for(session, value, None)
    }

    /// [`Front::sources`] for parameter `param` of `tool` (`(tool, param)`), so that a
    /// principal the policy names authoritative for it states values as the user does.
    pub(super) fn sources_for(
        &mut self,
        session: &Session,
        value: &Value,
        param: Option<(&str, &str)>,
    ) -> Result<Vec<EntryId>, FrontError> {
        Ok(self.sources_split(session, value, param)?.kept)
    }

    /// The sources of `value` ([`Front::sources_for`]) and, beside them, every read its value
    /// matches: the two differ when a statement (`spec/hooks.md` §4.4) removed the verified
    /// reads that repeat a stated value, which the rule of stated values that untrusted input
    /// also carries looks at ([`Front::check`]).
    pub(super) fn sources_split(
        &mut self,
        session: &Session,
        value: &Value,
        param: Option<(&str, &str)>,
    ) -> Result<Sources, FrontError> {
        self.load_haystacks(session)?;
        if let Value::Array(items) = value {
            // Per element, so that a statement authorises the elements it names.
            let mut out = Sources::default();
            for v in items {
                let s = self.sources_split(session, v, param)?;
                for (all, some) in [(&mut out.kept, s.kept), (&mut out.matched, s.matched)] {
                    for id in some {
                        if !all.contains(&id) {
                            all.push(id);
                        }
                    }
                }
                out.stated.extend(s.stated);
            }
            // In read order: by each id's position (an id not read, a caller's, goes last).
            let in_order = |ids: &[EntryId]| -> Vec<EntryId> {
                let mut at: Vec<(usize, EntryId)> = ids
                    .iter()
                    .filter_map(|id| session.position(id).map(|p| (p, *id)))
                    .collect();
                at.sort_unstable_by_key(|(p, _)| *p);
                at.into_iter().map(|(_, id)| id).collect()
            };
            out.kept = in_order(&out.kept);
            out.matched = in_order(&out.matched);
            return Ok(out);
        }
        // The value's side of the rules once, then the text of each read that could hold it
        // (`spec/hooks.md` §4, §4.7).
        let needle = matching::Needle::new(value);
        let matched: Vec<EntryId> = session.matching(&self.haystacks, &needle);
        // A value the user (or an authority for the parameter) stated is authorised by that
        // statement, even when a tool output repeats it (`spec/hooks.md` §4.4). Unverifiable
        // reads stay sources.
        let stated: Vec<EntryId> = matched
            .iter()
            .filter(|id| self.is_statement(session, id, param))
            .copied()
            .collect();
        if stated.is_empty() || !matching::is_specific(value) {
            return Ok(Sources {
                kept: matched.clone(),
                matched,
                stated: Vec::new(),
            });
        }
        let kept = matched
            .iter()
            .filter(|id| stated.contains(id) || !self.is_verified_text(id))
            .copied()
            .collect();
        Ok(Sources {
            kept,
            matched,
            stated,
        })
    }

    /// Whether `id`'s text was verified by this process (not [`Haystack::unverifiable`]).
    pub(super) fn is_verified_text(&self, id: &EntryId) -> bool {
        self.haystacks.get(id).is_some_and(|h| !h.is_unverifiable())
    }

    /// Whether `id` is a statement that authorises the values it holds in `session`
    /// (`spec/hooks.md` §4.4): a verified text, neither tombstoned nor quarantined, that is
    /// either a prompt of **this** session — written by a principal of role `user`, labelled
    /// Trusted, of kind `prompt`, with the session's context hash — or written by a principal
    /// the policy names authoritative for `param` of `tool`. A prompt of another session
    /// (retrieved into this one) is a read like any other, not a statement; the session with
    /// the empty id (the MCP server's whole-ledger read set, which is no session) has none.
    /// The agent's own writes never are, whatever their label: a memory is not a statement of
    /// the user.
    pub(super) fn is_statement(
        &self,
        session: &Session,
        id: &EntryId,
        param: Option<(&str, &str)>,
    ) -> bool {
        if !self.is_verified_text(id)
            || self.ledger.tombstoned(id)
            || LineageView::quarantined(&self.ledger, id)
        {
            return false;
        }
        let Some(facts) = self.entry_facts(id) else {
            return false;
        };
        let Some((role, name)) = self
            .ledger
            .principal(&facts.writer)
            .map(|(r, n)| (r, n.to_string()))
        else {
            return false;
        };
        let authority = param.is_some_and(|(tool, p)| self.policy.is_authoritative(tool, p, &name));
        let own_prompt = role == Role::User
            && facts.kind == Kind::Prompt
            && !session.id.is_empty()
            && facts.context_hash == session_context(&session.id)
            && self.ledger.label_of(id) == Some(Label::Trusted);
        authority || own_prompt
    }

    /// The writer key, kind and context hash of the verified entry `id`: read and verified
    /// once, then kept while the store's content epoch stays (they are fixed by the signed
    /// bytes; an entry removed from the store since is verified again, and refused, after the
    /// epoch moves). `None` when it does not verify.
    fn entry_facts(&self, id: &EntryId) -> Option<Facts> {
        // Under this handle too: facts verified against a ledger since replaced are not used.
        let epoch = self
            .ledger
            .store()
            .content_epoch()
            .ok()
            .flatten()
            .map(|e| (self.ledger.instance(), e));
        if let Some(f) = self.facts.get(epoch, id) {
            return Some(f);
        }
        let e = self.ledger.get(id).ok()?;
        let f = Facts {
            writer: e.writer(),
            kind: e.entry().kind,
            context_hash: e.entry().context_hash,
        };
        self.facts.keep(epoch, *id, f);
        Some(f)
    }

    /// Whether the session has read a text that cannot be read or verified now (the
    /// fail-closed case of [`Front::sources`]).
    ///
    /// # Errors
    /// Ledger failures while fetching texts not cached yet.
    pub fn has_unverifiable_reads(&mut self, session: &Session) -> Result<bool, FrontError> {
        self.load_haystacks(session)?;
        Ok(session
            .reads()
            .iter()
            .any(|id| self.haystacks.get(id).is_none_or(Haystack::is_unverifiable)))
    }

    /// Fetches and verifies the texts of the session's reads not cached yet: live entries in
    /// one verified retrieval, quarantined and tombstoned ones one by one (signature, id and
    /// content hash checked); anything that fails is cached as [`Haystack::unverifiable`].
    /// Looks only at the reads after those the session's memo records as held by this
    /// front's index ([`Session::all_indexed`]; the index never drops a haystack), and records
    /// them all once each holds one.
    pub(super) fn load_haystacks(&mut self, session: &Session) -> Result<(), FrontError> {
        self.verified_here();
        let instance = self.haystacks.instance();
        let from = session.indexed_upto(instance).min(session.reads().len());
        let missing: Vec<EntryId> = session.reads()[from..]
            .iter()
            .filter(|id| !self.haystacks.contains_key(id))
            .copied()
            .collect();
        let mut all = true;
        if !missing.is_empty() {
            for o in self.ledger.retrieve(&missing)? {
                let (id, text) = match o {
                    Outcome::Verified(r) => (r.id, r.text),
                    Outcome::Tombstoned(id) | Outcome::Quarantined(id) => {
                        (id, self.ledger.verified_text(&id).ok().flatten())
                    }
                    Outcome::Rejected(id, _) => (id, None),
                };
                let h = match text {
                    None => Haystack::unverifiable(),
                    // What the session read before the hooks saw it: any value (§3.1).
                    Some(_) if self.is_unseen_marker(&id) => Haystack::unknown(),
                    Some(t) => Haystack::new(&t),
                };
                all &= self.index_mut().insert(id, h);
            }
        }
        // Every read holds one unless the index was full (or retrieval left one out).
        if all && missing.iter().all(|id| self.haystacks.contains_key(id)) {
            session.all_indexed(instance);
        }
        Ok(())
    }
}

/// What [`Front::is_statement`] needs of a verified entry.
#[derive(Clone, Copy)]
pub(super) struct Facts {
    writer: KeyId,
    kind: Kind,
    context_hash: Hash32,
}

/// Most entries whose [`Facts`] a front keeps (dropped all at once when full).
const MAX_FACTS: usize = 1 << 16;

/// The [`Facts`] a front keeps, under one ledger handle and content epoch; nothing under an
/// unknown epoch. A
/// poisoned lock only means keeping nothing.
#[derive(Default)]
pub(super) struct EntryFacts(std::sync::Mutex<(Option<FactsKey>, HashMap<EntryId, Facts>)>);

/// The ledger handle ([`crate::Ledger::instance`]) and content epoch [`EntryFacts`] are kept
/// under.
type FactsKey = (u64, u64);

impl EntryFacts {
    fn get(&self, epoch: Option<FactsKey>, id: &EntryId) -> Option<Facts> {
        let m = self.0.lock().ok()?;
        match m.0 == epoch && epoch.is_some() {
            true => m.1.get(id).copied(),
            false => None,
        }
    }

    fn keep(&self, epoch: Option<FactsKey>, id: EntryId, f: Facts) {
        let Ok(mut m) = self.0.lock() else {
            return;
        };
        if epoch.is_none() {
            return;
        }
        if m.0 != epoch || m.1.len() >= MAX_FACTS {
            *m = (epoch, HashMap::new());
        }
        m.1.insert(id, f);
    }
}

/// The sources of a value ([`Front::sources_split`]).
#[derive(Debug, Default)]
pub(super) struct Sources {
    /// The reads that justify it: the statements that state it, if any (and the reads that
    /// cannot be verified), else every read it matches.
    pub(super) kept: Vec<EntryId>,
    /// Every read it matches.
    pub(super) matched: Vec<EntryId>,
    /// The statements among them, when they decided `kept`.
    pub(super) stated: Vec<EntryId>,
}

/// The haystack of a verified entry by principal `writer` with text `text`: an unseen-history
/// entry ([`UNSEEN_HISTORY`]) holds every value (`spec/hooks.md` §3.1), any other its text.
pub(super) fn haystack_of(writer: &str, text: &str) -> Haystack {
    if writer == UNSEEN_HISTORY {
        Haystack::unknown()
    } else {
        Haystack::new(text)
    }
}
