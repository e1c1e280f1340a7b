//! Appending: [`Ledger::append`], [`Ledger::append_batch`], [`Ledger::append_signed`] and
//! [`Ledger::bind`]; the checks ([`Ledger::admit`]), labelling, hashing and store commit.

use super::index::Meta;
use super::prove::Overlay;
use super::{earliest, Ledger, LedgerError, META_SEAL};
use crate::lineage::admission::AdmissionError;
use crate::lineage::state::{Content, Known};
use crate::lineage::Label;
use crate::log::{hashes_to_store, stored_hash_index};
use crate::record::{
    EntryId, KeyBinding, KeyId, Kind, ProvEntry, RecordError, Role, SignedEntry, WriterKey,
};
use crate::record::{IdMap, IdSet};
use crate::store::{NewEntry, Store, StoreError};
use std::collections::HashMap;

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
    entries: IdMap<EntryId, Meta>,
    keys: HashMap<KeyId, Role>,
    forensic_targets: IdSet<EntryId>,
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

/// How many times an append is retried after another writer (process or handle) appended to
/// the same store first.
const MAX_APPEND_RETRIES: usize = 16;

impl<S: Store> Ledger<S> {
    /// Binds `key` to `role` under `name` with a keyring entry signed by the log key.
    /// Binding an already bound key again to the same role is a no-op returning `None`.
    ///
    /// # Errors
    /// [`AdmissionError::Rebind`] when the key is bound to another role; store errors.
    pub fn bind(
        &mut self,
        key: KeyId,
        role: Role,
        name: &str,
    ) -> Result<Option<Appended>, LedgerError> {
        self.refresh()?;
        match self.state.role_of(&key) {
            Some(r) if r == role => return Ok(None),
            Some(r) => return Err(AdmissionError::Rebind { key, bound: r }.into()),
            None => {}
        }
        let (signed, content) = self.binding_entry(key, role, name)?;
        match self.append_signed(vec![(signed, content.as_slice())]) {
            Ok(mut out) => Ok(out.pop()),
            // Another handle bound the same key to the same role meanwhile.
            Err(LedgerError::Admission(
                AdmissionError::Duplicate(_) | AdmissionError::Rebind { .. },
            )) if self.principal(&key).map(|p| p.0) == Some(role) => Ok(None),
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

    /// Starts a group of appends that the store commits together at [`Ledger::end_group`]
    /// ([`Store::begin_group`], `spec/storage.md` §6.1): each append still stores all of its
    /// batch or nothing, but none is durable before the group ends. Hold the writers' lock
    /// (`LEDGER.key.lock`) from here to the end of the group, and answer nobody on the strength
    /// of an append before the group is committed.
    ///
    /// # Errors
    /// Store errors; no group is started then (appends stay durable one by one).
    pub fn begin_group(&mut self) -> Result<(), LedgerError> {
        Ok(self.store.begin_group()?)
    }

    /// Commits the group [`Ledger::begin_group`] started: every append of it becomes durable
    /// at once (one commit).
    ///
    /// # Errors
    /// Store errors: then nothing the group appended is stored, though this handle holds it
    /// (its tree, labels and caches are ahead of the store). The handle must be dropped and the
    /// ledger opened again; every append of the group counts as failed.
    pub fn end_group(&mut self) -> Result<(), LedgerError> {
        Ok(self.store.end_group()?)
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
            let label = self.admit(&mut admitted, index, s, Content::Given(content))?;
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
        // Nothing is written into a store whose rows are not known to chain.
        self.writable()?;
        // Rows after the stored seal (verified and labelled again when this handle read them)
        // get their tags first, so that the seal written with the batch covers every row.
        self.seal_pending()?;
        // The row tags and the seal over the index plus this batch, stored in the same
        // transaction.
        let (effects, seal, tags) = self.seal_after(
            prepared
                .items
                .iter()
                .map(|p| (p.entry.id(), p.entry.entry().kind, p.label)),
        );
        let batch: Vec<NewEntry<'_>> = prepared
            .items
            .iter()
            .zip(tags)
            .enumerate()
            .map(|(i, (p, tag))| NewEntry {
                index: self.size + i as u64,
                id: p.entry.id(),
                cose: p.entry.cose(),
                kind: p.entry.entry().kind,
                label: p.label,
                content: Some((p.entry.entry().content_hash, p.content)),
                hashes: p.hashes.clone(),
                tag: Some(tag),
                context: Some(p.entry.entry().context_hash),
            })
            .collect();
        self.store.append_with_meta(&batch, META_SEAL, &seal)?;
        drop(batch);
        // A `SignedEntry` is signed or verified by construction, and `Ledger::get` reads its
        // stored bytes back by leaf hash: the next read of an entry this handle appended needs
        // no second signature check (the item index of the Python front reads every put back).
        self.remember_verified(prepared.items.iter().map(|p| p.entry.id()));
        let mut out = Vec::with_capacity(prepared.items.len());
        for PreparedEntry {
            entry: s,
            label,
            content,
            ..
        } in &prepared.items
        {
            out.push(self.index_stored(s, self.size, *label, Some(content), true));
            self.size += 1;
        }
        self.effects = effects;
        self.sealed = self.size;
        if let Some(from) = self.pending_rescan {
            // The batch is stored: report it. If the rescan cannot read the store now, the
            // pending rescan keeps later entries quarantined (fail closed) until a refresh
            // completes it.
            let _ = self.rescan_quarantine(from);
        }
        // A snapshot of the quarantined set for the next open (`spec/lineage.md` §5.3): the
        // batch is stored whether or not it can be written.
        if let Some(last) = prepared.items.last() {
            let _ = self.save_quarantine(last.entry.id());
        }
        Ok(out)
    }

    /// Records a stored entry at leaf index `index` (stored with its row tag when `tagged`):
    /// the label index, then what the entry does besides being stored, through the lineage
    /// state ([`crate::lineage::state::LineageState::apply`]). A quarantine rescan it calls
    /// for is left pending in `pending_rescan` for the caller to run.
    pub(super) fn index_stored(
        &mut self,
        s: &SignedEntry,
        index: u64,
        label: Label,
        content: Option<&[u8]>,
        tagged: bool,
    ) -> Appended {
        let e = s.entry();
        let m = Meta { index, label };
        if tagged {
            self.index.remember(s.id(), m);
        } else {
            self.index.insert_unsealed(s.id(), m, e.kind);
        }
        let known = super::Rows {
            store: &self.store,
            index: &self.index,
            seal_key: &self.seal_key,
            sealed: self.sealed,
        };
        let from = self.state.apply(&known, index, s.id(), e, content);
        self.pending_rescan = earliest(self.pending_rescan, from);
        Appended {
            id: s.id(),
            index,
            label,
        }
    }

    /// Checks the next entry of a batch and records it in `admitted` with the provisional
    /// `index`: at most one forensic entry per target (forensic entries are judged against the
    /// state before the batch), then the admission rule
    /// ([`crate::lineage::state::LineageState::check`]) against the ledger and the batch's
    /// earlier entries. Shared by `append_signed`, `submit_signed` (content given by the
    /// writer) and the PostgreSQL integration (content as stored).
    pub(crate) fn admit(
        &self,
        admitted: &mut Admitted,
        index: u64,
        s: &SignedEntry,
        content: Content<'_>,
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
        let known = BatchKnown {
            ledger: self,
            admitted,
        };
        let (label, _) = self.state.check(&known, s, content)?;
        if let Some(b) = &e.binding {
            admitted.keys.insert(b.key, b.role);
        }
        admitted.entries.insert(s.id(), Meta { index, label });
        Ok(label)
    }
}

/// The log as the admission rule sees it during a batch append: the ledger's rows, plus the
/// entries and bindings of the batch admitted so far.
struct BatchKnown<'a, S: Store> {
    ledger: &'a Ledger<S>,
    admitted: &'a Admitted,
}

impl<S: Store> Known for BatchKnown<'_, S> {
    fn label_of(&self, id: &EntryId) -> Option<Label> {
        self.ledger
            .label(id)
            .or_else(|| self.admitted.entries.get(id).map(|m| m.label))
    }

    fn index_of(&self, id: &EntryId) -> Option<u64> {
        self.ledger
            .index_of(id)
            .or_else(|| self.admitted.entries.get(id).map(|m| m.index))
    }

    fn pending_role(&self, key: &KeyId) -> Option<Role> {
        self.admitted.keys.get(key).copied()
    }
}
