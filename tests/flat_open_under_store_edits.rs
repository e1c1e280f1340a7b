//! A store-only attacker (who can write every byte of the SQLite file but holds no key) against
//! the flat open of the label seal (`spec/lineage.md` §5.1): each test edits a real ledger file
//! the way such an attacker could and requires that a refused payment stays refused, that no
//! label reads better than the signed log implies, and that `append` labels no child better.
//! Four of these attacks succeeded when the file was written (a flag dropped when its source's
//! row does not verify; a flag cut out of the log under an older or deleted seal); they are
//! refused since (`spec/lineage.md` §5.1 steps 4 and 5).

#[path = "common/sqlite_support.rs"]
mod sqlite_support;
use sqlite_support::sqlite_ledger;

#[path = "common/landlord.rs"]
mod landlord;

use landlord::ledger_support::put as append;
use landlord::{landlord, pay, Landlord, Principals};
use memlineage::gate::{Policy, ToolCall};
use memlineage::ledger::META_SEAL;
use memlineage::lineage::quarantine::Reach;
use memlineage::lineage::Label;
use memlineage::log::LogSigner;
use memlineage::record::{EntryId, Kind, Parent, ProvEntry, Weight, WriterKey};
use memlineage::store::SqliteStore;
use memlineage::{Ledger, LedgerError};
use rusqlite::{params, Connection};
use std::path::{Path, PathBuf};

fn log() -> LogSigner {
    LogSigner::new("test.example/attack", WriterKey::for_label("af/log")).unwrap()
}

/// The ledger of `hidden_quarantine_state_is_refused` (tests/fail_closed.rs): a prompt, a
/// forum post (tool output) and a memo derived from both (the post over a weak edge, so the
/// memo is Derived-Trusted and may justify a payment), then the post flagged (reach all) so
/// that the payment is refused; then `after` more prompts.
struct Scene {
    _dir: tempfile::TempDir,
    path: PathBuf,
    user: WriterKey,
    agent: WriterKey,
    prompt: EntryId,
    post: EntryId,
    memo: EntryId,
    /// The flag entry (`None` when built unflagged).
    flag: Option<EntryId>,
    /// Later prompts (after the flag).
    later: Vec<EntryId>,
    /// The stored seal just before the flag was appended.
    seal_before_flag: String,
    call: ToolCall,
}

fn stored_seal(path: &Path) -> String {
    Connection::open(path)
        .unwrap()
        .query_row("SELECT value FROM meta WHERE key = ?1", [META_SEAL], |r| {
            r.get(0)
        })
        .unwrap()
}

impl Scene {
    fn new(after: usize) -> Self {
        Self::with(after, false, true)
    }

    /// As [`Scene::new`], with a checkpoint signed right after the flag when `checkpoint`.
    /// Unflagged (and with no later entries) unless `flagged`.
    fn with(after: usize, checkpoint: bool, flagged: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let mut l = sqlite_ledger(&path, log());
        let p = Principals::new("af");
        let Landlord { prompt, post, memo } = landlord(&mut l, &p);
        let Principals { user, agent, .. } = p;
        let call = pay(memo);
        assert!(
            l.gate(&Policy::default(), &call).is_allow(),
            "Derived-Trusted"
        );
        let seal_before_flag = stored_seal(&path);
        let mut flag = None;
        if flagged {
            flag = Some(l.flag(post, Reach::All, &user, "advisory").unwrap().id);
            assert!(!l.gate(&Policy::default(), &call).is_allow(), "quarantined");
        }
        if checkpoint {
            l.checkpoint().unwrap();
        }
        let later = (0..if flagged { after } else { 0 })
            .map(|i| append(&mut l, &user, Kind::Prompt, &format!("later {i}"), &[]))
            .collect();
        drop(l);
        Scene {
            _dir: dir,
            path,
            user,
            agent,
            prompt,
            post,
            memo,
            flag,
            later,
            seal_before_flag,
            call,
        }
    }

    fn flag(&self) -> EntryId {
        self.flag.expect("a flagged scene")
    }

    fn db(&self) -> Connection {
        Connection::open(&self.path).unwrap()
    }

    fn open(&self) -> Result<Ledger<SqliteStore>, LedgerError> {
        let store = SqliteStore::open(&self.path)?;
        Ledger::open(store, log())
    }

    /// The payment must stay refused: the ledger refuses to open (nothing is allowed on it), or
    /// it opens and the gate does not allow the payment.
    fn assert_refused(&self, what: &str) {
        let l = match self.open() {
            Ok(l) => l,
            Err(e) => {
                eprintln!("{what}: refused on open: {e}");
                return;
            }
        };
        let d = l.gate(&Policy::default(), &self.call);
        assert!(
            !d.is_allow(),
            "{what}: the payment was allowed; memo quarantined: {}, label {:?}",
            l.is_quarantined(&self.memo),
            l.label(&self.memo)
        );
    }
}

/// Gives `tree_hashes` the shape of the tree size the `entries` table now implies (its largest
/// index), as an attacker would after adding, moving or removing rows: the open checks only the
/// table's largest index (the hashes are public SHA-256 values; an attacker could as well
/// recompute them all).
fn fit_tree_hashes(db: &Connection) {
    let max: i64 = db
        .query_row("SELECT max(idx) FROM entries", [], |r| r.get(0))
        .unwrap();
    let size = u64::try_from(max + 1).unwrap();
    let want = i64::try_from(memlineage::log::stored_hash_index(0, size)).unwrap();
    db.execute("DELETE FROM tree_hashes WHERE idx >= ?1", [want])
        .unwrap();
    db.execute(
        "INSERT OR IGNORE INTO tree_hashes (idx, hash) VALUES (?1, ?2)",
        params![want - 1, vec![0u8; 32]],
    )
    .unwrap();
}

fn set_seal(db: &Connection, value: &str) {
    let n = db
        .execute(
            "UPDATE meta SET value = ?2 WHERE key = ?1",
            params![META_SEAL, value],
        )
        .unwrap();
    assert_eq!(n, 1);
}

/// Replaying the seal from before the flag: the flag row is then after the seal, verified from
/// its signed bytes and applied; with its kind changed too, it does not match its signed bytes.
#[test]
fn an_older_seal_replayed_keeps_the_flag() {
    let s = Scene::new(2);
    set_seal(&s.db(), &s.seal_before_flag);
    let l = s.open().unwrap();
    assert!(l.is_quarantined(&s.memo));
    s.assert_refused("older seal");
    drop(l);
    s.db()
        .execute(
            "UPDATE entries SET kind = 1 WHERE id = ?1",
            [&s.flag().0[..]],
        )
        .unwrap();
    assert!(s.open().is_err(), "older seal, flag's kind changed");
}

/// Deleting the seal row, or putting a memlineage 0.1 (`v1`) seal in its place: every row is
/// verified and labelled again, the flag applied.
#[test]
fn a_deleted_or_v1_seal_keeps_the_flag() {
    for v1 in [false, true] {
        let s = Scene::new(2);
        let db = s.db();
        if v1 {
            set_seal(&db, &format!("v1 9 {0} {0}", "00".repeat(32)));
        } else {
            let n = db
                .execute("DELETE FROM meta WHERE key = ?1", [META_SEAL])
                .unwrap();
            assert_eq!(n, 1);
        }
        let l = s.open().unwrap();
        assert!(l.is_quarantined(&s.memo), "v1 {v1}");
        s.assert_refused(&format!("no seal (v1 {v1})"));
    }
}

/// A seal value that does not verify (a sealed size edited) is refused.
#[test]
fn an_edited_seal_is_refused() {
    let s = Scene::new(0);
    let seal = stored_seal(&s.path);
    let edited = seal.replacen("v2 7 ", "v2 6 ", 1);
    assert_ne!(edited, seal, "{seal}");
    set_seal(&s.db(), &edited);
    assert!(matches!(s.open(), Err(LedgerError::Seal(_))));
}

/// Moving the memo's row beyond the seal (or to another index below it): its tag binds the
/// index, so it is either not in the log (no label: the gate refuses) or refused.
#[test]
fn a_row_moved_is_absent_or_refused() {
    for to in ["1000", "(SELECT max(idx) + 1 FROM entries)"] {
        let s = Scene::new(2);
        s.db()
            .execute(
                &format!("UPDATE entries SET idx = {to} WHERE id = ?1"),
                [&s.memo.0[..]],
            )
            .unwrap();
        fit_tree_hashes(&s.db());
        if let Ok(l) = s.open() {
            assert_ne!(
                l.label(&s.memo),
                Some(Label::DerivedTrusted),
                "moved to {to}"
            );
        }
        s.assert_refused(&format!("memo moved to {to}"));
    }
}

/// The tag of a row with effects (a keyring binding), or of the Trusted prompt's row, copied
/// onto the memo's row with the label Trusted: the memo's row no longer verifies. Unflagged,
/// the memo then reads External (it was Derived-Trusted, and the payment allowed) and the
/// payment is refused; flagged, the quarantine rescan reads the memo's row and the open fails.
#[test]
fn a_copied_tag_does_not_verify() {
    for flagged in [false, true] {
        for from in ["kind = 6 AND ?2 IS NOT NULL", "id = ?2"] {
            let s = Scene::with(0, false, flagged);
            s.db()
                .execute(
                    &format!(
                        "UPDATE entries SET tag = (SELECT tag FROM entries WHERE {from} LIMIT 1), \
                         label = 0 WHERE id = ?1"
                    ),
                    params![&s.memo.0[..], &s.prompt.0[..]],
                )
                .unwrap();
            match s.open() {
                Ok(l) => assert_eq!(l.label(&s.memo), Some(Label::External), "{from}"),
                Err(e) => assert!(flagged, "{from}: unflagged, refused on open: {e}"),
            }
            s.assert_refused(&format!("tag from {from}, flagged {flagged}"));
        }
    }
}

/// A non-effect row's kind changed to one with effects: the effects chain differs.
#[test]
fn a_row_given_a_kind_with_effects_is_refused() {
    for kind in 5..=11 {
        let s = Scene::new(0);
        s.db()
            .execute(
                "UPDATE entries SET kind = ?2 WHERE id = ?1",
                params![&s.memo.0[..], kind],
            )
            .unwrap();
        assert!(
            matches!(s.open(), Err(LedgerError::Seal(_))),
            "memo given kind {kind}"
        );
    }
}

/// A release forged from copied bytes: the flag's row copied after the seal as a release
/// (kind 9), and the flag's bytes stored under a fresh id. Neither is believed.
#[test]
fn a_release_forged_from_copied_bytes_is_refused() {
    for id in ["flag", "other"] {
        let s = Scene::new(0);
        let db = s.db();
        let new_id: Vec<u8> = match id {
            "flag" => {
                // The id column is unique: the flag's id with one bit flipped.
                let mut v = s.flag().0.to_vec();
                v[0] ^= 1;
                v
            }
            _ => vec![7; 32],
        };
        db.execute(
            "INSERT INTO entries (idx, id, cose, kind, label, content_hash, tag) \
             SELECT (SELECT max(idx) + 1 FROM entries), ?2, cose, 9, label, content_hash, tag \
             FROM entries WHERE id = ?1",
            params![&s.flag().0[..], new_id],
        )
        .unwrap();
        fit_tree_hashes(&db);
        match s.open() {
            Err(e) => eprintln!("refused: {e}"),
            Ok(l) => {
                assert!(l.is_quarantined(&s.memo), "{id}");
                s.assert_refused(&format!("forged release ({id})"));
            }
        }
    }
}

/// A row inserted after the seal with the bytes of the Trusted prompt (under another id, and
/// as a Trusted row): not believed, and not in the log under the prompt's id twice.
#[test]
fn a_row_inserted_after_the_seal_with_copied_bytes_is_refused() {
    let s = Scene::new(0);
    s.db()
        .execute(
            "INSERT INTO entries (idx, id, cose, kind, label, content_hash, tag) \
             SELECT (SELECT max(idx) + 1 FROM entries), ?2, cose, kind, 0, content_hash, tag \
             FROM entries WHERE id = ?1",
            params![&s.prompt.0[..], vec![5u8; 32]],
        )
        .unwrap();
    fit_tree_hashes(&s.db());
    match s.open() {
        Err(e) => eprintln!("refused: {e}"),
        Ok(l) => {
            assert_eq!(l.label(&EntryId([5; 32])), None);
            s.assert_refused("copied row");
        }
    }
}

/// The quarantine rescan reads the parents of the entries after the flagged source from their
/// stored bytes: rewriting a descendant's bytes (here a child of the memo appended after the
/// flag, its `cose` replaced by a parentless prompt's) must not clear it.
#[test]
fn a_descendant_rewritten_for_the_rescan_stays_quarantined() {
    let s = Scene::new(1);
    let child = {
        let mut l = s.open().unwrap();
        let c = append(
            &mut l,
            &s.agent,
            Kind::Summary,
            "again",
            &[(s.memo, 1_000_000)],
        );
        assert!(l.is_quarantined(&c));
        c
    };
    s.db()
        .execute(
            "UPDATE entries SET cose = (SELECT cose FROM entries WHERE id = ?2) WHERE id = ?1",
            params![&child.0[..], &s.later[0].0[..]],
        )
        .unwrap();
    match s.open() {
        Err(e) => eprintln!("refused: {e}"),
        Ok(l) => {
            assert!(l.is_quarantined(&child));
            assert!(!l.gate(&Policy::default(), &pay(child)).is_allow());
        }
    }
}

/// The flagged source's row damaged (deleted, its tag cleared, its label flipped, moved):
/// on open the flag's target has no verified index, and `Quarantine::apply` ignores a flag
/// whose source index is unknown, so the memo is no longer quarantined and the payment is
/// allowed (`src/lineage/quarantine.rs` `apply`: `(k, Some(source), None)` → `Rescan::No`).
#[test]
fn a_damaged_flag_source_row_keeps_the_flag() {
    let mut hidden = Vec::new();
    for attack in [
        "DELETE FROM entries WHERE id = ?1",
        "UPDATE entries SET tag = NULL WHERE id = ?1",
        "UPDATE entries SET label = 0 WHERE id = ?1",
        "UPDATE entries SET idx = 1000 WHERE id = ?1",
    ] {
        let s = Scene::new(0);
        assert_eq!(s.db().execute(attack, [&s.post.0[..]]).unwrap(), 1);
        let l = match s.open() {
            Ok(l) => l,
            Err(e) => {
                eprintln!("{attack}: refused: {e}");
                continue;
            }
        };
        eprintln!(
            "{attack}: memo quarantined {}, label {:?}, gate {:?}",
            l.is_quarantined(&s.memo),
            l.label(&s.memo),
            l.gate(&Policy::default(), &s.call)
        );
        if !l.is_quarantined(&s.memo) || l.gate(&Policy::default(), &s.call).is_allow() {
            hidden.push(attack);
        }
    }
    assert!(hidden.is_empty(), "the flag was hidden by: {hidden:?}");
}

/// The same damage made while a writer's handle is live: it refreshes, then another handle
/// appends a child of the memo; the child must not come out better than quarantined.
#[test]
fn a_child_appended_over_a_damaged_flag_source_is_quarantined() {
    let s = Scene::new(0);
    s.db()
        .execute(
            "UPDATE entries SET tag = NULL WHERE id = ?1",
            [&s.post.0[..]],
        )
        .unwrap();
    // Refusing to open is a refusal too (the quarantine rescan cannot believe the damaged row).
    let Ok(mut l) = s.open() else {
        return;
    };
    let child = append(
        &mut l,
        &s.agent,
        Kind::Summary,
        "child",
        &[(s.memo, 1_000_000)],
    );
    assert!(
        l.is_quarantined(&child),
        "child of a quarantined memo: label {:?}, gate {:?}",
        l.label(&child),
        l.gate(&Policy::default(), &pay(child))
    );
    assert!(!l.gate(&Policy::default(), &pay(child)).is_allow());
}

/// The flag cut out of the log: the seal from before the flag replayed (or the seal row
/// deleted), the flag's row deleted, the rows after it moved down one index and the tree
/// hashes of the old last leaf deleted so that `tree_hashes` has the shape of the new size.
/// The rows after the (replayed or absent) seal are verified from their signed bytes one by
/// one, which each still are, their indexes run contiguously, and open checks no tree root,
/// so the log opens without the flag and the payment is allowed. A checkpoint signed right
/// after the flag (kept in the side file) does not stop it: the store still holds as many
/// entries as it signed. Unlike a plain rollback, the entries after the flag are kept.
#[test]
fn a_flag_cut_out_of_the_log_is_refused() {
    let mut opened = Vec::new();
    for (checkpoint, strip) in [(false, false), (true, false), (true, true)] {
        for replay in [true, false] {
            if let Some(gate) = cut_out_the_flag(checkpoint, replay, strip) {
                opened.push(format!(
                    "checkpoint {checkpoint}, replay {replay}, tags stripped {strip}: {gate}"
                ));
            }
        }
    }
    assert!(opened.is_empty(), "opened without the flag: {opened:?}");
}

/// What stays open, precisely, and what closes it. The flag cut out as above with the moved
/// rows' tags removed too (so they look like rows after the seal), and every head the log key
/// signed over them deleted (the store's checkpoints but the empty tree's, and the side
/// file): nothing the key signed
/// then says where each entry stood, and the ledger opens without the flag, so the payment is
/// allowed. No design that keeps its state only in the directory the attacker writes can
/// refuse this: the attacker can as well put back a copy of the directory from before the flag
/// (a rollback), which is byte for byte a state the ledger was in; entries sign no position,
/// and whatever binds one (tags, the seal, checkpoints) is in that directory. A head kept out
/// of the attacker's reach closes both: the front's pin (`spec/hooks.md` §6.2,
/// `OpenOptions::checkpoints`), here the checkpoint signed right after the flag.
#[test]
fn without_a_pin_a_flag_cut_out_with_every_head_deleted_opens_and_the_pin_refuses_it() {
    for replay in [true, false] {
        let s = Scene::with(2, true, true);
        let side = s.path.with_extension("db.checkpoint");
        let pin = std::fs::read(&side).unwrap();
        cut(&s, replay, true);
        // Every head over those rows: all but the empty tree's, signed at creation, which
        // signs the parameters (without any, the open is refused: `ParametersError::Unsigned`).
        s.db()
            .execute("DELETE FROM checkpoints WHERE size > 0", [])
            .unwrap();
        std::fs::remove_file(&side).unwrap();
        let l = s.open().unwrap();
        assert!(!l.is_quarantined(&s.memo), "replay {replay}");
        assert!(
            l.gate(&Policy::default(), &s.call).is_allow(),
            "replay {replay}"
        );
        drop(l);
        let mut opts = memlineage::ledger::OpenOptions::default();
        opts.checkpoints = vec![pin];
        match Ledger::open_with(SqliteStore::open(&s.path).unwrap(), log(), opts) {
            Err(LedgerError::Seal(_) | LedgerError::BehindSignedCheckpoint { .. }) => {}
            Err(e) => panic!("replay {replay}: refused, but not by the pin: {e}"),
            Ok(l) => panic!(
                "replay {replay}: opened against the pin; memo quarantined {}",
                l.is_quarantined(&s.memo)
            ),
        }
    }
}

/// The attack of `a_flag_cut_out_of_the_log_is_refused`, with or without a checkpoint
/// signed (and kept in the side file) right after the flag, the seal from before the flag
/// replayed (`replay`) or deleted, and the moved rows' tags removed (`strip`). `None` when
/// refused, else what the gate says of the payment and whether the memo is quarantined.
fn cut_out_the_flag(checkpoint: bool, replay: bool, strip: bool) -> Option<String> {
    let s = Scene::with(2, checkpoint, true);
    cut(&s, replay, strip);
    let l = match s.open() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("flag cut out (checkpoint {checkpoint}, replay {replay}): refused: {e}");
            return None;
        }
    };
    assert_eq!(
        l.label(&s.later[1]),
        Some(Label::Trusted),
        "later entries kept"
    );
    let gate = l.gate(&Policy::default(), &s.call);
    if l.is_quarantined(&s.memo) && !gate.is_allow() {
        return None;
    }
    Some(format!(
        "memo quarantined {}, gate {gate:?}",
        l.is_quarantined(&s.memo)
    ))
}

/// Cuts the flag out of `s`'s file: the seal from before the flag replayed (`replay`) or
/// deleted, the flag's row deleted, the rows after it moved down one index (their tags
/// removed when `strip`) and `tree_hashes` fitted to the new size.
fn cut(s: &Scene, replay: bool, strip: bool) {
    let db = s.db();
    if replay {
        set_seal(&db, &s.seal_before_flag);
    } else {
        db.execute("DELETE FROM meta WHERE key = ?1", [META_SEAL])
            .unwrap();
    }
    let flag_idx: i64 = db
        .query_row(
            "SELECT idx FROM entries WHERE id = ?1",
            [&s.flag().0[..]],
            |r| r.get(0),
        )
        .unwrap();
    db.execute("DELETE FROM entries WHERE idx = ?1", [flag_idx])
        .unwrap();
    // One by one in index order, so that the primary key never collides.
    let max: i64 = db
        .query_row("SELECT max(idx) FROM entries", [], |r| r.get(0))
        .unwrap();
    for i in flag_idx + 1..=max {
        db.execute("UPDATE entries SET idx = ?1 - 1 WHERE idx = ?1", [i])
            .unwrap();
    }
    if strip {
        db.execute("UPDATE entries SET tag = NULL WHERE idx >= ?1", [flag_idx])
            .unwrap();
    }
    fit_tree_hashes(&db);
}

/// The file rolled back (the flag row removed and the seal from before it put back) while a
/// handle is live: its refresh keeps what it verified, so the payment stays refused there.
#[test]
fn a_rollback_under_a_live_handle_keeps_the_flag_there() {
    let s = Scene::new(0);
    let mut l = s.open().unwrap();
    let db = s.db();
    set_seal(&db, &s.seal_before_flag);
    db.execute("DELETE FROM entries WHERE id = ?1", [&s.flag().0[..]])
        .unwrap();
    drop(db);
    match l.refresh() {
        Err(e) => eprintln!("refused: {e}"),
        Ok(_) => {
            assert!(l.is_quarantined(&s.memo));
            assert!(!l.gate(&Policy::default(), &s.call).is_allow());
            // Nor does an append sign a child better than quarantined.
            let e =
                ProvEntry::new(s.agent.key_id(), Kind::Summary, b"c").with_parents(vec![Parent {
                    id: s.memo,
                    weight: Weight::ONE,
                }]);
            if let Ok(a) = l.append(e, &s.agent, b"c") {
                assert!(l.is_quarantined(&a.id));
            }
        }
    }
}

/// A reader opened before the flag; another handle flags the post; the attacker then clears
/// the post's row tag before the reader refreshes: the refresh applies the flag with no
/// verified index for its source, so the reader drops it and allows the payment.
#[test]
fn a_flag_read_by_refresh_over_a_damaged_source_is_kept() {
    let s = Scene::with(0, false, false);
    let mut reader = s.open().unwrap();
    assert!(reader.gate(&Policy::default(), &s.call).is_allow());
    {
        let mut writer = s.open().unwrap();
        writer
            .flag(s.post, Reach::All, &s.user, "advisory")
            .unwrap();
        assert!(!writer.gate(&Policy::default(), &s.call).is_allow());
    }
    s.db()
        .execute(
            "UPDATE entries SET tag = NULL WHERE id = ?1",
            [&s.post.0[..]],
        )
        .unwrap();
    if reader.refresh().is_ok() {
        assert!(
            reader.is_quarantined(&s.memo),
            "gate {:?}",
            reader.gate(&Policy::default(), &s.call)
        );
        assert!(!reader.gate(&Policy::default(), &s.call).is_allow());
    }
}
