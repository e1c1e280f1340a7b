//! The resident hook server's wire protocol (`spec/hooks.md` §11): how a `memlineage hook
//! <event>` process hands its event to the per-ledger server `memlineage hook serve` over a
//! unix socket, and how it checks the answer.
//!
//! Both directions are authenticated with HMAC-SHA-256 under a key derived from the log's
//! secret key ([`ServerKey`]), which the hook process reads from `LEDGER.key` as it would to
//! open the ledger. A request is accepted only from a holder of the log key; an answer is
//! believed only if it is bound to the request's fresh nonce and bytes under the same key. So
//! whoever can write files beside the ledger but holds no key (the store-only attacker of
//! `spec/gate.md` §7) cannot answer for the server: a forged, garbled, truncated or late answer
//! is no answer, and the hook handles the event itself (fail closed).
//!
//! Frames (all integers big-endian):
//!
//! ```text
//! request  = MAGIC(8) || event(1) || nonce(32) || len(4) || event bytes(len) || tag(32)
//!   tag    = HMAC(K, "memlineage/hook-request@v1"  || event || nonce || len || bytes)
//! response = MAGIC(8) || code(1) || len(4) || stdout || len(4) || stderr || tag(32)
//!   tag    = HMAC(K, "memlineage/hook-response@v1" || nonce || SHA-256(request tag) ||
//!                    code || len || stdout || len || stderr)
//! ```

use crate::front::hook::{HookEvent, HookOutcome, MAX_EVENT_BYTES};
use crate::log::LogSigner;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use rand_core::RngCore;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};

/// The first bytes of every frame (protocol version 1).
pub const MAGIC: &[u8; 8] = b"MLHOOK1\0";
/// Largest standard output or standard error carried in a response, in bytes (1 MiB).
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

const KEY_PREFIX: &[u8] = b"memlineage/hook-server-key@v1";
const REQUEST_PREFIX: &[u8] = b"memlineage/hook-request@v1";
const RESPONSE_PREFIX: &[u8] = b"memlineage/hook-response@v1";

/// Why a frame was refused. Every variant can be caused by whoever can reach the socket.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookdError {
    /// Reading or writing the socket failed (including a timeout or an early close).
    #[error("hook server connection: {0}")]
    Io(#[from] std::io::Error),
    /// The frame does not start with [`MAGIC`].
    #[error("hook server frame: not a memlineage hook frame (bad magic)")]
    Magic,
    /// The event code is not one of the four events.
    #[error("hook server frame: unknown event code {0}")]
    Event(u8),
    /// A length field exceeds its bound (event: [`MAX_EVENT_BYTES`]; output:
    /// [`MAX_OUTPUT_BYTES`]).
    #[error("hook server frame: {what} of {len} bytes exceeds {max}")]
    TooLong {
        /// Which field.
        what: &'static str,
        /// Its stated length.
        len: usize,
        /// Its bound.
        max: usize,
    },
    /// The tag does not verify: the frame was not made with this log's key, or is not the
    /// answer to this request.
    #[error("hook server frame: the tag does not verify under this log's key")]
    Tag,
    /// The outcome's standard output or error is not UTF-8.
    #[error("hook server frame: output is not UTF-8")]
    Utf8,
}

/// The HMAC key of a ledger's hook server: `K = SHA-256("memlineage/hook-server-key@v1" ||
/// log secret seed)`.
#[derive(Clone)]
pub struct ServerKey([u8; 32]);

impl std::fmt::Debug for ServerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerKey(..)")
    }
}

impl ServerKey {
    /// The key of the log signed by `signer`.
    pub fn of(signer: &LogSigner) -> Self {
        let mut h = Sha256::new();
        h.update(KEY_PREFIX);
        h.update(signer.writer_key().seed());
        ServerKey(h.finalize().into())
    }

    fn mac(&self, domain: &[u8]) -> Hmac<Sha256> {
        // A 32-byte key zero-padded to HMAC's 64-byte block gives the same MAC (RFC 2104 §2).
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&self.0);
        let mut m = <Hmac<Sha256> as KeyInit>::new(&block.into());
        m.update(domain);
        m
    }
}

/// The event's one-byte code on the wire.
pub fn event_code(event: HookEvent) -> u8 {
    match event {
        HookEvent::PreToolUse => 1,
        HookEvent::PostToolUse => 2,
        HookEvent::PostToolUseFailure => 3,
        HookEvent::UserPromptSubmit => 4,
        // 5 is the separated protocol's notice (`crate::front::privsep`).
        HookEvent::SessionStart => 6,
    }
}

fn event_of(code: u8) -> Result<HookEvent, HookdError> {
    Ok(match code {
        1 => HookEvent::PreToolUse,
        2 => HookEvent::PostToolUse,
        3 => HookEvent::PostToolUseFailure,
        4 => HookEvent::UserPromptSubmit,
        6 => HookEvent::SessionStart,
        c => return Err(HookdError::Event(c)),
    })
}

/// One event handed to the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The hook event.
    pub event: HookEvent,
    /// A fresh random value binding the answer to this request.
    pub nonce: [u8; 32],
    /// The event bytes, as read from the hook's standard input (at most [`MAX_EVENT_BYTES`]).
    pub input: Vec<u8>,
    /// The request's tag (set by [`Request::write`] and [`Request::read`]).
    tag: [u8; 32],
}

impl Request {
    /// A request for `event` with `input` and a fresh nonce from the operating system.
    pub fn new(event: HookEvent, input: Vec<u8>) -> Self {
        let mut nonce = [0u8; 32];
        rand_core::OsRng.fill_bytes(&mut nonce);
        Request {
            event,
            nonce,
            input,
            tag: [0; 32],
        }
    }

    fn compute_tag(&self, key: &ServerKey) -> [u8; 32] {
        let mut m = key.mac(REQUEST_PREFIX);
        m.update(&[event_code(self.event)]);
        m.update(&self.nonce);
        m.update(&(self.input.len() as u32).to_be_bytes());
        m.update(&self.input);
        m.finalize().into_bytes().into()
    }

    /// Writes the request frame, tagged under `key`.
    ///
    /// # Errors
    /// [`HookdError::TooLong`] for input over [`MAX_EVENT_BYTES`]; [`HookdError::Io`].
    pub fn write(&mut self, key: &ServerKey, w: &mut impl Write) -> Result<(), HookdError> {
        if self.input.len() > MAX_EVENT_BYTES {
            return Err(HookdError::TooLong {
                what: "event",
                len: self.input.len(),
                max: MAX_EVENT_BYTES,
            });
        }
        self.tag = self.compute_tag(key);
        let mut head = Vec::with_capacity(45);
        head.extend_from_slice(MAGIC);
        head.push(event_code(self.event));
        head.extend_from_slice(&self.nonce);
        head.extend_from_slice(&(self.input.len() as u32).to_be_bytes());
        w.write_all(&head)?;
        w.write_all(&self.input)?;
        w.write_all(&self.tag)?;
        w.flush()?;
        Ok(())
    }

    /// Reads and checks one request frame: bounded (never allocates more than
    /// [`MAX_EVENT_BYTES`] for the event), and accepted only when its tag verifies under
    /// `key`.
    ///
    /// # Errors
    /// [`HookdError`] for anything else.
    pub fn read(key: &ServerKey, r: &mut impl Read) -> Result<Self, HookdError> {
        let mut head = [0u8; 45];
        r.read_exact(&mut head)?;
        if &head[..8] != MAGIC {
            return Err(HookdError::Magic);
        }
        let event = event_of(head[8])?;
        let mut nonce = [0u8; 32];
        nonce.copy_from_slice(&head[9..41]);
        let len = u32::from_be_bytes([head[41], head[42], head[43], head[44]]) as usize;
        if len > MAX_EVENT_BYTES {
            return Err(HookdError::TooLong {
                what: "event",
                len,
                max: MAX_EVENT_BYTES,
            });
        }
        let mut input = vec![0u8; len];
        r.read_exact(&mut input)?;
        let mut tag = [0u8; 32];
        r.read_exact(&mut tag)?;
        let req = Request {
            event,
            nonce,
            input,
            tag,
        };
        let mut m = key.mac(REQUEST_PREFIX);
        m.update(&[head[8]]);
        m.update(&nonce);
        m.update(&head[41..45]);
        m.update(&req.input);
        m.verify_slice(&tag).map_err(|_| HookdError::Tag)?;
        Ok(req)
    }

    fn response_mac(&self, key: &ServerKey, body: &[u8]) -> Hmac<Sha256> {
        let mut m = key.mac(RESPONSE_PREFIX);
        m.update(&self.nonce);
        m.update(&Sha256::digest(self.tag));
        m.update(body);
        m
    }

    /// Writes the answer `outcome` to this request, tagged under `key`. Output longer than
    /// [`MAX_OUTPUT_BYTES`] is cut (at a character boundary).
    ///
    /// # Errors
    /// [`HookdError::Io`].
    pub fn answer(
        &self,
        key: &ServerKey,
        outcome: &HookOutcome,
        w: &mut impl Write,
    ) -> Result<(), HookdError> {
        let mut body = Vec::new();
        body.push(outcome.code);
        for s in [&outcome.stdout, &outcome.stderr] {
            let s = cut(s, MAX_OUTPUT_BYTES);
            body.extend_from_slice(&(s.len() as u32).to_be_bytes());
            body.extend_from_slice(s.as_bytes());
        }
        let tag = self.response_mac(key, &body).finalize().into_bytes();
        w.write_all(MAGIC)?;
        w.write_all(&body)?;
        w.write_all(&tag)?;
        w.flush()?;
        Ok(())
    }

    /// Reads the server's answer to this request (after [`Request::write`]), believed only
    /// when its tag binds it to this request under `key`.
    ///
    /// # Errors
    /// [`HookdError`] for anything else.
    pub fn read_answer(
        &self,
        key: &ServerKey,
        r: &mut impl Read,
    ) -> Result<HookOutcome, HookdError> {
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(HookdError::Magic);
        }
        let mut body = Vec::new();
        let mut code = [0u8; 1];
        r.read_exact(&mut code)?;
        body.push(code[0]);
        let mut texts = Vec::with_capacity(2);
        for what in ["stdout", "stderr"] {
            let mut len = [0u8; 4];
            r.read_exact(&mut len)?;
            let n = u32::from_be_bytes(len) as usize;
            if n > MAX_OUTPUT_BYTES {
                return Err(HookdError::TooLong {
                    what,
                    len: n,
                    max: MAX_OUTPUT_BYTES,
                });
            }
            let mut text = vec![0u8; n];
            r.read_exact(&mut text)?;
            body.extend_from_slice(&len);
            body.extend_from_slice(&text);
            texts.push(text);
        }
        let mut tag = [0u8; 32];
        r.read_exact(&mut tag)?;
        self.response_mac(key, &body)
            .verify_slice(&tag)
            .map_err(|_| HookdError::Tag)?;
        let mut texts = texts.into_iter().map(String::from_utf8);
        let (Some(Ok(stdout)), Some(Ok(stderr))) = (texts.next(), texts.next()) else {
            return Err(HookdError::Utf8);
        };
        Ok(HookOutcome {
            code: code[0],
            stdout,
            stderr,
        })
    }
}

/// `s` cut to at most `max` bytes at a character boundary (shared with the separated
/// frames, `front::privsep`).
pub(crate) fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::WriterKey;

    fn key(label: &str) -> ServerKey {
        ServerKey::of(&LogSigner::new("test.example/hookd", WriterKey::for_label(label)).unwrap())
    }

    fn outcome(code: u8, stderr: &str) -> HookOutcome {
        HookOutcome {
            code,
            stdout: String::new(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn request_and_answer_round_trip_under_one_key_only() {
        let k = key("a");
        let mut req = Request::new(HookEvent::PreToolUse, b"{\"x\":1}".to_vec());
        let mut wire = Vec::new();
        req.write(&k, &mut wire).unwrap();
        let got = Request::read(&k, &mut wire.as_slice()).unwrap();
        assert_eq!(got, req);
        assert!(matches!(
            Request::read(&key("b"), &mut wire.as_slice()),
            Err(HookdError::Tag)
        ));
        let want = outcome(2, "memlineage: deny\n");
        let mut ans = Vec::new();
        got.answer(&k, &want, &mut ans).unwrap();
        assert_eq!(req.read_answer(&k, &mut ans.as_slice()).unwrap(), want);
        assert!(matches!(
            req.read_answer(&key("b"), &mut ans.as_slice()),
            Err(HookdError::Tag)
        ));
        // The same answer does not answer another request (another nonce).
        let mut other = Request::new(HookEvent::PreToolUse, b"{\"x\":1}".to_vec());
        other.write(&k, &mut Vec::new()).unwrap();
        assert!(matches!(
            other.read_answer(&k, &mut ans.as_slice()),
            Err(HookdError::Tag)
        ));
    }

    #[test]
    fn every_flipped_byte_or_truncation_is_refused() {
        let k = key("a");
        let mut req = Request::new(HookEvent::PostToolUse, b"abc".to_vec());
        let mut wire = Vec::new();
        req.write(&k, &mut wire).unwrap();
        for i in 0..wire.len() {
            let mut bad = wire.clone();
            bad[i] ^= 1;
            assert!(Request::read(&k, &mut bad.as_slice()).is_err(), "byte {i}");
            assert!(Request::read(&k, &mut &wire[..i]).is_err(), "cut at {i}");
        }
        let mut ans = Vec::new();
        req.answer(&k, &outcome(0, ""), &mut ans).unwrap();
        for i in 0..ans.len() {
            let mut bad = ans.clone();
            bad[i] ^= 1;
            assert!(
                req.read_answer(&k, &mut bad.as_slice()).is_err(),
                "byte {i}"
            );
            assert!(req.read_answer(&k, &mut &ans[..i]).is_err(), "cut at {i}");
        }
    }

    #[test]
    fn lengths_are_bounded_before_allocation() {
        let k = key("a");
        let mut head = MAGIC.to_vec();
        head.push(1);
        head.extend_from_slice(&[0; 32]);
        head.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            Request::read(&k, &mut head.as_slice()),
            Err(HookdError::TooLong { what: "event", .. })
        ));
        head[8] = 9;
        assert!(matches!(
            Request::read(&k, &mut head.as_slice()),
            Err(HookdError::Event(9))
        ));
        let req = Request::new(HookEvent::PreToolUse, Vec::new());
        let mut ans = MAGIC.to_vec();
        ans.push(0);
        ans.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            req.read_answer(&k, &mut ans.as_slice()),
            Err(HookdError::TooLong { what: "stdout", .. })
        ));
        assert!(matches!(
            req.read_answer(&k, &mut &b"HTTP/1.1 200 OK\r\n"[..]),
            Err(HookdError::Magic)
        ));
        assert_eq!(cut("aé", 2), "a");
    }
}
