//! The secrets a shell command reads and the calls that dump the environment (`spec/hooks.md`
//! §16.2): its simple commands, their file words, trees and inline code, through quotes,
//! variables and `cd`.

use super::environment::dumped;
use super::hosts::{built_url, destinations};
use super::servers::{file_server, loopback, served_word};
use super::stores::printed;
use super::{Egress, Facts, SecretRules, INTERPRETERS, TREE_READERS};
use crate::front::protect::handed::handed_commands;
use crate::front::protect::invocation::{invocation, Program};
use crate::front::protect::pattern::{candidate, Resolver};
use crate::front::protect::shell::{command_text, is_shell_tool, lex, Piece, Token, Word};
use crate::front::protect::simple::{basename, program_index, wrapper_dir};
use crate::front::protect::working_dirs::WorkingDirs;
use crate::front::protect::{MAX_NESTING, SHELLS};
use crate::front::sinks::command::carried_commands;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

impl SecretRules {
    /// The facts of a shell tool's call (`None` for another tool).
    ///
    /// `endorsing`: whether code the user endorsed is read as such (§16.2, "Endorsed code"):
    /// only for the decision on the call itself, never for whether its result is secret.
    pub(super) fn shell_call(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        cwd: Option<&Path>,
        endorsing: bool,
    ) -> Option<Facts> {
        let texts = shell_texts(tool, args);
        if texts.is_empty() {
            return None;
        }
        let cwd = workdir(args, cwd);
        let mut f = Facts {
            endorsing,
            ..Facts::default()
        };
        let r = Resolver::default();
        for t in &texts {
            self.shell(t, cwd.as_deref(), 0, &mut f, &r);
        }
        Some(f)
    }

    /// Analyses one shell command (nested commands up to [`MAX_NESTING`] deep; deeper, or a
    /// program that cannot be named, counts as one that may send).
    pub(super) fn shell(
        &self,
        text: &str,
        cwd: Option<&Path>,
        depth: usize,
        f: &mut Facts,
        r: &Resolver,
    ) {
        if depth > MAX_NESTING {
            f.unknown_program = true;
            return;
        }
        let lexed = lex(text);
        // A brace expansion too large to spell out may name any file a word of it matches:
        // named, as a secret file is by its path (fail closed; attack review 55).
        if lexed.unexpanded {
            f.named = true;
            f.secrets.push(UNEXPANDED.to_string());
        }
        // The values its assignments give, before any of its words is read (§16.2).
        f.vars.collect(&lexed);
        for n in &lexed.nested {
            self.shell(n, cwd, depth + 1, f, r);
        }
        // An interpreter reading code from a here-document or standard input (`python3 - <<EOF`)
        // sends what its code names: the raw text is searched for secret paths.
        let interpreted = lexed.tokens.iter().any(|t| {
            matches!(t, Token::Word(w) if w.literal().is_some_and(|l| is_interpreter(basename(&l))))
        });
        if interpreted {
            if let Some(s) = chunks(text).find_map(|c| self.secret_str(c, cwd, r)) {
                f.secrets.push(s);
                f.egress.push(Egress {
                    via: "an interpreter".to_string(),
                    destinations: Vec::new(),
                });
            }
        }
        // A proxy or a pinned address (`https_proxy=…`, `curl --resolve h:443:ip`), or a git
        // remote's address set by the command (`-c remote.origin.url=…`, `-c
        // url.<base>.insteadOf=…`), sends elsewhere than the host or remote named: the
        // destination is unknown.
        let lower = text.to_lowercase();
        if [
            "proxy=",
            "--proxy",
            "--preproxy",
            "--socks",
            "--resolve",
            "--connect-to",
            "--dns-",
            "insteadof=",
            "proxychains",
            "torsocks",
            "torify",
            ".url=",
            ".pushurl=",
        ]
        .iter()
        .any(|k| lower.contains(k))
        {
            f.rerouted = true;
        }
        // `cd`/`pushd`/`popd` move the working directory of the commands after them; a
        // command may run in more than one (`cd a; …`: `cd` may fail), each read
        // (`WorkingDirs`, attack review 58).
        let mut wd = WorkingDirs::new(
            text,
            &lexed,
            cwd.filter(|c| !c.starts_with(UNKNOWN_CWD))
                .map(Path::to_path_buf),
        );
        let mut operators = lexed.operators.iter();
        let start = cwd.unwrap_or(Path::new(UNKNOWN_CWD));
        // A nested command runs in one of the directories the command moves to
        // (`cd ~/.ssh; echo $(curl -F f=@id_rsa …)`): it is analysed in each (below).
        let mut dirs: Vec<PathBuf> = Vec::new();
        let mut segment: Vec<&Word> = Vec::new();
        let mut redirected = false;
        let mut reads = false;
        // The file standard input is redirected from (`< FILE`; §16.2, a shell's program).
        let mut stdin: Option<&Word> = None;
        // The files it redirects to or from: not arguments of its program.
        let mut files: Vec<&Word> = Vec::new();
        let mut previous: Option<&Token> = None;
        let mut heres: Vec<&Word> = Vec::new();
        for t in lexed.tokens.iter().chain(std::iter::once(&Token::Control)) {
            let here_word = matches!(previous, Some(Token::HereDoc));
            previous = Some(t);
            let target = std::mem::replace(&mut redirected, matches!(t, Token::Redirect(_)));
            let read = std::mem::replace(
                &mut reads,
                matches!(
                    t,
                    Token::Redirect(crate::front::protect::shell::Redirect::Reads)
                ),
            );
            match t {
                Token::Word(w) => {
                    if target {
                        network_redirection(w, f);
                        files.push(w);
                    }
                    // A here-document's delimiter or a here-string: not an argument either.
                    if here_word {
                        files.push(w);
                        heres.push(w);
                    }
                    if read {
                        stdin = Some(w);
                    }
                    segment.push(w);
                }
                Token::Control | Token::Pipe => {
                    let io = (stdin.take(), files.as_slice(), heres.as_slice());
                    for here in wd.here().to_vec() {
                        let here = here.unwrap_or_else(|| PathBuf::from(UNKNOWN_CWD));
                        self.segment(&segment, io, Some(&here), depth, f, r);
                    }
                    files.clear();
                    heres.clear();
                    let ends = operators.next().copied();
                    let home = self.home.as_deref();
                    let vars = &f.vars;
                    wd.step(&segment, ends, &|w, h| {
                        vars.spellings(w)
                            .iter()
                            .find_map(|s| candidate(s, h, home).path())
                    });
                    for here in wd.here() {
                        let here = here.clone().unwrap_or_else(|| PathBuf::from(UNKNOWN_CWD));
                        if here.as_path() != start && !dirs.contains(&here) {
                            dirs.push(here);
                        }
                    }
                    segment.clear();
                }
                Token::Redirect(_) | Token::HereDoc => {}
            }
        }
        for dir in &dirs {
            for n in &lexed.nested {
                self.shell(n, Some(dir), depth + 1, f, r);
            }
        }
    }

    /// One simple command: its program, the secrets its words name, where it sends.
    fn segment(
        &self,
        words: &[&Word],
        (stdin, files, heres): (Option<&Word>, &[&Word], &[&Word]),
        cwd: Option<&Path>,
        depth: usize,
        f: &mut Facts,
        r: &Resolver,
    ) {
        // A wrapper that runs the program in another directory (`env -C DIR`, `sudo -D DIR`,
        // `unshare --wd DIR`): the program's words, the commands it hands and its scripts are
        // that directory's (§13.3; attack review 42). One only known when it runs may be any
        // directory: a relative word there may name any secret.
        let moved = wrapper_dir(words).map(|d| {
            let home = self.home.as_deref();
            let d = d.and_then(|d| match (d.strip_prefix("~/"), home) {
                (Some(r), Some(h)) => Some(h.join(r).display().to_string()),
                (Some(_), None) => None,
                (None, _) => Some(d),
            });
            d.and_then(|d| crate::front::protect::pattern::entered(cwd, &d))
        });
        let cwd = match &moved {
            None => cwd,
            Some(Some(d)) => Some(d.as_path()),
            Some(None) => {
                f.secrets
                    .push("the files of a directory only known when it runs".to_string());
                Some(Path::new(UNKNOWN_CWD))
            }
        };
        let tree = words.iter().any(|w| {
            w.literal()
                .is_some_and(|l| TREE_READERS.contains(&basename(&l)))
        });
        let program = words.get(program_index(words)).and_then(|w| w.literal());
        for w in words {
            self.word_read(w, (tree, program.as_deref()), cwd, f, r);
        }
        // bash's network redirections (`> /dev/tcp/HOST/PORT`, `exec 3<>/dev/udp/…`): the
        // shell itself sends, whatever the program; a part known only when it runs may name
        // any host.
        for w in words {
            let s = w.squeezed();
            let net = ["/dev/tcp/", "/dev/udp/"]
                .iter()
                .find_map(|d| s.strip_prefix(d));
            let unknown = w.literal().is_none() && s.starts_with("/dev/");
            if net.is_some() || unknown {
                let host = net
                    .filter(|_| !unknown)
                    .and_then(|r| r.split('/').next())
                    .filter(|h| !h.is_empty());
                f.egress.push(Egress {
                    via: "a /dev/tcp redirection".to_string(),
                    destinations: host.map(str::to_lowercase).into_iter().collect(),
                });
            }
        }
        // An environment dump, wherever a wrapper runs it (`env` alone, `time env`), its
        // redirections' files left out (`env > /tmp/e` prints).
        let plain: Vec<&Word> = words
            .iter()
            .copied()
            .filter(|w| !files.iter().any(|t| std::ptr::eq(*t, *w)))
            .collect();
        if let Some(prog) = dumped(&self.policy.environment_commands, &plain) {
            f.named = true;
            f.secrets.push(format!("the environment ({prog})"));
        }
        // What a credential store's program prints (`gh auth token`), git's configuration's
        // (`remotes`) or a variable forwarded by name (`forwarded`); redirections left out.
        let at = program_index(&plain);
        if let Some(prog) = plain.get(at).and_then(|w| w.literal()) {
            let args: Vec<String> = plain[at + 1..].iter().map(|w| w.squeezed()).collect();
            let home = self.home.as_deref();
            let found = printed(&self.policy.secret_commands, basename(&prog), &args)
                .map(|e| format!("what `{e}` prints"))
                .or_else(|| {
                    super::remotes::credential_printed(&super::remotes::GitCall {
                        prog: basename(&prog),
                        before: &plain[..at],
                        rest: &plain[at + 1..],
                        cwd,
                        home,
                        vars: &f.vars,
                    })
                })
                .or_else(|| super::forwarded::forwarded(basename(&prog), &args));
            f.named |= found.is_some();
            f.secrets.extend(found);
        }
        // Commands it hands a program through a variable, a wrapper or an option
        // (`GIT_PAGER=CMD git log`, `watch 'CMD'`, `tar -I CMD`): analysed as commands; one only
        // known when it runs may read any secret and send it (§16.2, "Handed commands").
        for handed in handed_commands(words) {
            match handed {
                Some(code) => self.shell(&code, cwd, depth + 1, f, r),
                None => {
                    f.secrets.push(HANDED_UNKNOWN.to_string());
                    f.unknown_program = true;
                }
            }
        }
        // The program: after assignments, wrappers and their options.
        let i = program_index(words);
        let Some(prog_word) = words.get(i) else {
            return;
        };
        let Some(prog) = prog_word.literal() else {
            f.unknown_program = true;
            // In endorsed code, a program named by a variable (`$CMD`, set from the
            // environment, a file or an earlier statement the agent writes) is code the agent
            // may choose: judged after the endorsed text as code nobody can see (attack
            // review 45: `export CMD='sh x.sh'; bash run.sh`).
            // So is one a command substitution computes (`$(cat .buildcmd)`, attack review 46).
            let named_by_variable = prog_word.pieces.iter().any(|p| match p {
                Piece::Var(v) => v.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic()),
                Piece::Unknown | Piece::Param(_) => true,
                _ => false,
            });
            if f.endorsed > 0 && named_by_variable {
                f.deferred.push((
                    super::scripts::Script::Unknown,
                    cwd.map(Path::to_path_buf),
                    format!("the program `{}`", prog_word.squeezed()),
                ));
            }
            return;
        };
        let prog = basename(&prog).to_string();
        let rest = &words[i + 1..];
        if let Some((moved, secret)) = self.moved_away(&prog, rest, files, cwd, r) {
            f.egress.push(moved);
            f.secrets.push(secret);
        }
        let lits: Vec<String> = rest.iter().map(|w| w.squeezed()).collect();
        if !super::local::is_local(&prog_word.literal().unwrap_or_default(), &lits)
            && !self
                .policy
                .local_commands
                .iter()
                .any(|e| prefix_matches(e, &prog, &lits))
        {
            f.strangers.push(prog.clone());
        }
        // Inline code, its options read as the program reads them (§13.3, "Options").
        let args: Vec<Option<String>> = rest
            .iter()
            .filter(|w| !files.iter().any(|t| std::ptr::eq(*t, **w)))
            .map(|w| w.literal())
            .collect();
        let inv = invocation(&prog, &args);
        // Code it reads on standard input (a here-document, `echo CODE | python3`) or from an
        // option only known when it runs: inline code too, for what it reads (§16.2).
        let stdin_code = inv
            .as_ref()
            .is_some_and(|i| matches!(i.program, Program::Stdin | Program::Unknown));
        let inline = inv.and_then(|inv| match inv.program {
            Program::Inline(code) => Some(code),
            _ => None,
        });
        if SHELLS.contains(&prog.as_str()) {
            match &inline {
                Some(Some(code)) => self.shell(code, cwd, depth + 1, f, r),
                // Code that is only known when it runs may run anything.
                Some(None) => f.runs_unknown_code(&format!("`{prog} -c`"), cwd),
                None => {}
            }
        }
        if prog == "eval" {
            if rest.iter().all(|w| w.literal().is_some()) {
                self.shell(&lits.join(" "), cwd, depth + 1, f, r);
            } else {
                f.runs_unknown_code("`eval`", cwd);
            }
        }
        // Code it runs from a file (`bash x.sh`, `./x.sh`, `python3 x.py`, `make`, `npm
        // test`): the file's text as it is now, analysed as the code it is.
        // (A here-document's delimiter or a here-string is not a script's name.)
        let run: Vec<&Word> = words
            .iter()
            .copied()
            .filter(|w| !heres.iter().any(|h| std::ptr::eq(*h, *w)))
            .collect();
        let at = program_index(&run);
        if at < run.len() {
            self.scripts((&run, stdin), at, cwd, depth, f, r);
        }
        // Commands another program runs from its arguments (`git -c alias.x='!CMD' x`,
        // `find -exec`, tar's and ssh's command options): the sink rules' reading of them
        // (`carried_commands`, `spec/hooks.md` §17.1), analysed as commands here too.
        for carried in carried_commands(&prog, rest) {
            match carried {
                Some(code) => self.shell(&code, cwd, depth + 1, f, r),
                None => f.unknown_program = true,
            }
        }
        // An alias the command defines: its code is analysed, and a later program of the
        // command may be its name, which then runs that code with the words after it (`alias
        // c=curl` … `c -F f=@…`): every program may send.
        if prog == "alias" {
            for def in rest.iter().filter_map(|w| w.literal()) {
                if let Some((_, code)) = def.split_once('=') {
                    self.shell(code, cwd, depth + 1, f, r);
                }
            }
            f.unknown_program = true;
        }
        // zsh's `autoload` (a function of its library: `tcp_open`, `tcp_send`) and `zmodload`
        // (a module's builtins: `ztcp`, `zsocket`) give names to code the command does not
        // show, as an alias does: every program may send (attack review 37).
        if matches!(prog.as_str(), "autoload" | "zmodload") {
            f.unknown_program = true;
        }
        if is_interpreter(&prog) {
            // Inline code can connect anywhere: it sends when it names a secret.
            let inline = inline.is_some();
            let names_secret = rest.iter().any(|w| self.word_secret(w, cwd, r).is_some());
            if inline && names_secret {
                f.egress.push(Egress {
                    via: prog.clone(),
                    destinations: Vec::new(),
                });
            }
        }
        if let Some(e) = self
            .policy
            .egress_commands
            .iter()
            .find(|e| prefix_matches(e, &prog, &lits))
        {
            f.egress.push(Egress {
                via: e.clone(),
                destinations: destinations(&prog, &lits),
            });
        } else if let Some((at, e)) = lits.iter().enumerate().find_map(|(at, a)| {
            let b = basename(a);
            self.policy
                .egress_commands
                .iter()
                .find(|e| e.split_whitespace().count() == 1 && e.as_str() == b)
                .map(|e| (at, e))
        }) {
            // A sender run by the program (`find … -exec curl …`, `parallel curl`).
            f.egress.push(Egress {
                via: e.clone(),
                destinations: destinations(basename(&lits[at]), &lits[at + 1..]),
            });
        }
        // A file server: every file under the directory it serves goes to whoever connects
        // (`servers`), an unnamed destination unless it listens on a loopback address.
        if let Some(served) = file_server(&prog, &lits) {
            let dir = served_word(rest, served.dir.as_deref());
            if let Some(s) = self.tree_secret(&dir, cwd) {
                f.secrets.push(s);
            } else if dir
                .pieces
                .iter()
                .any(|p| !matches!(p, Piece::Lit(_) | Piece::Home))
            {
                f.secrets.push(format!(
                    "a directory {} serves, only known when it runs",
                    served.via
                ));
            }
            let bind = served.bind.filter(|b| loopback(b));
            f.egress.push(Egress {
                via: served.via.to_string(),
                destinations: bind.map(|b| b.to_lowercase()).into_iter().collect(),
            });
        }
        // A program that packs a directory and uploads it (`uploads`): the directories it is
        // given, and the working directory for a publisher or a deployer, are read as a
        // recursive reader's are, and named concretely (§16.2, "Uploads").
        if let Some(up) = super::uploads::upload(&prog, &lits) {
            let here = Word {
                pieces: vec![Piece::Lit('.')],
            };
            let packed = rest.iter().copied().chain(up.packs_cwd.then_some(&here));
            for w in packed {
                if let Some(s) = self.tree_secret(w, cwd) {
                    f.named = true;
                    f.secrets.push(format!("{s}, which `{}` uploads", up.via));
                }
            }
        }
        // A URL whose text the run completes: a network name built from data, sent by
        // whatever program is given it (`hosts::built_url`).
        for w in words {
            let text: String = w
                .pieces
                .iter()
                .map(|p| match p {
                    Piece::Lit(c) => *c,
                    _ => '\0',
                })
                .collect();
            if let Some(destinations) = built_url(&text) {
                f.egress.push(Egress {
                    via: format!("a URL built when it runs ({})", w.squeezed()),
                    destinations,
                });
            }
        }
        // Inline code whose reads are not known feeds the programs after it (what its own
        // words send is judged above).
        let awk = super::inline::awk_reads_unknown(&prog, &lits);
        // Code that is only a number (`node -e 1`, the `-e 0` an interpreter's options in
        // the environment are handed with) reads nothing.
        let reads = |c: &Option<String>| {
            c.as_ref()
                .is_none_or(|c| !c.trim().chars().all(|x| x.is_ascii_digit()))
        };
        let code = inline.as_ref().is_some_and(reads) || stdin_code;
        if (is_interpreter(&prog) && code) || awk {
            f.inline_code(&prog);
        }
    }
}

/// What a command reads when a word's brace expansion is over the lexer's bound.
const UNEXPANDED: &str = "the files a brace expansion too large to spell out may name";

/// What a command reads when it hands a program code only known when it runs.
const HANDED_UNKNOWN: &str =
    "code it hands a program that is only known when it runs, which may read any secret";

/// The path-like pieces of a text (inline code, a here-document): split at spaces, quotes,
/// brackets and separators, kept when they hold a `/` or start with `.`.
pub(crate) fn chunks(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || "'\"(),;[]{}`<>|&=".contains(c))
        .filter(|p| p.contains('/') || p.starts_with('.'))
}

/// The command texts of a shell tool's call (its `command` and `cmd` arguments: both, when
/// both are given, since which one runs is the agent's business); empty for other tools.
fn shell_texts(tool: &str, args: &Map<String, Value>) -> Vec<String> {
    let bare = tool
        .strip_prefix("mcp__")
        .and_then(|r| r.split_once("__"))
        .map_or(tool, |(_, t)| t);
    if !is_shell_tool(bare) {
        return Vec::new();
    }
    ["command", "cmd"]
        .iter()
        .filter_map(|k| args.get(*k).and_then(command_text))
        .collect()
}

/// The working directory of a call: Codex's `workdir` against the event's `cwd`.
fn workdir(args: &Map<String, Value>, cwd: Option<&Path>) -> Option<PathBuf> {
    let base = cwd.unwrap_or(Path::new(UNKNOWN_CWD));
    Some(match args.get("workdir").and_then(Value::as_str) {
        // As the kernel enters it; one that cannot be known is the unknown directory.
        Some(w) => crate::front::protect::pattern::entered(Some(base), w)
            .unwrap_or_else(|| PathBuf::from(UNKNOWN_CWD)),
        None => base.to_path_buf(),
    })
}

/// The working directory assumed when none is known (an MCP client's call, `cd $X`): a
/// directory no secret glob anchored at `/` or `~/` lies in, so that a relative word is judged
/// by its own characters (`.env` anywhere is secret; `-sS` is not), never by what an unknown
/// directory might be.
pub(super) const UNKNOWN_CWD: &str = "/nonexistent/working-directory";

/// Whether `prog` is an interpreter (`python3.11` as `python`).
pub(crate) fn is_interpreter(prog: &str) -> bool {
    INTERPRETERS.contains(&prog)
        || INTERPRETERS.contains(&prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.'))
}

/// Whether the command `prog args…` starts with the words of `prefix`; options between the
/// program and a subcommand are skipped (`git -C d push`).
fn prefix_matches(prefix: &str, prog: &str, args: &[String]) -> bool {
    let mut want = prefix.split_whitespace();
    if want.next() != Some(prog) {
        return false;
    }
    // Git's own options take values (`git -c a=b push`): skipped with them.
    let skip = if prog == "git" {
        crate::gate::extract::git_global_options(args)
    } else {
        0
    };
    let mut rest = args[skip..].iter().filter(|a| !a.starts_with('-'));
    want.all(|w| rest.next().is_some_and(|a| a == w))
}

/// A redirection's file whose name is known only when bash runs it (`> $d/tcp/h/80` after
/// `d=/dev`, `> ${D:-/dev}/…`, `3<>$p`): bash opens `/dev/tcp/HOST/PORT` and `/dev/udp/…` as
/// network connections by the expanded name (`spec/hooks.md` §16.2), so a name whose known
/// beginning can still become one of those is a send to an unnamed destination. A name that
/// begins with anything else (`out/$n.txt`, `/tmp/$x`) cannot, nor can a literal one, which
/// [`SecretRules::segment`] reads itself. `~` counts as unknown: `HOME` can be set by the
/// command.
fn network_redirection(w: &Word, f: &mut Facts) {
    if w.literal().is_some() {
        return;
    }
    let lead: String = w
        .pieces
        .iter()
        .map_while(|p| match p {
            Piece::Lit(c) => Some(*c),
            _ => None,
        })
        .collect();
    let may_become = ["/dev/tcp/", "/dev/udp/"]
        .iter()
        .any(|d| d.starts_with(lead.as_str()) || lead.starts_with(d));
    if may_become && !lead.starts_with("/dev/") {
        // A beginning of `/dev/…` is already a send (`segment`); this adds the rest.
        f.egress.push(Egress {
            via: "a /dev/tcp redirection".to_string(),
            destinations: Vec::new(),
        });
    }
}
