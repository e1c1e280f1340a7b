//! Code a runner runs from the project's files (`spec/hooks.md` §16.2, "Scripts run by name";
//! §13.3, "Runners"): the scripts and tasks a project file defines (`[tool.poetry.scripts]`,
//! `[tool.pdm.scripts]`, hatch's environments' `scripts`, `[tool.rye.scripts]`, pixi's
//! `tasks`, a `Pipfile`'s `[scripts]`, a `deno.json`'s `tasks`), which its target may name
//! (`pdm run test`, `hatch run test:cov`) and which run each other; code it evaluates (a
//! `Gemfile`, `setup.py`, direnv's `.envrc`); the variables it loads (pipenv's `.env`, node's
//! `--env-file`); the sources it builds and runs (`cargo run`: `build.rs` and `src`). Every
//! one is read, whatever the target, as every script of a `package.json` is for `npm test`.
//! A file that is there but cannot be read (not text, past the bound, not parsed) is code not
//! read ([`Script::Unread`]).

use super::scripts::{read_script, read_text, CodeFiles, Script, ScriptKind};
use crate::front::protect::runners::{loaded_dir, runs, Runner, Runs};
use crate::front::protect::shell::Word;
use std::path::{Path, PathBuf};

/// The most source files of a project read for `cargo run` or `dotnet run`, and the most
/// bytes of them; past either the sources are code not read.
const MAX_SOURCES: usize = 2048;
const MAX_SOURCE_BYTES: usize = 32 << 20;

/// The keys of project files whose values are commands or entry points, at any depth
/// (`tool.pdm.scripts`, `tool.hatch.envs.default.scripts`, `tasks`, cargo's
/// `target.<triple>.runner` and `build.rustc-wrapper`).
const COMMAND_KEYS: &[&str] = &[
    "scripts",
    "gui-scripts",
    "tasks",
    "pre-install-commands",
    "post-install-commands",
    "runner",
    "rustc",
    "rustc-wrapper",
    "rustc-workspace-wrapper",
    "linker",
];

/// Keys of a script that load a file of variables (pdm's `env_file`, rye's `env-file`): not
/// read here.
const ENV_FILE_KEYS: &[&str] = &["env_file", "env-file"];

impl CodeFiles<'_> {
    /// The code the runners among `words[..=i]` (its program at `i`, run in `cwd`) run from
    /// the project's files, and a Python script a Python runner is given (`uv run tools/k.py`).
    pub(super) fn run_by_runners(
        &self,
        words: &[&Word],
        i: usize,
        cwd: Option<&Path>,
        path_of: &dyn Fn(&Word) -> Option<PathBuf>,
    ) -> Vec<Script> {
        let mut out = Vec::new();
        for k in 0..=i.min(words.len().saturating_sub(1)) {
            let Some((r, what)) = runs(words, k) else {
                continue;
            };
            if let Some(at) = loaded_dir(words, k) {
                out.extend(envrc(words.get(at).copied(), path_of));
            }
            if let Some(project) = cwd.and_then(|c| project_dir(r, c)) {
                out.extend(project_files(r, &project));
            }
            let target = match what {
                Runs::Program(t) if r.python_scripts => words.get(t),
                _ => None,
            };
            if let Some(w) = target {
                let named = w.literal();
                match named.as_deref() {
                    // A Python program read from standard input: not read here.
                    Some("-") | None => out.push(Script::Unknown),
                    Some(l) if l.ends_with(".py") => out.push(match path_of(w) {
                        Some(p) if p.exists() => read_script(&p, Some(ScriptKind::Code)),
                        _ => Script::Unknown,
                    }),
                    Some(_) => {}
                }
            }
        }
        out
    }
}

/// direnv's `.envrc` for `direnv exec DIR` (DIR's, or its nearest parent's: direnv(1)), read
/// as shell code; a directory only known when it runs is code nobody reads.
fn envrc(dir: Option<&Word>, path_of: &dyn Fn(&Word) -> Option<PathBuf>) -> Vec<Script> {
    let Some(dir) = dir.and_then(path_of) else {
        return vec![Script::Unknown];
    };
    dir.ancestors()
        .take(64)
        .map(|d| d.join(".envrc"))
        .find(|p| p.exists())
        .map(|p| read_script(&p, Some(ScriptKind::Shell)))
        .into_iter()
        .collect()
}

/// The project directory of runner `r` run in `cwd`: the nearest of `cwd` and its parents
/// that holds one of its files, as the tools look for their project.
fn project_dir(r: &Runner, cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .take(64)
        .find(|d| r.files.iter().any(|f| holds(d, f)))
        .map(Path::to_path_buf)
}

/// Whether directory `d` holds `file` (`src/*.rs`: a `src` directory; `*.cs`: a `.cs` file).
fn holds(d: &Path, file: &str) -> bool {
    match file.split_once('*') {
        Some(("", ext)) => std::fs::read_dir(d).is_ok_and(|es| {
            es.flatten()
                .take(4096)
                .any(|e| e.file_name().to_string_lossy().ends_with(ext))
        }),
        Some((under, _)) => d.join(under).is_dir(),
        None => d.join(file).exists(),
    }
}

/// The code of runner `r`'s files in `project`.
fn project_files(r: &Runner, project: &Path) -> Vec<Script> {
    let mut out = Vec::new();
    for file in r.files {
        if let Some((under, ext)) = file.split_once('*') {
            let dir = project.join(under);
            if dir.is_dir() {
                out.push(sources(&dir, ext));
            }
            continue;
        }
        let p = project.join(file);
        if !p.exists() {
            continue;
        }
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        out.push(match name.as_deref().unwrap_or_default() {
            "setup.py" | "Gemfile" => read_script(&p, Some(ScriptKind::Code)),
            n if n == ".env" || n.starts_with(".env.") => env_script(&p),
            n if n.ends_with(".json") || n.ends_with(".jsonc") => json_tasks(&p),
            _ => toml_commands(&p, project),
        });
    }
    out
}

/// The sources under `dir` whose names end in `ext` (recursively; `target`, `bin`, `obj`,
/// `node_modules` and hidden directories left out), as one text of an interpreter's code.
fn sources(dir: &Path, ext: &str) -> Script {
    let mut text = String::new();
    let mut files = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            return Script::Unread(d);
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let skipped = name.starts_with('.')
                || matches!(name.as_str(), "target" | "bin" | "obj" | "node_modules");
            if p.is_dir() && !skipped {
                stack.push(p);
            } else if name.ends_with(ext) && p.is_file() {
                files += 1;
                match read_text(&p) {
                    Some(t) if files <= MAX_SOURCES && text.len() + t.len() <= MAX_SOURCE_BYTES => {
                        text.push_str(&t);
                        text.push('\n');
                    }
                    _ => return Script::Unread(p),
                }
            }
        }
    }
    Script::Interpreted(text)
}

/// The commands a TOML project file defines under [`COMMAND_KEYS`], one a line (an array's
/// items each, and joined as one command), and the project's files of the Python entry
/// points among them (`pkg.mod:func`, pdm's `call`).
fn toml_commands(p: &Path, project: &Path) -> Script {
    let Some(v) = read_text(p).and_then(|t| t.parse::<toml::Table>().ok()) else {
        return Script::Unread(p.to_path_buf());
    };
    let mut lines = Vec::new();
    let mut unknown = false;
    collect(&toml::Value::Table(v), false, &mut lines, &mut unknown);
    if unknown {
        return Script::Unknown;
    }
    let mut code = String::new();
    for l in &lines {
        if let Some(f) = entry_point(l).and_then(|m| module_file(project, m)) {
            match read_text(&f) {
                Some(t) => code.push_str(&t),
                None => return Script::Unread(f),
            }
        }
    }
    if !code.is_empty() {
        // An entry point's module is Python; its path strings are what the analyses read.
        lines.push(format!(
            "python3 -c {}",
            shlex::try_quote(&code).unwrap_or_default()
        ));
    }
    Script::Shell(lines.join("\n"))
}

/// The strings under [`COMMAND_KEYS`] of `v` (`under`: inside one already).
fn collect(v: &toml::Value, under: bool, out: &mut Vec<String>, unknown: &mut bool) {
    match v {
        toml::Value::String(s) if under => out.push(s.clone()),
        toml::Value::Array(items) => {
            let strings: Vec<&str> = items.iter().filter_map(|i| i.as_str()).collect();
            if under && strings.len() == items.len() && !items.is_empty() {
                let quoted: Vec<String> = strings
                    .iter()
                    .filter_map(|s| shlex::try_quote(s).ok().map(|q| q.into_owned()))
                    .collect();
                out.push(quoted.join(" "));
            }
            for i in items {
                collect(i, under, out, unknown);
            }
        }
        toml::Value::Table(t) => {
            for (k, v) in t {
                *unknown |= under && ENV_FILE_KEYS.contains(&k.as_str());
                collect(v, under || COMMAND_KEYS.contains(&k.as_str()), out, unknown);
            }
        }
        _ => {}
    }
}

/// The module of a Python entry point `pkg.mod:func` (or `pkg.mod:func(args)`, pdm's `call`).
fn entry_point(s: &str) -> Option<&str> {
    let (m, f) = s.split_once(':')?;
    let ident = |x: &str| {
        !x.is_empty()
            && x.split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    };
    let f = f.split('(').next().unwrap_or(f);
    (ident(m) && ident(f)).then_some(m)
}

/// The project's file of Python module `m` (`pkg/mod.py`, `pkg/mod/__init__.py`, under the
/// project or its `src`); `None` for an installed module, which is not read (§16.4).
fn module_file(project: &Path, m: &str) -> Option<PathBuf> {
    let rel = m.replace('.', "/");
    ["", "src/"]
        .iter()
        .flat_map(|base| {
            [
                project.join(format!("{base}{rel}.py")),
                project.join(format!("{base}{rel}/__init__.py")),
            ]
        })
        .find(|p| p.is_file())
}

/// A `deno.json`'s `tasks` (a command, or an object with its `command`) and a
/// `package.json`'s `scripts`, as shell commands.
fn json_tasks(p: &Path) -> Script {
    let Some(v) = read_text(p).and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    else {
        return Script::Unread(p.to_path_buf());
    };
    let mut lines = Vec::new();
    for key in ["tasks", "scripts"] {
        let Some(tasks) = v.get(key).and_then(|t| t.as_object()) else {
            continue;
        };
        for t in tasks.values() {
            let cmd = t
                .as_str()
                .or_else(|| t.get("command").and_then(|c| c.as_str()));
            lines.extend(cmd.map(str::to_string));
        }
    }
    Script::Shell(lines.join("\n"))
}

/// A file of variables (`KEY=VALUE` lines, `export ` and `#` comments allowed, values
/// quoted or not: the Node.js CLI `--env-file`, dotenv) as the shell command that sets them
/// before a program that does nothing, so that a variable that makes a program load code
/// (`NODE_OPTIONS`, `BASH_ENV`, `PERL5OPT`…) is read as one set in the command (§16.2,
/// "Handed commands"). A file that is not there is code nobody reads: it may be by the time
/// the program runs.
pub(super) fn env_script(p: &Path) -> Script {
    if !p.exists() {
        return Script::Unknown;
    }
    let Some(text) = read_text(p) else {
        return Script::Unread(p.to_path_buf());
    };
    // The file is read by the program (attack review 45: `pipenv run mytool` handed the
    // variables of a secret `.env` to a program not known to stay local): named as read.
    let read = format!("< '{}'", p.display().to_string().replace('\'', "'\\''"));
    match env_assignments(&text) {
        Some(a) => Script::Shell(format!("{} : {read}", a.join(" "))),
        None => Script::Unknown,
    }
}

/// The assignments of an env file, quoted for the shell; `None` when a value is not read
/// here (a quote not closed on its line: a value of several lines).
fn env_assignments(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if !crate::front::protect::simple::is_assignment(&format!("{name}=")) {
            continue;
        }
        let value = value.trim();
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'' | '`')) => {
                let rest = &value[1..];
                rest[..rest.find(q)?].to_string()
            }
            _ => value.split(" #").next().unwrap_or(value).trim().to_string(),
        };
        let quoted = shlex::try_quote(&value).ok()?;
        out.push(format!("{name}={quoted}"));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_files_are_read_as_assignments() {
        let got = env_assignments("# c\nexport A=1\nNODE_OPTIONS=\"--require ./p.js\"\nB='x y' \n");
        assert_eq!(
            got.as_deref(),
            Some(
                &[
                    "A=1".to_string(),
                    "NODE_OPTIONS='--require ./p.js'".to_string(),
                    "B='x y'".to_string()
                ][..]
            )
        );
        assert_eq!(env_assignments("A=\"x\ny\"\n"), None);
    }

    /// A file of variables that is not there may be by the time the program runs: code
    /// nobody reads; one that cannot be read whole is code not read.
    #[test]
    fn an_env_file_not_there_or_not_read_is_unknown_code() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            env_script(&dir.path().join("absent.env")),
            Script::Unknown
        ));
        let multi = dir.path().join("multi.env");
        std::fs::write(&multi, "NODE_OPTIONS=\"--require\n./p.js\"\n").unwrap();
        assert!(matches!(env_script(&multi), Script::Unknown));
        let bin = dir.path().join("bin.env");
        std::fs::write(&bin, b"A=\0\n").unwrap();
        assert!(matches!(env_script(&bin), Script::Unread(_)));
        let ok = dir.path().join("ok.env");
        std::fs::write(&ok, "A=1\n").unwrap();
        let read = format!("A=1 : < '{}'", ok.display());
        assert!(matches!(env_script(&ok), Script::Shell(s) if s == read));
    }

    #[test]
    fn entry_points_name_modules() {
        assert_eq!(entry_point("tools.k:main"), Some("tools.k"));
        assert_eq!(entry_point("pkg:run(1)"), Some("pkg"));
        assert_eq!(entry_point("pytest -x"), None);
        assert_eq!(entry_point("http://x"), None);
    }
}
