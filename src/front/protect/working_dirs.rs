//! Where the shell is (`spec/hooks.md` §13.3, §16.2, §17.3; attack review 58): the working
//! directories each simple command of a text may run in, as bash and zsh move them. Shared by
//! the three readings of a shell command (protected resources, secrets, writes that outlive
//! the call), each of which used to read `cd DIR`/`pushd DIR` alone, as a move to `DIR` for
//! every command after it.
//!
//! What they missed, each a command that wrote the hook settings or deleted the ledger with
//! exit 0: `cd -` (the previous directory, read as the home directory), `popd` and `pushd`
//! without a directory or with `+N` (the stack), `pushd -n` (no move), zsh's `cd OLD NEW`
//! (`OLD` replaced in the working directory), `CDPATH` and `cdable_vars` (`cd NAME` under
//! another directory), a `cd` that fails (`cd /nonexistent; …`, `cd a || …`), one in a
//! subshell, a pipeline, the background, a compound command or a function (`(cd /tmp); …`,
//! `if false; then cd /tmp; fi`), and code run in this shell that the reading does not follow
//! (`eval`, `source`, `trap`, `alias`).
//!
//! The reading now keeps a set of directories a command may run in ([`WorkingDirs::here`]),
//! `None` in it standing for one not known (fail closed: each rule then reads a relative path
//! as it does for an unknown working directory):
//!
//! - a move is certain for the commands after it in its and-or list joined by `&&` with no
//!   `||` before it; after any other operator, and whenever the text holds a subshell, a
//!   pipe, a background job or a reserved word (`{`, `if`, `then`, `do`, `function`…), the
//!   commands after it may run where it moved or where it was before (both are kept);
//! - `cd -` is the previous directory, `pushd`/`popd` move through a stack, as the shells do;
//!   a stack entry (`+N`, `-N`), two operands, a target only known when it runs, a program
//!   only known when it runs (`$c DIR` may be `cd`), and `eval`, `source`/`.`, `trap` and
//!   `alias` (code this shell runs) make it unknown;
//! - a text that sets `CDPATH`, `PWD`, `OLDPWD` or `HOME`, or names `cdable_vars` or `autocd`
//!   (in any case, with or without `_`), makes every `cd` without an absolute target unknown
//!   (and, with `autocd`, every command).

use super::shell::{lex, Lexed, Operator, Piece, Token, Word};
use super::simple::{assigns, is_assignment, simple_commands};
use super::MAX_NESTING;
use std::path::{Path, PathBuf};

/// More possible directories than this are one not known.
const MAX_DIRS: usize = 4;

/// Words that start a compound command or a function, or change what runs (bash(1)
/// "Reserved Words", zsh's precommand modifiers are skipped separately).
const RESERVED: &[&str] = &[
    "{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for",
    "case", "esac", "select", "function", "time", "coproc", "repeat", "foreach", "end",
];

/// Programs that may move this shell: the directory builtins, and those that run code in it
/// (`eval`, `source`, `.`, `trap`, `alias`).
const MOVERS: &[&str] = &[
    "cd", "chdir", "pushd", "popd", "eval", "source", ".", "trap", "alias",
];

/// A sourced file longer than this is read as one that may move the shell.
const MAX_SOURCED_BYTES: u64 = 1 << 20;

/// How many sourced files one text's reading reads at most; past them a sourced file may move
/// the shell (a text of thousands of `. ./fN` must not make a decision read gigabytes).
const MAX_SOURCED_FILES: usize = 16;

/// The directories a possible working directory stands for (`None`: one not known).
pub(crate) type Dirs = Vec<Option<PathBuf>>;

/// Resolves a `cd` target word in a working directory (`None`: not known) to a directory;
/// `None` when that cannot be known.
pub(crate) type Resolve<'a> = dyn Fn(&Word, Option<&Path>) -> Option<PathBuf> + 'a;

/// The working directories of the simple commands of one text, step by step.
#[derive(Clone, Debug)]
pub(crate) struct WorkingDirs {
    /// Where the next simple command may run.
    here: Dirs,
    /// `$OLDPWD`: where `cd -` goes.
    old: Dirs,
    /// `pushd`'s stack below the working directory, its top last; `None`: not known.
    stack: Option<Vec<Dirs>>,
    /// Every directory the current and-or list may be in, its start included.
    list: Dirs,
    /// Whether an `||` came before, in the current and-or list.
    or_seen: bool,
    /// Whether the text holds a subshell, pipe, background job or compound command.
    doubtful: bool,
    /// The entries of every `CDPATH=…` the text assigns (read as if each held for every
    /// `cd`): `cd NAME` may go to `ENTRY/NAME` for each, or to `./NAME`.
    cdpath: Vec<Word>,
    /// Whether the text may make `cd NAME` go where the reading cannot tell (`cdable_vars`,
    /// a `CDPATH` not assigned as a word, `PWD`, `HOME`).
    redirected: bool,
    /// Whether a bare directory name may be a `cd` (`autocd`).
    auto_cd: bool,
    /// How many `eval`s deep this reading is.
    depth: usize,
    /// The text read (of the outermost command).
    text: String,
    /// How many sourced files are still to be read ([`MAX_SOURCED_FILES`]).
    sourced: usize,
}

impl WorkingDirs {
    /// The reading of `lexed` (whose text is `text`), starting in `start` (`None`: not known).
    pub(crate) fn new(text: &str, lexed: &Lexed, start: Option<PathBuf>) -> Self {
        let norm: String = text
            .chars()
            .filter(|c| !"'\"\\_".contains(*c))
            .flat_map(char::to_lowercase)
            .collect();
        let has = |k: &str| norm.contains(k);
        let assigned: Vec<&Word> = lexed
            .tokens
            .iter()
            .filter_map(|t| match t {
                Token::Word(w) => Some(w),
                _ => None,
            })
            .filter(|w| {
                w.pieces
                    .starts_with(&"CDPATH=".chars().map(Piece::Lit).collect::<Vec<_>>())
            })
            .collect();
        let cdpath = assigned
            .iter()
            .flat_map(|w| entries(&w.pieces[7..]))
            .collect();
        let unread = norm.matches("cdpath").count() > assigned.len();
        WorkingDirs {
            here: vec![start.clone()],
            old: vec![None],
            // bash's `DIRSTACK` array is the stack: assigned, any entry may be anything.
            stack: (!has("dirstack")).then(Vec::new),
            list: vec![start],
            or_seen: false,
            doubtful: doubtful(lexed),
            cdpath,
            redirected: unread || has("cdable") || has("pwd=") || has("home="),
            auto_cd: has("autocd"),
            depth: 0,
            text: text.to_string(),
            sourced: MAX_SOURCED_FILES,
        }
    }

    /// Where the next simple command may run: at least one directory, `None` for one not
    /// known.
    pub(crate) fn here(&self) -> &[Option<PathBuf>] {
        &self.here
    }

    /// The one directory the next simple command runs in, when it is known and the only one.
    pub(crate) fn single(&self) -> Option<&Path> {
        match self.here.as_slice() {
            [Some(d)] => Some(d),
            _ => None,
        }
    }

    /// Moves past the simple command `words`, ended by `ends` (`None`: the end of the text).
    pub(crate) fn step(&mut self, words: &[&Word], ends: Option<Operator>, resolve: &Resolve<'_>) {
        let old = self.old.clone();
        let (is_move, after) = self.after(words, resolve);
        let after = if self.auto_cd { vec![None] } else { after };
        let certain = !self.doubtful && !self.or_seen && ends == Some(Operator::And);
        union(&mut self.list, &after);
        self.here = if certain { after } else { self.list.clone() };
        match ends {
            Some(Operator::And) => {}
            Some(Operator::Or) => self.or_seen = true,
            _ => {
                self.list = self.here.clone();
                self.or_seen = false;
            }
        }
        if !certain && is_move {
            // It may not have moved: nor `$OLDPWD`, nor the stack.
            union(&mut self.old, &old);
            self.stack = None;
        }
    }

    /// Whether `words` may move the shell (`cd`, `pushd`, `popd`, code this shell runs), and
    /// where it may be after it.
    fn after(&mut self, words: &[&Word], resolve: &Resolve<'_>) -> (bool, Dirs) {
        let i = program(words);
        let Some(program) = words.get(i) else {
            return (false, self.here.clone());
        };
        let Some(name) = program.literal() else {
            // `$c DIR` may be `cd DIR`; a script's own arguments (`"$@"`) are the call's
            // words, judged as such.
            return match positional(program) {
                true => (false, self.here.clone()),
                false => (false, vec![None]),
            };
        };
        let args = &words[i + 1..];
        let after = match name.as_str() {
            "cd" | "chdir" => self.cd(args, resolve),
            "pushd" => self.pushd(args, resolve),
            "popd" => self.popd(args),
            "eval" => match self.eval(args, resolve) {
                Some(after) => after,
                None => vec![None],
            },
            // Code this shell runs later or now: one that cannot move it leaves it.
            "trap" if at_exit(args) => return (false, self.here.clone()),
            "trap" => match trap_code(args).as_deref().map(moves_in) {
                Some(false) => return (false, self.here.clone()),
                _ => vec![None],
            },
            "alias" => {
                let values: Option<Vec<String>> = args.iter().map(|a| a.literal()).collect();
                let moves = values.is_none_or(|v| {
                    v.iter()
                        .any(|a| a.split_once('=').is_none_or(|(_, code)| moves_in(code)))
                });
                match moves {
                    false => return (false, self.here.clone()),
                    true => vec![None],
                }
            }
            // `dirs -c` clears the stack, `dirs +N` prints an entry: not followed.
            "dirs" => {
                if !args.is_empty() {
                    self.stack = None;
                }
                return (false, self.here.clone());
            }
            "source" | "." => match self.sourced_moves(args, resolve) {
                false => return (false, self.here.clone()),
                true => vec![None],
            },
            _ => return (false, self.here.clone()),
        };
        (true, capped(after))
    }

    /// Whether `source FILE` may move the shell: `FILE` is not a path of each directory the
    /// shell may be in (bash looks a name without `/` up in `PATH`), or the command names its
    /// file name elsewhere too (it may write it first: `echo 'cd D' > a.sh; . ./a.sh`), or it
    /// cannot be read, or holds code that may move it ([`moves_in`]).
    fn sourced_moves(&mut self, args: &[&Word], resolve: &Resolve<'_>) -> bool {
        let Some(file) = args.first() else {
            return true;
        };
        if self.sourced == 0 {
            return true;
        }
        self.sourced -= 1;
        let Some(name) = file.literal() else {
            return true;
        };
        let base = name.rsplit('/').next().unwrap_or_default();
        if !name.contains('/') || base.is_empty() || self.text.matches(base).count() > 1 {
            return true;
        }
        self.here.iter().any(|h| {
            // Through the one reader of files named by untrusted input: never blocks (a FIFO
            // there would hang the hook), regular files only, bounded.
            let text = resolve(file, h.as_deref())
                .and_then(|p| crate::store::durable::read_regular(&p, MAX_SOURCED_BYTES).ok()?)
                .and_then(|b| String::from_utf8(b).ok());
            text.is_none_or(|t| moves_in(&t))
        })
    }

    /// Where `eval ARGS` may leave the shell when every word is known: its text read as a
    /// command of its own, from here (up to [`MAX_NESTING`] levels).
    fn eval(&mut self, args: &[&Word], resolve: &Resolve<'_>) -> Option<Dirs> {
        let text: Vec<String> = args.iter().map(|a| a.literal()).collect::<Option<_>>()?;
        if self.depth >= MAX_NESTING {
            return None;
        }
        let text = text.join(" ");
        let lexed = lex(&text);
        let mut inner = WorkingDirs::new(&text, &lexed, None);
        inner.here = self.here.clone();
        inner.list = self.here.clone();
        inner.old = self.old.clone();
        inner.stack = self.stack.clone();
        inner.doubtful |= self.doubtful;
        inner.redirected |= self.redirected;
        inner.auto_cd |= self.auto_cd;
        inner.cdpath.extend(self.cdpath.iter().cloned());
        inner.depth = self.depth + 1;
        inner.text = self.text.clone();
        inner.sourced = self.sourced;
        // The end of its text is where `eval` ends: the caller's step reads that operator.
        for s in simple_commands(&lexed) {
            inner.step(&s.words, s.ends.or(Some(Operator::And)), resolve);
        }
        self.old = inner.old;
        self.stack = inner.stack;
        self.sourced = inner.sourced;
        Some(inner.here)
    }

    /// `cd [-L|-P|-e|-@|-q|-s] [--] [DIR | - | OLD NEW | ±N]`.
    fn cd(&mut self, args: &[&Word], resolve: &Resolve<'_>) -> Dirs {
        let operands = operands(args);
        let to = match operands.as_slice() {
            [] if self.redirected => vec![None],
            [] => self.each(|_| resolve(&home_word(), None)),
            [w] => match w.literal().as_deref() {
                Some("-") => self.old.clone(),
                Some(l) if is_stack_entry(l) => vec![None],
                _ => self.to(w, resolve),
            },
            // zsh's `cd OLD NEW`: the first `OLD` in the working directory replaced by `NEW`;
            // bash refuses it (and stays).
            [old, new] => match (old.literal(), new.literal()) {
                (Some(old), Some(new)) if !old.is_empty() => {
                    let mut out = self.here.clone();
                    for h in &self.here {
                        let to = h.as_ref().and_then(|h| {
                            let h = h.to_str()?;
                            h.contains(old.as_str())
                                .then(|| PathBuf::from(h.replacen(old.as_str(), &new, 1)))
                        });
                        if to.is_some() {
                            union(&mut out, &[to]);
                        }
                    }
                    out
                }
                _ => vec![None],
            },
            _ => vec![None],
        };
        self.old = self.here.clone();
        to
    }

    /// `pushd [-n] [DIR | ±N]`.
    fn pushd(&mut self, args: &[&Word], resolve: &Resolve<'_>) -> Dirs {
        let no_move = args.iter().any(|a| a.literal().as_deref() == Some("-n"));
        let here = self.here.clone();
        match operands(args).as_slice() {
            [w] if w.literal().is_none_or(|l| !is_stack_entry(&l)) => {
                let to = self.to(w, resolve);
                if no_move {
                    if let Some(stack) = self.stack.as_mut() {
                        stack.push(to);
                    }
                    return here;
                }
                if let Some(stack) = self.stack.as_mut() {
                    stack.push(here.clone());
                }
                self.old = here;
                to
            }
            // The two top entries swapped.
            [] if !no_move => match self.stack.as_mut().and_then(Vec::pop) {
                Some(top) => {
                    if let Some(stack) = self.stack.as_mut() {
                        stack.push(here.clone());
                    }
                    self.old = here;
                    top
                }
                None => vec![None],
            },
            _ => {
                self.stack = None;
                vec![None]
            }
        }
    }

    /// `popd [-n] [±N]`.
    fn popd(&mut self, args: &[&Word]) -> Dirs {
        let no_move = args.iter().any(|a| a.literal().as_deref() == Some("-n"));
        let here = self.here.clone();
        match (operands(args).as_slice(), self.stack.as_mut()) {
            ([], Some(stack)) => match stack.pop() {
                Some(_) if no_move => here,
                Some(top) => {
                    self.old = here;
                    top
                }
                None => vec![None],
            },
            _ => {
                self.stack = None;
                vec![None]
            }
        }
    }

    /// Where `cd DIR` may go from each possible working directory: `DIR` there, and under
    /// each `CDPATH` entry when `DIR` is relative and starts with neither `.` nor `..`.
    fn to(&self, w: &Word, resolve: &Resolve<'_>) -> Dirs {
        if absolute(w) {
            return self.each(|h| resolve(w, h));
        }
        if self.redirected {
            return vec![None];
        }
        let mut out = self.each(|h| resolve(w, h));
        let dotted = w
            .literal()
            .is_some_and(|l| l == "." || l == ".." || l.starts_with("./") || l.starts_with("../"));
        if !dotted {
            for e in &self.cdpath {
                let mut joined = e.pieces.clone();
                if !joined.is_empty() {
                    joined.push(Piece::Lit('/'));
                }
                joined.extend(w.pieces.iter().cloned());
                let joined = Word { pieces: joined };
                union(&mut out, &self.each(|h| resolve(&joined, h)));
            }
        }
        capped(out)
    }

    /// `f` of each possible working directory.
    fn each(&self, f: impl Fn(Option<&Path>) -> Option<PathBuf>) -> Dirs {
        let mut out = Vec::new();
        for h in &self.here {
            union(&mut out, &[f(h.as_deref())]);
        }
        out
    }
}

/// The index of the program in `words`: after assignments, reserved words, and `builtin`,
/// `command` (`-p`), zsh's `noglob` and `nocorrect`.
fn program(words: &[&Word]) -> usize {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        let skip = match w.literal().as_deref() {
            Some(l) => {
                is_assignment(l)
                    || RESERVED.contains(&l)
                    || matches!(l, "builtin" | "command" | "noglob" | "nocorrect" | "-p")
            }
            None => assigns(w),
        };
        if !skip {
            break;
        }
        i += 1;
    }
    i
}

/// Whether code `text` (a trap's, an alias's, a sourced file's) may move the shell that runs
/// it: a simple command whose program is one of [`MOVERS`] or only known when it runs, or
/// `autocd`.
fn moves_in(text: &str) -> bool {
    let lexed = lex(text);
    let norm: String = text.chars().filter(|c| *c != '_').collect();
    norm.to_lowercase().contains("autocd")
        || simple_commands(&lexed).iter().any(|s| {
            let words = &s.words;
            words.get(program(words)).is_some_and(|p| {
                p.literal()
                    .is_none_or(|name| MOVERS.contains(&name.as_str()))
            })
        })
}

/// The code of `trap [--] CODE SIGNAL…` (`None`: not known, or `trap -p`/`-l`).
fn trap_code(args: &[&Word]) -> Option<String> {
    let first = args.first()?.literal()?;
    match first.as_str() {
        "--" => args.get(1)?.literal(),
        "-p" | "-l" => Some(String::new()),
        _ => Some(first),
    }
}

/// Whether `w` is a positional parameter alone (`"$@"`, `$*`, `$1`).
fn positional(w: &Word) -> bool {
    matches!(w.pieces.as_slice(), [Piece::Var(v)]
        if v == "@" || v == "*" || v.chars().all(|c| c.is_ascii_digit()))
}

/// Whether `trap CODE SIGNAL…` runs its code only when the shell exits (`EXIT`, `0`), after
/// every command.
fn at_exit(args: &[&Word]) -> bool {
    let args = match args.first().and_then(|a| a.literal()).as_deref() {
        Some("--") => &args[1..],
        _ => args,
    };
    args.len() > 1
        && args[1..].iter().all(|a| {
            a.literal()
                .is_some_and(|l| matches!(l.to_uppercase().as_str(), "EXIT" | "0" | "SIGEXIT"))
        })
}

/// Whether the text holds a subshell, a pipe, a background job, or a reserved word starting a
/// command: where a move applies to the commands after it cannot be read from its order.
fn doubtful(lexed: &Lexed) -> bool {
    use Operator::{Background, Close, Open, Pipe};
    if lexed
        .operators
        .iter()
        .any(|o| matches!(o, Open | Close | Background | Pipe))
    {
        return true;
    }
    let mut first = true;
    let mut target = false;
    for t in &lexed.tokens {
        match t {
            Token::Word(w) => {
                let l = w.literal();
                if first
                    && !std::mem::take(&mut target)
                    && l.as_deref().is_some_and(|l| RESERVED.contains(&l))
                {
                    return true;
                }
                first = false;
            }
            Token::Redirect(_) | Token::HereDoc => target = true,
            Token::Control | Token::Pipe => first = true,
        }
    }
    false
}

/// The operands of `cd`/`pushd`/`popd`: the words after its options (`-L`, `-P`, `-e`, `-@`,
/// `-n`, zsh's `-q`, `-s`; `--` ends them). `-` and `-N` are operands.
fn operands<'w>(args: &[&'w Word]) -> Vec<&'w Word> {
    let mut i = 0;
    while let Some(l) = args.get(i).and_then(|a| a.literal()) {
        if l == "--" {
            i += 1;
            break;
        }
        if l.len() < 2 || !l.starts_with('-') || is_stack_entry(&l) {
            break;
        }
        i += 1;
    }
    args[i..].to_vec()
}

/// Whether `l` is `+N` or `-N`: an entry of the directory stack (zsh's `cd` too).
fn is_stack_entry(l: &str) -> bool {
    l.strip_prefix(['+', '-'])
        .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
}

/// Whether a `cd` target starts at the root or the home directory (`CDPATH` is not read).
fn absolute(w: &Word) -> bool {
    matches!(w.pieces.first(), Some(Piece::Lit('/') | Piece::Home))
}

/// The entries of a `CDPATH` value (`:`-separated; a leading `~` the home directory).
fn entries(value: &[Piece]) -> Vec<Word> {
    value
        .split(|p| *p == Piece::Lit(':'))
        .map(|e| Word {
            pieces: match e.split_first() {
                Some((Piece::Lit('~'), rest)) => super::shell::tilde(rest),
                _ => e.to_vec(),
            },
        })
        .collect()
}

/// `~`: where `cd` alone goes.
fn home_word() -> Word {
    Word {
        pieces: vec![Piece::Home],
    }
}

/// Adds to `set` each of `more` it does not hold.
fn union(set: &mut Dirs, more: &[Option<PathBuf>]) {
    for d in more {
        if !set.contains(d) {
            set.push(d.clone());
        }
    }
    if set.len() > MAX_DIRS {
        *set = vec![None];
    }
}

/// `dirs`, or one not known when they are too many.
fn capped(dirs: Dirs) -> Dirs {
    match dirs.len() {
        0 => vec![None],
        n if n > MAX_DIRS => vec![None],
        _ => dirs,
    }
}

#[cfg(test)]
mod tests;
