//! Catching up with the store (`spec/lineage.md` §5.1): the rows other handles appended since
//! this one last looked, checked against the label seal (each sealed row's tag and the effects
//! chain) or verified and labelled again from their signed bytes, and applied in log order.

use super::*;

impl<S: Store> Ledger<S> {
    /// Catches up with entries other handles (threads, processes) appended to the same store
    /// since this one last looked: the entries with effects among them (keyring bindings,
    /// tombstones, flags, leases), checked against the label seal (`spec/lineage.md` §5.1),
    /// and, while a flag is active, every new entry (quarantine reach). Entries the seal does
    /// not cover yet are verified and labelled again from their signed bytes. Returns how many
    /// entries were added.
    ///
    /// # Errors
    /// [`LedgerError::Seal`] when the store's entries with effects differ from what the log key
    /// sealed, a row's tag does not verify, or the store holds fewer entries than sealed (fail
    /// closed: the handle keeps its earlier state);
    /// [`LedgerError::BehindSignedCheckpoint`] when the store holds fewer entries than the
    /// newest checkpoint the log key signed that this handle can find (the store's, the side
    /// file, [`Ledger::know_checkpoint`]), as [`Ledger::open_with`] refuses it (attack review
    /// 57); checkpoint errors for a head that does not verify; store and decode errors.
    pub fn refresh(&mut self) -> Result<u64, LedgerError> {
        let sealed = match self.store.meta(META_SEAL)? {
            // memlineage 0.1's chain over every row is not believed: its rows are verified
            // and labelled again, and sealed with row tags by the next append or checkpoint.
            Some(v) if seal::is_v1(&v) => Sealed::EMPTY,
            Some(v) => self.seal_key.open(&v)?,
            None => Sealed::EMPTY,
        };
        // As on open: a store behind a head the log key signed was cut or rolled back below
        // what this handle may not have seen yet (attack review 57). The heads first: one
        // committed meanwhile is never newer than the size read after it.
        let signed = self.newest_signed_size()?;
        let stored = self.store.tree_size()?;
        if signed > stored {
            return Err(LedgerError::BehindSignedCheckpoint { signed, stored });
        }
        if sealed.size > stored {
            return Err(SealError::Behind {
                sealed: sealed.size,
                stored,
            }
            .into());
        }
        let before = self.size;
        let mut rescan: Option<u64> = self.pending_rescan;
        if sealed.size > self.size {
            // Check everything first, so that a refused refresh changes nothing.
            let rows = self.sealed_rows(&sealed)?;
            self.sealed = sealed.size;
            self.index.sealed_below(sealed.size);
            for m in rows {
                self.take_row(m, false, &mut rescan)?;
            }
            self.effects = sealed.effects;
            self.size = sealed.size;
        }
        if stored > self.size {
            let tail = self.store.metas_from(self.size)?;
            self.check_tail(&tail)?;
            for m in tail {
                self.take_row(m, true, &mut rescan)?;
                self.size = m.index + 1;
            }
        }
        if let Some(from) = rescan {
            self.pending_rescan = Some(from);
            match self.resume_quarantine(from) {
                Some(from) => self.rescan_quarantine(from)?,
                None => self.pending_rescan = None,
            }
        }
        Ok(self.size - before)
    }

    /// The stored rows in `self.size..sealed.size` a refresh must apply (those with effects;
    /// all of them while a flag is active), after checking each one's row tag and the effects
    /// chain over them against `sealed`.
    fn sealed_rows(&self, sealed: &Sealed) -> Result<Vec<EntryMeta>, LedgerError> {
        let mut rows = if self.state.quarantine().is_active() {
            self.store.metas_from(self.size)?
        } else {
            self.store.effect_metas_from(self.size)?
        };
        rows.retain(|m| m.index < sealed.size);
        let mut chain = self.effects;
        let mut last = None;
        for m in &rows {
            if last.is_some_and(|l| m.index <= l) || m.index < self.size {
                return Err(SealError::Mismatch { size: sealed.size }.into());
            }
            last = Some(m.index);
            if !self.seal_key.verifies(m) {
                return Err(SealError::Row { index: m.index }.into());
            }
            if m.kind.has_effects() {
                chain.push(m.index, &m.id, m.kind);
            }
        }
        if chain != sealed.effects {
            return Err(SealError::Mismatch { size: sealed.size }.into());
        }
        Ok(rows)
    }

    /// Binds the positions of rows after the seal, which are verified from their signed bytes
    /// (and those do not sign a position): a row that carries a tag must carry the one for its
    /// index (a renumbered row does not), and every row that a signed checkpoint covers (the
    /// larger of the store's latest and its durable one) must be the leaf of that tree at its
    /// index, by an inclusion proof from the stored hashes. So a store-only attacker cannot
    /// cut an entry (a flag) out of the log under an older or deleted seal and close the gap
    /// (`spec/lineage.md` §5.1 step 4). O(rows × log n), only for rows after the seal.
    fn check_tail(&self, tail: &[EntryMeta]) -> Result<(), LedgerError> {
        if tail.is_empty() {
            return Ok(());
        }
        let signed = signed::newest_signed(&self.store, &self.verifier()?, &self.known)?;
        for m in tail {
            if m.tag.is_some() && !self.seal_key.verifies(m) {
                return Err(SealError::Row { index: m.index }.into());
            }
            if let Some(c) = signed.as_ref().filter(|c| m.index < c.size()) {
                let proof = crate::log::prove_inclusion(
                    c.size(),
                    m.index,
                    &prove::StoreSource(&self.store),
                )?;
                if c.verify_inclusion(&m.id, &proof).is_err() {
                    return Err(SealError::NotInTree {
                        index: m.index,
                        size: c.size(),
                    }
                    .into());
                }
            }
        }
        Ok(())
    }

    /// Applies one stored row in log order, through the one door of the lineage state
    /// (`spec/lineage.md` §5.2): a row after the seal (`unsealed`) or with effects is verified
    /// from its signed bytes and admitted by [`LineageState::admit`] against the log before it
    /// (its writer bound, its parents and target known, keyring entries by the log key, the
    /// forensic rules), which labels it and applies its effects; a sealed row's tagged label
    /// must be the one admission gives. While a flag is active, the parents of the other rows
    /// feed the quarantine ([`LineageState::apply`]). Rows this handle admitted itself (its
    /// sequenced PostgreSQL entries) are not taken twice.
    ///
    /// # Errors
    /// [`SealError::Inadmissible`] for a row admission refuses, [`SealError::Row`] for a
    /// sealed row whose label admission does not confirm; decode and store errors.
    fn take_row(
        &mut self,
        m: EntryMeta,
        unsealed: bool,
        rescan: &mut Option<u64>,
    ) -> Result<(), LedgerError> {
        let EntryMeta {
            index, id, kind, ..
        } = m;
        let special = kind.has_effects();
        if !(unsealed || special || self.state.quarantine().is_active()) {
            return Ok(());
        }
        if unsealed && self.index.unsealed_at(&id, index) {
            return Ok(());
        }
        let bytes = self
            .store
            .entry_bytes(index)?
            .ok_or(LedgerError::Missing(id))?;
        let known = Before {
            rows: Rows {
                store: &self.store,
                index: &self.index,
                seal_key: &self.seal_key,
                sealed: self.sealed,
            },
            below: index,
            sealed: (!unsealed).then_some(id),
        };
        let from = if unsealed || special {
            let s = SignedEntry::decode_with_keys(&bytes, |k| self.cached_key(k))?;
            if s.id() != id || s.entry().kind != kind {
                return Err(LedgerError::NotTheEntry { id, index });
            }
            // Content is read where admission judges it: rows after the seal, and lease terms.
            let content = match unsealed || kind == Kind::Lease {
                true => self.store.content_at(index)?,
                false => None,
            };
            let a = self
                .state
                .admit(&known, index, &s, Content::Stored(content.as_deref()))
                .map_err(|reason| SealError::Inadmissible { index, reason })?;
            if unsealed {
                // Beyond the seal the stored label is not believed: admission gave it.
                self.index.insert_unsealed(
                    id,
                    Meta {
                        index,
                        label: a.label,
                    },
                    kind,
                );
                if special {
                    self.effects.push(index, &id, kind);
                }
            } else {
                if a.label != m.label {
                    return Err(SealError::Row { index }.into());
                }
                self.index.remember(
                    id,
                    Meta {
                        index,
                        label: a.label,
                    },
                );
            }
            a.rescan
        } else {
            // A sealed row without effects, read while a flag is active: its parents feed the
            // quarantine. Its bytes are bound to the sealed id by their leaf hash.
            let e = parse_unverified(&bytes)?;
            if EntryId::of_cose(&bytes) != id || e.kind != kind {
                return Err(LedgerError::NotTheEntry { id, index });
            }
            self.state.apply(&known, index, id, &e, None)
        };
        // Recorded at once: a later read error must not lose it.
        self.pending_rescan = earliest(self.pending_rescan, from);
        *rescan = earliest(*rescan, from);
        Ok(())
    }
}

/// The log before leaf `below`, as a handle believes it: what admission of the entry at
/// `below` may see (never the entry itself, nor anything after it). `sealed` is the id of the
/// entry at `below` when its row is sealed: the store's row for that id is the one being
/// taken (ids are unique in the store), so it is not looked up again.
struct Before<'a, S: Store> {
    rows: Rows<'a, S>,
    below: u64,
    sealed: Option<EntryId>,
}

impl<S: Store> Known for Before<'_, S> {
    fn label_of(&self, id: &EntryId) -> Option<Label> {
        if self.sealed.as_ref() == Some(id) {
            return None;
        }
        match self.rows.lookup(id) {
            Ok(Some(m)) if m.index < self.below => Some(m.label),
            Ok(_) => None,
            Err(_) => Some(Label::External),
        }
    }

    fn index_of(&self, id: &EntryId) -> Option<u64> {
        self.rows
            .lookup(id)
            .ok()
            .flatten()
            .map(|m| m.index)
            .filter(|i| *i < self.below)
    }
}
