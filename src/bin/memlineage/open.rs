//! What the subcommands open: a ledger file, its key file `LEDGER.key` (and the lock beside
//! it), the principals in it, and policy files.

use crate::io::read_capped;
use crate::Res;
use memlineage::front::keystore::{KeyStore, KeyStoreError};
use memlineage::front::pin::StateDir;
use memlineage::gate::Policy;
use memlineage::record::{Role, WriterKey};
use memlineage::store::SqliteStore;
use memlineage::Ledger;
use std::path::{Path, PathBuf};

/// How long a command waits for `LEDGER.key.lock` before it fails.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Largest policy file, in bytes.
const MAX_POLICY_BYTES: u64 = 1 << 20;

/// Roles that may flag, release and heal (`spec/forensics.md` §2.2, §5.2).
pub const ADVISORY_ROLES: [Role; 2] = [Role::User, Role::System];

/// The key file of `ledger`: `LEDGER.key`.
/// The guard's own resources for a front over `ledger` (`spec/hooks.md` §13): the ledger and
/// its side files, the policy file and state directory if any, this binary, and the agents'
/// settings under `$HOME`.
pub fn protected(
    ledger: &Path,
    policy: Option<&Path>,
    state: Option<&Path>,
) -> memlineage::front::protect::Protected {
    let binary = std::env::current_exe().ok();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    memlineage::front::protect::Protected::for_ledger(
        ledger,
        policy,
        state,
        binary.as_deref(),
        home.as_deref(),
    )
}

/// The key file of the ledger at `ledger`: `LEDGER.key`.
pub fn key_path(ledger: &Path) -> PathBuf {
    let mut p = ledger.as_os_str().to_owned();
    p.push(".key");
    PathBuf::from(p)
}

/// Opens an existing ledger file for reading; never creates one.
pub fn existing_store(ledger: &Path) -> Res<SqliteStore> {
    check_ledger_file(ledger)?;
    Ok(SqliteStore::open(ledger)?)
}

/// A ledger file must exist and not be empty: SQLite would make a new database of an empty
/// file, and only `init` creates ledgers.
pub fn check_ledger_file(ledger: &Path) -> Res<()> {
    if !ledger.is_file() {
        return Err(format!("no ledger at {}", ledger.display()).into());
    }
    if std::fs::metadata(ledger)
        .map_err(|e| format!("{}: {e}", ledger.display()))?
        .len()
        == 0
    {
        return Err(format!(
            "{} is empty, not a ledger (only `memlineage init` creates one); left unchanged",
            ledger.display()
        )
        .into());
    }
    Ok(())
}

/// Opens an existing ledger with the log key from its key file, against the pin of the hooks'
/// default state directory when it holds one ([`default_state`]); warns when the key file is
/// readable by others.
pub fn open(ledger: &Path) -> Res<(Ledger<SqliteStore>, KeyStore)> {
    let (l, ks) = open_with(ledger, false)?;
    // A command is not the hot path: check that the rows chain (O(n)) before anything.
    l.check_rows_chain()?;
    Ok((l, ks))
}

/// [`open`], adopting stored labelling parameters no checkpoint signs when `adopt`
/// (`memlineage checkpoint --adopt-stored-parameters`, the operator's recovery after every
/// checkpoint was lost: not against the pin, whose checkpoint signs the parameters).
pub fn open_with(ledger: &Path, adopt: bool) -> Res<(Ledger<SqliteStore>, KeyStore)> {
    let state = if adopt { None } else { default_state(ledger) };
    open_checked(ledger, adopt, state.as_ref())
}

/// [`open`] without any pin: for `hook install`, which pins the ledger anew (a ledger replaced
/// on purpose).
pub fn open_unpinned(ledger: &Path) -> Res<(Ledger<SqliteStore>, KeyStore)> {
    let (l, ks) = open_checked(ledger, false, None)?;
    l.check_rows_chain()?;
    Ok((l, ks))
}

/// The state directory `memlineage hook install` gives the hooks of `ledger` by default
/// (`spec/hooks.md` §6.2), when it holds a pin: the commands open against it, and those that
/// write advance it ([`sign_and_pin`]), as the hooks do (`StateDir::pinned_default_for`: also
/// found when the ledger's file was replaced by a link). `None` when neither `XDG_STATE_HOME`
/// nor `HOME` is set, or nothing is pinned there (hooks never installed, or installed with
/// another `--state`, which the commands do not know).
pub fn default_state(ledger: &Path) -> Option<StateDir> {
    StateDir::pinned_default_for(ledger)
}

/// The state directory a front of `ledger` (a hook, the hook server, the MCP server or proxy)
/// keeps: `given` (`--state`, made absolute), else the hooks' default one when it holds a pin
/// ([`default_state`]), so that a front started by hand beside installed hooks opens against
/// their pin, advances it and shares their session records; `None` when neither.
pub fn state_for(ledger: &Path, given: Option<PathBuf>) -> Res<Option<StateDir>> {
    Ok(match given {
        Some(s) => Some(StateDir::new(std::path::absolute(s)?)),
        None => default_state(ledger),
    })
}

/// After a command wrote to the ledger at `path`: signs its checkpoint and, when the hooks'
/// default state directory pins this ledger, advances the pin to it, under the key file's lock
/// (`spec/hooks.md` §6.2): the ledger's directory can then not be rolled back behind what the
/// command wrote (a flag, a release, an appended read) without every front refusing it.
pub fn sign_and_pin(ledger: &mut Ledger<SqliteStore>, path: &Path) -> Res<()> {
    let _lock = lock_key_file(path)?;
    sign_and_pin_locked(ledger, path)
}

/// [`sign_and_pin`] for a caller that holds the key file's lock.
pub fn sign_and_pin_locked(ledger: &mut Ledger<SqliteStore>, path: &Path) -> Res<()> {
    let c = ledger.checkpoint()?;
    if let Some(state) = default_state(path) {
        state.advance(&ledger.vkey(), &c)?;
    }
    Ok(())
}

/// [`open`] against the pin of the state directory `state` (`spec/hooks.md` §6.2), if any: the
/// ledger's log key must be the pinned one, and its tree must not be behind or fork from the
/// pinned checkpoint.
pub fn open_pinned(
    ledger: &Path,
    state: Option<&StateDir>,
) -> Res<(Ledger<SqliteStore>, KeyStore)> {
    open_checked(ledger, false, state)
}

fn open_checked(
    ledger: &Path,
    adopt: bool,
    state: Option<&StateDir>,
) -> Res<(Ledger<SqliteStore>, KeyStore)> {
    check_ledger_file(ledger)?;
    let keys = key_path(ledger);
    warn_if_readable(&keys);
    let ks = KeyStore::load(&keys)?;
    let signer = ks.log_signer()?;
    let mut opts = memlineage::ledger::OpenOptions::default();
    opts.adopt_stored_parameters = adopt;
    if let Some(st) = state {
        opts.checkpoints = st.pinned_for(&signer.vkey())?;
    }
    let l = Ledger::open_with(existing_store(ledger)?, signer, opts)?;
    Ok((l, ks))
}

/// Warns on standard error when the key file `keys` is readable by others.
pub fn warn_if_readable(keys: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(m) = std::fs::metadata(keys) {
            if m.permissions().mode() & 0o077 != 0 {
                eprintln!(
                    "warning: {} holds secret keys but is readable by others (chmod 600 it)",
                    keys.display()
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = keys;
}

/// After a hook or tool wrote to the ledger: signs its checkpoint (consistent with everything
/// signed before, pin included) and advances the pin of `state` to it, so that the ledger can
/// never be rolled back behind what the fronts have seen (`spec/hooks.md` §6.2).
pub fn advance_pin<S: memlineage::store::Store>(
    ledger: &mut Ledger<S>,
    state: &StateDir,
) -> Res<()> {
    let c = ledger.checkpoint()?;
    state.advance(&ledger.vkey(), &c)?;
    Ok(())
}

/// Takes the exclusive lock beside a ledger's key file (`LEDGER.key.lock`), held until the
/// returned file is dropped.
pub fn lock_key_file(ledger: &Path) -> Res<std::fs::File> {
    let mut p = key_path(ledger).into_os_string();
    p.push(".lock");
    let path = PathBuf::from(p);
    Ok(memlineage::store::durable::lock_file(&path, LOCK_WAIT)
        .map_err(|e| format!("{}: {e}", path.display()))?)
}

/// The key of principal `name`: an existing principal of one of the `allowed` roles, or a new
/// one created with `new_role` (in the key file, then bound in the keyring). Holds the key-file
/// lock only while doing so.
pub fn principal_key(
    ledger: &Path,
    l: &mut Ledger<SqliteStore>,
    name: &str,
    allowed: &[Role],
    new_role: Role,
) -> Res<WriterKey> {
    let _lock = lock_key_file(ledger)?;
    let mut ks = KeyStore::load(&key_path(ledger))?;
    let (key, have, created) = match ks.principal(name, None) {
        Ok(found) => found,
        Err(KeyStoreError::UnknownPrincipal { .. }) => ks.principal(name, Some(new_role))?,
        Err(e) => return Err(e.into()),
    };
    if !allowed.contains(&have) {
        let names: Vec<&str> = allowed.iter().map(|r| r.name()).collect();
        return Err(format!(
            "principal {name} has role {}; this command needs one of {}",
            have.name(),
            names.join(", ")
        )
        .into());
    }
    if created {
        ks.save(&key_path(ledger))?;
    }
    l.refresh()?;
    if l.principal(&key.key_id()).is_none() {
        l.bind(key.key_id(), have, name)?;
    }
    Ok(key)
}

/// Longest error message printed for a bad input file, in bytes (issue 13: a 200 KB policy
/// line was repeated whole).
const MAX_ERROR_BYTES: usize = 2048;

/// A file's identity and version: device, inode, size, modification time and, on unix, the
/// inode's change time (seconds, nanoseconds), which no call can set back: a same-size edit
/// whose modification time was put back (`touch -d`) still changes it.
pub(crate) type FileId = (u64, u64, u64, Option<std::time::SystemTime>, (i64, i64));

pub(crate) fn file_id(path: &Path) -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        let changed = (m.ctime(), m.ctime_nsec());
        Some((m.dev(), m.ino(), m.len(), m.modified().ok(), changed))
    }
    #[cfg(not(unix))]
    {
        let m = std::fs::metadata(path).ok()?;
        Some((0, 0, m.len(), m.modified().ok(), (0, 0)))
    }
}

/// The gate policy in the TOML file `path`, or the bundled default policy.
pub fn load_policy(path: Option<PathBuf>) -> Res<Policy> {
    Ok(match path {
        Some(p) => {
            let bytes = read_capped(&p, MAX_POLICY_BYTES, "a policy")?;
            let text = std::str::from_utf8(&bytes).map_err(|_| "policy is not UTF-8")?;
            // A TOML error quotes its input line: bounded, however long the line.
            Policy::from_toml(text).map_err(|e| {
                crate::io::bounded(&format!("{}: {e}", p.display()), MAX_ERROR_BYTES)
            })?
        }
        None => Policy::default(),
    })
}
