//! Values read from SQLite rows, which a store-only attacker may have written: integers, blobs
//! and entry metadata checked for range and length, errors mapped to [`StoreError`].

use crate::lineage::Label;
use crate::record::{EntryId, Kind};
use crate::store::{to_u64, EntryMeta, StoreError};
use rusqlite::types::ValueRef;
use rusqlite::{ffi, Connection, ErrorCode};
use std::path::{Path, PathBuf};

/// `max(idx) + 1` over `entries`, through a connection or an open transaction.
pub(super) fn tree_size_of(conn: &Connection) -> Result<u64, StoreError> {
    match max_idx(conn, "SELECT max(idx) FROM entries")? {
        Some(max) => max.checked_add(1).ok_or_else(|| corrupt("entries.idx")),
        None => Ok(0),
    }
}

/// `SELECT max(idx) …` as a `u64`, `None` for an empty table.
pub(super) fn max_idx(conn: &Connection, sql: &str) -> Result<Option<u64>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query([])?;
    match rows.next()? {
        Some(row) => match row.get_ref(0)? {
            ValueRef::Null => Ok(None),
            v => to_u64(int(v, "idx")?, "idx").map(Some),
        },
        None => Ok(None),
    }
}

/// Maps the unique-constraint failure of inserting `id` to [`StoreError::Duplicate`].
pub(super) fn duplicate_or(err: rusqlite::Error, id: EntryId) -> StoreError {
    match err.sqlite_error() {
        Some(e) if e.extended_code == ffi::SQLITE_CONSTRAINT_UNIQUE => StoreError::Duplicate(id),
        _ => StoreError::Sqlite(err),
    }
}

/// Names open failures by class: "not a database" is [`StoreError::NotALedger`], "malformed"
/// is [`StoreError::Corrupt`].
pub(super) fn on_open(err: StoreError, path: &Path) -> StoreError {
    match err {
        StoreError::Sqlite(e) => match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => StoreError::NotALedger {
                path: PathBuf::from(path),
            },
            Some(ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
                reason: format!("sqlite: {e}"),
            },
            _ => StoreError::Sqlite(e),
        },
        other => other,
    }
}

/// A column that must hold an integer.
pub(super) fn int(v: ValueRef<'_>, what: &str) -> Result<i64, StoreError> {
    match v {
        ValueRef::Integer(n) => Ok(n),
        other => Err(StoreError::Corrupt {
            reason: format!(
                "{what}: {:?} where an integer was expected",
                other.data_type()
            ),
        }),
    }
}

/// A column that must hold a blob.
pub(super) fn blob<'a>(v: ValueRef<'a>, what: &str) -> Result<&'a [u8], StoreError> {
    match v {
        ValueRef::Blob(b) => Ok(b),
        other => Err(StoreError::Corrupt {
            reason: format!("{what}: {:?} where a blob was expected", other.data_type()),
        }),
    }
}

/// A column that must hold a 32-byte blob.
pub(super) fn blob32(v: ValueRef<'_>, what: &str) -> Result<[u8; 32], StoreError> {
    let b = blob(v, what)?;
    <[u8; 32]>::try_from(b).map_err(|_| StoreError::Corrupt {
        reason: format!("{what}: {} bytes, want 32", b.len()),
    })
}

/// Sets the setting `key` to `value` (insert or replace) on `conn`, inside its transaction if
/// it is one.
pub(super) fn put_meta(conn: &Connection, key: &str, value: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO meta (key, value) VALUES (?1, ?2) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )?
    .execute([key, value])?;
    Ok(())
}

/// A corrupt-store error about `what`.
pub(super) fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt {
        reason: format!("{what}: value out of range"),
    }
}

/// The `idx, id, kind, label, tag` columns of an `entries` row, which must have index `want`.
pub(super) fn meta_row(row: &rusqlite::Row<'_>, want: u64) -> Result<EntryMeta, StoreError> {
    let index = to_u64(int(row.get_ref(0)?, "entries.idx")?, "entries.idx")?;
    if index != want {
        return Err(StoreError::Corrupt {
            reason: format!("entries: index {index} where {want} was expected"),
        });
    }
    let id = EntryId(blob32(row.get_ref(1)?, "entries.id")?);
    let kind_code = to_u64(int(row.get_ref(2)?, "entries.kind")?, "entries.kind")?;
    let kind = Kind::from_code(kind_code).ok_or_else(|| StoreError::Corrupt {
        reason: format!("entry {index}: kind {kind_code}"),
    })?;
    let label_code = int(row.get_ref(3)?, "entries.label")?;
    let label = u8::try_from(label_code)
        .ok()
        .and_then(Label::from_code)
        .ok_or_else(|| StoreError::Corrupt {
            reason: format!("entry {index}: label {label_code}"),
        })?;
    let tag = match row.get_ref(4)? {
        ValueRef::Null => None,
        v => Some(blob32(v, "entries.tag")?),
    };
    Ok(EntryMeta {
        index,
        id,
        kind,
        label,
        tag,
    })
}
