//! Durable file replacement: write a temporary file, `fsync` it, rename it over the target,
//! then `fsync` the directory, so that after a crash the target holds the old bytes or the
//! new ones and the rename itself survives (`spec/storage.md` §6). Used for the SQLite
//! ledger's side checkpoint file, the key file, session records, the pin and the CLI's `-o`
//! outputs.
//!
//! And reading and locking files someone else may have replaced (`spec/storage.md` §6.1): a
//! store-only attacker can put a FIFO, a device, a directory or a symbolic link where a file
//! should be, or replace a lock file while it is held. [`read_regular`], [`create_regular`] and
//! [`lock_file`] never block on such a thing and never take one for the file; nothing here
//! writes, creates or truncates through a symbolic link.
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
    write_atomic_metadata(path, bytes).map(|_| ())
}

/// [`write_atomic`], and the metadata of the file now at `path` as it left it: taken from the
/// file written (`fstat` after the rename), so that a caller keeping a copy of what it wrote can
/// tell later whether anyone changed the file since.
///
/// # Errors
/// I/O errors. Does not panic.
pub fn write_atomic_metadata(path: &Path, bytes: &[u8]) -> io::Result<std::fs::Metadata> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    // Unique per process and call: two threads replacing one file must not share a temporary.
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    // And not guessable: a name someone made a directory or a FIFO at beforehand would fail
    // (or block) every save.
    let mut nonce = [0u8; 8];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut nonce);
    let tmp = parent_dir(path).join(format!(
        ".{}.{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed),
        u64::from_le_bytes(nonce)
    ));
    let result = (|| {
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .mode(0o600);
        }
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        rename_durably(&tmp, path)?;
        f.metadata()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Reads at most `max` bytes of the regular file at `path`; `None` when there is none. Never
/// blocks: the file is opened non-blocking and must be a regular file once open (a FIFO, a
/// device, a socket or a directory is an error, [`io::ErrorKind::InvalidData`]); a symbolic
/// link is followed (users keep ledgers behind links), but what it leads to must be a
/// regular file too.
///
/// # Errors
/// I/O errors, a file that is not regular, a file longer than `max` bytes. Does not panic.
pub fn read_regular(path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    Ok(read_regular_metadata(path, max)?.map(|(bytes, _)| bytes))
}

/// [`read_regular`], and the metadata of the file read, taken from the open file after reading
/// it (`fstat`): its length is that of the bytes returned unless someone wrote the file while
/// it was read.
///
/// # Errors
/// As [`read_regular`]. Does not panic.
pub fn read_regular_metadata(
    path: &Path,
    max: u64,
) -> io::Result<Option<(Vec<u8>, std::fs::Metadata)>> {
    use std::io::Read;
    let Some(f) = open_regular(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    (&f).take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: longer than {max} bytes", path.display()),
        ));
    }
    let meta = f.metadata()?;
    Ok(Some((bytes, meta)))
}

/// Opens the existing file at `path` for appending (`O_APPEND`): every write lands at its end,
/// whatever its length then. Never through a symbolic link (`O_NOFOLLOW`), never blocking
/// (`O_NONBLOCK`), never creating or truncating; what is there must be a regular file. The
/// caller checks with the returned file's metadata that it is the file it means to extend.
///
/// # Errors
/// I/O errors (a missing file is [`io::ErrorKind::NotFound`]), a symbolic link, a file that is
/// not regular. Does not panic.
pub fn open_append(path: &Path) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let f = opts.open(path)?;
    if !f.metadata()?.is_file() {
        return Err(not_regular(path));
    }
    Ok(f)
}

/// The first `n` bytes at most of the regular file at `path` (`None` when there is none),
/// however long it is; opened as [`read_regular`] opens it, so it never blocks.
///
/// # Errors
/// I/O errors, a file that is not regular. Does not panic.
pub fn read_regular_head(path: &Path, n: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let Some(f) = open_regular(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    (&f).take(n).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// `path` opened for reading without blocking, when it is a regular file once open (`None`
/// when there is none; a FIFO, device, socket or directory is an error).
fn open_regular(path: &Path) -> io::Result<Option<File>> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let f = match opts.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if !f.metadata()?.is_file() {
        return Err(not_regular(path));
    }
    Ok(Some(f))
}

fn not_regular(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{} is not a regular file (replaced by a FIFO, device or directory?)",
            path.display()
        ),
    )
}

/// Opens the file at `path` for writing, creating it (mode 0600) if absent, without truncating
/// it. Never through a symbolic link (`O_NOFOLLOW`: a link there is an error, so a store-only
/// attacker cannot have a lock, stamp or marker created or truncated where the link points) and
/// never blocking (`O_NONBLOCK`); what is there must be a regular file.
///
/// # Errors
/// I/O errors, a symbolic link, a file that is not regular. Does not panic.
pub fn create_regular(path: &Path) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.create(true).truncate(false).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .mode(0o600);
    }
    let f = opts.open(path)?;
    if !f.metadata()?.is_file() {
        return Err(not_regular(path));
    }
    Ok(f)
}

/// Locks the file at `path` exclusively (created, mode 0600, if absent: [`create_regular`]),
/// waiting at most `wait`, and returns it; the lock lasts until the file is dropped. The file
/// must be regular and not a symbolic link, and once locked it must still be the file at
/// `path` (same device and inode): a lock file replaced while another process holds the old
/// one is locked again, never taken as free (two holders would each read-modify-write what the
/// lock guards; `spec/storage.md` §6.1).
///
/// # Errors
/// I/O errors, a symbolic link, a file that is not regular, the lock still held after `wait`
/// ([`io::ErrorKind::WouldBlock`]). Does not panic.
pub fn lock_file(path: &Path, wait: std::time::Duration) -> io::Result<File> {
    let start = std::time::Instant::now();
    loop {
        let f = create_regular(path)?;
        match f.try_lock() {
            Ok(()) if same_file(&f, path)? => return Ok(f),
            // The path names another file now: lock that one.
            Ok(()) => continue,
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < wait => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!(
                        "{} stayed locked for more than {} s",
                        path.display(),
                        wait.as_secs()
                    ),
                ))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Whether the open file `f` is the file at `path` now.
fn same_file(f: &File, path: &Path) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (a, b) = (
            f.metadata()?,
            match std::fs::metadata(path) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(e),
            },
        );
        Ok(a.dev() == b.dev() && a.ino() == b.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = (f, path);
        Ok(true)
    }
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

    #[cfg(unix)]
    #[test]
    fn fifos_and_directories_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = read_regular(&fifo, 10).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        // Opened for writing with no reader, a FIFO fails at once (ENXIO); never blocks.
        assert!(lock_file(&fifo, std::time::Duration::ZERO).is_err());
        assert!(read_regular(dir.path(), 10).is_err(), "a directory");
        assert_eq!(read_regular(&dir.path().join("none"), 10).unwrap(), None);
        let p = dir.path().join("f");
        std::fs::write(&p, b"12345").unwrap();
        assert_eq!(read_regular(&p, 5).unwrap().unwrap(), b"12345");
        assert!(read_regular(&p, 4).is_err(), "too long");
    }

    #[cfg(unix)]
    #[test]
    fn no_lock_or_stamp_is_made_through_a_symbolic_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious");
        std::fs::write(&target, b"keep me").unwrap();
        let link = dir.path().join("x.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_regular(&link).is_err());
        assert!(lock_file(&link, std::time::Duration::ZERO).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        // A link to nothing creates nothing where it points.
        let dangling = dir.path().join("y.lock");
        std::os::unix::fs::symlink(dir.path().join("made"), &dangling).unwrap();
        assert!(lock_file(&dangling, std::time::Duration::ZERO).is_err());
        assert!(!dir.path().join("made").exists());
        // A regular file is opened as it is, not truncated.
        let f = dir.path().join("f");
        std::fs::write(&f, b"123").unwrap();
        drop(create_regular(&f).unwrap());
        assert_eq!(std::fs::read(&f).unwrap(), b"123");
    }

    #[test]
    fn a_lock_file_replaced_while_held_is_not_taken_as_free() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let held = lock_file(&p, std::time::Duration::ZERO).unwrap();
        // Someone replaces the file while it is held: a new holder locks the new file, and
        // the old holder no longer guards the path (it would see it when re-checking).
        std::fs::rename(&p, dir.path().join("old.lock")).unwrap();
        std::fs::write(&p, b"").unwrap();
        assert!(!same_file(&held, &p).unwrap());
        let second = lock_file(&p, std::time::Duration::ZERO).unwrap();
        assert!(same_file(&second, &p).unwrap());
        // And while `second` holds it, nobody else gets it.
        assert!(lock_file(&p, std::time::Duration::from_millis(20)).is_err());
    }
}
