//! Code the user vouches for (`spec/hooks.md` §16.2, "Endorsed code"): a declassification by
//! the user, made in the policy file (`secrets.endorsed_code`, SHA-256 digests of code texts),
//! which no tool call may touch (§13.1). A script whose bytes are one of them is the user's
//! code: the secrets its own text reads — the files it names, the words only known when it
//! runs, which may name any file, the code it hands a program only known then — are the
//! user's reading, not counted. Everything else is judged as ever: what it may send (its
//! egress programs, the programs only known when it runs), the call's own words (its
//! arguments, assignments and redirections: `bash ci.sh ~/.aws/credentials` reads the file),
//! and every file of code the endorsed text runs (`source ./lib.sh`, `python3 tools/gen.py`),
//! which the agent may have written, each as the code it is (endorsed only if its own bytes
//! are).
//!
//! The endorsement decides the call only: whether its result is secret (§16.1) is judged from
//! the script read strictly ([`Facts::endorsing`] is false there), since the agent can steer
//! what an endorsed script reads.
//!
//! Before, the rule refused most real scripts in any session (measured: 32 of 46 shell
//! scripts found on a development machine, run as `bash scripts/sN.sh` in a session that had
//! read only the prompt), since a script is read as strictly as `sh -c CODE`: any word only
//! known when it runs may name a secret and any program only known then may send.

use super::scripts::Script;
use super::{Facts, SecretRules};
use crate::front::protect::pattern::Resolver;
use std::path::Path;

impl Facts {
    /// Code only known when it runs, run by `how` (`eval "$X"`, `sh -c "$(cat f)"`) in `cwd`:
    /// a program that cannot be named, and in endorsed text code nobody can see, judged after
    /// the text as not endorsed (attack review 46: an endorsed script's `eval "$(cat f)"` ran
    /// the agent's file, exit 0).
    pub(super) fn runs_unknown_code(&mut self, how: &str, cwd: Option<&Path>) {
        self.unknown_program = true;
        if self.endorsed > 0 {
            self.deferred
                .push((Script::Unknown, cwd.map(Path::to_path_buf), how.to_string()));
        }
    }
}

impl SecretRules {
    /// Whether `text` is a code text the policy endorses (its SHA-256 is in
    /// `secrets.endorsed_code`).
    pub(super) fn is_endorsed(&self, text: &str) -> bool {
        use sha2::{Digest, Sha256};
        let endorsed = &self.policy.endorsed_code;
        !endorsed.is_empty() && endorsed.contains(&<[u8; 32]>::from(Sha256::digest(text)))
    }

    /// When `script` is a whole file's text that the policy endorses: analyses it into `f`
    /// with the secrets its own text reads left out and the files of code it runs analysed
    /// after it, and returns true. Otherwise leaves `f` alone and returns false.
    pub(super) fn endorsed_code(
        &self,
        script: &Script,
        cwd: Option<&Path>,
        depth: usize,
        f: &mut Facts,
        r: &Resolver,
    ) -> bool {
        let text = match script {
            Script::Shell(t) | Script::Interpreted(t) => t,
            // A program's configuration is not a file's whole text; code that is not read
            // has no text to vouch for.
            Script::Config(_) | Script::Unknown | Script::Unread(_) => return false,
        };
        if !f.endorsing || !self.is_endorsed(text) {
            return false;
        }
        let (secrets, named, inline) = (f.secrets.len(), f.named, f.inline.clone());
        let deferred = f.deferred.len();
        if let Script::Shell(code) = script {
            f.endorsed += 1;
            self.shell(code, cwd, depth + 1, f, r);
            f.endorsed -= 1;
        }
        // The secrets the text reads itself are the user's reading; what it may send is not
        // vouched for (the agent chose its arguments and may have read a secret).
        f.secrets.truncate(secrets);
        f.named = named;
        f.inline = inline;
        // The files of code it runs are judged as what they are.
        let runs: Vec<_> = f.deferred.drain(deferred..).collect();
        for (code, dir, prog) in runs {
            // Code it runs from a file only known when it runs (`. "$DIR/lib.sh"`, `cd
            // "$(dirname "$0")"; sh ./helper.sh`) may be the agent's: it may read any secret
            // (attack review 45: such a helper sent the credentials, exit 0).
            if matches!(code, Script::Unknown) {
                f.secrets.push(format!(
                    "code the endorsed script runs from a file only known when it runs \
                     (by {prog}), which may read any secret"
                ));
            }
            self.code(code, &prog, dir.as_deref(), depth + 1, f, r);
        }
        true
    }
}
