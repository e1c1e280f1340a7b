//! One analysis of a tool call against the protected resources (`spec/hooks.md` §13.2): the
//! names, paths and patterns it names, resolved against the working directory.

use super::pattern::{candidate_with, matches, resolved, Candidate};
use super::shell::{Piece, Word};
use super::{
    family_resource, pattern, Item, Protected, Resource, Touch, SETTINGS, SETTINGS_DIRS,
    SETTINGS_FILES,
};
use std::path::{Path, PathBuf};

/// One analysis: the resources, the working directory, the event's project directory (whose
/// agent settings are protected wherever the command `cd`s), and the variables the command
/// assigned so far.
pub(super) struct Ctx<'a> {
    pub(super) p: &'a Protected,
    pub(super) cwd: Option<&'a Path>,
    pub(super) project: Option<&'a Path>,
    pub(super) vars: &'a std::cell::RefCell<std::collections::HashMap<String, String>>,
    /// The protected directories' files as listed at this screening ([`Protected::listing`]),
    /// once.
    pub(super) listed: &'a std::cell::OnceCell<super::Listing>,
    /// Screening the code of a file the call runs (§13.3, "Scripts"), not the call's own
    /// words: words and programs only known when the script runs are not judged (they are
    /// in nearly every script), names, literal paths and patterns are.
    pub(super) lenient: bool,
    /// Whether the code of the files a command runs is read ([`CodeFiles`]): not within a
    /// program's own option file (`~/.curlrc` names `curl`, whose option file is that one).
    ///
    /// [`CodeFiles`]: crate::front::secrets::CodeFiles
    pub(super) code_files: bool,
    /// The code texts this screening analysed ([`CodeSeen`]: each once per directory, a
    /// bounded number in all).
    ///
    /// [`CodeSeen`]: crate::front::secrets::CodeSeen
    pub(super) code_seen: &'a std::cell::RefCell<crate::front::secrets::CodeSeen>,
}

impl Ctx<'_> {
    /// A protected name in `text` (case-insensitive, at word boundaries; a ledger's name
    /// may be followed by a side file's suffix).
    pub(super) fn name_in(&self, text: &str) -> Option<Touch> {
        let lower = text.to_lowercase();
        // Also with quoting and escapes removed: `agent.led''ger`, `agent.led\ger`.
        let stripped: String = lower.chars().filter(|c| !"'\"\\".contains(*c)).collect();
        // And as a program given a URL decodes it: `agent.ledg%65r.key` (`super::percent`).
        let unescaped = super::percent::decoded(&stripped).unwrap_or_default();
        for hay in [&lower, &stripped, &unescaped] {
            for (name, resource, path) in &self.p.names {
                if bounded(hay, name) {
                    return Some(Touch {
                        resource: *resource,
                        path: path.display().to_string(),
                        how: "names",
                    });
                }
            }
        }
        None
    }

    /// Every protected path known: the resources', the files in the protected directories
    /// now, and the agent settings of the project and working directories.
    pub(super) fn known(&self) -> Vec<(std::borrow::Cow<'_, Path>, Resource)> {
        use std::borrow::Cow;
        let listed = &self.listed.get_or_init(|| self.p.listing()).files;
        let mut known: Vec<(Cow<'_, Path>, Resource)> = self
            .p
            .concrete
            .iter()
            .chain(listed)
            .map(|(p, r)| (Cow::Borrowed(p.as_path()), *r))
            .collect();
        for d in [self.project, self.cwd].into_iter().flatten() {
            known.extend(
                SETTINGS
                    .iter()
                    .map(|x| (Cow::Owned(d.join(x)), Resource::AgentSettings)),
            );
        }
        known
    }

    /// The resource at `path` (absolute, normalised), if protected.
    fn resource_at(&self, path: &Path) -> Option<(Resource, PathBuf)> {
        for p in [path.to_path_buf(), resolved(path)] {
            let s = lower(&p);
            for (item, r) in &self.p.items {
                match item {
                    Item::Exact(e) if s == lower(e) => return Some((*r, e.clone())),
                    Item::Tree(t) if under(&s, &lower(t)) => return Some((*r, p.clone())),
                    Item::Family { dir, prefix } => {
                        let d = lower(dir);
                        if let Some(rest) = s.strip_prefix(&d).and_then(|x| x.strip_prefix('/')) {
                            let first = rest.split('/').next().unwrap_or("");
                            if let Some(suffix) = first.strip_prefix(&prefix.to_lowercase()) {
                                return Some((family_resource(suffix), p.clone()));
                            }
                        }
                    }
                    _ => {}
                }
            }
            let comps: Vec<String> = p
                .components()
                .map(|c| c.as_os_str().to_string_lossy().to_lowercase())
                .collect();
            let is_settings = comps.iter().any(|c| SETTINGS_DIRS.contains(&c.as_str()))
                || comps
                    .last()
                    .is_some_and(|c| SETTINGS_FILES.contains(&c.as_str()));
            if is_settings {
                return Some((Resource::AgentSettings, p.clone()));
            }
        }
        None
    }

    /// A protected resource under `dir` (a strict ancestor of it): any, or with `secrets`
    /// only the signing key (what a recursive read would leak).
    pub(super) fn holds(&self, dir: &Path, secrets: bool) -> Option<Touch> {
        for d in [dir.to_path_buf(), resolved(dir)] {
            let s = lower(&d);
            for (path, r) in &self.known() {
                let ps = lower(path);
                if (!secrets || *r == Resource::Key) && ps != s && under(&ps, &s) && path.exists() {
                    return Some(Touch {
                        resource: *r,
                        path: path.display().to_string(),
                        how: "works on a directory holding",
                    });
                }
            }
        }
        None
    }

    /// The touch of a string argument taken as a path (relative to the working directory).
    /// The path is read as a shell word of literal characters is ([`candidate_with`]): as
    /// the kernel opens it, which a tool that does not normalise paths itself does too (a `..`
    /// after a symbolic link, `/proc/self/cwd`).
    pub(super) fn path_str(&self, s: &str, how: &'static str) -> Option<Touch> {
        self.path_str_held(s, how, true)
    }

    /// [`Ctx::path_str`], a directory counting when it holds the signing key (`secrets`) or,
    /// when not `secrets`, any protected file (for a tool that moves or deletes what it is
    /// given).
    pub(super) fn path_str_held(&self, s: &str, how: &'static str, secrets: bool) -> Option<Touch> {
        let lit = |t: &str| t.chars().map(Piece::Lit).collect::<Vec<_>>();
        let pieces = match s.strip_prefix("~/") {
            Some(rest) if self.p.home.is_some() => {
                let mut p = vec![Piece::Home, Piece::Lit('/')];
                p.extend(lit(rest));
                p
            }
            _ => lit(s),
        };
        let word = Word { pieces };
        let home = self.p.home.as_deref();
        let p = match candidate_with(&word, self.cwd, home, &Default::default()) {
            Candidate::Path(p) => p,
            Candidate::Pattern(pat) => {
                return self
                    .pattern(&pat)
                    .or_else(|| self.pattern_holds(&pat, secrets))
                    .or_else(|| self.linked(&pat, Some(true)));
            }
        };
        if let Some((r, at)) = self.resource_at(&p) {
            return Some(Touch {
                resource: r,
                path: at.display().to_string(),
                how,
            });
        }
        self.holds(&p, secrets)
    }

    /// For a mover or destroyer (`secrets` false): a directory that `pat` may name (a
    /// relative path where the working directory is not known may be any directory) holding a
    /// protected file, as [`Ctx::holds`] says of a known path. `None` for readers (`secrets`
    /// true): a pattern that may name the key itself is [`Ctx::pattern`]'s.
    pub(super) fn pattern_holds(&self, pat: &[pattern::Pat], secrets: bool) -> Option<Touch> {
        if secrets {
            return None;
        }
        for (path, r) in &self.known() {
            if !path.exists() {
                continue;
            }
            let mut up = path.parent();
            while let Some(d) = up {
                if d.parent().is_some() && matches(pat, &d.to_string_lossy()) {
                    return Some(Touch {
                        resource: *r,
                        path: path.display().to_string(),
                        how: "may work on a directory holding",
                    });
                }
                up = d.parent();
            }
        }
        None
    }

    /// A protected path that `pat` matches, or a protected directory too large to list
    /// whole ([`super::Listing::partial`]) in which it may name a path.
    pub(super) fn pattern(&self, pat: &[pattern::Pat]) -> Option<Touch> {
        let named = self
            .known()
            .iter()
            .find(|(p, _)| matches(pat, &p.to_string_lossy()))
            .map(|(p, r)| Touch {
                resource: *r,
                path: p.display().to_string(),
                how: "may name",
            });
        named.or_else(|| {
            let partial = &self.listed.get_or_init(|| self.p.listing()).partial;
            partial
                .iter()
                .find(|(d, _)| pattern::may_match_under(pat, &d.to_string_lossy()))
                .map(|(d, r)| Touch {
                    resource: *r,
                    path: d.display().to_string(),
                    how: "may name a file in",
                })
        })
    }

    /// A protected resource that a symbolic link matched by `pat`'s last segment leads to
    /// ([`pattern::links_matched`]): the kernel opens its target, which the pattern as written
    /// need not match. `tree` as for [`Ctx::word`]. A directory too large to list whole may
    /// hold such a link: it counts as one to the signing key (fail closed).
    pub(super) fn linked(&self, pat: &[pattern::Pat], tree: Option<bool>) -> Option<Touch> {
        let links = pattern::links_matched(pat);
        for t in &links.targets {
            if let Some((r, at)) = self.resource_at(t) {
                return Some(Touch {
                    resource: r,
                    path: at.display().to_string(),
                    how: "may name, through a symbolic link,",
                });
            }
            if let Some(touch) = tree.and_then(|secrets| self.holds(t, secrets)) {
                return Some(touch);
            }
        }
        links.partial.map(|d| Touch {
            resource: Resource::Key,
            path: d.display().to_string(),
            how: "may name, through a symbolic link in a directory too large to list,",
        })
    }

    /// The touch of one word of a command run in `cwd`. `tree`: the program works on
    /// directories (`Some(true)`: reads them, a directory holding the key counts;
    /// `Some(false)`: moves or deletes them, a directory holding any protected file counts);
    /// `unknown_counts`: a word with no literal character (`$F`) may name anything.
    pub(super) fn word(
        &self,
        w: &Word,
        cwd: Option<&Path>,
        tree: Option<bool>,
        unknown_counts: bool,
    ) -> Option<Touch> {
        if w.all_unknown() && (!unknown_counts || self.lenient) {
            return None;
        }
        let ctx = Ctx {
            p: self.p,
            cwd,
            project: self.project,
            vars: self.vars,
            listed: self.listed,
            lenient: self.lenient,
            code_files: self.code_files,
            code_seen: self.code_seen,
        };
        let c = candidate_with(w, cwd, self.p.home.as_deref(), &self.vars.borrow());
        // In a script's code, a word only known when the script runs, or relative to a
        // directory only known then (`cd "$(dirname "$0")" && find .`), is not judged.
        if self.lenient && matches!(&c, Candidate::Pattern(p) if p.contains(&pattern::Pat::Any)) {
            return None;
        }
        match c {
            Candidate::Path(p) => {
                if let Some((r, at)) = ctx.resource_at(&p) {
                    return Some(Touch {
                        resource: r,
                        path: at.display().to_string(),
                        how: "names",
                    });
                }
                if let Some(secrets) = tree {
                    return ctx.holds(&p, secrets);
                }
                None
            }
            Candidate::Pattern(pat) => ctx
                .pattern(&pat)
                .or_else(|| ctx.pattern_holds(&pat, tree != Some(false)))
                .or_else(|| ctx.linked(&pat, tree)),
        }
        .or_else(|| {
            // `of=PATH`, `--file=PATH`: the value after `=` is a path too.
            let eq = w.pieces.iter().position(|p| *p == Piece::Lit('='))?;
            let rest = Word {
                pieces: w.pieces[eq + 1..].to_vec(),
            };
            if rest.pieces.is_empty() {
                return None;
            }
            self.word(&rest, cwd, tree, false)
        })
    }
}

pub(super) fn lower(p: &Path) -> String {
    p.to_string_lossy().to_lowercase()
}

/// Whether path string `p` is `dir` or under it.
pub(super) fn under(p: &str, dir: &str) -> bool {
    p == dir || (p.starts_with(dir) && (dir.ends_with('/') || p[dir.len()..].starts_with('/')))
}

/// Whether `name` occurs in `hay` with no letter, digit or `_` on either side.
fn bounded(hay: &str, name: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut from = 0;
    while let Some(at) = hay[from..].find(name) {
        let start = from + at;
        let end = start + name.len();
        if !word(hay[..start].chars().next_back()) && !word(hay[end..].chars().next()) {
            return true;
        }
        from = start + name.len().max(1);
        if from >= hay.len() {
            break;
        }
        while !hay.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}
