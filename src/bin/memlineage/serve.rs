//! `memlineage serve`: the read-only web explorer of one ledger (`spec/explorer.md`).

use crate::io::{read_capped, say};
use crate::open::{load_policy, open_with};
use crate::Res;
use memlineage::explore::{Access, Explorer, Server, Token};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// Largest token file, in bytes.
const MAX_TOKEN_FILE: u64 = 4096;

/// Read handles rendering pages at once (one page slow on one of them leaves the others).
const READERS: usize = 3;

/// Arguments of `memlineage serve`.
#[derive(clap::Args)]
pub struct Args {
    /// Ledger path (its key file LEDGER.key is read; nothing is written).
    ledger: PathBuf,
    /// Address to listen on. Only a loopback address unless a token is given; port 0 picks a
    /// free port (the address served is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Access token (16 to 256 characters of A-Z a-z 0-9 - . _ ~): every request must carry
    /// it (open /?token=TOKEN once, or send Authorization: Bearer TOKEN). Visible to local
    /// users in the process list: prefer --token-file. The cookie that /?token= sets is sent
    /// by browsers to every port of this host (cookies ignore ports): other servers on the
    /// host can read it; send the Authorization header, or give the explorer a host of its own.
    #[arg(long, conflicts_with = "token_file")]
    token: Option<String>,
    /// Read the access token from this file (surrounding whitespace ignored).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Gate policy (TOML) for the decisions on tool-call entries; default: the bundled policy.
    #[arg(long)]
    policy: Option<PathBuf>,
}

/// Opens the ledger, binds, prints the address, indexes it in the background and serves
/// until killed.
pub fn run(args: Args) -> Res<ExitCode> {
    let token = match (&args.token, &args.token_file) {
        (Some(t), _) => Some(Token::new(t)?),
        (None, Some(p)) => {
            let bytes = read_capped(p, MAX_TOKEN_FILE, "a token file")?;
            let text = std::str::from_utf8(&bytes).map_err(|_| "the token file is not UTF-8")?;
            Some(Token::new(text.trim())?)
        }
        (None, None) => None,
    };
    let access = token.map_or_else(Access::loopback, Access::with_token);
    if !args.addr.ip().is_loopback() && !access.has_token() {
        // Refused before the ledger is even opened.
        return Err(memlineage::explore::ExploreError::NotLoopback(args.addr).into());
    }
    let policy = load_policy(args.policy)?;
    // Every handle is opened before anything is indexed, so that all of them see one state
    // (an append by another process in between is caught by `add_reader` and `indexer`).
    // Opening reads no entry without a flag (`Ledger::open`); with an active flag it reads
    // those after the flag's source (the quarantine rescan), so the handles are opened at
    // once, on threads of their own. The rows are counted by the indexer, in the background,
    // as the explorer writes nothing (spec/explorer.md §3.3).
    let opened: Vec<Result<_, String>> = std::thread::scope(|s| {
        let path = &args.ledger;
        let opening: Vec<_> = (0..=READERS)
            .map(|_| {
                s.spawn(move || {
                    open_with(path, false)
                        .map(|(l, _)| l)
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        opening
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("opening the ledger failed".to_string()))
            })
            .collect()
    });
    let mut ledgers = opened
        .into_iter()
        .collect::<Result<Vec<_>, String>>()?
        .into_iter();
    let first = ledgers.next().ok_or("no ledger handle")?;
    let mut explorer = Explorer::open(first, &args.ledger, policy);
    let indexer = explorer.indexer(ledgers.next().ok_or("no ledger handle")?)?;
    for l in ledgers {
        explorer.add_reader(l)?;
    }
    let server = Server::bind(explorer, args.addr, access)?;
    say!(
        "serving http://{}/ (read only; Ctrl-C stops)",
        server.local_addr()?
    );
    // The index is built after the address is printed: pages verify what they show until it
    // is complete, and the pages that need all of it say "still indexing".
    std::thread::spawn(move || match indexer.run() {
        Ok(s) => say!(
            "indexed {} entries ({} did not verify; stored rows {})",
            s.entries,
            s.unverified,
            if s.rows_chain {
                "chain"
            } else {
                "do NOT chain"
            }
        ),
        Err(e) => {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "memlineage serve: indexing failed: {e}");
        }
    });
    server.run()?;
    Ok(ExitCode::SUCCESS)
}
