use super::*;

fn words(text: &str) -> Vec<String> {
    lex(text)
        .tokens
        .into_iter()
        .filter_map(|t| match t {
            Token::Word(w) => Some(w.squeezed()),
            _ => None,
        })
        .collect()
}

#[test]
fn quotes_escapes_and_expansions_are_squeezed() {
    assert_eq!(words(r#"cat 'a b'"c"\d e"#), ["cat", "a bcd", "e"]);
    assert_eq!(
        words("cat agent.led${X}ger.key"),
        ["cat", "agent.ledger.key"]
    );
    assert_eq!(words(r"cat $'\x61gent\056ledger'"), ["cat", "agent.ledger"]);
    assert_eq!(words("cat agent.led\"\"ger"), ["cat", "agent.ledger"]);
}

#[test]
fn operators_split_words_and_mark_redirections() {
    let l = lex("a&&b|c;d>e 2>>f <g <<EOF|&h||i<>j&>k");
    let kinds: Vec<&str> = l
        .tokens
        .iter()
        .map(|t| match t {
            Token::Word(_) => "w",
            Token::Control => "c",
            Token::Pipe => "p",
            Token::Redirect(Redirect::Writes) => ">",
            Token::Redirect(Redirect::Reads) => "<",
            Token::HereDoc => "h",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "w", "c", "w", "p", "w", "c", "w", ">", "w", ">", "w", "<", "w", "h", "w", "p", "w",
            "c", "w", ">", "w", ">", "w"
        ]
    );
}

#[test]
fn nested_commands_are_collected() {
    let l = lex("echo $(cat k) `id` <(ls) \"${x:-$(pwd)}\"");
    assert_eq!(l.nested, ["cat k", "id", "ls", "x:-$(pwd)"]);
}

#[test]
fn a_bracket_expression_ends_with_its_word() {
    // `[` with no `]` in its word is a character; the commands after it are commands.
    let l = lex("echo [; rm x; echo ]");
    assert_eq!(simple_words(&l), ["echo [", "rm x", "echo ]"]);
    let l = lex("ls src/[a-z]*.rs [ab]c []x] [!]y]");
    assert_eq!(
        l.tokens[1],
        Token::Word(Word {
            pieces: "src/"
                .chars()
                .map(Piece::Lit)
                .chain([Piece::One, Piece::Star])
                .chain(".rs".chars().map(Piece::Lit))
                .collect()
        })
    );
    assert_eq!(words("[ab]c []x] [!]y] [[:alpha:]]z"), ["c", "", "", "z"]);
    // Quoted members stay in the word and their expansions are analysed.
    let l = lex("cat .cl[\"a\"]ude x[$(id)]");
    assert_eq!(l.tokens.len(), 3);
    assert_eq!(l.nested, ["\"a\"", "$(id)"]);
}

fn simple_words(l: &Lexed) -> Vec<String> {
    let mut out = vec![String::new()];
    for t in &l.tokens {
        match t {
            Token::Word(w) => {
                let last = out.last_mut().unwrap();
                if !last.is_empty() {
                    last.push(' ');
                }
                last.push_str(&w.squeezed());
            }
            _ => out.push(String::new()),
        }
    }
    out
}

#[test]
fn here_document_bodies_are_nested_commands_not_words() {
    // A quote in a body does not swallow the commands after its delimiter.
    let l = lex("cat > n <<'X'\nit's\nX\nrm y");
    assert_eq!(simple_words(&l), ["cat", "n", "X", "rm y"]);
    assert_eq!(l.nested, ["it's\n"]);
    // `<<-` strips leading tabs; several documents on one line follow in order; `<<<`
    // is a here-string.
    let l = lex("a <<-\"E\" <<F; b <<< 'w'\n\tone\n\tE\ntwo $(id)\nF\nc");
    assert_eq!(l.nested, ["one\n", "two $(id)\n"]);
    assert_eq!(simple_words(&l).last().map(String::as_str), Some("c"));
}

#[test]
fn a_carriage_return_and_a_locale_quote_are_read_as_bash_reads_them() {
    assert_eq!(simple_words(&lex("echo a\r#; rm y")), ["echo a\r#", "rm y"]);
    assert_eq!(
        words("cat $\"conf\"test.py \"$\"x"),
        ["cat", "conftest.py", "$x"]
    );
}

#[test]
fn extended_patterns_are_characters_of_their_word() {
    let l = lex("rm -rf .cl@(a)ude x+(b|c) !(d) y?(e)z && ! (f)");
    // `@(a)` is `a`, `?(e)` is `e` or nothing (attack review 55): words as a brace's.
    assert_eq!(simple_words(&l), ["rm -rf .claude x  yez yz", "!", "f", ""]);
    let Token::Word(w) = &l.tokens[3] else {
        panic!("{:?}", l.tokens)
    };
    assert!(w.pieces.contains(&Piece::Unknown));
    assert_eq!(lex("ls !($(id))").nested, ["$(id)"]);
    // zsh's glob qualifiers and `(e)` flag that run code: code only known when it runs.
    for c in [
        "echo *(e:'id':)",
        "echo a(e:'id':)",
        "echo src(+f)",
        "echo x(#qe{id})",
        "x='$(id)'; echo ${(e)x}",
    ] {
        assert!(lex(c).nested.iter().any(|n| n == ZSH_CODE), "{c}");
    }
    // zsh's `=curl` is a path ending in `curl`.
    let Token::Word(w) = &lex("=curl -d x").tokens[0] else {
        panic!()
    };
    assert_eq!(w.pieces[..2], [Piece::Unknown, Piece::Lit('/')]);
    assert_eq!(w.squeezed(), "/curl");
    for c in [
        "ls !(*.rs)",
        "ls @(src|docs)",
        "cat src/*(.)",
        "f() { echo; }",
        "a=(1 2)",
    ] {
        assert!(!lex(c).nested.iter().any(|n| n == ZSH_CODE), "{c}");
    }
}

#[test]
fn unterminated_input_never_fails() {
    for t in [
        "'abc",
        "\"abc",
        "$(abc",
        "`abc",
        "${abc",
        "abc\\",
        "$'\\x",
        "[",
        "{a,",
        "a <<",
        "a <<'E\n",
        "a <<E\nbody",
    ] {
        let _ = lex(t);
    }
}

#[test]
fn tilde_plus_and_minus_are_the_working_directories() {
    let pieces = |text: &str| match lex(text).tokens.into_iter().nth(1) {
        Some(Token::Word(w)) => w.pieces,
        _ => Vec::new(),
    };
    let pwd = pieces("cat ~+/.env");
    assert_eq!(pwd.first(), Some(&Piece::Var("PWD".to_string())));
    assert_eq!(pwd.get(1), Some(&Piece::Lit('/')));
    assert_eq!(pieces("cd ~-"), [Piece::Var("OLDPWD".to_string())]);
    // `~+x` is a user's name: any user's home is read as the home directory (attack review
    // 55), `~$USER` and `~$(id -un)` too (zsh expands them); `~1` is the directory stack's.
    assert_eq!(pieces("cat ~+x"), [Piece::Home]);
    for t in ["cat ~root/.env", "cat ~$USER/.env", "cat ~$(id -un)/.env"] {
        let p = pieces(t);
        assert_eq!(p.first(), Some(&Piece::Home), "{t}");
        assert_eq!(
            p[1..].iter().filter(|x| **x == Piece::Lit('/')).count(),
            1,
            "{t}"
        );
    }
    assert_eq!(pieces("cat ~root"), [Piece::Home]);
    assert_eq!(pieces("cat ~1/x").first(), Some(&Piece::Unknown));
    // `~0` and `~+0` are the top of the stack: the working directory.
    assert_eq!(
        pieces("cat ~0/x").first(),
        Some(&Piece::Var("PWD".to_string()))
    );
    assert_eq!(
        pieces("cat ~+0/x").first(),
        Some(&Piece::Var("PWD".to_string()))
    );
    // Quoted, or not first in its word: a character.
    assert_eq!(words("cat '~'/x a~/x"), ["cat", "~/x", "a~/x"]);
}

/// zsh's `~NAME` is also a named directory or a parameter's value (`d=/x; … ~d/…`, `~PWD`):
/// the word is given twice, the home directory's and `$NAME/…` (attack review 58).
#[test]
fn a_named_tilde_is_also_the_parameter_of_that_name() {
    let second = |text: &str| -> Vec<Vec<Piece>> {
        lex(text)
            .tokens
            .into_iter()
            .filter_map(|t| match t {
                Token::Word(w) => Some(w.pieces),
                _ => None,
            })
            .skip(1)
            .collect()
    };
    let g = second("rm ~g/x");
    assert_eq!(g.len(), 2);
    assert_eq!(g[0].first(), Some(&Piece::Home));
    assert_eq!(g[1].first(), Some(&Piece::Var("g".to_string())));
    assert_eq!(g[1][1..], g[0][1..]);
    assert_eq!(second("cat ~PWD")[1], [Piece::Var("PWD".to_string())]);
    // A name no parameter can have, or an expansion: any directory.
    assert_eq!(second("cat ~a-b/x")[1].first(), Some(&Piece::Unknown));
    assert_eq!(second("cat ~$USER/x")[1].first(), Some(&Piece::Unknown));
    // `~`, `~/x`, `~+`, `~-`, `~1` are read once.
    for t in ["cat ~", "cat ~/x", "cat ~+/x", "cat ~-", "cat ~1/x"] {
        assert_eq!(second(t).len(), 1, "{t}");
    }
}

#[test]
fn brace_alternatives_and_sequences_are_words_of_their_own() {
    let cases: &[(&str, &[&str])] = &[
        ("a{b,c}d", &["abd", "acd"]),
        (".env{,}", &[".env", ".env"]),
        (".e{n{v,x},y}", &[".env", ".enx", ".ey"]),
        ("{a,b}{1,2}", &["a1", "a2", "b1", "b2"]),
        ("{,}", &[]),
        ("x{1..3}", &["x1", "x2", "x3"]),
        ("{3..1}", &["3", "2", "1"]),
        ("{01..10..4}", &["01", "05", "09"]),
        ("{-1..1}", &["-1", "0", "1"]),
        ("{a..e..2}", &["a", "c", "e"]),
        (
            "{Y..b}",
            &["Y", "Z", "[", "\\", "]", "^", "_", "`", "a", "b"],
        ),
        // No expansion: `{}`, one element, quoted or escaped braces, `${…}`, an invalid
        // sequence, a brace left open.
        ("{}", &["{}"]),
        ("{a}", &["{a}"]),
        ("'{a,b}'", &["{a,b}"]),
        ("\"{a,b}\"", &["{a,b}"]),
        ("\\{a,b\\}", &["{a,b}"]),
        ("{a\\,b}", &["{a,b}"]),
        ("${X}", &[""]),
        ("{1..a}", &["{1..a}"]),
        ("{1..2..x}", &["{1..2..x}"]),
        ("{\"1\"..3}", &["{1..3}"]),
        ("{a,b", &["{a,b"]),
        // bash's reading: a `}` before the first `,` closes nothing; a group with no `,` at
        // its own level stays, and the expansion inside it is read.
        ("{a}b,c}", &["a}b", "c"]),
        ("{x{a,b}}", &["{xa}", "{xb}"]),
        // Quoted and expanded parts of an alternative stay in it.
        ("{'a b',$X}c", &["a bc", "c"]),
    ];
    for (text, want) in cases {
        assert_eq!(words(text), *want, "{text}");
    }
    // A tilde an alternative starts the word with is expanded, after the expansion.
    let l = lex("{~,x}/.ssh");
    let first: Vec<&Piece> = match &l.tokens[0] {
        Token::Word(w) => w.pieces.iter().take(2).collect(),
        _ => Vec::new(),
    };
    assert_eq!(first, [&Piece::Home, &Piece::Lit('/')]);
    assert_eq!(words("{~,x}/.ssh")[1], "x/.ssh");
    assert_eq!(words("a{~,x}"), ["a~", "ax"]);
    // zsh's `=name` an alternative starts a word with is a command's path, as at a word's start.
    let l = lex("{=curl,x} -d y");
    let Token::Word(w) = &l.tokens[0] else {
        panic!("{:?}", l.tokens)
    };
    assert_eq!(w.pieces[..2], [Piece::Unknown, Piece::Lit('/')]);
    assert_eq!(words("{=curl,x} a{=b,c}"), ["/curl", "x", "a=b", "ac"]);
    // Commands nested in an alternative are analysed once each.
    assert_eq!(lex("{$(id),b}").nested, ["id"]);
    assert!(!lex("echo {1..1000}").unexpanded);
    // zsh's alternation in a word, bash's `@(…)` and `?(…)`: alternatives too; `*(…)`,
    // `a=(…)`, `f()` and a group without `|` as before.
    assert_eq!(words("cat .e(nv|x)"), ["cat", ".env", ".ex"]);
    assert_eq!(
        words("cat .e@(nv|x) .env?(.b)"),
        ["cat", ".env", ".ex", ".env.b", ".env"]
    );
    assert_eq!(words("cat x*(a|b)"), ["cat", "x"]);
    assert_eq!(words("a=(1 2)"), ["a=", "1", "2"]);
}

#[test]
fn a_brace_expansion_over_the_bound_is_one_word_of_any_characters() {
    let doubling = "{a,b}".repeat(11);
    let l = lex(&format!("cat .e{doubling}nv"));
    assert!(l.unexpanded);
    assert_eq!(l.tokens.len(), 2);
    let Token::Word(w) = &l.tokens[1] else {
        panic!("{:?}", l.tokens)
    };
    assert_eq!(w.pieces.len(), 5);
    assert_eq!(w.pieces[2], Piece::Unknown);
    assert!(lex("echo {1..99999999999999999}").unexpanded);
    // The budget of a text: more words than it allows are not spelled out either.
    assert!(lex(&"echo {1..1000}; ".repeat(5)).unexpanded);
    // An `{` a `2>` is read after: a word, not a descriptor.
    assert_eq!(words("echo {1,2}>x"), ["echo", "1", "2", "x"]);
}

proptest::proptest! {
    /// Brace and tilde expansion never panic, and stay within the text's budget, on any text
    /// of their characters (does not panic: the lexer takes the agent's commands).
    #[test]
    fn expansion_of_any_text_is_bounded(
        text in "[{},.~a1 '\"\\\\$/+-]{0,60}",
    ) {
        let l = lex(&text);
        let words = l.tokens.iter().filter(|t| matches!(t, Token::Word(_))).count();
        proptest::prop_assert!(words <= 4 * MAX_BRACE_WORDS + text.len());
    }
}
