//! The values of the variables a command assigns itself (`spec/hooks.md` §16.2, "Variables
//! the command assigns"), so that a word is read as each value may spell it.
//!
//! Before attack review 46 the secrecy rule read `$D` as a value only known when it runs even
//! when the command had just written it: `D=~/.aws; cat $D/credentials | mytool` named the
//! credentials by a pattern over an unknown directory, a possible secret only, and a program not
//! known to stay local was handed them with exit 0 in a session that had read nothing; so were
//! `${D}`, `${D:-x}`, a `for` loop's words and `read` from a here-string.
//!
//! The reading is flow-insensitive, as fails closed: every value any assignment of the command
//! gives a name (`NAME=V`, `NAME+=V`, `export`/`declare`/`local`/`typeset`/`readonly NAME=V`,
//! `for NAME in W…`, `select`, `read NAME <<< W`), in nested commands and code the command runs
//! too, is one the name may have wherever it is read, and so is the name's value from the
//! environment. A value the command gives at run time (`read` from input, `mapfile`, `printf
//! -v`, `getopts`, `for NAME` without `in`, a value with a command substitution) is only known
//! when it runs: a word that holds it may name any file.

use super::super::protect::shell::{lex, Lexed, Piece, Token, Word};
use super::super::protect::simple::{basename, simple_commands};
use super::{Facts, SecretRules};
use crate::front::protect::pattern::Resolver;
use std::collections::{HashMap, HashSet};
use std::path::Path;

impl SecretRules {
    /// The secret word `w` of a simple command names, as each value the command assigns may
    /// spell it (§16.2, "Variables the command assigns"); `tree`: its program reads
    /// directories; `program`: its program's name. A word holding a value the command gives only
    /// when it runs may name any file (not for a builtin that opens no file).
    pub(super) fn word_read(
        &self,
        w: &Word,
        (tree, program): (bool, Option<&str>),
        cwd: Option<&Path>,
        f: &mut Facts,
        r: &Resolver,
    ) {
        let mut found = None;
        let mut spellings = f.vars.spellings(w);
        match program.map(basename) {
            Some("git") => {
                spellings.extend(spellings.iter().filter_map(object_path).collect::<Vec<_>>());
            }
            Some("curl") => {
                let globbed = spellings.iter().flat_map(super::form::curl_globbed);
                spellings.extend(globbed.collect::<Vec<_>>());
            }
            Some("socat") => {
                let opened = spellings.iter().filter_map(super::form::socat_file);
                spellings.extend(opened.collect::<Vec<_>>());
            }
            _ => {}
        }
        // A value glued to a short option (`-c.env`, `-f~/.aws/credentials`): getopt(3) reads
        // the rest of the word as the option's value (attack review 53).
        let glued = spellings.iter().filter_map(super::form::glued_value);
        spellings.extend(glued.collect::<Vec<_>>());
        for s in spellings {
            if let Some(secret) = self.word_secret(&s, cwd, r) {
                f.named |= self.concrete(&s, cwd, r);
                found.get_or_insert(secret);
            } else if tree {
                if let Some(secret) = self.tree_secret(&s, cwd) {
                    f.named = true;
                    found.get_or_insert(secret);
                }
            }
        }
        // A variable of the environment (not assigned by the command, not one the shell or the
        // system defines) may hold a secret (`echo "$GITHUB_TOKEN" | curl -d @- …`): a possible
        // secret, for the decision on the call only (its result is not made secret by it).
        // One whose name says it holds a secret (`$GITHUB_TOKEN`, `$AWS_SECRET_ACCESS_KEY`) is
        // named concretely: refused to any program not known to stay local, as a secret file
        // named by its path is (attack review 46: `echo "$GITHUB_TOKEN" | mytool` passed).
        if found.is_none() && f.endorsing {
            if let Some(v) = f.vars.environment_in(w) {
                f.named |= names_a_secret(&v);
                found = Some(format!("the environment's `${v}`"));
            }
        }
        let opens_none = program.is_some_and(|p| NO_FILES.contains(&basename(p)));
        if found.is_none() && !opens_none && f.vars.at_run_time_in(w) {
            found = Some(format!(
                "a file named by `{}`, whose value the command gives when it runs",
                w.squeezed()
            ));
        }
        f.secrets.extend(found);
    }
}

/// The path a git word names in git's object store: after the last `:` of `REV:PATH`,
/// `:PATH` or `:N:PATH` (gitrevisions(7)), which `git show` and `git cat-file` read out of the
/// repository whether or not the working tree holds the file (attack review 51: `git show
/// HEAD:.env | mytool` passed with exit 0 in a session that had read nothing). A URL's `://`
/// is not one.
fn object_path(w: &Word) -> Option<Word> {
    let at = w.pieces.iter().rposition(|p| *p == Piece::Lit(':'))?;
    let rest = &w.pieces[at + 1..];
    (!rest.is_empty() && rest.first() != Some(&Piece::Lit('/'))).then(|| Word {
        pieces: rest.to_vec(),
    })
}

/// Whether an environment variable's name says it holds a secret: one of its words (split at
/// `_`, upper-cased) is `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `PASSPHRASE`, `APIKEY`,
/// `CREDENTIAL`, `CREDENTIALS`, `PAT` or `KEY` (`OPENAI_API_KEY`, `NPM_TOKEN`, `DB_PASSWORD`,
/// `GH_PAT`, `SIGNING_KEY`), or it ends with one of the first seven (`GITHUBTOKEN`).
pub(super) fn names_a_secret(name: &str) -> bool {
    const WORDS: [&str; 7] = [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "APIKEY",
        "CREDENTIAL",
    ];
    let upper = name.to_ascii_uppercase();
    upper.split('_').any(|w| {
        WORDS
            .iter()
            .any(|s| w == *s || w.strip_suffix('S') == Some(s))
            || w == "PAT"
            || w == "KEY"
    }) || WORDS.iter().any(|s| upper.ends_with(s))
}

/// Builtins that open no file named by their words: a value only known when it runs given to
/// them names none (`x=$(date); echo "$x"`).
const NO_FILES: &[&str] = &[
    "echo", "printf", "test", "[", ":", "export", "declare", "local", "typeset", "readonly",
    "read", "let", "return", "exit", "shift", "set", "unset", "for", "select", "case",
];

/// Variables the shell or the system defines, which hold no secret (bash(1), "Shell
/// Variables"; POSIX.1-2017 XBD 8, "Environment Variables").
#[rustfmt::skip]
const NOT_SECRET: &[&str] = &[
    "HOME", "PWD", "OLDPWD", "USER", "LOGNAME", "SHELL", "PATH", "TERM", "LANG", "LANGUAGE",
    "TMPDIR", "TMP", "TEMP", "HOSTNAME", "HOSTTYPE", "OSTYPE", "MACHTYPE", "UID", "EUID",
    "PPID", "BASHPID", "RANDOM", "SRANDOM", "SECONDS", "LINENO", "BASH", "FUNCNAME", "IFS",
    "PS1", "PS2", "PS3", "PS4", "COLUMNS", "LINES", "SHLVL", "EDITOR", "VISUAL", "PAGER",
    "DISPLAY", "OPTARG", "OPTIND", "REPLY", "PIPESTATUS", "GROUPS", "DIRSTACK", "CI",
];

/// Most values kept for one name; past it the name is only known when it runs.
const MAX_VALUES: usize = 8;

/// Most spellings of one word; past it its assigned parts are only known when they run.
const MAX_SPELLINGS: usize = 32;

/// The values the command assigns, by name.
#[derive(Default)]
pub(super) struct Assigned {
    /// Each name's known values (as the pieces of a word).
    values: HashMap<String, Vec<Vec<Piece>>>,
    /// The names some assignment gives a value only known when it runs.
    runtime: HashSet<String>,
}

impl Assigned {
    /// Adds the assignments of the lexed command `lexed` (its simple commands, not its nested
    /// texts, which are analysed as commands of their own and add theirs then).
    pub(super) fn collect(&mut self, lexed: &Lexed) {
        for s in simple_commands(lexed) {
            let words = &s.words;
            let lit = |k: usize| words.get(k).and_then(|w| w.literal());
            let first = lit(0).map(|l| basename(&l).to_string());
            match first.as_deref() {
                Some("for" | "select") => match lit(2).as_deref() {
                    Some("in") => {
                        let name = lit(1).unwrap_or_default();
                        for w in &words[3..] {
                            self.assign(&name, &w.pieces, false);
                        }
                    }
                    _ => self.at_run_time(lit(1)),
                },
                Some("read") => {
                    let names = operands(&words[1..], "pdntuNi");
                    match (names.as_slice(), s.here.as_slice()) {
                        ([one], [w]) => self.assign(one, &w.pieces, false),
                        _ => names.into_iter().for_each(|n| self.at_run_time(Some(n))),
                    }
                }
                Some("mapfile" | "readarray" | "getopts") => {
                    for n in operands(&words[1..], "dnOsuCc") {
                        self.at_run_time(Some(n));
                    }
                }
                Some("printf") => {
                    let v = words
                        .iter()
                        .position(|w| w.literal().as_deref() == Some("-v"));
                    self.at_run_time(v.and_then(|k| lit(k + 1)));
                }
                _ => {}
            }
            for w in words {
                if let Some((name, value)) = split_assignment(w) {
                    let append = name.ends_with('+');
                    self.assign(name.trim_end_matches('+'), &value, append);
                }
            }
        }
    }

    /// `word` as each value of the variables in it may spell it: the word itself first (a
    /// name's value from the environment), then every combination of assigned values, at most
    /// [`MAX_SPELLINGS`] (past it, the assigned parts are any characters).
    pub(super) fn spellings(&self, word: &Word) -> Vec<Word> {
        let mut out: Vec<Vec<Piece>> = vec![Vec::new()];
        for p in &word.pieces {
            let alts = self.piece(p);
            if out.len() * alts.len() > MAX_SPELLINGS {
                return vec![word.clone(), self.opaque(word)];
            }
            out = out
                .iter()
                .flat_map(|o| alts.iter().map(move |a| [o.as_slice(), a].concat()))
                .collect();
        }
        let mut words = vec![word.clone()];
        for pieces in out {
            let w = Word { pieces };
            if !words.contains(&w) {
                words.push(w);
            }
        }
        words
    }

    /// Whether the command assigns `name` (a value known or not).
    pub(super) fn sets(&self, name: &str) -> bool {
        self.values.contains_key(name) || self.runtime.contains(name)
    }

    /// Whether `word` holds a variable the command gives a value only known when it runs (or
    /// an operator applied to an assigned one): it may name any file.
    pub(super) fn at_run_time_in(&self, word: &Word) -> bool {
        word.pieces.iter().any(|p| match p {
            Piece::Var(v) => self.runtime.contains(v),
            Piece::Param(t) => {
                let (name, op) = param(t);
                self.runtime.contains(name) || (self.values.contains_key(name) && !is_default(op))
            }
            _ => false,
        })
    }

    /// The first variable of `word` that the command does not assign and that is not one the
    /// shell or the system defines ([`NOT_SECRET`]): its value comes from the environment.
    pub(super) fn environment_in(&self, word: &Word) -> Option<String> {
        word.pieces.iter().find_map(|p| {
            let name = match p {
                Piece::Var(v) => v.as_str(),
                Piece::Param(t) => param(t).0,
                _ => return None,
            };
            let special = !name.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic());
            let defined = special
                || NOT_SECRET.contains(&name)
                || ["LC_", "XDG_", "BASH_"].iter().any(|x| name.starts_with(x));
            let assigned = self.values.contains_key(name) || self.runtime.contains(name);
            (!defined && !assigned).then(|| name.to_string())
        })
    }

    /// The values `p` may stand for.
    fn piece(&self, p: &Piece) -> Vec<Vec<Piece>> {
        match p {
            Piece::Var(v) => {
                let mut alts = vec![vec![p.clone()]];
                alts.extend(self.values.get(v).into_iter().flatten().cloned());
                alts
            }
            Piece::Param(t) => {
                let (name, op) = param(t);
                let word = || {
                    let rest = op.trim_start_matches(':');
                    let rest = rest.get(1..).unwrap_or_default();
                    match lex(rest).tokens.into_iter().next() {
                        Some(Token::Word(w)) => w.pieces,
                        _ => Vec::new(),
                    }
                };
                let mut alts = vec![vec![p.clone()]];
                if !is_default(op) {
                    // A value computed from an assigned one by a literal pattern: computed.
                    for v in self.values.get(name).into_iter().flatten() {
                        let text: Option<String> = v
                            .iter()
                            .map(|p| match p {
                                Piece::Lit(c) => Some(*c),
                                _ => None,
                            })
                            .collect();
                        let home = v.first() == Some(&Piece::Home);
                        let rest = if home { &v[1..] } else { &v[..] };
                        let text = text.or_else(|| {
                            rest.iter()
                                .map(|p| match p {
                                    Piece::Lit(c) => Some(*c),
                                    _ => None,
                                })
                                .collect()
                        });
                        if let Some(out) = text.and_then(|t| operated(&t, op)) {
                            let mut pieces: Vec<Piece> = Vec::new();
                            if home && !op.starts_with('#') {
                                pieces.push(Piece::Home);
                            }
                            pieces.extend(out.chars().map(Piece::Lit));
                            alts.push(pieces);
                        }
                    }
                }
                if is_default(op) {
                    if op.trim_start_matches(':').starts_with('+') {
                        alts.push(Vec::new());
                    } else {
                        alts.extend(self.values.get(name).into_iter().flatten().cloned());
                    }
                    alts.push(word());
                }
                alts
            }
            _ => vec![vec![p.clone()]],
        }
    }

    /// `word` with every variable the command assigns as any characters.
    fn opaque(&self, word: &Word) -> Word {
        let pieces = word
            .pieces
            .iter()
            .map(|p| match p {
                Piece::Var(v) if self.values.contains_key(v) => Piece::Unknown,
                _ => p.clone(),
            })
            .collect();
        Word { pieces }
    }

    /// Gives `name` the value `value` (its tilde expanded as an assignment's is; its
    /// variables spelled by the values known so far); `append` (`NAME+=V`) adds `V` after each.
    fn assign(&mut self, name: &str, value: &[Piece], append: bool) {
        if name.is_empty() {
            return;
        }
        if value.iter().any(|p| matches!(p, Piece::Unknown)) {
            self.runtime.insert(name.to_string());
        }
        // A tilde prefix, `~NAME` too (`D=~root/.aws`: any user's home is read as the home
        // directory, `shell::tilde`; attack review 55).
        let value = match value.split_first() {
            Some((Piece::Lit('~'), rest)) => crate::front::protect::shell::tilde(rest),
            _ => value.to_vec(),
        };
        let spelled: Vec<Vec<Piece>> = self
            .spellings(&Word { pieces: value })
            .into_iter()
            .map(|w| w.pieces)
            .collect();
        let old = self.values.get(name).cloned().unwrap_or_default();
        let mut new = old.clone();
        for v in &spelled {
            new.push(v.clone());
            if append {
                new.extend(old.iter().map(|o| [o.as_slice(), v].concat()));
            }
        }
        new.dedup();
        if new.len() > MAX_VALUES {
            self.runtime.insert(name.to_string());
            new.truncate(MAX_VALUES);
        }
        self.values.insert(name.to_string(), new);
    }

    /// Marks `name` as given a value only known when it runs.
    fn at_run_time(&mut self, name: Option<String>) {
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            self.runtime.insert(n);
        }
    }
}

/// The name and the value's pieces of an assignment word (`NAME=V`, `NAME+=V`): a literal
/// name, then a literal `=`.
fn split_assignment(w: &Word) -> Option<(String, Vec<Piece>)> {
    let eq = w.pieces.iter().position(|p| *p == Piece::Lit('='))?;
    let name: String = w.pieces[..eq]
        .iter()
        .map(|p| match p {
            Piece::Lit(c) => Some(*c),
            _ => None,
        })
        .collect::<Option<String>>()?;
    let bare = name.trim_end_matches('+');
    let ok = !bare.is_empty()
        && bare.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !bare.starts_with(|c: char| c.is_ascii_digit());
    ok.then(|| (name.clone(), w.pieces[eq + 1..].to_vec()))
}

/// The names a builtin's words give (its operands), skipping its options and the values of
/// those among `valued` (a letter per option that takes one).
fn operands(words: &[&Word], valued: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for w in words {
        let l = w.literal().unwrap_or_default();
        if std::mem::take(&mut skip) {
            continue;
        }
        if let Some(opts) = l.strip_prefix('-') {
            skip = opts.chars().last().is_some_and(|c| valued.contains(c));
            continue;
        }
        out.push(l);
    }
    out
}

/// A `${…}` text's name and operator with its word (`D:-x` gives `D`, `:-x`).
fn param(text: &str) -> (&str, &str) {
    let end = text
        .char_indices()
        .find(|(_, c)| *c != '_' && !c.is_ascii_alphanumeric())
        .map_or(text.len(), |(k, _)| k);
    text.split_at(end)
}

/// Whether operator `op` gives the value or a word (`-`, `=`, `+`, `?`, with or without `:`),
/// not a value computed from the variable's (`#`, `%`, `/`, `^`, `,`, `:OFFSET`).
fn is_default(op: &str) -> bool {
    op.trim_start_matches(':').starts_with(['-', '=', '+', '?'])
        && !(op.starts_with(':') && op[1..].starts_with(|c: char| c.is_ascii_digit() || c == ' '))
}

/// The value `${NAME<op>}` gives when `NAME` is `value`, for operators with a literal pattern
/// (bash(1), "Parameter Expansion"): `#`/`##` and `%`/`%%` remove a prefix or suffix, `/` and
/// `//` replace, `^^`/`,,` change case; `None` for any other (a glob in the pattern, an offset).
fn operated(value: &str, op: &str) -> Option<String> {
    let literal = |p: &str| !p.contains(['*', '?', '[', '\\', '$', '`']);
    match op.chars().next()? {
        '#' => {
            let p = pattern_of(op);
            literal(p).then(|| value.strip_prefix(p).unwrap_or(value).to_string())
        }
        '%' => {
            let p = pattern_of(op);
            literal(p).then(|| value.strip_suffix(p).unwrap_or(value).to_string())
        }
        '/' => {
            let all = op.starts_with("//");
            let body = if all { &op[2..] } else { &op[1..] };
            let (from, to) = body.split_once('/').unwrap_or((body, ""));
            (literal(from) && literal(to) && !from.is_empty()).then(|| match all {
                true => value.replace(from, to),
                false => value.replacen(from, to, 1),
            })
        }
        '^' if op.len() <= 2 => Some(value.to_uppercase()),
        ',' if op.len() <= 2 => Some(value.to_lowercase()),
        _ => None,
    }
}

/// The pattern after a `#`, `##`, `%` or `%%` operator.
fn pattern_of(op: &str) -> &str {
    let mut cs = op.chars();
    let first = cs.next();
    let rest = cs.as_str();
    match first {
        Some(c) => rest.strip_prefix(c).unwrap_or(rest),
        None => rest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelled(command: &str, word: &str) -> Vec<String> {
        let mut a = Assigned::default();
        a.collect(&lex(command));
        let Some(Token::Word(w)) = lex(word).tokens.into_iter().next() else {
            panic!("{word}")
        };
        a.spellings(&w)
            .iter()
            .map(|w| {
                w.pieces
                    .iter()
                    .map(|p| match p {
                        Piece::Lit(c) => c.to_string(),
                        Piece::Home => "~".into(),
                        _ => "?".into(),
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn words_are_spelled_by_the_values_the_command_assigns() {
        assert_eq!(spelled("D=~/.aws", "$D/c"), ["?/c", "~/.aws/c"]);
        assert_eq!(spelled("export D=a; D+=b", "$D"), ["?", "a", "b", "ab"]);
        assert_eq!(spelled("for d in x y; do :; done", "${d}"), ["?", "x", "y"]);
        assert_eq!(spelled("read d <<< x", "$d"), ["?", "x"]);
        assert_eq!(spelled("", "${D:-w}"), ["?", "w"]);
        assert_eq!(spelled("", "${D:+w}"), ["?", "", "w"]);
        assert_eq!(spelled("D=abx", "${D%x}"), ["?", "ab"]);
        assert_eq!(spelled("D=abx", "${D/b/}"), ["?", "ax"]);
        assert_eq!(spelled("D=abx", "${D:0:1}"), ["?"]);
    }

    #[test]
    fn values_given_when_the_command_runs_are_told() {
        let mut a = Assigned::default();
        a.collect(&lex(
            "read r; x=$(date); D=a; mapfile -t m < f; printf -v p %s q",
        ));
        let word = |t: &str| match lex(t).tokens.into_iter().next() {
            Some(Token::Word(w)) => w,
            _ => panic!("{t}"),
        };
        for t in ["$r", "$x", "${m}", "$p", "${D#a}"] {
            assert!(a.at_run_time_in(&word(t)), "{t}");
        }
        for t in ["$D", "${D:-x}", "$HOME"] {
            assert!(!a.at_run_time_in(&word(t)), "{t}");
        }
        assert_eq!(
            a.environment_in(&word("$GITHUB_TOKEN")).as_deref(),
            Some("GITHUB_TOKEN")
        );
        assert_eq!(a.environment_in(&word("$HOME/$D/$1/$LC_ALL")), None);
        for (name, secret) in [
            ("GITHUB_TOKEN", true),
            ("AWS_SECRET_ACCESS_KEY", true),
            ("OPENAI_API_KEY", true),
            ("DB_PASSWORD", true),
            ("GH_PAT", true),
            ("GITHUBTOKEN", true),
            ("api_tokens", true),
            ("GOOGLE_APPLICATION_CREDENTIALS", true),
            ("RUST_LOG", false),
            ("KEYBOARD_LAYOUT", false),
            ("SSH_AUTH_SOCK", false),
            ("PATH", false),
            ("PWD", false),
            ("MONKEY", false),
        ] {
            assert_eq!(names_a_secret(name), secret, "{name}");
        }
    }
}
