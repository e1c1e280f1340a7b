//! Where a [`Front`](super::Front) gets the signing keys of its principals: the [`Keys`] trait
//! and its sources (a key file saved on every new principal, fresh keys in memory, keys derived
//! from names for tests).

use super::FrontError;
use crate::front::keystore::{KeyStore, KeyStoreError};
use crate::record::{Role, WriterKey};
use std::collections::HashMap;

/// Where the front gets signing keys for its principals.
pub trait Keys {
    /// The key of principal `name` with `role`, created if absent. Returns the key and whether
    /// it was created (so that a key file can be saved before the key is used).
    ///
    /// # Errors
    /// [`FrontError::Keys`] when `name` exists with another role or the store of keys fails.
    fn key(&mut self, name: &str, role: Role) -> Result<(WriterKey, bool), FrontError>;
}

impl Keys for KeyStore {
    fn key(&mut self, name: &str, role: Role) -> Result<(WriterKey, bool), FrontError> {
        let (k, _, created) = self.principal(name, Some(role))?;
        Ok((k, created))
    }
}

/// A key file ([`KeyStore`]) that is saved as soon as a principal is added to it, before the
/// new key signs anything (a bound key whose seed was lost could never write again).
#[derive(Debug)]
pub struct KeyFile {
    /// The keys.
    pub store: KeyStore,
    /// Where they are saved.
    pub path: std::path::PathBuf,
}

impl Keys for KeyFile {
    fn key(&mut self, name: &str, role: Role) -> Result<(WriterKey, bool), FrontError> {
        let (k, created) = self.store.key(name, role)?;
        if created {
            self.store.save(&self.path)?;
        }
        Ok((k, created))
    }
}

/// Fresh random keys per principal, kept in memory for the front's lifetime (an embedding
/// runtime that keeps its ledger in memory, or persists keys itself).
#[derive(Debug, Default)]
pub struct GeneratedKeys(pub HashMap<String, (Role, WriterKey)>);

impl Keys for GeneratedKeys {
    fn key(&mut self, name: &str, role: Role) -> Result<(WriterKey, bool), FrontError> {
        match self.0.get(name) {
            Some((r, _)) if *r != role => Err(KeyStoreError::RoleMismatch {
                name: name.to_string(),
            }
            .into()),
            Some((_, k)) => Ok((k.clone(), false)),
            None => {
                let k = WriterKey::generate();
                self.0.insert(name.to_string(), (role, k.clone()));
                Ok((k, true))
            }
        }
    }
}

/// Keys derived from their names with [`WriterKey::for_label`] under a secret prefix: for tests
/// and examples only (anyone who knows the prefix can sign as any principal).
#[derive(Debug, Clone)]
pub struct DerivedKeys(pub String);

impl Keys for DerivedKeys {
    fn key(&mut self, name: &str, _role: Role) -> Result<(WriterKey, bool), FrontError> {
        Ok((WriterKey::for_label(&format!("{}/{name}", self.0)), false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A principal keeps its generated key: the same key (and a usable one) each time its name
    /// is asked for, `created` only the first time, and another role is refused.
    #[test]
    fn generated_keys_are_kept_per_principal() {
        let mut keys = GeneratedKeys::default();
        let (first, created) = keys.key("tool:read_file", Role::Tool).unwrap();
        assert!(created);
        let (again, created) = keys.key("tool:read_file", Role::Tool).unwrap();
        assert!(!created);
        assert_eq!(first.key_id(), again.key_id());
        assert_eq!(first.sign(b"m"), again.sign(b"m"));
        let (other, _) = keys.key("tool:fetch", Role::Tool).unwrap();
        assert_ne!(first.key_id(), other.key_id());
        assert!(keys.key("tool:read_file", Role::Agent).is_err());
    }
}
