//! The option grammars of the shells and interpreters [`super::invocation`] reads, each from
//! the program's own documentation (the sources are listed in the parent module).

/// How an option uses its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Use {
    /// A value that is neither code nor a file of code (`-W error`, `-o pipefail`).
    Value,
    /// The program's code.
    Code,
    /// A module run as the program.
    Module,
    /// A file or module loaded first.
    Load,
    /// A file loaded first, whatever its name (julia's `-L`).
    LoadFile,
    /// Code run first (fish's `-C`).
    LoadCode,
    /// Something loaded first that is not read here (php's ini file, a zend extension).
    LoadOpaque,
    /// A file of environment variables set first (node's `--env-file`: a `NODE_OPTIONS`
    /// there is applied).
    EnvFile,
    /// A library directory.
    Lib,
    /// The script's path.
    Script,
    /// Standard input is the program (`-s`, `php -a`).
    Stdin,
    /// No program is given (`-V`, `--version`, `--help`).
    NoneGiven,
    /// node's `--test`: the operands are test files it runs, none its own search.
    Tests,
    /// perl's `-d`: the debugger (reading the terminal), or with `:MOD` a module loaded first.
    Debugger,
    /// Reads the terminal after the program (`-i`).
    Interactive,
}

/// How a short option takes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Takes {
    /// No value: the next letter is another option.
    Nothing,
    /// The rest of the word, else the next word (getopt's `x:`).
    RestOrNext,
    /// The rest of the word only, possibly empty (perl's `-i.bak`, `-MFoo`).
    Rest,
    /// The digits that follow only (perl's `-l` octal, `-0` octal or `x` and hex, `-C` a
    /// number or a list of its letters).
    Digits,
    /// The next word only (a shell's `-o`).
    Next,
}

/// What a program's code options leave of its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Codes {
    /// The code ends the options (CPython's `-c`, `-m`).
    EndsOptions,
    /// Options go on; the last code option is the code (node's `-e`, `-p`).
    Last,
    /// Options go on; every code option runs, in order (perl's and ruby's `-e`).
    Joined,
    /// As `Joined`, and the first operand is a script run after it (lua(1)).
    JoinedThenScript,
}

/// One program family's option grammar.
pub(super) struct Grammar {
    /// Short options: letter, how it takes a value, what the value is.
    pub short: &'static [(char, Takes, Use)],
    /// Long options (`--name`, `--name=value`): name, whether it takes a value, its use.
    pub long: &'static [(&'static str, bool, Use)],
    /// A shell: `-c` marks the first operand as the code; `+o` is an option; a lone `-` is
    /// `--`.
    pub shell: bool,
    /// No clusters: a short option is the whole word (node).
    pub whole_words: bool,
    /// Whether a code option ends the options.
    pub code: Codes,
}

const SH: Grammar = Grammar {
    short: &[
        ('c', Takes::Nothing, Use::Code),
        ('s', Takes::Nothing, Use::Stdin),
        ('o', Takes::Next, Use::Value),
        ('O', Takes::Next, Use::Value),
    ],
    long: &[
        ("rcfile", true, Use::Value),
        ("init-file", true, Use::Value),
        ("help", false, Use::NoneGiven),
        ("version", false, Use::NoneGiven),
    ],
    shell: true,
    whole_words: false,
    code: Codes::EndsOptions,
};

const FISH: Grammar = Grammar {
    short: &[
        ('c', Takes::RestOrNext, Use::Code),
        ('C', Takes::RestOrNext, Use::LoadCode),
        ('p', Takes::RestOrNext, Use::Value),
        ('d', Takes::RestOrNext, Use::Value),
        ('o', Takes::RestOrNext, Use::Value),
        ('f', Takes::RestOrNext, Use::Value),
        ('v', Takes::Nothing, Use::NoneGiven),
        ('h', Takes::Nothing, Use::NoneGiven),
    ],
    long: &[
        ("command", true, Use::Code),
        ("init-command", true, Use::LoadCode),
        ("profile", true, Use::Value),
        ("profile-startup", true, Use::Value),
        ("debug", true, Use::Value),
        ("debug-output", true, Use::Value),
        ("features", true, Use::Value),
        ("version", false, Use::NoneGiven),
        ("help", false, Use::NoneGiven),
    ],
    shell: false,
    whole_words: false,
    code: Codes::EndsOptions,
};

const PYTHON: Grammar = Grammar {
    short: &[
        ('c', Takes::RestOrNext, Use::Code),
        ('m', Takes::RestOrNext, Use::Module),
        ('W', Takes::RestOrNext, Use::Value),
        ('X', Takes::RestOrNext, Use::Value),
        ('i', Takes::Nothing, Use::Interactive),
        ('V', Takes::Nothing, Use::NoneGiven),
        ('h', Takes::Nothing, Use::NoneGiven),
        ('?', Takes::Nothing, Use::NoneGiven),
    ],
    long: &[
        ("check-hash-based-pycs", true, Use::Value),
        ("version", false, Use::NoneGiven),
        ("help", false, Use::NoneGiven),
        ("help-env", false, Use::NoneGiven),
        ("help-xoptions", false, Use::NoneGiven),
        ("help-all", false, Use::NoneGiven),
    ],
    shell: false,
    whole_words: false,
    code: Codes::EndsOptions,
};

const NODE: Grammar = Grammar {
    short: &[
        ('e', Takes::RestOrNext, Use::Code),
        ('p', Takes::RestOrNext, Use::Code),
        ('r', Takes::RestOrNext, Use::Load),
        ('C', Takes::RestOrNext, Use::Value),
        ('i', Takes::Nothing, Use::Interactive),
        ('v', Takes::Nothing, Use::NoneGiven),
        ('h', Takes::Nothing, Use::NoneGiven),
    ],
    long: &[
        ("eval", true, Use::Code),
        ("print", true, Use::Code),
        ("require", true, Use::Load),
        ("import", true, Use::Load),
        ("loader", true, Use::Load),
        ("experimental-loader", true, Use::Load),
        ("interactive", false, Use::Interactive),
        ("test", false, Use::Tests),
        ("version", false, Use::NoneGiven),
        ("help", false, Use::NoneGiven),
        ("conditions", true, Use::Value),
        ("input-type", true, Use::Value),
        ("title", true, Use::Value),
        ("env-file", true, Use::EnvFile),
        ("inspect-port", true, Use::Value),
        ("redirect-warnings", true, Use::Value),
        ("report-dir", true, Use::Value),
        ("report-directory", true, Use::Value),
        ("report-filename", true, Use::Value),
        ("diagnostic-dir", true, Use::Value),
        ("icu-data-dir", true, Use::Value),
        ("openssl-config", true, Use::Value),
        ("tls-cipher-list", true, Use::Value),
        ("tls-keylog", true, Use::Value),
        ("dns-result-order", true, Use::Value),
        ("unhandled-rejections", true, Use::Value),
        ("heapsnapshot-signal", true, Use::Value),
        ("watch-path", true, Use::Value),
        ("cpu-prof-dir", true, Use::Value),
        ("heap-prof-dir", true, Use::Value),
        ("experimental-policy", true, Use::Value),
        // The rest of `node --help`'s options that take a value (v20; a separate word is
        // their value, as `--title x` is).
        ("allow-fs-read", true, Use::Value),
        ("allow-fs-write", true, Use::Value),
        ("build-snapshot-config", true, Use::Value),
        ("cpu-prof-interval", true, Use::Value),
        ("cpu-prof-name", true, Use::Value),
        ("disable-proto", true, Use::Value),
        ("disable-warning", true, Use::Value),
        ("env-file-if-exists", true, Use::EnvFile),
        ("experimental-default-type", true, Use::Value),
        ("experimental-sea-config", true, Use::Value),
        ("heap-prof-interval", true, Use::Value),
        ("heap-prof-name", true, Use::Value),
        ("heapsnapshot-near-heap-limit", true, Use::Value),
        ("inspect-publish-uid", true, Use::Value),
        ("localstorage-file", true, Use::Value),
        ("max-http-header-size", true, Use::Value),
        (
            "network-family-autoselection-attempt-timeout",
            true,
            Use::Value,
        ),
        ("policy-integrity", true, Use::Value),
        ("report-signal", true, Use::Value),
        ("secure-heap", true, Use::Value),
        ("secure-heap-min", true, Use::Value),
        ("snapshot-blob", true, Use::Value),
        ("test-concurrency", true, Use::Value),
        ("test-name-pattern", true, Use::Value),
        ("test-skip-pattern", true, Use::Value),
        ("test-reporter", true, Use::Value),
        ("test-reporter-destination", true, Use::Value),
        ("test-shard", true, Use::Value),
        ("test-timeout", true, Use::Value),
        ("trace-event-categories", true, Use::Value),
        ("trace-event-file-pattern", true, Use::Value),
        ("trace-require-module", true, Use::Value),
        ("use-largepages", true, Use::Value),
    ],
    shell: false,
    whole_words: true,
    code: Codes::Last,
};

const PERL: Grammar = Grammar {
    short: &[
        ('e', Takes::RestOrNext, Use::Code),
        ('E', Takes::RestOrNext, Use::Code),
        ('I', Takes::RestOrNext, Use::Lib),
        ('M', Takes::Rest, Use::Load),
        ('m', Takes::Rest, Use::Load),
        ('i', Takes::Rest, Use::Value),
        ('x', Takes::Rest, Use::Value),
        ('d', Takes::Rest, Use::Debugger),
        ('D', Takes::Rest, Use::Value),
        ('F', Takes::Rest, Use::Value),
        ('V', Takes::Rest, Use::NoneGiven),
        ('l', Takes::Digits, Use::Value),
        ('0', Takes::Digits, Use::Value),
        ('C', Takes::Digits, Use::Value),
        ('v', Takes::Nothing, Use::NoneGiven),
        ('h', Takes::Nothing, Use::NoneGiven),
    ],
    long: &[
        ("version", false, Use::NoneGiven),
        ("help", false, Use::NoneGiven),
    ],
    shell: false,
    whole_words: false,
    code: Codes::Joined,
};

const RUBY: Grammar = Grammar {
    short: &[
        ('e', Takes::RestOrNext, Use::Code),
        ('r', Takes::RestOrNext, Use::Load),
        ('I', Takes::RestOrNext, Use::Lib),
        ('C', Takes::RestOrNext, Use::Value),
        ('E', Takes::RestOrNext, Use::Value),
        ('0', Takes::Digits, Use::Value),
        ('i', Takes::Rest, Use::Value),
        ('W', Takes::Rest, Use::Value),
        ('x', Takes::Rest, Use::Value),
        ('F', Takes::Rest, Use::Value),
        ('K', Takes::Rest, Use::Value),
        ('h', Takes::Nothing, Use::NoneGiven),
    ],
    long: &[
        ("enable", true, Use::Value),
        ("disable", true, Use::Value),
        ("encoding", true, Use::Value),
        ("external-encoding", true, Use::Value),
        ("internal-encoding", true, Use::Value),
        ("dump", true, Use::Value),
        ("backtrace-limit", true, Use::Value),
        ("version", false, Use::NoneGiven),
        ("help", false, Use::NoneGiven),
    ],
    shell: false,
    whole_words: false,
    code: Codes::Joined,
};

const PHP: Grammar = Grammar {
    short: &[
        ('r', Takes::RestOrNext, Use::Code),
        ('B', Takes::RestOrNext, Use::Code),
        ('R', Takes::RestOrNext, Use::Code),
        ('E', Takes::RestOrNext, Use::Code),
        ('f', Takes::RestOrNext, Use::Script),
        ('F', Takes::RestOrNext, Use::Script),
        ('d', Takes::RestOrNext, Use::Load),
        ('c', Takes::RestOrNext, Use::LoadOpaque),
        ('z', Takes::RestOrNext, Use::LoadOpaque),
        ('t', Takes::RestOrNext, Use::Value),
        ('S', Takes::RestOrNext, Use::Value),
        ('a', Takes::Nothing, Use::Stdin),
        ('v', Takes::Nothing, Use::NoneGiven),
        ('h', Takes::Nothing, Use::NoneGiven),
    ],
    long: &[
        ("php-ini", true, Use::LoadOpaque),
        ("define", true, Use::Load),
        ("zend-extension", true, Use::LoadOpaque),
        ("file", true, Use::Script),
        ("process-code", true, Use::Code),
        ("process-begin", true, Use::Code),
        ("process-end", true, Use::Code),
        ("process-file", true, Use::Script),
        ("interactive", false, Use::Stdin),
        ("version", false, Use::NoneGiven),
        ("help", false, Use::NoneGiven),
    ],
    shell: false,
    whole_words: false,
    code: Codes::Joined,
};

const LUA: Grammar = Grammar {
    short: &[
        ('e', Takes::RestOrNext, Use::Code),
        ('l', Takes::RestOrNext, Use::Load),
        ('i', Takes::Nothing, Use::Interactive),
        ('v', Takes::Nothing, Use::NoneGiven),
    ],
    long: &[],
    shell: false,
    whole_words: false,
    code: Codes::JoinedThenScript,
};

const OSASCRIPT: Grammar = Grammar {
    short: &[
        ('e', Takes::RestOrNext, Use::Code),
        ('l', Takes::RestOrNext, Use::Value),
        ('s', Takes::RestOrNext, Use::Value),
    ],
    long: &[],
    shell: false,
    whole_words: false,
    code: Codes::Joined,
};

/// R's `Rscript [options] FILE | -e EXPR` (Rscript(1)).
const RSCRIPT: Grammar = Grammar {
    short: &[('e', Takes::RestOrNext, Use::Code)],
    long: &[
        ("version", false, Use::NoneGiven),
        ("help", false, Use::NoneGiven),
    ],
    shell: false,
    whole_words: true,
    code: Codes::Joined,
};

/// `julia [switches] -- [programfile] [args…]` (`julia --help`): `-e`/`-E` code, `-L` a file
/// loaded first, `-p`, `-t`, `-J`, `-C` take a value, `-i` the REPL after the program.
const JULIA: Grammar = Grammar {
    short: &[
        ('e', Takes::RestOrNext, Use::Code),
        ('E', Takes::RestOrNext, Use::Code),
        ('L', Takes::RestOrNext, Use::LoadFile),
        ('p', Takes::RestOrNext, Use::Value),
        ('t', Takes::RestOrNext, Use::Value),
        ('J', Takes::RestOrNext, Use::Value),
        ('C', Takes::RestOrNext, Use::Value),
        ('O', Takes::Digits, Use::Value),
        ('g', Takes::Digits, Use::Value),
        ('i', Takes::Nothing, Use::Interactive),
        ('v', Takes::Nothing, Use::NoneGiven),
        ('h', Takes::Nothing, Use::NoneGiven),
    ],
    long: &[
        ("eval", true, Use::Code),
        ("print", true, Use::Code),
        ("load", true, Use::LoadFile),
        ("procs", true, Use::Value),
        ("threads", true, Use::Value),
        ("sysimage", true, Use::Value),
        ("cpu-target", true, Use::Value),
        ("version", false, Use::NoneGiven),
        ("help", false, Use::NoneGiven),
    ],
    shell: false,
    whole_words: true,
    code: Codes::Last,
};

/// Programs that run a source file given as their first operand and read their program from
/// the terminal without one (`swift x.swift`, `elixir x.exs`, `groovy x.groovy`, `scala
/// x.scala`), with `-e` code where they document it (elixir(1), groovy(1)).
const SOURCE_RUNNER: Grammar = Grammar {
    short: &[('e', Takes::RestOrNext, Use::Code)],
    long: &[
        ("eval", true, Use::Code),
        ("version", false, Use::NoneGiven),
        ("help", false, Use::NoneGiven),
    ],
    shell: false,
    whole_words: true,
    code: Codes::EndsOptions,
};

/// The grammar of `prog` (`python3.11` as `python`), `None` for programs that are neither a
/// shell nor an interpreter this module reads (deno, bun and pwsh are read by their own
/// functions).
pub(super) fn grammar(prog: &str) -> Option<&'static Grammar> {
    let family = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match family {
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" => &SH,
        "fish" => &FISH,
        "python" => &PYTHON,
        "node" | "nodejs" => &NODE,
        "perl" => &PERL,
        "ruby" => &RUBY,
        "php" => &PHP,
        "lua" | "luajit" => &LUA,
        "osascript" => &OSASCRIPT,
        // TypeScript runners take node's options (tsx: "all Node.js CLI flags"; ts-node's
        // `-e`, `-p`, `-r` are node's).
        "tsx" | "ts-node" => &NODE,
        "Rscript" => &RSCRIPT,
        "julia" => &JULIA,
        "swift" | "elixir" | "groovy" | "scala" => &SOURCE_RUNNER,
        _ => return None,
    })
}

/// How many characters of `rest` perl's `-l` (octal), `-0` (octal, or `x` and hex) or `-C`
/// (digits, or its letters `IOEioSDALa`) takes as its value.
pub(super) fn digits(option: char, rest: &str) -> usize {
    let octal = |s: &str| s.chars().take_while(|d| d.is_digit(8)).count();
    match option {
        '0' if rest.starts_with(['x', 'X']) => {
            1 + rest[1..]
                .chars()
                .take_while(char::is_ascii_hexdigit)
                .count()
        }
        'C' => rest
            .chars()
            .take_while(|d| d.is_ascii_digit() || "IOEioSDALa".contains(*d))
            .count(),
        _ => octal(rest),
    }
}
