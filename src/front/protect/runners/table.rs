//! The table of runners ([`super::Runner`]): each program, its subcommand, the options its
//! documentation lists (named in `doc`) and what it runs. An option not listed is unknown.

use super::{Runner, Target};

/// `npm exec`, which `npx` is (`-c`/`--call` hands a command: read by `super::super::handed`).
const NPM_EXEC: Runner = Runner {
    program: "npm",
    sub: &["exec"],
    valued: &["-p", "--package", "-c", "--call", "-w", "--workspace"],
    flags: &[
        "-y",
        "--yes",
        "--no",
        "-q",
        "--quiet",
        "--workspaces",
        "--include-workspace-root",
        "--prefer-offline",
        "--prefer-online",
        "--offline",
    ],
    doc: "docs.npmjs.com/cli/v10/commands/npm-exec",
    ..PROGRAM
};

/// `mise exec`: the tools before `--`, the program after.
const MISE_EXEC: Runner = Runner {
    program: "mise",
    sub: &["exec"],
    valued: &["-j", "--jobs"],
    flags: &["--raw", "-q", "--quiet", "-v", "--verbose", "-y", "--yes"],
    target: Target::AfterDashDash,
    doc: "mise.jdx.dev/cli/exec.html (`-c`/`--command` runs a shell: unknown)",
    ..PROGRAM
};

/// conda's options naming the environment, which mamba and micromamba share.
const CONDA_ENVIRONMENT: &[&str] = &["-n", "--name", "-p", "--prefix"];

/// What an entry leaves out: a program named by its first operand, no option of its own, no
/// project file, no Python script.
const PROGRAM: Runner = Runner {
    program: "",
    sub: &[],
    valued: &[],
    flags: &[],
    target: Target::Program,
    files: &[],
    python_scripts: false,
    doc: "",
};

/// The runners (module docs). An option not listed is unknown ([`Runs::Unknown`]).
pub(crate) const RUNNERS: &[Runner] = &[
    Runner {
        program: "uv",
        sub: &["run"],
        valued: &[
            "--extra",
            "--no-extra",
            "--group",
            "--no-group",
            "--only-group",
            "--with",
            "--with-editable",
            "--with-requirements",
            "--package",
            "-p",
            "--python",
            "--index",
            "--default-index",
            "--index-url",
            "--extra-index-url",
            "--find-links",
            "-f",
            "--color",
            "--resolution",
            "--prerelease",
            "--link-mode",
            "--python-platform",
        ],
        flags: &[
            "--all-extras",
            "--no-dev",
            "--dev",
            "--only-dev",
            "--all-groups",
            "--no-default-groups",
            "--no-editable",
            "--exact",
            "--no-env-file",
            "--isolated",
            "--active",
            "--no-active",
            "--no-sync",
            "--locked",
            "--frozen",
            "-s",
            "--script",
            "--all-packages",
            "--no-project",
            "-q",
            "--quiet",
            "-v",
            "--verbose",
            "--offline",
            "--no-cache",
            "-n",
            "--no-progress",
            "--native-tls",
            "--no-config",
            "--managed-python",
            "--no-managed-python",
            "--refresh",
            "--upgrade",
            "-U",
            "--compile-bytecode",
            "--no-build-isolation",
        ],
        files: &["pyproject.toml", "setup.py"],
        python_scripts: true,
        doc: "`uv run --help`, docs.astral.sh/uv/reference/cli/#uv-run (uv 0.8)",
        ..PROGRAM
    },
    Runner {
        program: "uvx",
        sub: &[],
        valued: &[
            "--from",
            "--with",
            "--with-editable",
            "--with-requirements",
            "-p",
            "--python",
            "--index",
            "--default-index",
            "--index-url",
            "--extra-index-url",
            "--color",
        ],
        flags: &[
            "-q",
            "--quiet",
            "-v",
            "--verbose",
            "--isolated",
            "--offline",
            "--no-cache",
            "-n",
            "--refresh",
            "--upgrade",
            "-U",
            "--no-progress",
            "--native-tls",
        ],
        doc: "`uvx --help` (`uv tool run`), docs.astral.sh/uv/reference/cli/#uv-tool-run",
        ..PROGRAM
    },
    Runner {
        program: "poetry",
        sub: &["run"],
        flags: &[
            "-q",
            "--quiet",
            "-v",
            "-vv",
            "-vvv",
            "--verbose",
            "-n",
            "--no-interaction",
            "--ansi",
            "--no-ansi",
            "--no-plugins",
            "--no-cache",
        ],
        files: &["pyproject.toml"],
        python_scripts: true,
        doc: "python-poetry.org/docs/cli/#run and #global-options (poetry 2)",
        ..PROGRAM
    },
    Runner {
        program: "pipenv",
        sub: &["run"],
        valued: &["--python"],
        flags: &["-q", "--quiet", "-v", "--verbose", "--system"],
        files: &["Pipfile", ".env"],
        python_scripts: true,
        doc: "pipenv.pypa.io/en/latest/cli.html#run, #scripts; it loads `.env` (pipenv docs, \
              \"Automatic Loading of .env\")",
        ..PROGRAM
    },
    Runner {
        program: "pdm",
        sub: &["run"],
        flags: &[
            "-q",
            "--quiet",
            "-v",
            "--verbose",
            "-s",
            "--site-packages",
            "--recreate",
        ],
        files: &["pyproject.toml"],
        python_scripts: true,
        doc: "pdm-project.org/latest/reference/cli/#run, /usage/scripts/",
        ..PROGRAM
    },
    Runner {
        program: "hatch",
        sub: &["run"],
        flags: &["-q", "--quiet", "-v", "--verbose"],
        files: &["pyproject.toml", "hatch.toml"],
        python_scripts: true,
        doc: "hatch.pypa.io/latest/cli/reference/#hatch-run, /config/environment/overview/#scripts",
        ..PROGRAM
    },
    Runner {
        program: "rye",
        sub: &["run"],
        flags: &["-q", "--quiet", "-v", "--verbose"],
        files: &["pyproject.toml"],
        python_scripts: true,
        doc: "rye.astral.sh/guide/commands/run/, /guide/pyproject/#toolryescripts",
        ..PROGRAM
    },
    Runner {
        program: "pixi",
        sub: &["run"],
        valued: &["-e", "--environment", "--color"],
        flags: &[
            "-q",
            "--quiet",
            "-v",
            "--verbose",
            "--frozen",
            "--locked",
            "--clean-env",
            "--skip-deps",
            "--no-progress",
        ],
        files: &["pixi.toml", "pyproject.toml"],
        doc: "pixi.sh/latest/reference/cli/pixi/run/, /workspace/advanced_tasks/",
        ..PROGRAM
    },
    Runner {
        program: "conda",
        sub: &["run"],
        valued: CONDA_ENVIRONMENT,
        flags: &[
            "-v",
            "--verbose",
            "--dev",
            "--debug-wrapper-scripts",
            "--no-capture-output",
            "--live-stream",
        ],
        doc: "docs.conda.io/projects/conda/en/stable/commands/run.html",
        ..PROGRAM
    },
    Runner {
        program: "mamba",
        sub: &["run"],
        valued: CONDA_ENVIRONMENT,
        flags: &["-v", "--verbose", "--no-capture-output", "--live-stream"],
        doc: "conda's `run` (mamba.readthedocs.io: mamba passes `run` to conda)",
        ..PROGRAM
    },
    Runner {
        program: "micromamba",
        sub: &["run"],
        valued: CONDA_ENVIRONMENT,
        flags: &["-q", "--quiet", "-v", "--verbose"],
        doc: "`micromamba run --help`, mamba.readthedocs.io/en/latest/user_guide/micromamba.html",
        ..PROGRAM
    },
    Runner {
        program: "npx",
        sub: &[],
        doc: "docs.npmjs.com/cli/v10/commands/npx",
        ..NPM_EXEC
    },
    NPM_EXEC,
    Runner {
        sub: &["x"],
        doc: "docs.npmjs.com/cli/v10/commands/npm-exec (`npm x` is `npm exec`)",
        ..NPM_EXEC
    },
    Runner {
        program: "pnpm",
        sub: &["exec"],
        valued: &["--filter", "--resume-from"],
        flags: &[
            "-r",
            "--recursive",
            "--parallel",
            "--no-reporter-hide-prefix",
            "--report-summary",
            "-s",
            "--silent",
        ],
        doc: "pnpm.io/cli/exec (`-c`/`--shell-mode` runs a shell: unknown)",
        ..PROGRAM
    },
    Runner {
        program: "pnpm",
        sub: &["dlx"],
        valued: &["--package"],
        flags: &["-s", "--silent"],
        doc: "pnpm.io/cli/dlx (`-c`/`--shell-mode` runs a shell: unknown)",
        ..PROGRAM
    },
    Runner {
        program: "yarn",
        sub: &["exec"],
        doc: "classic.yarnpkg.com/en/docs/cli/exec, yarnpkg.com/cli/exec",
        ..PROGRAM
    },
    Runner {
        program: "yarn",
        sub: &["node"],
        target: Target::Sub,
        doc: "yarnpkg.com/cli/node (its arguments are node's)",
        ..PROGRAM
    },
    Runner {
        program: "bunx",
        sub: &[],
        valued: &["-p", "--package"],
        flags: &["--bun"],
        doc: "bun.sh/docs/cli/bunx",
        // Bun loads `.env` and `.env.local` into every process (bun.sh/docs/runtime/env).
        files: &[".env", ".env.local"],
        ..PROGRAM
    },
    Runner {
        program: "bun",
        sub: &["x"],
        valued: &["-p", "--package"],
        flags: &["--bun"],
        doc: "bun.sh/docs/cli/bunx (`bun x` is `bunx`)",
        // Bun loads `.env` and `.env.local` into every process (bun.sh/docs/runtime/env).
        files: &[".env", ".env.local"],
        ..PROGRAM
    },
    MISE_EXEC,
    Runner {
        sub: &["x"],
        doc: "mise.jdx.dev/cli/exec.html (`mise x` is `mise exec`)",
        ..MISE_EXEC
    },
    Runner {
        program: "asdf",
        sub: &["exec"],
        doc: "asdf-vm.com/manage/commands.html (`asdf exec <command> [args...]`)",
        ..PROGRAM
    },
    Runner {
        program: "direnv",
        sub: &["exec"],
        target: Target::Dir,
        doc: "direnv(1): `direnv exec DIR COMMAND [...ARGS]` loads DIR's `.envrc` (bash code)",
        ..PROGRAM
    },
    Runner {
        program: "bundle",
        sub: &["exec"],
        flags: &["--keep-file-descriptors"],
        files: &["Gemfile"],
        doc: "bundler.io/man/bundle-exec.1.html; the Gemfile is Ruby code bundler evaluates",
        ..PROGRAM
    },
    Runner {
        program: "rbenv",
        sub: &["exec"],
        doc: "github.com/rbenv/rbenv#rbenv-exec",
        ..PROGRAM
    },
    Runner {
        program: "pyenv",
        sub: &["exec"],
        doc: "github.com/pyenv/pyenv COMMANDS.md#pyenv-exec",
        ..PROGRAM
    },
    Runner {
        program: "cargo",
        sub: &["run"],
        // Not `--manifest-path`, `-C DIR` (another project) or `--config` (a setting may name
        // a wrapper or runner program): unknown.
        valued: &[
            "-p",
            "--package",
            "--bin",
            "--example",
            "-F",
            "--features",
            "--target",
            "--target-dir",
            "--profile",
            "-j",
            "--jobs",
            "--color",
            "--message-format",
        ],
        flags: &[
            "-r",
            "--release",
            "--all-features",
            "--no-default-features",
            "-q",
            "--quiet",
            "-v",
            "-vv",
            "--verbose",
            "--locked",
            "--offline",
            "--frozen",
            "--ignore-rust-version",
            "--timings",
            "--keep-going",
        ],
        target: Target::Project,
        files: &[
            "build.rs",
            "src/*.rs",
            "examples/*.rs",
            ".cargo/config.toml",
            ".cargo/config",
        ],
        doc: "doc.rust-lang.org/cargo/commands/cargo-run.html; build scripts: \
              doc.rust-lang.org/cargo/reference/build-scripts.html",
        ..PROGRAM
    },
    Runner {
        program: "dotnet",
        sub: &["run"],
        // Not `-p`/`--project` (another project): unknown.
        valued: &[
            "-c",
            "--configuration",
            "-f",
            "--framework",
            "-r",
            "--runtime",
            "-a",
            "--arch",
            "--os",
            "--launch-profile",
            "-v",
            "--verbosity",
        ],
        flags: &[
            "--no-build",
            "--no-restore",
            "--no-launch-profile",
            "--no-dependencies",
            "--force",
            "--interactive",
        ],
        target: Target::Project,
        files: &[
            "*.cs",
            "*.csproj",
            "*.fs",
            "*.fsproj",
            "*.props",
            "*.targets",
        ],
        doc: "learn.microsoft.com/dotnet/core/tools/dotnet-run; MSBuild's `Exec` task runs \
              commands of the project file",
        ..PROGRAM
    },
    Runner {
        program: "deno",
        sub: &["task"],
        flags: &["-q", "--quiet"],
        files: &["deno.json", "deno.jsonc", "package.json"],
        doc: "docs.deno.com/runtime/reference/cli/task/",
        ..PROGRAM
    },
    Runner {
        program: "nix",
        sub: &["run"],
        target: Target::Unknown,
        doc: "nix3-run(1): runs a flake's app, code of the flake or fetched",
        ..PROGRAM
    },
    Runner {
        program: "nix",
        sub: &["develop"],
        target: Target::Unknown,
        doc: "nix3-develop(1): runs the flake's `shellHook` before `-c CMD`",
        ..PROGRAM
    },
    Runner {
        program: "nix",
        sub: &["shell"],
        target: Target::Unknown,
        doc: "nix3-shell(1): builds or fetches the packages it names",
        ..PROGRAM
    },
    Runner {
        program: "nix-shell",
        sub: &[],
        target: Target::Unknown,
        doc: "nix-shell(1): evaluates `shell.nix` and runs its `shellHook` before `--run CMD`",
        ..PROGRAM
    },
];
