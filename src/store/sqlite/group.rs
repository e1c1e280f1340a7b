//! Groups of writes on one SQLite connection (`spec/storage.md` §6.1): one `BEGIN IMMEDIATE`
//! for the group, a savepoint for each write method inside it, one `COMMIT` (one WAL fsync
//! under `synchronous=FULL`) at its end.

use crate::store::StoreError;
use rusqlite::{Connection, Savepoint, Transaction, TransactionBehavior};

/// An open group: the side checkpoint it holds back until the commit.
#[derive(Debug)]
pub(super) struct Group {
    /// The largest checkpoint stored in the group: (tree size, note).
    side: Option<(u64, Vec<u8>)>,
}

impl Group {
    /// Opens the group's transaction, taking the write lock now (`BEGIN IMMEDIATE`).
    pub(super) fn begin(conn: &Connection) -> Result<Self, StoreError> {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        Ok(Group { side: None })
    }

    /// Keeps `note` for the side file, if it is the largest of the group.
    pub(super) fn defer_side(&mut self, size: u64, note: &[u8]) {
        if self.side.as_ref().is_none_or(|(s, _)| *s < size) {
            self.side = Some((size, note.to_vec()));
        }
    }

    /// Commits the group; returns the checkpoint to write to the side file. On error the
    /// transaction is rolled back: nothing of the group is stored.
    pub(super) fn commit(self, conn: &Connection) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        if let Err(e) = conn.execute_batch("COMMIT") {
            // Still open after a failed COMMIT (SQLITE_BUSY, I/O): end it, storing nothing.
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            return Err(e.into());
        }
        Ok(self.side)
    }
}

/// The transaction of one write method: its own immediate transaction, or a savepoint of the
/// open group. Dropped without [`WriteTx::commit`], it stores nothing (rolled back).
pub(super) enum WriteTx<'c> {
    /// Outside a group.
    Own(Transaction<'c>),
    /// Inside a group.
    InGroup(Savepoint<'c>),
}

impl<'c> WriteTx<'c> {
    /// Begins the write on `conn`, inside the group when `grouped`.
    pub(super) fn begin(conn: &'c mut Connection, grouped: bool) -> Result<Self, StoreError> {
        Ok(match grouped {
            true => WriteTx::InGroup(conn.savepoint()?),
            false => WriteTx::Own(conn.transaction_with_behavior(TransactionBehavior::Immediate)?),
        })
    }

    /// Commits the write (to the group, inside one).
    pub(super) fn commit(self) -> Result<(), StoreError> {
        match self {
            WriteTx::Own(t) => t.commit()?,
            WriteTx::InGroup(s) => s.commit()?,
        }
        Ok(())
    }
}

impl std::ops::Deref for WriteTx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        match self {
            WriteTx::Own(t) => t,
            WriteTx::InGroup(s) => s,
        }
    }
}
