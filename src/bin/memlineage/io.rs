//! File and stream handling for the CLI: bounded reads of untrusted files, safe output files,
//! and printing that survives a closed pipe.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

/// Prints a line to standard output. A closed pipe (`memlineage … | head`) is not an error
/// worth a panic: output is dropped, the command's work stands.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}
pub(crate) use say;

/// Reads at most `max` bytes of `path`; a longer file is an error, not an allocation.
pub fn read_capped(path: &Path, max: u64, what: &str) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if out.len() as u64 > max {
        return Err(format!(
            "{} is larger than {max} bytes, too large for {what}",
            path.display()
        ));
    }
    Ok(out)
}

/// Non-empty lines of `reader`, each at most `max_line` bytes, numbered from 1.
pub fn capped_lines(
    mut reader: impl BufRead,
    max_line: u64,
) -> impl Iterator<Item = Result<(usize, String), String>> {
    let mut n = 0usize;
    let mut done = false;
    std::iter::from_fn(move || loop {
        if done {
            return None;
        }
        n += 1;
        let mut buf = Vec::new();
        match (&mut reader).take(max_line + 1).read_until(b'\n', &mut buf) {
            Err(e) => {
                done = true;
                return Some(Err(format!("line {n}: {e}")));
            }
            Ok(0) => return None,
            Ok(_) => {}
        }
        if buf.len() as u64 > max_line && buf.last() != Some(&b'\n') {
            done = true;
            return Some(Err(format!("line {n}: longer than {max_line} bytes")));
        }
        let text = match String::from_utf8(buf) {
            Ok(t) => t,
            Err(_) => {
                done = true;
                return Some(Err(format!("line {n}: not UTF-8")));
            }
        };
        if !text.trim().is_empty() {
            return Some(Ok((n, text)));
        }
    })
}

/// Writes `bytes` to `output`, or to standard output. A regular file (or a new path) is
/// replaced atomically through a uniquely named temporary file beside it (synced, renamed, the
/// directory synced: `memlineage::store::durable`); a symlink is
/// followed; anything else (a device, a pipe) is written through, never replaced.
pub fn write_out(output: Option<PathBuf>, bytes: &[u8]) -> Result<(), String> {
    let Some(path) = output else {
        return std::io::stdout()
            .write_all(bytes)
            .map_err(|e| e.to_string());
    };
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    let target = match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(&path).map_err(io)?,
        _ => path.clone(),
    };
    match std::fs::metadata(&target) {
        Ok(m) if !m.is_file() => return std::fs::write(&target, bytes).map_err(io),
        _ => {}
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target.file_name().ok_or("output path has no file name")?;
    let tmp = dir.join(format!(
        ".{}.{}.memlineage-tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        memlineage::store::durable::rename_durably(&tmp, &target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}

/// `text` cut to at most `max` bytes at a character boundary, with a note of how much was cut.
pub fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes cut)", &text[..end], text.len() - end)
}
