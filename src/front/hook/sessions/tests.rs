//! The session journal (`spec/hooks.md` §6.3) and the records a [`FileSessions`] keeps: real
//! files in a temporary directory.

use super::*;
use crate::record::EntryId;
use proptest::prelude::*;

/// A read id distinct for every `n`.
fn id(n: u32, tag: u8) -> EntryId {
    let mut b = [tag; 32];
    b[..4].copy_from_slice(&n.to_be_bytes());
    EntryId(b)
}

fn lines(fs: &FileSessions, sid: &str) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(fs.path(sid)).unwrap();
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Session `sid` as a fresh `FileSessions` parses it from its file.
fn parsed(fs: &FileSessions, sid: &str) -> Session {
    FileSessions::new(fs.dir().to_path_buf()).load(sid).unwrap()
}

/// One change to a session, as the fronts make them.
#[derive(Clone, Debug)]
enum Op {
    /// `n` new reads.
    Read(u8),
    /// The reads folded into a context entry.
    Fold,
    /// One more output that could not be recorded.
    Unrecorded,
    /// The ledger caught up with, the start seen, the seal set.
    Scalars(u8),
    /// The reads rewritten other than by appending (reversed), as a front never does: the
    /// file must still say exactly what the session holds.
    Rewrite,
    /// Another process (a second `FileSessions`) loads the session, adds a read and saves it.
    Other,
    /// The long-lived `FileSessions` is dropped and a new one made.
    Forget,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1u8..40).prop_map(Op::Read),
        1 => Just(Op::Fold),
        1 => Just(Op::Unrecorded),
        2 => any::<u8>().prop_map(Op::Scalars),
        1 => Just(Op::Rewrite),
        2 => Just(Op::Other),
        1 => Just(Op::Forget),
    ]
}

/// Applies `op` to `s` (and to the file, for [`Op::Other`]); `next` numbers new reads.
fn apply(op: &Op, s: &mut Session, dir: &Path, next: &mut u32) {
    match op {
        Op::Read(n) => {
            for _ in 0..*n {
                *next += 1;
                s.read(id(*next, 1));
            }
        }
        Op::Fold => {
            *next += 1;
            s.context = Some(id(*next, 2));
            s.covered = s.reads().len() as u64;
        }
        Op::Unrecorded => s.unrecorded += 1,
        Op::Scalars(x) => {
            s.seen += u64::from(*x);
            s.started = x % 2 == 0;
            s.unseen = (x % 3 == 0).then(|| id(u32::from(*x), 3));
            s.seal = (x % 5 != 0).then(|| format!("{x:064x}"));
        }
        Op::Rewrite => {
            let mut fresh = Session::new(&s.id);
            fresh.set_reads(s.reads().iter().rev().copied().collect());
            fresh.unrecorded = s.unrecorded;
            fresh.context = s.context;
            fresh.covered = s.covered;
            fresh.seen = s.seen;
            fresh.started = s.started;
            fresh.unseen = s.unseen;
            fresh.seal = s.seal.clone();
            *s = fresh;
        }
        Op::Other => {
            let mut other = FileSessions::new(dir.to_path_buf());
            let mut theirs = other.load(&s.id).unwrap();
            *next += 1;
            theirs.read(id(*next, 4));
            other.save(&theirs).unwrap();
            *s = theirs;
        }
        Op::Forget => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any sequence of changes saved through a long-lived `FileSessions` loads back equal to
    /// the session in memory, through it (its kept copy) and through a fresh one (the file
    /// parsed), and the file stays within its bound.
    #[test]
    fn saved_sessions_load_back_equal(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let sdir = dir.path().join("s");
        let mut kept = FileSessions::new(sdir.clone());
        let mut s = Session::new("prop");
        let mut next = 0;
        for op in &ops {
            apply(op, &mut s, &sdir, &mut next);
            if matches!(op, Op::Forget) {
                kept = FileSessions::new(sdir.clone());
            }
            if !matches!(op, Op::Other) {
                kept.save(&s).unwrap();
            }
            prop_assert_eq!(&kept.load("prop").unwrap(), &s, "kept, after {:?}", op);
            let mut fresh = FileSessions::new(sdir.clone());
            prop_assert_eq!(&fresh.load("prop").unwrap(), &s, "parsed, after {:?}", op);
            let ls = lines(&kept, "prop");
            let size: usize = ls.iter().map(Vec::len).sum();
            let bound = (2 * ls[0].len()).max(MIN_JOURNAL_BYTES as usize);
            prop_assert!(size <= bound, "{} bytes, bound {}", size, bound);
        }
    }
}

/// A save that only adds reads appends one line holding the new reads only; a save that is not
/// an extension rewrites the file whole.
#[test]
fn a_save_that_adds_reads_appends_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut fs = FileSessions::new(dir.path().join("s"));
    let mut s = Session::new("a");
    s.read(id(1, 1));
    fs.save(&s).unwrap();
    assert_eq!(lines(&fs, "a").len(), 1);
    s.read(id(2, 1));
    s.seal = Some("ab".repeat(32));
    fs.save(&s).unwrap();
    let ls = lines(&fs, "a");
    assert_eq!(ls.len(), 2, "appended");
    let delta = String::from_utf8(ls[1].clone()).unwrap();
    assert!(delta.contains(&id(2, 1).to_string()), "{delta}");
    assert!(!delta.contains(&id(1, 1).to_string()), "{delta}");
    assert!(delta.starts_with(r#"{"delta":1,"at":1,"#), "{delta}");
    // Not an extension: rewritten.
    let mut swapped = s.reads().to_vec();
    swapped.swap(0, 1);
    s.set_reads(swapped);
    fs.save(&s).unwrap();
    assert_eq!(lines(&fs, "a").len(), 1);
    assert_eq!(parsed(&fs, "a"), s);
}

/// A file written by another process (or edited by the agent) since this `FileSessions` loaded
/// or saved it is read again, never answered from the kept copy, and never appended to.
#[test]
fn a_file_changed_by_another_writer_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let sdir = dir.path().join("s");
    let mut ours = FileSessions::new(sdir.clone());
    let mut s = Session::new("b");
    s.read(id(1, 1));
    ours.save(&s).unwrap();
    assert_eq!(ours.load("b").unwrap(), s);
    // Another process appends (a hook in process while the server runs).
    let mut theirs = FileSessions::new(sdir.clone());
    let mut t = theirs.load("b").unwrap();
    t.unrecorded = 1;
    theirs.save(&t).unwrap();
    assert_eq!(ours.load("b").unwrap(), t, "an append by another writer");
    // Another writer rewrites the file in place (same inode).
    let mut u = t.clone();
    u.unrecorded = 2;
    std::fs::write(ours.path("b"), journal::whole(&u).unwrap()).unwrap();
    assert_eq!(ours.load("b").unwrap(), u, "a file rewritten in place");
    // And a save of ours after an append it did not see does not append a delta computed
    // against a record the file no longer holds (it would follow the wrong count of reads).
    let mut w = theirs.load("b").unwrap();
    w.read(id(9, 1));
    theirs.save(&w).unwrap();
    assert_eq!(lines(&theirs, "b").len(), 2, "theirs appended");
    let mut v = u.clone();
    v.read(id(2, 1));
    ours.save(&v).unwrap();
    assert_eq!(FileSessions::new(sdir).load("b").unwrap(), v);
}

/// A final line without its newline (an append cut short) is not part of the record: the
/// record is what the lines before it say, and the next save rewrites the file whole. A
/// finished line that is not a delta, a delta out of place, or one of another version refuses
/// the session.
#[test]
fn torn_and_malformed_lines() {
    let dir = tempfile::tempdir().unwrap();
    let sdir = dir.path().join("s");
    let mut fs = FileSessions::new(sdir.clone());
    let mut s = Session::new("c");
    s.read(id(1, 1));
    fs.save(&s).unwrap();
    let before = s.clone();
    s.read(id(2, 1));
    s.unrecorded = 3;
    fs.save(&s).unwrap();
    let good = std::fs::read(fs.path("c")).unwrap();
    let ls = lines(&fs, "c");
    assert_eq!(ls.len(), 2);
    // The MCP server's count of unrecorded output reads the deltas too.
    assert_eq!(parse_record(&good).unwrap().unrecorded, 3);

    // Torn: the record before the torn line, then rewritten whole by the next save.
    let torn = &ls[1][..ls[1].len() - 1];
    std::fs::write(fs.path("c"), [&ls[0][..], torn].concat()).unwrap();
    assert_eq!(FileSessions::new(sdir.clone()).load("c").unwrap(), before);
    let mut t = fs.load("c").unwrap();
    assert_eq!(t, before, "the kept copy is not used: the file changed");
    t.read(id(3, 1));
    fs.save(&t).unwrap();
    assert_eq!(
        lines(&fs, "c").len(),
        1,
        "rewritten, not appended after torn bytes"
    );
    assert_eq!(FileSessions::new(sdir.clone()).load("c").unwrap(), t);

    let refused = |bytes: Vec<u8>, want: &str| {
        std::fs::write(
            sdir.join(format!("{}.json", FileSessions::name("c"))),
            bytes,
        )
        .unwrap();
        let e = FileSessions::new(sdir.clone()).load("c").unwrap_err();
        assert!(matches!(e, HookError::Session { .. }), "{e}");
        assert!(e.to_string().contains(want), "{e}, want {want}");
    };
    refused([&good[..], b"garbage\n"].concat(), "line 3: expected value");
    refused([&good[..], b"\n"].concat(), "line 3: EOF");
    refused(
        [&good[..], &ls[1][..]].concat(),
        "line 3: appends at read 1",
    );
    let v2 = String::from_utf8(ls[1].clone())
        .unwrap()
        .replace(r#"{"delta":1,"#, r#"{"delta":2,"#);
    refused(
        [&ls[0][..], v2.as_bytes()].concat(),
        "line 2: delta version 2",
    );
    let bad_id = String::from_utf8(ls[1].clone())
        .unwrap()
        .replace(&id(2, 1).to_string(), "zz");
    refused(
        [&ls[0][..], bad_id.as_bytes()].concat(),
        "line 2: entry id \"zz\"",
    );
    refused(
        [&ls[1][..], &ls[1][..]].concat(),
        "line 1: unknown field `delta`",
    );
    let record = String::from_utf8(ls[0].clone()).unwrap();
    refused(
        [&ls[0][..], record.as_bytes()].concat(),
        "line 2: unknown field `id`",
    );
    // Line 1 cut short is no record at all.
    refused(ls[0][..ls[0].len() / 2].to_vec(), "line 1:");
}

/// A record written before the journal (one JSON object, no newline) loads as it did, and the
/// first save rewrites it whole (it has no newline to append after); later saves append.
#[test]
fn a_record_written_before_the_journal_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let mut fs = FileSessions::new(dir.path().join("s"));
    let mut s = Session::new("d");
    s.read(id(1, 1));
    s.seen = 4;
    std::fs::create_dir_all(fs.dir()).unwrap();
    std::fs::write(fs.path("d"), serde_json::to_vec(&s).unwrap()).unwrap();
    assert_eq!(fs.load("d").unwrap(), s);
    s.read(id(2, 1));
    fs.save(&s).unwrap();
    assert_eq!(lines(&fs, "d").len(), 1);
    assert!(std::fs::read(fs.path("d")).unwrap().ends_with(b"\n"));
    s.read(id(3, 1));
    fs.save(&s).unwrap();
    assert_eq!(lines(&fs, "d").len(), 2);
    assert_eq!(parsed(&fs, "d"), s);
}

/// Deltas never grow the file past twice its first line (or [`MIN_JOURNAL_BYTES`]): a save
/// that would is a rewrite, which compacts the journal into one line.
#[test]
fn the_journal_is_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let mut fs = FileSessions::new(dir.path().join("s"));
    let mut s = Session::new("e");
    let mut most = 0;
    let mut rewrites = 0;
    for n in 0..1500 {
        s.read(id(n, 1));
        s.seal = Some(format!("{n:064x}"));
        fs.save(&s).unwrap();
        let ls = lines(&fs, "e");
        let size: usize = ls.iter().map(Vec::len).sum();
        assert!(size <= (2 * ls[0].len()).max(MIN_JOURNAL_BYTES as usize));
        rewrites += usize::from(ls.len() == 1);
        most = most.max(ls.len());
    }
    assert!(most > 100, "deltas were appended ({most} lines at most)");
    assert!((2..40).contains(&rewrites), "compacted {rewrites} times");
    assert_eq!(parsed(&fs, "e"), s);
}

/// The append path never writes through a symbolic link put where the record was: the save
/// replaces the link by a file, and what the link pointed to is unchanged.
#[cfg(unix)]
#[test]
fn no_delta_is_appended_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let mut fs = FileSessions::new(dir.path().join("s"));
    let mut s = Session::new("f");
    s.read(id(1, 1));
    fs.save(&s).unwrap();
    let target = dir.path().join("precious");
    std::fs::copy(fs.path("f"), &target).unwrap();
    let kept = std::fs::read(&target).unwrap();
    std::fs::remove_file(fs.path("f")).unwrap();
    std::os::unix::fs::symlink(&target, fs.path("f")).unwrap();
    s.read(id(2, 1));
    fs.save(&s).unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), kept);
    assert!(!std::fs::symlink_metadata(fs.path("f"))
        .unwrap()
        .is_symlink());
    assert_eq!(parsed(&fs, "f"), s);
}
