//! The words of a shell command as the guard needs them (`spec/hooks.md` §13.3): where each
//! word's characters come from (literal, glob, or an expansion whose value this process cannot
//! know), the operators between them, and the text of every command nested in them (`$(…)`,
//! backticks, `<(…)`, `${…}`), which is analysed as a command of its own.
//!
//! This is a lexer, not a parser: it never rejects input. An unterminated quote or
//! substitution runs to the end of the text; what cannot be known becomes
//! [`Piece::Unknown`], which the path checks treat as "any characters" (fail closed). It
//! follows POSIX *Shell Command Language* §2.3 (token recognition) and §2.2 (quoting), and
//! bash's `$'…'` (ANSI-C quoting), and performs brace and tilde expansion on each word as bash
//! does (`expand`: `a{b,c}` is two words). Why not a parser crate: `spec/dependencies.md`
//! (brush-parser).

mod expand;
mod parts;
pub(crate) use expand::tilde;
pub use expand::MAX_WORDS as MAX_BRACE_WORDS;
use expand::{Budget, Item};
use parts::{
    backticked, balanced, closing, delimiter, dollar, double_quoted, here_body,
    zsh_qualifiers_run_code, ZSH_CODE,
};

/// Whether `bare` (a tool name without its `mcp__<server>__` prefix) is a shell tool whose
/// `command` or `cmd` argument is a command: Claude Code's `Bash`, Codex's shell tools.
pub fn is_shell_tool(bare: &str) -> bool {
    matches!(
        bare,
        "Bash" | "shell" | "exec_command" | "local_shell" | "unified_exec" | "container.exec"
    )
}

/// The command text of a shell tool's `command`/`cmd` value: the string, or an argv array
/// joined with shell quoting (so that its words lex back as given); `None` for anything else.
pub fn command_text(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => Some(
            a.iter()
                .map(|v| {
                    let s = v.as_str().unwrap_or("");
                    shlex::try_quote(s).map_or_else(|_| s.to_string(), |q| q.into_owned())
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// One character source inside a word.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Piece {
    /// A character the shell passes as it is (quoted or not).
    Lit(char),
    /// An unquoted `*`: any characters but `/`.
    Star,
    /// An unquoted `?` or bracket expression `[…]`: one character but `/`.
    One,
    /// An unquoted `~` at the start of a word, alone or with a user's name (`~root`: any
    /// user's is read as the home directory, `expand::tilde`; the word is given a second
    /// time as zsh's `$root/…`).
    Home,
    /// `$NAME` or `${NAME}` (a simple parameter), or a special parameter (`$@`, `$1`, `$?`:
    /// its one character).
    Var(String),
    /// `${NAME<operator>…}` (`${D:-x}`, `${D%/*}`): its text between the braces. Any
    /// characters, as [`Piece::Unknown`], to every reading but the secrecy rule's, which knows
    /// the values the command assigns (`spec/hooks.md` §16.2).
    Param(String),
    /// An expansion whose value is unknown: command substitution, arithmetic, `${…}` with
    /// operators, process substitution, an entry of the directory stack (`~1`), a brace
    /// expansion over the bound ([`Lexed::unexpanded`]).
    Unknown,
}

/// A shell word: its pieces and the text of the commands nested in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    /// The characters, in order.
    pub pieces: Vec<Piece>,
}

/// The words' text as the analyses show it in a reason: each [`Word::squeezed`], joined by
/// spaces.
pub(crate) fn joined<'a>(words: impl IntoIterator<Item = &'a Word>) -> String {
    words
        .into_iter()
        .map(Word::squeezed)
        .collect::<Vec<_>>()
        .join(" ")
}

impl Word {
    /// The word's literal characters alone (expansions dropped): `agent.led${X}ger` gives
    /// `agent.ledger`.
    pub fn squeezed(&self) -> String {
        self.pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Lit(c) => Some(*c),
                _ => None,
            })
            .collect()
    }

    /// The word as plain text when every piece is a literal character.
    pub fn literal(&self) -> Option<String> {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Lit(c) => Some(*c),
                _ => None,
            })
            .collect()
    }

    /// Whether no piece is a literal character (`$F`, `$(cat list)`).
    pub fn all_unknown(&self) -> bool {
        !self.pieces.iter().any(|p| matches!(p, Piece::Lit(_)))
    }
}

/// A token of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Token {
    /// A word.
    Word(Word),
    /// A control operator other than a pipe (`;`, `&`, `&&`, `||`, `(`, `)`, newline).
    Control,
    /// A pipe (`|`, `|&`): the next command reads what the previous one writes.
    Pipe,
    /// A redirection operator (`<`, `>`, `>>`, `>|`, `<>`, `<&`, `>&`, `&>`, `&>>`); the next
    /// word is a file.
    Redirect(Redirect),
    /// A here-document (`<<`, `<<-`) or here-string (`<<<`) operator; the next word is not a
    /// file.
    HereDoc,
}

/// Which operator a [`Token::Control`] or [`Token::Pipe`] is: what the shell does with the
/// command before it, which decides whether a `cd` there moves the commands after it
/// (`super::working_dirs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operator {
    /// `&&`: the next command runs when this one succeeded.
    And,
    /// `||`: the next command runs when this one failed.
    Or,
    /// `;`, a newline: the next command runs whatever this one did.
    Sequence,
    /// `&`: this one runs in a subshell of its own, in the background.
    Background,
    /// `(`: a subshell (or a function's parameters, an array, a `case` pattern) starts.
    Open,
    /// `)`: one ends.
    Close,
    /// `|`, `|&`: both run in subshells (zsh runs the last in this shell).
    Pipe,
}

/// What a redirection does with its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Redirect {
    /// `<`, `<&`: the command reads the file.
    Reads,
    /// `>`, `>>`, `>|`, `<>`, `>&`, `&>`, `&>>`: the command writes the file (or, for `>&N`,
    /// duplicates a descriptor).
    Writes,
}

/// A lexed command: its tokens and the nested commands' texts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lexed {
    /// The tokens, in order.
    pub tokens: Vec<Token>,
    /// The text of each nested command, for separate analysis.
    pub nested: Vec<String>,
    /// Whether a word's brace expansion was over the bound (more than [`MAX_BRACE_WORDS`]
    /// words, or more than the text's budget): that word is given once, its braced part as
    /// any characters ([`Piece::Unknown`]). A rule that tells a file named from a pattern
    /// reads it as naming any it may match (fail closed).
    pub unexpanded: bool,
    /// Which operator each [`Token::Control`] and [`Token::Pipe`] is, in order.
    pub(crate) operators: Vec<Operator>,
}

/// Lexes `text` (never fails; see the module docs).
pub fn lex(text: &str) -> Lexed {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Lexed::default();
    let mut word = Word::default();
    // Which of `word`'s pieces are unquoted characters (missing ones are not): only those are
    // brace expansion's and tilde expansion's.
    let mut bare: Vec<bool> = Vec::new();
    let mut budget = Budget::default();
    let mut in_word = false;
    let mut i = 0;
    // The delimiters of the here-documents whose bodies start after the next newline, and
    // whether their lines lose leading tabs (`<<-`).
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut flush = |out: &mut Lexed, word: &mut Word, bare: &mut Vec<bool>, in_word: &mut bool| {
        if std::mem::take(in_word) {
            let items = std::mem::take(&mut word.pieces);
            expanded(out, items, std::mem::take(bare), &mut budget);
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            // Blanks are space and tab only: a carriage return is a character of its word
            // in bash, so `echo a\r#; cmd` runs `cmd` (no comment starts there).
            ' ' | '\t' => {
                flush(&mut out, &mut word, &mut bare, &mut in_word);
                i += 1;
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\n' | ';' | '(' | ')' => {
                if c == '(' && in_word {
                    let (inner, end) = balanced(&chars, i + 1, '(', ')');
                    // zsh's alternation in a word (`.e(nv|x)`, on by default; bash refuses
                    // it): its alternatives are words of their own, as a brace expansion's
                    // (attack review 55). An array's `a=(…)` is not one.
                    let alternatives = expand::alternation(&inner, false).filter(|_| {
                        inner.contains('|') && word.pieces.last() != Some(&Piece::Lit('='))
                    });
                    if let Some(alts) = alternatives {
                        push_bare(&mut word, &mut bare, alts);
                        i = end;
                        continue;
                    }
                    // zsh reads a group attached to a word as glob qualifiers, which may run
                    // code (attack review 37).
                    if zsh_qualifiers_run_code(&inner) {
                        out.nested.push(ZSH_CODE.into());
                    }
                }
                flush(&mut out, &mut word, &mut bare, &mut in_word);
                out.tokens.push(Token::Control);
                out.operators.push(match c {
                    '(' => Operator::Open,
                    ')' => Operator::Close,
                    _ => Operator::Sequence,
                });
                i += 1;
                // Here-document bodies start on the line after their operators (POSIX
                // §2.7.4): their text is not part of the command, and is analysed as a
                // command of its own (a shell may be what reads it).
                if c == '\n' {
                    for (delim, strip) in std::mem::take(&mut heredocs) {
                        let (body, end) = here_body(&chars, i, &delim, strip);
                        out.nested.push(body);
                        i = end;
                    }
                }
            }
            '&' | '|' => {
                flush(&mut out, &mut word, &mut bare, &mut in_word);
                if c == '&' && next == Some('>') {
                    i += if chars.get(i + 2) == Some(&'>') { 3 } else { 2 };
                    out.tokens.push(Token::Redirect(Redirect::Writes));
                } else if c == '|' && next != Some('|') {
                    i += if next == Some('&') { 2 } else { 1 };
                    out.tokens.push(Token::Pipe);
                    out.operators.push(Operator::Pipe);
                } else {
                    out.operators.push(match (c, next == Some(c)) {
                        ('&', true) => Operator::And,
                        ('&', false) => Operator::Background,
                        _ => Operator::Or,
                    });
                    i += if next == Some(c) { 2 } else { 1 };
                    out.tokens.push(Token::Control);
                }
            }
            '<' | '>' if next == Some('(') => {
                // Process substitution: a nested command whose value is a file name.
                let (inner, end) = balanced(&chars, i + 2, '(', ')');
                out.nested.push(inner);
                word.pieces.push(Piece::Unknown);
                in_word = true;
                i = end;
            }
            '<' | '>' => {
                // A file-descriptor number just before (`2>`) belongs to the operator.
                if in_word
                    && word
                        .literal()
                        .is_some_and(|w| w.chars().all(|d| d.is_ascii_digit()))
                {
                    word = Word::default();
                    bare.clear();
                    in_word = false;
                }
                flush(&mut out, &mut word, &mut bare, &mut in_word);
                if c == '<' && next == Some('<') {
                    i += 2;
                    match chars.get(i) {
                        Some('<') => i += 1,
                        Some('-') => {
                            i += 1;
                            heredocs.push((delimiter(&chars, i), true));
                        }
                        _ => heredocs.push((delimiter(&chars, i), false)),
                    }
                    out.tokens.push(Token::HereDoc);
                } else {
                    i += 1;
                    let writes = c == '>' || chars.get(i) == Some(&'>');
                    if matches!(chars.get(i), Some('>' | '|' | '&'))
                        || (c == '<' && chars.get(i) == Some(&'>'))
                    {
                        i += 1;
                    }
                    out.tokens.push(Token::Redirect(if writes {
                        Redirect::Writes
                    } else {
                        Redirect::Reads
                    }));
                }
            }
            '\\' => {
                in_word = true;
                match next {
                    Some('\n') => {}
                    Some(n) => word.pieces.push(Piece::Lit(n)),
                    None => {}
                }
                i += 2;
            }
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.pieces.push(Piece::Lit(chars[i]));
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                in_word = true;
                i = double_quoted(&chars, i + 1, &mut word, &mut out.nested);
            }
            '$' => {
                in_word = true;
                i = dollar(&chars, i, &mut word, &mut out.nested, false);
            }
            '`' => {
                in_word = true;
                let (inner, end) = backticked(&chars, i + 1);
                out.nested.push(inner);
                word.pieces.push(Piece::Unknown);
                i = end;
            }
            // An extended pattern (bash's `extglob`: `?(…)`, `*(…)`, `+(…)`, `@(…)`, `!(…)`):
            // characters of its word, not an operator; any characters, its expansions analysed.
            // (Without `extglob` bash refuses the command.) `!(` starting a command is `!`
            // before a subshell.
            '?' | '*' | '+' | '@' | '!'
                if next == Some('(')
                    && (c != '!'
                        || in_word
                        || matches!(
                            out.tokens.last(),
                            Some(Token::Word(_) | Token::Redirect(_))
                        )) =>
            {
                let (inner, end) = balanced(&chars, i + 2, '(', ')');
                if inner.contains(['$', '`']) {
                    out.nested.push(inner.clone());
                }
                if zsh_qualifiers_run_code(&inner) {
                    out.nested.push(ZSH_CODE.into());
                }
                in_word = true;
                // `@(a|b)` is one of its alternatives, `?(a|b)` one or none: words of their
                // own, as a brace expansion's (attack review 55); the others any characters.
                match expand::alternation(&inner, c == '?').filter(|_| matches!(c, '@' | '?')) {
                    Some(chars) => push_bare(&mut word, &mut bare, chars),
                    None => word.pieces.push(Piece::Unknown),
                }
                i = end;
            }
            // zsh's `=name` at the start of a word is the path of the command `name` (option
            // EQUALS, on by default): `=curl …` runs curl, which bash refuses (attack review
            // 37). Its directory is unknown here; the name stays.
            '=' if !in_word
                && next.is_some_and(|n| n.is_alphanumeric() || n == '_' || n == '.') =>
            {
                in_word = true;
                word.pieces.push(Piece::Unknown);
                word.pieces.push(Piece::Lit('/'));
                i += 1;
            }
            '*' => {
                in_word = true;
                word.pieces.push(Piece::Star);
                i += 1;
            }
            '?' => {
                in_word = true;
                word.pieces.push(Piece::One);
                i += 1;
            }
            '[' => {
                // A bracket expression closes within its word (bash, "Pattern Matching"): a
                // `]` after a blank or an operator closes nothing, so `echo [; cmd; echo ]`
                // is three commands, not one word.
                in_word = true;
                // A `]` first in the expression (after `!` or `^`) is one of its members.
                let mut from = i + 1;
                if matches!(chars.get(from), Some('!' | '^')) {
                    from += 1;
                }
                if chars.get(from) == Some(&']') {
                    from += 1;
                }
                match closing(&chars, from, ']') {
                    Some(end) => {
                        let inner: String = chars[i + 1..end].iter().collect();
                        if inner.contains(['\'', '"', '\\', '$', '`']) {
                            // Quoted or expanded members: any character; what they expand
                            // is analysed as a command.
                            word.pieces.push(Piece::Unknown);
                            out.nested.push(inner);
                        } else {
                            word.pieces.push(Piece::One);
                        }
                        i = end + 1;
                    }
                    _ => {
                        word.pieces.push(Piece::Lit('['));
                        i += 1;
                    }
                }
            }
            // An unquoted character: brace expansion's (`{`, `,`, `}`, `..`) and tilde
            // expansion's (`~`) are read when the word ends (`expanded`).
            _ => {
                in_word = true;
                bare.resize(word.pieces.len(), false);
                bare.push(true);
                word.pieces.push(Piece::Lit(c));
                i += 1;
            }
        }
    }
    flush(&mut out, &mut word, &mut bare, &mut in_word);
    out
}

/// Adds `chars` to `word` as unquoted characters.
fn push_bare(word: &mut Word, bare: &mut Vec<bool>, chars: Vec<char>) {
    bare.resize(word.pieces.len(), false);
    for c in chars {
        bare.push(true);
        word.pieces.push(Piece::Lit(c));
    }
}

/// Adds the words a word's `pieces` gives after brace and tilde expansion (`expand`) to `out`;
/// `bare` tells which pieces are unquoted characters.
fn expanded(out: &mut Lexed, pieces: Vec<Piece>, mut bare: Vec<bool>, budget: &mut Budget) {
    bare.resize(pieces.len(), false);
    let opens = |k: usize| match (&pieces[k], bare[k]) {
        (Piece::Lit('{'), true) => true,
        (Piece::Lit('~'), true) => k == 0,
        _ => false,
    };
    if !(0..pieces.len()).any(opens) {
        out.tokens.push(Token::Word(Word { pieces }));
        return;
    }
    let items: Vec<Item> = pieces
        .into_iter()
        .zip(bare)
        .map(|(piece, bare)| Item { piece, bare })
        .collect();
    match expand::words(&items, budget) {
        Some(words) => out
            .tokens
            .extend(words.into_iter().map(|pieces| Token::Word(Word { pieces }))),
        None => {
            out.unexpanded = true;
            out.tokens.push(Token::Word(Word {
                pieces: expand::cover(&items),
            }));
        }
    }
}

#[cfg(test)]
mod tests;
