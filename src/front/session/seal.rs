//! The seal of a session's record (`spec/hooks.md` §3, §6): an HMAC under a key derived from
//! the log key over the session's id, reads, context entry and start, so that a record the
//! hooks keep beside the store is trusted only if a holder of the log key wrote it; the `v4`
//! seal is extended by new reads only (its stream kept in the session's memo).

use super::super::{Front, Keys};
use super::Session;
use crate::record::EntryId;
use crate::store::Store;

#[derive(Clone)]
pub(super) struct SealMemo {
    key: [u8; 32],
    fed: usize,
    last: Option<EntryId>,
    stream: crate::ledger::SealStream,
}

impl<S: Store, K: Keys> Front<S, K> {
    /// Seals `session`'s read set under the log key (`spec/hooks.md` §3): call it after
    /// adding reads by hand ([`Session::read`]) to a session this process holds; the front's
    /// own methods do. Never call it on a record loaded from storage without checking it
    /// first: sealing is what makes a read set trusted.
    pub fn seal_session(&self, session: &mut Session) {
        session.unrecorded_sealed = session.unrecorded;
        session.seal = Some(hex::encode(self.session_tag_v5(session)));
    }

    /// Seals `session` again after the front added reads, but only if its seal verified
    /// before (`intact`): a record altered outside memlineage stays refused rather than being
    /// laundered into a valid one by the next recorded read.
    pub(in crate::front) fn reseal(&self, session: &mut Session, intact: bool) {
        if intact {
            self.seal_session(session);
        }
    }

    /// Whether `session`'s seal verifies (a session with no reads needs none).
    pub(in crate::front) fn session_sealed(&self, session: &Session) -> bool {
        if session.reads.is_empty() && !session.started && session.unseen.is_none() {
            return true;
        }
        let Some(have) = session.seal.as_deref().and_then(|h| hex::decode(h).ok()) else {
            return false;
        };
        // Not secret-dependent timing worth hiding from the store's writer, but cheap to avoid.
        let same = |want: [u8; 32]| {
            have.len() == want.len()
                && have.iter().zip(want).fold(0u8, |a, (x, y)| a | (x ^ y)) == 0
        };
        // v5 first (what this version writes): its count of unrecorded outputs may have grown
        // since (a hook without the key marks one), never shrunk. Then a record sealed before
        // it, which did not cover the count.
        (session.unrecorded >= session.unrecorded_sealed && same(self.session_tag_v5(session)))
            || (session.unrecorded_sealed == 0
                && (same(self.session_tag_v4(session)) || same(self.session_tag(session))))
    }

    /// The read set's `v5` seal (`spec/hooks.md` §6): the `v4` message, then the `v5` domain
    /// and the count of unrecorded outputs the record had when sealed
    /// ([`Session::unrecorded_sealed`]), so that a record whose count was lowered outside
    /// memlineage no longer verifies.
    fn session_tag_v5(&self, session: &Session) -> [u8; 32] {
        let mut tail = self.session_tail_v4(session);
        tail.update(b"memlineage/session-seal@v5");
        tail.update(&session.unrecorded_sealed.to_be_bytes());
        tail.finish()
    }

    /// The read set's `v4` seal (`spec/hooks.md` §6): the reads before the count, so that the
    /// HMAC over the reads already hashed is kept in the session's memo and extended by the
    /// new ones only.
    fn session_tag_v4(&self, session: &Session) -> [u8; 32] {
        self.session_tail_v4(session).finish()
    }

    /// The `v4` seal's HMAC stream over its whole message, not yet finished.
    fn session_tail_v4(&self, session: &Session) -> crate::ledger::SealStream {
        let key = self.ledger.seal_tag(b"memlineage/session-memo-key@v1", b"");
        let mut state = session.memo.state();
        let reads = &session.reads;
        let memo = match state.seal.take() {
            Some(m)
                if m.key == key
                    && m.fed <= reads.len()
                    && m.last == m.fed.checked_sub(1).map(|i| reads[i]) =>
            {
                m
            }
            _ => {
                let mut stream = self.ledger.seal_stream(b"memlineage/session-seal@v4");
                stream.update(&(session.id.len() as u64).to_be_bytes());
                stream.update(session.id.as_bytes());
                SealMemo {
                    key,
                    fed: 0,
                    last: None,
                    stream,
                }
            }
        };
        let mut memo = memo;
        for id in &reads[memo.fed..] {
            memo.stream.update(&id.0);
        }
        memo.fed = reads.len();
        memo.last = reads.last().copied();
        let mut tail = memo.stream.clone();
        tail.update(&(reads.len() as u64).to_be_bytes());
        tail.update(&session.context.map_or([0; 32], |c| c.0));
        tail.update(&session.covered.to_be_bytes());
        tail.update(&session.seen.to_be_bytes());
        tail.update(&[u8::from(session.started)]);
        tail.update(&session.unseen.map_or([0; 32], |u| u.0));
        state.seal = Some(memo);
        tail
    }

    /// The read set's seal as records written before `v4` have it (`spec/hooks.md` §6): `v3`
    /// when the session started or has an unseen-history entry, else `v2` over the id, the
    /// reads, the context entry and how many reads it covers, or `v1` over the id and the
    /// reads only for a record with no context entry and nothing seen (never one that started
    /// or has an unseen-history entry: `v1` covers neither).
    pub(in crate::front) fn session_tag(&self, session: &Session) -> [u8; 32] {
        let mut msg = Vec::with_capacity(48 + session.id.len() + 32 * session.reads.len());
        msg.extend_from_slice(&(session.id.len() as u64).to_be_bytes());
        msg.extend_from_slice(session.id.as_bytes());
        for id in &session.reads {
            msg.extend_from_slice(&id.0);
        }
        // v1 predates `started` and `unseen` and covers neither: only a record with neither
        // verifies under it, so that setting `started` without the key is an alteration.
        if session.context.is_none()
            && session.covered == 0
            && session.seen == 0
            && !session.started
            && session.unseen.is_none()
        {
            return self.ledger.seal_tag(b"memlineage/session-seal@v1", &msg);
        }
        // The reads' count first, so that no split of the bytes between the reads and the
        // context entry reads the same.
        let mut v2 = Vec::with_capacity(msg.len() + 48);
        v2.extend_from_slice(&(session.reads.len() as u64).to_be_bytes());
        v2.extend_from_slice(&msg);
        v2.extend_from_slice(&session.context.map_or([0; 32], |c| c.0));
        v2.extend_from_slice(&session.covered.to_be_bytes());
        v2.extend_from_slice(&session.seen.to_be_bytes());
        if !session.started && session.unseen.is_none() {
            return self.ledger.seal_tag(b"memlineage/session-seal@v2", &v2);
        }
        // How the session started (v3): records of v1 and v2 still verify.
        v2.push(u8::from(session.started));
        v2.extend_from_slice(&session.unseen.map_or([0; 32], |u| u.0));
        self.ledger.seal_tag(b"memlineage/session-seal@v3", &v2)
    }
}
