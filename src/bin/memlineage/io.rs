//! File and stream handling for the CLI: bounded reads of untrusted files, safe output files,
//! and printing that survives a closed pipe.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

/// Prints a line to standard output. A closed pipe (`memlineage … | head`) is not an error
/// worth a panic: output is dropped, the command's work stands. On a terminal the line is
/// [`terminal_safe`]: writer names, reasons and contents come from the ledger and may carry
/// escape sequences; into a pipe or file it is written as is (it may be JSON or data).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::{IsTerminal as _, Write as _};
        let line = format!($($arg)*);
        let mut out = std::io::stdout().lock();
        let _ = if out.is_terminal() {
            writeln!(out, "{}", $crate::io::terminal_safe(&line))
        } else {
            writeln!(out, "{line}")
        };
    }};
}
pub(crate) use say;

/// `text` with every character a terminal would act on written as `\u{…}` instead: C0 and C1
/// controls but line feed and tab (ESC starts colour, title and cursor sequences), DEL, and
/// the invisible format characters (bidi embeddings and overrides U+202A–U+202E and
/// U+2066–U+2069, zero-width U+200B–U+200F, U+2060–U+2064, U+FEFF, U+00AD) that make text
/// read otherwise than it is.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let acts = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    if !text.chars().any(acts) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if acts(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

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

#[cfg(test)]
mod tests {
    use super::terminal_safe;

    #[test]
    fn terminal_safe_writes_what_a_terminal_acts_on_as_escapes() {
        assert_eq!(
            terminal_safe("plain text, é, 日本\n\tok"),
            "plain text, é, 日本\n\tok"
        );
        assert_eq!(
            terminal_safe("evil\u{1b}]0;PWNED\u{7}\u{1b}[2J"),
            "evil\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J"
        );
        assert_eq!(terminal_safe("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(terminal_safe("x\u{9b}31m\u{7f}"), "x\\u{9b}31m\\u{7f}");
        assert_eq!(terminal_safe("a\u{200b}b\r"), "a\\u{200b}b\\u{d}");
    }
}
