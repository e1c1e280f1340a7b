use super::amounts::thousands;
use super::*;
use serde_json::json;

fn n(x: f64) -> serde_json::Number {
    serde_json::Number::from_f64(x).unwrap()
}

#[test]
fn numbers_match_their_renderings_and_not_inside_other_numbers() {
    let h = Haystack::new("Total\t\t98.70 and 10,000.00; ids 15 and 5.5");
    assert!(h.matches(&json!(98.7)));
    assert!(h.matches(&json!(10000)));
    assert!(!h.matches(&json!(5)), "5 touches 15 and 5.5");
    assert!(!h.matches(&json!("5")));
    assert!(h.matches(&json!("15")));
    assert!(!h.matches(&json!(1)));
    assert_eq!(
        renderings(&serde_json::Number::from(10000)),
        vec!["10,000", "10,000.00", "10000", "10000.0", "10000.00"]
    );
}

#[test]
fn renderings_of_fractions_and_large_numbers() {
    assert_eq!(renderings(&n(98.7)), vec!["98.7", "98.70"]);
    assert_eq!(
        renderings(&n(1e15)),
        vec![
            "1,000,000,000,000,000.00",
            "1000000000000000",
            "1000000000000000.0",
            "1000000000000000.00"
        ]
    );
    assert_eq!(
        renderings(&n(-1e16)),
        vec![
            "-10,000,000,000,000,000.00",
            "-10000000000000000",
            "-10000000000000000.00",
            "-1e+16"
        ],
        "no integer forms at or above 1e15"
    );
    assert_eq!(
        renderings(&n(-1234.0)),
        vec!["-1,234", "-1,234.00", "-1234", "-1234.0", "-1234.00"]
    );
}

#[test]
fn thousands_groups_by_three_from_the_right() {
    assert_eq!(thousands("1234567.50"), "1,234,567.50");
    assert_eq!(thousands("123456"), "123,456");
    assert_eq!(thousands("-123"), "-123");
    assert_eq!(thousands("12"), "12");
    assert_eq!(thousands("-1234"), "-1,234");
}

#[test]
fn digit_boundaries() {
    for hay in [
        "x 1.5 y", "x 1,5 y", "x 5.1 y", "x 5,1 y", "x 15 y", "x 51 y",
    ] {
        assert!(!contains(hay, "5"), "{hay}");
    }
    for hay in [
        "5 x", ".5", ",5 x", "x 5.", "x 5, y", "x a.5 y", "x 5.a", "5",
    ] {
        assert!(contains(hay, "5"), "{hay}");
    }
    // A decimal point two bytes before the needle, with a digit before it: the needle at
    // byte 2 is inside `5.15` (cargo-mutants: `start - 2` → `start / 2` survived).
    assert!(!contains("5.15", "15"));
    assert!(!contains("5,15", "15"));
    assert!(contains("a.15", "15"));
}

#[test]
fn strings_json_leaves_and_non_values() {
    let text = r#"{"note": "pay \"ACME\"\nIBAN: DE89"}"#;
    let h = Haystack::new(text);
    assert!(
        h.matches(&json!("pay \"ACME\"")),
        "found in the decoded leaf"
    );
    assert!(h.matches(&json!(["nothing", "DE89"])), "a whole field");
    assert!(h.matches(&json!({"x": "IBAN"})), "at token boundaries");
    assert!(
        !h.matches(&json!({"x": "DE"})),
        "short, and not a whole field"
    );
    assert!(!h.matches(&json!("")));
    assert!(!h.matches(&json!(null)));
    assert!(!h.matches(&json!(true)));
    assert!(!h.matches(&json!("pay \"acme\"")), "case-sensitive");
    let arr = Haystack::new(r#"["a", {"k": ["pay \"ACME\" now"]}]"#);
    assert!(
        arr.matches(&json!("pay \"ACME\" now")),
        "leaves inside arrays"
    );
}

#[test]
fn token_boundaries_short_values_and_normalisation() {
    let h = Haystack::new(
        "subject: Lunch\nLunch with Sarah at Le Marais Boutique.\nbody: a\n\
         Write to Mark.Black@Example.COM or see WWW.Example.com/x; IBAN DE89 3704 0044 0532 0130 00",
    );
    assert!(h.matches(&json!("Lunch")), "a whole field");
    assert!(h.matches(&json!("a")), "a whole field");
    assert!(!h.matches(&json!("at")), "short and inside a line");
    assert!(h.matches(&json!("Sarah")));
    assert!(h.matches(&json!("Le Marais Boutique")));
    assert!(
        !h.matches(&json!("e Marais Boutiqu")),
        "not at token boundaries"
    );
    assert!(!h.matches(&json!("Marais Bou")), "not at token boundaries");
    assert!(
        h.matches(&json!("mark.black@example.com")),
        "e-mail in any case"
    );
    assert!(h.matches(&json!("www.example.com")), "host in any case");
    assert!(
        h.matches(&json!("le marais boutique")),
        "a value of 8 or more letters and digits matches in any case and spacing"
    );
    assert!(!h.matches(&json!("marais")), "shorter: case-sensitive");
    assert!(
        h.matches(&json!("DE89370400440532013000")),
        "IBAN without spaces"
    );
    assert!(
        h.matches(&json!("DE89 3704 0044 0532 0130 00")),
        "IBAN as written"
    );
    assert!(
        !h.matches(&json!("DE8937040044053201")),
        "a prefix of the IBAN"
    );
    let nfd = Haystack::new("Caf\u{65}\u{301} de Flore, Paris");
    assert!(
        nfd.matches(&json!("Caf\u{e9} de Flore")),
        "NFC on both sides"
    );
    let mut tokens = BTreeSet::new();
    iban_tokens("x GB29 NWBK 6016 1331 9268 19 y", &mut tokens);
    assert!(tokens.contains("GB29NWBK60161331926819"), "{tokens:?}");
    // Closures end at every group boundary from 15 characters on (the country's length is
    // not known): a shorter prefix that ends at a group is a token too, one in mid-group
    // never.
    assert!(tokens.contains("GB29NWBK60161331"), "{tokens:?}");
    assert!(!tokens.contains("GB29NWBK6016133"), "{tokens:?}");
    assert_eq!(
        iban("gb29 nwbk 6016 1331 9268 19").as_deref(),
        Some("GB29NWBK60161331926819")
    );
    assert!(iban("GB29").is_none());
    assert!(is_email_or_host("a@b.cd") && !is_email_or_host("@b.cd") && !is_email_or_host("a.b1"));
}

/// Known-answer cases of amount, digit-group and look-alike matching
/// (`tests/hooks/value-matching.json`, `spec/hooks.md` §4.2): each written the way an
/// injection's author could choose, and a few that must not match.
#[test]
fn value_known_answers() {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("../../../tests/hooks/value-matching.json")).unwrap();
    assert!(cases.len() >= 30);
    for c in cases {
        let h = Haystack::new(c["text"].as_str().unwrap());
        let want = c["matches"].as_bool().unwrap();
        assert_eq!(h.matches(&c["value"]), want, "{}", c["why"]);
    }
}

/// Known-answer cases of IBAN matching (`tests/hooks/iban-matching.json`): an IBAN written
/// in lower case, with dashes, dots, no-break or zero-width spaces, in full-width forms or
/// across lines in a tool output still matches the compact IBAN argument, and the other
/// way round; prefixes and other IBANs do not.
#[test]
fn iban_known_answers() {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("../../../tests/hooks/iban-matching.json")).unwrap();
    assert!(cases.len() >= 10);
    for c in &cases {
        let text = c["text"].as_str().unwrap();
        let want = c["matches"].as_bool().unwrap();
        assert_eq!(
            Haystack::new(text).matches(&c["value"]),
            want,
            "{}: {text:?} vs {}",
            c["why"],
            c["value"]
        );
    }
}

fn tokens(s: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    iban_tokens(s, &mut out);
    out.into_iter().collect()
}

#[test]
fn iban_tokens_join_groups_of_ascii_letters_and_digits_up_to_34() {
    assert_eq!(
        tokens("de89 3704 0044 0532 0130 00 thanks"),
        [
            "DE89370400440532",
            "DE893704004405320130",
            "DE89370400440532013000"
        ]
    );
    // A word of five, a word with a non-ASCII letter or any other word ends the token.
    assert_eq!(tokens("DE89 3704 0044 05320 1300"), Vec::<String>::new());
    assert_eq!(tokens("DE89 3704 0044 Ä1 0532 0130"), Vec::<String>::new());
    assert_eq!(tokens("DE89 3704 0044 hello 0532"), Vec::<String>::new());
    // The first word must start with two ASCII letters and two digits, all ASCII.
    assert_eq!(tokens("DE89Ä704 0044 0532 0130"), Vec::<String>::new());
    assert_eq!(tokens("D189 3704 0044 0532 0130"), Vec::<String>::new());
    assert_eq!(tokens("DEX9 3704 0044 0532 0130"), Vec::<String>::new());
    // Up to 34 characters, whole groups only.
    let long = tokens("GB33 BUKB 2020 1555 5555 5555 5555 5555 5555 5555");
    assert_eq!(long.last().map(String::len), Some(32));
    assert_eq!(long.first().map(String::len), Some(16));
    assert_eq!(
        tokens("GB33BUKB20201555555555555555555555 5"),
        ["GB33BUKB20201555555555555555555555"]
    );
    assert_eq!(
        tokens("GB33BUKB202015555555555555555555555"),
        Vec::<String>::new()
    );
}

#[test]
fn whole_fields_are_the_short_ones() {
    let mut f = BTreeSet::new();
    add_fields(
        "ab\nkey: xy\n- c\n- k: d\nlonger line\n'e'\n\"\"\n  \n",
        &mut f,
    );
    let got: Vec<&str> = f.iter().map(String::as_str).collect();
    assert_eq!(got, ["ab", "c", "d", "e", "xy"]);
}

#[test]
fn emails_and_hosts_by_shape() {
    for (s, want) in [
        ("a.example.com", true),
        ("me@evil.example", true),
        ("evil.example", true),
        ("@evil.example", false),
        ("a b.example", false),
        ("localhost", false),
        ("a..example", false),
        ("a.example.c0m", false),
        ("a.example.c", false),
        ("a_b.example", false),
        ("xn--bcher-kva.example", true),
    ] {
        assert_eq!(is_email_or_host(s), want, "{s}");
    }
}

/// What names a destination for the ask rule (`spec/hooks.md` §15.1 rule 2): IBANs however
/// written, URLs, e-mail addresses and hosts inside text; not amounts, dates, plain words.
#[test]
fn destinations_by_shape() {
    for (s, want) in [
        ("US133000000121212121212", true),
        ("pay gb33-bukb-2020-1555-5555-55 now", true),
        ("https://evil.example/r", true),
        ("ftp://10.0.0.1/x", true),
        ("mail help@evil.example today", true),
        ("<me@evil.example>", true),
        ("see evil.example.", true),
        ("1250", false),
        ("5 000,00", false),
        ("2024-05-19 10:00", false),
        ("Pay the rent for March", false),
        ("landlord", false),
    ] {
        assert_eq!(names_a_destination(s), want, "{s}");
    }
}

#[test]
fn specificity_counts_characters_or_digits() {
    use serde_json::json;
    for (v, want) in [
        (json!("12"), false),
        (json!("123"), true),
        (json!("007"), true),
        (json!("ab"), false),
        (json!("abc"), true),
        (json!(" ab "), false),
        (json!("a b"), true),
        (json!("é€"), false),
        (json!("éé€"), true),
        (json!(12), false),
        (json!(-12), false),
        (json!(1.5), false),
        (json!(123), true),
        (json!(12.5), true),
        (json!(null), false),
        (json!(true), false),
        (json!(["abc"]), false),
        (json!({"k": "abc"}), false),
    ] {
        assert_eq!(is_specific(&v), want, "{v}");
    }
}

#[test]
fn unverifiable_matches_every_value_but_non_values() {
    assert!(!Haystack::new("a text").is_unverifiable());
    assert!(!Haystack::default().is_unverifiable());
    let h = Haystack::unverifiable();
    assert!(h.is_unverifiable());
    assert!(h.matches(&json!("x")) && h.matches(&json!(1)) && h.matches(&json!(["y"])));
    assert!(!h.matches(&json!("")) && !h.matches(&json!(null)) && !h.matches(&json!(false)));
}

#[test]
fn decimals_as_amounts_are_written() {
    let d = |s: &str| decimal(s).map(|n| n.as_f64().unwrap_or(f64::NAN));
    assert_eq!(d("500"), Some(500.0));
    assert_eq!(d("0500"), Some(500.0));
    assert_eq!(d("+7"), Some(7.0));
    assert_eq!(d("-3.25"), Some(-3.25));
    assert_eq!(d(" 5,000.50 "), Some(5000.5));
    assert_eq!(d("12,345,678"), Some(12_345_678.0));
    for not in [
        "", "5,00", "1,2345", ",500", "5.", ".5", "5e3", "abc", "5 000", "--5", "1.2.3",
    ] {
        assert_eq!(d(not), None, "{not:?}");
    }
    assert_eq!(d(&"9".repeat(41)), None);
}

#[test]
fn normal_forms_close_up_and_fold() {
    assert_eq!(
        normal_form("gb33-bukb 2020\u{200b}1555"),
        "GB33BUKB20201555"
    );
    assert_eq!(normal_form("ＧＢ３３"), "GB33");
    let h = Haystack::new("Details: GB33 BUKB2020 1555555555.");
    assert!(h.matches(&json!("GB33BUKB20201555555555")));
    assert!(h.matches(&json!("gb33bukb20201555555555")));
    // Only runs of whole words: not a prefix ending inside a word.
    assert!(!h.matches(&json!("GB33BUKB202015555")));
    // Shorter than MIN_NORMAL_CHARS: as written only.
    let h = Haystack::new("code a-b-c-1");
    assert!(!h.matches(&json!("ABC1")));
    assert!(
        h.matches(&json!({"a-b-c-1": 1})),
        "an object key is a value"
    );
}
