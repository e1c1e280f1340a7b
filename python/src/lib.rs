//! `memlineage._native`: the Python bindings of memlineage (`spec/python.md`).
//!
//! One class, `Ledger`, over the library's [`Front`]: sessions (by id), recording prompts,
//! tool results and memories with their parents, verified retrieval with labels, the gate's
//! check of a proposed tool call (the hooks' matching and fail-closed rules), explain, flag,
//! tombstone, checkpoint and the full audit, plus the store-item operations the LangGraph
//! store (`memlineage.langgraph`) is built on. Values cross the boundary as JSON. The GIL is
//! released while the ledger works (I/O, signing, verification); nothing panics across the
//! boundary: every failure is a Python exception (`errors`).

#![deny(clippy::unwrap_used, clippy::expect_used)]

use memlineage::front::hook::FileSessions;
use memlineage::front::keystore::KeyStore;
use memlineage::front::pin::StateDir;
use memlineage::front::{Front, GeneratedKeys};
use memlineage::gate::Policy;
use memlineage::lineage::quarantine::Reach;
use memlineage::lineage::{LabelPolicy, WeakRule};
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Parent, Weight, WriterKey};
use memlineage::store::{MemoryStore, SqliteStore};
use memlineage::Ledger;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

mod engine;
mod errors;
mod filter;
mod guarded;
mod items;
mod keyfile;
mod namespaces;
mod search;
mod sessions;
mod state;
mod verdicts;
mod vectors;

use engine::{AuditSource, Core, Engine};
use errors::BindError;
use keyfile::LockedKeyFile;
use sessions::SessionCache;

/// Largest policy file read, in bytes (as the CLI).
const MAX_POLICY_BYTES: u64 = 1 << 20;

/// A provenance ledger and its front (`spec/python.md` §1). Create one with
/// `Ledger.create(path)`, `Ledger.open(path)` or `Ledger.in_memory()`.
#[pyclass(frozen, name = "Ledger", module = "memlineage")]
struct PyLedger {
    engine: Mutex<Box<dyn Engine>>,
    path: Option<String>,
    vkey: String,
}

/// `LEDGER.key.lock`, the lock every writer of a file ledger holds (as the CLI and hooks).
fn lock_path(ledger: &Path) -> PathBuf {
    let mut p = key_path(ledger).into_os_string();
    p.push(".lock");
    PathBuf::from(p)
}

/// `LEDGER.key`, the key file beside a ledger (as the CLI names it).
fn key_path(ledger: &Path) -> PathBuf {
    let mut p = ledger.as_os_str().to_owned();
    p.push(".key");
    PathBuf::from(p)
}

fn load_policy(path: Option<PathBuf>) -> Result<Policy, BindError> {
    let Some(p) = path else {
        return Ok(Policy::default());
    };
    let meta = std::fs::metadata(&p)
        .map_err(|e| BindError::misuse(format!("policy {}: {e}", p.display())))?;
    if meta.len() > MAX_POLICY_BYTES {
        return Err(BindError::misuse(format!(
            "policy {}: longer than {MAX_POLICY_BYTES} bytes",
            p.display()
        )));
    }
    let text = std::fs::read_to_string(&p)
        .map_err(|e| BindError::misuse(format!("policy {}: {e}", p.display())))?;
    Ok(Policy::from_toml(&text)?)
}

fn label_policy(tau: f64, rule: &str) -> Result<LabelPolicy, BindError> {
    let weak_rule = WeakRule::from_name(rule)
        .ok_or_else(|| BindError::misuse(format!("rule {rule:?}: use fail-closed or fail-open")))?;
    let tau = Weight::from_f64(tau).map_err(BindError::misuse)?;
    Ok(LabelPolicy { tau, weak_rule })
}

fn id_arg(s: &str) -> Result<EntryId, BindError> {
    EntryId::from_hex(s).map_err(|e| BindError::misuse(format!("entry id {s:?}: {e}")))
}

fn ids_arg(ids: &[String]) -> Result<Vec<EntryId>, BindError> {
    ids.iter().map(|s| id_arg(s)).collect()
}

/// `obj` as JSON (Python's `json.dumps`, NaN and infinities refused). A value `json.dumps`
/// cannot write (a `datetime`, a set: its `TypeError`) is a `ValueError`, as every value that
/// is not JSON (`spec/python.md` §6).
fn to_json(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("allow_nan", false)?;
    let text: String = match py
        .import("json")?
        .call_method("dumps", (obj,), Some(&kwargs))
    {
        Ok(t) => t.extract()?,
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
            return Err(BindError::misuse(format!("not JSON: {}", e.value(py))).into());
        }
        Err(e) => return Err(e),
    };
    serde_json::from_str(&text).map_err(|e| BindError::misuse(format!("not JSON: {e}")).into())
}

/// `v` as a Python object (`json.loads`).
fn to_py(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(py
        .import("json")?
        .call_method1("loads", (v.to_string(),))?
        .unbind())
}

fn namespace_arg(ns: Vec<String>, key: String) -> items::Path {
    (ns, key)
}

impl PyLedger {
    fn wrap(engine: Box<dyn Engine>, path: Option<String>, vkey: String) -> Self {
        PyLedger {
            engine: Mutex::new(engine),
            path,
            vkey,
        }
    }

    /// Runs `f` on the engine with the GIL released.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut dyn Engine) -> Result<T, BindError> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut g = self.engine.lock().map_err(|_| {
                BindError::misuse("the ledger handle is unusable after an earlier failure")
            })?;
            f(g.as_mut())
        })
        .map_err(PyErr::from)
    }

    fn run_json(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut dyn Engine) -> Result<Value, BindError> + Send,
    ) -> PyResult<Py<PyAny>> {
        let v = self.run(py, f)?;
        to_py(py, &v)
    }

    fn open_file(path: &Path, setup: Setup<'_>) -> Result<Self, BindError> {
        if !path.is_file() || std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) == 0 {
            return Err(BindError::misuse(format!(
                "no ledger at {} (Ledger.create makes one)",
                path.display()
            )));
        }
        let keys = key_path(path);
        let ks = KeyStore::load(&keys)?;
        let ledger = match &setup.state {
            Some(st) => state::open_pinned(path, ks.log_signer()?, st, &lock_path(path))?,
            None => Ledger::open(SqliteStore::open(path)?, ks.log_signer()?)?,
        };
        Self::file_core(path, ledger, setup)
    }

    /// A handle over the file ledger `ledger` at `path`, its sessions kept in the state
    /// directory (the ledger was opened against its pin) or, without one, beside the ledger,
    /// and the guard's own resources protected (`guarded`).
    fn file_core(
        path: &Path,
        ledger: Ledger<SqliteStore>,
        setup: Setup<'_>,
    ) -> Result<Self, BindError> {
        let Setup {
            policy,
            policy_file,
            agent,
            state,
            module,
        } = setup;
        let keys = key_path(path);
        let vkey = ledger.vkey();
        let mut front = Front::new(ledger, policy, LockedKeyFile::new(keys)).with_agent(agent);
        front.set_protected(guarded::protected(
            path,
            policy_file.as_deref(),
            state.as_ref(),
            module.as_deref(),
        ));
        let sessions = match &state {
            Some(st) => st.sessions(),
            None => FileSessions::beside(path),
        };
        let core = Core::new(
            front,
            SessionCache::files(sessions),
            Some(lock_path(path)),
            AuditSource::Sqlite(path.to_path_buf()),
            state,
        );
        Ok(Self::wrap(
            Box::new(core),
            Some(path.display().to_string()),
            vkey,
        ))
    }
}

/// What a file ledger's handle is opened with besides the ledger: the gate policy and the file
/// it was read from, the agent's principal, the state directory, and this module's file.
struct Setup<'a> {
    policy: Policy,
    policy_file: Option<PathBuf>,
    agent: &'a str,
    state: Option<StateDir>,
    module: Option<PathBuf>,
}

impl<'a> Setup<'a> {
    /// Reads the policy file `policy_file` (the bundled policy when `None`).
    fn new(
        policy_file: Option<PathBuf>,
        agent: &'a str,
        state: Option<StateDir>,
        module: Option<PathBuf>,
    ) -> Result<Self, BindError> {
        Ok(Setup {
            policy: load_policy(policy_file.clone())?,
            policy_file,
            agent,
            state,
            module,
        })
    }
}

#[pymethods]
impl PyLedger {
    /// Creates a SQLite ledger at `path` and its key file `path + ".key"` (as `memlineage
    /// init`), signs the empty tree's checkpoint, and opens it. `tau` in [0, 1] and `rule`
    /// (`fail-closed` or `fail-open`) are the labelling parameters; `policy` is a gate policy
    /// TOML file (default: the bundled `examples/policy.toml`); `agent` is the principal the
    /// agent's writes are signed by. `state` is the state directory outside the ledger's that
    /// keeps the pin and the session records (`spec/python.md` §3.2): by default the one
    /// `memlineage hook install` gives the hooks for this path; a path; or `False` (records
    /// beside the ledger, nothing pinned). The new ledger is pinned there.
    ///
    /// Raises `ValueError` if either file exists, or the state directory already holds a pin;
    /// `LedgerError`, `KeyStoreError`, `PinError` on failure; `TypeError` for a `state` that
    /// is not a path or a bool.
    #[staticmethod]
    #[pyo3(signature = (path, *, origin = "memlineage.local/ledger", tau = 0.5, rule = "fail-closed", policy = None, agent = "agent", state = None))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        path: PathBuf,
        origin: &str,
        tau: f64,
        rule: &str,
        policy: Option<PathBuf>,
        agent: &str,
        state: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let choice = state::choice(state.as_ref())?;
        let module = guarded::module_file(py);
        let made = py.detach(|| -> Result<Self, BindError> {
            let keys = key_path(&path);
            if path.exists() || keys.exists() {
                return Err(BindError::misuse(format!(
                    "{} or its key file already exists",
                    path.display()
                )));
            }
            let state = state::resolve(&path, choice)?;
            if let Some(st) = &state {
                state::must_be_new(st)?;
            }
            let lp = label_policy(tau, rule)?;
            let setup = Setup::new(policy, agent, state, module)?;
            let ks = KeyStore::generate(origin);
            let signer = ks.log_signer()?;
            ks.save(&keys)?;
            let mut ledger = Ledger::create(SqliteStore::open(&path)?, signer, lp)?;
            let c = ledger.checkpoint()?;
            if let Some(st) = &setup.state {
                st.repin(&ledger.vkey(), &c)?;
            }
            Self::file_core(&path, ledger, setup)
        })?;
        Ok(made)
    }

    /// Opens the SQLite ledger at `path` with its key file `path + ".key"`, against the pin of
    /// its state directory `state` (as in `create`; `spec/python.md` §3.2): the ledger's log
    /// key must be the pinned one and its tree must not be behind the pinned checkpoint. The
    /// first open with a directory that holds no pin pins the ledger as it is and copies the
    /// session records kept beside it so far. With `state=False`, sessions are the hooks'
    /// session files beside the ledger (`path + ".sessions/"`) and nothing is pinned.
    ///
    /// Raises `ValueError` when there is no ledger at `path`; `PinError` for a ledger of
    /// another log key than the pinned one; `LedgerError` (variant `BehindSignedCheckpoint`)
    /// for a ledger rolled back behind the pin.
    #[staticmethod]
    #[pyo3(signature = (path, *, policy = None, agent = "agent", state = None))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        policy: Option<PathBuf>,
        agent: &str,
        state: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let choice = state::choice(state.as_ref())?;
        let module = guarded::module_file(py);
        Ok(py.detach(|| {
            let state = state::resolve(&path, choice)?;
            Self::open_file(&path, Setup::new(policy, agent, state, module)?)
        })?)
    }

    /// A ledger in memory with fresh random keys, gone when the handle is (tests, a runtime
    /// that keeps no history).
    #[staticmethod]
    #[pyo3(signature = (*, origin = "memlineage.local/memory", tau = 0.5, rule = "fail-closed", policy = None, agent = "agent"))]
    fn in_memory(
        origin: &str,
        tau: f64,
        rule: &str,
        policy: Option<PathBuf>,
        agent: &str,
    ) -> PyResult<Self> {
        let lp = label_policy(tau, rule)?;
        let policy = load_policy(policy)?;
        let signer = LogSigner::new(origin, WriterKey::generate()).map_err(BindError::from)?;
        let ledger = Ledger::create(MemoryStore::default(), signer, lp).map_err(BindError::from)?;
        let vkey = ledger.vkey();
        let front = Front::new(ledger, policy, GeneratedKeys::default()).with_agent(agent);
        let core = Core::new(
            front,
            SessionCache::memory(),
            None,
            AuditSource::Store,
            None,
        );
        Ok(Self::wrap(Box::new(core), None, vkey))
    }

    /// The ledger file's path (`None` in memory).
    #[getter]
    fn path(&self) -> Option<String> {
        self.path.clone()
    }

    /// The log's verifier key (C2SP vkey).
    #[getter]
    fn vkey(&self) -> String {
        self.vkey.clone()
    }

    /// Number of entries in the log.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let n = self.run(py, |e| e.len())?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// Records a user prompt in `session` (principal `user`: Trusted); returns
    /// `{"id", "index", "label"}`.
    fn record_prompt(&self, py: Python<'_>, session: &str, text: &str) -> PyResult<Py<PyAny>> {
        self.run_json(py, |e| e.record_prompt(session, text))
    }

    /// Records a tool call with arguments `args` (a dict) and its `output` (principal
    /// `tool:<tool>`: External); returns `{"call": {...}, "result": {...}}`.
    fn record_tool_result(
        &self,
        py: Python<'_>,
        session: &str,
        tool: &str,
        args: &Bound<'_, PyAny>,
        output: &str,
    ) -> PyResult<Py<PyAny>> {
        let args = to_json(args)?;
        self.run_json(py, |e| e.record_tool_result(session, tool, &args, output))
    }

    /// Counts one tool output the session saw that could not be recorded: while the count is
    /// non-zero, the session's sensitive calls are refused. Returns the count.
    fn mark_unrecorded(&self, py: Python<'_>, session: &str) -> PyResult<u64> {
        self.run(py, |e| e.mark_unrecorded(session))
    }

    /// Records a memory of the agent (`kind` summary, observation or fact) derived from
    /// `parents`, a list of entry ids (full weight) or `(id, weight)` pairs.
    #[pyo3(signature = (session, text, parents = None, kind = "summary"))]
    fn remember(
        &self,
        py: Python<'_>,
        session: &str,
        text: &str,
        parents: Option<Vec<Bound<'_, PyAny>>>,
        kind: &str,
    ) -> PyResult<Py<PyAny>> {
        let kind = match kind {
            "summary" | "observation" | "fact" => Kind::from_name(kind),
            _ => None,
        }
        .ok_or_else(|| BindError::misuse(format!("kind {kind:?}: use summary or fact")))?;
        let mut ps = Vec::new();
        for p in parents.unwrap_or_default() {
            if let Ok(id) = p.extract::<String>() {
                ps.push(Parent::full(id_arg(&id)?));
            } else {
                let (id, w): (String, f64) = p.extract()?;
                let weight = Weight::from_f64(w).map_err(BindError::misuse)?;
                ps.push(Parent {
                    id: id_arg(&id)?,
                    weight,
                });
            }
        }
        self.run_json(py, |e| e.remember(session, kind, text, ps))
    }

    /// Verifies `ids` and returns one dict per id: `status` `verified` (with `label`, `kind`,
    /// `writer`, `text`, `rendered`), `tombstoned`, `quarantined` or `rejected` (with
    /// `error`). Verified entries join the session's reads.
    fn retrieve(&self, py: Python<'_>, session: &str, ids: Vec<String>) -> PyResult<Py<PyAny>> {
        let ids = ids_arg(&ids)?;
        self.run_json(py, |e| e.retrieve(session, &ids))
    }

    /// Decides a proposed call of `tool` with `args` (a dict) in `session`, as the
    /// PreToolUse hook does. Returns `{"allowed", "decision", "classified", "sensitive", "tool",
    /// "sources", "reason", "deny", "param", "entry", "path"}`; `decision` is `allow`, `deny` or
    /// `ask` (spec/hooks.md §15: `allowed` is false, the user must approve); `path` lists the
    /// lineage hops (source first) as `{"id", "kind", "writer", "label"}`.
    fn check(
        &self,
        py: Python<'_>,
        session: &str,
        tool: &str,
        args: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let Value::Object(args) = to_json(args)? else {
            return Err(BindError::misuse("a tool call's arguments are a dict").into());
        };
        self.run_json(py, |e| e.check(session, tool, &args))
    }

    /// Whether the ledger's policy classifies `tool`: a policy key names it (sensitive, a
    /// tool rule, or read-only). A tool it does not classify is gated, every argument as a
    /// sensitive tool's, unless the policy says `unknown_tools = "allow"` (spec/hooks.md §15.3).
    fn classifies(&self, py: Python<'_>, tool: &str) -> PyResult<bool> {
        self.run(py, |e| Ok(e.classifies(tool)))
    }

    /// The session's read set: `{"reads": [ids…], "unrecorded": n}`.
    fn reads(&self, py: Python<'_>, session: &str) -> PyResult<Py<PyAny>> {
        self.run_json(py, |e| e.reads(session))
    }

    /// An entry's kind, writer, label, parents, untrusted lineage path, quarantine and
    /// tombstone state, and receipt (`None` when it is neither untrusted nor quarantined).
    fn explain(&self, py: Python<'_>, id: &str) -> PyResult<Py<PyAny>> {
        let id = id_arg(id)?;
        self.run_json(py, |e| e.explain(&id))
    }

    /// Flags `id` as a bad source with `reason`, quarantining what descends from it over every
    /// edge (`reach="all"`) or strong ones (`"strong"`); signed by principal `advisory`
    /// (role system). Returns `{"flag", "source", "reach", "quarantined", "newly_quarantined"}`.
    #[pyo3(signature = (id, reason, reach = "all"))]
    fn flag(&self, py: Python<'_>, id: &str, reason: &str, reach: &str) -> PyResult<Py<PyAny>> {
        let id = id_arg(id)?;
        let reach = Reach::from_name(reach)
            .ok_or_else(|| BindError::misuse(format!("reach {reach:?}: use all or strong")))?;
        self.run_json(py, |e| e.flag(&id, reach, reason))
    }

    /// Deletes `id` with a tombstone signed by the agent principal.
    fn tombstone(&self, py: Python<'_>, id: &str, reason: &str) -> PyResult<Py<PyAny>> {
        let id = id_arg(id)?;
        self.run_json(py, |e| e.tombstone(&id, reason))
    }

    /// Signs a checkpoint of the current tree and returns its note (C2SP signed note).
    fn checkpoint(&self, py: Python<'_>) -> PyResult<String> {
        self.run(py, |e| e.checkpoint())
    }

    /// Signs a checkpoint, then audits the whole ledger offline as `memlineage verify` does
    /// (signatures, encodings, keyring, labels, tree root, quarantine). Returns `{"ok",
    /// "entries", "verified", "checkpoint_size", "root_matches", "labels", "quarantined",
    /// "failures"}`.
    fn verify(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.run_json(py, |e| e.verify())
    }

    /// Writes a new version of the store item `(namespace, key)` with `value` (a dict), derived
    /// from everything `session` read (full weight, or the weight `weights` gives an entry id;
    /// ids in `weights` that were not read are added as parents), with `vectors`, the
    /// `(field path, embedding)` pairs of its embedded fields (`None`: the store has no
    /// index). Returns the item.
    #[pyo3(signature = (session, namespace, key, value, weights = None, vectors = None))]
    #[allow(clippy::too_many_arguments)]
    fn item_put(
        &self,
        py: Python<'_>,
        session: &str,
        namespace: Vec<String>,
        key: String,
        value: &Bound<'_, PyAny>,
        weights: Option<HashMap<String, f64>>,
        vectors: Option<vectors::RawVectors>,
    ) -> PyResult<Py<PyAny>> {
        let value = to_json(value)?;
        let mut ws = HashMap::new();
        for (id, w) in weights.unwrap_or_default() {
            ws.insert(
                id_arg(&id)?,
                Weight::from_f64(w).map_err(BindError::misuse)?,
            );
        }
        let vectors = vectors.map(vectors::vectors).transpose()?;
        let path = namespace_arg(namespace, key);
        self.run_json(py, |e| e.item_put(session, path, value, &ws, vectors))
    }

    /// Deletes the item `(namespace, key)`: a tombstone of its current version. Whether there
    /// was one.
    fn item_delete(
        &self,
        py: Python<'_>,
        session: &str,
        namespace: Vec<String>,
        key: String,
    ) -> PyResult<bool> {
        let path = namespace_arg(namespace, key);
        self.run(py, |e| e.item_delete(session, &path))
    }

    /// The current item `(namespace, key)`, verified and recorded as read, or `None`
    /// (absent, deleted, quarantined or failing verification).
    fn item_get(
        &self,
        py: Python<'_>,
        session: &str,
        namespace: Vec<String>,
        key: String,
    ) -> PyResult<Py<PyAny>> {
        let path = namespace_arg(namespace, key);
        self.run_json(py, |e| e.item_get(session, &path))
    }

    /// Searches the live, unquarantined items under `prefix` that match `filter` (a dict, as
    /// `InMemoryStore`'s), in `InMemoryStore`'s order or, given the `query` vector, by cosine
    /// similarity (`spec/python.md` §2.3, §2.5), and returns `{"items": [...]}`: the page
    /// `offset..offset + limit`, verified and recorded as read by `session`, each with its
    /// `score`. When matching items have no vectors yet, returns `{"unembedded": [{"entry_id",
    /// "value"}, ...]}` instead: embed them (`item_embed`) and search again.
    #[pyo3(signature = (session, prefix, filter = None, query = None, offset = 0, limit = 10))]
    #[allow(clippy::too_many_arguments)]
    fn item_search(
        &self,
        py: Python<'_>,
        session: &str,
        prefix: Vec<String>,
        filter: Option<&Bound<'_, PyAny>>,
        query: Option<Vec<f32>>,
        offset: usize,
        limit: usize,
    ) -> PyResult<Py<PyAny>> {
        let filter = match filter.map(to_json).transpose()? {
            None => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(BindError::misuse("a search filter is a dict").into()),
        };
        let query = query
            .map(|q| vectors::Vector::new("query".into(), q))
            .transpose()?;
        self.run_json(py, |e| {
            let req = search::Request {
                prefix: &prefix,
                filter: filter.as_ref(),
                query: query.as_ref(),
                offset,
                limit,
            };
            e.item_search(session, &req)
        })
    }

    /// Attaches the vectors of items' embedded fields to their current versions: `entries` is
    /// a list of `(entry_id, [(field path, embedding), ...])` (an entry that no longer holds a
    /// current version is passed over).
    fn item_embed(
        &self,
        py: Python<'_>,
        entries: Vec<(String, vectors::RawVectors)>,
    ) -> PyResult<()> {
        let mut out = Vec::with_capacity(entries.len());
        for (id, vs) in entries {
            out.push((id_arg(&id)?, vectors::vectors(vs)?));
        }
        self.run(py, |e| e.item_embed(out))
    }

    /// The namespaces holding a live, non-quarantined item that match every condition of
    /// `conditions` (`(match_type, path)` pairs, `"prefix"` or `"suffix"`, `*` matching any
    /// label), cut to `max_depth` labels, sorted, deduplicated, `offset..offset + limit`: as
    /// `InMemoryStore.list_namespaces`. The items behind each namespace listed are verified
    /// and recorded as read by `session` (a namespace is text its items' writers chose); a
    /// namespace one of whose items fails verification is left out.
    #[pyo3(signature = (session, conditions = Vec::new(), max_depth = None, limit = 100, offset = 0))]
    fn item_namespaces(
        &self,
        py: Python<'_>,
        session: &str,
        conditions: Vec<(String, Vec<String>)>,
        max_depth: Option<usize>,
        limit: usize,
        offset: usize,
    ) -> PyResult<Py<PyAny>> {
        let conditions = conditions
            .into_iter()
            .map(|(kind, path)| Ok((namespaces::MatchType::parse(&kind)?, path)))
            .collect::<Result<Vec<_>, BindError>>()?;
        let listing = namespaces::Listing {
            conditions,
            max_depth,
            limit,
            offset,
        };
        self.run_json(py, |e| e.item_namespaces(session, &listing))
    }
}

/// The floor the front's benchmarks divide by (`python/bench/overhead.py`,
/// `spec/benchmarks.md`): `n` Ed25519 signatures of a 200-byte message with the key type the
/// ledger signs entries with, each timed alone; returns the µs of each. Signs nothing anyone
/// keeps (a fresh random key).
#[pyfunction]
fn sign_floor(py: Python<'_>, n: usize) -> Vec<f64> {
    py.detach(|| {
        let key = WriterKey::generate();
        let msg = [7u8; 200];
        (0..n)
            .map(|i| {
                let mut m = msg;
                m[0] = (i % 251) as u8;
                let t = std::time::Instant::now();
                std::hint::black_box(key.sign(std::hint::black_box(&m)));
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect()
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLedger>()?;
    m.add_function(wrap_pyfunction!(sign_floor, m)?)?;
    m.add("ITEM_FORMAT", items::ITEM_FORMAT)?;
    errors::register(m)?;
    Ok(())
}
