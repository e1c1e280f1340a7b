//! Offline audit of a whole ledger: every signature and canonical encoding, the keyring, parent
//! order, labels recomputed from scratch, and the tree root against a signed checkpoint.
//!
//! The auditor needs only entry bytes in log order, the log's verifier key and a checkpoint
//! note: it never opens the writer's store (`spec/lineage.md`, "Offline recomputation").

#[cfg(doc)]
use crate::lineage::admission::admit;
use crate::lineage::admission::AdmissionError;
use crate::lineage::effects_index::{IndexCommitment, IndexLineError};
use crate::lineage::lease::LeaseBook;
use crate::lineage::quarantine::Quarantine;
use crate::lineage::secrecy::{Secrecy, SecretSources};
use crate::lineage::state::{Content, Known, LineageState};
use crate::lineage::{Label, LabelPolicy};
use crate::log::{hashes_to_store, tree_root, LogError, LogVerifier, RootHash, VerifiedCheckpoint};
use crate::record::{
    decode_on_all_cores, parse_unverified, EntryId, Hash32, KeyId, Kind, Parent, RecordError,
    SignedEntry,
};
use std::collections::HashMap;

/// What an audit found.
#[derive(Debug)]
pub struct AuditReport {
    /// The verified checkpoint the tree was checked against.
    pub checkpoint: VerifiedCheckpoint,
    /// Entries read.
    pub entries: u64,
    /// Entries whose signature, encoding, writer and parents verified.
    pub verified: u64,
    /// Entries per recomputed label, in [`Label::ALL`] order.
    pub label_counts: [u64; 4],
    /// Whether the recomputed root at the checkpoint's size equals the checkpoint's root.
    pub root_matches: bool,
    /// Every problem found, in log order (empty for a clean ledger).
    pub failures: Vec<AuditFailure>,
    /// The active flags the log records (`spec/forensics.md` §2). Which entries they reach is
    /// computed by a second pass, [`reach_quarantine`].
    pub quarantine: Quarantine,
    /// The secret entries under the sources [`audit_secrets`] was given (`spec/lineage.md`
    /// §8); `None` when none were given.
    pub secrecy: Option<Secrecy>,
    /// The effects index recomputed over the entries up to the checkpoint's size
    /// (`spec/label-proof.md` §3), `None` when the log is shorter than the checkpoint.
    pub effects_index: Option<IndexCommitment>,
    /// What the checkpoint signs about the effects index, `None` when it signs nothing
    /// (a checkpoint signed before the index existed, or by a PostgreSQL integrator).
    pub signed_index: Option<IndexCommitment>,
    /// The RFC 6962 root (§2.1) of every entry this pass read, all `entries` of them, past the
    /// checkpoint too: [`reach_quarantine`] requires its entries to have the same root, so that
    /// the quarantine it reports is computed from the bytes this pass verified, not from a
    /// store changed between the two reads.
    pub read_root: RootHash,
}

impl AuditReport {
    /// Clean: every entry verified, labels agree, the root matches, and so does the effects
    /// index when the checkpoint signs one.
    pub fn is_clean(&self) -> bool {
        self.failures.is_empty()
            && self.root_matches
            && self.verified == self.entries
            && self.index_matches() != Some(false)
    }

    /// Whether the recomputed effects index is the one the checkpoint signs; `None` when it
    /// signs none.
    pub fn index_matches(&self) -> Option<bool> {
        self.signed_index.map(|s| Some(s) == self.effects_index)
    }
}

/// One problem, naming the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditFailure {
    /// Leaf index.
    pub index: u64,
    /// Leaf hash of the bytes found there.
    pub id: EntryId,
    /// What is wrong.
    pub problem: Problem,
}

/// One entry as an auditor reads it: its bytes, what its store's row claims of it (label, kind,
/// id; `None` where the source keeps no such column), and its stored content (if available;
/// redacted content is simply absent).
#[derive(Debug, Clone, Default)]
pub struct AuditItem {
    /// COSE_Sign1 bytes.
    pub cose: Vec<u8>,
    /// The label the store claims.
    pub stored_label: Option<Label>,
    /// The kind the store's row claims (`spec/storage.md` §4.1: the `kind` column a ledger
    /// opens from).
    pub stored_kind: Option<Kind>,
    /// The id the store's row claims (the `id` column a ledger looks entries up by).
    pub stored_id: Option<EntryId>,
    /// The context hash the store's row claims (the `context` column of the context index,
    /// `spec/storage.md` §4.5); `None` where the row has none (a candidate of every lookup) or
    /// the source keeps no such column.
    pub stored_context: Option<Hash32>,
    /// The content stored beside the entry.
    pub content: Option<Vec<u8>>,
}

impl From<(Vec<u8>, Option<Label>)> for AuditItem {
    fn from((cose, stored_label): (Vec<u8>, Option<Label>)) -> Self {
        AuditItem {
            cose,
            stored_label,
            ..AuditItem::default()
        }
    }
}

/// The class of an audit failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// The bytes do not decode or verify.
    #[error("entry does not verify: {0}")]
    Record(#[from] RecordError),
    /// The entry breaks the admission rule ([`admit`]) at its place in the log: the same
    /// [`AdmissionError`] the ledger refuses an append with, worded as a finding about the log.
    #[error("{}", finding(.0))]
    Admission(#[from] AdmissionError),
    /// The label stored beside the entry differs from the recomputed one.
    #[error("stored label {stored} differs from recomputed {recomputed}")]
    LabelMismatch {
        /// What the store claimed.
        stored: Label,
        /// What the log implies.
        recomputed: Label,
    },
    /// The kind stored in the entry's row differs from the signed one: a ledger opens from
    /// the kind column (which rows have effects) and refuses such a row (`spec/lineage.md`
    /// §5.1); the audit names it.
    #[error("stored kind {} differs from the signed kind {}", .stored.name(), .signed.name())]
    KindMismatch {
        /// What the store's row claimed.
        stored: Kind,
        /// What the signed bytes say.
        signed: Kind,
    },
    /// The id stored in the entry's row is not the leaf hash of its bytes (the failure's id):
    /// a ledger looks entries up by that column and refuses the row.
    #[error("stored id {stored} is not the leaf hash of the entry's bytes")]
    IdMismatch {
        /// What the store's row claimed.
        stored: EntryId,
    },
    /// The context hash stored in the entry's row differs from the signed one: the context
    /// index (`spec/storage.md` §4.5) no longer finds the entry for its session, which a
    /// store-only attacker uses to hide a session's read (attack review 52).
    #[error("stored context {stored} differs from the signed context {signed}")]
    ContextMismatch {
        /// What the store's row claimed.
        stored: Hash32,
        /// What the signed bytes say.
        signed: Hash32,
    },
}

/// How an audit words an admission failure: as a finding about an entry already in the log
/// (the ledger words the same error as a refused append).
fn finding(e: &AdmissionError) -> String {
    match e {
        AdmissionError::UnknownWriter(k) => format!("writer {k} not bound in the keyring"),
        AdmissionError::ContentMismatch => {
            "stored content does not match the signed content hash".into()
        }
        AdmissionError::NotLogKey => "keyring entry not written by the log key".into(),
        AdmissionError::UntrustedTombstone(k) => format!("tombstone by tool/external writer {k}"),
        AdmissionError::BindsLogRole(k) => format!("keyring entry binds {k} to role log"),
        AdmissionError::Rebind { key, .. } => format!("keyring entry rebinds {key}"),
        AdmissionError::UnknownParent(p) => format!("parent {p} is not earlier in the log"),
        AdmissionError::UnknownTarget(t) => {
            format!("tombstone target {t} is not earlier in the log")
        }
        AdmissionError::Duplicate(_) => "duplicate entry".into(),
        other => other.to_string(),
    }
}

/// Entries decoded together on all cores before the in-order checks (and between two
/// [`AuditProgress`] reports).
pub const AUDIT_CHUNK: usize = 1024;

/// Why an audit could not run at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The checkpoint does not verify under the log key.
    #[error(transparent)]
    Checkpoint(#[from] crate::log::CheckpointError),
    /// The log holds fewer entries than the checkpoint's tree size.
    #[error("log has {got} entries, checkpoint covers {want}")]
    Truncated {
        /// Entries read.
        got: u64,
        /// Checkpoint size.
        want: u64,
    },
    /// Tree hashing failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// Reading entries failed.
    #[error("reading entries: {detail}")]
    Source {
        /// The entry source's error message (or, in the second pass, why an entry the first
        /// pass read no longer parses).
        detail: String,
    },
    /// The checkpoint's effects-index line is malformed (only the log key can sign one).
    #[error(transparent)]
    IndexLine(#[from] IndexLineError),
    /// The second pass ([`reach_quarantine`]) read other entries than the first: the store
    /// changed while it was audited (by a writer, or by someone editing it without the key).
    /// The quarantine it computed is not reported.
    #[error(
        "the second pass read {got} entries whose tree differs from the {want} the audit \
         verified: the store changed during the audit; run it again"
    )]
    ReadChanged {
        /// Entries the second pass read.
        got: u64,
        /// Entries the first pass read.
        want: u64,
    },
}

/// Receives progress of a running [`audit`], e.g. to draw a progress bar. The audit library
/// draws nothing itself: the `memlineage verify` binary implements this with a terminal bar.
///
/// Calls come from the auditing thread, in order, after each chunk of up to
/// [`AUDIT_CHUNK`] entries has been fully checked.
pub trait AuditProgress {
    /// `checked` entries (a running total, counted from the first entry, strictly increasing
    /// between calls) have been decoded, verified and checked in order.
    fn entries_checked(&mut self, checked: u64);
}

/// An [`AuditProgress`] that ignores every report (what [`audit`] uses).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl AuditProgress for NoProgress {
    fn entries_checked(&mut self, _checked: u64) {}
}

/// [`audit_with_progress`] without progress reports.
///
/// # Errors
/// As [`audit_with_progress`]. Does not panic.
pub fn audit<I, T, E>(
    entries: I,
    verifier: &LogVerifier,
    checkpoint_note: &[u8],
    policy: LabelPolicy,
    log_key: KeyId,
) -> Result<AuditReport, AuditError>
where
    I: IntoIterator<Item = Result<T, E>>,
    T: Into<AuditItem>,
    E: std::fmt::Display,
{
    audit_with_progress(
        entries,
        verifier,
        checkpoint_note,
        policy,
        log_key,
        &mut NoProgress,
    )
}

/// Audits `entries` ([`AuditItem`]s, or `(cose, stored label)` pairs, in log order).
///
/// Steps (`spec/lineage.md` §5): verify the checkpoint; for each entry decode and verify its
/// signature (`spec/record.md` §2.3, in batches over the cores, with the answers of checking
/// each alone); check its writer is bound (the log key is bound as `log` from the start),
/// the keyring and tombstone rules, parents and tombstone targets precede it; recompute its
/// label under `policy` and compare with the stored one; check stored content against the
/// signed content hash; hash it into a fresh tree; finally compare the root at the
/// checkpoint's size. Problems are collected, not fatal: every bad entry is named.
///
/// Memory: 32 bytes of tree hashes (about 2 per entry) plus an id→label map entry per entry.
///
/// # Errors
/// [`AuditError`] when the checkpoint is bad, the log is shorter than it, or entries cannot be
/// read. Does not panic.
///
/// `progress` hears the running count of checked entries after each chunk of
/// [`AUDIT_CHUNK`] entries (and after the last, shorter one); it cannot change the result.
pub fn audit_with_progress<I, T, E>(
    entries: I,
    verifier: &LogVerifier,
    checkpoint_note: &[u8],
    policy: LabelPolicy,
    log_key: KeyId,
    progress: &mut dyn AuditProgress,
) -> Result<AuditReport, AuditError>
where
    I: IntoIterator<Item = Result<T, E>>,
    T: Into<AuditItem>,
    E: std::fmt::Display,
{
    audit_secrets(
        entries,
        verifier,
        checkpoint_note,
        policy,
        log_key,
        progress,
        None,
    )
}

/// [`audit_with_progress`] that also computes secrecy (`spec/lineage.md` §8) under `sources`:
/// in the same pass, an entry is secret when `sources` names it a source (asked with its
/// writer's bound principal and its stored content, verified against its signed content
/// hash), when it or its content does not verify (fail closed), or when a parent is secret.
/// The result is [`AuditReport::secrecy`] (`Some` exactly when `sources` is).
///
/// # Errors
/// As [`audit_with_progress`]. Does not panic.
pub fn audit_secrets<I, T, E>(
    entries: I,
    verifier: &LogVerifier,
    checkpoint_note: &[u8],
    policy: LabelPolicy,
    log_key: KeyId,
    progress: &mut dyn AuditProgress,
    sources: Option<&dyn SecretSources>,
) -> Result<AuditReport, AuditError>
where
    I: IntoIterator<Item = Result<T, E>>,
    T: Into<AuditItem>,
    E: std::fmt::Display,
{
    let _span =
        tracing::info_span!("memlineage.verify", gen_ai.operation.name = "verify").entered();
    let checkpoint = verifier.verify(checkpoint_note)?;
    let signed_index = IndexCommitment::from_extension(checkpoint.extension())?;
    // The same lineage state the ledger keeps, fed every entry of the log in order
    // (`spec/lineage.md` §5.2); the labels it recomputes are kept here.
    let mut state = LineageState::new(log_key, "log", policy, LeaseBook::for_audit());
    let mut known = Recomputed::default();
    // Tree hashes in memory, indexed by stored-hash index.
    let mut tree: Vec<[u8; 32]> = Vec::new();
    let mut report = AuditReport {
        checkpoint,
        entries: 0,
        verified: 0,
        label_counts: [0; 4],
        root_matches: false,
        failures: Vec::new(),
        quarantine: Quarantine::default(),
        secrecy: sources.map(|_| Secrecy::default()),
        effects_index: None,
        signed_index,
        read_root: RootHash([0; 32]),
    };
    let mut root_at_checkpoint = None;
    let mut items = entries.into_iter();
    let mut next = read_chunk(&mut items);
    loop {
        let chunk = next?;
        if chunk.is_empty() {
            break;
        }
        // This chunk's signatures on the pool (one batch per core, keys bound so far
        // decompressed once; the answers are those of decoding one by one) while this thread
        // reads the next chunk from the source, which need not be shareable between threads.
        // Order-dependent checks follow.
        let mut decoded = Vec::new();
        next = Ok(Vec::new());
        rayon::in_place_scope(|scope| {
            let (chunk, state, out) = (&chunk, &state, &mut decoded);
            scope.spawn(move |_| *out = decode_chunk(chunk, state));
            next = read_chunk(&mut items);
        });
        for (item, (id, decoded)) in chunk.into_iter().zip(decoded) {
            let index = report.entries;
            let hashes = hashes_to_store(index, &id, &tree)?;
            tree.extend_from_slice(&hashes);
            report.entries += 1;
            if report.entries == report.checkpoint.size() {
                root_at_checkpoint = Some(tree_root(report.entries, &tree)?);
            }
            let admitted = decoded.map_err(Problem::from).and_then(|s| {
                let a = state
                    .admit(&known, index, &s, Content::Stored(item.content.as_deref()))
                    .map_err(Problem::from)?;
                Ok((a, s))
            });
            if let (Some(secrecy), Some(sources)) = (report.secrecy.as_mut(), sources) {
                let (verified, source, parents) = match &admitted {
                    Ok((a, s)) => {
                        // As the fronts read it (`Ledger::origin_node`): lossy UTF-8 of
                        // content that matches its signed hash; redacted or altered content
                        // cannot be shown to hold no secret path.
                        let text = item
                            .content
                            .as_deref()
                            .filter(|_| !a.content_mismatch)
                            .map(String::from_utf8_lossy);
                        let principal = state.principal(&s.writer());
                        let source = match (principal, &text) {
                            (Some(p), Some(t)) => sources.source(p.role, &p.name, t),
                            _ => None,
                        };
                        let parents: Vec<EntryId> =
                            s.entry().parents.iter().map(|p| p.id).collect();
                        (text.is_some() && principal.is_some(), source, parents)
                    }
                    Err(_) => (false, None, Vec::new()),
                };
                secrecy.admit(id, source, verified, &parents);
            }
            // What the row claims besides the label, against the bytes (step 6).
            if let Some(stored) = item.stored_id.filter(|s| *s != id) {
                report.failures.push(AuditFailure {
                    index,
                    id,
                    problem: Problem::IdMismatch { stored },
                });
            }
            if let Ok((_, s)) = &admitted {
                let signed = s.entry().kind;
                if let Some(stored) = item.stored_kind.filter(|k| *k != signed) {
                    report.failures.push(AuditFailure {
                        index,
                        id,
                        problem: Problem::KindMismatch { stored, signed },
                    });
                }
                let signed = s.entry().context_hash;
                if let Some(stored) = item.stored_context.filter(|c| *c != signed) {
                    report.failures.push(AuditFailure {
                        index,
                        id,
                        problem: Problem::ContextMismatch { stored, signed },
                    });
                }
            }
            let admitted = admitted.map(|(a, _)| a);
            match admitted {
                Ok(a) => {
                    let label = a.label;
                    report.verified += 1;
                    report.label_counts[usize::from(label.code())] += 1;
                    if a.content_mismatch {
                        report.failures.push(AuditFailure {
                            index,
                            id,
                            problem: AdmissionError::ContentMismatch.into(),
                        });
                    }
                    // A wrong stored label is reported, but the recomputed one is what the
                    // children inherit: one bad cache row names one entry, not its descendants.
                    if let Some(stored) = item.stored_label.filter(|s| *s != label) {
                        report.failures.push(AuditFailure {
                            index,
                            id,
                            problem: Problem::LabelMismatch {
                                stored,
                                recomputed: label,
                            },
                        });
                    }
                    known.0.insert(id, (index, label));
                }
                Err(problem) => report.failures.push(AuditFailure { index, id, problem }),
            }
            if report.entries == report.checkpoint.size() {
                report.effects_index = Some(state.effects_commitment());
            }
        }
        progress.entries_checked(report.entries);
    }
    // The flags the log records; their reach is the second pass's (`reach_quarantine`).
    report.quarantine = state.quarantine().clone();
    if report.checkpoint.size() == 0 {
        root_at_checkpoint = Some(tree_root(0, &tree)?);
        report.effects_index = Some(IndexCommitment {
            entries: 0,
            root: crate::lineage::effects_index::EMPTY_INDEX_ROOT,
        });
    }
    let Some(root) = root_at_checkpoint else {
        return Err(AuditError::Truncated {
            got: report.entries,
            want: report.checkpoint.size(),
        });
    };
    report.root_matches = root == report.checkpoint.root();
    report.read_root = tree_root(report.entries, &tree)?;
    Ok(report)
}

/// Up to [`AUDIT_CHUNK`] items from the source; fewer only at its end.
fn read_chunk<I, T, E>(items: &mut I) -> Result<Vec<AuditItem>, AuditError>
where
    I: Iterator<Item = Result<T, E>>,
    T: Into<AuditItem>,
    E: std::fmt::Display,
{
    let mut chunk = Vec::with_capacity(AUDIT_CHUNK);
    for item in items.by_ref().take(AUDIT_CHUNK) {
        chunk.push(
            item.map_err(|e| AuditError::Source {
                detail: e.to_string(),
            })?
            .into(),
        );
    }
    Ok(chunk)
}

/// Decodes and verifies a chunk ([`decode_on_all_cores`]) with the keys bound so far; each
/// entry's id comes from its decoded form, or is hashed here when it does not decode.
fn decode_chunk(
    chunk: &[AuditItem],
    state: &LineageState,
) -> Vec<(EntryId, Result<SignedEntry, RecordError>)> {
    let bytes: Vec<&[u8]> = chunk.iter().map(|it| it.cose.as_slice()).collect();
    let entries = decode_on_all_cores(&bytes, |k| state.principal(k).and_then(|p| p.key));
    let ids: Vec<EntryId> = bytes
        .iter()
        .zip(&entries)
        .map(|(b, e)| match e {
            Ok(e) => e.id(),
            Err(_) => EntryId::of_cose(b),
        })
        .collect();
    ids.into_iter().zip(entries).collect()
}

/// The leaf index and recomputed label of every entry the audit admitted so far.
#[derive(Default)]
struct Recomputed(HashMap<EntryId, (u64, Label)>);

impl Known for Recomputed {
    fn label_of(&self, id: &EntryId) -> Option<Label> {
        self.0.get(id).map(|(_, l)| *l)
    }

    fn index_of(&self, id: &EntryId) -> Option<u64> {
        self.0.get(id).map(|(i, _)| *i)
    }
}

/// Second audit pass: which entries the report's active flags quarantine
/// (`spec/forensics.md` §2.3). `entries` are the same COSE bytes, in log order, from leaf 0;
/// they are parsed strictly but their signatures are not verified again (the first pass did):
/// instead their RFC 6962 tree must be the first pass's ([`AuditReport::read_root`]), so bytes
/// changed, dropped or added between the two reads are an error, not another quarantine.
/// Cost: one more tree of the log in memory (64 bytes per entry), as the first pass.
///
/// # Errors
/// [`AuditError::Source`] for a read error; [`Problem`]-class decode errors are reported as
/// [`AuditError::Source`] too (the first pass named the entry); [`AuditError::ReadChanged`]
/// when the entries are not those the first pass read (the report's quarantine is then left
/// as the first pass found it: the flags, without their reach).
pub fn reach_quarantine<I, T, E>(
    report: &mut AuditReport,
    entries: I,
    policy: LabelPolicy,
) -> Result<(), AuditError>
where
    I: IntoIterator<Item = Result<T, E>>,
    T: AsRef<[u8]>,
    E: std::fmt::Display,
{
    if !report.quarantine.is_active() {
        return report.quarantine.rebuild(
            std::iter::empty::<Result<(EntryId, Vec<Parent>), AuditError>>(),
            &policy,
        );
    }
    // The tree of what this pass reads, to be compared with the first pass's.
    let mut tree: Vec<[u8; 32]> = Vec::new();
    let mut read = 0u64;
    let parsed = entries.into_iter().map(|item| {
        let bytes = item.map_err(|e| AuditError::Source {
            detail: e.to_string(),
        })?;
        let bytes = bytes.as_ref();
        let id = EntryId::of_cose(bytes);
        let hashes = hashes_to_store(read, &id, &tree)?;
        tree.extend_from_slice(&hashes);
        read += 1;
        let e = parse_unverified(bytes).map_err(|e| AuditError::Source {
            detail: e.to_string(),
        })?;
        Ok::<_, AuditError>((id, e.parents))
    });
    let mut quarantine = report.quarantine.clone();
    quarantine.rebuild(parsed, &policy)?;
    if read != report.entries || tree_root(read, &tree)? != report.read_root {
        return Err(AuditError::ReadChanged {
            got: read,
            want: report.entries,
        });
    }
    report.quarantine = quarantine;
    Ok(())
}
