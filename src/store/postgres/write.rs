//! Writing entries: the sequencer's batches (`spec/storage.md` §11.2) and appends that
//! number and hash their entries (`Store::append`).

use super::*;

/// A [`NewEntry`] with owned bytes, to move into a job.
pub(super) struct OwnedEntry {
    index: u64,
    id: EntryId,
    cose: Vec<u8>,
    kind: Kind,
    label: Label,
    content: Option<(Hash32, Vec<u8>)>,
    hashes: Vec<[u8; 32]>,
    tag: Option<[u8; 32]>,
    context: Option<Hash32>,
}

impl From<&NewEntry<'_>> for OwnedEntry {
    fn from(e: &NewEntry<'_>) -> Self {
        OwnedEntry {
            index: e.index,
            id: e.id,
            cose: e.cose.to_vec(),
            kind: e.kind,
            label: e.label,
            content: e.content.map(|(h, b)| (h, b.to_vec())),
            hashes: e.hashes.clone(),
            tag: e.tag,
            context: e.context,
        }
    }
}

impl OwnedEntry {
    fn view(&self) -> NewEntry<'_> {
        NewEntry {
            index: self.index,
            id: self.id,
            cose: &self.cose,
            kind: self.kind,
            label: self.label,
            content: self.content.as_ref().map(|(h, b)| (*h, b.as_slice())),
            hashes: self.hashes.clone(),
            tag: self.tag,
            context: self.context,
        }
    }
}

pub(super) async fn sequence(c: &Client, batch: Vec<Submission>) -> Result<Vec<u64>, StoreError> {
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let n = batch.len();
    let mut ids = Vec::with_capacity(n);
    let mut coses = Vec::with_capacity(n);
    let mut kinds = Vec::with_capacity(n);
    let mut labels = Vec::with_capacity(n);
    let mut hashes = Vec::with_capacity(n);
    let mut contents = Vec::with_capacity(n);
    for s in &batch {
        ids.push(&s.id.0[..]);
        coses.push(s.cose.as_slice());
        kinds.push(kind_code(s.kind)?);
        labels.push(i16::from(s.label.code()));
        hashes.push(s.content.as_ref().map(|(h, _)| &h.0[..]));
        contents.push(s.content.as_ref().map(|(_, b)| b.as_slice()));
    }
    let row = c
        .query_one(
            "SELECT append_entries($1, $2, $3, $4, $5, $6)",
            &[&ids, &coses, &kinds, &labels, &hashes, &contents],
        )
        .await?;
    let out: Vec<i64> = row.try_get(0)?;
    if out.len() != n {
        return Err(StoreError::Corrupt {
            reason: format!(
                "append_entries returned {} indexes for {n} entries",
                out.len()
            ),
        });
    }
    // Every insert inserted: each entry is in this ledger's `entries` at the index the
    // sequencer gave (a function or table changed without the key could put it elsewhere).
    let found: i64 = c
        .query_one(
            "SELECT count(*) FROM entries e JOIN unnest($1::bytea[], $2::bigint[]) AS s(id, idx) \
             ON e.id = s.id AND e.idx = s.idx",
            &[&ids, &out],
        )
        .await?
        .try_get(0)?;
    if usize::try_from(found).ok() != Some(n) {
        return Err(StoreError::Corrupt {
            reason: format!(
                "the sequencer stored {found} of {n} entries where it said: the ledger's schema \
             was changed without the key"
            ),
        });
    }
    // The context index column (spec/storage.md §4.5), by id: a crash before this leaves the
    // rows without it, candidates of every lookup (fail closed, never hidden).
    let contexts: Vec<Option<&[u8]>> = batch
        .iter()
        .map(|s| s.context.as_ref().map(|h| &h.0[..]))
        .collect();
    c.execute(
        "UPDATE entries SET context = t.context \
         FROM unnest($1::bytea[], $2::bytea[]) AS t(id, context) \
         WHERE entries.id = t.id AND entries.context IS NULL",
        &[&ids, &contexts],
    )
    .await?;
    out.into_iter()
        .map(|i| to_u64(i, "append_entries"))
        .collect()
}

/// `Store::append`: check, store and integrate a caller-numbered, caller-hashed batch.
pub(super) async fn append_hashed(c: &Client, batch: Vec<OwnedEntry>) -> Result<(), StoreError> {
    let (size, new) = transaction(c, async {
        let next = to_u64(
            c.query_one("SELECT next FROM sequencer FOR UPDATE", &[])
                .await?
                .try_get(0)?,
            "sequencer.next",
        )?;
        let (size, root) = lock_tree_state(c).await?;
        let views: Vec<NewEntry<'_>> = batch.iter().map(OwnedEntry::view).collect();
        if next != size {
            // Entries sequenced by `sequence` wait for the integrator: this batch is not next.
            let got = views.first().map_or(next, |e| e.index);
            return Err(StoreError::NotContiguous { got, want: next });
        }
        check_batch(size, &views)?;
        let ids: Vec<&[u8]> = batch.iter().map(|e| &e.id.0[..]).collect();
        let stored: HashSet<Vec<u8>> = c
            .query("SELECT id FROM entries WHERE id = ANY($1)", &[&ids])
            .await?
            .into_iter()
            .map(|r| r.try_get::<_, Vec<u8>>(0))
            .collect::<Result<_, _>>()?;
        if let Some(e) = batch.iter().find(|e| stored.contains(&e.id.0[..])) {
            return Err(StoreError::Duplicate(e.id));
        }
        let leaves: Vec<EntryId> = batch.iter().map(|e| e.id).collect();
        let ext = extension(c, size, &leaves).await?;
        check_root(size, &root, &ext.old_root)?;
        let given: Vec<[u8; 32]> = batch.iter().flat_map(|e| e.hashes.clone()).collect();
        if given != ext.hashes {
            // Name the first entry whose hashes differ.
            let mut at = 0;
            for e in &batch {
                let end = at + e.hashes.len();
                if ext.hashes.get(at..end) != Some(&e.hashes[..]) {
                    return Err(StoreError::WrongHashes { index: e.index });
                }
                at = end;
            }
            return Err(StoreError::WrongHashes { index: size });
        }
        insert_entries(c, &batch).await?;
        let new = size + batch.len() as u64;
        write_extension(c, size, new, &ext).await?;
        c.execute("UPDATE sequencer SET next = $1", &[&to_i64(new)?])
            .await?;
        Ok((size, new))
    })
    .await?;
    analyze_if_grown(c, size, new).await;
    Ok(())
}

pub(super) async fn insert_entries(c: &Client, batch: &[OwnedEntry]) -> Result<(), StoreError> {
    let mut idx = Vec::with_capacity(batch.len());
    let mut kinds = Vec::with_capacity(batch.len());
    for e in batch {
        idx.push(to_i64(e.index)?);
        kinds.push(kind_code(e.kind)?);
    }
    let ids: Vec<&[u8]> = batch.iter().map(|e| &e.id.0[..]).collect();
    let coses: Vec<&[u8]> = batch.iter().map(|e| e.cose.as_slice()).collect();
    let labels: Vec<i16> = batch.iter().map(|e| i16::from(e.label.code())).collect();
    let chash: Vec<Option<&[u8]>> = batch
        .iter()
        .map(|e| e.content.as_ref().map(|(h, _)| &h.0[..]))
        .collect();
    let tags: Vec<Option<&[u8]>> = batch
        .iter()
        .map(|e| e.tag.as_ref().map(|t| &t[..]))
        .collect();
    let contexts: Vec<Option<&[u8]>> = batch
        .iter()
        .map(|e| e.context.as_ref().map(|h| &h.0[..]))
        .collect();
    c.execute(
        "INSERT INTO entries (idx, id, cose, kind, label, content_hash, tag, context) \
         SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[], $4::smallint[], \
                              $5::smallint[], $6::bytea[], $7::bytea[], $8::bytea[])",
        &[
            &idx, &ids, &coses, &kinds, &labels, &chash, &tags, &contexts,
        ],
    )
    .await?;
    // First bytes win, also within the batch: keep the first occurrence of each hash.
    let mut seen = HashSet::new();
    let (mut hs, mut bs): (Vec<&[u8]>, Vec<&[u8]>) = (Vec::new(), Vec::new());
    for (h, b) in batch.iter().filter_map(|e| e.content.as_ref()) {
        if seen.insert(*h) {
            hs.push(&h.0[..]);
            bs.push(b.as_slice());
        }
    }
    if !hs.is_empty() {
        c.execute(
            "INSERT INTO content (hash, bytes) SELECT * FROM unnest($1::bytea[], $2::bytea[]) \
             ON CONFLICT (hash) DO NOTHING",
            &[&hs, &bs],
        )
        .await?;
    }
    Ok(())
}
