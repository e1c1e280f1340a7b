//! Programs that pack a directory and upload it (`spec/hooks.md` §16.2, "Uploads", attack
//! review 53): a registry's publish (`npm publish`, `cargo publish`), a deployer (`vercel`,
//! `fly deploy`, `gcloud builds submit`), a container build (`docker build .`: its context goes
//! to a daemon that may be remote, `DOCKER_HOST`, `-H ssh://…`, and into an image that is
//! pushed) and a bucket sync (`aws s3 sync . s3://…`, `rclone copy . r:`) send every file under
//! the directory they pack, whether or not a word of the call names one. Before, each passed
//! with exit 0 in a session that had read nothing, the project holding `.env`
//! (`tests/attack53.rs::a_program_that_uploads_a_directory_sends_the_secrets_under_it`).
//!
//! What is read here: which command uploads, and whether it packs the working directory when
//! no directory is given (a publisher or a deployer packs the project it runs in). The
//! directories are judged by the caller as a recursive reader's are (§16.1 item 3); an ignore
//! file (`.npmignore`, `.dockerignore`, a manifest's `files`) is not read: what it leaves out
//! is judged as sent (fail closed).

/// Each command that uploads a directory (program, then subcommand words), and whether it
/// packs the working directory when no directory is given.
const UPLOADS: &[(&str, bool)] = &[
    // Package registries: the package is the project the command runs in.
    ("npm publish", true),
    ("yarn publish", true),
    ("yarn npm publish", true),
    ("pnpm publish", true),
    ("bun publish", true),
    ("cargo publish", true),
    ("poetry publish", true),
    ("uv publish", true),
    ("hatch publish", true),
    ("flit publish", true),
    ("vsce publish", true),
    ("ovsx publish", true),
    // Deployers: the project they run in goes to the provider's build.
    ("vercel", true),
    ("netlify deploy", true),
    ("fly deploy", true),
    ("flyctl deploy", true),
    ("firebase deploy", true),
    ("wrangler deploy", true),
    ("wrangler pages deploy", true),
    ("railway up", true),
    ("surge", true),
    ("heroku builds:create", true),
    ("gcloud builds submit", true),
    ("gcloud app deploy", true),
    ("gcloud functions deploy", true),
    ("az webapp up", true),
    ("eb deploy", true),
    // Container builds: the context operand goes to the daemon, then into the image.
    ("docker build", false),
    ("docker buildx build", false),
    ("docker image build", false),
    ("docker builder build", false),
    ("podman build", false),
    ("buildah bud", false),
    ("buildah build", false),
    ("nerdctl build", false),
    // Deploys and bucket syncs of the directories they are given.
    ("gcloud run deploy", false),
    ("aws s3 sync", false),
    ("gsutil rsync", false),
    ("rclone copy", false),
    ("rclone sync", false),
    ("rclone move", false),
    ("rclone copyto", false),
    ("az storage blob upload-batch", false),
];

/// An upload: the command, as the table names it, and whether it packs the working directory
/// when no directory is given.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Upload {
    /// The command, for a reason (`npm publish`).
    pub(super) via: &'static str,
    /// Whether the working directory is packed too.
    pub(super) packs_cwd: bool,
}

/// The upload `prog args…` runs, if it is one: the program, then each subcommand word of an
/// entry in order, options skipped, and read both ways: the word after an option as its
/// value (`docker -H ssh://h build`, `gcloud --project p builds submit`) and as a word of its
/// own (`npm -g publish`), since which options take a value is the program's to say.
pub(super) fn upload(prog: &str, args: &[String]) -> Option<Upload> {
    UPLOADS.iter().find_map(|(entry, packs_cwd)| {
        let mut want = entry.split_whitespace();
        let first = want.next() == Some(prog);
        let words: Vec<&str> = want.collect();
        let found = subcommand(words.iter().copied(), args, true)
            || subcommand(words.iter().copied(), args, false);
        (first && found).then_some(Upload {
            via: entry,
            packs_cwd: *packs_cwd,
        })
    })
}

/// Whether the words `want` come first among `args`' words that are neither an option nor,
/// when `valued`, an option's value (a word after an option that starts with `-` and holds no `=`); a word
/// starting with `+` is an option that takes no value (`cargo +nightly publish`).
fn subcommand<'a>(want: impl Iterator<Item = &'a str>, args: &[String], valued: bool) -> bool {
    let option = |a: &str| a.starts_with('-') || a.starts_with('+');
    let mut plain = args.iter().enumerate().filter(|(k, a)| {
        let after_option = k
            .checked_sub(1)
            .and_then(|p| args.get(p))
            .is_some_and(|p| valued && p.starts_with('-') && !p.contains('='));
        !option(a) && !after_option
    });
    let mut all = true;
    for w in want {
        all &= plain.next().is_some_and(|(_, a)| a == w);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(line: &str) -> Option<&'static str> {
        let mut w = line.split_whitespace().map(str::to_string);
        let prog = w.next().unwrap_or_default();
        let args: Vec<String> = w.collect();
        upload(&prog, &args).map(|u| u.via)
    }

    #[test]
    fn commands_that_upload_are_told_from_others() {
        assert_eq!(up("npm publish"), Some("npm publish"));
        assert_eq!(up("npm --prefix d publish"), Some("npm publish"));
        assert_eq!(up("docker -H ssh://h build ."), Some("docker build"));
        assert_eq!(up("docker --context=x build ."), Some("docker build"));
        assert_eq!(
            up("gcloud --project p builds submit"),
            Some("gcloud builds submit")
        );
        assert_eq!(up("cargo +nightly publish"), Some("cargo publish"));
        assert_eq!(up("vercel --prod"), Some("vercel"));
        assert_eq!(up("npm -g publish"), Some("npm publish"));
        assert_eq!(up("docker -D build ."), Some("docker build"));
        assert_eq!(up("npm run publish"), None);
        assert_eq!(up("npm pack"), None);
        assert_eq!(up("docker run alpine"), None);
        assert_eq!(up("aws s3 ls"), None);
        assert_eq!(up("cargo build"), None);
    }
}
