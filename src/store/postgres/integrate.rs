//! Integration (`spec/storage.md` §11.4): the sequenced entries the log admits enter the
//! tree, and the log's checkpoint of the new tree is stored, in one transaction.

use super::*;

/// What one [`PgStore::integrate`] call did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Integration {
    /// Another process holds the integrator lock of this ledger; nothing was done.
    Busy,
    /// Nothing was waiting; the tree has `size` leaves.
    Idle {
        /// The tree size.
        size: u64,
    },
    /// Leaves `old..new` were integrated and a checkpoint for `new` was stored and announced.
    Integrated {
        /// Tree size before.
        old: u64,
        /// Tree size after.
        new: u64,
        /// The new root, `MTH(D[new])`.
        root: RootHash,
        /// The signed checkpoint note stored for `new`.
        note: Vec<u8>,
    },
}

/// One sequenced `entries` row as an integration reads it (untrusted: a store-only attacker
/// may have written it without any key).
#[derive(Clone, Debug)]
pub struct SequencedRow {
    /// Leaf index the sequencer gave it.
    pub index: u64,
    /// The stored entry id.
    pub id: EntryId,
    /// The stored entry kind.
    pub kind: Kind,
    /// The stored COSE_Sign1 bytes.
    pub cose: Vec<u8>,
    /// The stored content, when a content row is there.
    pub content: Option<Vec<u8>>,
}

/// The log's part of an integration ([`PgStore::integrate`]), called inside the store's
/// transaction: the store reads and writes rows and decides nothing; admitting the sequenced
/// entries, hashing the tree and signing checkpoints is the log's work
/// ([`crate::ledger::Integrator`] does it with a handle of the ledger and its log key). Calls
/// run on the store's worker thread; [`IntegrationWork::admit`] may read the ledger through
/// another connection.
pub trait IntegrationWork: Send + Sync + 'static {
    /// How many of `rows` (the sequenced rows from leaf index `old` on, contiguous, as read
    /// inside the integration's transaction) the log admits into its tree: the longest
    /// prefix whose entries verify and pass the admission rule against the log of `old`
    /// leaves and the prefix's earlier entries (`spec/storage.md` §11.4). At least one when
    /// `rows` is not empty.
    ///
    /// # Errors
    /// [`StoreError::NotAdmitted`] when the first row is refused (nothing is integrated: the
    /// log key never signs a tree holding it); store errors of the log's own reads.
    fn admit(&self, old: u64, rows: &[SequencedRow]) -> Result<usize, StoreError>;

    /// The stored-hash indexes whose hashes extending a tree of `old` leaves to `new` needs.
    ///
    /// # Errors
    /// [`StoreError::OutOfRange`] or [`StoreError::Corrupt`] for sizes the log cannot extend.
    fn reads(&self, old: u64, new: u64) -> Result<Vec<u64>, StoreError>;

    /// The tree of `old` leaves extended by `leaves`, from the hashes at [`Self::reads`] (in
    /// that order), and the signed checkpoint note for the new tree. `stored_root` is the root
    /// `tree_state` records for `old` leaves.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when `reads` do not give `stored_root` (or do not fit);
    /// [`StoreError::MissingHash`].
    fn extend(
        &self,
        old: u64,
        stored_root: &[u8; 32],
        reads: &[[u8; 32]],
        leaves: &[EntryId],
    ) -> Result<(Extension, Vec<u8>), StoreError>;
}

/// Locks and reads `tree_state`.
pub(super) async fn lock_tree_state(c: &Client) -> Result<(u64, [u8; 32]), StoreError> {
    let row = c
        .query_one("SELECT size, root FROM tree_state FOR UPDATE", &[])
        .await?;
    Ok((
        to_u64(row.try_get(0)?, "tree_state.size")?,
        bytes32(row.try_get(1)?, "tree_state.root")?,
    ))
}

/// Recomputes the extension of the tree from `old` by `leaves` from the stored hashes, to
/// check a caller-hashed batch ([`Store::append`]) and derive its tiles.
pub(super) async fn extension(
    c: &Client,
    old: u64,
    leaves: &[EntryId],
) -> Result<Extension, StoreError> {
    let new = new_size(old, leaves)?;
    let at = extension_reads(old, new).map_err(log_err)?;
    let reads = read_hashes(c, &at).await?;
    extend(old, &reads, leaves).map_err(log_err)
}

/// The tree size after `leaves` join `old` leaves.
pub(super) fn new_size(old: u64, leaves: &[EntryId]) -> Result<u64, StoreError> {
    let new = old
        .checked_add(leaves.len() as u64)
        .ok_or(StoreError::OutOfRange {
            got: u64::MAX,
            max: MAX_INDEX,
        })?;
    check_range(new)?;
    Ok(new)
}

/// [`StoreError::Corrupt`] unless `computed` (from the stored hashes) is the root `tree_state`
/// records for `size` leaves.
pub(crate) fn check_root(
    size: u64,
    stored: &[u8; 32],
    computed: &RootHash,
) -> Result<(), StoreError> {
    if *stored != computed.0 {
        return Err(StoreError::Corrupt {
            reason: format!(
                "tree_state root for size {size} is not the root of the stored tree hashes"
            ),
        });
    }
    Ok(())
}

/// Inserts the new stored hashes, upserts the tiles and updates `tree_state`.
pub(super) async fn write_extension(
    c: &Client,
    old: u64,
    new: u64,
    ext: &Extension,
) -> Result<(), StoreError> {
    let start = crate::log::stored_hash_index(0, old);
    let idx: Vec<i64> = (start..)
        .take(ext.hashes.len())
        .map(to_i64)
        .collect::<Result<_, _>>()?;
    let hashes: Vec<&[u8]> = ext.hashes.iter().map(|h| &h[..]).collect();
    c.execute(
        "INSERT INTO tree_hashes (idx, hash) SELECT * FROM unnest($1::bigint[], $2::bytea[])",
        &[&idx, &hashes],
    )
    .await?;
    let mut levels = Vec::with_capacity(ext.tiles.len());
    let mut tidx = Vec::with_capacity(ext.tiles.len());
    let mut widths = Vec::with_capacity(ext.tiles.len());
    let mut data = Vec::with_capacity(ext.tiles.len());
    for (t, d) in &ext.tiles {
        levels.push(i16::from(t.level));
        tidx.push(to_i64(t.index)?);
        // width <= 256
        widths.push(i16::try_from(t.width).unwrap_or(i16::MAX));
        data.push(d.as_slice());
    }
    c.execute(
        "INSERT INTO tiles (level, idx, width, data) \
         SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::smallint[], $4::bytea[]) \
         ON CONFLICT (level, idx) DO UPDATE SET width = excluded.width, data = excluded.data",
        &[&levels, &tidx, &widths, &data],
    )
    .await?;
    c.execute(
        "UPDATE tree_state SET size = $1, root = $2",
        &[&to_i64(new)?, &&ext.new_root.0[..]],
    )
    .await?;
    Ok(())
}

pub(super) async fn integrate(
    c: &Client,
    schema: &str,
    work: &dyn IntegrationWork,
    max: u64,
) -> Result<Integration, StoreError> {
    let done = transaction(c, async {
        let chosen: bool = c
            .query_one(
                "SELECT pg_try_advisory_xact_lock($1)",
                &[&lock_key("integrate", schema)],
            )
            .await?
            .try_get(0)?;
        if !chosen {
            return Ok(Integration::Busy);
        }
        let (old, root) = lock_tree_state(c).await?;
        let limit = to_i64(max.min(MAX_INDEX))?;
        let rows = c
            .query(
                "SELECT e.idx, e.id, e.kind, e.cose, c.bytes FROM entries e \
                 LEFT JOIN content c ON c.hash = e.content_hash \
                 WHERE e.idx >= $1 ORDER BY e.idx LIMIT $2",
                &[&to_i64(old)?, &limit],
            )
            .await?;
        let mut sequenced = Vec::with_capacity(rows.len());
        for (want, r) in (old..).zip(&rows) {
            let idx = to_u64(r.try_get(0)?, "entries.idx")?;
            if idx != want {
                return Err(StoreError::Corrupt {
                    reason: format!("sequenced entries: index {idx} where {want} was expected"),
                });
            }
            sequenced.push(SequencedRow {
                index: idx,
                id: EntryId(bytes32(r.try_get(1)?, "entries.id")?),
                kind: kind_of(idx, r.try_get(2)?)?,
                cose: r.try_get(3)?,
                content: r.try_get(4)?,
            });
        }
        if sequenced.is_empty() {
            return Ok(Integration::Idle { size: old });
        }
        // Only entries the log admits enter the tree it signs (a prefix: leaves are
        // contiguous); a refused first row stops the integration.
        let admitted = work.admit(old, &sequenced)?.min(sequenced.len());
        let leaves: Vec<EntryId> = sequenced[..admitted].iter().map(|r| r.id).collect();
        let new = new_size(old, &leaves)?;
        let reads = read_hashes(c, &work.reads(old, new)?).await?;
        let (ext, note) = work.extend(old, &root, &reads, &leaves)?;
        write_extension(c, old, new, &ext).await?;
        c.execute(UPSERT_CHECKPOINT, &[&to_i64(new)?, &note])
            .await?;
        c.execute(
            "SELECT pg_notify($1, $2)",
            &[&format!("memlineage_{schema}"), &new.to_string()],
        )
        .await?;
        Ok(Integration::Integrated {
            old,
            new,
            root: ext.new_root,
            note,
        })
    })
    .await?;
    if let Integration::Integrated { old, new, .. } = &done {
        analyze_if_grown(c, *old, *new).await;
    }
    Ok(done)
}

pub(super) async fn analyze(c: &Client) -> Result<(), StoreError> {
    c.batch_execute("ANALYZE entries, content, tree_hashes, tiles, checkpoints")
        .await?;
    Ok(())
}

/// `ANALYZE` when the tree crossed a power of two at or above [`ANALYZE_FROM`]; best effort
/// (statistics only: a failure changes no data).
pub(super) async fn analyze_if_grown(c: &Client, old: u64, new: u64) {
    if new >= ANALYZE_FROM && (old < ANALYZE_FROM || new.ilog2() > old.ilog2()) {
        let _ = analyze(c).await;
    }
}
