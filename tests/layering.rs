//! Verification depends on nothing that stores (`spec/README.md`, STYLE "Verification must not
//! depend on storage"): the source of `src/record/`, `src/log/`, `src/lineage/` and
//! `src/audit.rs` names neither `crate::store` nor `crate::ledger`, by any path (`use`, a path
//! in code, a `use crate::{…}` group, `super::…::store`, or a crate-root re-export of a store
//! or ledger type). Comments and string literals are ignored: a doc link is not a dependency.

use std::path::{Path, PathBuf};

/// The verification modules, relative to the crate root.
const VERIFICATION: [&str; 4] = ["src/record", "src/log", "src/lineage", "src/audit.rs"];

/// Modules verification must not reach.
const FORBIDDEN_MODULES: [&str; 2] = ["store", "ledger"];

/// Store and ledger types the crate root re-exports (or may): `crate::Ledger` is the ledger.
const FORBIDDEN_ROOT_NAMES: [&str; 10] = [
    "Ledger",
    "LedgerError",
    "Appended",
    "Draft",
    "StoreSource",
    "Store",
    "StoreError",
    "SqliteStore",
    "MemoryStore",
    "PgStore",
];

#[test]
fn verification_modules_import_neither_the_store_nor_the_ledger() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for part in VERIFICATION {
        rust_files(&root.join(part), &mut files);
    }
    assert!(
        files.len() >= 20,
        "found only {} files: {files:?}",
        files.len()
    );
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for v in violations(&text) {
            found.push(format!("{}: {v}", f.strip_prefix(root).unwrap().display()));
        }
    }
    assert!(
        found.is_empty(),
        "verification code reaches storage:\n{}",
        found.join("\n")
    );
}

/// The checker finds each way of naming the store or the ledger, and nothing in comments or
/// strings.
#[test]
fn the_checker_finds_every_form_of_import() {
    let bad = [
        "use crate::store::SqliteStore;",
        "use crate::ledger::decode_on_all_cores;",
        "use crate :: store :: { Store , StoreError } ;",
        "use crate::{log::LogError, store::Store};",
        "use crate::{\n    ledger,\n    record::EntryId,\n};",
        "fn f() -> Option<crate::store::StoreError> { None }",
        "impl From<crate::store::StoreError> for LogError {}",
        "use super::super::store::Store;",
        "use super::store;",
        "fn g() { let _ = super::super::ledger::PARALLEL_MIN; }",
        "use crate::Ledger;",
        "use crate::{Label, SqliteStore};",
        "fn h(_: &crate::MemoryStore) {}",
    ];
    for src in bad {
        assert!(!violations(src).is_empty(), "missed: {src}");
    }
    let good = [
        "//! Verification never touches a [`crate::store::Store`].",
        "/// The ledger adapts its [`crate::store::Store`] to this.\nfn f() {}",
        "/* use crate::store::Store; */ fn f() {}",
        "const S: &str = \"use crate::store::Store;\";",
        "const R: &str = r#\"crate::ledger::Ledger\"#;",
        "use crate::log::{stored_hash_index, StoredEntryish};",
        "use crate::record::{KeyId, Role};\nfn stores(ledger: u8) -> u8 { ledger }",
        "fn f<'a>(x: &'a str) -> char { let _ = x; 'x' }",
        "const Q: char = '\\''; const T: &str = \"crate::store\";",
    ];
    for src in good {
        assert_eq!(violations(src), Vec::<String>::new(), "false alarm: {src}");
    }
}

/// Every `.rs` file under `path` (or `path` itself).
fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        out.push(path.to_path_buf());
        return;
    }
    let mut entries: Vec<_> = std::fs::read_dir(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// What in `src` names the store or the ledger, one line per finding.
fn violations(src: &str) -> Vec<String> {
    let tokens = tokens(&code_only(src));
    let mut found = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        // A path rooted at the crate or a parent module: crate::x, super::super::x.
        if t != "crate" && t != "super" {
            continue;
        }
        if i > 0 && tokens[i - 1] == "::" {
            continue; // inside a longer path (super::super), judged from its first segment
        }
        let mut j = i;
        while tokens.get(j + 1).map(String::as_str) == Some("::")
            && tokens.get(j + 2).map(String::as_str) == Some("super")
        {
            j += 2;
        }
        if tokens.get(j + 1).map(String::as_str) != Some("::") {
            continue;
        }
        let at_root = j == i && t == "crate";
        for name in first_segments(&tokens, j + 2) {
            if FORBIDDEN_MODULES.contains(&name.as_str())
                || (at_root && FORBIDDEN_ROOT_NAMES.contains(&name.as_str()))
            {
                found.push(format!("{}::…::{name}", tokens[i..=j].concat()));
            }
        }
    }
    found
}

/// The first segment of a path starting at `tokens[k]`, or of every path in a `{…}` group
/// there (nested groups too: `{a::{b, c}, d}` gives `a` and `d`).
fn first_segments(tokens: &[String], k: usize) -> Vec<String> {
    match tokens.get(k).map(String::as_str) {
        Some("{") => {
            let mut out = Vec::new();
            let (mut depth, mut expect) = (0usize, true);
            for t in &tokens[k..] {
                match t.as_str() {
                    "{" => {
                        depth += 1;
                        expect = depth == 1;
                    }
                    "}" => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    "," if depth == 1 => expect = true,
                    name if expect && depth == 1 => {
                        out.push(name.to_string());
                        expect = false;
                    }
                    _ => {}
                }
            }
            out
        }
        Some(name) => vec![name.to_string()],
        None => Vec::new(),
    }
}

/// Identifiers, `::`, and single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// `src` with comments, string literals and char literals blanked out.
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < c.len() {
        let rest = |k: usize| c.get(i + k).copied();
        if c[i] == '/' && rest(1) == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && rest(1) == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (rest(1) == Some('"') || rest(1) == Some('#'))
            && !ident_before(&c, i)
        {
            let mut hashes = 0;
            let mut k = i + 1;
            while c.get(k) == Some(&'#') {
                hashes += 1;
                k += 1;
            }
            if c.get(k) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            k += 1;
            while k < c.len() {
                if c[k] == '"' && (1..=hashes).all(|h| c.get(k + h) == Some(&'#')) {
                    k += 1 + hashes;
                    break;
                }
                k += 1;
            }
            out.push(' ');
            i = k;
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else if c[i] == '\'' && char_literal_len(&c, i).is_some() {
            i += char_literal_len(&c, i).unwrap_or(1);
            out.push(' ');
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Whether an identifier character precedes `c[i]` (so `r"` there is not a raw string).
fn ident_before(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// The length of a char literal at `c[i]` (`'x'`, `'\n'`, `'\u{..}'`), `None` for a lifetime.
fn char_literal_len(c: &[char], i: usize) -> Option<usize> {
    if c.get(i + 1) == Some(&'\\') {
        let close = (i + 3..c.len().min(i + 12)).find(|&k| c[k] == '\'')?;
        return Some(close - i + 1);
    }
    (c.get(i + 2) == Some(&'\'')).then_some(3)
}
