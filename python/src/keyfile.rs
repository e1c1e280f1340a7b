//! The key file of a file ledger (`LEDGER.key`) as the front's key source, shared with the
//! hooks and the CLI under the key-file lock.

use memlineage::front::{FrontError, Keys};
use memlineage::record::Role;
use std::collections::HashMap;
use std::path::PathBuf;

/// Keys in the ledger's key file (`LEDGER.key`), read afresh for a principal not seen yet and
/// saved as soon as one is added, so that a long-lived process shares the file with the hooks
/// and the CLI (the caller holds the key-file lock).
#[derive(Debug)]
pub struct LockedKeyFile {
    path: PathBuf,
    cache: HashMap<String, (Role, [u8; 32])>,
}

impl LockedKeyFile {
    /// The key file at `path`.
    pub fn new(path: PathBuf) -> Self {
        LockedKeyFile {
            path,
            cache: HashMap::new(),
        }
    }
}

impl Keys for LockedKeyFile {
    fn key(
        &mut self,
        name: &str,
        role: Role,
    ) -> Result<(memlineage::record::WriterKey, bool), FrontError> {
        use memlineage::front::keystore::{KeyStore, KeyStoreError};
        use memlineage::record::WriterKey;
        match self.cache.get(name) {
            Some((r, _)) if *r != role => {
                return Err(KeyStoreError::RoleMismatch {
                    name: name.to_string(),
                }
                .into())
            }
            Some((_, seed)) => return Ok((WriterKey::from_seed(seed), false)),
            None => {}
        }
        let mut ks = KeyStore::load(&self.path)?;
        let (k, _, created) = ks.principal(name, Some(role))?;
        if created {
            ks.save(&self.path)?;
        }
        self.cache.insert(name.to_string(), (role, k.seed()));
        Ok((k, created))
    }
}
