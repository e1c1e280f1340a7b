//! [`Ledger`]: the one façade an agent runtime holds.
//!
//! It owns a [`Store`], the log key, the in-memory label index and the keyring, and runs the
//! data path: `append` (check, sign, label, hash into the tree, store) → `checkpoint` (sign the
//! tree head) → `prove` → `retrieve` / `gate`.

use crate::gate::{Decision, LineageView, Policy, ToolCall};
use crate::lineage::lease::{parse_lease_terms, LeaseBook, LeaseError};
use crate::lineage::quarantine::{Quarantine, QuarantineError, Reach, Rescan};
use crate::lineage::{Label, LabelPolicy, WeakRule};
use crate::log::{
    hashes_to_store, prove_inclusion, stored_hash_index, tree_root, CheckpointError,
    ConsistencyProof, HashSource, InclusionProof, LogError, LogSigner, LogVerifier, ProofBundle,
    ProofError, RootHash, VerifiedCheckpoint,
};
use crate::record::{
    parse_unverified, EntryId, Hash32, KeyBinding, KeyId, Kind, Parent, ProvEntry, PublicKey,
    RecordError, Role, SignedEntry, Weight, WriterKey,
};
use crate::store::{EntryMeta, NewEntry, Store, StoreError};
use std::collections::{HashMap, HashSet, VecDeque};

#[cfg(feature = "postgres")]
mod sequenced;

/// Meta keys a ledger keeps in its store.
const META_VKEY: &str = "log_vkey";
const META_TAU: &str = "tau_millionths";
const META_RULE: &str = "weak_rule";

/// Every setting key a ledger keeps in its store's `meta` (`spec/storage.md` §4.4), for tools
/// that copy a ledger between stores ([`crate::store::copy_ledger`]).
pub const META_KEYS: [&str; 3] = [META_VKEY, META_TAU, META_RULE];

/// What the ledger keeps in memory per entry: 16 bytes plus the map's key and overhead.
#[derive(Clone, Copy, Debug)]
struct Meta {
    index: u64,
    label: Label,
    tombstoned: bool,
}

/// The in-memory label index: id → leaf index in a hash map, and one byte per leaf holding the
/// label code (bits 0–1) and the tombstone flag (bit 2). About 41 bytes of hash-map slot per
/// entry plus 1 byte; label queries are O(1).
#[derive(Debug, Default)]
struct LabelIndex {
    ids: HashMap<EntryId, u64>,
    // INVARIANT: flags.len() > every index in `ids`.
    flags: Vec<u8>,
}

const TOMBSTONED: u8 = 0b100;

impl LabelIndex {
    fn get(&self, id: &EntryId) -> Option<Meta> {
        let index = *self.ids.get(id)?;
        let f = *self.flags.get(usize::try_from(index).ok()?)?;
        Some(Meta {
            index,
            label: Label::from_code(f & 0b11)?,
            tombstoned: f & TOMBSTONED != 0,
        })
    }

    fn contains(&self, id: &EntryId) -> bool {
        self.ids.contains_key(id)
    }

    fn insert(&mut self, id: EntryId, m: Meta) {
        let Ok(i) = usize::try_from(m.index) else {
            return;
        };
        if self.flags.len() <= i {
            self.flags.resize(i + 1, 0);
        }
        self.flags[i] = m.label.code() | if m.tombstoned { TOMBSTONED } else { 0 };
        self.ids.insert(id, m.index);
    }

    fn tombstone(&mut self, id: &EntryId) {
        let i = self.ids.get(id).and_then(|i| usize::try_from(*i).ok());
        if let Some(f) = i.and_then(|i| self.flags.get_mut(i)) {
            *f |= TOMBSTONED;
        }
    }

    fn reserve(&mut self, n: usize) {
        self.ids.reserve(n);
        self.flags.reserve(n);
    }
}

/// The result of a successful append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    /// The new entry's id (its leaf hash).
    pub id: EntryId,
    /// Its leaf index.
    pub index: u64,
    /// Its label, computed at append.
    pub label: Label,
}

/// One entry of a batch append: a draft, the key that signs it, and its content.
pub struct Draft<'k, 'c> {
    /// The unsigned record; `writer` must be `key`'s id.
    pub entry: ProvEntry,
    /// The writer's signing key.
    pub key: &'k WriterKey,
    /// The content whose hash is `entry.content_hash`, stored beside the entry.
    pub content: &'c [u8],
}

/// The entries of a batch admitted so far ([`Ledger::admit`]): their provisional metadata, the
/// keys they bind and the targets of their forensic entries.
#[derive(Default)]
pub(crate) struct Admitted {
    entries: HashMap<EntryId, Meta>,
    keys: HashMap<KeyId, Role>,
    forensic_targets: HashSet<EntryId>,
}

/// A checked, signed, labelled and hashed batch, ready to be committed to the store.
struct Prepared<'a> {
    items: Vec<PreparedEntry<'a>>,
}

/// One entry of a [`Prepared`] batch.
struct PreparedEntry<'a> {
    entry: &'a SignedEntry,
    label: Label,
    content: &'a [u8],
    hashes: Vec<[u8; 32]>,
}

/// Batches at least this large are verified on several cores by [`Ledger::decode_many`].
pub const PARALLEL_MIN: usize = 4;

/// Fewest entries [`decode_on_all_cores`] splits over cores. Below it one batch on the calling
/// thread is faster on the 2-vCPU VM of `spec/benchmarks.md`: waking a pool thread costs about
/// what a batch of 4 saves (8 entries: 193–203 µs in one batch, 229–236 µs split; 32 entries:
/// 617–811 µs against 501–514 µs split).
pub const SPLIT_BATCH_MIN: usize = 32;

/// [`SignedEntry::decode_batch`] spread over the machine's cores: one batch per core over a
/// contiguous slice of `items`, answers in `items` order and equal to decoding each alone
/// with [`SignedEntry::decode_with_keys`]. The calling thread decodes the first slice itself
/// while rayon's pool threads (which live for the process: no thread is spawned per call, a
/// spawn costs ~90 µs on the 2-vCPU VM we measure on) take the others. Below
/// [`SPLIT_BATCH_MIN`] items, or on one core, one batch on the calling thread.
pub fn decode_on_all_cores(
    items: &[&[u8]],
    known: impl Fn(&KeyId) -> Option<PublicKey> + Sync,
) -> Vec<Result<SignedEntry, RecordError>> {
    let threads = rayon::current_num_threads();
    if items.len() < SPLIT_BATCH_MIN || threads < 2 {
        return SignedEntry::decode_batch(items, &known);
    }
    let per_core = items.len().div_ceil(threads);
    let mut parts: Vec<Vec<Result<SignedEntry, RecordError>>> = Vec::new();
    parts.resize_with(items.len().div_ceil(per_core), Vec::new);
    let known = &known;
    rayon::in_place_scope(|scope| {
        let mut slots = parts.iter_mut().zip(items.chunks(per_core));
        let first = slots.next();
        for (slot, part) in slots {
            scope.spawn(move |_| *slot = SignedEntry::decode_batch(part, known));
        }
        if let Some((slot, part)) = first {
            *slot = SignedEntry::decode_batch(part, known);
        }
    });
    parts.into_iter().flatten().collect()
}

/// How many times an append is retried after another writer (process or handle) appended to
/// the same store first.
const MAX_APPEND_RETRIES: usize = 16;

/// A provenance ledger over a [`Store`].
pub struct Ledger<S: Store> {
    store: S,
    signer: LogSigner,
    policy: LabelPolicy,
    index: LabelIndex,
    /// Bound principals: role, name, and the key decompressed once (saves a point
    /// decompression on every read).
    keyring: HashMap<KeyId, (Role, String, Option<PublicKey>)>,
    size: u64,
    checkpoint: Option<VerifiedCheckpoint>,
    /// Forensics: active flags and what they reach (`spec/forensics.md` §2).
    quarantine: Quarantine,
    /// Forensics: lease and replacement state per target (`spec/forensics.md` §5).
    leases: LeaseBook,
    /// A quarantine rescan that has not completed (a read failed): every entry after this leaf
    /// counts as quarantined until it does (fail closed), and the next refresh retries it.
    pending_rescan: Option<u64>,
}

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
        Self::open(store, signer)
    }

    /// Opens an existing ledger. Reads the label index and keyring from the store; recomputes
    /// no label, hash or signature (a full check is [`crate::audit`]'s job).
    ///
    /// # Errors
    /// [`LedgerError::WrongLogKey`] when `signer` is not the key the ledger was created with;
    /// [`LedgerError::NotALedger`] when settings are missing; store and decode errors.
    pub fn open(store: S, signer: LogSigner) -> Result<Self, LedgerError> {
        let vkey = store.meta(META_VKEY)?.ok_or(LedgerError::NotALedger)?;
        if vkey != signer.vkey() {
            return Err(LedgerError::WrongLogKey);
        }
        let policy = read_policy(&store)?;
        let mut ledger = Ledger {
            store,
            signer,
            policy,
            index: LabelIndex::default(),
            keyring: HashMap::new(),
            size: 0,
            checkpoint: None,
            quarantine: Quarantine::default(),
            leases: LeaseBook::default(),
            pending_rescan: None,
        };
        ledger.load_index()?;
        Ok(ledger)
    }

    fn load_index(&mut self) -> Result<(), LedgerError> {
        let log_id = self.signer.key_id();
        self.keyring.insert(
            log_id,
            (
                Role::Log,
                self.signer.origin().to_string(),
                log_id.public_key().ok(),
            ),
        );
        self.refresh()?;
        Ok(())
    }

    /// Catches up with entries other handles (threads, processes) appended to the same store
    /// since this one last looked: reads their stored labels, keyring bindings and tombstones.
    /// Returns how many entries were added. Recomputes nothing.
    ///
    /// # Errors
    /// Store and decode errors.
    pub fn refresh(&mut self) -> Result<u64, LedgerError> {
        let metas = self.store.metas_from(self.size)?;
        let added = metas.len() as u64;
        self.index.reserve(metas.len());
        let mut rescan: Option<u64> = self.pending_rescan;
        for EntryMeta {
            index,
            id,
            kind,
            label,
        } in metas
        {
            self.index.insert(
                id,
                Meta {
                    index,
                    label,
                    tombstoned: false,
                },
            );
            let special = has_effects(kind);
            if special || self.quarantine.is_active() {
                let bytes = self
                    .store
                    .entry_bytes(index)?
                    .ok_or(LedgerError::Missing(id))?;
                // Entries with effects on the keyring or forensic state are verified again;
                // others were verified by the handle that appended them (the audit re-checks).
                let e = if special {
                    SignedEntry::decode(&bytes)?.entry().clone()
                } else {
                    parse_unverified(&bytes)?
                };
                if special {
                    let content = match e.kind {
                        Kind::Lease => self.store.content_at(index)?,
                        _ => None,
                    };
                    let from = self.apply_effects(id, index, &e, content.as_deref());
                    // Recorded at once: a later read error must not lose it.
                    self.pending_rescan = earliest(self.pending_rescan, from);
                    rescan = earliest(rescan, from);
                }
                self.quarantine.on_entry(&id, &e.parents, &self.policy);
            }
            self.size = index + 1;
        }
        if let Some(from) = rescan {
            self.pending_rescan = Some(from);
            self.rescan_quarantine(from)?;
        }
        Ok(added)
    }

    /// Applies what an accepted entry does besides being stored: keyring bindings,
    /// tombstones, flags and releases, leases and replacements. Returns the leaf after which
    /// the quarantined set must be rescanned, if any.
    fn apply_effects(
        &mut self,
        id: EntryId,
        index: u64,
        e: &ProvEntry,
        content: Option<&[u8]>,
    ) -> Option<u64> {
        if let Some(b) = &e.binding {
            self.keyring
                .insert(b.key, (b.role, b.name.clone(), b.key.public_key().ok()));
        }
        match e.kind {
            Kind::Tombstone => {
                if let Some(t) = &e.target {
                    self.index.tombstone(t);
                }
                None
            }
            Kind::Lease | Kind::Replacement => {
                // Terms count only if they are the signed ones (the store is trusted for
                // availability, not integrity); otherwise the longest lease is assumed.
                let ttl = content
                    .filter(|c| Hash32::digest(c) == e.content_hash)
                    .and_then(|c| parse_lease_terms(c).ok());
                self.leases
                    .apply(id, e.kind, e.writer, e.target, e.time_ms, ttl);
                None
            }
            Kind::Quarantine | Kind::QuarantineStrong | Kind::Release => {
                let target_index = e.target.as_ref().and_then(|t| self.index_of(t));
                match self
                    .quarantine
                    .apply(id, index, e.kind, e.target, target_index)
                {
                    Rescan::From(i) => Some(i),
                    Rescan::No => None,
                }
            }
            _ => None,
        }
    }

    /// Brings the quarantined set up to date by feeding it every entry after leaf `from`
    /// (parsed, not re-verified: this handle or another verified them at append).
    fn rescan_quarantine(&mut self, from: u64) -> Result<(), LedgerError> {
        self.pending_rescan = Some(from);
        let store = &self.store;
        let entries = (from.saturating_add(1)..self.size).map(|i| {
            let bytes = store
                .entry_bytes(i)?
                .ok_or(LedgerError::Store(StoreError::Corrupt(format!(
                    "entry {i} missing"
                ))))?;
            let e = parse_unverified(&bytes)?;
            Ok::<_, LedgerError>((EntryId::of_cose(&bytes), e.parents))
        });
        self.quarantine.rescan(entries, &self.policy)?;
        self.pending_rescan = None;
        Ok(())
    }

    /// The labelling parameters (τ, weak-parent rule) fixed at creation.
    pub fn policy(&self) -> LabelPolicy {
        self.policy
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

    /// Binds `key` to `role` under `name` with a keyring entry signed by the log key.
    /// Binding an already bound key again to the same role is a no-op returning `None`.
    ///
    /// # Errors
    /// [`LedgerError::Rebind`] when the key is bound to another role; store errors.
    pub fn bind(
        &mut self,
        key: KeyId,
        role: Role,
        name: &str,
    ) -> Result<Option<Appended>, LedgerError> {
        self.refresh()?;
        match self.keyring.get(&key) {
            Some((r, _, _)) if *r == role => return Ok(None),
            Some((r, _, _)) => return Err(LedgerError::Rebind { key, bound: *r }),
            None => {}
        }
        let (signed, content) = self.binding_entry(key, role, name)?;
        match self.append_signed(vec![(signed, content.as_slice())]) {
            Ok(mut out) => Ok(out.pop()),
            // Another handle bound the same key to the same role meanwhile.
            Err(LedgerError::Duplicate(_) | LedgerError::Rebind { .. })
                if self.principal(&key).map(|p| p.0) == Some(role) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// A keyring entry binding `key` to `role` under `name`, signed by the log key but not
    /// appended, with its content: put it first in an [`Ledger::append_signed`] batch to bind
    /// a writer and record its first entries all or nothing.
    ///
    /// # Errors
    /// [`LedgerError::Record`] for a name over [`crate::record::MAX_NAME_BYTES`].
    pub fn binding_entry(
        &self,
        key: KeyId,
        role: Role,
        name: &str,
    ) -> Result<(SignedEntry, Vec<u8>), LedgerError> {
        let binding = KeyBinding {
            key,
            role,
            name: name.to_string(),
        };
        let content = format!("bind {} {} {}", role.name(), name, key);
        let mut entry = ProvEntry::new(self.signer.key_id(), Kind::Keyring, content.as_bytes());
        entry.binding = Some(binding);
        Ok((
            SignedEntry::sign(entry, self.signer.writer_key())?,
            content.into_bytes(),
        ))
    }

    /// Decodes and verifies several entries' bytes with batch signature checks and the
    /// keyring's decompressed keys ([`decode_on_all_cores`]). Same answers, in the same order,
    /// as decoding one by one.
    pub fn decode_many(&self, items: &[&[u8]]) -> Vec<Result<SignedEntry, RecordError>> {
        decode_on_all_cores(items, self.key_lookup())
    }

    /// The decompressed key of a bound principal.
    fn cached_key(&self, key: &KeyId) -> Option<PublicKey> {
        self.keyring.get(key).and_then(|(_, _, vk)| *vk)
    }

    /// A thread-shareable lookup of bound principals' decompressed keys (for checks run on
    /// all cores while the store, which need not be shareable, stays on this thread).
    pub(crate) fn key_lookup(&self) -> impl Fn(&KeyId) -> Option<PublicKey> + Sync + '_ {
        let keyring = &self.keyring;
        move |key| keyring.get(key).and_then(|(_, _, vk)| *vk)
    }

    /// The role and name bound to `key`, if any.
    pub fn principal(&self, key: &KeyId) -> Option<(Role, &str)> {
        self.keyring.get(key).map(|(r, n, _)| (*r, n.as_str()))
    }

    /// Appends one entry: checks it, signs it with `key`, computes its label, adds its leaf to
    /// the tree and stores entry, content and tree hashes in one store transaction.
    ///
    /// # Errors
    /// See [`LedgerError`]; on error nothing is stored.
    pub fn append(
        &mut self,
        entry: ProvEntry,
        key: &WriterKey,
        content: &[u8],
    ) -> Result<Appended, LedgerError> {
        let mut out = self.append_batch(vec![Draft {
            entry,
            key,
            content,
        }])?;
        out.pop().ok_or(LedgerError::EmptyBatch)
    }

    /// Appends several entries in one store transaction (group commit). A draft may name
    /// earlier drafts of the same batch as parents. All or nothing.
    ///
    /// Drafts are signed on all cores when there are at least [`PARALLEL_MIN`] of them
    /// (signatures are independent; the answers are those of signing in order).
    ///
    /// # Errors
    /// The first failing draft's [`LedgerError`]; nothing of the batch is stored.
    pub fn append_batch<'c>(
        &mut self,
        drafts: Vec<Draft<'_, 'c>>,
    ) -> Result<Vec<Appended>, LedgerError> {
        let sign = |d: Draft<'_, 'c>| -> Result<(SignedEntry, &'c [u8]), RecordError> {
            SignedEntry::sign(d.entry, d.key).map(|s| (s, d.content))
        };
        let results: Vec<Result<(SignedEntry, &'c [u8]), RecordError>> =
            if drafts.len() < PARALLEL_MIN || rayon::current_num_threads() < 2 {
                drafts.into_iter().map(sign).collect()
            } else {
                use rayon::prelude::*;
                drafts.into_par_iter().with_max_len(1).map(sign).collect()
            };
        // In draft order, so the error is the first failing draft's.
        let signed = results.into_iter().collect::<Result<Vec<_>, _>>()?;
        self.append_signed(signed)
    }

    /// Appends entries that their writers already signed (e.g. on another host), in one store
    /// transaction. An entry may name earlier entries of the same batch as parents.
    ///
    /// # Errors
    /// As [`Ledger::append_batch`]; nothing of the batch is stored on error.
    pub fn append_signed(
        &mut self,
        entries: Vec<(SignedEntry, &[u8])>,
    ) -> Result<Vec<Appended>, LedgerError> {
        let _span =
            tracing::info_span!("memlineage.append", memlineage.entries = entries.len()).entered();
        let mut attempt = 0;
        loop {
            let prepared = self.prepare_batch(&entries)?;
            match self.commit(prepared) {
                Err(LedgerError::Store(StoreError::NotContiguous { .. }))
                    if attempt < MAX_APPEND_RETRIES =>
                {
                    // Another writer appended first: catch up and label/hash again.
                    attempt += 1;
                    self.refresh()?;
                }
                other => return other,
            }
        }
    }

    fn prepare_batch<'a>(
        &self,
        entries: &'a [(SignedEntry, &'a [u8])],
    ) -> Result<Prepared<'a>, LedgerError> {
        if entries.is_empty() {
            return Err(LedgerError::EmptyBatch);
        }
        let mut admitted = Admitted::default();
        let mut overlay = Overlay {
            store: &self.store,
            start: stored_hash_index(0, self.size),
            pending: Vec::new(),
        };
        let mut items = Vec::with_capacity(entries.len());
        for (i, (s, content)) in entries.iter().enumerate() {
            let index = self.size + i as u64;
            let label = self.admit(&mut admitted, index, s, content)?;
            let hashes = hashes_to_store(index, &s.id(), &overlay)?;
            overlay.pending.extend_from_slice(&hashes);
            items.push(PreparedEntry {
                entry: s,
                label,
                content,
                hashes,
            });
        }
        Ok(Prepared { items })
    }

    fn commit(&mut self, prepared: Prepared<'_>) -> Result<Vec<Appended>, LedgerError> {
        let batch: Vec<NewEntry<'_>> = prepared
            .items
            .iter()
            .enumerate()
            .map(|(i, p)| NewEntry {
                index: self.size + i as u64,
                id: p.entry.id(),
                cose: p.entry.cose(),
                kind: p.entry.entry().kind,
                label: p.label,
                content: Some((p.entry.entry().content_hash, p.content)),
                hashes: p.hashes.clone(),
            })
            .collect();
        self.store.append(&batch)?;
        drop(batch);
        let mut out = Vec::with_capacity(prepared.items.len());
        for PreparedEntry {
            entry: s,
            label,
            content,
            ..
        } in &prepared.items
        {
            out.push(self.index_stored(s, self.size, *label, Some(content)));
            self.size += 1;
        }
        if let Some(from) = self.pending_rescan {
            // The batch is stored: report it. If the rescan cannot read the store now, the
            // pending rescan keeps later entries quarantined (fail closed) until a refresh
            // completes it.
            let _ = self.rescan_quarantine(from);
        }
        Ok(out)
    }

    /// Records a stored entry at leaf index `index`: the label index, then what the entry does
    /// besides being stored (keyring, tombstone, flags, leases; see `apply_effects`) and
    /// quarantine propagation. A quarantine rescan it calls for is left pending in
    /// `pending_rescan` for the caller to run.
    fn index_stored(
        &mut self,
        s: &SignedEntry,
        index: u64,
        label: Label,
        content: Option<&[u8]>,
    ) -> Appended {
        let e = s.entry();
        self.index.insert(
            s.id(),
            Meta {
                index,
                label,
                tombstoned: false,
            },
        );
        let from = self.apply_effects(s.id(), index, e, content);
        self.pending_rescan = earliest(self.pending_rescan, from);
        self.quarantine.on_entry(&s.id(), &e.parents, &self.policy);
        Appended {
            id: s.id(),
            index,
            label,
        }
    }

    /// Checks a signed entry against the log (and the batch so far) and labels it.
    /// Checks the next entry of a batch ([`Ledger::check`] against the ledger and the batch's
    /// earlier entries; not already stored or in the batch; at most one forensic entry per
    /// target, since forensic entries are checked against the state before the batch) and
    /// records it in `admitted` with the provisional `index`. Shared by `append_signed` and
    /// `submit_signed`.
    pub(crate) fn admit(
        &self,
        admitted: &mut Admitted,
        index: u64,
        s: &SignedEntry,
        content: &[u8],
    ) -> Result<Label, LedgerError> {
        let e = s.entry();
        // Forensic kinds: those with a target, apart from tombstones.
        if e.kind.has_target() && e.kind != Kind::Tombstone {
            if let Some(t) = e.target {
                if !admitted.forensic_targets.insert(t) {
                    return Err(LedgerError::BatchConflict(t));
                }
            }
        }
        let label = self.check(s, content, &admitted.entries, &admitted.keys)?;
        if admitted.entries.contains_key(&s.id()) || self.index.contains(&s.id()) {
            return Err(LedgerError::Duplicate(s.id()));
        }
        if let Some(b) = &e.binding {
            admitted.keys.insert(b.key, b.role);
        }
        admitted.entries.insert(
            s.id(),
            Meta {
                index,
                label,
                tombstoned: false,
            },
        );
        Ok(label)
    }

    fn check(
        &self,
        s: &SignedEntry,
        content: &[u8],
        pending: &HashMap<EntryId, Meta>,
        pending_keys: &HashMap<KeyId, Role>,
    ) -> Result<Label, LedgerError> {
        let e = s.entry();
        let role = self
            .keyring
            .get(&e.writer)
            .map(|(r, _, _)| *r)
            .or_else(|| pending_keys.get(&e.writer).copied())
            .ok_or(LedgerError::UnknownWriter(e.writer))?;
        if Hash32::digest(content) != e.content_hash {
            return Err(LedgerError::ContentMismatch);
        }
        match e.kind {
            // spec/record.md §5.4 rule 1: only the log key itself writes keyring entries.
            Kind::Keyring if e.writer != self.signer.key_id() => {
                return Err(LedgerError::NotLogKey)
            }
            Kind::Tombstone if role.is_untrusted() => {
                return Err(LedgerError::UntrustedTombstone(e.writer))
            }
            Kind::Lease => {
                if !matches!(role, Role::Agent | Role::User | Role::System) {
                    return Err(LeaseError::NotAuthorised.into());
                }
                parse_lease_terms(content)?;
                if let Some(t) = &e.target {
                    self.leases.check_claim(t, &e.writer, e.time_ms)?;
                }
            }
            Kind::Replacement => {
                if let Some(t) = &e.target {
                    self.leases
                        .check_replacement(t, &e.writer, role, e.time_ms)?;
                }
            }
            _ => {}
        }
        self.quarantine.check(e.kind, role, e.target.as_ref())?;
        if let Some(b) = &e.binding {
            // Rule 2: no second log key. Rule 3: a key is bound at most once.
            if b.role == Role::Log {
                return Err(LedgerError::BindsLogRole(b.key));
            }
            let bound = self
                .keyring
                .get(&b.key)
                .map(|(r, _, _)| *r)
                .or_else(|| pending_keys.get(&b.key).copied());
            if let Some(bound) = bound {
                return Err(LedgerError::Rebind { key: b.key, bound });
            }
        }
        let lookup = |id: &EntryId| self.index.get(id).or_else(|| pending.get(id).copied());
        if let Some(t) = &e.target {
            lookup(t).ok_or(LedgerError::UnknownTarget(*t))?;
        }
        let mut parents = Vec::with_capacity(e.parents.len());
        for p in &e.parents {
            let m = lookup(&p.id).ok_or(LedgerError::UnknownParent(p.id))?;
            parents.push((p.weight, m.label));
        }
        Ok(self.policy.label(role, parents))
    }

    /// The label of `id`: O(1), from the in-memory index.
    pub fn label(&self, id: &EntryId) -> Option<Label> {
        self.index.get(id).map(|m| m.label)
    }

    /// Whether `id` has been tombstoned.
    pub fn is_tombstoned(&self, id: &EntryId) -> bool {
        self.index.get(id).is_some_and(|m| m.tombstoned)
    }

    /// The leaf index of `id`.
    pub fn index_of(&self, id: &EntryId) -> Option<u64> {
        self.index.get(id).map(|m| m.index)
    }

    /// Reads and re-verifies the entry `id` from the store.
    ///
    /// # Errors
    /// [`LedgerError::UnknownEntry`]; [`LedgerError::Record`] when stored bytes do not verify.
    pub fn get(&self, id: &EntryId) -> Result<SignedEntry, LedgerError> {
        let m = self.index.get(id).ok_or(LedgerError::UnknownEntry(*id))?;
        let bytes = self
            .store
            .entry_bytes(m.index)?
            .ok_or(LedgerError::Missing(*id))?;
        let e = SignedEntry::decode_with_keys(&bytes, |k| self.cached_key(k))?;
        if e.id() != *id {
            return Err(LedgerError::Missing(*id));
        }
        Ok(e)
    }

    /// The entry at leaf index `index`, re-verified.
    ///
    /// # Errors
    /// As [`Ledger::get`].
    pub fn get_by_index(&self, index: u64) -> Result<SignedEntry, LedgerError> {
        let bytes = self
            .store
            .entry_bytes(index)?
            .ok_or(LedgerError::IndexOutOfRange {
                index,
                size: self.size,
            })?;
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

    /// The root hash of the current tree.
    ///
    /// # Errors
    /// Store errors.
    pub fn root(&self) -> Result<RootHash, LedgerError> {
        Ok(tree_root(self.size, &StoreSource(&self.store))?)
    }

    /// A verified checkpoint for the current tree size: the stored one if it is current,
    /// otherwise a newly signed one, stored and verified before it is returned. A new head is
    /// signed only if the stored tree extends the last signed one (consistency proof).
    ///
    /// # Errors
    /// [`LedgerError::TreeInconsistent`] when the stored tree hashes do not match the last
    /// signed checkpoint; store, tree and checkpoint errors.
    pub fn checkpoint(&mut self) -> Result<VerifiedCheckpoint, LedgerError> {
        if let Some(c) = &self.checkpoint {
            if c.size() == self.size {
                return Ok(c.clone());
            }
        }
        let verifier = self.verifier()?;
        let root = self.root()?;
        let latest = self.store.latest_checkpoint()?;
        let c = match latest {
            Some((size, note)) if size == self.size => {
                let c = verifier.verify(&note)?;
                // The stored hashes must still give the signed root.
                if c.root() != root {
                    return Err(LedgerError::TreeInconsistent { signed_size: size });
                }
                c
            }
            previous => {
                let c = verifier.verify(&self.signer.sign(self.size, &root))?;
                // Never sign a head that does not extend the last one: a corrupted hash in
                // the store would otherwise be signed into the log's history as a fork.
                if let Some((size, note)) = previous.filter(|(size, _)| *size > 0) {
                    let old = verifier.verify(&note)?;
                    let proof =
                        crate::log::prove_consistency(size, self.size, &StoreSource(&self.store))
                            .map_err(|_| LedgerError::TreeInconsistent { signed_size: size })?;
                    old.verify_consistency(&c, &proof)
                        .map_err(|_| LedgerError::TreeInconsistent { signed_size: size })?;
                }
                self.store.put_checkpoint(self.size, c.note())?;
                c
            }
        };
        self.checkpoint = Some(c.clone());
        Ok(c)
    }

    /// An inclusion proof for `id` against the tree of the current checkpoint.
    ///
    /// # Errors
    /// [`LedgerError::UnknownEntry`]; tree errors.
    pub fn prove_inclusion(
        &mut self,
        id: &EntryId,
    ) -> Result<(InclusionProof, VerifiedCheckpoint), LedgerError> {
        let c = self.checkpoint()?;
        let m = self.index.get(id).ok_or(LedgerError::UnknownEntry(*id))?;
        let proof = prove_inclusion(c.size(), m.index, &StoreSource(&self.store))?;
        Ok((proof, c))
    }

    /// A consistency proof from tree size `old_size` to the current checkpoint.
    ///
    /// # Errors
    /// Tree errors (e.g. `old_size` 0 or larger than the tree).
    pub fn prove_consistency(
        &mut self,
        old_size: u64,
    ) -> Result<(ConsistencyProof, VerifiedCheckpoint), LedgerError> {
        let c = self.checkpoint()?;
        let proof = crate::log::prove_consistency(old_size, c.size(), &StoreSource(&self.store))?;
        Ok((proof, c))
    }

    /// An offline proof bundle for `id` (entry, audit path, signed checkpoint).
    ///
    /// # Errors
    /// As [`Ledger::prove_inclusion`].
    pub fn prove(&mut self, id: &EntryId) -> Result<ProofBundle, LedgerError> {
        let (proof, c) = self.prove_inclusion(id)?;
        let entry = self.get(id)?;
        Ok(ProofBundle {
            entry: entry.cose().to_vec(),
            proof,
            checkpoint: c.note().to_vec(),
        })
    }

    /// Deletes `target` by appending a tombstone signed by `key`: the target leaves retrieval,
    /// stays in the tree, and its descendants keep their labels.
    ///
    /// # Errors
    /// [`LedgerError::UnknownTarget`]; [`LedgerError::UntrustedTombstone`] for tool/external
    /// writers; append errors.
    pub fn tombstone(
        &mut self,
        target: EntryId,
        key: &WriterKey,
        reason: &str,
    ) -> Result<Appended, LedgerError> {
        let mut e = ProvEntry::new(key.key_id(), Kind::Tombstone, reason.as_bytes());
        e.target = Some(target);
        self.append(e, key, reason.as_bytes())
    }

    /// Forensics: flags `source` as bad (an advisory says so), quarantining everything that
    /// descends from it over `reach` edges (`spec/forensics.md` §2). Appends a signed
    /// [`Kind::Quarantine`] / [`Kind::QuarantineStrong`] entry whose content is `reason`.
    ///
    /// # Errors
    /// [`LedgerError::UnknownTarget`]; [`QuarantineError::NotAuthorised`] unless `key` is a
    /// user, system or log principal; append errors. Nothing is changed on error.
    pub fn flag(
        &mut self,
        source: EntryId,
        reach: Reach,
        key: &WriterKey,
        reason: &str,
    ) -> Result<Appended, LedgerError> {
        let mut e = ProvEntry::new(key.key_id(), reach.kind(), reason.as_bytes());
        e.target = Some(source);
        self.append(e, key, reason.as_bytes())
    }

    /// Forensics: lifts the quarantine made by the flag entry `flag`, with a reason. Entries
    /// stay quarantined if another active flag still reaches them.
    ///
    /// # Errors
    /// [`QuarantineError::NotAFlag`], [`QuarantineError::AlreadyReleased`],
    /// [`QuarantineError::NotAuthorised`]; append errors.
    pub fn release(
        &mut self,
        flag: EntryId,
        key: &WriterKey,
        reason: &str,
    ) -> Result<Appended, LedgerError> {
        let mut e = ProvEntry::new(key.key_id(), Kind::Release, reason.as_bytes());
        e.target = Some(flag);
        self.append(e, key, reason.as_bytes())
    }

    /// The quarantine state (active flags, quarantined entries).
    pub fn quarantine(&self) -> &Quarantine {
        &self.quarantine
    }

    /// Whether `id` is quarantined. O(1). While a quarantine rescan is pending (a store read
    /// failed), every entry after the rescan point counts as quarantined (fail closed).
    pub fn is_quarantined(&self, id: &EntryId) -> bool {
        self.quarantine.is_quarantined(id)
            || self
                .pending_rescan
                .is_some_and(|from| self.index_of(id).is_some_and(|i| i > from))
    }

    /// The shortest path from a flagged source to `id` over edges that carry the quarantine
    /// (source first); `None` when `id` is not quarantined. See
    /// [`Quarantine::path_to_source`] for the tie rule.
    ///
    /// # Errors
    /// Store and decode errors.
    pub fn quarantine_path(
        &self,
        id: &EntryId,
    ) -> Result<Option<(Vec<EntryId>, Reach)>, LedgerError> {
        self.quarantine
            .path_to_source(id, &self.policy, |x| self.parents_of(x))
    }

    /// The parents of `id` with their weights, read and verified from the store.
    ///
    /// # Errors
    /// [`LedgerError::UnknownEntry`]; store and decode errors.
    pub fn parents_of(&self, id: &EntryId) -> Result<Vec<Parent>, LedgerError> {
        Ok(self.get(id)?.entry().parents.clone())
    }

    /// The lease and replacement state of rework targets.
    pub fn leases(&self) -> &LeaseBook {
        &self.leases
    }

    /// Forensics: claims the rework of `target` for `ttl_ms` milliseconds from `now_ms`
    /// (`spec/forensics.md` §5), appending a signed [`Kind::Lease`] entry. Catches up with other
    /// writers first, so the claim is judged against the latest log.
    ///
    /// # Errors
    /// [`LeaseError::Held`] while another worker's lease is live; [`LeaseError::Done`] once
    /// the target was replaced; [`LeaseError::BadTerms`] for `ttl_ms` 0 or above
    /// [`crate::lineage::lease::MAX_TTL_MS`]; append errors.
    pub fn claim_lease(
        &mut self,
        target: EntryId,
        key: &WriterKey,
        ttl_ms: u64,
        now_ms: u64,
    ) -> Result<Appended, LedgerError> {
        self.refresh()?;
        let terms = crate::lineage::lease::lease_terms(ttl_ms);
        let mut e = ProvEntry::new(key.key_id(), Kind::Lease, &terms).with_time_ms(now_ms);
        e.target = Some(target);
        self.append(e, key, &terms)
    }

    /// The shortest lineage path to `id` from the External entry that makes it untrusted
    /// (source first, `id` last),
    /// following edges that propagate labels (strong edges; under the fail-closed rule, weak
    /// edges of an entry with no strong parent). `[id]` when `id` is itself External; empty when
    /// `id` is not untrusted. Ties: parents are explored in ascending id order, first found wins.
    ///
    /// # Errors
    /// Store and decode errors.
    pub fn untrusted_path(&self, id: &EntryId) -> Result<Vec<EntryId>, LedgerError> {
        match self.label(id) {
            None => return Err(LedgerError::UnknownEntry(*id)),
            Some(l) if !l.is_untrusted() => return Ok(Vec::new()),
            _ => {}
        }
        let mut prev: HashMap<EntryId, EntryId> = HashMap::new();
        let mut seen: HashSet<EntryId> = HashSet::from([*id]);
        let mut queue = VecDeque::from([*id]);
        while let Some(cur) = queue.pop_front() {
            if self.label(&cur) == Some(Label::External) {
                let mut path = vec![cur];
                let mut at = cur;
                while let Some(p) = prev.get(&at) {
                    path.push(*p);
                    at = *p;
                }
                return Ok(path);
            }
            for p in self.propagating_parents(&cur)? {
                if self.label(&p).is_some_and(Label::is_untrusted) && seen.insert(p) {
                    prev.insert(p, cur);
                    queue.push_back(p);
                }
            }
        }
        Ok(vec![*id])
    }

    /// Parents of `id` whose labels reach it under the ledger's policy.
    fn propagating_parents(&self, id: &EntryId) -> Result<Vec<EntryId>, LedgerError> {
        let e = self.get(id)?;
        let parents = &e.entry().parents;
        let strong: Vec<EntryId> = parents
            .iter()
            .filter(|p| self.policy.is_strong(p.weight))
            .map(|p| p.id)
            .collect();
        Ok(match (strong.is_empty(), self.policy.weak_rule) {
            (false, _) | (true, WeakRule::FailOpen) => strong,
            (true, WeakRule::FailClosed) => parents.iter().map(|p| p.id).collect(),
        })
    }
}

impl<S: Store> LineageView for Ledger<S> {
    fn label_of(&self, id: &EntryId) -> Option<Label> {
        self.label(id)
    }

    fn tombstoned(&self, id: &EntryId) -> bool {
        self.is_tombstoned(id)
    }

    fn path_to_source(&self, id: &EntryId) -> Vec<EntryId> {
        // A path is explanation only; the decision never depends on it.
        self.untrusted_path(id).unwrap_or_default()
    }

    fn quarantined(&self, id: &EntryId) -> bool {
        self.is_quarantined(id)
    }

    fn principal_of(&self, id: &EntryId) -> Option<String> {
        let e = self.get(id).ok()?;
        self.principal(&e.writer())
            .map(|(_, name)| name.to_string())
    }
}

impl<S: Store> Ledger<S> {
    /// M6: the gate's decision for `call` under `policy`, from this ledger's labels.
    /// See [`Policy::decide`].
    pub fn gate(&self, policy: &Policy, call: &ToolCall) -> Decision {
        let span = crate::gate::span(call);
        let _g = span.enter();
        crate::gate::record(&span, policy.decide(call, self))
    }
}

/// The earlier of two optional leaf indexes.
fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Whether entries of `kind` change state beyond their own label (keyring, tombstone,
/// quarantine, lease): such entries are decoded when another handle's appends are read.
fn has_effects(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Keyring
            | Kind::Tombstone
            | Kind::Quarantine
            | Kind::QuarantineStrong
            | Kind::Release
            | Kind::Lease
            | Kind::Replacement
    )
}

fn read_policy<S: Store>(store: &S) -> Result<LabelPolicy, LedgerError> {
    let tau = store
        .meta(META_TAU)?
        .and_then(|s| s.parse::<u64>().ok())
        .and_then(|m| Weight::new(m).ok())
        .ok_or(LedgerError::NotALedger)?;
    let weak_rule = store
        .meta(META_RULE)?
        .and_then(|s| WeakRule::from_name(&s))
        .ok_or(LedgerError::NotALedger)?;
    Ok(LabelPolicy { tau, weak_rule })
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
    read_policy(store)
}

/// Adapts a [`Store`] to the log's [`HashSource`], so proofs can be built from any store
/// (e.g. by an auditor holding a copy of the ledger file).
pub struct StoreSource<'a, S: Store>(pub &'a S);

impl<S: Store> HashSource for StoreSource<'_, S> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError> {
        self.0
            .read_hashes(indexes)
            .map_err(|e| LogError::Source(e.to_string()))
    }
}

/// Store hashes plus the not-yet-stored hashes of the batch being appended.
struct Overlay<'a, S: Store> {
    store: &'a S,
    start: u64,
    pending: Vec<[u8; 32]>,
}

impl<S: Store> HashSource for Overlay<'_, S> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError> {
        let stored: Vec<u64> = indexes
            .iter()
            .copied()
            .filter(|i| *i < self.start)
            .collect();
        // Within a batch most hashes are the batch's own: ask the store only when needed.
        let from_store = if stored.is_empty() {
            Vec::new()
        } else {
            StoreSource(self.store).read_hashes(&stored)?
        };
        let mut from_store = from_store.into_iter();
        indexes
            .iter()
            .map(|&i| {
                if i < self.start {
                    from_store
                        .next()
                        .ok_or_else(|| LogError::Source(format!("hash {i} missing")))
                } else {
                    usize::try_from(i - self.start)
                        .ok()
                        .and_then(|k| self.pending.get(k).copied())
                        .ok_or_else(|| LogError::Source(format!("hash {i} missing")))
                }
            })
            .collect()
    }
}

/// Why a ledger operation failed. Nothing already stored is lost by any of them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The writer's key is not bound by a keyring entry (caller or untrusted input).
    #[error("writer {0} is not bound in the keyring")]
    UnknownWriter(KeyId),
    /// A flag or release breaks the quarantine rules (`spec/forensics.md` §2.2).
    #[error(transparent)]
    Quarantine(#[from] QuarantineError),
    /// A lease or replacement breaks the lease rules (`spec/forensics.md` §5).
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// One batch holds two forensic entries (lease, replacement, flag, release) about the same
    /// target; append them in separate batches.
    #[error("batch holds two forensic entries about {0}")]
    BatchConflict(EntryId),
    /// A parent is not in the log (parents must precede children, so no cycle can exist).
    #[error("unknown parent {0}")]
    UnknownParent(EntryId),
    /// A tombstone names an entry that is not in the log.
    #[error("unknown target {0}")]
    UnknownTarget(EntryId),
    /// No entry with this id.
    #[error("unknown entry {0}")]
    UnknownEntry(EntryId),
    /// The index is not below the tree size.
    #[error("index {index} out of range for tree size {size}")]
    IndexOutOfRange {
        /// Requested index.
        index: u64,
        /// Tree size.
        size: u64,
    },
    /// The entry is already in the log (same bytes, same id).
    #[error("entry {0} already in the log")]
    Duplicate(EntryId),
    /// The content does not hash to the entry's content hash.
    #[error("content does not match the entry's content hash")]
    ContentMismatch,
    /// A keyring entry not written by the log key.
    #[error("only the log key may write keyring entries")]
    NotLogKey,
    /// A keyring entry binding a key to role `log` (there is one log key, `spec/record.md`
    /// §5.4 rule 2).
    #[error("key {0} may not be bound to role log")]
    BindsLogRole(KeyId),
    /// A tool or external principal tried to tombstone an entry.
    #[error("writer {0} (tool/external) may not write tombstones")]
    UntrustedTombstone(KeyId),
    /// The key is already bound (a key is bound at most once, `spec/record.md` §5.4 rule 3).
    #[error("key {key} already bound as {}", .bound.name())]
    Rebind {
        /// The key.
        key: KeyId,
        /// Its existing role.
        bound: Role,
    },
    /// `create` on a store that already holds a ledger.
    #[error("store already holds a ledger")]
    NotEmpty,
    /// The store has no ledger settings (not created by [`Ledger::create`]).
    #[error("store holds no ledger (missing settings)")]
    NotALedger,
    /// The log key given does not match the ledger's recorded verifier key.
    #[error("log key does not match this ledger")]
    WrongLogKey,
    /// An entry the index names is missing from the store (store damaged).
    #[error("entry {0} missing from the store")]
    Missing(EntryId),
    /// Stored content does not hash to the entry's signed content hash (store tampered with).
    #[error("content of entry {0} does not match its signed content hash")]
    ContentTampered(EntryId),
    /// The store's tree hashes do not extend the last signed checkpoint (store damaged or
    /// tampered with): no new checkpoint is signed.
    #[error(
        "stored tree does not extend the signed checkpoint of size {signed_size}; refusing to sign"
    )]
    TreeInconsistent {
        /// Size of the last signed checkpoint.
        signed_size: u64,
    },
    /// An empty batch.
    #[error("empty batch")]
    EmptyBatch,
    /// The entry is malformed or its stored bytes do not verify.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// Tree hashing or proving failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// An inclusion or consistency proof did not verify (store damaged or tampered with).
    #[error(transparent)]
    Proof(#[from] ProofError),
    /// Checkpoint signing or verification failed.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
