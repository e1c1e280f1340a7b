//! What a shell command does that value provenance cannot see in its words (`spec/hooks.md`
//! §17): it runs code it builds from data (`… | sh`, `eval "$(…)"`, `source <(…)`, a file
//! it writes and runs in the same command), it installs or fetches and runs packages by name,
//! and it writes files (redirections, `tee`, `sed -i`, `cp`/`mv`/`ln`/`install`, `dd of=`,
//! `curl -o`, archives and patches, interpreters' inline code).
//!
//! Built on the lexer and the simple commands of the protected-resources screen (§13.3), with
//! the same rule: what cannot be known counts against the call (a target with unknown parts
//! is a pattern over every path it may be; an archive or a patch may write anything).

use crate::front::protect::pattern::{candidate_with, Candidate, Pat};
use crate::front::protect::runners::runs;
use crate::front::protect::shell::joined;
use crate::front::protect::shell::{lex, Piece, Redirect, Word};
use crate::front::protect::simple::{basename, is_assignment, simple_commands, Simple};
use crate::front::protect::working_dirs::WorkingDirs;
use crate::front::protect::{MAX_NESTING, SHELLS};
use crate::front::secrets::is_interpreter;
use crate::gate::extract;
use crate::gate::Sinks;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod code;
mod packages;
mod writes;

use crate::front::protect::invocation::{invocation, Program};
pub(crate) use code::{awk_runs, carried_commands, script_text, sed_runs};
use code::{runs_commands, split_string};

/// Data words of at least this many characters are payload (`MIN_NORMAL_CHARS` of
/// `spec/hooks.md` §4.2: the shortest value matched in any layout).
pub const MIN_PAYLOAD_CHARS: usize = 8;

/// Agent command-line programs: their prompt argument (or standard input) is an instruction
/// that a new session of theirs takes as its user's own (`claude -p TEXT`, `codex exec
/// TEXT`), so starting one after untrusted input launders that input into a statement
/// (`spec/hooks.md` §17.1).
const AGENT_PROGRAMS: &[&str] = &[
    "claude",
    "claude-code",
    "kiro-cli",
    "kiro",
    "codex",
    "gemini",
    "aider",
    "opencode",
    "goose",
    "cursor-agent",
    "amp",
    "qwen",
    "crush",
    "copilot",
];

/// Text-processing programs whose first operand is a program in their own language, which can
/// run commands (`awk '{system($0)}'`, `sed e`) and write files (`print > "f"`, `w f`).
const AWKS: &[&str] = &["awk", "gawk", "mawk", "nawk"];

/// Options of awk that take a value (skipped when looking for the program text).
const AWK_VALUE_OPTIONS: &[&str] = &["-F", "-v", "-i", "-l", "--include", "--load", "--assign"];

/// Options of sed that take a value (`-l N`; `-i` takes its suffix attached).
const SED_VALUE_OPTIONS: &[&str] = &["-l", "--line-length"];

/// What one shell command does, as far as §17 goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// How it runs code it builds from data (`pipes data into sh`), if it does.
    pub runs_data: Option<String>,
    /// The values that say where such code comes from: the command's specific tokens
    /// (`spec/hooks.md` §4.5) and its literal data words of [`MIN_PAYLOAD_CHARS`] or more,
    /// with the arguments of each `echo`/`printf` joined.
    pub payload: Vec<String>,
    /// The packages it installs or fetches and runs, as written (`reqeusts-toolbelt2`,
    /// `lodash@4`, `git+https://…`).
    pub installs: Vec<String>,
    /// The files it writes (a pattern for a target with unknown parts).
    pub writes: Vec<Candidate>,
}

/// The facts of `text` run in `cwd` (`None`: unknown) with home directory `home`; `project`
/// is the agent's working directory, for the specific tokens of the payload.
pub fn analyse(
    text: &str,
    cwd: Option<&Path>,
    home: Option<&Path>,
    sinks: &Sinks,
    project: Option<&str>,
) -> Facts {
    let a = Analysis { home, sinks };
    let mut f = Facts::default();
    a.walk(text, cwd.map(Path::to_path_buf), 0, &mut f);
    if f.runs_data.is_some() {
        let mut tokens = Vec::new();
        extract::command_tokens(text, project, &[], &mut tokens);
        for t in tokens {
            push(&mut f.payload, t);
        }
    }
    f
}

struct Analysis<'a> {
    home: Option<&'a Path>,
    sinks: &'a Sinks,
}

impl Facts {
    fn runs(&mut self, how: String) {
        if self.runs_data.is_none() {
            self.runs_data = Some(how);
        }
    }

    /// Whether `c` is a path this command writes.
    fn wrote(&self, c: &Candidate) -> bool {
        matches!(c, Candidate::Path(_)) && self.writes.contains(c)
    }
}

impl Analysis<'_> {
    /// One command text, nested `depth` levels deep.
    fn walk(&self, text: &str, cwd: Option<PathBuf>, depth: usize, f: &mut Facts) {
        if depth > MAX_NESTING {
            f.runs("nests commands too deeply to analyse".to_string());
            f.writes.push(Candidate::Pattern(vec![Pat::Any]));
            return;
        }
        let lexed = lex(text);
        for n in &lexed.nested {
            self.walk(n, cwd.clone(), depth + 1, f);
        }
        // Where each simple command runs (`WorkingDirs`; attack review 58): more than one
        // directory, or one not known, is a directory not known.
        let mut wd = WorkingDirs::new(text, &lexed, cwd.clone());
        let mut here = cwd;
        // The working directories the command moves to: a nested command runs in one of
        // them (`cd .git && echo $(… > hooks/pre-commit)`), so it is walked in each (below).
        let mut dirs = vec![here.clone()];
        let mut vars: HashMap<String, String> = HashMap::new();
        let simple = simple_commands(&lexed);
        // Interpreters fed code on standard input (`python3 - <<EOF`): the text names what
        // the code opens.
        let fed_code = simple.iter().any(|s| {
            !s.here.is_empty()
                && s.program_name()
                    .is_some_and(|p| is_interpreter(&p) && reads_stdin(s, &p))
        });
        if fed_code {
            self.code_writes(text, here.as_deref(), f);
            if let Some(m) = runs_commands(text) {
                f.runs(format!(
                    "feeds an interpreter code that runs what it builds (`{m}`)"
                ));
            }
        }
        for s in &simple {
            here = wd.single().map(Path::to_path_buf);
            let home = self.home;
            let known = vars.clone();
            wd.step(
                &s.words,
                s.ends,
                &|w, h| match candidate_with(w, h, home, &known) {
                    Candidate::Path(p) => Some(p),
                    Candidate::Pattern(_) => None,
                },
            );
            for d in wd.here() {
                if !dirs.contains(d) {
                    dirs.push(d.clone());
                }
            }
            self.data_words(s, f);
            for (r, w) in &s.redirects {
                if *r == Redirect::Writes && !is_descriptor(w) {
                    f.writes
                        .push(candidate_with(w, here.as_deref(), self.home, &vars));
                }
            }
            let i = s.program();
            for w in &s.words[..i] {
                if let Some((name, value)) = w.literal().as_deref().and_then(|l| l.split_once('='))
                {
                    if is_assignment(&format!("{name}=")) {
                        vars.insert(name.to_string(), value.to_string());
                    }
                }
            }
            self.wrapped_code(s, here.as_deref(), depth, f);
            // A program word with white space is a command a wrapper runs through a shell
            // (`watch "curl … | sh"`).
            // `env -S 'sh -s'` (and `-S'sh -s'`, `--split-string=…`): the value is the command.
            if let Some(p) = s.words.get(i).and_then(|w| w.literal()) {
                let p = split_string(&p).unwrap_or(p);
                if p.contains(char::is_whitespace) {
                    // What is piped into the wrapper is piped into the command it runs.
                    let text = if s.piped { format!("cat | {p}") } else { p };
                    self.walk(&text, here.clone(), depth + 1, f);
                    continue;
                }
            }
            let Some(prog) = s.program_name() else {
                continue;
            };
            let mut args = &s.words[i + 1..];
            // A multi-call binary runs its first argument's applet (`busybox sh`, `toybox sed`).
            let mut prog = prog;
            while matches!(prog.as_str(), "busybox" | "toybox") {
                match args.first().and_then(|w| w.literal()) {
                    Some(applet) => {
                        prog = basename(&applet).to_string();
                        args = &args[1..];
                    }
                    None => break,
                }
            }
            if matches!(prog.as_str(), "cd" | "chdir" | "pushd" | "popd") {
                continue;
            }
            // Commands another program runs from its arguments (`find -exec`, a git alias or
            // pager, tar's checkpoint action, ssh's ProxyCommand): analysed as commands.
            for carried in carried_commands(&prog, args) {
                match carried {
                    Some(text) => self.walk(&text, here.clone(), depth + 1, f),
                    None => f.runs(format!(
                        "`{prog}` runs a command that is only known when it runs"
                    )),
                }
            }
            self.runs_data(s, &prog, args, here.as_deref(), &vars, depth, f);
            self.writes(&prog, args, here.as_deref(), &vars, f);
            self.installs(&prog, args, here.as_deref(), f);
            // A runner before the program fetches what it names too (`npx -y PKG`, `uvx
            // PKG`: its program is the package's).
            for k in 0..s.program() {
                if let (Some(_), Some(r)) = (runs(&s.words, k), s.words[k].literal()) {
                    self.installs(basename(&r), &s.words[k + 1..], here.as_deref(), f);
                }
            }
        }
        for dir in dirs.into_iter().skip(1) {
            for n in &lexed.nested {
                self.walk(n, dir.clone(), depth + 1, f);
            }
        }
    }

    /// Code that a wrapper runs (`su -c CODE`, `flock f -c CODE`, `script -c CODE`), and the
    /// code that `alias NAME=CODE` and `trap CODE SIGNAL` define: analysed as commands.
    fn wrapped_code(&self, s: &Simple, here: Option<&Path>, depth: usize, f: &mut Facts) {
        let i = s.program();
        let mut code: Vec<&Word> = Vec::new();
        for (k, w) in s.words[..i].iter().enumerate() {
            let wrapper = w.literal().map(|l| basename(&l).to_string());
            if !matches!(
                wrapper.as_deref(),
                Some("su" | "runuser" | "script" | "flock")
            ) {
                continue;
            }
            for (j, o) in s.words[k + 1..i].iter().enumerate() {
                if o.literal().as_deref() == Some("-c") {
                    code.extend(s.words.get(k + 2 + j));
                }
            }
        }
        match s.program_name().as_deref() {
            Some("alias") => code.extend(s.words[i + 1..].iter().copied()),
            Some("trap") => code.extend(s.words.get(i + 1)),
            _ => {}
        }
        for w in code {
            if w.pieces
                .iter()
                .any(|p| matches!(p, Piece::Unknown | Piece::Param(_)))
            {
                f.runs("runs code that is only known when it runs (a wrapper's -c)".into());
                continue;
            }
            let text = w.squeezed();
            let text = text.split_once('=').map_or(text.as_str(), |(_, v)| v);
            self.walk(text, here.map(Path::to_path_buf), depth + 1, f);
        }
    }

    /// Whether simple command `s` runs code it builds from data.
    #[allow(clippy::too_many_arguments)]
    fn runs_data(
        &self,
        s: &Simple,
        prog: &str,
        args: &[&Word],
        here: Option<&Path>,
        vars: &HashMap<String, String>,
        depth: usize,
        f: &mut Facts,
    ) {
        let unknown = |w: &Word| w.pieces.iter().any(|p| is_unknown(p, vars));
        if prog == "eval" {
            if args.iter().any(|w| unknown(w)) {
                f.runs("evaluates text that is only known when it runs (`eval`)".into());
            } else {
                let text: Vec<String> = args.iter().map(|w| w.squeezed()).collect();
                self.walk(&text.join(" "), here.map(Path::to_path_buf), depth + 1, f);
            }
            return;
        }
        let subcommand = args.first().and_then(|w| w.literal());
        let agent_subcommand = matches!(
            (prog, subcommand.as_deref()),
            ("cursor", Some("agent")) | ("gh", Some("copilot")) | ("q", Some("chat"))
        );
        if AGENT_PROGRAMS.contains(&prog) || agent_subcommand {
            f.runs(format!(
                "starts another agent (`{prog}`), whose session would take this command's text \
                 as its user's own instruction"
            ));
            return;
        }
        if AWKS.contains(&prog) || prog == "sed" {
            match script_text(prog, args) {
                Some(Some(code)) => {
                    let runs = if prog == "sed" {
                        sed_runs(&code)
                    } else {
                        awk_runs(&code)
                    };
                    if let Some(m) = runs {
                        f.runs(format!("runs `{prog}` code that runs commands (`{m}`)"));
                    }
                }
                Some(None) => f.runs(format!(
                    "runs `{prog}` code that is only known when it runs"
                )),
                None => {}
            }
            return;
        }
        // `at` and `batch` run their standard input later, as a shell does now.
        let shell = SHELLS.contains(&prog) || prog == "at" || prog == "batch";
        let sources = prog == "source" || prog == ".";
        if !(shell || sources || is_interpreter(prog)) {
            // A program this command wrote (`curl -o x && chmod +x x && ./x`).
            if let Some(w) = s.words.get(s.program()) {
                let p = candidate_with(w, here, self.home, vars);
                if w.squeezed().contains('/') && f.wrote(&p) {
                    f.runs(format!(
                        "runs {}, which it writes in the same command",
                        w.squeezed()
                    ));
                }
            }
            return;
        }
        if s.wrapped_by("xargs") || s.wrapped_by("parallel") {
            f.runs(format!("runs its input as code through xargs (`{prog}`)"));
            return;
        }
        let lits: Vec<Option<String>> = args.iter().map(|w| w.literal()).collect();
        // Where its program comes from, its options read as the program reads them (§13.3,
        // "Options").
        let (program, code_at) = if matches!(prog, "at" | "batch") {
            // `at TIME` reads the job from standard input unless given a file (`-f FILE`).
            match lits.iter().position(|l| l.as_deref() == Some("-f")) {
                Some(k) if k + 1 < args.len() => (Program::Script(k + 1), None),
                _ => (Program::Stdin, None),
            }
        } else if sources {
            match args.is_empty() {
                true => (Program::NoneGiven, None),
                false => (Program::Script(0), None),
            }
        } else {
            match invocation(prog, &lits) {
                Some(inv) => (inv.program, inv.code_at),
                None => (Program::Unknown, None),
            }
        };
        match program {
            Program::Inline(attached) => {
                let code = match (code_at.and_then(|k| args.get(k)), attached) {
                    (Some(w), _) if unknown(w) => None,
                    (Some(w), _) => Some(w.squeezed()),
                    (None, code) => code,
                };
                match code {
                    None => f.runs(format!(
                        "runs code that is only known when it runs (`{prog} {}`)",
                        joined(args.iter().copied())
                    )),
                    Some(code) if shell => {
                        self.walk(&code, here.map(Path::to_path_buf), depth + 1, f)
                    }
                    Some(code) => {
                        self.code_writes(&code, here, f);
                        if let Some(m) = runs_commands(&code) {
                            f.runs(format!("runs inline code that runs what it builds (`{m}`)"));
                        }
                    }
                }
            }
            Program::Module(_) | Program::NoneGiven => {} // `python3 -m json.tool`
            Program::Script(k)
                if lits
                    .get(k)
                    .is_some_and(|l| l.is_some() && is_stdin(l.as_deref())) =>
            {
                self.stdin_program(s, prog, &unknown, f)
            }
            Program::Stdin => self.stdin_program(s, prog, &unknown, f),
            Program::Script(k) => self.script_program(prog, args[k], here, vars, &unknown, f),
            Program::Unknown => {
                // An option word only known when it runs (`python3 $F`): the first such word
                // is judged as the script.
                if let Some(w) = args.iter().find(|w| w.literal().is_none()) {
                    self.script_program(prog, w, here, vars, &unknown, f);
                }
            }
        }
    }

    /// Judges a shell or interpreter `prog` that reads its program from standard input: a pipe
    /// feeds it data, a here-document text only known when it runs.
    fn stdin_program(
        &self,
        s: &Simple,
        prog: &str,
        unknown: &dyn Fn(&Word) -> bool,
        f: &mut Facts,
    ) {
        if s.piped {
            f.runs(format!("pipes data into `{prog}`"));
        } else if s.here.iter().any(|w| unknown(w)) {
            f.runs(format!("feeds `{prog}` code only known when it runs"));
        }
    }

    /// Judges the script `w` that `prog` runs: a name only known when it runs, or a file the
    /// same command writes.
    fn script_program(
        &self,
        prog: &str,
        w: &Word,
        here: Option<&Path>,
        vars: &HashMap<String, String>,
        unknown: &dyn Fn(&Word) -> bool,
        f: &mut Facts,
    ) {
        if unknown(w) {
            f.runs(format!(
                "runs code from a command's output or an unknown file (`{prog} {}`)",
                w.squeezed()
            ));
        } else if f.wrote(&candidate_with(w, here, self.home, vars)) {
            f.runs(format!(
                "runs {}, which it writes in the same command",
                w.squeezed()
            ));
        }
    }

    /// Literal data words of simple command `s` (payload candidates), and for `echo` and
    /// `printf` their data arguments joined.
    fn data_words(&self, s: &Simple, f: &mut Facts) {
        for w in s.words.iter().chain(s.here.iter()) {
            if let Some(l) = w.literal() {
                if l.chars().count() >= MIN_PAYLOAD_CHARS && !l.starts_with('-') {
                    push(&mut f.payload, l);
                }
            }
        }
        let Some(prog) = s.program_name() else {
            return;
        };
        let args = &s.words[s.program() + 1..];
        let data: Vec<String> = match prog.as_str() {
            "echo" => args
                .iter()
                .filter_map(|w| w.literal())
                .filter(|l| !matches!(l.as_str(), "-n" | "-e" | "-E" | "-ne" | "-en"))
                .collect(),
            "printf" => args.iter().skip(1).filter_map(|w| w.literal()).collect(),
            _ => return,
        };
        if data.len() > 1 {
            push(&mut f.payload, data.join(" "));
            push(&mut f.payload, data.concat());
        }
    }
}

/// Whether `p` is a piece whose value this analysis cannot know: a command substitution or
/// other expansion, or a variable other than `HOME`/`PWD` not assigned in the command.
fn is_unknown(p: &Piece, vars: &HashMap<String, String>) -> bool {
    match p {
        Piece::Unknown | Piece::Param(_) => true,
        Piece::Var(v) => v != "HOME" && v != "PWD" && !vars.contains_key(v),
        _ => false,
    }
}

/// Whether an interpreter's script argument means standard input.
fn is_stdin(script: Option<&str>) -> bool {
    matches!(script, None | Some("-" | "/dev/stdin" | "/proc/self/fd/0"))
}

/// Whether interpreter `prog`, run by simple command `s`, reads its program from standard
/// input (no script, `-`, `/dev/stdin`; its options read as it reads them, §13.3,
/// "Options").
fn reads_stdin(s: &Simple, prog: &str) -> bool {
    let lits: Vec<Option<String>> = s.words[s.program() + 1..]
        .iter()
        .map(|w| w.literal())
        .collect();
    match invocation(prog, &lits).map(|inv| inv.program) {
        Some(Program::Stdin) | None => true,
        Some(Program::Script(k)) => is_stdin(lits.get(k).cloned().flatten().as_deref()),
        Some(_) => false,
    }
}

/// Whether a redirection target is a file descriptor (`>&2`), `-` or a device every script
/// writes to.
fn is_descriptor(w: &Word) -> bool {
    w.literal().is_some_and(|l| {
        l == "-"
            || l.chars().all(|c| c.is_ascii_digit())
            || matches!(
                l.as_str(),
                "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
            )
    })
}

/// A file name as a word: its characters literal, a leading `~/` the home directory.
pub fn path_word(s: &str) -> Word {
    match s.strip_prefix("~/") {
        Some(rest) => Word {
            pieces: [Piece::Home, Piece::Lit('/')]
                .into_iter()
                .chain(rest.chars().map(Piece::Lit))
                .collect(),
        },
        None => literal_word(s),
    }
}

/// A word of literal characters.
fn literal_word(s: &str) -> Word {
    Word {
        pieces: s.chars().map(Piece::Lit).collect(),
    }
}

/// The file name `curl -O` or `wget` gives a download: the URL path's last component, or
/// `index.html`.
fn remote_name(url: &str) -> String {
    let path = url
        .split_once("://")
        .map_or(url, |(_, r)| r)
        .split(['?', '#'])
        .next()
        .unwrap_or("");
    match path.split_once('/') {
        Some((_, p)) if !p.is_empty() && !p.ends_with('/') => basename(p).to_string(),
        _ => "index.html".to_string(),
    }
}

fn push(out: &mut Vec<String>, s: String) {
    if !s.is_empty() && !out.contains(&s) {
        out.push(s);
    }
}

#[cfg(test)]
mod tests;
