//! The separated hook protocol (`spec/hooks.md` §14.3): how an agent-side hook that holds no
//! key (`memlineage hook <event> --guarded SOCKET --guard-user UID`) hands its event to the
//! hook server that runs as its own OS user and owns the signing key and the ledger.
//!
//! Unlike the HMAC frames of [`crate::front::hookd`], these frames carry no tag: the agent-side
//! process must not hold the log key, so it cannot make one. Authentication is by the kernel:
//! the server reads each connection's peer credentials (`SO_PEERCRED`) and serves only the
//! configured agent uid (and root); the client reads the server's peer credentials and the
//! socket file's owner and believes an answer only from the guard uid. Those checks live in
//! the binary (`src/bin/memlineage/hook_separate.rs`, feature `cli`); this module holds the
//! byte layouts and their bounds, which decide nothing and hold no secret.
//!
//! Frames (all integers big-endian):
//!
//! ```text
//! request  = MAGIC(8) || kind(1) || nonce(32) || len(4) || body(len)
//!   kind   : 1 PreToolUse, 2 PostToolUse, 3 PostToolUseFailure, 4 UserPromptSubmit,
//!            6 SessionStart (body: the event bytes), 5 notice (body: a JSON Notice)
//! response = MAGIC(8) || nonce(32) || code(1) || len(4) || stdout || len(4) || stderr
//! ```
//!
//! The nonce is echoed so that an answer is never taken for another request's; it is not an
//! authenticator (whoever the client accepts as its peer is the guard user already).

use crate::front::hook::{HookEvent, HookOutcome, MAX_EVENT_BYTES};
use crate::front::hookd::{cut, event_code, MAX_OUTPUT_BYTES};
use rand_core::RngCore;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// The first bytes of every separated frame (version 1). Distinct from the HMAC protocol's
/// [`crate::front::hookd::MAGIC`], so that neither side ever reads one as the other.
pub const MAGIC: &[u8; 8] = b"MLHOOKP1";
/// The kind byte of a [`Notice`].
const NOTICE: u8 = 5;
/// Largest notice body, in bytes (4 KiB): a session id and a reason.
pub const MAX_NOTICE_BYTES: usize = 4096;

/// Why a separated frame, peer or socket was refused. Every variant but
/// [`SeparationError::Io`] from the client's own side can be caused by whoever reaches the
/// socket or creates files on its path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SeparationError {
    /// Reading or writing the socket failed (including a timeout or an early close), or the
    /// socket could not be reached.
    #[error("separated hook server connection: {0}")]
    Io(#[from] std::io::Error),
    /// The frame does not start with [`MAGIC`] (for example an HMAC-mode frame).
    #[error("separated hook frame: not a separated memlineage frame (bad magic)")]
    Magic,
    /// The kind byte is none of the four events or a notice.
    #[error("separated hook frame: unknown kind {0}")]
    Kind(u8),
    /// A length field exceeds its bound (event: [`MAX_EVENT_BYTES`]; notice:
    /// [`MAX_NOTICE_BYTES`]; output: [`MAX_OUTPUT_BYTES`]); refused before allocation.
    #[error("separated hook frame: {what} of {len} bytes exceeds {max}")]
    TooLong {
        /// Which field.
        what: &'static str,
        /// Its stated length.
        len: usize,
        /// Its bound.
        max: usize,
    },
    /// The answer echoes another request's nonce.
    #[error("separated hook frame: the answer is not for this request (nonce differs)")]
    Nonce,
    /// The answer's standard output or error is not UTF-8.
    #[error("separated hook frame: output is not UTF-8")]
    Utf8,
    /// A notice body is not a JSON object with a non-empty `session_id`, a tool-output event
    /// name and a reason.
    #[error("separated hook frame: malformed notice")]
    Notice,
    /// Server side: the connecting process runs as a uid that is neither the agent's nor root.
    #[error("separated hook server: peer uid {uid} is not the agent's ({agent}) nor root")]
    PeerRefused {
        /// The peer's uid, as the kernel reports it.
        uid: u32,
        /// The configured agent uid.
        agent: u32,
    },
    /// Client side: the process listening on the socket runs as another uid than the guard's:
    /// someone else bound it (never believed).
    #[error("the process on the hook socket runs as uid {got}, not the guard user's uid {want}")]
    ServerNotGuard {
        /// The listening process's uid.
        got: u32,
        /// The guard uid given with `--guard-user`.
        want: u32,
    },
    /// Client side: the socket file is owned by another uid than the guard's.
    #[error("the hook socket is owned by uid {got}, not by the guard user's uid {want}")]
    SocketOwner {
        /// The socket file's owner.
        got: u32,
        /// The guard uid.
        want: u32,
    },
    /// Client side: the socket path is not a unix socket (or does not exist).
    #[error("the hook socket path is not a socket")]
    NotSocket,
}

/// What a separated client sends when it could not hand over a tool-output event (oversized,
/// standard input unreadable): the server marks the session as having unrecorded output, as an
/// in-process hook would (`spec/hooks.md` §5.2), since the client cannot write the session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notice {
    /// The session whose output was not delivered (read from the event's top level).
    pub session_id: String,
    /// `PostToolUse` or `PostToolUseFailure`.
    pub hook_event_name: String,
    /// Why it was not delivered.
    pub reason: String,
}

impl Notice {
    /// The event the notice concerns; `None` unless it is a tool-output event.
    pub fn event(&self) -> Option<HookEvent> {
        [HookEvent::PostToolUse, HookEvent::PostToolUseFailure]
            .into_iter()
            .find(|e| e.event_name() == self.hook_event_name)
    }
}

/// What a separated request carries.
///
/// Exhaustive: the requests of the separated protocol (`spec/hooks.md` §14); the server
/// answers each, so a new one must break its build rather than go unanswered in a wildcard arm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// A hook event and its bytes (at most [`MAX_EVENT_BYTES`]).
    Event(HookEvent, Vec<u8>),
    /// An undelivered tool output.
    Notice(Notice),
}

/// One separated request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// A fresh random value the answer echoes.
    pub nonce: [u8; 32],
    /// The event or notice.
    pub body: Body,
}

fn event_of(code: u8) -> Result<HookEvent, SeparationError> {
    Ok(match code {
        1 => HookEvent::PreToolUse,
        2 => HookEvent::PostToolUse,
        3 => HookEvent::PostToolUseFailure,
        4 => HookEvent::UserPromptSubmit,
        6 => HookEvent::SessionStart,
        c => return Err(SeparationError::Kind(c)),
    })
}

fn too_long(what: &'static str, len: usize, max: usize) -> Result<(), SeparationError> {
    if len > max {
        return Err(SeparationError::TooLong { what, len, max });
    }
    Ok(())
}

impl Request {
    /// A request carrying `body`, with a fresh nonce from the operating system.
    pub fn new(body: Body) -> Self {
        let mut nonce = [0u8; 32];
        rand_core::OsRng.fill_bytes(&mut nonce);
        Request { nonce, body }
    }

    /// Writes the request frame.
    ///
    /// # Errors
    /// [`SeparationError::TooLong`] for a body over its bound; [`SeparationError::Io`].
    pub fn write(&self, w: &mut impl Write) -> Result<(), SeparationError> {
        let (kind, bytes) = match &self.body {
            Body::Event(e, input) => {
                too_long("event", input.len(), MAX_EVENT_BYTES)?;
                (event_code(*e), std::borrow::Cow::Borrowed(input.as_slice()))
            }
            Body::Notice(n) => {
                // INVARIANT: a struct of three strings always serialises.
                let b = serde_json::to_vec(n).map_err(|_| SeparationError::Notice)?;
                too_long("notice", b.len(), MAX_NOTICE_BYTES)?;
                (NOTICE, std::borrow::Cow::Owned(b))
            }
        };
        let mut head = Vec::with_capacity(45);
        head.extend_from_slice(MAGIC);
        head.push(kind);
        head.extend_from_slice(&self.nonce);
        head.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        w.write_all(&head)?;
        w.write_all(&bytes)?;
        w.flush()?;
        Ok(())
    }

    /// Reads one request frame. Bounded: never allocates more than [`MAX_EVENT_BYTES`] (an
    /// event) or [`MAX_NOTICE_BYTES`] (a notice). Does not panic.
    ///
    /// # Errors
    /// [`SeparationError`] for anything malformed.
    pub fn read(r: &mut impl Read) -> Result<Self, SeparationError> {
        let mut head = [0u8; 45];
        r.read_exact(&mut head)?;
        if &head[..8] != MAGIC {
            return Err(SeparationError::Magic);
        }
        let kind = head[8];
        let mut nonce = [0u8; 32];
        nonce.copy_from_slice(&head[9..41]);
        let len = u32::from_be_bytes([head[41], head[42], head[43], head[44]]) as usize;
        if kind == NOTICE {
            too_long("notice", len, MAX_NOTICE_BYTES)?;
        } else {
            event_of(kind)?;
            too_long("event", len, MAX_EVENT_BYTES)?;
        }
        let mut bytes = vec![0u8; len];
        r.read_exact(&mut bytes)?;
        let body = if kind == NOTICE {
            let n: Notice = serde_json::from_slice(&bytes).map_err(|_| SeparationError::Notice)?;
            if n.session_id.is_empty() || n.event().is_none() {
                return Err(SeparationError::Notice);
            }
            Body::Notice(n)
        } else {
            Body::Event(event_of(kind)?, bytes)
        };
        Ok(Request { nonce, body })
    }

    /// Writes the answer `outcome` to this request. Output longer than [`MAX_OUTPUT_BYTES`]
    /// is cut at a character boundary.
    ///
    /// # Errors
    /// [`SeparationError::Io`].
    pub fn answer(&self, outcome: &HookOutcome, w: &mut impl Write) -> Result<(), SeparationError> {
        let mut frame = Vec::with_capacity(49 + outcome.stdout.len() + outcome.stderr.len());
        frame.extend_from_slice(MAGIC);
        frame.extend_from_slice(&self.nonce);
        frame.push(outcome.code);
        for s in [&outcome.stdout, &outcome.stderr] {
            let s = cut(s, MAX_OUTPUT_BYTES);
            frame.extend_from_slice(&(s.len() as u32).to_be_bytes());
            frame.extend_from_slice(s.as_bytes());
        }
        w.write_all(&frame)?;
        w.flush()?;
        Ok(())
    }

    /// Reads the answer to this request. Bounded; does not panic. The caller has already
    /// checked who is answering (the guard uid).
    ///
    /// # Errors
    /// [`SeparationError`] for anything malformed or another request's answer.
    pub fn read_answer(&self, r: &mut impl Read) -> Result<HookOutcome, SeparationError> {
        let mut head = [0u8; 41];
        r.read_exact(&mut head)?;
        if &head[..8] != MAGIC {
            return Err(SeparationError::Magic);
        }
        if head[8..40] != self.nonce {
            return Err(SeparationError::Nonce);
        }
        let mut texts = Vec::with_capacity(2);
        for what in ["stdout", "stderr"] {
            let mut len = [0u8; 4];
            r.read_exact(&mut len)?;
            let n = u32::from_be_bytes(len) as usize;
            too_long(what, n, MAX_OUTPUT_BYTES)?;
            let mut text = vec![0u8; n];
            r.read_exact(&mut text)?;
            texts.push(String::from_utf8(text).map_err(|_| SeparationError::Utf8)?);
        }
        let stderr = texts.pop().unwrap_or_default();
        let stdout = texts.pop().unwrap_or_default();
        Ok(HookOutcome {
            code: head[40],
            stdout,
            stderr,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(code: u8, stderr: &str) -> HookOutcome {
        HookOutcome {
            code,
            stdout: String::new(),
            stderr: stderr.into(),
        }
    }

    fn notice() -> Notice {
        Notice {
            session_id: "s1".into(),
            hook_event_name: "PostToolUse".into(),
            reason: "event longer than 16777216 bytes".into(),
        }
    }

    #[test]
    fn request_and_answer_round_trip() {
        for body in [
            Body::Event(HookEvent::PreToolUse, b"{\"x\":1}".to_vec()),
            Body::Notice(notice()),
        ] {
            let req = Request::new(body);
            let mut wire = Vec::new();
            req.write(&mut wire).unwrap();
            assert_eq!(&wire[..8], MAGIC);
            let got = Request::read(&mut wire.as_slice()).unwrap();
            assert_eq!(got, req);
            let want = outcome(2, "memlineage: deny\n");
            let mut ans = Vec::new();
            got.answer(&want, &mut ans).unwrap();
            assert_eq!(req.read_answer(&mut ans.as_slice()).unwrap(), want);
            // Another request's answer is not this one's.
            let other = Request::new(Body::Event(HookEvent::PreToolUse, Vec::new()));
            assert!(matches!(
                other.read_answer(&mut ans.as_slice()),
                Err(SeparationError::Nonce)
            ));
        }
    }

    #[test]
    fn hmac_frames_and_truncations_are_refused() {
        let req = Request::new(Body::Event(HookEvent::PostToolUse, b"abc".to_vec()));
        let mut wire = Vec::new();
        req.write(&mut wire).unwrap();
        for i in 0..wire.len() {
            assert!(Request::read(&mut &wire[..i]).is_err(), "cut at {i}");
        }
        let mut hmac = wire.clone();
        hmac[..8].copy_from_slice(crate::front::hookd::MAGIC);
        assert!(matches!(
            Request::read(&mut hmac.as_slice()),
            Err(SeparationError::Magic)
        ));
        let mut ans = Vec::new();
        req.answer(&outcome(0, ""), &mut ans).unwrap();
        for i in 0..ans.len() {
            assert!(req.read_answer(&mut &ans[..i]).is_err(), "cut at {i}");
        }
        let mut bad = ans.clone();
        bad[10] ^= 1;
        assert!(matches!(
            req.read_answer(&mut bad.as_slice()),
            Err(SeparationError::Nonce)
        ));
    }

    #[test]
    fn lengths_and_kinds_are_checked_before_allocation() {
        let mut head = MAGIC.to_vec();
        head.push(1);
        head.extend_from_slice(&[0; 32]);
        head.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            Request::read(&mut head.as_slice()),
            Err(SeparationError::TooLong { what: "event", .. })
        ));
        head[8] = NOTICE;
        assert!(matches!(
            Request::read(&mut head.as_slice()),
            Err(SeparationError::TooLong { what: "notice", .. })
        ));
        head[8] = 9;
        assert!(matches!(
            Request::read(&mut head.as_slice()),
            Err(SeparationError::Kind(9))
        ));
        // A notice for a PreToolUse, or with no session, is malformed.
        for n in [
            Notice {
                hook_event_name: "PreToolUse".into(),
                ..notice()
            },
            Notice {
                session_id: String::new(),
                ..notice()
            },
        ] {
            let mut wire = Vec::new();
            Request::new(Body::Notice(n)).write(&mut wire).unwrap();
            assert!(matches!(
                Request::read(&mut wire.as_slice()),
                Err(SeparationError::Notice)
            ));
        }
        let req = Request::new(Body::Event(HookEvent::PreToolUse, Vec::new()));
        let mut ans = MAGIC.to_vec();
        ans.extend_from_slice(&req.nonce);
        ans.push(0);
        ans.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            req.read_answer(&mut ans.as_slice()),
            Err(SeparationError::TooLong { what: "stdout", .. })
        ));
        assert_eq!(cut("aé", 2), "a");
    }

    #[test]
    fn every_message_is_worded() {
        let cases: Vec<(SeparationError, &str)> = vec![
            (
                SeparationError::Magic,
                "separated hook frame: not a separated memlineage frame (bad magic)",
            ),
            (
                SeparationError::Kind(9),
                "separated hook frame: unknown kind 9",
            ),
            (
                SeparationError::TooLong {
                    what: "event",
                    len: 5,
                    max: 4,
                },
                "separated hook frame: event of 5 bytes exceeds 4",
            ),
            (
                SeparationError::Nonce,
                "separated hook frame: the answer is not for this request (nonce differs)",
            ),
            (
                SeparationError::Utf8,
                "separated hook frame: output is not UTF-8",
            ),
            (
                SeparationError::Notice,
                "separated hook frame: malformed notice",
            ),
            (
                SeparationError::PeerRefused {
                    uid: 1001,
                    agent: 1000,
                },
                "separated hook server: peer uid 1001 is not the agent's (1000) nor root",
            ),
            (
                SeparationError::ServerNotGuard {
                    got: 1000,
                    want: 990,
                },
                "the process on the hook socket runs as uid 1000, not the guard user's uid 990",
            ),
            (
                SeparationError::SocketOwner {
                    got: 1000,
                    want: 990,
                },
                "the hook socket is owned by uid 1000, not by the guard user's uid 990",
            ),
            (
                SeparationError::NotSocket,
                "the hook socket path is not a socket",
            ),
            (
                SeparationError::Io(std::io::ErrorKind::TimedOut.into()),
                "separated hook server connection: timed out",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }
}
