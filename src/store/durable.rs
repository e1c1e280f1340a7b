//! Durable file replacement: write a temporary file, `fsync` it, rename it over the target,
//! then `fsync` the directory, so that after a crash the target holds the old bytes or the
//! new ones and the rename itself survives (`spec/storage.md` §6). Used for the SQLite
//! ledger's side checkpoint file, the key file and the CLI's `-o` outputs.
//!
//! (`src/log/state.rs` keeps its own copy of the directory sync: verification code must not
//! depend on storage, `tests/layering.rs`.)

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Flushes the directory holding `path` to disk (`fsync` on the directory), so that a rename
/// or creation of `path` done before survives a crash. A no-op where directories cannot be
/// opened (not Unix).
///
/// # Errors
/// The directory cannot be opened or synced. Does not panic.
pub fn sync_parent_dir(path: &Path) -> io::Result<()> {
    let dir = parent_dir(path);
    #[cfg(unix)]
    {
        File::open(&dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// The directory `path` is in (`.` for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Renames `tmp` over `path`, then syncs the directory ([`sync_parent_dir`]). `tmp` must be in
/// the same directory and already synced.
///
/// # Errors
/// The rename or the directory sync failed. Does not panic.
pub fn rename_durably(tmp: &Path, path: &Path) -> io::Result<()> {
    std::fs::rename(tmp, path)?;
    sync_parent_dir(path)
}

/// Replaces `path` with `bytes` durably: a temporary file `.<name>.<pid>.<n>.tmp` beside it,
/// written and synced, renamed over `path`, then the directory synced. The temporary file is
/// removed on failure.
///
/// # Errors
/// I/O errors. Does not panic.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    // Unique per process and call: two threads replacing one file must not share a temporary.
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let tmp = parent_dir(path).join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        rename_durably(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_atomic_replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        sync_parent_dir(&p).unwrap();
        // A directory that does not exist is an error, never a silent success.
        assert!(sync_parent_dir(&dir.path().join("gone/x")).is_err());
        assert!(write_atomic(&dir.path().join("gone/x"), b"x").is_err());
    }
}
