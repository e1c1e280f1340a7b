//! C2SP tlog-tiles (<https://c2sp.org/tlog-tiles>): tile coordinates and paths, tile data from
//! stored hashes, a static export of a checkpoint with its tiles and entry bundles, and an
//! inclusion check that reads nothing but those files (`spec/storage.md` §11.5).
//!
//! Tiles have height 8: a tile at level `L` and index `N` holds the hashes of the tree nodes at
//! tree level `8L` with indexes `256N .. 256N + W`, concatenated (`W * 32` bytes); `W = 256` for a
//! full tile, `1..=255` for the partial tile on the right edge of a tree. The tree's stored hashes
//! (Crosby–Wallach layout, [`super::stored_hash_index`]) contain every tile's hashes, so tiles are
//! a second layout of the same data, and any [`HashSource`] can be exported as tiles.

use super::tree::{check_size, unhash};
use super::{
    prove_inclusion, stored_hash_count, stored_hash_index, CheckpointError, HashSource,
    InclusionProof, LogError, LogVerifier, ProofError, VerifiedCheckpoint,
};
use crate::record::EntryId;
use std::path::{Path, PathBuf};
use tlog_tiles::{Hash, HashReader, Tile, TileHashReader, TileReader};

/// Tile height (C2SP tlog-tiles fixes it at 8): a full tile holds 2^8 = 256 hashes.
pub const TILE_HEIGHT: u8 = 8;

/// Hashes (or entries) in a full tile or entry bundle: 256.
pub const TILE_WIDTH: u32 = 1 << TILE_HEIGHT;

/// Largest entry an entry bundle can hold: its length is a big-endian `uint16` (C2SP tlog-tiles
/// "Log Entries"), so 65 535 bytes.
pub const MAX_BUNDLED_ENTRY_BYTES: usize = u16::MAX as usize;

/// One tile's coordinates: tile level `level` (tree level `8 * level`), tile index `index`, and
/// width `width` in `1..=256` hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TileId {
    /// Tile level `L`; its hashes are tree nodes at level `8L`.
    pub level: u8,
    /// Tile index `N` within its level.
    pub index: u64,
    /// Number of hashes, `1..=256`; 256 is a full tile.
    pub width: u32,
}

impl TileId {
    /// The tile's path relative to the log prefix: `tile/<L>/<N>` for a full tile,
    /// `tile/<L>/<N>.p/<W>` for a partial one (C2SP tlog-tiles "Merkle Tree").
    pub fn path(&self) -> String {
        format!(
            "tile/{}/{}{}",
            self.level,
            index_path(self.index),
            partial(self.width)
        )
    }

    /// The path of the entry bundle of entries `256N .. 256N + W`: `tile/entries/<N>[.p/<W>]`.
    pub fn entries_path(index: u64, width: u32) -> String {
        format!("tile/entries/{}{}", index_path(index), partial(width))
    }

    /// The stored-hash indexes ([`stored_hash_index`]) of the tile's hashes, in tile order.
    pub fn hash_indexes(&self) -> Vec<u64> {
        let start = self.index << TILE_HEIGHT;
        (0..u64::from(self.width))
            .map(|k| stored_hash_index(self.level * TILE_HEIGHT, start + k))
            .collect()
    }

    /// The tile's data (`width * 32` bytes) read from `src`.
    ///
    /// # Errors
    /// Any error of `src`; [`LogError::WrongHashCount`] when it answers with the wrong count.
    pub fn data(&self, src: &(impl HashSource + ?Sized)) -> Result<Vec<u8>, LogError> {
        let want = self.hash_indexes();
        let hashes = src.read_hashes(&want)?;
        if hashes.len() != want.len() {
            return Err(LogError::WrongHashCount {
                got: hashes.len(),
                want: want.len(),
            });
        }
        Ok(hashes.concat())
    }

    fn from_tile(t: &Tile) -> Self {
        TileId {
            level: t.level(),
            index: t.level_index(),
            width: t.width(),
        }
    }
}

/// `N` as C2SP path elements: zero-padded 3-digit groups, all but the last prefixed with `x`
/// (1234067 → `x001/x234/067`).
fn index_path(mut n: u64) -> String {
    let mut s = format!("{:03}", n % 1000);
    while n >= 1000 {
        n /= 1000;
        s = format!("x{:03}/{s}", n % 1000);
    }
    s
}

fn partial(width: u32) -> String {
    if width == TILE_WIDTH {
        String::new()
    } else {
        format!(".p/{width}")
    }
}

/// The tiles a tree of `new` leaves has that a tree of `old` leaves does not have in the same
/// form (new full tiles and the new right-edge partial tiles), level by level from level 0.
/// For `old = 0` these are all tiles of the tree.
///
/// # Errors
/// [`LogError::SizeTooLarge`] above [`super::MAX_TREE_SIZE`]; [`LogError::OldLarger`] when
/// `old > new`.
pub fn tiles_between(old: u64, new: u64) -> Result<Vec<TileId>, LogError> {
    check_size(new)?;
    if old > new {
        return Err(LogError::OldLarger {
            old_size: old,
            new_size: new,
        });
    }
    Ok(Tile::new_tiles(TILE_HEIGHT, old, new)
        .iter()
        .map(TileId::from_tile)
        .collect())
}

/// The stored-hash indexes of a tree of `old` leaves that extending it to `new` leaves reads:
/// the roots of the perfect subtrees `old` decomposes into (siblings of every new leaf's
/// ancestors, RFC 6962 §2.1) and the hashes already in the tiles [`tiles_between`] rewrites.
/// Sorted, without repeats; all `< stored_hash_count(old)`.
///
/// # Errors
/// As [`tiles_between`].
pub fn extension_reads(old: u64, new: u64) -> Result<Vec<u64>, LogError> {
    let tiles = tiles_between(old, new)?;
    let have = stored_hash_count(old);
    let mut out = tlog_tiles::sub_tree_index(0, old, Vec::new());
    for t in tiles {
        out.extend(t.hash_indexes().into_iter().filter(|i| *i < have));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The tiles and entry bundles written by [`export_tiles`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Tree size of the exported checkpoint.
    pub size: u64,
    /// Hash tiles written.
    pub tiles: usize,
    /// Entry bundles written.
    pub bundles: usize,
}

/// Why a static export or a check from tiles failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TilesError {
    /// Hashing or proving failed (missing hash, store error, size out of range).
    #[error("log: {0}")]
    Log(#[from] LogError),
    /// The checkpoint does not verify under the given key.
    #[error("checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// The inclusion proof read from the tiles does not verify (tiles inconsistent with the
    /// checkpoint's root, or wrong entry).
    #[error("proof: {0}")]
    Proof(#[from] ProofError),
    /// A tile does not hash to the checkpoint's root, or has the wrong length (`tlog_tiles`
    /// "downloaded inconsistent tile").
    #[error("tiles do not match the checkpoint: {detail}")]
    Inconsistent {
        /// The `tlog_tiles` reader's message (a missing or short tile, tiles whose hashes do
        /// not give the root).
        detail: String,
    },
    /// An entry is longer than an entry bundle can hold (65 535 bytes).
    #[error("entry {index} is {len} bytes, an entry bundle holds at most 65535")]
    EntryTooLarge {
        /// Leaf index.
        index: u64,
        /// Its length in bytes.
        len: usize,
    },
    /// An entry bundle is malformed (truncated length prefix or entry) or lacks the entry.
    #[error("entry bundle {path}: {why}")]
    BadBundle {
        /// Bundle path relative to the export directory.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// The entry source failed or has no entry at this index.
    #[error("entry {index} unavailable: {detail}")]
    Entry {
        /// Leaf index.
        index: u64,
        /// The entry source's error message.
        detail: String,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Writes a static tlog-tiles tree for `checkpoint` into `dir`: the note as `dir/checkpoint`,
/// every hash tile of the tree (`tile/<L>/<N>[.p/<W>]`) read from `hashes`, and every entry
/// bundle (`tile/entries/<N>[.p/<W>]`) holding each entry's bytes as a big-endian `uint16` length
/// and the bytes (C2SP tlog-tiles). `entry(i)` returns the bytes of leaf `i`. Existing files are
/// overwritten; nothing else in `dir` is touched. Any web server can then serve `dir`.
///
/// # Errors
/// [`TilesError::Log`] (missing hash, size out of range), [`TilesError::Entry`],
/// [`TilesError::EntryTooLarge`], [`TilesError::Io`]. A failed export may leave some files.
pub fn export_tiles<E: std::fmt::Display>(
    dir: &Path,
    checkpoint: &VerifiedCheckpoint,
    hashes: &(impl HashSource + ?Sized),
    mut entry: impl FnMut(u64) -> Result<Vec<u8>, E>,
) -> Result<ExportSummary, TilesError> {
    let size = checkpoint.size();
    let tiles = tiles_between(0, size)?;
    for t in &tiles {
        write_file(&dir.join(t.path()), &t.data(hashes)?)?;
    }
    let mut bundles = 0;
    let mut start = 0u64;
    while start < size {
        let width = (size - start).min(u64::from(TILE_WIDTH));
        let mut bundle = Vec::new();
        for i in start..start + width {
            let bytes = entry(i).map_err(|e| TilesError::Entry {
                index: i,
                detail: e.to_string(),
            })?;
            let len = u16::try_from(bytes.len()).map_err(|_| TilesError::EntryTooLarge {
                index: i,
                len: bytes.len(),
            })?;
            bundle.extend_from_slice(&len.to_be_bytes());
            bundle.extend_from_slice(&bytes);
        }
        // width <= 256 fits in u32.
        let w = u32::try_from(width).unwrap_or(TILE_WIDTH);
        let path = TileId::entries_path(start >> TILE_HEIGHT, w);
        write_file(&dir.join(path), &bundle)?;
        bundles += 1;
        start += width;
    }
    write_file(&dir.join("checkpoint"), checkpoint.note())?;
    Ok(ExportSummary {
        size,
        tiles: tiles.len(),
        bundles,
    })
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), TilesError> {
    let io = |source| TilesError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(path, bytes).map_err(io)
}

/// What [`verify_from_tiles`] proved.
#[derive(Clone, Debug)]
pub struct TileInclusion {
    /// The checkpoint read from `dir/checkpoint`, verified.
    pub checkpoint: VerifiedCheckpoint,
    /// The entry's bytes, from its entry bundle.
    pub entry: Vec<u8>,
    /// Its id, `SHA-256(0x00 || entry)`.
    pub id: EntryId,
    /// The inclusion proof read from the tiles and verified against the checkpoint.
    pub proof: InclusionProof,
}

/// Checks, from the files of a static tlog-tiles export alone, that leaf `index` is in the log:
///
/// 1. read `dir/checkpoint` and verify it with `log` (signature, origin);
/// 2. read the entry bundle holding `index`, split it into entries, take entry `index mod 256`
///    and hash it: `id = SHA-256(0x00 || bytes)`;
/// 3. read the hash tiles the inclusion proof needs through `tlog_tiles`'s `TileHashReader`
///    (it recomputes the checkpoint's root from the right-edge tiles and refuses tiles of the
///    wrong length);
/// 4. build the RFC 6962 inclusion proof from those hashes and verify it against the
///    checkpoint ([`VerifiedCheckpoint::verify_inclusion`]): any wrong hash the proof uses,
///    and any wrong entry, is caught here. Hashes of a tile that the proof does not use are
///    not checked (with `tlog_tiles` 0.2 a flipped hash elsewhere in a full tile passes), and
///    need not be: they prove nothing about this entry.
///
/// Reads only files under `dir`; trusts nothing but `log`.
///
/// # Errors
/// [`TilesError::Io`] (missing checkpoint or bundle), [`TilesError::Checkpoint`],
/// [`TilesError::BadBundle`], [`TilesError::Inconsistent`] (a missing or short tile, tiles that
/// do not give the root), [`TilesError::Log`] (`index` not below the checkpoint size,
/// size above [`super::MAX_TREE_SIZE`]), [`TilesError::Proof`]. Does not panic on any file
/// contents.
pub fn verify_from_tiles(
    dir: &Path,
    log: &LogVerifier,
    index: u64,
) -> Result<TileInclusion, TilesError> {
    let note = read_file(&dir.join("checkpoint"))?;
    let checkpoint = log.verify(&note)?;
    let size = checkpoint.size();
    check_size(size)?;
    if index >= size {
        return Err(LogError::IndexOutOfRange { index, size }.into());
    }
    let entry = bundle_entry(dir, size, index)?;
    let id = EntryId::of_cose(&entry);
    let files = FileTiles { dir };
    let reader = TileHashReader::new(size, Hash(checkpoint.root().0), &files);
    let source = TileSource(&reader);
    let proof = prove_inclusion(size, index, &source).map_err(|e| match e {
        LogError::Source { detail } => TilesError::Inconsistent { detail },
        other => TilesError::Log(other),
    })?;
    checkpoint.verify_inclusion(&id, &proof)?;
    Ok(TileInclusion {
        checkpoint,
        entry,
        id,
        proof,
    })
}

/// Entry `index` of the bundle that holds it, in a tree of `size` leaves.
fn bundle_entry(dir: &Path, size: u64, index: u64) -> Result<Vec<u8>, TilesError> {
    let n = index >> TILE_HEIGHT;
    let full_end = (n + 1) << TILE_HEIGHT;
    let width = if size >= full_end {
        TILE_WIDTH
    } else {
        // size - (n << 8) < 256
        u32::try_from(size - (n << TILE_HEIGHT)).unwrap_or(TILE_WIDTH)
    };
    let path = TileId::entries_path(n, width);
    let bytes = read_file(&dir.join(&path))?;
    let bad = |why: &str| TilesError::BadBundle {
        path: path.clone(),
        why: why.to_string(),
    };
    let want = index - (n << TILE_HEIGHT);
    let mut rest = &bytes[..];
    let mut k = 0u64;
    loop {
        let Some((len, tail)) = rest.split_first_chunk::<2>() else {
            return Err(bad("entry missing or length prefix truncated"));
        };
        let len = usize::from(u16::from_be_bytes(*len));
        let Some((entry, tail)) = tail.split_at_checked(len) else {
            return Err(bad("entry truncated"));
        };
        if k == want {
            return Ok(entry.to_vec());
        }
        rest = tail;
        k += 1;
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, TilesError> {
    std::fs::read(path).map_err(|source| TilesError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Tiles read from an export directory; lengths are checked so `tlog_tiles` never asserts.
struct FileTiles<'a> {
    dir: &'a Path,
}

impl TileReader for FileTiles<'_> {
    fn height(&self) -> u8 {
        TILE_HEIGHT
    }

    fn read_tiles(&self, tiles: &[Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        tiles
            .iter()
            .map(|t| {
                let id = TileId::from_tile(t);
                let data = std::fs::read(self.dir.join(id.path()))
                    .map_err(|_| tlog_tiles::Error::InvalidTile)?;
                if data.len() != id.width as usize * 32 {
                    return Err(tlog_tiles::Error::InconsistentTile);
                }
                Ok(data)
            })
            .collect()
    }

    fn save_tiles(&self, _tiles: &[Tile], _data: &[Vec<u8>]) {}
}

/// A `TileHashReader` as a [`HashSource`].
struct TileSource<'a, 'b>(&'a TileHashReader<'b>);

impl HashSource for TileSource<'_, '_> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError> {
        self.0
            .read_hashes(indexes)
            .map(unhash)
            .map_err(|e| LogError::Source {
                detail: e.to_string(),
            })
    }
}

/// Computes what extending a tree from `old` to `new` leaves writes, given `reads` (the hashes
/// at [`extension_reads`]`(old, new)`, in that order) and the new leaves' hashes (entry ids of
/// leaves `old..new`, in order): the stored hashes of the new leaves (from
/// `stored_hash_index(0, old)` on, consecutive), the new tiles with their data, the old root
/// (to compare with the stored one) and the new root.
///
/// # Errors
/// [`LogError::SizeTooLarge`], [`LogError::OldLarger`], [`LogError::WrongHashCount`] when
/// `reads` or `leaves` have the wrong length.
pub fn extend(old: u64, reads: &[[u8; 32]], leaves: &[EntryId]) -> Result<Extension, LogError> {
    let new = old
        .checked_add(leaves.len() as u64)
        .ok_or(LogError::SizeTooLarge {
            size: u64::MAX,
            max: super::MAX_TREE_SIZE,
        })?;
    let read_at = extension_reads(old, new)?;
    if read_at.len() != reads.len() {
        return Err(LogError::WrongHashCount {
            got: reads.len(),
            want: read_at.len(),
        });
    }
    let mut known = Known {
        old: read_at.into_iter().zip(reads.iter().copied()).collect(),
        start: stored_hash_index(0, old),
        new: Vec::new(),
    };
    let old_root = super::tree_root(old, &known)?;
    for (i, id) in (old..).zip(leaves) {
        let hashes = super::hashes_to_store(i, id, &known)?;
        known.new.extend(hashes);
    }
    let new_root = super::tree_root(new, &known)?;
    let mut tiles = Vec::new();
    for t in tiles_between(old, new)? {
        let data = t.data(&known)?;
        tiles.push((t, data));
    }
    Ok(Extension {
        hashes: known.new,
        tiles,
        old_root,
        new_root,
    })
}

/// The result of [`extend`].
#[derive(Clone, Debug)]
pub struct Extension {
    /// Stored hashes of the new leaves, consecutive from `stored_hash_index(0, old)`.
    pub hashes: Vec<[u8; 32]>,
    /// The tiles to (re)write, with their data.
    pub tiles: Vec<(TileId, Vec<u8>)>,
    /// `MTH` of the first `old` leaves, recomputed from the reads.
    pub old_root: super::RootHash,
    /// `MTH` of the first `new` leaves.
    pub new_root: super::RootHash,
}

/// Old hashes by index plus new hashes from `start` on.
struct Known {
    old: std::collections::HashMap<u64, [u8; 32]>,
    start: u64,
    new: Vec<[u8; 32]>,
}

impl HashSource for Known {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<[u8; 32]>, LogError> {
        indexes
            .iter()
            .map(|&i| {
                if i >= self.start {
                    usize::try_from(i - self.start)
                        .ok()
                        .and_then(|k| self.new.get(k))
                        .copied()
                } else {
                    self.old.get(&i).copied()
                }
                .ok_or(LogError::MissingHash(i))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::hashes_to_store;

    fn build(n: u64) -> Vec<[u8; 32]> {
        let mut store = Vec::new();
        for i in 0..n {
            let leaf = EntryId::of_cose(&i.to_be_bytes());
            store.extend(hashes_to_store(i, &leaf, &store).unwrap());
        }
        store
    }

    #[test]
    fn paths_follow_c2sp() {
        let t = |level, index, width| TileId {
            level,
            index,
            width,
        };
        assert_eq!(t(0, 0, 256).path(), "tile/0/000");
        assert_eq!(t(1, 1234067, 256).path(), "tile/1/x001/x234/067");
        assert_eq!(t(0, 1234067, 5).path(), "tile/0/x001/x234/067.p/5");
        assert_eq!(t(2, 999, 1).path(), "tile/2/999.p/1");
        assert_eq!(t(0, 1000, 256).path(), "tile/0/x001/000");
        assert_eq!(TileId::entries_path(7, 256), "tile/entries/007");
        assert_eq!(TileId::entries_path(7, 3), "tile/entries/007.p/3");
    }

    /// Extending in uneven steps gives the same hashes, tiles and roots as building at once.
    #[test]
    fn extend_matches_a_full_build() {
        let total = 67_023u64;
        let all = build(total);
        let ids: Vec<EntryId> = (0..total)
            .map(|i| EntryId::of_cose(&i.to_be_bytes()))
            .collect();
        let mut have: Vec<[u8; 32]> = Vec::new();
        let mut old = 0u64;
        for step in [1u64, 255, 1, 256, 3000, 1, 65_536 - 3513, 1000, 0, 486] {
            let new = old + step;
            let reads = have
                .read_hashes(&extension_reads(old, new).unwrap())
                .unwrap();
            let ext = extend(old, &reads, &ids[old as usize..new as usize]).unwrap();
            have.extend(&ext.hashes);
            assert_eq!(have.len() as u64, stored_hash_count(new));
            assert_eq!(have[..], all[..have.len()]);
            assert_eq!(ext.old_root, crate::log::tree_root(old, &all).unwrap());
            assert_eq!(ext.new_root, crate::log::tree_root(new, &all).unwrap());
            for (t, data) in &ext.tiles {
                assert_eq!(data, &t.data(&all).unwrap(), "{}", t.path());
            }
            old = new;
        }
        assert_eq!(old, total);
        assert!(matches!(
            extend(3, &[], &ids[..1]),
            Err(LogError::WrongHashCount { .. })
        ));
    }
}
