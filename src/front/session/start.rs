//! How a front sees a session begin (`spec/hooks.md` §3.1): the start marker of a session
//! seen from its start, and the unseen-history entry that stands for what a session read
//! before the hooks saw it.

use super::{session_context, Session};
use crate::front::write::Spec;
use crate::front::{Front, FrontError, Keys, Kind};
use crate::record::{EntryId, Role};
use crate::store::Store;

/// The principal (role system) of a session's start marker: a `context` entry, with the
/// `SessionStart` source as content, that the hooks write when they see a session begin with
/// no history (`spec/hooks.md` §3.1).
pub const SESSION_START: &str = "session:start";
/// The principal (role external) of a session's unseen-history entry: a `context` entry whose
/// content says why, that stands for the history the hooks did not see and holds every value
/// (`spec/hooks.md` §3.1).
pub const UNSEEN_HISTORY: &str = "history:unseen";

/// How a front sees a session it has not seen begin ([`Front::sight`], `spec/hooks.md` §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sighting<'a> {
    /// A `SessionStart` event: its `source` (`startup`, `clear`, `resume`, `compact`,
    /// `fork`…) and, when its transcript already holds conversation, what shows it.
    Start {
        /// The event's `source`.
        source: &'a str,
        /// Why the transcript shows earlier history, if it does.
        history: Option<&'a str>,
    },
    /// Any other event (its `hook_event_name`): the session began before it.
    Event(&'a str),
}

impl<S: Store, K: Keys> Front<S, K> {
    /// Applies the start rule of `spec/hooks.md` §3.1 to a session the front has not yet
    /// decided about (neither [`Session::started`] nor [`Session::unseen`]): when the
    /// sighting is a `SessionStart` of source `startup` or `clear` whose transcript shows no
    /// earlier conversation, and the ledger holds no entry of the session, it writes the
    /// session's start marker ([`SESSION_START`]); otherwise — a resumed, compacted or forked
    /// conversation, a session first seen at a prompt, a tool output or after entries of its
    /// own — it writes an unseen-history entry ([`UNSEEN_HISTORY`], External) saying why, and
    /// adds it to the reads, where it holds every value: what the session read before the
    /// hooks saw it is unknown, so its writes derive from untrusted input and no value of its
    /// calls is unsourced. A session already decided is left as it is.
    ///
    /// # Errors
    /// Keys and ledger failures; nothing is written then and the session is unchanged.
    pub fn sight(&mut self, session: &mut Session, how: Sighting<'_>) -> Result<(), FrontError> {
        if session.started || session.unseen.is_some() {
            return Ok(());
        }
        let intact = self.session_sealed(session);
        let len = self.ledger.len();
        let own = self
            .ledger
            .context_entries(&session_context(&session.id), len)?
            .len();
        let why = match how {
            Sighting::Start {
                source: source @ ("startup" | "clear"),
                history: None,
            } if own == 0 && session.reads.is_empty() => {
                self.write(
                    session,
                    Spec::new(SESSION_START, Role::System, Kind::Context, source),
                )?;
                session.started = true;
                self.reseal(session, intact);
                return Ok(());
            }
            Sighting::Start {
                source,
                history: Some(h),
            } => format!("SessionStart (source {source:?}) whose transcript holds {h}"),
            Sighting::Start { source, .. } if matches!(source, "startup" | "clear") => {
                format!("SessionStart (source {source:?}) after {own} entries of this session")
            }
            Sighting::Start { source, .. } => format!(
                "SessionStart (source {source:?}): the conversation began before memlineage's \
                 hooks saw it"
            ),
            Sighting::Event(event) => format!(
                "first seen at {event}, with no SessionStart before it: the conversation began \
                 before memlineage's hooks saw it"
            ),
        };
        self.write_unseen(session, intact, &why)?;
        Ok(())
    }

    /// Writes, for an output of `session` that could not be recorded (`spec/hooks.md` §5), an
    /// unseen-history entry ([`UNSEEN_HISTORY`], External) saying so, and adds it to the
    /// reads, where it holds every value: what the session read is no longer known. The
    /// caller counts the output in [`Session::unrecorded`] too, and that count refuses every
    /// sensitive call; but it lives only in the session's record, and a store-only attacker
    /// who deleted the record made the session's calls allowed again (attack review 50). The
    /// entry is in the ledger, where [`Front::catch_up`] finds it again. Returns its id.
    ///
    /// # Errors
    /// Keys and ledger failures (the ledger that could not take the output may not take this
    /// either): nothing is written then and the session is unchanged.
    pub fn record_unrecorded(
        &mut self,
        session: &mut Session,
        why: &str,
    ) -> Result<EntryId, FrontError> {
        let intact = self.session_sealed(session);
        self.write_unseen(
            session,
            intact,
            &format!("an output could not be recorded: {why}"),
        )
    }

    /// Writes an unseen-history entry saying `why`, adds it to the reads (the session's
    /// `unseen` entry unless it has one) and reseals the session if it was `intact`.
    fn write_unseen(
        &mut self,
        session: &mut Session,
        intact: bool,
        why: &str,
    ) -> Result<EntryId, FrontError> {
        let text = format!("memlineage/unseen-history@v1: {why}");
        let a = self.write(
            session,
            Spec::new(UNSEEN_HISTORY, Role::External, Kind::Context, &text),
        )?;
        session.read(a.id);
        session.unseen.get_or_insert(a.id);
        self.reseal(session, intact);
        Ok(a.id)
    }

    /// Whether `session` has not been seen from its start and no unseen-history entry stands
    /// for what it read before, where the front requires sessions to be ([`Front::sight`]):
    /// its sensitive calls are refused and its writes are untied.
    pub(in crate::front) fn unseen_start(&self, session: &Session) -> bool {
        self.require_start && !session.started && session.unseen.is_none()
    }

    /// Whether `id` is an unseen-history entry ([`UNSEEN_HISTORY`]): a verified `context`
    /// entry of that principal, role external. Its haystack holds every value.
    pub(in crate::front) fn is_unseen_marker(&self, id: &EntryId) -> bool {
        self.ledger.get(id).is_ok_and(|e| {
            e.entry().kind == Kind::Context
                && self.ledger.principal(&e.writer()) == Some((Role::External, UNSEEN_HISTORY))
        })
    }
}
