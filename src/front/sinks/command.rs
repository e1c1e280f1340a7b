//! What a shell command does that value provenance cannot see in its words (`spec/hooks.md`
//! §17): it runs code it builds from data (`… | sh`, `eval "$(…)"`, `source <(…)`, a file
//! it writes and runs in the same command), it installs or fetches and runs packages by name,
//! and it writes files (redirections, `tee`, `sed -i`, `cp`/`mv`/`ln`/`install`, `dd of=`,
//! `curl -o`, archives and patches, interpreters' inline code).
//!
//! Built on the lexer and the simple commands of the protected-resources screen (§13.3), with
//! the same rule: what cannot be known counts against the call (a target with unknown parts
//! is a pattern over every path it may be; an archive or a patch may write anything).

use super::super::extract;
use crate::front::protect::pattern::{candidate_with, Candidate, Pat};
use crate::front::protect::shell::{lex, Piece, Redirect, Word};
use crate::front::protect::simple::{basename, is_assignment, simple_commands, Simple};
use crate::front::protect::{MAX_NESTING, SHELLS};
use crate::front::secrets::is_interpreter;
use crate::gate::Sinks;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Data words of at least this many characters are payload (`MIN_NORMAL_CHARS` of
/// `spec/hooks.md` §4.2: the shortest value matched in any layout).
pub const MIN_PAYLOAD_CHARS: usize = 8;

/// Options of an interpreter after which the next word is its code (a shell's is any cluster
/// of short options with a `c`).
const CODE_OPTIONS: &[&str] = &[
    "-c",
    "-e",
    "-E",
    "-r",
    "--eval",
    "--print",
    "--command",
    "-Command",
    "-command",
    "eval",
];

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

/// Options after which the next word names a local file or directory, or a version or
/// feature, never a package (`pip install -r requirements.txt`, `cargo add x -F derive`).
const NON_PACKAGE_OPTIONS: &[&str] = &[
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "--path",
    "--manifest-path",
    "-C",
    "--cwd",
    "--prefix",
    "--target",
    "-t",
    "--root",
    "--dir",
    "--directory",
    "-F",
    "--features",
    "--version",
    "--vers",
    "--rename",
    "-p",
    "--package",
];

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
        let mut here = cwd;
        let mut vars: HashMap<String, String> = HashMap::new();
        let simple = simple_commands(&lexed);
        // Interpreters fed code on standard input (`python3 - <<EOF`): the text names what
        // the code opens.
        let fed_code = simple.iter().any(|s| {
            !s.here.is_empty()
                && s.program_name()
                    .is_some_and(|p| is_interpreter(&p) && !has_code_option(s))
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
            if prog == "cd" || prog == "pushd" {
                here = cd(args, here.as_deref(), self.home);
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
            if w.pieces.iter().any(|p| matches!(p, Piece::Unknown)) {
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
        // Code given as an argument: `sh -c CODE`, `python3 -c CODE`, `node -e CODE`.
        let node = matches!(prog, "node" | "deno" | "bun");
        let code_at = lits.iter().position(|l| {
            l.as_deref().is_some_and(|l| match shell {
                true => l.starts_with('-') && !l.starts_with("--") && l.contains('c'),
                // A cluster of short options ending in a code option: `perl -ne`, `perl
                // -nle`, `ruby -pe`, `python3 -Ic`, `node -pe`.
                false => CODE_OPTIONS.contains(&l) || code_cluster(l, node),
            })
        });
        // Code attached to its option: `python3 -c"…"`, `perl -e'…'`, `node --eval=…`.
        if code_at.is_none() {
            if let Some(code) = lits.iter().flatten().find_map(|l| attached_code(l, node)) {
                self.code_writes(&code, here, f);
                if let Some(m) = runs_commands(&code) {
                    f.runs(format!("runs inline code that runs what it builds (`{m}`)"));
                }
                return;
            }
        }
        if let Some(at) = code_at {
            match args.get(at + 1) {
                Some(code) if unknown(code) => f.runs(format!(
                    "runs code that is only known when it runs (`{prog} {}`)",
                    lits[at].as_deref().unwrap_or("-c")
                )),
                Some(code) if shell => {
                    self.walk(&code.squeezed(), here.map(Path::to_path_buf), depth + 1, f)
                }
                Some(code) => {
                    let code = code.squeezed();
                    self.code_writes(&code, here, f);
                    if let Some(m) = runs_commands(&code) {
                        f.runs(format!("runs inline code that runs what it builds (`{m}`)"));
                    }
                }
                None => {}
            }
            return;
        }
        if lits.iter().any(|l| l.as_deref() == Some("-m")) {
            return; // a module: `python3 -m json.tool`
        }
        let script = args
            .iter()
            .zip(&lits)
            .find(|(_, l)| l.as_deref().is_none_or(|l| !l.starts_with('-') || l == "-"));
        let stdin_flag = shell && lits.iter().any(|l| l.as_deref() == Some("-s"));
        // `at TIME` reads the job from standard input unless given a file (`-f`).
        let scheduler =
            matches!(prog, "at" | "batch") && !lits.iter().any(|l| l.as_deref() == Some("-f"));
        let from_stdin = stdin_flag
            || scheduler
            || match script {
                None => true,
                Some((_, Some(l))) => is_stdin(Some(l)),
                Some((_, None)) => false,
            };
        if from_stdin && s.piped {
            f.runs(format!("pipes data into `{prog}`"));
        } else if from_stdin && s.here.iter().any(|w| unknown(w)) {
            f.runs(format!("feeds `{prog}` code only known when it runs"));
        } else if let Some((w, _)) = script.filter(|_| !from_stdin) {
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
    }

    /// The files simple command `prog args…` writes besides its redirections.
    fn writes(
        &self,
        prog: &str,
        args: &[&Word],
        here: Option<&Path>,
        vars: &HashMap<String, String>,
        f: &mut Facts,
    ) {
        let c = |w: &Word| candidate_with(w, here, self.home, vars);
        let lit = |w: &&Word| w.literal().unwrap_or_default();
        let plain: Vec<&Word> = args
            .iter()
            .copied()
            .filter(|w| !lit(w).starts_with('-'))
            .collect();
        let under = |dir: Option<&Word>| {
            let mut p = match dir {
                Some(d) => match c(d) {
                    Candidate::Path(p) => p.to_string_lossy().chars().map(Pat::Ch).collect(),
                    Candidate::Pattern(p) => p,
                },
                None => match here {
                    Some(h) => h.to_string_lossy().chars().map(Pat::Ch).collect(),
                    None => vec![Pat::Any],
                },
            };
            p.push(Pat::Ch('/'));
            p.push(Pat::Any);
            Candidate::Pattern(p)
        };
        let option_value = |names: &[&str]| -> Option<&Word> {
            args.iter().enumerate().find_map(|(k, w)| {
                let l = lit(w);
                if names.contains(&l.as_str()) {
                    return args.get(k + 1).copied();
                }
                None
            })
        };
        // Output options of any program: `-o FILE`, `--output FILE`, `--output=FILE`.
        for (k, w) in args.iter().enumerate() {
            let l = lit(w);
            // `curl -sSo FILE`, `wget -qO FILE`: a cluster of short options ending in the
            // output option.
            let cluster = |last: char| {
                l.len() > 2 && !l.starts_with("--") && l.starts_with('-') && l.ends_with(last)
            };
            if matches!(
                l.as_str(),
                "-o" | "--output" | "-out" | "--out" | "--output-file"
            ) || (prog == "wget" && (l == "-O" || cluster('O')))
                || (prog == "curl" && cluster('o'))
            {
                if let Some(v) = args.get(k + 1) {
                    if lit(v) != "-" {
                        f.writes.push(c(v));
                    }
                }
            } else if let Some((opt, _)) = l.split_once('=') {
                if matches!(opt, "--output" | "--output-document" | "of" | "--out") {
                    let eq = w.pieces.iter().position(|p| *p == Piece::Lit('='));
                    let rest = Word {
                        pieces: eq.map_or_else(Vec::new, |e| w.pieces[e + 1..].to_vec()),
                    };
                    f.writes.push(c(&rest));
                }
            }
        }
        match prog {
            "tee" | "sponge" => f.writes.extend(plain.iter().map(|w| c(w))),
            // `script [-c CMD] FILE`: the typescript file.
            "script" => {
                let cmd = option_value(&["-c", "--command"]).map(|w| lit(&w));
                if let Some(file) = plain.iter().rev().find(|w| Some(lit(w)) != cmd) {
                    f.writes.push(c(file));
                }
            }
            "cp" | "mv" | "install" | "ln" | "rsync" => {
                let dir = option_value(&["-t", "--target-directory"]);
                let (dest, sources) = match dir {
                    Some(d) => (Some(d), &plain[..]),
                    None => match plain.split_last() {
                        Some((d, rest)) => (Some(*d), rest),
                        None => (None, &plain[..]),
                    },
                };
                if let Some(d) = dest {
                    f.writes.push(c(d));
                    if let Candidate::Path(dp) = c(d) {
                        for src in sources {
                            let name = lit(src);
                            let name = basename(name.trim_end_matches('/'));
                            if !name.is_empty() {
                                f.writes.push(Candidate::Path(dp.join(name)));
                            }
                        }
                    }
                }
            }
            "sed" | "perl" | "ruby" | "ed" | "ex" => {
                let in_place = prog == "ed"
                    || prog == "ex"
                    || args.iter().any(|w| {
                        let l = lit(w);
                        l.starts_with("--in-place")
                            || (l.starts_with('-') && !l.starts_with("--") && l.contains('i'))
                    });
                if in_place {
                    f.writes.extend(plain.iter().map(|w| c(w)));
                }
            }
            "awk" | "gawk" if plain.iter().any(|w| lit(w) == "inplace") => {
                f.writes.extend(plain.iter().map(|w| c(w)));
            }
            "xxd" => {
                // `xxd [-r] [options] [infile [outfile]]`: the second operand is written (`-`
                // is an operand here: standard input).
                let operands: Vec<&&Word> = args
                    .iter()
                    .filter(|w| {
                        let l = lit(w);
                        l == "-" || !l.starts_with('-')
                    })
                    .collect();
                if let Some(out) = operands.get(1) {
                    if lit(out) != "-" {
                        f.writes.push(c(out));
                    }
                }
            }
            _ => {}
        }
        // Files an awk or sed program writes (`print > "f"`, `w f`): named ones as paths, a
        // program only known when it runs as any path.
        if AWKS.contains(&prog) || prog == "sed" {
            match script_text(prog, args) {
                Some(Some(code)) => {
                    let named = if prog == "sed" {
                        sed_writes(&code)
                    } else {
                        awk_writes(&code)
                    };
                    for name in named {
                        f.writes.push(match name {
                            Some(n) => c(&literal_word(&n)),
                            None => Candidate::Pattern(vec![Pat::Any]),
                        });
                    }
                }
                Some(None) => f.writes.push(Candidate::Pattern(vec![Pat::Any])),
                None => {}
            }
        }
        match prog {
            "curl" | "wget" => {
                let remote = prog == "wget" && option_value(&["-O"]).is_none()
                    || args.iter().any(|w| {
                        let l = lit(w);
                        l == "--remote-name" || l == "-O" || l == "--remote-name-all"
                    });
                if remote && (prog == "wget" || !args.iter().any(|w| lit(w) == "-o")) {
                    for w in args.iter().filter(|w| lit(w).contains("://")) {
                        let name = remote_name(&lit(w));
                        f.writes.push(c(&literal_word(&name)));
                    }
                }
            }
            "tar" | "bsdtar" => {
                let extracts = args.first().map(lit).is_some_and(|l| {
                    (!l.starts_with("--") && l.trim_start_matches('-').contains('x'))
                        || l == "--extract"
                        || l == "--get"
                }) || args
                    .iter()
                    .any(|w| matches!(lit(w).as_str(), "-x" | "--extract"));
                if extracts {
                    f.writes.push(under(option_value(&["-C", "--directory"])));
                }
            }
            "unzip"
                if !args
                    .iter()
                    .any(|w| matches!(lit(w).as_str(), "-l" | "-t" | "-v")) =>
            {
                f.writes.push(under(option_value(&["-d"])));
            }
            "patch" | "apply_patch" | "git" => {
                let applies = match prog {
                    "git" => {
                        plain
                            .first()
                            .is_some_and(|w| matches!(lit(w).as_str(), "apply" | "am"))
                            && !args.iter().any(|w| {
                                matches!(
                                    lit(w).as_str(),
                                    "--check" | "--stat" | "--numstat" | "--summary"
                                )
                            })
                    }
                    "patch" => !args.iter().any(|w| lit(w) == "--dry-run"),
                    _ => true,
                };
                if applies && prog == "apply_patch" && !args.is_empty() {
                    // Codex's patch given to the shell: its files are in the text.
                    for a in args {
                        for p in extract::patch_paths(&a.squeezed()) {
                            f.writes.push(c(&literal_word(p)));
                        }
                    }
                } else if applies {
                    f.writes.push(under(None));
                }
            }
            "crontab" if !args.iter().any(|w| matches!(lit(w).as_str(), "-l" | "-r")) => {
                f.writes.push(Candidate::Pattern(
                    "/var/spool/cron/"
                        .chars()
                        .map(Pat::Ch)
                        .chain([Pat::Any])
                        .collect(),
                ));
            }
            "npm" | "pnpm"
                if plain
                    .first()
                    .is_some_and(|w| matches!(lit(w).as_str(), "pkg" | "set-script")) =>
            {
                f.writes.push(c(&literal_word("package.json")));
            }
            _ => {}
        }
    }

    /// The packages simple command `prog args…` installs (`sinks.install_commands`) or
    /// fetches and runs (`sinks.run_package_commands`).
    fn installs(&self, prog: &str, args: &[&Word], here: Option<&Path>, f: &mut Facts) {
        let lits: Vec<String> = args.iter().map(|w| w.squeezed()).collect();
        let prog = program_family(prog);
        let found = |list: &[String]| {
            list.iter()
                .filter_map(|p| prefix_end(p, &prog, &lits))
                .max()
        };
        if let Some(at) = found(&self.sinks.install_commands) {
            let mut skip = false;
            for a in &lits[at..] {
                if std::mem::take(&mut skip) {
                    continue;
                }
                if a.starts_with('-') {
                    skip = NON_PACKAGE_OPTIONS.contains(&a.as_str());
                    continue;
                }
                if !is_local(a, here) {
                    push(&mut f.installs, a.clone());
                }
            }
        } else if let Some(at) = found(&self.sinks.run_package_commands) {
            let mut rest = lits[at..].iter();
            while let Some(a) = rest.next() {
                if a == "-p" || a == "--package" {
                    if let Some(p) = rest.next() {
                        push(&mut f.installs, p.clone());
                    }
                    continue;
                }
                if a.starts_with('-') {
                    continue;
                }
                // A program the project already installed (`npx tsc`) is not fetched.
                let local = here.is_some_and(|h| h.join("node_modules/.bin").join(a).exists());
                if !local && !is_local(a, here) {
                    push(&mut f.installs, a.clone());
                }
                break;
            }
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

    /// Files that inline code names (`open('Makefile', 'a')`): every piece of the code that
    /// could be a file name, taken as a path (reads count too: fail closed).
    fn code_writes(&self, code: &str, here: Option<&Path>, f: &mut Facts) {
        for piece in code
            .split(|c: char| c.is_whitespace() || "'\"(),;[]{}`<>|&=+:".contains(c))
            .filter(|p| {
                !p.is_empty()
                    && p.len() <= 255
                    && p.chars()
                        .all(|c| c.is_alphanumeric() || "._-/~".contains(c))
            })
        {
            f.writes.push(candidate_with(
                &path_word(piece),
                here,
                self.home,
                &HashMap::new(),
            ));
        }
    }
}

/// Calls by which interpreter code runs code or commands it builds (`exec(`, `os.system`,
/// `child_process`…): inline code that makes them runs data as code, whatever its words.
const RUNS_COMMANDS: &[&str] = &[
    "exec(",
    "eval(",
    "compile(",
    "__import__(",
    "b64decode",
    "fromhex",
    "unhexlify",
    "os.system",
    "os.popen",
    "subprocess",
    "pty.spawn",
    "child_process",
    "execSync",
    "spawnSync",
    "Function(",
    "system(",
    "popen(",
    "Deno.Command",
    "Deno.run",
    "shell_exec",
    "passthru",
    "proc_open",
    "pack(",
];

/// Whether `l` is a cluster of an interpreter's short options whose last is a code option
/// (`-ne`, `-nle`, `-Ic`, `-pe`; for node, deno and bun also `-p`, print an expression).
fn code_cluster(l: &str, node: bool) -> bool {
    let Some(flags) = l.strip_prefix('-') else {
        return false;
    };
    !flags.starts_with('-')
        && (2..=6).contains(&flags.len())
        && flags.chars().all(|c| c.is_ascii_alphabetic())
        && (flags.ends_with(['e', 'E', 'c']) || (node && flags.ends_with('p')))
        || (node && l == "-p")
}

/// The program text of awk or sed command `prog`: the value of `-e`/`--expression` (sed) or the
/// first operand that is not an option or an option's value. `Some(None)`: a program only
/// known when it runs (`-f FILE`, an expansion); `None`: none given.
fn script_text(prog: &str, args: &[&Word]) -> Option<Option<String>> {
    let values = if prog == "sed" {
        SED_VALUE_OPTIONS
    } else {
        AWK_VALUE_OPTIONS
    };
    let mut k = 0;
    while k < args.len() {
        let w = args[k];
        let Some(l) = w.literal() else {
            return Some(None);
        };
        if l == "-e" || l == "--expression" || l == "--source" {
            return Some(args.get(k + 1).and_then(|v| v.literal()));
        }
        if let Some(code) = l
            .strip_prefix("--expression=")
            .or_else(|| l.strip_prefix("--source="))
        {
            return Some(Some(code.to_string()));
        }
        if let Some(code) = l.strip_prefix("-e").filter(|c| !c.is_empty()) {
            return Some(Some(code.to_string()));
        }
        // A program from a file (`-f FILE`, gawk's `-E FILE`): not known here.
        if l == "-f" || l == "--file" || l.starts_with("--file=") || (prog != "sed" && l == "-E") {
            return Some(None);
        }
        if l.starts_with('-') && l.len() > 1 {
            k += if values.contains(&l.as_str()) { 2 } else { 1 };
            continue;
        }
        return Some(Some(l));
    }
    None
}

/// The first way awk program `code` runs commands, if any: `system()`, a pipe to or from a
/// command (`print | "sh"`, `"cmd" | getline`, `|&`).
fn awk_runs(code: &str) -> Option<&'static str> {
    let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    ["system(", "getline", "|&", "|\""]
        .into_iter()
        .find(|m| squeezed.contains(m))
        .or_else(|| print_pipes(code).then_some("print | command"))
}

/// Whether awk `code` pipes output to a command other than through a quoted name
/// (`print $0 | cmd`).
fn print_pipes(code: &str) -> bool {
    code.split(['{', '}', ';', '\n'])
        .any(|st| st.find("print").is_some_and(|p| st[p..].contains('|')))
}

/// The files awk program `code` writes with `>` or `>>` after a `print`/`printf`: a quoted name
/// as `Some`, anything else as `None` (any path).
fn awk_writes(code: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for st in code.split(['{', '}', ';', '\n']) {
        // `print` anywhere in the statement (`if (x) print … > "f"`, `while (…) print …`).
        let Some(p) = st.find("print") else {
            continue;
        };
        let st = &st[p..];
        if let Some(at) = st.find('>') {
            let rest = st[at..].trim_start_matches('>').trim_start();
            out.push(
                rest.strip_prefix('"')
                    .and_then(|r| r.split_once('"'))
                    .map(|(name, _)| name.to_string()),
            );
        }
    }
    out
}

/// The commands of sed script `code`, trimmed (split at `;` and new lines).
fn sed_commands(code: &str) -> impl Iterator<Item = &str> {
    code.split([';', '\n'])
        .map(|c| {
            c.trim()
                .trim_start_matches('{')
                .trim_end_matches('}')
                .trim()
        })
        .filter(|c| !c.is_empty())
}

/// The command after a sed command's address (`1,5`, `/x/`, `$`), if it can be told.
fn sed_command(c: &str) -> &str {
    let mut rest = c;
    loop {
        let t = rest.trim_start_matches(|ch: char| {
            ch.is_ascii_digit() || matches!(ch, ',' | '$' | '!' | ' ' | '~' | '+')
        });
        // An address `/RE/` or `\cREc` (any delimiter c), then maybe a block's `{`.
        let (delim, r) = if let Some(r) = t.strip_prefix('/') {
            ('/', r)
        } else if let Some(r) = t.strip_prefix('\\') {
            let mut cs = r.chars();
            match cs.next() {
                Some(d) => (d, cs.as_str()),
                None => return "",
            }
        } else {
            return t.trim_start_matches(['{', ' ']);
        };
        match r.split_once(delim) {
            Some((_, after)) => rest = after.trim_start_matches(['I', 'M']),
            None => return "",
        }
    }
}

/// The first way sed script `code` runs commands, if any: the `e` command, or the `e` flag of
/// a substitution.
fn sed_runs(code: &str) -> Option<&'static str> {
    sed_commands(code).find_map(|c| {
        let cmd = sed_command(c);
        if cmd == "e" || cmd.starts_with("e ") {
            return Some("e");
        }
        substitution_flags(cmd)
            .is_some_and(|f| f.contains('e'))
            .then_some("s///e")
    })
}

/// The files sed script `code` writes: the `w` and `W` commands and the `w` flag of a
/// substitution (the name runs to the end of the command).
fn sed_writes(code: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for c in sed_commands(code) {
        let cmd = sed_command(c);
        // `w FILE`, and GNU sed's `wFILE`: no other command starts with `w` or `W`.
        let name = if let Some(n) = cmd.strip_prefix('w').or_else(|| cmd.strip_prefix('W')) {
            Some(n.trim().to_string())
        } else {
            substitution_flags(cmd)
                .and_then(|f| f.find('w').map(|at| f[at + 1..].trim().to_string()))
        };
        if let Some(n) = name {
            out.push((!n.is_empty() && n != "/dev/stdout" && n != "/dev/stderr").then_some(n));
        }
    }
    out
}

/// The flags of a substitution command `s<d>…<d>…<d>FLAGS`, if `cmd` is one.
fn substitution_flags(cmd: &str) -> Option<&str> {
    let mut chars = cmd.strip_prefix('s')?.char_indices();
    let (_, d) = chars.next()?;
    if d.is_alphanumeric() || d.is_whitespace() || d == '\\' {
        return None;
    }
    let mut seen = 0;
    let mut escaped = false;
    for (i, ch) in chars {
        if escaped {
            escaped = false;
        } else if ch == '\\' {
            escaped = true;
        } else if ch == d {
            seen += 1;
            if seen == 2 {
                return Some(&cmd[1 + d.len_utf8() + i..]);
            }
        }
    }
    None
}

/// Ways of running a command that need no parenthesis (perl's and ruby's `system $_`,
/// `exec $_`, backticks and `qx`, `%x`; Lua's `os.execute`, `io.popen`), looked for as written.
const RUNS_COMMANDS_WORDS: &[&str] = &[
    "system ",
    "exec ",
    "qx",
    "`",
    "%x",
    "os.execute",
    "io.popen",
    "IO.popen",
    "Popen",
    "spawn",
    "Runtime.getRuntime",
    "exec.Command",
];

/// The first call of [`RUNS_COMMANDS`] in `code` (white space removed, so `system (` is
/// `system(`), or of [`RUNS_COMMANDS_WORDS`] as written, if any.
fn runs_commands(code: &str) -> Option<&'static str> {
    let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    RUNS_COMMANDS
        .iter()
        .copied()
        .find(|m| squeezed.contains(m))
        .or_else(|| {
            RUNS_COMMANDS_WORDS
                .iter()
                .copied()
                .find(|m| code.contains(m))
        })
}

/// The code attached to an interpreter's code option in one word: `-cCODE`, `-eCODE`,
/// `-rCODE` (php), `-pCODE` (node, deno, bun), after a cluster of letter options (`-ne'…'`
/// lexed as `-ne…`), or `--eval=CODE`, `--print=CODE`, `--command=CODE`.
fn attached_code(l: &str, node: bool) -> Option<String> {
    for long in ["--eval=", "--print=", "--command=", "--source=", "--exec="] {
        if let Some(code) = l.strip_prefix(long) {
            return Some(code.to_string());
        }
    }
    let flags = l.strip_prefix('-').filter(|f| !f.starts_with('-'))?;
    let is_code = |c: char| matches!(c, 'c' | 'e' | 'E' | 'r') || (node && c == 'p');
    let at = flags.find(is_code)?;
    let (before, rest) = flags.split_at(at);
    let code = &rest[1..];
    (before.chars().all(|c| c.is_ascii_alphabetic())
        && !code.is_empty()
        && !code.chars().all(|c| c.is_ascii_alphabetic()))
    .then(|| code.to_string())
}

/// `env`'s split string, if `w` is one: `-SCMD`, `--split-string=CMD` (the value of a separate
/// `-S` is the program word itself, `program_index`).
fn split_string(w: &str) -> Option<String> {
    w.strip_prefix("--split-string=")
        .or_else(|| w.strip_prefix("-S").filter(|r| !r.is_empty()))
        .map(str::to_string)
}

/// The commands `prog` runs from its arguments, `None` for one only known when it runs:
/// `find … -exec|-execdir|-ok|-okdir CMD… ;|+`, git's configuration values that are commands
/// (`-c alias.x=!CMD`, `core.pager`, `core.fsmonitor`, `core.sshCommand`, `core.editor`, …),
/// tar's `--checkpoint-action=exec=CMD`, `--to-command=CMD`, `--use-compress-program=CMD`
/// (`-I CMD`), ssh's `-o ProxyCommand=CMD` / `LocalCommand=CMD`, rsync's `-e CMD`, `make -f -`.
fn carried_commands(prog: &str, args: &[&Word]) -> Vec<Option<String>> {
    let lits: Vec<Option<String>> = args.iter().map(|w| w.literal()).collect();
    let mut out = Vec::new();
    let value_of = |k: usize| lits.get(k + 1).cloned().flatten();
    match prog {
        "find" => {
            let mut k = 0;
            while k < lits.len() {
                if matches!(
                    lits[k].as_deref(),
                    Some("-exec" | "-execdir" | "-ok" | "-okdir")
                ) {
                    let mut words = Vec::new();
                    let mut unknown = false;
                    k += 1;
                    while k < lits.len() && !matches!(lits[k].as_deref(), Some(";" | "+")) {
                        match &lits[k] {
                            Some(w) => words.push(
                                shlex::try_quote(w)
                                    .map_or_else(|_| "UNQUOTABLE".to_string(), |q| q.into_owned()),
                            ),
                            None => unknown = true,
                        }
                        k += 1;
                    }
                    out.push((!unknown).then(|| words.join(" ")));
                }
                k += 1;
            }
        }
        "git" => {
            for (k, l) in lits.iter().enumerate() {
                if l.as_deref() != Some("-c") {
                    continue;
                }
                let Some(kv) = value_of(k) else {
                    out.push(None);
                    continue;
                };
                let Some((key, value)) = kv.split_once('=') else {
                    continue;
                };
                let key = key.to_ascii_lowercase();
                let command_key = matches!(
                    key.as_str(),
                    "core.pager"
                        | "core.fsmonitor"
                        | "core.sshcommand"
                        | "core.editor"
                        | "sequence.editor"
                        | "diff.external"
                        | "gpg.program"
                        | "core.askpass"
                        | "credential.helper"
                        | "uploadpack.packobjectshook"
                ) || key.starts_with("pager.")
                    || key.ends_with(".textconv")
                    || key.ends_with(".command")
                    || key.ends_with(".cmd")
                    || key.ends_with(".clean")
                    || key.ends_with(".smudge")
                    || key.ends_with(".process");
                if let Some(cmd) = value.strip_prefix('!') {
                    out.push(Some(cmd.to_string()));
                } else if command_key {
                    out.push(Some(value.to_string()));
                }
            }
        }
        "tar" | "bsdtar" => {
            for (k, l) in lits.iter().enumerate() {
                let Some(l) = l.as_deref() else { continue };
                if let Some(v) = l.strip_prefix("--checkpoint-action=") {
                    if let Some(cmd) = v.strip_prefix("exec=") {
                        out.push(Some(cmd.to_string()));
                    }
                } else if let Some(cmd) = [
                    "--to-command=",
                    "--use-compress-program=",
                    "--rsh-command=",
                    "--info-script=",
                    "--new-volume-script=",
                ]
                .iter()
                .find_map(|p| l.strip_prefix(p))
                {
                    out.push(Some(cmd.to_string()));
                } else if matches!(l, "-I" | "--to-command" | "--use-compress-program" | "-F") {
                    out.push(value_of(k));
                }
            }
        }
        "ssh" | "scp" | "sftp" | "rsync" => {
            for (k, l) in lits.iter().enumerate() {
                let Some(l) = l.as_deref() else { continue };
                let opt = match l {
                    "-o" => value_of(k),
                    x if x.starts_with("-o") && x.len() > 2 => Some(x[2..].to_string()),
                    "-e" | "--rsh" if prog == "rsync" => {
                        out.push(value_of(k));
                        continue;
                    }
                    _ => continue,
                };
                if let Some(o) = opt {
                    for key in ["proxycommand", "localcommand", "knownhostscommand"] {
                        if o.len() > key.len() && o[..key.len()].eq_ignore_ascii_case(key) {
                            let v = o[key.len()..].trim_start_matches([' ', '=']);
                            out.push(Some(v.to_string()));
                        }
                    }
                }
            }
        }
        "make" | "gmake" => {
            for (k, l) in lits.iter().enumerate() {
                if matches!(l.as_deref(), Some("-f" | "--file" | "--makefile"))
                    && value_of(k).is_none_or(|v| v == "-" || v == "/dev/stdin")
                {
                    out.push(None);
                }
            }
        }
        _ => {}
    }
    out
}

/// Whether `p` is a piece whose value this analysis cannot know: a command substitution or
/// other expansion, or a variable other than `HOME`/`PWD` not assigned in the command.
fn is_unknown(p: &Piece, vars: &HashMap<String, String>) -> bool {
    match p {
        Piece::Unknown => true,
        Piece::Var(v) => v != "HOME" && v != "PWD" && !vars.contains_key(v),
        _ => false,
    }
}

/// Whether an interpreter's script argument means standard input.
fn is_stdin(script: Option<&str>) -> bool {
    matches!(script, None | Some("-" | "/dev/stdin" | "/proc/self/fd/0"))
}

fn has_code_option(s: &Simple) -> bool {
    s.words[s.program()..]
        .iter()
        .filter_map(|w| w.literal())
        .any(|l| CODE_OPTIONS.contains(&l.as_str()) || l == "-m")
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

/// Where `cd`/`pushd` with `args` moves from `here` (`None`: unknown).
fn cd(args: &[&Word], here: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    let target = args
        .iter()
        .find(|w| w.literal().is_none_or(|l| !l.starts_with('-')));
    match target {
        None => home.map(Path::to_path_buf),
        Some(w) => match candidate_with(w, here, home, &HashMap::new()) {
            Candidate::Path(p) => Some(p),
            Candidate::Pattern(_) => None,
        },
    }
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

/// A program's name as install prefixes name it: `pip3.11` → `pip`, `python3` → `python`.
fn program_family(prog: &str) -> String {
    let base = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    match base {
        "pip" | "python" => base.to_string(),
        _ => prog.to_string(),
    }
}

/// Where the words of `prefix` (`python -m pip install`) end in `args` of `prog`, options
/// between them skipped: the index of the first argument after the prefix, or `None`.
fn prefix_end(prefix: &str, prog: &str, args: &[String]) -> Option<usize> {
    let mut want = prefix.split_whitespace();
    if want.next() != Some(prog) {
        return None;
    }
    let mut i = 0;
    for w in want {
        loop {
            let a = args.get(i)?;
            i += 1;
            if a == w {
                break;
            }
            if !a.starts_with('-') {
                return None;
            }
        }
    }
    Some(i)
}

/// Whether an install argument names something of the project rather than a package: a
/// path starting with `.`, or one that exists relative to `here`.
fn is_local(a: &str, here: Option<&Path>) -> bool {
    a.starts_with('.') || here.is_some_and(|h| !a.contains("://") && h.join(a).exists())
}

fn push(out: &mut Vec<String>, s: String) {
    if !s.is_empty() && !out.contains(&s) {
        out.push(s);
    }
}

#[cfg(test)]
mod tests;
