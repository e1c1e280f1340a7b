//! The index of a session's reads (`spec/hooks.md` §4.7) against the scan it replaces: for any
//! reads and any value, `ReadIndex::matching` gives exactly the reads that
//! `Haystack::matches_needle` gives over every read (`ReadIndex::scan`), in read order. The
//! texts and values are drawn from the shapes the rules of §4.2–§4.3 treat specially: amounts in
//! several locales and with multipliers, IBANs spaced, dashed, lower-cased and full-width,
//! digits of other scripts, UTS #39 look-alikes, grouped card numbers, e-mail addresses and
//! hosts, short whole fields, JSON documents, and texts with no letter or digit.

use memlineage::gate::matching::{Haystack, Needle, ReadIndex};
use memlineage::record::EntryId;
use proptest::prelude::*;
use serde_json::{json, Value};

/// Pieces of text the rules read specially.
const PIECES: &[&str] = &[
    "5000",
    "5.000,00",
    "5 000",
    "5\u{a0}000",
    "5'000.00",
    "5\u{2019}000",
    "EUR 5k",
    "5 M",
    "1,00,000",
    "1.234,56",
    "1234.56",
    "98.70",
    "10,000.00",
    "0.5",
    "007",
    "5",
    "15",
    "5.5",
    "-3.25",
    "DE89 3704 0044 0532 0130 00",
    "de89-3704-0044-0532-0130-00",
    "DE89370400440532013000",
    "GB29 NWBK 6016 1331 9268 19",
    "\u{ff27}\u{ff22}\u{ff12}\u{ff19} NWBK 6016 1331 9268 19",
    "GB29\u{200b}NWBK60161331926819",
    "\u{661}\u{662}\u{663}\u{664}",
    "\u{665}\u{660}\u{660}\u{660}",
    "\u{967}\u{968}\u{969}\u{96a}",
    "\u{e51}\u{e52}\u{e53}\u{e54}",
    "\u{410}\u{421}ME Ltd",
    "ACME Ltd",
    "\u{440}\u{430}\u{443}\u{440}\u{430}l",
    "4411 2233 9876 5432",
    "4411223398765432",
    "4411-2233-9876-5432",
    "Mark.Black@Example.COM",
    "www.example.com",
    "evil.example",
    "evil.io",
    "www.evil.io",
    "ev\u{200b}il.io",
    "\u{ff45}\u{ff56}il.io",
    "\u{435}vil.io",
    "b\u{fc}cher.io",
    "xn--bcher-kva.io",
    "IBAN GB29 NWBK 6016 1331 9268 19",
    "2.5 million",
    "2,5 Mio.",
    "Ab.IO",
    "ME@x.io",
    "Le Marais Boutique",
    "Caf\u{e9} de Flore",
    "Cafe\u{301} de Flore",
    "pay \"ACME\"",
    "IBAN:",
    "key: xy",
    "- c",
    "a",
    "ab",
    "x_y",
    "!!!",
    "\u{1f600}\u{1f600}\u{1f600}",
    "\u{130}stanbul",
    "STRASSE stra\u{df}e",
];

const JOINS: &[&str] = &[" ", "\n", ", ", "-", "", ": ", "\n- ", "."];

/// A text: pieces, a random word or two among them, joined; sometimes a JSON document.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => prop::sample::select(PIECES).prop_map(str::to_string),
        1 => "[a-zA-Z0-9 .,@:'-]{0,12}",
        1 => "\\PC{0,8}",
    ];
    (
        prop::collection::vec((piece, prop::sample::select(JOINS)), 1..6),
        0..3u8,
    )
        .prop_map(|(parts, json)| {
            let mut t = String::new();
            for (p, j) in parts {
                t.push_str(&p);
                t.push_str(j);
            }
            match json {
                0 => json!({"note": t, "n": 5000}).to_string(),
                _ => t,
            }
        })
}

/// A value: a piece (as written, re-cased, closed up or cut), a number, a random string, or an
/// array or object of those.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        3 => (prop::sample::select(PIECES), 0..5u8, 0..12usize).prop_map(|(p, how, cut)| {
            let s = match how {
                0 => p.to_string(),
                1 => p.to_lowercase(),
                2 => p.to_uppercase(),
                3 => p.chars().filter(|c| !c.is_whitespace()).collect(),
                _ => p.chars().take(cut).collect(),
            };
            Value::String(s)
        }),
        2 => prop::sample::select(&[
            5000.0, 5.0, 15.0, 1234.56, 98.7, 10000.0, 0.5, -3.25, 100000.0, 1234.0,
            4411223398765432.0, 7.0, 1e16,
        ][..])
        .prop_map(|x| json!(x)),
        1 => any::<i64>().prop_map(|x| json!(x)),
        1 => (0..100_000i64).prop_map(|x| json!(x)),
        1 => "\\PC{0,10}".prop_map(Value::String),
        1 => "[0-9]{1,18}".prop_map(Value::String),
        1 => Just(Value::Null),
        1 => Just(json!("")),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec(("\\PC{0,6}", inner), 0..3)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// How a read's text is held: read and verified, unverifiable, standing for unseen history,
/// or never loaded.
#[derive(Clone, Debug)]
enum Read {
    Text(String),
    Unverifiable,
    Unknown,
    Missing,
}

fn read() -> impl Strategy<Value = Read> {
    prop_oneof![
        12 => text().prop_map(Read::Text),
        1 => Just(Read::Unverifiable),
        1 => Just(Read::Unknown),
        1 => Just(Read::Missing),
    ]
}

fn id(i: usize) -> EntryId {
    let mut b = [0u8; 32];
    b[..8].copy_from_slice(&(i as u64).to_be_bytes());
    EntryId(b)
}

/// The index of `reads` and the read ids, in order; with `replace`, the first text's haystack
/// is replaced by the last's after both were indexed.
fn index_of(reads: &[Read], replace: bool) -> (ReadIndex, Vec<EntryId>) {
    let mut index = ReadIndex::new();
    let mut ids = Vec::new();
    for (i, r) in reads.iter().enumerate() {
        let h = match r {
            Read::Text(t) => Haystack::new(t),
            Read::Unverifiable => Haystack::unverifiable(),
            Read::Unknown => Haystack::unknown(),
            Read::Missing => {
                ids.push(id(i));
                continue;
            }
        };
        index.insert(id(i), h);
        ids.push(id(i));
    }
    if replace {
        if let (Some(Read::Text(last)), Some(first)) = (reads.last(), ids.first()) {
            index.insert(*first, Haystack::new(last));
        }
    }
    (index, ids)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The indexed match is the scan, for any reads and values.
    #[test]
    fn indexed_matching_is_the_scan(
        reads in prop::collection::vec(read(), 0..12),
        values in prop::collection::vec(value(), 1..6),
        replace in any::<bool>(),
    ) {
        let (index, ids) = index_of(&reads, replace);
        for v in &values {
            let needle = Needle::new(v);
            prop_assert_eq!(index.matching(&ids, &needle), index.scan(&ids, &needle), "{}", v);
        }
    }

    /// Over reads that all hold a haystack, ordering the index's candidates by position is
    /// the scan too, whatever other ids the index holds (another session's reads) and in
    /// whatever order the reads were indexed.
    #[test]
    fn positioned_matching_is_the_scan(
        reads in prop::collection::vec(read(), 0..12),
        others in prop::collection::vec(read(), 0..6),
        values in prop::collection::vec(value(), 1..6),
        replace in any::<bool>(),
        order in any::<u64>(),
    ) {
        let held: Vec<Read> = reads
            .into_iter()
            .map(|r| match r {
                Read::Missing => Read::Unverifiable,
                r => r,
            })
            .collect();
        let mut all = held.clone();
        all.extend(others);
        let (index, ids) = index_of(&all, replace);
        // The session's reads: the first ones, in a shuffled order.
        let mut session: Vec<EntryId> = ids[..held.len()].to_vec();
        let n = session.len().max(1) as u64;
        session.rotate_left((order % n) as usize);
        if order % 2 == 1 {
            session.reverse();
        }
        let at: std::collections::HashMap<EntryId, usize> =
            session.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        for v in &values {
            let needle = Needle::new(v);
            prop_assert_eq!(
                index.matching_positioned(&session, |id| at.get(id).copied(), &needle),
                index.scan(&session, &needle),
                "{}",
                v
            );
        }
    }

    /// A value cut out of a read's own text (at any character boundary) is matched as the scan
    /// matches it: the values most likely to match, at every boundary the rules care about.
    #[test]
    fn values_cut_from_the_reads_match_as_the_scan(
        reads in prop::collection::vec(text().prop_map(Read::Text), 1..8),
        pick in any::<prop::sample::Index>(),
        from in any::<prop::sample::Index>(),
        len in 0..40usize,
    ) {
        let (index, ids) = index_of(&reads, false);
        let Read::Text(t) = &reads[pick.index(reads.len())] else {
            unreachable!("only texts");
        };
        let chars: Vec<char> = t.chars().collect();
        let start = from.index(chars.len().max(1));
        let cut: String = chars.iter().skip(start).take(len).collect();
        for v in [json!(cut), json!(cut.trim()), json!(cut.to_lowercase())] {
            let needle = Needle::new(&v);
            prop_assert_eq!(index.matching(&ids, &needle), index.scan(&ids, &needle), "{}", v);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Many reads that open with the same words (more than the index's few candidates, so
    /// that it also looks up the words over the value's middle bytes), and values cut from one
    /// of them with every run of separators replaced (closed up, spaced, dashed, …): the
    /// indexed match is the scan, by position too.
    #[test]
    fn runs_among_reads_that_open_alike_match_as_the_scan(
        opening in prop::sample::select(&[
            "question number", "Pay the invoice", "GB29 NWBK", "5 000", "log line", "",
        ][..]),
        tails in prop::collection::vec(text(), 17..40),
        pick in any::<prop::sample::Index>(),
        from in any::<prop::sample::Index>(),
        len in 1..48usize,
        at_opening in any::<bool>(),
        sep in prop::sample::select(&["", " ", "-", "_", ". ", "\u{a0}", "\n"][..]),
    ) {
        let reads: Vec<Read> = tails
            .iter()
            .map(|t| Read::Text(format!("{opening} {t}")))
            .collect();
        let (index, ids) = index_of(&reads, false);
        let Read::Text(t) = &reads[pick.index(reads.len())] else {
            unreachable!("only texts");
        };
        let chars: Vec<char> = t.chars().collect();
        // From the opening (the first words every read holds) or from anywhere.
        let start = if at_opening { 0 } else { from.index(chars.len().max(1)) };
        let cut: String = chars.iter().skip(start).take(len).collect();
        let mut respaced = String::new();
        let mut in_gap = false;
        for c in cut.chars() {
            if c.is_alphanumeric() {
                respaced.push(c);
                in_gap = false;
            } else if !in_gap {
                respaced.push_str(sep);
                in_gap = true;
            }
        }
        let at: std::collections::HashMap<EntryId, usize> =
            ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        for v in [json!(cut), json!(respaced), json!(respaced.to_uppercase())] {
            let needle = Needle::new(&v);
            let scan = index.scan(&ids, &needle);
            prop_assert_eq!(&index.matching(&ids, &needle), &scan, "{}", v);
            prop_assert_eq!(
                &index.matching_positioned(&ids, |id| at.get(id).copied(), &needle),
                &scan,
                "{}",
                v
            );
        }
    }
}

/// The known answers of `tests/hooks/value-matching.json` and `iban-matching.json`, each text
/// indexed among other reads: the indexed match gives the case's answer (and the scan's).
#[test]
fn known_answers_through_the_index() {
    let mut cases: Vec<Value> =
        serde_json::from_str(include_str!("hooks/value-matching.json")).expect("vectors");
    let ibans: Vec<Value> =
        serde_json::from_str(include_str!("hooks/iban-matching.json")).expect("vectors");
    cases.extend(ibans);
    assert!(cases.len() >= 40, "{}", cases.len());
    let others = [
        "Invoice 2024-07 total 12.50 EUR",
        "{\"x\": \"nothing here\"}",
        "ok",
    ];
    for c in &cases {
        let text = c["text"].as_str().expect("text");
        let want = c["matches"].as_bool().expect("matches");
        let mut index = ReadIndex::new();
        let mut ids = Vec::new();
        for (i, t) in others.iter().chain([&text]).enumerate() {
            index.insert(id(i), Haystack::new(t));
            ids.push(id(i));
        }
        let needle = Needle::new(&c["value"]);
        let got = index.matching(&ids, &needle);
        assert_eq!(got, index.scan(&ids, &needle), "{}", c["why"]);
        assert_eq!(
            got.contains(&id(others.len())),
            want,
            "{}: {text:?}",
            c["why"]
        );
    }
}

/// Values with no guaranteed key (no letter or digit) are searched in every read, and reads
/// that match every value (unverifiable, unseen history) or have no haystack stay sources of
/// every value: fail closed.
#[test]
fn reads_without_keys_and_values_without_keys() {
    let mut index = ReadIndex::new();
    index.insert(id(0), Haystack::new("send to --- now"));
    index.insert(id(1), Haystack::unverifiable());
    index.insert(id(2), Haystack::unknown());
    index.insert(id(3), Haystack::new("nothing"));
    let ids = [id(0), id(1), id(2), id(3), id(4)];
    let m = |v: Value| index.matching(&ids, &Needle::new(&v));
    assert_eq!(m(json!("---")), [id(0), id(1), id(2), id(4)]);
    assert_eq!(m(json!("GB29NWBK60161331926819")), [id(1), id(2), id(4)]);
    assert_eq!(m(json!(5000)), [id(1), id(2), id(4)]);
    assert_eq!(m(json!("nothing")), [id(1), id(2), id(3), id(4)]);
    assert_eq!(
        m(json!(null)),
        [id(4)],
        "no haystack: a source of every value"
    );
    assert_eq!(m(json!(["---", 5000])), [id(0), id(1), id(2), id(4)]);
}

/// Short hosts and e-mail addresses (normal form under 8 characters) match in any case through
/// the lower-cased runs alone.
#[test]
fn short_hosts_in_any_case() {
    let mut index = ReadIndex::new();
    index.insert(id(0), Haystack::new("write to ME@X.IO or see Ab.IO"));
    index.insert(id(1), Haystack::new("nothing"));
    let ids = [id(0), id(1)];
    for v in ["me@x.io", "ab.io", "AB.io"] {
        let needle = Needle::new(&json!(v));
        assert_eq!(index.matching(&ids, &needle), [id(0)], "{v}");
        assert_eq!(index.scan(&ids, &needle), [id(0)], "{v}");
    }
}

/// A read whose haystack is replaced is matched by its new text, not its old one.
#[test]
fn a_replaced_haystack_matches_by_its_new_text() {
    let mut index = ReadIndex::new();
    index.insert(id(0), Haystack::new("Pay DE89 3704 0044 0532 0130 00"));
    index.insert(id(0), Haystack::new("Pay 5.000,00 EUR"));
    let ids = [id(0)];
    assert!(index
        .matching(&ids, &Needle::new(&json!("DE89370400440532013000")))
        .is_empty());
    assert_eq!(index.matching(&ids, &Needle::new(&json!(5000))), [id(0)]);
    index.insert(id(0), Haystack::unverifiable());
    assert_eq!(index.matching(&ids, &Needle::new(&json!("zz"))), [id(0)]);
}

/// The index only runs the rules on candidates; a read that shares no key with the value is
/// not one, so many unrelated reads leave the answer as the scan gives it.
#[test]
fn many_unrelated_reads() {
    let mut index = ReadIndex::new();
    let mut ids = Vec::new();
    for i in 0..2000 {
        index.insert(
            id(i),
            Haystack::new(&format!("log line {i}: ok, build {}", i * 7)),
        );
        ids.push(id(i));
    }
    index.insert(
        id(2000),
        Haystack::new("Pay 1.234,56 EUR to GB29 NWBK 6016 1331 9268 19"),
    );
    ids.push(id(2000));
    for v in [
        json!(1234.56),
        json!("gb29nwbk60161331926819"),
        json!("1,234.56"),
    ] {
        let needle = Needle::new(&v);
        assert_eq!(index.matching(&ids, &needle), [id(2000)], "{v}");
    }
    let needle = Needle::new(&json!(14));
    assert_eq!(index.matching(&ids, &needle), index.scan(&ids, &needle));
    assert_eq!(
        index.matching(&ids, &needle).len(),
        2,
        "line 14 and build 14 (i = 2)"
    );
}

/// Among more reads than the index's few candidates that all open with the same words (so
/// that the words over the value's middle bytes are looked up), values whose middle byte falls
/// inside a character of several bytes and whose fold changes byte lengths (`ß` → `SS`, `ﬁ` →
/// `FI`, full-width digits) are found in the reads that hold them: one indexed once, one whose
/// haystack was replaced by such a text, and not one whose haystack held it only before.
#[test]
fn folded_runs_among_reads_that_open_alike_are_found_after_replacement() {
    let mut index = ReadIndex::new();
    let mut ids = Vec::new();
    for i in 0..40 {
        index.insert(
            id(i),
            Haystack::new(&format!("question number {i} about the weather")),
        );
        ids.push(id(i));
    }
    let held = "question number ÅÅÅ Straße ﬁnal İstanbul ２０２６ řeka";
    index.insert(id(7), Haystack::new(held));
    index.insert(id(3), Haystack::new(held));
    index.insert(id(3), Haystack::new("question number 3 about the weather"));
    index.insert(id(5), Haystack::new(held));
    let at: std::collections::HashMap<EntryId, usize> =
        ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    for v in [
        json!("Question-Number ÅÅÅ STRASSE final İstanbul 2026 ŘEKA"),
        json!("question_number_ÅÅÅ_straße"),
        json!("ÅÅÅ strasse FINAL"),
        json!("İstanbul 2026 řeka"),
    ] {
        let needle = Needle::new(&v);
        let scan = index.scan(&ids, &needle);
        assert_eq!(scan, [id(5), id(7)], "{v}");
        assert_eq!(index.matching(&ids, &needle), scan, "{v}");
        assert_eq!(
            index.matching_positioned(&ids, |id| at.get(id).copied(), &needle),
            scan,
            "{v}"
        );
    }
}
