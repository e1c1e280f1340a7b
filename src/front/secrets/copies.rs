//! Copies of secrets (`spec/hooks.md` §16.2, "Copies"): a file an egress command sends that
//! holds a value of one of the user's secret files. A secret copied into an ordinary file in
//! one session (`cp ~/.aws/credentials docs/notes.txt`, a hard link, `sed -n p … > f`) is no
//! longer secret by its path, and the next session, which read no secret, sent it with exit 0
//! (attack review 38). What the file holds decides, whoever wrote it and when.

use super::commands::{chunks, UNKNOWN_CWD};
use super::form::handed_files;
use super::scripts::read_text;
use super::SecretRules;
use crate::front::protect::pattern::{candidate, entries_matched, matches, Candidate};
use crate::front::protect::percent::file_url_paths;
use crate::front::protect::shell::{command_text, is_shell_tool, lex, Piece, Token, Word};
use crate::front::secret_values::{carried, specific_tokens};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// At most this many secret files are read per decision, this many bytes each.
const MAX_SECRET_FILES: usize = 256;
const MAX_FILE_BYTES: u64 = 64 * 1024;
/// At most this many files a command names are searched, this many bytes each.
const MAX_SENT_FILES: usize = 32;
const MAX_SENT_BYTES: u64 = 1 << 20;
/// How deep under a directory a command names its files are searched, and at most how many
/// entries a pattern it names lists.
const TREE_DEPTH: usize = 4;
const MAX_LISTED: usize = 4096;

impl SecretRules {
    /// The first file the shell call names (as a word, or after `=` or `@`: `-F f=@F`, `-d
    /// @F`, `--post-file=F`) that holds a specific value of a secret file of the user, as
    /// "`F`, which holds a value of `S`".
    pub(crate) fn copied_secret(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        cwd: Option<&Path>,
    ) -> Option<String> {
        if !is_shell_tool(tool.rsplit("__").next().unwrap_or(tool)) {
            return None;
        }
        let cwd = cwd.unwrap_or(Path::new(UNKNOWN_CWD));
        let mut named: Vec<PathBuf> = Vec::new();
        for key in ["command", "cmd"] {
            if let Some(text) = args.get(key).and_then(command_text) {
                self.named_files(&text, cwd, 0, &mut named);
            }
        }
        if named.is_empty() {
            return None;
        }
        let secrets = self.secret_files(cwd);
        for file in named.iter().take(MAX_SENT_FILES) {
            if secrets.iter().any(|(p, _)| p == file) {
                continue;
            }
            // Never blocks (a FIFO named as the file sent), regular files only, bounded.
            let Ok(Some(bytes)) = crate::store::durable::read_regular(file, MAX_SENT_BYTES) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let mut body = Map::new();
            body.insert("file".to_string(), Value::String(text));
            for (secret, tokens) in &secrets {
                if carried(tokens, &body).is_some() {
                    return Some(format!(
                        "`{}`, which holds a value of `{}`",
                        file.display(),
                        secret.display()
                    ));
                }
            }
        }
        None
    }

    /// The existing files a command's words name (nested commands too).
    fn named_files(&self, text: &str, cwd: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        if depth > crate::front::protect::MAX_NESTING || out.len() >= MAX_SENT_FILES {
            return;
        }
        let lexed = lex(text);
        for n in &lexed.nested {
            self.named_files(n, cwd, depth + 1, out);
        }
        for t in &lexed.tokens {
            let Token::Word(w) = t else { continue };
            let mut words = vec![w.clone()];
            words.extend(handed_files(w));
            self.coded_files(w, cwd, out);
            // A directory sends the files under it (`rsync -a docs/ host:`, `tar cf - docs`),
            // a pattern the files it matches now (`cat docs/*`): attack review 51, each sent a
            // copy made earlier with exit 0 while only a file a word named was searched.
            for w in words {
                let found = match candidate(&w, Some(cwd), self.home.as_deref()) {
                    Candidate::Path(p) => vec![p],
                    Candidate::Pattern(p) => entries_matched(&p, MAX_LISTED).unwrap_or_default(),
                };
                for p in found {
                    walk(&p, TREE_DEPTH, &mut |file| {
                        if out.len() >= MAX_SENT_FILES {
                            return false;
                        }
                        if !out.iter().any(|o| o == file) {
                            out.push(file.to_path_buf());
                        }
                        true
                    });
                }
            }
        }
    }

    /// The existing files a word names inside it (attack review 51: each sent a copy with
    /// exit 0 in a session that had read nothing): path-like pieces of inline code (`python3
    /// -c '…open("docs/notes.txt")…'`, whose interpreter sends it itself), a `file:` URL's
    /// path, and the value glued to a short option (`-idocs/notes.txt`). Files only: a piece
    /// of code is no directory to walk.
    fn coded_files(&self, w: &Word, cwd: &Path, out: &mut Vec<PathBuf>) {
        let text = w.squeezed();
        let mut texts: Vec<String> = chunks(&text)
            .filter(|p| *p != text)
            .map(str::to_string)
            .collect();
        texts.extend(file_url_paths(&text));
        let glued = matches!(w.pieces.as_slice(), [Piece::Lit('-'), Piece::Lit(c), _, ..] if c.is_ascii_alphabetic());
        let mut words: Vec<Word> = Vec::new();
        if glued {
            words.push(Word {
                pieces: w.pieces[2..].to_vec(),
            });
        }
        for t in &texts {
            if let Some(Token::Word(x)) = lex(t).tokens.first() {
                words.push(x.clone());
            }
        }
        for x in words {
            if let Candidate::Path(p) = candidate(&x, Some(cwd), self.home.as_deref()) {
                if out.len() < MAX_SENT_FILES && p.is_file() && !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }

    /// The user's secret files (the policy's globs: under home or root, walked from their
    /// literal directory; a name without a directory, in the working directory) and the
    /// specific tokens of each.
    fn secret_files(&self, cwd: &Path) -> Vec<(PathBuf, BTreeSet<String>)> {
        let mut found: Vec<PathBuf> = Vec::new();
        for (name, g, _) in &self.secret {
            let base = match (name.strip_prefix("~/"), &self.home) {
                (Some(r), Some(h)) => h.join(r),
                (None, _) if name.starts_with('/') => PathBuf::from(name),
                (None, _) if !name.contains('/') => cwd.join(name),
                _ => continue,
            };
            // The directory before the first wildcard.
            let s = base.to_string_lossy();
            let cut = s.find(['*', '?', '[']).unwrap_or(s.len());
            let dir = match s[..cut].rfind('/') {
                Some(i) if cut < s.len() => PathBuf::from(&s[..i]),
                _ => base.clone(),
            };
            walk(&dir, 3, &mut |p| {
                let ps = p.to_string_lossy();
                if matches(g, &ps)
                    && !self.public.iter().any(|(pg, _)| matches(pg, &ps))
                    && !found.contains(&p.to_path_buf())
                {
                    found.push(p.to_path_buf());
                }
                found.len() < MAX_SECRET_FILES
            });
        }
        found
            .into_iter()
            .filter_map(|p| {
                let meta = std::fs::metadata(&p).ok()?;
                if meta.len() > MAX_FILE_BYTES {
                    return None;
                }
                let tokens = specific_tokens(&read_text(&p)?);
                (!tokens.is_empty()).then_some((p, tokens))
            })
            .collect()
    }
}

/// Calls `f` with `dir` when it is a file, else with the files under it, `depth` levels
/// deep, until `f` returns false.
fn walk(dir: &Path, depth: usize, f: &mut dyn FnMut(&Path) -> bool) -> bool {
    let Ok(meta) = std::fs::metadata(dir) else {
        return true;
    };
    if meta.is_file() {
        return f(dir);
    }
    if depth == 0 || !meta.is_dir() {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    for e in entries.flatten().take(1024) {
        if !walk(&e.path(), depth - 1, f) {
            return false;
        }
    }
    true
}
