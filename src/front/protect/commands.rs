//! The protected resources a shell command touches (`spec/hooks.md` §13.3): its simple
//! commands, what their programs do with their arguments, the commands they nest, and `kill`.

use super::analysis::Ctx;
use super::invocation::{invocation, Program};
use super::pattern::{candidate, candidate_with};
use super::programs::{
    DESTROY_PROGRAMS, FILE_PROGRAMS, GIT_TREE, READ_TREE_PROGRAMS, SEARCH_PROGRAMS, SHELLS,
    WRAPPERS,
};
use super::runners::{runs, Runs};
use super::shell::joined;
use super::shell::{lex, Piece, Token, Word};
use super::working_dirs::WorkingDirs;
use super::{pattern, Resource, Touch, MAX_NESTING};
use crate::front::secrets::{chunks, CodeFiles, Reading, Script, MAX_CODE_TEXTS};
use std::path::{Path, PathBuf};

impl Ctx<'_> {
    /// The touch of a shell command run in `cwd`, nested `depth` levels deep.
    pub(super) fn command(&self, text: &str, cwd: Option<PathBuf>, depth: usize) -> Option<Touch> {
        if depth > MAX_NESTING {
            return Some(Touch {
                resource: Resource::Binary,
                path: text.chars().take(60).collect(),
                how: "nests commands too deeply to analyse; refused like a command that",
            });
        }
        if let Some(t) = self.name_in(text) {
            return Some(t);
        }
        let lexed = lex(text);
        if let Some(program) = super::terminal::fed_by_the_terminal(&lexed) {
            return Some(Touch {
                resource: Resource::Binary,
                path: program,
                how: "reads its commands from the terminal, typed later where no hook sees them \
                      (Codex's write_stdin), so it runs a program only known when it runs, which \
                      may run",
            });
        }
        if let Some(program) = super::connection::fed_by_a_connection(&lexed) {
            return Some(Touch {
                resource: Resource::Binary,
                path: program,
                how: "reads its commands from a network connection, typed later where no hook \
                      sees them, so it runs a program only known when it runs, which may run",
            });
        }
        // What a shell or ssh reads from `echo … |`, a here-string or (ssh) a file (`fed`).
        for text in super::fed::fed_programs(&lexed, cwd.as_deref()) {
            let Some(text) = text else {
                return Some(Touch {
                    resource: Resource::Binary,
                    path: text_of(&lexed),
                    how: "feeds a shell a program only known when it runs, which may run",
                });
            };
            if let Some(t) = self.command(&text, cwd.clone(), depth + 1) {
                return Some(t);
            }
        }
        let before = self.vars.borrow().clone();
        for n in &lexed.nested {
            if let Some(t) = self.command(n, cwd.clone(), depth + 1) {
                return Some(t);
            }
        }
        // The working directories the command passes through (`cd`, `pushd`, `git -C`): a
        // nested command (`cd d && echo $(cat *.key)`) runs in one of them, which the
        // lexer does not place, so it is analysed in each too (below), with the variables
        // known before the command, as above.
        let mut dirs = vec![cwd.clone()];
        for t in &lexed.tokens {
            if let Token::Word(w) = t {
                if let Some(t) = self.name_in(&w.squeezed()) {
                    return Some(t);
                }
            }
        }
        let mut wd = WorkingDirs::new(text, &lexed, cwd.clone());
        let mut operators = lexed.operators.iter();
        let mut words: Vec<Word> = Vec::new();
        let mut targets: Vec<Word> = Vec::new();
        // The file its standard input is redirected from (`< FILE`): a shell's or
        // interpreter's program when it reads one there (`bash < x.sh`, `sh -s < x.sh`).
        let mut stdin: Option<Word> = None;
        let mut next_is: Option<&Token> = None;
        let mut tokens = lexed.tokens.iter().peekable();
        loop {
            let t = tokens.next();
            match t {
                Some(Token::Word(w)) => match next_is.take() {
                    Some(Token::Redirect(how)) => {
                        if matches!(how, super::shell::Redirect::Reads) {
                            stdin = Some(w.clone());
                        }
                        targets.push(w.clone())
                    }
                    Some(_) => {}
                    None => words.push(w.clone()),
                },
                Some(op @ (Token::Redirect(_) | Token::HereDoc)) => next_is = Some(op),
                Some(Token::Control | Token::Pipe) | None => {
                    // Each simple command in each directory it may run in (attack review 58).
                    for here in wd.here() {
                        let (w, t) = (&words, &targets);
                        if let Some(t) = self.segment(w, t, stdin.as_ref(), here.as_deref(), depth)
                        {
                            return Some(t);
                        }
                    }
                    let ends = t.and(operators.next().copied());
                    let refs: Vec<&Word> = words.iter().collect();
                    let home = self.p.home.as_deref();
                    wd.step(&refs, ends, &|w, h| {
                        candidate_with(w, h, home, &self.vars.borrow()).path()
                    });
                    for d in wd.here() {
                        if !dirs.contains(d) {
                            dirs.push(d.clone());
                        }
                    }
                    words.clear();
                    targets.clear();
                    stdin = None;
                    next_is = None;
                    if t.is_none() {
                        break;
                    }
                }
            }
        }
        let after = std::mem::replace(&mut *self.vars.borrow_mut(), before.clone());
        for dir in dirs.into_iter().skip(1) {
            for n in &lexed.nested {
                *self.vars.borrow_mut() = before.clone();
                if let Some(t) = self.command(n, dir.clone(), depth + 1) {
                    return Some(t);
                }
            }
        }
        *self.vars.borrow_mut() = after;
        None
    }

    /// One simple command: its words and redirection targets.
    fn segment(
        &self,
        words: &[Word],
        targets: &[Word],
        stdin: Option<&Word>,
        cwd: Option<&Path>,
        depth: usize,
    ) -> Option<Touch> {
        let here = cwd;
        for t in targets {
            if let Some(t) = self.word(t, here, None, true) {
                return Some(Touch {
                    how: "redirects to",
                    ..t
                });
            }
        }
        // A wrapper that runs the program in another directory (`env -C DIR`): the program's
        // words and the commands it hands are that directory's (redirections are the shell's).
        let mut moved = cwd.map(Path::to_path_buf);
        if let Some(dir) = super::simple::wrapper_dir(&words.iter().collect::<Vec<_>>()) {
            moved = dir.and_then(|d| {
                let d = match d.strip_prefix("~/") {
                    Some(r) => self.p.home.as_ref()?.join(r),
                    None => PathBuf::from(d),
                };
                match d.is_absolute() {
                    true => Some(d),
                    false => here.map(|h| h.join(d)),
                }
            });
        }
        let here = moved.as_deref();
        // Commands it hands a program through a variable, a wrapper or an option (§13.3;
        // `GIT_PAGER=CMD git log`, `watch 'CMD'`, `find -exec`), analysed as commands.
        let refs: Vec<&Word> = words.iter().collect();
        for handed in super::handed::handed_and_carried(&refs) {
            let t = match handed {
                Some(code) => self.command(&code, moved.clone(), depth + 1),
                // In a script's text, code only known when it runs is not judged, as a program
                // only known then is not (§13.3, "Scripts").
                None if self.lenient => None,
                None => Some(Touch {
                    resource: Resource::Binary,
                    path: joined(refs.iter().copied()),
                    how: "hands a program code only known when it runs, which may run",
                }),
            };
            if t.is_some() {
                return t;
            }
        }
        let mut i = 0;
        let mut xargs = false;
        // Assignments (`F=path cmd`) and wrappers (`sudo`, `env`, `timeout 5`, `xargs`).
        while let Some(w) = words.get(i) {
            let lit = w.literal();
            let assignment = w
                .pieces
                .iter()
                .position(|p| *p == Piece::Lit('='))
                .is_some_and(|eq| {
                    // `NAME=` and bash's `NAME+=` (append), both assignments before a program.
                    let name = match w.pieces[..eq].split_last() {
                        Some((Piece::Lit('+'), name)) => name,
                        _ => &w.pieces[..eq],
                    };
                    !name.is_empty()
                        && name
                            .iter()
                            .all(|p| matches!(p, Piece::Lit(c) if c.is_alphanumeric() || *c == '_'))
                });
            if assignment {
                if let Some(t) = self.word(w, here, None, false) {
                    return Some(t);
                }
                let text: String = w.squeezed();
                if let Some((name, value)) = text.split_once('=') {
                    let mut vars = self.vars.borrow_mut();
                    match w
                        .pieces
                        .iter()
                        .skip(name.chars().count() + 1)
                        .all(|p| matches!(p, Piece::Lit(_)))
                    {
                        true => vars.insert(name.to_string(), value.to_string()),
                        false => vars.remove(name),
                    };
                }
                i += 1;
                continue;
            }
            let Some(name) = lit.as_deref().map(basename) else {
                break;
            };
            // A runner's program (`poetry run git checkout -- .`, §13.3 "Runners").
            if let Some((_, Runs::Program(k))) = runs(&refs, i) {
                if k > i && k < words.len() {
                    i = k;
                    continue;
                }
            }
            if !WRAPPERS.contains(&name.as_str()) {
                break;
            }
            xargs |= name == "xargs";
            i += 1;
            // The wrapper's options and their values.
            while let Some(o) = words.get(i).and_then(Word::literal) {
                if o.starts_with('-') && o != "-" {
                    i += 1;
                    let takes = super::simple::takes_value(&name, &o)
                        || matches!(
                            (name.as_str(), o.as_str()),
                            ("sudo" | "doas" | "runuser" | "su", "-u" | "-g" | "-c")
                                | ("nice", "-n")
                                | (
                                    "xargs",
                                    "-I" | "-n" | "-P" | "-d" | "-E" | "-L" | "-s" | "-a"
                                )
                                | ("timeout", "-s" | "-k")
                                | ("flock", "-w")
                        );
                    if takes {
                        if let Some(v) = words.get(i) {
                            if let Some(t) = self.word(v, here, None, false) {
                                return Some(t);
                            }
                        }
                        if matches!((name.as_str(), o.as_str()), ("su" | "runuser", "-c")) {
                            let c = words.get(i).map(Word::squeezed).unwrap_or_default();
                            if let Some(t) = self.command(&c, moved.clone(), depth + 1) {
                                return Some(t);
                            }
                        }
                        i += 1;
                    }
                } else if (name == "env" && o.contains('='))
                    || (name == "timeout" && o.chars().next().is_some_and(|c| c.is_ascii_digit()))
                    || o.parse::<f64>().is_ok()
                {
                    i += 1;
                } else {
                    break;
                }
            }
        }
        let program = words.get(i)?;
        let args = &words[i + 1..];
        let Some(prog) = program.literal() else {
            if self.lenient {
                return None;
            }
            return Some(Touch {
                resource: Resource::Binary,
                path: program.squeezed(),
                how: "runs a program whose name is only known when it runs, which may be",
            });
        };
        let name = basename(&prog).to_lowercase();
        if self.p.programs.contains(&name) {
            return Some(Touch {
                resource: Resource::Binary,
                path: prog,
                how: "runs",
            });
        }
        if prog.contains('/') {
            if let Some(t) = self.word(program, here, None, false) {
                return Some(Touch { how: "runs", ..t });
            }
        }
        if let Some(t) = self.code_files(words, i, stdin, here, depth) {
            return Some(t);
        }
        let destroys = DESTROY_PROGRAMS.contains(&name.as_str())
            || (name == "find"
                && args.iter().filter_map(Word::literal).any(|a| {
                    matches!(
                        a.as_str(),
                        "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir"
                    )
                }));
        let tree = if destroys {
            Some(false)
        } else if READ_TREE_PROGRAMS.contains(&name.as_str()) {
            Some(true)
        } else {
            None
        };
        let files = FILE_PROGRAMS.contains(&name.as_str());
        match name.as_str() {
            // Where they move the commands after them is `WorkingDirs`'s reading.
            "cd" | "chdir" | "pushd" | "popd" => return None,
            "kill" | "pkill" | "killall" | "skill" | "fuser" | "systemctl" | "service"
            | "launchctl"
                if !self.lenient || args.iter().all(|a| a.literal().is_some()) =>
            {
                if let Some(t) = self.kill(&name, args) {
                    return Some(t);
                }
            }
            "eval" => {
                let all: Vec<String> = args.iter().map(Word::squeezed).collect();
                if args.iter().any(|a| a.literal().is_none()) {
                    return (!self.lenient).then(|| Touch {
                        resource: Resource::Binary,
                        path: all.join(" "),
                        how: "evaluates a command only known when it runs, which may run",
                    });
                }
                return self.command(&all.join(" "), moved.clone(), depth + 1);
            }
            "git" => {
                let mut j = 0;
                let mut dir = here.map(Path::to_path_buf);
                while let Some(a) = args.get(j).and_then(Word::literal) {
                    if a == "-C" {
                        dir = args
                            .get(j + 1)
                            .and_then(|d| candidate(d, here, self.p.home.as_deref()).path());
                        j += 2;
                    } else if a == "-c" {
                        j += 2;
                    } else if a.starts_with('-') {
                        j += 1;
                    } else {
                        break;
                    }
                }
                let sub = args.get(j).and_then(Word::literal).unwrap_or_default();
                let rest: Vec<String> = args[j + 1..].iter().map(Word::squeezed).collect();
                // `git checkout -b NEW` / `git switch -c NEW` from HEAD leave the tree as it is.
                let new_branch = matches!(sub.as_str(), "checkout" | "switch")
                    && rest.len() == 2
                    && matches!(rest[0].as_str(), "-b" | "-c");
                let resets_tree = sub != "reset"
                    || rest
                        .iter()
                        .any(|a| matches!(a.as_str(), "--hard" | "--merge" | "--keep"));
                // What it stages for a commit, untracked files included (§13.3, "Staged
                // files"): staging the key is reading it.
                if let Some(dirs) = super::staged::staged(
                    &sub,
                    &args[j + 1..],
                    dir.as_deref(),
                    self.p.home.as_deref(),
                ) {
                    for d in dirs {
                        let t = match d {
                            Some(d) if d.is_dir() => self.holds(&d, true),
                            Some(_) => None,
                            None => self.pattern(&[pattern::Pat::Any]),
                        };
                        if let Some(t) = t {
                            return Some(Touch {
                                how: "stages for a commit a directory holding",
                                ..t
                            });
                        }
                    }
                }
                if GIT_TREE.contains(&sub.as_str()) && !new_branch && resets_tree {
                    let t = match &dir {
                        Some(d) => self.holds(d, false),
                        None => self.pattern(&[pattern::Pat::Any]),
                    };
                    if let Some(t) = t {
                        return Some(Touch {
                            how: "rewrites the working tree holding",
                            ..t
                        });
                    }
                }
            }
            _ => {}
        }
        if SHELLS.contains(&name.as_str()) {
            // Its code, its options read as the shell reads them (§13.3, "Options": `bash -c -e
            // CODE`).
            let lits: Vec<Option<String>> = args.iter().map(|a| a.literal()).collect();
            match invocation(&name, &lits).map(|inv| inv.program) {
                Some(Program::Inline(Some(code))) => {
                    return self.command(&code, moved.clone(), depth + 1)
                }
                Some(Program::Inline(None)) if !self.lenient => {
                    return Some(Touch {
                        resource: Resource::Binary,
                        path: joined(args.iter()),
                        how: "runs a shell command only known when it runs, which may run",
                    })
                }
                _ => {}
            }
        }
        if SEARCH_PROGRAMS.contains(&name.as_str())
            || (matches!(name.as_str(), "grep" | "egrep" | "fgrep")
                && args.iter().filter_map(Word::literal).any(|a| {
                    a == "--recursive"
                        || (a.starts_with('-')
                            && !a.starts_with("--")
                            && (a.contains('r') || a.contains('R')))
                }))
        {
            if let Some(c) = here {
                if let Some(t) = self.holds(c, !destroys) {
                    return Some(t);
                }
            }
        }
        for a in args {
            if let Some(t) = self.word(
                a,
                here,
                tree,
                (files || xargs) && !a.literal().is_some_and(|l| l.starts_with('-')),
            ) {
                return Some(t);
            }
        }
        if xargs && files && !self.lenient {
            // Arguments read from standard input: any path.
            return self.pattern(&[pattern::Pat::Any]).map(|t| Touch {
                how: "passes unknown arguments that may name",
                ..t
            });
        }
        None
    }

    /// The code of the files the simple command `words` (its program at `i`) runs, as they
    /// are now (§13.3, "Scripts"; the same files the secrecy rule reads, [`CodeFiles`]):
    /// shell code screened as a command of its own, leniently (words only known when it runs
    /// are not judged), an interpreter's code by the protected names and the literal paths and
    /// patterns in it. A file that cannot be read is left to the secrecy rule and §14. `stdin`
    /// is the file its standard input is redirected from.
    fn code_files(
        &self,
        words: &[Word],
        i: usize,
        stdin: Option<&Word>,
        here: Option<&Path>,
        depth: usize,
    ) -> Option<Touch> {
        if !self.code_files {
            return None;
        }
        let refs: Vec<&Word> = words.iter().collect();
        let home = self.p.home.as_deref();
        let vars = Default::default();
        let script = |code_files| Ctx {
            p: self.p,
            cwd: here,
            project: self.project,
            vars: &vars,
            listed: self.listed,
            lenient: true,
            code_files,
            code_seen: self.code_seen,
        };
        let runs_code_that = |t: Touch| Touch {
            how: "runs code from a file that touches",
            ..t
        };
        for code in (CodeFiles { home, stdin }).run_by(&refs, i, here) {
            let reading = self.code_seen.borrow_mut().reading(&code, here);
            match reading {
                Reading::First => {}
                Reading::Again => continue,
                Reading::OverBudget => {
                    return Some(Touch {
                        resource: Resource::Binary,
                        path: format!("code in files past the {MAX_CODE_TEXTS} one decision reads"),
                        how: "runs code the screen does not read, which may run",
                    })
                }
            }
            let t = match code {
                Script::Shell(text) => {
                    script(true).command(&text, here.map(Path::to_path_buf), depth + 1)
                }
                Script::Config(text) => {
                    script(false).command(&text, here.map(Path::to_path_buf), depth + 1)
                }
                // A path in code may be a glob's (`glob.glob('../*.key')`): its `*`, `?` and
                // `[…]` are read as a shell word's.
                Script::Interpreted(text) => {
                    let script = script(false);
                    script.name_in(&text).or_else(|| {
                        chunks(&text)
                            .filter(|c| c.len() <= super::MAX_PATH_CHARS)
                            .flat_map(|c| lex(c).tokens)
                            .find_map(|t| match t {
                                Token::Word(w) => script.word(&w, here, None, false),
                                _ => None,
                            })
                    })
                }
                Script::Unknown | Script::Unread(_) => None,
            };
            if let Some(t) = t {
                return Some(runs_code_that(t));
            }
        }
        None
    }

    /// A `kill`-like command aimed at the hook server.
    pub(super) fn kill(&self, name: &str, args: &[Word]) -> Option<Touch> {
        let server = |how| Touch {
            resource: Resource::HookServer,
            path: self.p.server_cmdline.clone(),
            how,
        };
        let mut first = true;
        for a in args {
            let Some(l) = a.literal() else {
                return Some(server(
                    "signals a process only known when it runs, which may be",
                ));
            };
            let l = l.to_lowercase();
            if name == "kill" {
                let is_signal = first && l.starts_with('-');
                first = false;
                if is_signal || l == "--" || l == "-s" || l == "-l" {
                    continue;
                }
                if let Ok(pid) = l.parse::<i64>() {
                    if pid <= 1 || self.p.server_pids().contains(&pid.abs()) {
                        return Some(server("kills"));
                    }
                } else if !l.starts_with('%')
                    && !l
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_alphabetic())
                {
                    return Some(server("signals a process it names by a word that may be"));
                }
            } else if !l.starts_with('-') {
                // A process name or pattern: refused when every literal run of it is in the
                // server's command line (a pattern with none may match anything).
                let runs: Vec<&str> = l
                    .split(|c: char| ".*+?[](){}|^$\\".contains(c))
                    .filter(|r| !r.is_empty())
                    .collect();
                let cmdline = &self.p.server_cmdline;
                if runs.iter().all(|r| cmdline.contains(r)) || l.contains("memlineage") {
                    return Some(server("stops"));
                }
            }
        }
        None
    }
}

fn basename(s: &str) -> String {
    s.rsplit('/').next().unwrap_or(s).to_string()
}

/// A command's words, for a reason.
fn text_of(lexed: &super::shell::Lexed) -> String {
    super::shell::joined(lexed.tokens.iter().filter_map(|t| match t {
        Token::Word(w) => Some(w),
        _ => None,
    }))
}
