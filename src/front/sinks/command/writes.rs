//! The files a command writes besides its redirections (`spec/hooks.md` §17): `tee`, `sed -i`,
//! `cp`/`mv`/`ln`/`install`, `dd of=`, downloads, archives and patches, interpreters' inline code.

use super::code::{awk_writes, script_text, sed_writes};
use super::{literal_word, path_word, remote_name, Analysis, Facts, AWKS};
use crate::front::protect::pattern::{candidate_with, Candidate, Pat};
use crate::front::protect::shell::{Piece, Word};
use crate::front::protect::simple::basename;
use crate::gate::extract;
use std::collections::HashMap;
use std::path::Path;

impl Analysis<'_> {
    /// The files simple command `prog args…` writes besides its redirections.
    pub(super) fn writes(
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

    /// Files that inline code names (`open('Makefile', 'a')`): every piece of the code that
    /// could be a file name, taken as a path (reads count too: fail closed).
    pub(super) fn code_writes(&self, code: &str, here: Option<&Path>, f: &mut Facts) {
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
