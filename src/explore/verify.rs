//! The on-demand audit of the overview (`spec/explorer.md` §2.1): the same check as
//! `memlineage verify` ([`crate::audit::audit_with_progress`], then
//! [`crate::audit::reach_quarantine`]), run on a thread of its own over a second read
//! connection to the ledger file, reporting its progress to the page.

use super::page;
use crate::audit::{audit_with_progress, reach_quarantine, AuditProgress, AuditReport};
use crate::lineage::LabelPolicy;
use crate::log::LogVerifier;
use crate::store::{SqliteStore, Store};
use maud::{html, Markup};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Failures listed on the page; the rest are counted.
const MAX_LISTED: usize = 50;

/// Where the audit is.
#[derive(Clone, Debug, Default)]
pub(super) enum VerifyState {
    /// Never run since the explorer started.
    #[default]
    Idle,
    /// Running: `checked` of `total` entries so far.
    Running {
        checked: u64,
        total: u64,
        started: Instant,
    },
    /// Finished with a report.
    Done(Box<Summary>),
    /// Could not run to the end (no checkpoint, bad checkpoint, read error).
    Failed(String),
}

/// What a finished audit found.
#[derive(Clone, Debug)]
pub(super) struct Summary {
    entries: u64,
    verified: u64,
    label_counts: [u64; 4],
    checkpoint_size: u64,
    root_matches: bool,
    flags: usize,
    quarantined: usize,
    failures: Vec<(u64, String, String)>,
    failure_count: usize,
    clean: bool,
    took: Duration,
}

/// What the audit reads: the file, the key the explorer holds, the labelling policy.
#[derive(Clone)]
pub(super) struct Job {
    pub path: PathBuf,
    pub vkey: String,
    pub policy: LabelPolicy,
}

/// Starts the audit unless one is running. Returns whether it started.
pub(super) fn start(state: &Arc<Mutex<VerifyState>>, job: Job) -> bool {
    {
        let mut s = super::lock(state);
        if matches!(*s, VerifyState::Running { .. }) {
            return false;
        }
        *s = VerifyState::Running {
            checked: 0,
            total: 0,
            started: Instant::now(),
        };
    }
    let state = Arc::clone(state);
    let spawned = std::thread::Builder::new()
        .name("explorer-verify".into())
        .spawn({
            let state = Arc::clone(&state);
            move || {
                let started = Instant::now();
                let result = run(&job, &state, started);
                *super::lock(&state) = match result {
                    Ok(s) => VerifyState::Done(Box::new(s)),
                    Err(e) => VerifyState::Failed(e),
                };
            }
        });
    if let Err(e) = spawned {
        *super::lock(&state) = VerifyState::Failed(format!("cannot start the audit: {e}"));
    }
    true
}

struct Progress<'a> {
    state: &'a Mutex<VerifyState>,
    total: u64,
    started: Instant,
}

impl AuditProgress for Progress<'_> {
    fn entries_checked(&mut self, checked: u64) {
        *super::lock(self.state) = VerifyState::Running {
            checked,
            total: self.total,
            started: self.started,
        };
    }
}

fn run(job: &Job, state: &Mutex<VerifyState>, started: Instant) -> Result<Summary, String> {
    let store = SqliteStore::open(&job.path).map_err(|e| e.to_string())?;
    let verifier = LogVerifier::from_vkey(&job.vkey).map_err(|e| e.to_string())?;
    let note = store
        .latest_checkpoint()
        .map_err(|e| e.to_string())?
        .ok_or("the ledger has no signed checkpoint to verify against")?
        .1;
    let total = store.tree_size().map_err(|e| e.to_string())?;
    let mut progress = Progress {
        state,
        total,
        started,
    };
    let mut report = audit_with_progress(
        store.audit_items(),
        &verifier,
        &note,
        job.policy,
        verifier.key_id(),
        &mut progress,
    )
    .map_err(|e| e.to_string())?;
    let bytes = (0..total).map(|i| {
        store
            .entry_bytes(i)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("entry {i} missing"))
    });
    reach_quarantine(&mut report, bytes, job.policy).map_err(|e| e.to_string())?;
    if report.entries != total {
        return Err(format!("read {} entries of {total}", report.entries));
    }
    Ok(summarise(&report, started.elapsed()))
}

fn summarise(r: &AuditReport, took: Duration) -> Summary {
    Summary {
        entries: r.entries,
        verified: r.verified,
        label_counts: r.label_counts,
        checkpoint_size: r.checkpoint.size(),
        root_matches: r.root_matches,
        flags: r.quarantine.flags().count(),
        quarantined: r.quarantine.len(),
        failures: r
            .failures
            .iter()
            .take(MAX_LISTED)
            .map(|f| (f.index, f.id.to_string(), f.problem.to_string()))
            .collect(),
        failure_count: r.failures.len(),
        clean: r.is_clean(),
        took,
    }
}

/// The state as a block of the overview and of `/verify`.
pub(super) fn summary(state: &VerifyState) -> Markup {
    match state {
        VerifyState::Idle => html! {
            p { "Not verified by this explorer yet. The labels shown are the ledger's sealed \
                 labels (checked against the log key's seal at start) and every entry's \
                 signature was checked when the explorer started." }
        },
        VerifyState::Running {
            checked,
            total,
            started,
        } => html! {
            p {
                "Verifying: " (checked) " of " (total) " entries checked ("
                (format!("{:.1?}", started.elapsed())) ")."
            }
            progress max=(total.max(&1)) value=(checked) { (checked) " / " (total) }
            p { a href="/verify" { "Progress" } " (refreshes by itself)" }
        },
        VerifyState::Failed(e) => html! {
            p.bad { "Verification failed: " (page::hostile(e, page::MAX_SHORT_CHARS)) }
        },
        VerifyState::Done(s) => done(s),
    }
}

fn done(s: &Summary) -> Markup {
    html! {
        @if s.clean {
            p.ok { "OK: verified in " (format!("{:.2?}", s.took)) "." }
        } @else {
            p.bad { "FAILED: " (s.failure_count + usize::from(!s.root_matches)) " problems." }
        }
        table {
            tr { th { "Entries read / verified" } td { (s.entries) " / " (s.verified) } }
            tr { th { "Labels recomputed" } td {
                "TRUSTED " (s.label_counts[0]) ", DERIVED_TRUSTED " (s.label_counts[1])
                ", DERIVED_UNTRUSTED " (s.label_counts[2]) ", EXTERNAL " (s.label_counts[3])
            } }
            tr { th { "Tree root at checkpoint size " (s.checkpoint_size) } td {
                @if s.root_matches { "matches" } @else { "MISMATCH" }
            } }
            tr { th { "Quarantine recomputed" } td {
                (s.flags) " active flags reach " (s.quarantined) " entries"
            } }
        }
        @if !s.failures.is_empty() {
            table {
                tr { th { "Leaf" } th { "Id" } th { "Problem" } }
                @for (i, id, p) in &s.failures {
                    tr { td { (i) } td { code { (id) } } td { (page::hostile(p, page::MAX_SHORT_CHARS)) } }
                }
            }
            @if s.failure_count > s.failures.len() {
                p { "… and " (s.failure_count - s.failures.len()) " more." }
            }
        }
    }
}

/// The `/verify` page: refreshes itself every second while the audit runs.
pub(super) fn render(state: &VerifyState) -> Markup {
    let body = html! {
        (summary(state))
        p { a href="/" { "Back to the overview" } }
    };
    match state {
        VerifyState::Running { .. } => page::refreshing("Verification", 1, body),
        _ => page::layout("Verification", body),
    }
}
