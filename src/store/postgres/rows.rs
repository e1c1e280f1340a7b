//! [`Store`] for [`PgStore`]: reading and writing the ledger's rows (`spec/storage.md` §11).

use super::*;

impl Store for PgStore {
    /// `tree_state.size`: integrated entries.
    fn tree_size(&self) -> Result<u64, StoreError> {
        self.call(|c| async move { tree_size(&c).await })
    }

    /// Checks, stores and integrates a numbered, hashed batch in one transaction (locking
    /// `sequencer` then `tree_state`). Besides the checks every store makes, the given tree
    /// hashes must be the RFC 6962 hashes of the ids ([`StoreError::WrongHashes`]).
    fn append(&mut self, batch: &[NewEntry<'_>]) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let owned: Vec<OwnedEntry> = batch.iter().map(OwnedEntry::from).collect();
        self.call(move |c| async move { append_hashed(&c, owned).await })
    }

    fn entry_bytes(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Ok(idx) = i64::try_from(index) else {
            return Ok(None);
        };
        self.call(move |c| async move {
            let row = c
                .query_opt("SELECT cose FROM entries WHERE idx = $1", &[&idx])
                .await?;
            Ok(match row {
                Some(r) => Some(r.try_get::<_, Vec<u8>>(0)?),
                None => None,
            })
        })
    }

    fn index_of(&self, id: &EntryId) -> Result<Option<u64>, StoreError> {
        let id = id.0.to_vec();
        self.call(move |c| async move {
            let row = c
                .query_opt("SELECT idx FROM entries WHERE id = $1", &[&id])
                .await?;
            match row {
                Some(r) => Ok(Some(to_u64(r.try_get(0)?, "entries.idx")?)),
                None => Ok(None),
            }
        })
    }

    /// Integrated entries from `from` on, in one query; checks indexes are contiguous.
    fn metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError> {
        self.metas_where("", from, true)
    }

    /// One query in index order, integrated rows only; checks that indexes run contiguously.
    fn rows_from(&self, from: u64, limit: usize) -> Result<Vec<(EntryMeta, Vec<u8>)>, StoreError> {
        let Ok(from_i) = i64::try_from(from) else {
            return Ok(Vec::new());
        };
        let limit_i = i64::try_from(limit).unwrap_or(i64::MAX);
        self.call(move |c| async move {
            let rows = c
                .query(
                    "SELECT idx, id, kind, label, tag, cose FROM entries \
                     WHERE idx >= $1 AND idx < (SELECT size FROM tree_state) \
                     ORDER BY idx LIMIT $2",
                    &[&from_i, &limit_i],
                )
                .await?;
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                let m = meta_row(&r)?;
                let want = from + out.len() as u64;
                if m.index != want {
                    return Err(StoreError::Corrupt {
                        reason: format!("entries: index {} where {want} was expected", m.index),
                    });
                }
                out.push((m, r.try_get::<_, Vec<u8>>(5)?));
            }
            Ok(out)
        })
    }

    /// An integrated entry by index.
    fn meta_at(&self, index: u64) -> Result<Option<EntryMeta>, StoreError> {
        let Ok(idx) = i64::try_from(index) else {
            return Ok(None);
        };
        self.one_meta("idx", idx)
    }

    /// An integrated entry by id (one lookup by the unique index on `id`).
    fn meta_of(&self, id: &EntryId) -> Result<Option<EntryMeta>, StoreError> {
        self.one_meta("id", id.0.to_vec())
    }

    /// Integrated entries with effects, from the partial index `entries_effects`.
    fn effect_metas_from(&self, from: u64) -> Result<Vec<EntryMeta>, StoreError> {
        self.metas_where(EFFECTS_FILTER, from, false)
    }

    /// From the index `entries_context`, integrated rows only.
    fn context_candidates(&self, context: &Hash32, below: u64) -> Result<Vec<u64>, StoreError> {
        let below = i64::try_from(below).unwrap_or(i64::MAX);
        let context = context.0.to_vec();
        self.call(move |c| async move {
            let rows = c
                .query(
                    "SELECT idx FROM entries WHERE (context IS NULL OR context = $1) \
                     AND idx < $2 AND idx < (SELECT size FROM tree_state) ORDER BY idx",
                    &[&context, &below],
                )
                .await?;
            rows.iter()
                .map(|r| to_u64(r.try_get(0)?, "entries.idx"))
                .collect()
        })
    }

    /// One transaction: the tags (`UPDATE … FROM unnest`), then the setting.
    fn set_tags(
        &mut self,
        tags: &[(u64, [u8; 32])],
        key: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        let mut idx = Vec::with_capacity(tags.len());
        for (i, _) in tags {
            idx.push(to_i64(*i)?);
        }
        let tag: Vec<Vec<u8>> = tags.iter().map(|(_, t)| t.to_vec()).collect();
        let (key, value) = (key.to_string(), value.to_string());
        self.call(move |c| async move {
            transaction(&c, async {
                let n = c
                    .execute(
                        "UPDATE entries SET tag = t.tag \
                         FROM unnest($1::bigint[], $2::bytea[]) AS t(idx, tag) \
                         WHERE entries.idx = t.idx",
                        &[&idx, &tag],
                    )
                    .await?;
                if n != idx.len() as u64 {
                    return Err(StoreError::Corrupt {
                        reason: format!("set_tags: {n} of {} entries stored", idx.len()),
                    });
                }
                c.execute(UPSERT_META, &[&key, &value]).await?;
                Ok(())
            })
            .await
        })
    }

    /// One query for all indexes (`idx = ANY($1)`).
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, StoreError> {
        let indexes = indexes.to_vec();
        self.call(move |c| async move { read_hashes(&c, &indexes).await })
    }

    fn content_at(&self, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Ok(idx) = i64::try_from(index) else {
            return Ok(None);
        };
        self.call(move |c| async move {
            let row = c
                .query_opt(
                    "SELECT c.bytes FROM entries e JOIN content c ON c.hash = e.content_hash \
                     WHERE e.idx = $1",
                    &[&idx],
                )
                .await?;
            Ok(match row {
                Some(r) => Some(r.try_get::<_, Vec<u8>>(0)?),
                None => None,
            })
        })
    }

    fn content(&self, hash: &Hash32) -> Result<Option<Vec<u8>>, StoreError> {
        let h = hash.0.to_vec();
        self.call(move |c| async move {
            let row = c
                .query_opt("SELECT bytes FROM content WHERE hash = $1", &[&h])
                .await?;
            Ok(match row {
                Some(r) => Some(r.try_get::<_, Vec<u8>>(0)?),
                None => None,
            })
        })
    }

    /// `content_epoch.epoch`: moved by the triggers of `schema_pg_epoch.sql` whenever content
    /// rows are changed or removed or entry rows rewritten or removed, by any connection
    /// (`spec/storage.md` §11.2).
    /// `None` (cannot tell: nothing is kept) when the row is missing or negative.
    fn content_epoch(&self) -> Result<Option<u64>, StoreError> {
        self.call(|c| async move {
            let row = c.query_opt("SELECT epoch FROM content_epoch", &[]).await?;
            Ok(match row {
                Some(r) => u64::try_from(r.try_get::<_, i64>(0)?).ok(),
                None => None,
            })
        })
    }

    /// Deletes the content row. PostgreSQL keeps the dead row version until `VACUUM` reclaims
    /// it (and WAL segments until they are recycled): unlike SQLite's `secure_delete`, bytes are
    /// not scrubbed at once.
    fn redact(&mut self, hash: &Hash32) -> Result<bool, StoreError> {
        let h = hash.0.to_vec();
        self.call(move |c| async move {
            let n = c
                .execute("DELETE FROM content WHERE hash = $1", &[&h])
                .await?;
            Ok(n > 0)
        })
    }

    fn put_checkpoint(&mut self, size: u64, note: &[u8]) -> Result<(), StoreError> {
        check_range(size)?;
        let size = to_i64(size)?;
        let note = note.to_vec();
        self.call(move |c| async move {
            c.execute(UPSERT_CHECKPOINT, &[&size, &note]).await?;
            Ok(())
        })
    }

    fn latest_checkpoint(&self) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        self.call(|c| async move {
            let row = c
                .query_opt(
                    "SELECT size, note FROM checkpoints ORDER BY size DESC LIMIT 1",
                    &[],
                )
                .await?;
            match row {
                Some(r) => Ok(Some((
                    to_u64(r.try_get(0)?, "checkpoints.size")?,
                    r.try_get(1)?,
                ))),
                None => Ok(None),
            }
        })
    }

    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        let key = key.to_string();
        self.call(move |c| async move {
            let row = c
                .query_opt("SELECT value FROM meta WHERE key = $1", &[&key])
                .await?;
            Ok(match row {
                Some(r) => Some(r.try_get::<_, String>(0)?),
                None => None,
            })
        })
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        let (key, value) = (key.to_string(), value.to_string());
        self.call(move |c| async move {
            c.execute(UPSERT_META, &[&key, &value]).await?;
            Ok(())
        })
    }
}

/// The stored `entries.kind` code of leaf `index`.
pub(super) fn kind_of(index: u64, code: i16) -> Result<Kind, StoreError> {
    u64::try_from(code)
        .ok()
        .and_then(Kind::from_code)
        .ok_or_else(|| StoreError::Corrupt {
            reason: format!("entry {index}: kind {code}"),
        })
}

/// An `entries` row's `idx, id, kind, label, tag` columns.
pub(super) fn meta_row(r: &tokio_postgres::Row) -> Result<EntryMeta, StoreError> {
    let index = to_u64(r.try_get(0)?, "entries.idx")?;
    let id = EntryId(bytes32(r.try_get(1)?, "entries.id")?);
    let kind = kind_of(index, r.try_get(2)?)?;
    let label_code: i16 = r.try_get(3)?;
    let label = u8::try_from(label_code)
        .ok()
        .and_then(Label::from_code)
        .ok_or_else(|| StoreError::Corrupt {
            reason: format!("entry {index}: label {label_code}"),
        })?;
    let tag = match r.try_get::<_, Option<Vec<u8>>>(4)? {
        Some(t) => Some(bytes32(t, "entries.tag")?),
        None => None,
    };
    Ok(EntryMeta {
        index,
        id,
        kind,
        label,
        tag,
    })
}
