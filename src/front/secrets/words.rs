//! What a shell word names (`spec/hooks.md` §16.1 item 3): the secret it names as a path, as
//! a value after `=`, `@` or `<`, or in inline code; whether it names one concretely; the
//! secrets under a directory it names, for programs that read trees.

use super::commands::chunks;
use super::form::handed_files;
use super::SecretRules;
use crate::front::protect::pattern::{
    candidate, entries_matched, matches, overlaps, Candidate, Pat, Resolver,
};
use crate::front::protect::percent::file_url_paths;
use crate::front::protect::shell::Word;
use std::path::Path;

impl SecretRules {
    /// A secret under the directory a word names, for programs that read trees: a secret
    /// glob anchored at `/` or `~/` under it, or a file there that a glob without a
    /// directory names exactly (`.env`) and that exists.
    pub(super) fn tree_secret(&self, w: &Word, cwd: Option<&Path>) -> Option<String> {
        let Candidate::Path(dir) = candidate(w, cwd, self.home.as_deref()) else {
            return None;
        };
        if self
            .public
            .iter()
            .any(|(g, _)| matches(g, &dir.to_string_lossy()))
        {
            return None;
        }
        if let Some(found) = self.anchored_under(&dir) {
            return Some(found);
        }
        self.secret.iter().find_map(|(name, _, _)| {
            let plain = !name.contains(['/', '*', '?']);
            (plain && dir.join(name).is_file()).then(|| dir.join(name).display().to_string())
        })
    }

    /// A secret glob anchored at `/` or `~/` that lies under the directory `dir`.
    pub(super) fn anchored_under(&self, dir: &Path) -> Option<String> {
        let mut under: Vec<Pat> = dir.to_string_lossy().chars().map(Pat::Ch).collect();
        under.push(Pat::Ch('/'));
        under.push(Pat::Any);
        self.secret
            .iter()
            .find(|(name, g, _)| {
                (name.starts_with('/') || name.starts_with("~/")) && overlaps(g, &under)
            })
            .map(|(name, _, _)| format!("{} (under {})", name, dir.display()))
    }

    /// Whether `w`, which names a secret, names it concretely: as a path, or after `=`, `@`
    /// or `<` (`-F f=@.env`, [`handed_files`]), with no part only known when it runs (`$HOME` and `~` are the
    /// home directory), or as a pattern in a literal directory that matches a secret file there
    /// now (`~/.aws/cred*`).
    pub(super) fn concrete(&self, w: &Word, cwd: Option<&Path>, r: &Resolver) -> bool {
        let home = self.home.as_deref();
        let names = |w: &Word| match candidate(w, cwd, home) {
            Candidate::Path(_) => true,
            Candidate::Pattern(p) => entries_matched(&p, MAX_LISTED).is_some_and(|found| {
                found
                    .into_iter()
                    .any(|e| self.secret_at(&Candidate::Path(e), r).is_some())
            }),
        };
        names(w) || handed_files(w).iter().any(names)
    }

    /// The secret a word names: the word as a path, the value after `=`, `@` or `<` in it
    /// (`of=F`, `-F f=@F`, `-d @F`, [`handed_files`]), and path-like pieces of inline code.
    pub(super) fn word_secret(&self, w: &Word, cwd: Option<&Path>, r: &Resolver) -> Option<String> {
        if let Some(s) = self.secret_at(&candidate(w, cwd, self.home.as_deref()), r) {
            if !w.all_unknown() {
                return Some(s);
            }
        }
        // The pieces after `=`, `@` or `<`, expansions kept (`f=@"$HOME"/.aws/…`), and the
        // files of a form field (`f=@.env;type=text/plain`).
        for rest in handed_files(w) {
            if !rest.all_unknown() {
                if let Some(s) = self.secret_at(&candidate(&rest, cwd, self.home.as_deref()), r) {
                    return Some(s);
                }
            }
        }
        // Inline code: `open('/home/u/.aws/credentials')`.
        let text = w.squeezed();
        // A `file:` URL's path, decoded as the program given it opens it
        // (`file://$HOME/.aws/cred%65ntials`, `crate::front::protect::percent`).
        if let Some(s) = file_url_paths(&text)
            .iter()
            .find_map(|p| self.secret_str(p, cwd, r))
        {
            return Some(s);
        }
        let found = chunks(&text)
            .filter(|p| *p != text)
            .find_map(|p| self.secret_str(p, cwd, r));
        found
    }
}

/// Most entries of a directory a pattern's secret files are looked for in
/// ([`SecretRules::concrete`]); a larger directory leaves the pattern a possible secret only.
const MAX_LISTED: usize = 4096;
