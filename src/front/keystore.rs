//! A local key file for the CLI: the log key and the principals' signing keys, as JSON.
//!
//! ```json
//! {"origin": "memlineage.local/ledger", "log_seed": "<64 hex>", "log_public": "<64 hex>",
//!  "principals": {"user": {"role": "user", "seed": "<64 hex>", "public": "<64 hex>"}}}
//! ```
//! Seeds are secret: the file is written with mode 0600 and never inside the ledger database.
//! An embedding runtime would keep keys in its own secret store instead.

use crate::log::{CheckpointError, LogSigner};
use crate::record::{Role, WriterKey};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The CLI's key file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyStore {
    /// The log's origin (checkpoint name, e.g. `memlineage.local/ledger`).
    pub origin: String,
    /// The log key's seed, 64 hex digits.
    log_seed: String,
    /// The log key's public key, 64 hex digits: checked against the seed on load.
    log_public: String,
    /// Principals by name.
    principals: BTreeMap<String, PrincipalKey>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PrincipalKey {
    role: String,
    seed: String,
    /// The public key derived from `seed`, checked on load.
    public: String,
}

/// Largest key file read, in bytes (about 10,000 principals).
pub const MAX_KEY_FILE_BYTES: u64 = 4 << 20;

impl PrincipalKey {
    /// The principal's role, or [`KeyStoreError::Format`] naming a role that does not exist.
    fn role(&self) -> Result<Role, KeyStoreError> {
        Role::from_name(&self.role).ok_or_else(|| KeyStoreError::Format {
            reason: format!("unknown role {}", self.role),
        })
    }
}

impl KeyStore {
    /// A new key store with a fresh log key.
    pub fn generate(origin: &str) -> Self {
        let log = WriterKey::generate();
        KeyStore {
            origin: origin.to_string(),
            log_seed: hex::encode(log.seed()),
            log_public: hex::encode(log.key_id().0),
            principals: BTreeMap::new(),
        }
    }

    /// Reads a key file.
    ///
    /// # Errors
    /// [`KeyStoreError`] for I/O, JSON or seed problems. Does not panic.
    pub fn load(path: &Path) -> Result<Self, KeyStoreError> {
        let io = |e| KeyStoreError::Io {
            path: path.display().to_string(),
            source: e,
        };
        let bytes = crate::store::durable::read_regular(path, MAX_KEY_FILE_BYTES)
            .map_err(io)?
            .ok_or_else(|| io(std::io::ErrorKind::NotFound.into()))?;
        let text = String::from_utf8(bytes).map_err(|e| KeyStoreError::Format {
            reason: e.to_string(),
        })?;
        let ks: KeyStore = serde_json::from_str(&text).map_err(|e| KeyStoreError::Format {
            reason: e.to_string(),
        })?;
        check_pair("log", &ks.log_seed, &ks.log_public)?;
        for (name, p) in &ks.principals {
            check_pair(name, &p.seed, &p.public)?;
            p.role()?;
        }
        Ok(ks)
    }

    /// Writes the key file with mode 0600 (on Unix) by [`crate::store::durable::write_atomic`]:
    /// an unguessably named temporary created exclusively, never through a symbolic link,
    /// synced, renamed over `path`, then the directory synced. So a crash leaves the old file or
    /// the new one, never half of one, and the rename survives a power loss; and a store-only
    /// attacker who plants a link where a fixed temporary name would be cannot have the seeds
    /// written into a file of theirs (`spec/storage.md` §6.1).
    ///
    /// # Errors
    /// [`KeyStoreError::Io`].
    pub fn save(&self, path: &Path) -> Result<(), KeyStoreError> {
        let io = |e| KeyStoreError::Io {
            path: path.display().to_string(),
            source: e,
        };
        let text = serde_json::to_string_pretty(self).map_err(|e| KeyStoreError::Format {
            reason: e.to_string(),
        })?;
        // The directory is synced after the rename: the append that binds a new key is
        // acknowledged only once the key file that can sign for it is on disk.
        crate::store::durable::write_atomic(path, text.as_bytes()).map_err(io)
    }

    /// The log signer.
    ///
    /// # Errors
    /// [`KeyStoreError::Checkpoint`] when the origin is not a valid signed-note key name.
    pub fn log_signer(&self) -> Result<LogSigner, KeyStoreError> {
        let seed = parse_seed(&self.log_seed)?;
        Ok(LogSigner::new(&self.origin, WriterKey::from_seed(&seed))?)
    }

    /// The key of principal `name`, creating it with `role` if absent. Returns the key, its
    /// role, and whether it was created.
    ///
    /// # Errors
    /// [`KeyStoreError::RoleMismatch`] when `name` exists with another role.
    pub fn principal(
        &mut self,
        name: &str,
        role: Option<Role>,
    ) -> Result<(WriterKey, Role, bool), KeyStoreError> {
        if let Some(p) = self.principals.get(name) {
            let have = p.role()?;
            if role.is_some_and(|r| r != have) {
                return Err(KeyStoreError::RoleMismatch {
                    name: name.to_string(),
                });
            }
            return Ok((WriterKey::from_seed(&parse_seed(&p.seed)?), have, false));
        }
        let role = role.ok_or_else(|| KeyStoreError::UnknownPrincipal {
            name: name.to_string(),
        })?;
        let key = WriterKey::generate();
        self.principals.insert(
            name.to_string(),
            PrincipalKey {
                role: role.name().to_string(),
                seed: hex::encode(key.seed()),
                public: hex::encode(key.key_id().0),
            },
        );
        Ok((key, role, true))
    }
}

/// A seed must derive the public key stored beside it (RFC 8032 §5.1.5): a mismatch means a
/// damaged or tampered key file, and signing with it would produce entries under another key.
fn check_pair(name: &str, seed: &str, public: &str) -> Result<(), KeyStoreError> {
    let key = WriterKey::from_seed(&parse_seed(seed)?);
    if hex::encode(key.key_id().0) != public.to_ascii_lowercase() {
        return Err(KeyStoreError::KeyMismatch {
            name: name.to_string(),
        });
    }
    Ok(())
}

fn parse_seed(s: &str) -> Result<[u8; 32], KeyStoreError> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(s, &mut out).map_err(|_| KeyStoreError::Format {
        reason: "a seed is 64 hex digits".into(),
    })?;
    Ok(out)
}

/// Key file problems.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyStoreError {
    /// Reading or writing the file failed.
    #[error("key file {path}: {source}")]
    Io {
        /// The key file, as displayed.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a key file (bad JSON, bad seed, unknown role).
    #[error("key file: {reason}")]
    Format {
        /// What is wrong with it: the JSON parser's message, or what in the file is not valid.
        reason: String,
    },
    /// A principal used without a role that is not in the file yet.
    #[error("principal `{name}` unknown: give its role to create it")]
    UnknownPrincipal {
        /// The principal's name, as given.
        name: String,
    },
    /// A principal named with a role other than the one it has.
    #[error("principal `{name}` exists with another role")]
    RoleMismatch {
        /// The principal's name, as given.
        name: String,
    },
    /// A seed does not derive the public key stored beside it (damaged or tampered file).
    #[error("key file: the seed of `{name}` does not match its public key")]
    KeyMismatch {
        /// The principal whose seed it is.
        name: String,
    },
    /// The origin is not a valid checkpoint name.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store-only attacker plants a link at the name the temporary used to have
    /// (`LEDGER.key.tmp`), to a file of theirs anyone may write: the seeds never reach it, and
    /// the key file stays a regular file of mode 0600 (it became the attacker's link).
    #[cfg(unix)]
    #[test]
    fn a_link_at_the_temporary_name_never_receives_the_seeds() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.db.key");
        let theirs = dir.path().join("theirs");
        std::fs::write(&theirs, b"").unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o666)).unwrap();
        std::os::unix::fs::symlink(&theirs, dir.path().join("l.db.key.tmp")).unwrap();
        let ks = KeyStore::generate("test.example/log");
        ks.save(&path).unwrap();
        assert_eq!(
            std::fs::read(&theirs).unwrap(),
            b"",
            "seeds written through the link"
        );
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_file(), "{meta:?}");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(KeyStore::load(&path).unwrap().log_seed, ks.log_seed);
    }

    #[test]
    fn round_trip_and_seed_public_mismatch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.key");
        let mut ks = KeyStore::generate("test.example/log");
        let (user, role, created) = ks.principal("user", Some(Role::User)).unwrap();
        assert!(created);
        assert_eq!(role, Role::User);
        ks.save(&path).unwrap();
        let mut back = KeyStore::load(&path).unwrap();
        let (again, _, created) = back.principal("user", None).unwrap();
        assert!(!created);
        assert_eq!(again.key_id(), user.key_id());
        assert!(matches!(
            back.principal("user", Some(Role::Tool)),
            Err(KeyStoreError::RoleMismatch { .. })
        ));
        assert!(matches!(
            back.principal("nobody", None),
            Err(KeyStoreError::UnknownPrincipal { .. })
        ));
        // Swap the user's seed for another: the stored public key no longer matches.
        let text = std::fs::read_to_string(&path).unwrap();
        let seed = hex::encode(user.seed());
        let other = hex::encode(WriterKey::for_label("other").seed());
        std::fs::write(&path, text.replace(&seed, &other)).unwrap();
        let err = KeyStore::load(&path).unwrap_err();
        assert!(
            matches!(&err, KeyStoreError::KeyMismatch { name: n } if n == "user"),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "key file: the seed of `user` does not match its public key"
        );
        std::fs::write(&path, "{").unwrap();
        assert!(matches!(
            KeyStore::load(&path),
            Err(KeyStoreError::Format { .. })
        ));
    }
}
