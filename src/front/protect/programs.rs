//! The programs the screen of shell commands knows by what they do with their arguments
//! (`spec/hooks.md` §13.3): read or write files, destroy, read trees, search, run commands.

/// Programs that read or write the files they are given (for arguments whose value is
/// unknown: `cat $F`, `xargs rm`).
pub(super) const FILE_PROGRAMS: &[&str] = &[
    "cat",
    "tac",
    "nl",
    "head",
    "tail",
    "less",
    "more",
    "cp",
    "mv",
    "rm",
    "ln",
    "chmod",
    "chown",
    "chgrp",
    "dd",
    "tee",
    "sed",
    "awk",
    "gawk",
    "perl",
    "python",
    "python3",
    "ruby",
    "node",
    "sqlite3",
    "xxd",
    "od",
    "hexdump",
    "base64",
    "strings",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "openssl",
    "scp",
    "rsync",
    "install",
    "truncate",
    "shred",
    "vi",
    "vim",
    "nano",
    "emacs",
    "jq",
    "yq",
    "source",
    ".",
    "sh",
    "bash",
    "zsh",
    "dash",
    "file",
    "stat",
    "wc",
    "sort",
    "uniq",
    "cut",
    "diff",
    "cmp",
    "patch",
    "curl",
    "wget",
    "nc",
    "socat",
    "touch",
    "mkdir",
    "unlink",
    "readlink",
    "realpath",
    "split",
    "csplit",
    "iconv",
    "gpg",
    "age",
    "ssh-keygen",
    "mkfifo",
    "lsof",
    "fuser",
];

/// Programs that move, delete, relink or re-own what they are given, directories included: a
/// directory that holds any protected file is protected from them.
pub(super) const DESTROY_PROGRAMS: &[&str] = &[
    "rm", "rmdir", "mv", "chmod", "chown", "chgrp", "chattr", "ln", "shred", "mount", "umount",
    "bindfs", "setfacl", "rsync",
];

/// Words of a tool's name (split at `_`, `-`, `.` and lower-to-upper case changes, compared in
/// lower case) that say it moves, deletes or re-owns what it is given, as
/// [`DESTROY_PROGRAMS`] do in a shell, or rewrites a working tree, as the [`GIT_TREE`]
/// subcommands do: a directory that holds any protected file is protected from such a tool
/// (`mcp__fs__move_file`, `delete_directory`, `renameFile`, `mcp__git__git_checkout`; attack
/// review 54).
pub(super) const DESTROY_TOOL_WORDS: &[&str] = &[
    "move", "mv", "rename", "delete", "del", "remove", "rm", "rmdir", "unlink", "trash", "erase",
    "purge", "destroy", "wipe", "shred", "chmod", "chown", "mount", "stash", "reset", "restore",
    "checkout", "clean", "switch",
];

/// Whether the tool named `bare` (without its `mcp__<server>__` prefix) moves, deletes or
/// re-owns what it is given, by the words of its name ([`DESTROY_TOOL_WORDS`]).
pub(super) fn destroys_by_name(bare: &str) -> bool {
    let mut words: Vec<String> = vec![String::new()];
    let mut prev_lower = false;
    for c in bare.chars() {
        if !c.is_alphanumeric() {
            words.push(String::new());
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            words.push(String::new());
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        if let Some(w) = words.last_mut() {
            w.extend(c.to_lowercase());
        }
    }
    words
        .iter()
        .any(|w| DESTROY_TOOL_WORDS.contains(&w.as_str()))
}

/// Programs that read directories recursively (search, copy, archive): a directory that
/// holds the signing key is protected from them.
pub(super) const READ_TREE_PROGRAMS: &[&str] = &[
    "cp", "rsync", "scp", "tar", "zip", "7z", "find", "grep", "egrep", "fgrep", "rg", "ag", "ack",
    "du", "tree", "sqlite3", "git",
];

/// Programs that search their working directory when given no path.
pub(super) const SEARCH_PROGRAMS: &[&str] = &["rg", "ag", "ack", "find"];

/// Shells whose `-c` argument is a command.
pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox",
];

/// Words before a command that run it (their own options skipped).
pub(crate) const WRAPPERS: &[&str] = &[
    "sudo",
    "doas",
    "env",
    "nohup",
    "exec",
    "command",
    "builtin",
    "time",
    "nice",
    "ionice",
    "stdbuf",
    "timeout",
    "setsid",
    "chronic",
    // unshare(1) and nsenter(1): `--wd DIR` moves what they run (attack review 42).
    "unshare",
    "nsenter",
    "xargs",
    "then",
    "do",
    "else",
    "elif",
    "if",
    "while",
    "until",
    "!",
    "{",
    "}",
    "watch",
    "strace",
    "ltrace",
    "flock",
    "unbuffer",
    "script",
    "runuser",
    "su",
    "setpriv",
    "chroot",
    "unshare",
    "nsenter",
    "caffeinate",
    "parallel",
    // Attack review 41: programs that run the command their arguments give.
    "taskset",
    "chrt",
    "numactl",
    "prlimit",
    "firejail",
    "fakeroot",
    "eatmydata",
    "torsocks",
    "proxychains",
    "proxychains4",
    "dbus-run-session",
    "xvfb-run",
    "catchsegv",
    "systemd-run",
];

/// `git` subcommands that rewrite the working tree as a whole.
pub(super) const GIT_TREE: &[&str] = &["stash", "reset", "restore", "checkout", "clean", "switch"];
