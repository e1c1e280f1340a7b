//! The files of code a shell or interpreter runs (`spec/hooks.md` §16.2, "Scripts run by name";
//! §13.3, "Options", for how its options are read): its script, the module it runs (`python3 -m
//! tools.report` runs `tools/report.py`), and the files and modules it loads before its program
//! (`node -r ./pre.js`, `ruby -r ./x.rb`, `perl -Itools -MReport`, php's `auto_prepend_file`).
//! Each is read as the code it is; one named but not there, or named by a word only the run
//! knows, is code nobody can see ([`Script::Unknown`]). A module found nowhere in the project's
//! directories is an installed one (`python3 -m pytest`), not read here, as an installed
//! program is not (§16.4).

use super::scripts::{read_script, Script, ScriptKind};
use crate::front::protect::invocation::{invocation, module_files, Load, Program};
use crate::front::protect::shell::Word;
use std::path::{Path, PathBuf};

/// The library path variables an interpreter searches for modules before its own
/// directories (python(1) `PYTHONPATH`, perlrun `PERL5LIB`/`PERLLIB`, ruby(1) `RUBYLIB`, the
/// Node.js CLI `NODE_PATH`): colon-separated directories.
const LIBRARY_PATHS: &[(&str, &str)] = &[
    ("python", "PYTHONPATH"),
    ("perl", "PERL5LIB"),
    ("perl", "PERLLIB"),
    ("ruby", "RUBYLIB"),
    ("node", "NODE_PATH"),
];

/// The scripts `prog rest…` runs when `prog` is a shell, `source`/`.`, or an interpreter
/// ([`invocation`]), after the assignments and wrappers `before` (a library path set there is
/// searched for modules); `path_of` resolves a word to a path as the command's working
/// directory `cwd` does.
pub(super) fn interpreter_scripts(
    prog: &str,
    shell: bool,
    before: &[&Word],
    rest: &[&Word],
    stdin: Option<&Word>,
    cwd: Option<&Path>,
    path_of: &dyn Fn(&Word) -> Option<PathBuf>,
) -> Vec<Script> {
    let kind = if shell {
        ScriptKind::Shell
    } else {
        ScriptKind::Code
    };
    let file = |p: Option<PathBuf>| match p {
        Some(p) if p.exists() => read_script(&p, Some(kind)),
        // A script that is not there when the call is decided may be when it runs (a job
        // started now, the file written after); a name only the run knows may be any file.
        _ => Script::Unknown,
    };
    if matches!(prog, "source" | ".") {
        return rest.first().map(|w| file(path_of(w))).into_iter().collect();
    }
    let lits: Vec<Option<String>> = rest.iter().map(|w| w.literal()).collect();
    let Some(inv) = invocation(prog, &lits) else {
        return Vec::new();
    };
    let at = |s: &str| {
        let p = Path::new(s);
        match cwd {
            _ if p.is_absolute() => Some(p.to_path_buf()),
            Some(c) => Some(c.join(p)),
            None => None,
        }
    };
    // Where modules are looked for: the library directories the options add, and for Python
    // (`-m` puts the working directory first on `sys.path`) and Lua (`./?.lua`) the working
    // directory.
    let family = prog.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let family = if family == "nodejs" { "node" } else { family };
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut unknown_dirs = false;
    for w in before {
        let text = w.squeezed();
        let Some((name, value)) = text.split_once('=') else {
            continue;
        };
        if !LIBRARY_PATHS.contains(&(family, name)) {
            continue;
        }
        match w.literal() {
            Some(_) => dirs.extend(value.split(':').filter(|d| !d.is_empty()).filter_map(at)),
            None => unknown_dirs = true,
        }
    }
    dirs.extend(inv.lib_dirs.iter().filter_map(|d| at(d)));
    if matches!(family, "python" | "lua" | "luajit") {
        dirs.extend(cwd.map(Path::to_path_buf));
    }
    let modules = |name: &str| -> Vec<Script> {
        module_files(prog, name)
            .iter()
            .flat_map(|f| dirs.iter().map(move |d| d.join(f)))
            .filter(|p| p.exists())
            .map(|p| read_script(&p, Some(ScriptKind::Code)))
            .collect()
    };
    let mut out = Vec::new();
    if unknown_dirs {
        // Modules are looked for where only the run knows.
        out.push(Script::Unknown);
    }
    for load in &inv.loads {
        match load {
            Load::File(f) => out.push(match loaded_file(family, at(f)) {
                Some(p) => read_script(&p, Some(ScriptKind::Code)),
                None => Script::Unknown,
            }),
            Load::Module(m) => out.extend(modules(m)),
            Load::Code(c) => out.push(Script::Shell(c.clone())),
            // node's `--env-file`: the `NODE_OPTIONS` there (attack review 42).
            Load::EnvFile(f) => out.push(match at(f) {
                Some(p) => super::projects::env_script(&p),
                None => Script::Unknown,
            }),
            Load::Unknown => out.push(Script::Unknown),
        }
    }
    match inv.program {
        // `go run .`: the package's source files.
        Program::Script(i) if family == "go" => match rest.get(i).and_then(|w| path_of(w)) {
            Some(dir) if dir.is_dir() => out.extend(go_package(&dir)),
            p => out.push(file(p)),
        },
        // Its program on standard input, redirected from a file (`sh -s < x.sh`, `python3 -
        // < x.py`): that file.
        Program::Script(i) if lits.get(i).is_some_and(|l| l.as_deref() == Some("-")) => {
            out.extend(stdin.map(|w| file(path_of(w))))
        }
        Program::Stdin => out.extend(stdin.map(|w| file(path_of(w)))),
        Program::Script(i) => out.push(file(rest.get(i).and_then(|w| path_of(w)))),
        Program::Module(Some(m)) => out.extend(modules(&m)),
        Program::Module(None) | Program::Unknown => out.push(Script::Unknown),
        Program::Inline(_) | Program::NoneGiven => {}
    }
    out
}

/// The most source files of one Go package read; a package with more is code not read.
const MAX_PACKAGE_FILES: usize = 256;

/// The `.go` files of the package in `dir` (its `_test.go` files are not built by `go run`),
/// each read as an interpreter's code; a directory that cannot be listed, or holds more than
/// [`MAX_PACKAGE_FILES`], is code not read ([`Script::Unread`]).
fn go_package(dir: &Path) -> Vec<Script> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![Script::Unread(dir.to_path_buf())];
    };
    let files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "go") && !p.to_string_lossy().ends_with("_test.go")
        })
        .take(MAX_PACKAGE_FILES + 1)
        .collect();
    if files.len() > MAX_PACKAGE_FILES {
        return vec![Script::Unread(dir.to_path_buf())];
    }
    files
        .iter()
        .map(|p| read_script(p, Some(ScriptKind::Code)))
        .collect()
}

/// The file a load of path `p` reads: `p` itself, or with the extensions the loader adds
/// (node's `require`: `.js`, `.cjs`, `.mjs`, `.json`, `index.js`; ruby's `.rb`); `None` when
/// none is there.
fn loaded_file(family: &str, p: Option<PathBuf>) -> Option<PathBuf> {
    let p = p?;
    let tries: &[&str] = match family {
        "node" | "nodejs" | "deno" | "bun" => &[".js", ".cjs", ".mjs", ".json", "/index.js"],
        "ruby" => &[".rb"],
        _ => &[],
    };
    std::iter::once(p.clone())
        .chain(
            tries
                .iter()
                .map(|t| PathBuf::from(format!("{}{t}", p.display()))),
        )
        .find(|c| c.is_file())
}
