//! How a shell or interpreter is given its program (`spec/hooks.md` §13.3, "Options"): its
//! options read as the program itself reads them — which word is its script, which its inline
//! code, which a module it runs or a file it loads first, and when it reads its program from
//! standard input. One reading for every rule: the screen (§13), the terminal rule (§13.3), the
//! secrecy rule's reading of scripts (§16.2) and the code sinks (§17). Before, four rules read
//! these options four ways and an agent could pick the way that hid its code (`bash -c -e
//! CODE`, `python3 -E script.py`, `node -r ./pre.js`).
//!
//! Sources, per program: bash(1) and dash(1) OPTIONS (`-c` takes its code from the first
//! operand after the options; `-o`/`-O` take the next word; a lone `-` is `--`); fish(1)
//! (`-c`/`--command` and `-C`/`--init-command` take a value); `python3 --help` (CPython's short
//! options `bBc:dEhiIm:OPqRsStuvVW:xX:`, `-c` and `-m` end the options); the Node.js
//! command-line API (`-e`, `-p`, `-r`, `--import`, `--loader`; no clusters but `-pe`; options
//! go on after `-e`, the last one runs; `--test FILES` runs the files); perlrun
//! (`-e`/`-E` code, every one run, `-d:MOD` loads `Devel::MOD`, `-I` glued or separate, `-M`/`-m` glued only, `-i`, `-x`, `-d`, `-D`, `-F`,
//! `-V` take the rest of the word, `-l`, `-0`, `-C` digits); `ruby --help` (`-e` code, `-r` and
//! `-I` glued or separate, `-C` and `-E` take a value); `php -h` (`-r`, `-B`, `-R`, `-E` code,
//! `-f`/`-F` the script, `-c`, `-d`, `-z`, `-t`, `-S` take a value); lua(1) (`-e` code, `-l` a
//! library); osascript(1); `pwsh -Help` (parameters are case-insensitive prefixes:
//! `-c`/`-Command`, `-f`/`-File`, `-e`/`-EncodedCommand`).
//!
//! What cannot be read counts as unknown, never as nothing: an option word that is not literal
//! makes the whole program [`Program::Unknown`], a value that is not literal an unknown load.
//! An option a grammar does not know is read as a flag (the next word may then be taken for the
//! script: a file that is not there is judged as unknown code by §16.2).

/// Where a shell's or interpreter's program comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Program {
    /// A script file: the index of its word among the arguments (`bash x.sh`, `python3 -E
    /// t.py`, `node -- a.js`, `php -f x.php`).
    Script(usize),
    /// Code in the arguments (`-c CODE`, `-cCODE`, `--eval=CODE`, a shell's `-c … CODE`):
    /// its text, `None` when it is not literal.
    Inline(Option<String>),
    /// A module run as the program (`python3 -m a.b`): its name, `None` when not literal.
    Module(Option<String>),
    /// Standard input: no script, `-`, `bash -s`, `php -a`.
    Stdin,
    /// No program from the arguments or the terminal: it prints its version or help and
    /// exits (`python3 -V`), or finds its own files (`node --test` without files: its test
    /// files are not read here, `spec/hooks.md` §16.4).
    NoneGiven,
    /// Only known when it runs: an option word that is not literal (`bash $OPTS`).
    Unknown,
}

/// Code an interpreter loads before its program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Load {
    /// A file named by its path as written (`node -r ./pre.js`, `ruby -r ./x.rb`, php's
    /// `-d auto_prepend_file=x.php`).
    File(String),
    /// A module or library named by name (`perl -MReport`, `ruby -rpre`, `lua -l util`,
    /// `node -r pkg`), looked for in the library directories.
    Module(String),
    /// Code given as text (fish's `-C`/`--init-command`).
    Code(String),
    /// A file of environment variables, named by its path as written (node's `--env-file`,
    /// `--env-file-if-exists`): the variables there that make the program load code
    /// (`NODE_OPTIONS`) are read as if set before it (`spec/hooks.md` §13.3, "Options").
    EnvFile(String),
    /// A load only known when it runs (a value that is not literal, php's `-c INI`, `-z`).
    Unknown,
}

/// A shell's or interpreter's options, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Invocation {
    /// Where its program comes from.
    pub program: Program,
    /// What it loads before the program, in order.
    pub loads: Vec<Load>,
    /// Library directories its options add (`perl -I dir`, `ruby -Idir`), as written.
    pub lib_dirs: Vec<String>,
    /// The index of the argument holding the inline code when it is a word of its own
    /// (`-c CODE`; not `-cCODE`, `--eval=CODE`, or several `-e` joined: `perl -e A -e B`).
    pub code_at: Option<usize>,
    /// Whether it reads the terminal after its program (`python3 -i x.py`, `node -i`,
    /// `lua -i`, `pwsh -NoExit`).
    pub interactive: bool,
}

impl Invocation {
    /// No option read yet: a program with no arguments reads standard input.
    fn reading_stdin() -> Self {
        Invocation {
            program: Program::Stdin,
            loads: Vec::new(),
            lib_dirs: Vec::new(),
            code_at: None,
            interactive: false,
        }
    }
}

mod grammars;
use grammars::{digits, grammar, Codes, Grammar, Takes, Use};

/// The invocation `prog args…`, where `args` are the words after the program, `None` where a
/// word is not literal. `None` when `prog` is not a shell or interpreter known here.
/// `busybox sh …` is read as `sh …`.
pub(crate) fn invocation(prog: &str, args: &[Option<String>]) -> Option<Invocation> {
    if prog == "busybox" {
        let (applet, rest) = args.split_first()?;
        let applet = applet.as_deref()?;
        return (applet != "busybox")
            .then(|| invocation(applet, rest))
            .flatten()
            .map(|inv| shifted(inv, 1));
    }
    let family = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if family == "tsx" && args.first().and_then(|a| a.as_deref()) == Some("watch") {
        // `tsx watch FILE`: the file, run again on each change.
        return invocation(prog, &args[1..]).map(|inv| shifted(inv, 1));
    }
    match family {
        "deno" | "bun" => return Some(runtime(args)),
        "go" => return Some(go(args)),
        "java" => return Some(java(args)),
        "pwsh" | "powershell" => return Some(powershell(args)),
        _ => {}
    }
    let mut inv = read(grammar(prog)?, args);
    // `node inspect FILE` is node's debugger: it reads its commands from the terminal (the
    // Node.js debugger docs), as `python3 -m pdb` and `perl -d` do.
    if matches!(family, "node" | "nodejs") {
        if let Program::Script(k) = inv.program {
            if matches!(
                args.get(k).and_then(|a| a.as_deref()),
                Some("inspect" | "debug")
            ) {
                inv.interactive = true;
            }
        }
    }
    Some(inv)
}

/// What the options read so far leave for after them.
#[derive(Default)]
struct Pending {
    /// A `-s`-like option: the program is standard input.
    stdin: bool,
    /// The code options' code so far (`None`: not literal) and the index of its word when
    /// there is one code option, a word of its own.
    code: Option<(Option<String>, Option<usize>)>,
    /// node's `--test`: the operands are test files it runs.
    test: bool,
}

/// `inv` read from the arguments after the first `by`, its indices made the caller's.
fn shifted(mut inv: Invocation, by: usize) -> Invocation {
    if let Program::Script(i) = &mut inv.program {
        *i += by;
    }
    inv.code_at = inv.code_at.map(|k| k + by);
    inv
}

/// The options of a program with grammar `g`.
fn read(g: &Grammar, args: &[Option<String>]) -> Invocation {
    let mut inv = Invocation::reading_stdin();
    // A shell's `-c`: the code is the first operand after the options.
    let mut code_operand = false;
    let mut st = Pending::default();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let Some(a) = arg.as_deref() else {
            // After `-c`, a word only known when it runs is the code or decides it.
            inv.program = match code_operand {
                true => Program::Inline(None),
                false => Program::Unknown,
            };
            return inv;
        };
        if a == "--" || (g.shell && a == "-") {
            i += 1;
            break;
        }
        if a == "-" {
            inv.program = Program::Stdin;
            return inv;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, glued) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            // Node reads `_` in an option's name as `-` (`--input_type`).
            let dashed = name.replace('_', "-");
            let name = if g.whole_words { dashed.as_str() } else { name };
            let Some(&(_, valued, use_)) = g.long.iter().find(|(n, _, _)| *n == name) else {
                i += 1; // unknown: a flag
                continue;
            };
            let mut at_word = None;
            let value = match (valued, glued) {
                (false, _) => None,
                (true, Some(v)) => Some(Some(v)),
                (true, None) => {
                    i += 1;
                    at_word = Some(i);
                    Some(args.get(i).cloned().flatten())
                }
            };
            i += 1;
            if let Some(done) = apply(g, &mut inv, use_, value, at_word, &mut st) {
                return done;
            }
            continue;
        }
        let plus = g.shell && a.starts_with('+') && a.len() > 1;
        let Some(letters) = a
            .strip_prefix('-')
            .or(if plus { Some(&a[1..]) } else { None })
        else {
            break; // the first operand
        };
        if letters.is_empty() {
            break;
        }
        i += 1;
        // Node reads each short option as a whole word (`-pe` is one option: print and
        // evaluate); `-e1` is no option of its.
        let letters = match (g.whole_words, letters) {
            (true, "pe") => "p",
            (true, l) if l.chars().count() != 1 => continue,
            (_, l) => l,
        };
        let chars: Vec<(usize, char)> = letters.char_indices().collect();
        let mut k = 0;
        while let Some(&(at, c)) = chars.get(k) {
            let Some(&(_, takes, use_)) = g.short.iter().find(|(l, _, _)| *l == c) else {
                k += 1; // an option this grammar does not know: a flag
                continue;
            };
            let rest = &letters[at + c.len_utf8()..];
            // The value, and the index of its word when it is a word of its own.
            let mut at_word = None;
            let value: Option<Option<String>> = match takes {
                Takes::Nothing => None,
                Takes::Rest => Some(Some(rest.to_string())),
                Takes::Digits => {
                    k += digits(c, rest);
                    None
                }
                Takes::RestOrNext if !rest.is_empty() => Some(Some(rest.to_string())),
                Takes::RestOrNext | Takes::Next => {
                    let v = args.get(i).cloned().flatten();
                    at_word = Some(i);
                    i += 1;
                    Some(v)
                }
            };
            if g.shell && c == 'c' {
                code_operand = true;
                k += 1;
                continue;
            }
            if let Some(done) = apply(g, &mut inv, use_, value.clone(), at_word, &mut st) {
                return done;
            }
            if value.is_some() {
                break; // the value took the rest of the word or the next one
            }
            k += 1;
        }
    }
    if let Some((code, at)) = st.code {
        inv.code_at = at;
        inv.program = Program::Inline(code);
        // lua(1): `lua -e STAT script` runs the statement, then the script.
        if g.code == Codes::JoinedThenScript {
            match args.get(i) {
                Some(Some(s)) => inv.loads.push(Load::File(s.clone())),
                Some(None) => inv.loads.push(Load::Unknown),
                None => {}
            }
        }
        return inv;
    }
    if st.test {
        // `node --test FILES…`: each file runs; none: node finds its own test files.
        inv.program = match args.get(i) {
            Some(_) => Program::Script(i),
            None => Program::NoneGiven,
        };
        for a in args.iter().skip(i + 1) {
            inv.loads
                .push(a.as_ref().map_or(Load::Unknown, |f| Load::File(f.clone())));
        }
        return inv;
    }
    inv.program = match args.get(i) {
        _ if code_operand => match args.get(i) {
            Some(code) => {
                inv.code_at = Some(i);
                Program::Inline(code.clone())
            }
            None => Program::Inline(Some(String::new())),
        },
        _ if st.stdin => Program::Stdin,
        Some(_) => Program::Script(i),
        None => Program::Stdin,
    };
    inv
}

/// Applies option use `u` with `value` (`None`: a flag; `Some(None)`: a value that is not
/// literal) to `inv`; `Some` when the option decides the program and ends the options.
/// `at_word` is the index of the value's word when it is a word of its own (not glued). Code
/// options of a program whose code does not end its options (`g.code`) are kept in `st`.
fn apply(
    g: &Grammar,
    inv: &mut Invocation,
    u: Use,
    value: Option<Option<String>>,
    at_word: Option<usize>,
    st: &mut Pending,
) -> Option<Invocation> {
    match u {
        Use::Value => None,
        Use::Interactive => {
            inv.interactive = true;
            None
        }
        Use::Stdin => {
            st.stdin = true;
            None
        }
        Use::Tests => {
            st.test = true;
            None
        }
        Use::Debugger => {
            // perlrun `-d`, `-dt`: the debugger, reading the terminal; `-d:MOD`, `-dt:MOD`:
            // the module `Devel::MOD` loaded first.
            let v = value.flatten();
            match v.as_deref().map(|v| v.strip_prefix('t').unwrap_or(v)) {
                None => inv.loads.push(Load::Unknown),
                Some("") => inv.interactive = true,
                Some(m) => {
                    let m = m.trim_start_matches(':');
                    let m = m.split(['=', ' ']).next().unwrap_or(m);
                    inv.loads.push(Load::Module(format!("Devel::{m}")));
                }
            }
            None
        }
        Use::NoneGiven => {
            inv.program = Program::NoneGiven;
            Some(inv.clone())
        }
        Use::Code if g.code == Codes::EndsOptions => {
            inv.code_at = at_word;
            inv.program = Program::Inline(value.flatten());
            Some(inv.clone())
        }
        Use::Code => {
            let code = value.flatten();
            st.code = Some(match (st.code.take(), g.code) {
                (None, _) | (Some(_), Codes::Last) => (code, at_word),
                // perlrun: "multiple -e commands may be given to build up a multi-line
                // script"; ruby and lua run each in turn.
                (Some((before, _)), _) => (before.zip(code).map(|(a, b)| a + "\n" + &b), None),
            });
            None
        }
        Use::Module => {
            let name = value.flatten();
            // A debugger or a REPL run as a module reads the terminal (`python3 -m pdb x.py`,
            // `-m code`, `-m asyncio`).
            inv.interactive |= matches!(name.as_deref(), Some("pdb" | "code" | "asyncio"));
            inv.program = Program::Module(name);
            Some(inv.clone())
        }
        Use::Script => {
            // A script glued to its option (`php -fx.php`) has no word of its own to judge:
            // unknown.
            inv.program = match (value.flatten(), at_word) {
                (Some(_), Some(at)) => Program::Script(at),
                _ => Program::Unknown,
            };
            Some(inv.clone())
        }
        Use::Lib => {
            match value.flatten() {
                Some(d) => inv.lib_dirs.push(d),
                None => inv.loads.push(Load::Unknown),
            }
            None
        }
        Use::LoadCode => {
            inv.loads
                .push(value.flatten().map_or(Load::Unknown, Load::Code));
            None
        }
        Use::LoadOpaque => {
            inv.loads.push(Load::Unknown);
            None
        }
        Use::EnvFile => {
            inv.loads
                .push(value.flatten().map_or(Load::Unknown, Load::EnvFile));
            None
        }
        Use::LoadFile => {
            inv.loads
                .push(value.flatten().map_or(Load::Unknown, Load::File));
            None
        }
        Use::Load => {
            inv.loads.push(match value.flatten() {
                Some(v) => load(&v),
                None => Load::Unknown,
            });
            None
        }
    }
}

/// What a load option's value names: a path when it starts with `./`, `../` or `/` (node's
/// and ruby's `require` search their library paths for any other name: `node -r
/// dotenv/config` is a package's file), a module name (`Report`, `-Report` for perl's `no`,
/// `Report=a,b`), php's `auto_prepend_file=F`.
fn load(v: &str) -> Load {
    for key in ["auto_prepend_file=", "auto_append_file="] {
        if let Some(f) = v.strip_prefix(key) {
            return Load::File(f.to_string());
        }
    }
    if v.contains('=') && v.split('=').next().is_some_and(|k| k.contains('.')) {
        return Load::Unknown; // another ini directive or ini file
    }
    if v.starts_with("./") || v.starts_with("../") || v.starts_with('/') {
        return Load::File(v.to_string());
    }
    let name = v.trim_start_matches('-');
    let name = name.split(['=', ' ']).next().unwrap_or(name);
    Load::Module(name.to_string())
}

/// deno and bun: `run [options] SCRIPT`, `eval CODE`, `-e CODE`, `repl` or nothing (the
/// REPL), another word (a subcommand or a script path) read as the script; bun's `-r` /
/// `--preload FILE` loaded first.
fn runtime(args: &[Option<String>]) -> Invocation {
    let mut inv = Invocation::reading_stdin();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let Some(a) = a.as_deref() else {
            inv.program = Program::Unknown;
            return inv;
        };
        match a {
            "run" => {}
            "repl" => return inv,
            "eval" | "-e" | "--eval" | "-p" | "--print" => {
                inv.code_at = Some(i + 1);
                inv.program = Program::Inline(args.get(i + 1).cloned().flatten());
                return inv;
            }
            "-r" | "--preload" => {
                i += 1;
                let value = args.get(i).cloned().flatten();
                inv.loads.push(value.as_deref().map_or(Load::Unknown, load));
            }
            "-c" | "--config" | "--import-map" | "--env-file" => i += 1,
            _ if a.starts_with('-') => {}
            _ => {
                inv.program = Program::Script(i);
                return inv;
            }
        }
        i += 1;
    }
    inv
}

/// `go run [build flags] FILES.go…|PACKAGE [arguments…]` (`go help run`, `go help build`):
/// the source files or the package directory are the program (the first the script, the
/// other files loaded with it); `-exec PROG` and `-toolexec PROG` run a program of the
/// command's choosing (unknown code). Another subcommand is not a program given here
/// (`go test` and `go generate` run the package's own code, not read: §16.4).
fn go(args: &[Option<String>]) -> Invocation {
    let mut inv = Invocation::reading_stdin();
    inv.program = Program::NoneGiven;
    if args.first().and_then(|a| a.as_deref()) != Some("run") {
        return inv;
    }
    const VALUED: &[&str] = &[
        "-C",
        "-p",
        "-mod",
        "-modfile",
        "-overlay",
        "-pkgdir",
        "-tags",
        "-ldflags",
        "-gcflags",
        "-asmflags",
        "-buildmode",
        "-compiler",
        "-installsuffix",
        "-o",
        "-coverpkg",
        "-pgo",
        "-covermode",
    ];
    let mut i = 1;
    while let Some(a) = args.get(i) {
        let Some(a) = a.as_deref() else {
            inv.program = Program::Unknown;
            return inv;
        };
        if !a.starts_with('-') {
            break;
        }
        let name = a.split('=').next().unwrap_or(a).trim_start_matches('-');
        if matches!(name, "exec" | "toolexec") {
            inv.loads.push(Load::Unknown);
        }
        let glued = a.contains('=');
        let valued = VALUED.iter().any(|v| v.trim_start_matches('-') == name)
            || matches!(name, "exec" | "toolexec");
        i += if valued && !glued { 2 } else { 1 };
    }
    if args.get(i).is_none() {
        return inv;
    }
    inv.program = Program::Script(i);
    for a in args.iter().skip(i + 1) {
        match a.as_deref() {
            Some(f) if f.ends_with(".go") => inv.loads.push(Load::File(f.to_string())),
            _ => break,
        }
    }
    inv
}

/// `java [options] FILE.java [args…]`, the source-file mode (JEP 330, `java --help`): the
/// file is the program; a class name, `-jar` or `-m` run compiled code, not read here.
fn java(args: &[Option<String>]) -> Invocation {
    let mut inv = Invocation::reading_stdin();
    inv.program = Program::NoneGiven;
    const VALUED: &[&str] = &[
        "-cp",
        "-classpath",
        "--class-path",
        "-p",
        "--module-path",
        "--upgrade-module-path",
        "--add-modules",
        "--enable-native-access",
        "--source",
        "--add-opens",
        "--add-exports",
        "--add-reads",
        "--limit-modules",
    ];
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let Some(a) = a.as_deref() else {
            inv.program = Program::Unknown;
            return inv;
        };
        if matches!(a, "-jar" | "-m" | "--module") || !a.starts_with('-') {
            if a.ends_with(".java") {
                inv.program = Program::Script(i);
            }
            return inv;
        }
        i += if VALUED.contains(&a) { 2 } else { 1 };
    }
    inv
}

/// PowerShell (`pwsh -Help`): parameters are case-insensitive and may be shortened; the
/// first operand is the script (`-File` implied); `-Command` takes the rest as code;
/// `-EncodedCommand` is code only known when decoded; without a program it reads the
/// terminal.
fn powershell(args: &[Option<String>]) -> Invocation {
    let mut inv = Invocation::reading_stdin();
    let is = |a: &str, full: &str, min: usize| {
        a.len() >= min && full.len() >= a.len() && full[..a.len()].eq_ignore_ascii_case(a)
    };
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let Some(a) = a.as_deref() else {
            inv.program = Program::Unknown;
            return inv;
        };
        let Some(p) = a.strip_prefix('-').or_else(|| a.strip_prefix('/')) else {
            inv.program = Program::Script(i);
            return inv;
        };
        if is(p, "command", 1) {
            let rest: Option<Vec<String>> = args[i + 1..].iter().cloned().collect();
            inv.program = match rest {
                Some(r) if r.first().map(String::as_str) == Some("-") => Program::Stdin,
                Some(r) => Program::Inline(Some(r.join(" "))),
                None => Program::Inline(None),
            };
            return inv;
        }
        if is(p, "encodedcommand", 1) || p.eq_ignore_ascii_case("ec") {
            inv.program = Program::Inline(None);
            return inv;
        }
        if is(p, "file", 1) {
            inv.program = match args.get(i + 1) {
                Some(Some(f)) if f == "-" => Program::Stdin,
                Some(Some(_)) => Program::Script(i + 1),
                Some(None) => Program::Unknown,
                None => Program::Stdin,
            };
            return inv;
        }
        if is(p, "noexit", 3) || is(p, "interactive", 1) {
            inv.interactive = true;
        }
        if is(p, "version", 1) || is(p, "help", 1) || p == "?" {
            inv.program = Program::NoneGiven;
            return inv;
        }
        let valued = [
            ("executionpolicy", 2),
            ("workingdirectory", 2),
            ("configurationname", 6),
            ("configurationfile", 14),
            ("outputformat", 1),
            ("inputformat", 2),
            ("windowstyle", 1),
            ("settingsfile", 8),
            ("custompipename", 2),
            ("encodedarguments", 8),
        ];
        if valued.iter().any(|(full, min)| is(p, full, *min)) || p.eq_ignore_ascii_case("ep") {
            i += 1;
        }
        i += 1;
    }
    inv
}

/// The files, relative to the working directory or a library directory, that a module name
/// may be for `prog` (`python3 -m a.b`: `a/__init__.py`, `a/b.py`, `a/b/__init__.py`,
/// `a/b/__main__.py`; perl `A::B`: `A/B.pm`; ruby `x`: `x.rb`; lua `a.b`: `a/b.lua`; node: the
/// name only, a package). Empty for a name that is not a plain module name.
pub(crate) fn module_files(prog: &str, name: &str) -> Vec<String> {
    let family = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let plain = |sep: &str| {
        !name.is_empty()
            && name
                .split(sep)
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
    };
    match family {
        "python" if plain(".") => {
            let parts: Vec<&str> = name.split('.').collect();
            let mut out = Vec::new();
            for n in 1..parts.len() {
                out.push(format!("{}/__init__.py", parts[..n].join("/")));
            }
            let path = parts.join("/");
            out.push(format!("{path}.py"));
            out.push(format!("{path}/__init__.py"));
            out.push(format!("{path}/__main__.py"));
            out
        }
        "perl" if plain("::") => vec![format!("{}.pm", name.replace("::", "/"))],
        "ruby" if plain("/") => vec![format!("{name}.rb"), name.to_string()],
        // A bare name `require` finds on `NODE_PATH` (not a relative path or a package's
        // file, which `load` reads as a path).
        "node" | "nodejs" if plain("/") => vec![
            format!("{name}.js"),
            format!("{name}/index.js"),
            name.to_string(),
        ],
        "lua" | "luajit" if plain(".") => vec![
            format!("{}.lua", name.replace('.', "/")),
            format!("{}/init.lua", name.replace('.', "/")),
        ],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
