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
];

/// `git` subcommands that rewrite the working tree as a whole.
pub(super) const GIT_TREE: &[&str] = &["stash", "reset", "restore", "checkout", "clean", "switch"];
