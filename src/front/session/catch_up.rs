//! How a front loads a session and catches its record up with the ledger (`spec/hooks.md`
//! §6): the read set is derived from signed entries, so a record that could not be saved, an
//! older copy or a lost record loses no read the ledger holds.

use super::start::{SESSION_START, UNSEEN_HISTORY};
use super::{session_context, Session};
use crate::front::{hook, Front, FrontError, Keys, Kind};
use crate::record::{EntryId, Hash32, Role};
use crate::store::Store;

/// How many entries [`Front::load_session`] may catch a session up by before it saves the
/// caught-up record back.
pub(super) const SAVE_AFTER_CATCH_UP: u64 = 64;

/// The id that stands for the entry at leaf `index` when it cannot be verified and may be a
/// session's read: not in the log, so it justifies nothing and taints every value
/// (`spec/gate.md` §7).
fn unverifiable_read(index: u64) -> EntryId {
    EntryId(Hash32::digest(format!("memlineage/unverifiable-read/{index}").as_bytes()).0)
}

impl<S: Store, K: Keys> Front<S, K> {
    /// Loads session `id` from `sessions` and catches it up with the ledger
    /// ([`Front::catch_up`]): the one way the fronts load a session.
    ///
    /// # Errors
    /// [`FrontError::Session`] when the record cannot be read (or was pruned); ledger errors.
    ///
    /// When catching up took in more than `SAVE_AFTER_CATCH_UP` (64) entries or added reads, the
    /// caught-up record is saved back if its seal verifies (an error there is ignored: the ledger stays the source
    /// and the next load catches up again), so that a session that only asks (PreToolUse
    /// calls, which save nothing) does not read the same entries again at every call while
    /// other sessions write.
    pub fn load_session(
        &mut self,
        sessions: &mut dyn hook::Sessions,
        id: &str,
    ) -> Result<Session, FrontError> {
        let mut s = sessions.load(id)?;
        let (seen, reads) = (s.seen, s.reads.len());
        self.catch_up(&mut s)?;
        // Only a record whose seal verifies: one altered outside memlineage is left as found.
        if (s.seen.saturating_sub(seen) > SAVE_AFTER_CATCH_UP || s.reads.len() != reads)
            && self.session_sealed(&s)
        {
            let _ = sessions.save(&s);
        }
        Ok(s)
    }

    /// Derives `session`'s reads from the ledger (`spec/hooks.md` §6): adds every entry
    /// written for the session (its context hash) that the session read — a prompt, a tool
    /// output, a memory of the agent, and the parents of the agent's context entries (the
    /// reads a front folded, the entries it retrieved, [`Front::read_retrieved_view`]) — at
    /// leaf indexes `seen..`, then sets `seen` to the ledger's size. A session with no record
    /// (nothing read, nothing seen: deleted, never saved, kept in another state directory)
    /// takes them from the whole ledger through the context index
    /// ([`crate::Ledger::context_entries`]); one with a record from `seen` on. So the read set
    /// is derived from signed entries: a record that could not be saved, an older sealed copy,
    /// a deleted record or one the caller cannot find loses no read the ledger holds (issue 25;
    /// issue 24 review, finding 6). An entry that does not verify and may be the session's is
    /// added as a read that cannot be shown not to hold any value (fail closed).
    ///
    /// Cost: one verified read per entry the record has not seen; with no record, one per
    /// entry of the session (and per row stored without a context hash), and, when the ledger
    /// holds any, a count of the store's rows.
    ///
    /// # Errors
    /// Ledger failures other than an entry that does not verify; with no record, a store
    /// whose rows do not chain ([`crate::Ledger::check_rows_chain`]: a deleted row may have
    /// been one of the session's reads).
    pub fn catch_up(&mut self, session: &mut Session) -> Result<(), FrontError> {
        let len = self.ledger.len();
        if session.seen >= len && !session.is_fresh() {
            return Ok(());
        }
        let intact = self.session_sealed(session);
        let want = session_context(&session.id);
        if session.is_fresh() {
            let found = self.ledger.context_entries(&want, len)?;
            // The lookup lists the rows the store holds: a row deleted from the middle of the
            // log (no effects, so the seal does not see it) is no candidate, where the walk
            // below counts it as a read. A session the ledger holds entries of is rebuilt only
            // from a store whose rows chain (attack review 52; O(n), once per rebuilt record).
            if !found.is_empty() {
                self.ledger.check_rows_chain()?;
            }
            for (index, e) in found {
                self.take_read(session, index, e);
            }
        } else {
            for index in session.seen..len {
                match self.ledger.get_by_index(index) {
                    Ok(e) if e.entry().context_hash != want => {}
                    other => self.take_read(session, index, other),
                }
            }
        }
        session.seen = len;
        self.reseal(session, intact);
        Ok(())
    }

    /// Adds what the entry at leaf `index` of `session`'s context (or that cannot be verified)
    /// gives the session's reads ([`Front::catch_up`]).
    fn take_read(
        &self,
        session: &mut Session,
        index: u64,
        entry: Result<crate::record::SignedEntry, crate::ledger::LedgerError>,
    ) {
        let e = match entry {
            Ok(e) => e,
            Err(_) => {
                session.read(unverifiable_read(index));
                return;
            }
        };
        let p = e.entry();
        match p.kind {
            Kind::Prompt | Kind::ToolResult | Kind::Summary | Kind::Fact => session.read(e.id()),
            Kind::Context => match self.ledger.principal(&e.writer()) {
                // A front's context entry: what it names, the session read.
                Some((Role::Agent, _)) => {
                    for parent in &p.parents {
                        session.read(parent.id);
                    }
                }
                Some((Role::System, SESSION_START)) => session.started = true,
                Some((Role::External, UNSEEN_HISTORY)) => {
                    session.read(e.id());
                    session.unseen.get_or_insert(e.id());
                }
                _ => {}
            },
            _ => {}
        }
    }
}
