//! Principals: writer keys, key ids and the roles a keyring binds them to (`spec/record.md` §5).

use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use std::fmt;

/// A writer's key id: its 32-byte Ed25519 public key (RFC 8032 §5.1.5 encoding).
///
/// Using the key itself as the COSE `kid` makes every entry checkable from its own bytes; the
/// keyring says which role the key has.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct KeyId(pub [u8; 32]);

impl KeyId {
    /// The Ed25519 verifying key. Rejects, in this order: a non-canonical encoding (y >= p,
    /// RFC 8032 §5.1.3 "decoding fails"), bytes that do not decompress to a curve point, and
    /// small-order points (weak keys, under which forgeries are trivial).
    ///
    /// # Errors
    /// [`super::RecordError::NonCanonicalKey`], [`super::RecordError::BadKey`],
    /// [`super::RecordError::WeakKey`]. Does not panic.
    pub fn verifying_key(&self) -> Result<VerifyingKey, super::RecordError> {
        // The checks are `public_key`'s (one rule for entry, binding and checkpoint keys).
        self.public_key()?;
        VerifyingKey::from_bytes(&self.0).map_err(|_| super::RecordError::BadKey)
    }

    /// The first 8 hex digits, for human-facing text.
    pub fn short(&self) -> String {
        hex::encode(&self.0[..4])
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({})", hex::encode(self.0))
    }
}

/// Whether the 255-bit little-endian y coordinate (sign bit cleared) is below
/// p = 2^255 - 19. The encodings with y >= p are p..=p+18 with either sign bit.
pub(super) fn is_canonical_y(b: &[u8; 32]) -> bool {
    let top = b[31] & 0x7f;
    !(top == 0x7f && b[1..31].iter().all(|&x| x == 0xff) && b[0] >= 0xed)
}

/// The role a keyring binds a principal to (`spec/record.md` §5 registry).
///
/// Writers with role [`Role::Tool`] or [`Role::External`] produce External entries
/// (`spec/lineage.md` §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Role {
    /// The log's own key: signs keyring entries and checkpoints.
    Log,
    /// A human user (prompts).
    User,
    /// The operator or system prompt.
    System,
    /// The agent itself (summaries, facts, tool calls).
    Agent,
    /// A tool whose output is recorded (untrusted).
    Tool,
    /// Any other outside source (untrusted).
    External,
}

impl Role {
    /// Wire code.
    pub fn code(self) -> u64 {
        match self {
            Role::Log => 0,
            Role::User => 1,
            Role::System => 2,
            Role::Agent => 3,
            Role::Tool => 4,
            Role::External => 5,
        }
    }

    /// The role with wire code `code`, if registered.
    pub fn from_code(code: u64) -> Option<Self> {
        Some(match code {
            0 => Role::Log,
            1 => Role::User,
            2 => Role::System,
            3 => Role::Agent,
            4 => Role::Tool,
            5 => Role::External,
            _ => return None,
        })
    }

    /// Lower-case name (`user`, `tool`, …).
    pub fn name(self) -> &'static str {
        match self {
            Role::Log => "log",
            Role::User => "user",
            Role::System => "system",
            Role::Agent => "agent",
            Role::Tool => "tool",
            Role::External => "external",
        }
    }

    /// Parses a name produced by [`Role::name`].
    pub fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "log" => Role::Log,
            "user" => Role::User,
            "system" => Role::System,
            "agent" => Role::Agent,
            "tool" => Role::Tool,
            "external" => Role::External,
            _ => return None,
        })
    }

    /// Whether entries written under this role are External whatever their parents.
    pub fn is_untrusted(self) -> bool {
        matches!(self, Role::Tool | Role::External)
    }
}

/// A keyring binding carried by a [`super::Kind::Keyring`] entry (payload field 10).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeyBinding {
    /// The principal's key.
    pub key: KeyId,
    /// Its role.
    pub role: Role,
    /// A human-readable name, e.g. `tool:read_file` (at most 256 bytes of UTF-8).
    pub name: String,
}

/// A principal's Ed25519 signing key (ed25519-dalek; zeroized on drop, each clone too). A clone
/// copies the secret and its public point: no scalar multiplication, where
/// [`WriterKey::from_seed`] computes the public key again (RFC 8032 §5.1.5).
#[derive(Clone)]
pub struct WriterKey {
    sk: SigningKey,
}

impl WriterKey {
    /// The key with this 32-byte RFC 8032 seed.
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        WriterKey {
            sk: SigningKey::from_bytes(seed),
        }
    }

    /// A deterministic key for tests, demos and the replay harness:
    /// seed = SHA-256("memlineage/test-key@v1" || label). Never use for real data.
    pub fn for_label(label: &str) -> Self {
        let mut h = Sha256::new();
        h.update(b"memlineage/test-key@v1");
        h.update(label.as_bytes());
        Self::from_seed(&h.finalize().into())
    }

    /// A fresh key from the operating system's randomness.
    pub fn generate() -> Self {
        let mut rng = rand_core::OsRng;
        WriterKey {
            sk: SigningKey::generate(&mut rng),
        }
    }

    /// The 32-byte seed (secret).
    pub fn seed(&self) -> [u8; 32] {
        self.sk.to_bytes()
    }

    /// This key's id (its public key).
    pub fn key_id(&self) -> KeyId {
        KeyId(self.sk.verifying_key().to_bytes())
    }

    /// The public key.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.sk.verifying_key()
    }

    /// Ed25519 signature over `msg` (RFC 8032 §5.1.6).
    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        self.sk.sign(msg).to_bytes()
    }

    /// The underlying ed25519-dalek key, for signed-note checkpoint signing.
    pub fn signing_key(&self) -> &SigningKey {
        &self.sk
    }
}

impl fmt::Debug for WriterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WriterKey({})", self.key_id().short())
    }
}
