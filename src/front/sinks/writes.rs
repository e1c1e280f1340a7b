//! Files whose writes outlive the call (`spec/hooks.md` §17.3): a file a tool runs without
//! being asked to run it (a CI workflow, a git hook, `Makefile`, `conftest.py`, an editor's
//! folder-open task) or an instruction file an agent loads into every later session
//! (`CLAUDE.md`, `AGENTS.md`) — and every file such an instruction file imports (`@path`).
//! A value written there reaches a later run or session with no recorded read, so the write
//! itself is the sink.
//!
//! The globs are the policy's `sinks.write_paths` ([`crate::gate::Sinks`]), compiled like the
//! secrecy rule's (a glob without `/` or `~/` at its start matches at any depth). Imports are
//! read from the file system at decision time, as the agent will read them: Claude Code's
//! memory files import `@path/to/file` (relative to the importing file, `~/` the home
//! directory, absolute paths as they are), recursively up to 5 hops (Claude Code,
//! *Manage Claude's memory*, "CLAUDE.md imports"; Gemini CLI's `GEMINI.md` the same). An
//! instruction file that exists but cannot be read imports anything under its directory
//! (fail closed).

use crate::front::protect::pattern::{
    glob, literal_run, matches, normalise, overlaps, Candidate, Pat, Resolver,
};
use crate::gate::Sinks;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

/// How many hops of `@path` imports are followed (Claude Code's limit).
pub const MAX_IMPORT_HOPS: usize = 5;

/// The most bytes read of one instruction file.
const MAX_INSTRUCTION_BYTES: u64 = 256 * 1024;

/// The most instruction and imported files read for one decision.
const MAX_INSTRUCTION_FILES: usize = 64;

/// Why writing a file is gated.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Gated {
    /// It matches this glob of `sinks.write_paths`.
    Listed(String),
    /// This instruction file imports it (directly or through other imports).
    Imported(PathBuf),
    /// The working directory is unknown or cannot be read, so the instruction files that
    /// may import it are unknown (fail closed).
    Unknown,
}

impl std::fmt::Display for Gated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Gated::Listed(g) => write!(
                f,
                "a file that a tool runs or an agent loads without a recorded read (policy \
                 sinks.write_paths: {})",
                crate::quote::name(g)
            ),
            Gated::Imported(by) => write!(
                f,
                "a file that the instruction file {} imports, which agents load into every \
                 session",
                crate::quote::name(&by.display().to_string())
            ),
            Gated::Unknown => write!(
                f,
                "which an instruction file may import: the working directory is unknown or \
                 cannot be read, so its instruction files are unknown"
            ),
        }
    }
}

/// The write rule of one policy for one home directory.
pub struct WriteRules {
    /// Each glob as written, as a pattern, and its longest literal run (lower case), which a
    /// path must contain to match (a cheap test before the pattern's).
    globs: Vec<(String, Vec<Pat>, String)>,
    instructions: Vec<String>,
    home: Option<PathBuf>,
}

impl WriteRules {
    /// The rules of `sinks` with `home` as `~`.
    pub fn new(sinks: &Sinks, home: Option<&Path>) -> Self {
        WriteRules {
            globs: sinks
                .write_paths
                .iter()
                .map(|g| {
                    let pat = glob(g, home);
                    let run = literal_run(&pat);
                    (g.clone(), pat, run)
                })
                .collect(),
            instructions: sinks.instruction_files.clone(),
            home: home.map(Path::to_path_buf),
        }
    }

    /// The home directory `~` stands for.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Whether no write is gated.
    pub fn is_empty(&self) -> bool {
        self.globs.is_empty() && self.instructions.is_empty()
    }

    /// Why writing what `target` names is gated, if it is: a path (as named and with symbolic
    /// links resolved) that matches a glob or that an instruction file imports; a pattern
    /// (a word with unknown parts) that shares a path with a glob or a file imported by the
    /// instruction files already loaded ([`WriteRules::load`] the working directory's first).
    /// `imports` caches what this decision has read.
    pub fn gated(&self, target: &Candidate, imports: &mut Imports) -> Option<Gated> {
        self.ensure(imports);
        match target {
            Candidate::Path(p) => {
                let real = imports.resolver.resolved(p);
                // A dangling link: writing through it creates its target.
                let link = std::fs::read_link(p)
                    .ok()
                    .map(|t| normalise(&p.parent().unwrap_or(Path::new("/")).join(t)))
                    .unwrap_or_else(|| real.clone());
                for (k, q) in [p, &real, &link].into_iter().enumerate() {
                    if (k == 1 && real == *p) || (k == 2 && (link == real || link == *p)) {
                        continue;
                    }
                    if let Some(g) = self.listed(&q.to_string_lossy()) {
                        return Some(Gated::Listed(g));
                    }
                }
                let dirs: Vec<&Path> = p.ancestors().skip(1).collect();
                self.load(imports, &dirs);
                imports
                    .importer_of(&[p.clone(), real, link])
                    .or(imports.blind.then_some(Gated::Unknown))
            }
            Candidate::Pattern(pat) => {
                // The glob that names the pattern's plainest path first (`**/CLAUDE.md` is
                // `/CLAUDE.md`), for the receipt; then any glob sharing a path with it.
                let plain: String = pat
                    .iter()
                    .filter_map(|x| match x {
                        Pat::Ch(c) => Some(*c),
                        Pat::Star | Pat::One => Some('x'),
                        Pat::Any => None,
                    })
                    .collect();
                let by_plain = self.listed(&plain);
                if let Some(g) = by_plain.or_else(|| {
                    self.globs
                        .iter()
                        .find(|(_, g, _)| overlaps(g, pat))
                        .map(|(g, _, _)| g.clone())
                }) {
                    return Some(Gated::Listed(g));
                }
                imports
                    .imported
                    .iter()
                    .find(|(p, _)| matches(pat, &p.to_string_lossy()))
                    .map(|(_, by)| Gated::Imported(by.clone()))
                    .or(imports.blind.then_some(Gated::Unknown))
            }
        }
    }

    /// Starts a decision in working directory `cwd`: the first time a written file is judged,
    /// the instruction files of `cwd` and its ancestors are read. A working directory that is
    /// unknown or cannot be listed makes every written file one an instruction file may import
    /// ([`Gated::Unknown`]).
    pub fn start(&self, imports: &mut Imports, cwd: Option<&Path>) {
        imports.cwd = cwd.map(Path::to_path_buf);
        imports.started = false;
    }

    /// The first glob that matches path `s`.
    fn listed(&self, s: &str) -> Option<String> {
        let lower = s.to_lowercase();
        self.globs
            .iter()
            .find(|(_, pat, run)| lower.contains(run.as_str()) && matches(pat, s))
            .map(|(g, _, _)| g.clone())
    }

    /// Reads the working directory's instruction files, once per decision.
    fn ensure(&self, imports: &mut Imports) {
        if std::mem::replace(&mut imports.started, true) || self.instructions.is_empty() {
            return;
        }
        match imports.cwd.clone() {
            Some(c) if std::fs::read_dir(&c).is_ok() => {
                self.load(imports, &c.ancestors().collect::<Vec<_>>())
            }
            _ => imports.blind = true,
        }
    }

    /// Reads the instruction files of `dirs` (and of the home directory) not read yet, and
    /// what they import.
    pub fn load(&self, imports: &mut Imports, dirs: &[&Path]) {
        let mut todo: Vec<(PathBuf, PathBuf, usize)> = Vec::new();
        if !imports.home_done {
            imports.home_done = true;
            for name in &self.instructions {
                if let (Some(rest), Some(h)) = (name.strip_prefix("~/"), &self.home) {
                    let f = h.join(rest);
                    todo.push((f.clone(), f, 0));
                }
            }
        }
        for d in dirs {
            if !imports.dirs.insert(d.to_path_buf()) {
                continue;
            }
            for name in self.instructions.iter().filter(|n| !n.starts_with("~/")) {
                let f = d.join(name);
                todo.push((f.clone(), f, 0));
            }
        }
        while let Some((file, root, hops)) = todo.pop() {
            if imports.read >= MAX_INSTRUCTION_FILES || !imports.seen.insert(file.clone()) {
                continue;
            }
            let text = match read_text(&file) {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(()) => {
                    // Present but unreadable: it may import anything under its directory.
                    let dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
                    imports.unreadable.push((dir, root.clone()));
                    continue;
                }
            };
            imports.read += 1;
            let base = file.parent().unwrap_or(Path::new("/")).to_path_buf();
            for i in import_paths(&text) {
                let to = match (i.strip_prefix("~/"), &self.home) {
                    (Some(rest), Some(h)) => h.join(rest),
                    (Some(_), None) => continue,
                    _ if i.starts_with('/') => PathBuf::from(i),
                    _ => base.join(i),
                };
                let to = normalise(&to);
                let real = imports.resolver.resolved(&to);
                imports.imported.push((to.clone(), root.clone()));
                if real != to {
                    imports.imported.push((real, root.clone()));
                }
                if hops + 1 < MAX_IMPORT_HOPS {
                    todo.push((to, root.clone(), hops + 1));
                }
            }
        }
    }
}

/// What one decision has read of instruction files and their imports.
#[derive(Debug, Default)]
pub struct Imports {
    /// Directories whose instruction files were looked for.
    dirs: BTreeSet<PathBuf>,
    /// Whether the home directory's instruction files were looked for.
    home_done: bool,
    /// Files read or tried.
    seen: BTreeSet<PathBuf>,
    /// How many files were read.
    read: usize,
    /// Each imported file, with the instruction file at the root of its import chain.
    imported: Vec<(PathBuf, PathBuf)>,
    /// Directories of instruction files that exist but cannot be read, with the file.
    unreadable: Vec<(PathBuf, PathBuf)>,
    /// The working directory is unknown or cannot be read ([`WriteRules::start`]).
    blind: bool,
    /// The working directory of the decision.
    cwd: Option<PathBuf>,
    /// Whether its instruction files were looked for.
    started: bool,
    resolver: Resolver,
}

impl Imports {
    /// The instruction file that imports one of `paths`, if any.
    fn importer_of(&self, paths: &[PathBuf]) -> Option<Gated> {
        for p in paths {
            if let Some((_, by)) = self.imported.iter().find(|(i, _)| i == p) {
                return Some(Gated::Imported(by.clone()));
            }
            if let Some((_, by)) = self.unreadable.iter().find(|(d, _)| p.starts_with(d)) {
                return Some(Gated::Imported(by.clone()));
            }
        }
        None
    }
}

/// The text of `file`: `Ok(None)` when it does not exist (or is not a regular file),
/// `Err(())` when it exists but cannot be read. At most [`MAX_INSTRUCTION_BYTES`] are read;
/// invalid UTF-8 is replaced.
fn read_text(file: &Path) -> Result<Option<String>, ()> {
    match std::fs::metadata(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(()),
        Ok(m) if !m.is_file() => return Ok(None),
        Ok(_) => {}
    }
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_INSTRUCTION_BYTES).read_to_end(&mut bytes))
        .map_err(|_| ())?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The `@path` imports of an instruction file's text: every white-space-separated word that
/// starts with `@` (after an opening bracket or quote), without trailing punctuation, that is
/// not a URL. Code spans are not skipped (an import there only gates more).
pub fn import_paths(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .filter_map(|w| {
            let w = w.trim_start_matches(['(', '[', '"', '\'', '`', '<']);
            let rest = w.strip_prefix('@')?;
            let rest = rest
                .trim_end_matches(['.', ',', ';', ':', ')', ']', '"', '\'', '`', '!', '?', '>']);
            (!rest.is_empty() && !rest.contains("://") && !rest.starts_with('@')).then_some(rest)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sinks() -> Sinks {
        Sinks {
            write_paths: vec!["Makefile".into(), ".husky/**".into(), "~/.bashrc".into()],
            instruction_files: vec!["CLAUDE.md".into(), "~/.claude/CLAUDE.md".into()],
            ..Default::default()
        }
    }

    #[test]
    fn imports_are_words_after_an_at_sign() {
        assert_eq!(
            import_paths("See @README and @docs/notes.md. Mail me: a@b.example, (@~/x.md)"),
            ["README", "docs/notes.md", "~/x.md"]
        );
        assert!(import_paths("@ @@x https://@x @https://x.example").is_empty());
    }

    /// Listed globs match at any depth, through a symbolic link too; imports are followed
    /// from the instruction files of the written file's directories, up to 5 hops.
    #[test]
    fn listed_and_imported_files_are_gated() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(tmp.path()).expect("canonical");
        let proj = root.join("proj");
        std::fs::create_dir_all(proj.join("docs/deep")).expect("dirs");
        std::fs::write(proj.join("CLAUDE.md"), "Read @docs/notes.md first.\n").expect("w");
        std::fs::write(proj.join("docs/notes.md"), "then @deep/a.md\n").expect("w");
        std::fs::write(proj.join("docs/deep/a.md"), "and @b.md\n").expect("w");
        std::os::unix::fs::symlink(proj.join("Makefile"), proj.join("build")).expect("ln");
        let r = WriteRules::new(&sinks(), Some(&root));
        let mut imports = Imports::default();
        r.start(&mut imports, Some(&proj));
        let gated =
            |p: &str, imports: &mut Imports| r.gated(&Candidate::Path(proj.join(p)), imports);
        assert_eq!(
            gated("sub/Makefile", &mut imports),
            Some(Gated::Listed("Makefile".into()))
        );
        assert_eq!(
            gated("build", &mut imports),
            Some(Gated::Listed("Makefile".into())),
            "a link to a listed file"
        );
        for p in ["docs/notes.md", "docs/deep/a.md", "docs/deep/b.md"] {
            assert_eq!(
                gated(p, &mut imports),
                Some(Gated::Imported(proj.join("CLAUDE.md"))),
                "{p}"
            );
        }
        assert_eq!(gated("docs/other.md", &mut imports), None);
        assert_eq!(gated("src/lib.rs", &mut imports), None);
        let any = Candidate::Pattern(vec![Pat::Any]);
        assert!(r.gated(&any, &mut imports).is_some(), "an unknown target");
        assert_eq!(
            r.gated(
                &Candidate::Path(root.join(".bashrc")),
                &mut Imports::default()
            ),
            Some(Gated::Listed("~/.bashrc".into()))
        );
        // A working directory that cannot be read: any file may be imported.
        let mut blind = Imports::default();
        r.start(&mut blind, Some(&root.join("gone")));
        assert_eq!(
            r.gated(&Candidate::Path(root.join("gone/notes.md")), &mut blind),
            Some(Gated::Unknown)
        );
        let mut seen = Imports::default();
        r.start(&mut seen, Some(&proj));
        assert_eq!(
            r.gated(&Candidate::Path(proj.join("notes.md")), &mut seen),
            None
        );
    }
}
