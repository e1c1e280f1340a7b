//! The state a front keeps outside the ledger's directory (`spec/hooks.md` §6.2): the **pin**
//! (the log's verifier key and the newest checkpoint the fronts have seen) and the session
//! records. A store-only attacker writes every byte beside the ledger but not here: the pin is
//! what tells a ledger replaced wholesale (another log's key) or rolled back (a tree that does
//! not extend the pinned head) from the one the user installed, and records kept here cannot
//! be deleted to make a session look new.
//!
//! Layout: `DIR/pin.json`, `DIR/sessions/` (as `LEDGER.sessions/`, [`FileSessions`]).
//! `pin.json` is `{"format": "memlineage/pin@v1", "vkey": VKEY, "checkpoint": NOTE}`.

use crate::front::hook::FileSessions;
use crate::ledger::{Ledger, LedgerError};
use crate::log::{CheckpointError, LogVerifier, VerifiedCheckpoint};
use crate::store::durable::{read_regular, write_atomic};
use crate::store::Store;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The pin file's format tag.
pub const PIN_FORMAT: &str = "memlineage/pin@v1";
/// Largest pin file read, in bytes.
pub const MAX_PIN_BYTES: u64 = 256 << 10;

/// A front's state directory for one ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateDir(pub PathBuf);

/// What the pin holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// [`PIN_FORMAT`].
    pub format: String,
    /// The log's verifier key (C2SP vkey).
    pub vkey: String,
    /// The newest signed checkpoint note seen, as text.
    pub checkpoint: String,
}

/// Why the pin refuses a ledger, or cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// The pin file cannot be read or written.
    #[error("pin {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The pin file is not a pin.
    #[error("pin {path}: not a memlineage pin ({reason})")]
    Format {
        /// The file.
        path: String,
        /// What is wrong with it: the JSON parser's message, or the format it names.
        reason: String,
    },
    /// The ledger's log key is not the pinned one: the ledger (with its key file) was replaced
    /// by another log's.
    #[error(
        "the ledger's log key {found} is not the one pinned for it ({pinned}): the ledger was \
         replaced by another log (refusing to use it; `memlineage hook install` pins anew)"
    )]
    IdentityChanged {
        /// The pinned verifier key.
        pinned: String,
        /// The ledger's.
        found: String,
    },
    /// The pinned checkpoint does not verify under the pinned key.
    #[error("pin: the pinned checkpoint does not verify: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// A live handle refused the pinned checkpoint ([`StateDir::teach`]).
    #[error("pin: {0}")]
    Ledger(Box<LedgerError>),
}

impl StateDir {
    /// The state directory at `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        StateDir(dir.into())
    }

    /// The default state directory of the ledger at `ledger` (an absolute, canonical path):
    /// `$XDG_STATE_HOME/memlineage/ledgers/<16 hex of SHA-256(path)>`, else under
    /// `$HOME/.local/state`; `None` when neither is set.
    pub fn default_for(ledger: &Path) -> Option<Self> {
        let base = std::env::var_os("XDG_STATE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".local/state"))
            })?;
        let h = crate::record::Hash32::digest(ledger.as_os_str().as_encoded_bytes());
        Some(StateDir(
            base.join("memlineage/ledgers")
                .join(&hex::encode(h.0)[..16]),
        ))
    }

    /// The default state directory of the ledger at `ledger` that holds a pin, if one does:
    /// that of its canonical path (what `memlineage hook install` pinned), else that of its
    /// absolute path with links left as written. The second is what keeps the pin when the
    /// ledger's file was replaced by a link to another ledger (a store-only attacker writes
    /// the ledger's directory: the canonical path is then the link's target, whose directory
    /// holds no pin, and the ledger would be taken on first use). `None` when neither holds
    /// one, or neither `XDG_STATE_HOME` nor `HOME` is set.
    pub fn pinned_default_for(ledger: &Path) -> Option<Self> {
        let canonical = std::fs::canonicalize(ledger).ok();
        let written = std::path::absolute(ledger).ok();
        [canonical, written]
            .into_iter()
            .flatten()
            .filter_map(|p| Self::default_for(&p))
            .find(|d| std::fs::symlink_metadata(d.pin_path()).is_ok())
    }

    /// The session records kept here.
    pub fn sessions(&self) -> FileSessions {
        FileSessions::new(self.0.join("sessions"))
    }

    /// `DIR/pin.json`.
    pub fn pin_path(&self) -> PathBuf {
        self.0.join("pin.json")
    }

    /// The pin, if there is one.
    ///
    /// # Errors
    /// [`PinError::Io`], [`PinError::Format`]. Does not panic.
    pub fn load(&self) -> Result<Option<Pin>, PinError> {
        let path = self.pin_path();
        let io = |source| PinError::Io {
            path: path.display().to_string(),
            source,
        };
        let Some(bytes) = read_regular(&path, MAX_PIN_BYTES).map_err(io)? else {
            return Ok(None);
        };
        let pin: Pin = serde_json::from_slice(&bytes).map_err(|e| PinError::Format {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        if pin.format != PIN_FORMAT {
            return Err(PinError::Format {
                path: path.display().to_string(),
                reason: format!("format {:?}", pin.format),
            });
        }
        Ok(Some(pin))
    }

    /// The checkpoint notes to open the ledger whose verifier key is `vkey` with
    /// ([`crate::ledger::OpenOptions::checkpoints`]): the pinned one; none when nothing is
    /// pinned.
    ///
    /// # Errors
    /// [`PinError::IdentityChanged`] when a pin names another key; pin read errors.
    pub fn pinned_for(&self, vkey: &str) -> Result<Vec<Vec<u8>>, PinError> {
        match self.load()? {
            None => Ok(Vec::new()),
            Some(p) if p.vkey != vkey => Err(PinError::IdentityChanged {
                pinned: p.vkey,
                found: vkey.to_string(),
            }),
            Some(p) => Ok(vec![p.checkpoint.into_bytes()]),
        }
    }

    /// Pins `vkey` and `checkpoint`, replacing the pin when it is absent or older (a smaller
    /// tree; the ledger checked consistency before it signed or served `checkpoint`). A pin of
    /// another key is refused.
    ///
    /// # Errors
    /// [`PinError::IdentityChanged`]; I/O errors.
    pub fn advance(&self, vkey: &str, checkpoint: &VerifiedCheckpoint) -> Result<(), PinError> {
        if let Some(p) = self.load()? {
            if p.vkey != vkey {
                return Err(PinError::IdentityChanged {
                    pinned: p.vkey,
                    found: vkey.to_string(),
                });
            }
            let verifier = LogVerifier::from_vkey(vkey)?;
            let old = verifier.verify(p.checkpoint.as_bytes())?;
            if old.size() >= checkpoint.size() {
                return Ok(());
            }
        }
        self.write(&Pin {
            format: PIN_FORMAT.to_string(),
            vkey: vkey.to_string(),
            checkpoint: String::from_utf8_lossy(checkpoint.note()).into_owned(),
        })
    }

    /// Replaces the pin with `vkey` and `checkpoint` whatever it was (`hook install`).
    ///
    /// # Errors
    /// I/O errors.
    pub fn repin(&self, vkey: &str, checkpoint: &VerifiedCheckpoint) -> Result<(), PinError> {
        self.write(&Pin {
            format: PIN_FORMAT.to_string(),
            vkey: vkey.to_string(),
            checkpoint: String::from_utf8_lossy(checkpoint.note()).into_owned(),
        })
    }

    /// Tells the live handle `ledger` the pinned checkpoint ([`Ledger::know_checkpoint`]), so
    /// that its next [`Ledger::refresh`] refuses a store cut below it, as opening against the
    /// pin would (attack review 57: the hooks and other fronts advance the pin after a
    /// long-lived handle opened). Nothing is learned when nothing is pinned.
    ///
    /// # Errors
    /// [`PinError::IdentityChanged`] when the pin names another key; pin read errors;
    /// [`PinError::Ledger`] when the pinned note does not verify under the ledger's log key.
    pub fn teach<S: Store>(&self, ledger: &mut Ledger<S>) -> Result<(), PinError> {
        for note in self.pinned_for(&ledger.vkey())? {
            ledger
                .know_checkpoint(&note)
                .map_err(|e| PinError::Ledger(Box::new(e)))?;
        }
        Ok(())
    }

    /// Copies into this directory's `sessions/` the session records (`*.json`) kept in `from`
    /// that it does not hold yet, as they are (each carries its seal, `spec/hooks.md` §6):
    /// what `memlineage hook install` does when it gives the hooks this directory. Nothing is
    /// copied when `from` cannot be listed.
    ///
    /// # Errors
    /// [`PinError::Io`] when a record cannot be read or written.
    pub fn take_sessions(&self, from: &FileSessions) -> Result<(), PinError> {
        let into = self.sessions();
        let Ok(entries) = std::fs::read_dir(from.dir()) else {
            return Ok(());
        };
        let io = |path: &Path| {
            let path = path.display().to_string();
            move |source| PinError::Io { path, source }
        };
        std::fs::create_dir_all(into.dir()).map_err(io(into.dir()))?;
        for e in entries.flatten() {
            let name = e.file_name();
            let is_record = name.to_str().is_some_and(|n| n.ends_with(".json"));
            let target = into.dir().join(&name);
            if is_record && !target.exists() {
                let source = e.path();
                if let Some(bytes) = read_regular(&source, crate::front::hook::MAX_SESSION_BYTES)
                    .map_err(io(&source))?
                {
                    write_atomic(&target, &bytes).map_err(io(&target))?;
                }
            }
        }
        Ok(())
    }

    fn write(&self, pin: &Pin) -> Result<(), PinError> {
        let path = self.pin_path();
        let io = |source| PinError::Io {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&self.0).map_err(io)?;
        let bytes = serde_json::to_vec_pretty(pin).map_err(|e| PinError::Format {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        write_atomic(&path, &bytes).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogSigner, RootHash};
    use crate::record::WriterKey;

    #[test]
    fn the_pin_advances_only_forward_and_refuses_another_key() {
        let dir = tempfile::tempdir().unwrap();
        let st = StateDir::new(dir.path().join("s"));
        assert_eq!(st.pinned_for("x").unwrap(), Vec::<Vec<u8>>::new());
        let s = LogSigner::new("test.example/pin", WriterKey::for_label("pin/log")).unwrap();
        let v = s.verifier();
        let c3 = v.verify(&s.sign(3, &RootHash([3; 32]))).unwrap();
        let c5 = v.verify(&s.sign(5, &RootHash([5; 32]))).unwrap();
        st.advance(&s.vkey(), &c5).unwrap();
        st.advance(&s.vkey(), &c3).unwrap();
        assert_eq!(st.pinned_for(&s.vkey()).unwrap(), vec![c5.note().to_vec()]);
        let other = LogSigner::new("test.example/pin", WriterKey::for_label("pin/other")).unwrap();
        assert!(matches!(
            st.pinned_for(&other.vkey()),
            Err(PinError::IdentityChanged { .. })
        ));
        assert!(matches!(
            st.advance(&other.vkey(), &c5),
            Err(PinError::IdentityChanged { .. })
        ));
        std::fs::write(st.pin_path(), b"{}").unwrap();
        assert!(matches!(st.load(), Err(PinError::Format { .. })));
    }
}
