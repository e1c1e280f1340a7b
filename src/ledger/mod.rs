//! [`Ledger`]: the one façade an agent runtime holds.
//!
//! It owns a [`Store`], the log key, the label index (the rows it verified by their tags,
//! `spec/lineage.md` §5.1) and the keyring, and runs the data path: `append` (check, sign,
//! label, hash into the tree, store) → `checkpoint` (sign the tree head) → `prove` →
//! `retrieve` / `gate`.

use crate::lineage::lease::LeaseBook;
use crate::lineage::state::{Content, Known, LineageState};
use crate::lineage::{Label, LabelPolicy};
use crate::log::{LogSigner, LogVerifier, VerifiedCheckpoint};
use crate::record::{
    self, parse_unverified, EntryId, Hash32, KeyId, Kind, PublicKey, RecordError, Role, SignedEntry,
};
use crate::store::{EntryMeta, Store, META_RULE, META_TAU, META_VKEY};

mod append;
mod context;
mod edges;
mod effects;
mod error;
mod heads;
mod index;
#[cfg(feature = "postgres")]
mod integrate;
mod origin;
mod prove;
mod prove_label;
mod quarantine_seal;
mod refresh;
pub mod retrieve;
mod rows;
mod seal;
#[cfg(feature = "postgres")]
mod sequenced;
mod signed;
mod view;

#[cfg(feature = "postgres")]
pub(crate) use append::Admitted;
pub use append::{Appended, Draft, PARALLEL_MIN};
pub use context::ContextEntry;
use effects::earliest;
pub use error::LedgerError;
use index::{LabelIndex, Meta};
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use integrate::Integrator;
pub use prove::StoreSource;
pub use rows::{check_rows_chain, RowsCheck, RowsError};
use seal::{Chain, SealKey, Sealed};
pub use seal::{SealError, SealStream, META_SEAL};
pub use signed::ParametersError;

/// A provenance ledger over a [`Store`].
pub struct Ledger<S: Store> {
    store: S,
    signer: LogSigner,
    index: LabelIndex,
    /// The keyring, tombstones, quarantine and leases: what the entries of the first `size`
    /// leaves made true, every one of them admitted through [`LineageState`]
    /// (`spec/lineage.md` §5.2).
    state: LineageState,
    size: u64,
    checkpoint: Option<VerifiedCheckpoint>,
    /// A quarantine rescan that has not completed (a read failed): every entry after this leaf
    /// counts as quarantined until it does (fail closed), and the next refresh retries it.
    pending_rescan: Option<u64>,
    /// The size and effects chain of the last quarantine snapshot this handle stored or
    /// restored (`spec/lineage.md` §5.3).
    quarantine_saved: Option<(u64, Chain)>,
    /// The HMAC key of the label seal, derived from the log key (`spec/lineage.md` §5.1).
    seal_key: SealKey,
    /// Checkpoint notes the caller kept outside the store ([`OpenOptions::checkpoints`]): they
    /// count among the signed heads a new one must extend.
    known: Vec<Vec<u8>>,
    /// The effects chain over the rows with effects among the first `size` entries.
    effects: Chain,
    /// How many of the first entries the store holds with row tags this handle checked the
    /// seal of; entries `sealed..size` are in the index as unsealed.
    sealed: u64,
    /// Entries whose signature this handle verified (in [`Ledger::get`]): their bytes, found
    /// again by their leaf hash, are parsed without verifying the signature again. At most
    /// [`MAX_VERIFIED_IDS`] ids (cleared when full); a poisoned lock only means verifying again.
    verified: std::sync::Mutex<crate::record::IdSet<EntryId>>,
    /// Entries [`Ledger::retrieve`] verified under the current checkpoint, rendered
    /// (`spec/log.md` §11).
    pub(crate) warm: crate::ledger::retrieve::Warm,
    /// Entries the origin check verified, kept between checks (`spec/gate.md` §3.3).
    pub(crate) origin: origin::OriginMemory,
    /// The signed parents and kind of entries [`Ledger::get`] verified, for the untrusted
    /// path (`spec/lineage.md` §6); dropped with the verified ids.
    edge_memory: edges::EdgeMemory,
    /// The rows-chain check this handle's writes wait for ([`Ledger::hold_writes`]); `None`
    /// when none is held (none asked for, or it passed).
    rows_hold: Option<RowsCheck>,
    /// This handle among every handle of the process ([`Ledger::instance`]).
    instance: u64,
    /// Signed heads this handle verified, checked against the store at every refresh.
    heads: heads::Heads,
}

/// Most entry ids [`Ledger::get`] remembers as verified (32 MiB of ids and more of set).
const MAX_VERIFIED_IDS: usize = 1 << 20;

impl<S: Store> Ledger<S> {
    /// Creates a ledger in an empty store, recording the log's verifier key and `policy`.
    ///
    /// # Errors
    /// [`LedgerError::NotEmpty`] when the store already holds entries or settings.
    pub fn create(
        mut store: S,
        signer: LogSigner,
        policy: LabelPolicy,
    ) -> Result<Self, LedgerError> {
        if store.tree_size()? != 0 || store.meta(META_VKEY)?.is_some() {
            return Err(LedgerError::NotEmpty);
        }
        store.set_meta(META_VKEY, &signer.vkey())?;
        store.set_meta(META_TAU, &policy.tau.millionths().to_string())?;
        store.set_meta(META_RULE, policy.weak_rule.name())?;
        // The checkpoint of the empty tree signs the parameters (`spec/lineage.md` §2.1): from
        // now on a handle believes the stored settings only when they are the signed ones.
        let opts = OpenOptions {
            adopt_stored_parameters: true,
            ..OpenOptions::default()
        };
        let mut ledger = Self::open_with(store, signer, opts)?;
        ledger.checkpoint()?;
        Ok(ledger)
    }

    /// Opens an existing ledger. Reads the label seal and the entries with effects (keyring
    /// bindings, tombstones, flags, leases), not every entry: labels are looked up by id when
    /// needed and believed when their row tag verifies (`spec/lineage.md` §5.1). Recomputes no
    /// label, hash or signature of sealed entries (a full check is [`crate::audit`]'s job).
    /// Cost: O(entries with effects + entries after the seal), plus, while a flag is active,
    /// the entries after its source (the quarantine rescan).
    ///
    /// # Errors
    /// [`LedgerError::WrongLogKey`] when `signer` is not the key the ledger was created with;
    /// [`LedgerError::NotALedger`] when settings are missing;
    /// [`LedgerError::BehindSignedCheckpoint`] when the store holds fewer entries than the
    /// checkpoint kept outside it ([`Store::durable_checkpoint`]: entries this log signed were
    /// lost, e.g. with a corrupted SQLite WAL; appending would sign a second root for a size
    /// already signed), and checkpoint errors when that note does not verify under the log key;
    /// store and decode errors.
    pub fn open(store: S, signer: LogSigner) -> Result<Self, LedgerError> {
        Self::open_with(store, signer, OpenOptions::default())
    }

    /// [`Ledger::open`] with what the caller kept outside the store ([`OpenOptions`]): signed
    /// checkpoints (a front's pin) that the store must not be behind and that every new
    /// checkpoint must extend, and whether stored parameters no checkpoint signs may be
    /// adopted.
    ///
    /// # Errors
    /// As [`Ledger::open`]; [`LedgerError::BehindSignedCheckpoint`] also against
    /// `opts.checkpoints`.
    pub fn open_with(store: S, signer: LogSigner, opts: OpenOptions) -> Result<Self, LedgerError> {
        let vkey = store.meta(META_VKEY)?.ok_or(LedgerError::NotALedger)?;
        if vkey != signer.vkey() {
            return Err(LedgerError::WrongLogKey);
        }
        let found = signed::signed_heads(&store, &signer.verifier(), &opts.checkpoints)?;
        let newest = signed::newest_of(&found);
        // The heads verified here need not be verified again by the first refresh.
        let mut heads = heads::Heads::default();
        for c in &found {
            heads.remember(c);
        }
        if let Some(c) = &newest {
            let stored = store.tree_size()?;
            if stored < c.size() {
                return Err(LedgerError::BehindSignedCheckpoint {
                    signed: c.size(),
                    stored,
                });
            }
        }
        let policy = signed::parameters(&store, newest.as_ref(), opts.adopt_stored_parameters)?;
        let seal_key = SealKey::of(&signer);
        let state = LineageState::new(
            signer.key_id(),
            signer.origin(),
            policy,
            LeaseBook::default(),
        );
        let mut ledger = Ledger {
            store,
            signer,
            index: LabelIndex::default(),
            state,
            size: 0,
            checkpoint: None,
            pending_rescan: None,
            quarantine_saved: None,
            seal_key,
            known: opts.checkpoints,
            effects: Chain::EMPTY,
            sealed: 0,
            verified: Default::default(),
            warm: Default::default(),
            origin: Default::default(),
            edge_memory: Default::default(),
            rows_hold: None,
            instance: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
            heads,
        };
        ledger.load_index()?;
        Ok(ledger)
    }

    fn load_index(&mut self) -> Result<(), LedgerError> {
        self.refresh()?;
        Ok(())
    }

    /// What this handle can believe about the entry `id`: its own records, else the store's
    /// row if its tag verifies. `None` when the entry is not in this handle's view of the log
    /// (not stored, or stored after its last refresh).
    ///
    /// # Errors
    /// [`SealError::Row`] when the store's row for `id` does not verify (fail closed: callers
    /// count the entry as External); store errors.
    fn lookup(&self, id: &EntryId) -> Result<Option<Meta>, LedgerError> {
        self.known().lookup(id)
    }

    /// The rows this handle believes, as the lineage state asks for them ([`Known`]).
    fn known(&self) -> Rows<'_, S> {
        Rows {
            store: &self.store,
            index: &self.index,
            seal_key: &self.seal_key,
            sealed: self.sealed,
        }
    }

    /// Stores row tags for the entries `sealed..size` (verified and labelled from their signed
    /// bytes: rows after the stored seal, integrated sequenced entries) and a seal over all
    /// `size` entries, in one store transaction. A no-op when there are none.
    ///
    /// # Errors
    /// Store errors, and [`crate::store::StoreError::Corrupt`] if an entry of the range is not
    /// one this handle verified (nothing is changed in the handle then).
    pub(super) fn seal_pending(&mut self) -> Result<(), LedgerError> {
        if self.sealed >= self.size {
            return Ok(());
        }
        self.writable()?;
        // Every entry of the range was verified and recorded by the refresh that read it; a
        // gap would let the next seal claim untagged rows, so it refuses instead.
        let Some(rows) = self.index.unsealed_range(self.sealed, self.size) else {
            return Err(crate::store::StoreError::Corrupt {
                reason: format!(
                    "entries {}..{} are not all verified by this handle: not sealing them",
                    self.sealed, self.size
                ),
            }
            .into());
        };
        let tags: Vec<(u64, [u8; 32])> = rows
            .iter()
            .map(|(i, id, kind, label)| (*i, self.seal_key.row_tag(*i, id, *kind, *label)))
            .collect();
        let seal = Sealed {
            size: self.size,
            effects: self.effects,
        };
        self.store
            .set_tags(&tags, META_SEAL, &self.seal_key.seal(&seal))?;
        self.sealed = self.size;
        self.index.sealed_below(self.size);
        Ok(())
    }

    /// An HMAC-SHA-256 tag over `domain || message` under a key derived from the log's secret
    /// key (the label seal's key, `spec/lineage.md` §5.1): for records kept beside the store
    /// that only a holder of the log key may write, such as session files (`spec/hooks.md` §3).
    pub fn seal_tag(&self, domain: &[u8], message: &[u8]) -> [u8; 32] {
        self.seal_key.tag(domain, message)
    }

    /// [`Ledger::seal_tag`] of a message fed in parts: `seal_stream(d)`, then
    /// [`SealStream::update`] with `m1`, `m2`, … and [`SealStream::finish`] give
    /// `seal_tag(d, m1 || m2 || …)`.
    pub fn seal_stream(&self, domain: &[u8]) -> SealStream {
        self.seal_key.stream(domain)
    }

    /// The effects chain and stored seal over the first `size` entries extended by `extra`
    /// (entries about to be stored, in leaf order from `size`, as `(id, kind, label)`), and
    /// each extra entry's row tag.
    pub(crate) fn seal_after(
        &self,
        extra: impl IntoIterator<Item = (EntryId, Kind, Label)>,
    ) -> (Chain, String, Vec<[u8; 32]>) {
        let mut effects = self.effects;
        let mut tags = Vec::new();
        let mut index = self.size;
        for (id, kind, label) in extra {
            if kind.has_effects() {
                effects.push(index, &id, kind);
            }
            tags.push(self.seal_key.row_tag(index, &id, kind, label));
            index += 1;
        }
        let seal = Sealed {
            size: index,
            effects,
        };
        (effects, self.seal_key.seal(&seal), tags)
    }

    /// The labelling parameters (τ, weak-parent rule) fixed at creation (`spec/lineage.md`
    /// §2): the [`LabelPolicy`], not the tool-call [`crate::gate::Policy`] a
    /// [`crate::Front`] holds ([`crate::Front::policy`]).
    pub fn label_policy(&self) -> LabelPolicy {
        self.state.policy()
    }

    /// The lineage state: keyring, tombstones, quarantine and leases (`spec/lineage.md`
    /// §5.2).
    pub fn state(&self) -> &LineageState {
        &self.state
    }

    /// The log's verifier key in C2SP signed-note form.
    pub fn vkey(&self) -> String {
        self.signer.vkey()
    }

    /// A verifier for this ledger's checkpoints.
    ///
    /// # Errors
    /// Never in practice (the key was valid at creation); typed for safety.
    pub fn verifier(&self) -> Result<LogVerifier, LedgerError> {
        Ok(LogVerifier::from_vkey(&self.signer.vkey())?)
    }

    /// Checks that the store's entry rows chain: as many rows as entries, none missing in the
    /// middle (a store-only attacker's deleted row). O(n) ([`check_rows_chain`]): the CLI's
    /// writing commands and the MCP server run it once when they open a ledger, and the hook
    /// server beside its start-up ([`Ledger::hold_writes`]), so that nothing is appended into
    /// a store whose rows do not chain (issue 25).
    ///
    /// # Errors
    /// [`LedgerError::Rows`] ([`RowsError::Deleted`]) naming the counts; store errors.
    pub fn check_rows_chain(&self) -> Result<(), LedgerError> {
        check_rows_chain(&self.store)
    }

    /// Number of entries (tree size).
    pub fn len(&self) -> u64 {
        self.size
    }

    /// Whether the ledger has no entries.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The store, for read access.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Decodes and verifies several entries' bytes with batch signature checks and the
    /// keyring's decompressed keys ([`record::decode_on_all_cores`]). Same answers, in the same order,
    /// as decoding one by one.
    pub fn decode_many(&self, items: &[&[u8]]) -> Vec<Result<SignedEntry, RecordError>> {
        record::decode_on_all_cores(items, self.key_lookup())
    }

    /// The decompressed key of a bound principal.
    fn cached_key(&self, key: &KeyId) -> Option<PublicKey> {
        self.state.principal(key).and_then(|p| p.key)
    }

    /// A thread-shareable lookup of bound principals' decompressed keys (for checks run on
    /// all cores while the store, which need not be shareable, stays on this thread).
    pub(crate) fn key_lookup(&self) -> impl Fn(&KeyId) -> Option<PublicKey> + Sync + '_ {
        let state = &self.state;
        move |key| state.principal(key).and_then(|p| p.key)
    }

    /// The role and name bound to `key`, if any.
    pub fn principal(&self, key: &KeyId) -> Option<(Role, &str)> {
        self.state.principal(key).map(|p| (p.role, p.name.as_str()))
    }

    /// The names of the principals bound with `role`, sorted (`hook doctor` lists the tools a
    /// ledger has seen: principals `tool:<name>`).
    pub fn principal_names(&self, role: Role) -> Vec<String> {
        let mut names: Vec<String> = self
            .state
            .principals()
            .filter(|p| p.role == role)
            .map(|p| p.name.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The label of `id`, `None` if the entry is not in the log (as this handle last saw it).
    /// O(1): one indexed store read and one HMAC the first time, memory afterwards. A stored
    /// row whose tag does not verify counts as External (fail closed, `spec/lineage.md` §5.1).
    pub fn label(&self, id: &EntryId) -> Option<Label> {
        match self.lookup(id) {
            Ok(m) => m.map(|m| m.label),
            Err(_) => Some(Label::External),
        }
    }

    /// A number no other handle of this process has: what the fronts keep judgements of a
    /// session under, beside the store's content epoch (`spec/hooks.md` §4.7), so that a
    /// judgement this handle settled is never used by another (a ledger replaced under a front,
    /// or reopened: a fresh connection's `PRAGMA data_version` repeats the old one's).
    pub(crate) fn instance(&self) -> u64 {
        self.instance
    }

    /// The label of `id` as this handle already verified it, without reading the store: a
    /// label that cannot change under this handle (`spec/lineage.md` §5.1). `None` when the
    /// handle holds none for it (never read, not in the log, or a row whose tag did not
    /// verify): ask [`Ledger::label`].
    pub fn settled_label(&self, id: &EntryId) -> Option<Label> {
        self.index.known(id).map(|m| m.label)
    }

    /// The count and head of the effects chain this handle admitted (moves with every
    /// binding, tombstone, flag, release and lease it learns of).
    pub(crate) fn effects_marker(&self) -> (u64, [u8; 32]) {
        (self.effects.count, self.effects.head)
    }

    /// Whether `id` has been tombstoned.
    pub fn is_tombstoned(&self, id: &EntryId) -> bool {
        self.state.is_tombstoned(id)
    }

    /// The leaf index of `id` (`None` also when its stored row does not verify).
    pub fn index_of(&self, id: &EntryId) -> Option<u64> {
        self.lookup(id).ok().flatten().map(|m| m.index)
    }

    /// Reads the entry `id` from the store and verifies it: its leaf hash every time, its
    /// signature the first time this handle reads it (later reads of bytes with the same leaf
    /// hash are the same bytes, `record::reparse_verified`).
    ///
    /// # Errors
    /// [`LedgerError::UnknownEntry`]; [`LedgerError::Seal`] when the stored row of `id` does not
    /// verify; [`LedgerError::Missing`] when no bytes are stored for it;
    /// [`LedgerError::NotTheEntry`] when the bytes stored at its index are another entry's;
    /// [`LedgerError::Record`] when stored bytes do not verify.
    pub fn get(&self, id: &EntryId) -> Result<SignedEntry, LedgerError> {
        let (index, bytes) = self.stored_bytes(id)?;
        self.verify_stored(id, index, &bytes)
    }

    /// The leaf index of `id` and the bytes stored there, not yet verified: the first steps of
    /// [`Ledger::get`].
    ///
    /// # Errors
    /// [`LedgerError::UnknownEntry`], [`LedgerError::Seal`], [`LedgerError::Missing`], store
    /// errors, as [`Ledger::get`].
    fn stored_bytes(&self, id: &EntryId) -> Result<(u64, Vec<u8>), LedgerError> {
        let m = self.lookup(id)?.ok_or(LedgerError::UnknownEntry(*id))?;
        let bytes = self
            .store
            .entry_bytes(m.index)?
            .ok_or(LedgerError::Missing(*id))?;
        Ok((m.index, bytes))
    }

    /// The rest of [`Ledger::get`]: `bytes`, stored at leaf `index` for `id`, verified.
    fn verify_stored(
        &self,
        id: &EntryId,
        index: u64,
        bytes: &[u8],
    ) -> Result<SignedEntry, LedgerError> {
        if self.is_verified(id) {
            // Bytes with this leaf hash are the bytes verified before; others are not the entry.
            return record::reparse_verified(bytes, *id)?
                .ok_or(LedgerError::NotTheEntry { id: *id, index });
        }
        let e = SignedEntry::decode_with_keys(bytes, |k| self.cached_key(k))?;
        if e.id() != *id {
            return Err(LedgerError::NotTheEntry { id: *id, index });
        }
        self.remember_verified([*id]);
        Ok(e)
    }

    /// Whether this handle verified the signature of `id` (or appended it): bytes that hash
    /// to `id` are then those bytes ([`Ledger::get`]).
    pub(crate) fn is_verified(&self, id: &EntryId) -> bool {
        self.verified.lock().is_ok_and(|v| v.contains(id))
    }

    /// Forgets the ids [`Ledger::remember_verified`] kept.
    pub(crate) fn forget_verified_ids(&self) {
        if let Ok(mut v) = self.verified.lock() {
            v.clear();
        }
        self.edge_memory.forget();
    }

    /// Remembers `ids` as verified by this handle (at most [`MAX_VERIFIED_IDS`]: the set is
    /// cleared when full, which only means verifying again).
    pub(crate) fn remember_verified(&self, ids: impl IntoIterator<Item = EntryId>) {
        if let Ok(mut v) = self.verified.lock() {
            for id in ids {
                if v.len() >= MAX_VERIFIED_IDS {
                    v.clear();
                }
                v.insert(id);
            }
        }
    }

    /// The entry at leaf index `index`, verified: its signature unless its bytes hash to an
    /// entry this handle already verified or appended ([`Ledger::get`]), and that it is the
    /// entry this handle believes at that index (its row, found by id, is at `index` and its
    /// tag verifies, `spec/lineage.md` §5.1). Signed bytes do not sign their position: the
    /// bytes of another entry of the log stored at `index` verify, and would otherwise be
    /// taken for the entry there (attack review 47: a session's catch-up skipped the injected
    /// read whose bytes were replaced by a keyring binding's).
    ///
    /// # Errors
    /// As [`Ledger::get`]; [`LedgerError::NotTheEntry`] when the bytes stored at `index` are
    /// not the entry this handle believes there.
    pub fn get_by_index(&self, index: u64) -> Result<SignedEntry, LedgerError> {
        let bytes = self
            .store
            .entry_bytes(index)?
            .ok_or(LedgerError::IndexOutOfRange {
                index,
                size: self.size,
            })?;
        // Bytes whose leaf hash this handle verified (or appended) are those bytes.
        let id = EntryId::of_cose(&bytes);
        if self.index_of(&id) != Some(index) {
            return Err(LedgerError::NotTheEntry { id, index });
        }
        if self.is_verified(&id) {
            if let Some(e) = record::reparse_verified(&bytes, id)? {
                return Ok(e);
            }
        }
        Ok(SignedEntry::decode_with_keys(&bytes, |k| {
            self.cached_key(k)
        })?)
    }

    /// The stored content of `entry`, if not redacted, checked against the signed content hash
    /// (field 3): the store is trusted for availability only.
    ///
    /// # Errors
    /// [`LedgerError::ContentTampered`] when the stored bytes do not hash to the signed
    /// content hash; store errors.
    pub fn content(&self, entry: &SignedEntry) -> Result<Option<Vec<u8>>, LedgerError> {
        let want = entry.entry().content_hash;
        match self.store.content(&want)? {
            Some(bytes) if Hash32::digest(&bytes) != want => {
                Err(LedgerError::ContentTampered(entry.id()))
            }
            other => Ok(other),
        }
    }
}

/// The rows a handle believes (`spec/lineage.md` §5.1 step 3): its own records, else the
/// store's row for an id if its index is below the seal and its tag verifies.
struct Rows<'a, S: Store> {
    store: &'a S,
    index: &'a LabelIndex,
    seal_key: &'a SealKey,
    sealed: u64,
}

impl<S: Store> Rows<'_, S> {
    /// What the handle can believe about `id` : `None` when
    /// it is not in the handle's view of the log.
    ///
    /// # Errors
    /// [`SealError::Row`] when the store's row for `id` does not verify; store errors.
    fn lookup(&self, id: &EntryId) -> Result<Option<Meta>, LedgerError> {
        if let Some(m) = self.index.known(id) {
            return Ok(Some(m));
        }
        let Some(row) = self.store.meta_of(id)? else {
            return Ok(None);
        };
        if row.index >= self.sealed {
            return Ok(None);
        }
        if row.id != *id || !self.seal_key.verifies(&row) {
            return Err(SealError::Row { index: row.index }.into());
        }
        let m = Meta {
            index: row.index,
            label: row.label,
        };
        self.index.remember(*id, m);
        Ok(Some(m))
    }
}

impl<S: Store> Known for Rows<'_, S> {
    /// A row that does not verify counts as External (fail closed).
    fn label_of(&self, id: &EntryId) -> Option<Label> {
        match self.lookup(id) {
            Ok(m) => m.map(|m| m.label),
            Err(_) => Some(Label::External),
        }
    }

    fn index_of(&self, id: &EntryId) -> Option<u64> {
        self.lookup(id).ok().flatten().map(|m| m.index)
    }
}

/// Reads the verifier key recorded in a ledger's store (for offline tools that were not given
/// one; an auditor should prefer a key obtained out of band).
///
/// # Errors
/// [`LedgerError::NotALedger`] when absent; store errors.
pub fn stored_vkey<S: Store>(store: &S) -> Result<String, LedgerError> {
    store.meta(META_VKEY)?.ok_or(LedgerError::NotALedger)
}

/// Reads the labelling parameters recorded in a ledger's store.
///
/// # Errors
/// [`LedgerError::NotALedger`] when absent or malformed; store errors.
pub fn stored_policy<S: Store>(store: &S) -> Result<LabelPolicy, LedgerError> {
    signed::stored_parameters(store)
}

/// What [`Ledger::open_with`] takes from outside the store.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct OpenOptions {
    /// Signed checkpoint notes of this log kept where the store's writers cannot reach (a
    /// front's pin, `spec/hooks.md` §6.2): the store must hold at least as many entries as
    /// the newest, and a new checkpoint must extend it. Each must verify under the log key.
    pub checkpoints: Vec<Vec<u8>>,
    /// Believe stored labelling parameters that no checkpoint signs, even when they are not
    /// the defaults, and sign them with the next checkpoint: the operator's upgrade of a
    /// ledger written before parameters were signed (`spec/lineage.md` §2.1). Off by default.
    pub adopt_stored_parameters: bool,
}
