//! Hook benchmark (not part of the tests; `spec/benchmarks.md` §Hooks): the wall time of one
//! `memlineage hook pre-tool-use` process at several ledger sizes, through the resident hook
//! server (`spec/hooks.md` §10) and in process, beside the cost of one Ed25519
//! `verify_strict` measured in the same run.
//!
//! ```text
//! cargo build --release --bin memlineage
//! cargo run --release --example hook_bench -- [--bin target/release/memlineage]
//!     [--sizes 1000,100000,1000000] [--runs 201] [--alone-runs 11] [--dir DIR] [--state]
//!     [--cold] [--reads 10,10000] [--long-alone-runs N]
//! ```
//!
//! Per size N, `DIR/N/l.db` is made with `memlineage init` and filled to N entries (prompt,
//! tool result, summary, repeated; pre-signed batches of 999) unless it already holds them,
//! so a second run reuses the ledgers (1M entries take a minute or two to write). Then the
//! session of `tests/hooks/claude-injected.jsonl` is recorded through the hooks (a fresh
//! session id per run), and its PreToolUse of the payment to the injected IBAN (a sensitive
//! call that is matched and blocked, exit 2) is timed: `--runs` times through the server
//! (one server per size, started and stopped by this program; the samples of all sizes are
//! interleaved, one per size per round), and `--alone-runs` times with
//! `MEMLINEAGE_HOOK_SERVER=off`. Each time is one child process, from spawn to exit,
//! including writing its standard input. Medians are reported, with the 90th percentile.
//! Also timed: the server's start, until it answers a PreToolUse, and until it takes an event
//! that writes (the prompt again: the server holds its writes until it has counted the
//! ledger's rows, `spec/hooks.md` §11.3); with `--cold`, the ledger file's pages are dropped
//! from the OS page cache before each server starts. And, in this process: `Ledger::open` of a fresh `SqliteStore` handle on the file
//! (`--alone-runs` times; the key is loaded once), which issue 19 asks not to grow with the
//! ledger's size.
//!
//! With `--reads 10,1000,10000` (issue 32's long sessions), the first size's served hooks also
//! record sessions that read that many tool outputs of 3 KB each (PostToolUse of a file
//! read, each output different; the fixture's bill last), then time the payment's PreToolUse
//! and one more 3 KB PostToolUse in each, served (`--runs`, interleaved across the sessions) and
//! in process (`--long-alone-runs`, default `--alone-runs`; 0 skips the in-process path, which
//! verifies every read on every event and passes the hook's deadline at 10,000 reads), and
//! print each beside its cost after the fewest reads.
//!
//! With `--separated` (as root; `spec/hooks.md` §14), each size's ledger is also copied and
//! installed with `memlineage hook install --separate` (agent user `nobody`, a guard user
//! `mlbench-<pid>-<i>` made for the run and deleted after it), its separated server is started
//! as the guard user, the session is recorded through the guarded hooks, and the same payment
//! is timed through `hook pre-tool-use --guarded SOCKET --guard-user UID` (this process is root,
//! which the server serves), interleaved with the other served samples.

#[path = "common/bench.rs"]
mod bench;

use bench::{build, quantile, verify_strict_us};
use memlineage::front::keystore::KeyStore;
use memlineage::store::SqliteStore;
use memlineage::Ledger;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

struct Opts {
    bin: PathBuf,
    sizes: Vec<u64>,
    runs: usize,
    alone_runs: usize,
    dir: PathBuf,
    /// `--reads`: the long sessions' read counts (none by default).
    reads: Vec<usize>,
    /// `--long-alone-runs`: in-process rounds in the long sessions (default `alone_runs`).
    long_alone_runs: Option<usize>,
}

fn opts() -> Res<Opts> {
    let mut o = Opts {
        bin: PathBuf::from("target/release/memlineage"),
        sizes: vec![1_000, 100_000, 1_000_000],
        runs: 201,
        alone_runs: 11,
        dir: std::env::temp_dir().join("memlineage-hook-bench"),
        reads: Vec::new(),
        long_alone_runs: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut v = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--bin" => o.bin = PathBuf::from(v()?),
            "--sizes" => o.sizes = v()?.split(',').map(str::parse).collect::<Result<_, _>>()?,
            "--runs" => o.runs = v()?.parse()?,
            "--alone-runs" => o.alone_runs = v()?.parse()?,
            "--dir" => o.dir = PathBuf::from(v()?),
            "--reads" => o.reads = v()?.split(',').map(str::parse).collect::<Result<_, _>>()?,
            "--long-alone-runs" => o.long_alone_runs = Some(v()?.parse()?),
            "--state" => {
                let _ = STATE.set(true);
            }
            "--cold" => {
                let _ = COLD.set(true);
            }
            "--separated" => {
                let _ = SEPARATED.set(true);
            }
            _ => return Err(format!("unknown argument {a}").into()),
        }
    }
    o.bin = std::fs::canonicalize(&o.bin)?;
    Ok(o)
}

/// Runs `bin hook <hook> l.db` in `dir` with `input` on stdin; returns exit code and time.
/// With `--state`: every hook and server runs with `--state DIR/N/state`, as `hook install`
/// writes them (the pin and the session records outside the ledger's directory).
static STATE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
/// `--cold`: drop the ledger file's pages from the OS page cache before starting each server
/// (`dd iflag=nocache count=0`, GNU coreutils), so that its start reads from disk.
static COLD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
/// `--separated`: time the separated install too.
static SEPARATED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// A separated install of one size: its guarded command, server and guard user.
struct Separated {
    bin: PathBuf,
    socket: String,
    guard_uid: String,
    server: std::process::Child,
    user: String,
    /// The payment of the session recorded through this install.
    pay: Vec<u8>,
    served: Vec<Duration>,
}

/// Runs `bin hook <hook> --guarded SOCKET --guard-user UID` with `input`; exit code and time.
fn guarded(s: &Separated, hook: &str, input: &[u8]) -> Res<(i32, Duration)> {
    let start = Instant::now();
    let mut child = Command::new(&s.bin)
        .args([
            "hook",
            hook,
            "--guarded",
            &s.socket,
            "--guard-user",
            &s.guard_uid,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    child.stdin.take().ok_or("stdin")?.write_all(input)?;
    let status = child.wait()?;
    Ok((status.code().unwrap_or(-1), start.elapsed()))
}

/// Copies `dir/l.db` (and its key) to `DIR/N-separated/`, installs it separated, starts its
/// server as the guard user and records `evs[..3]` (start, prompt, bill) through the guarded
/// hooks.
fn separate(o: &Opts, dir: &Path, n: u64, evs: &[(String, Vec<u8>, i64)]) -> Res<Separated> {
    use std::os::unix::fs::PermissionsExt;
    let top = o.dir.join(format!("{n}-separated"));
    let _ = std::fs::remove_dir_all(&top);
    std::fs::create_dir_all(top.join("src"))?;
    std::fs::create_dir_all(top.join("proj"))?;
    std::fs::set_permissions(&top, std::fs::Permissions::from_mode(0o711))?;
    for f in ["l.db", "l.db-wal", "l.db.key"] {
        if dir.join(f).exists() {
            std::fs::copy(dir.join(f), top.join("src").join(f))?;
        }
    }
    let user = format!("mlbench-{}-{n}", std::process::id());
    let out = Command::new(&o.bin)
        .args(["hook", "install", "--agent", "claude-code", "--separate"])
        .arg("--ledger")
        .arg(top.join("src/l.db"))
        .arg("--dir")
        .arg(top.join("proj"))
        .args([
            "--agent-user",
            "nobody",
            "--guard-user",
            &user,
            "--name",
            &format!("b{n}"),
        ])
        .arg("--guard-root")
        .arg(top.join("guard"))
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "install --separate: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let layout: Value =
        serde_json::from_str(&std::fs::read_to_string(top.join("guard/layout.json"))?)?;
    let field = |k: &str| layout[k].to_string().trim_matches('"').to_string();
    let server = Command::new("setpriv")
        .arg(format!("--reuid={}", field("guard_uid")))
        .arg(format!("--regid={}", field("guard_gid")))
        .args(["--init-groups", "--"])
        .arg(field("binary"))
        .args(["hook", "serve", "--separated"])
        .arg(top.join("guard/layout.json"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let s = Separated {
        bin: PathBuf::from(field("binary")),
        socket: field("socket"),
        guard_uid: field("guard_uid"),
        server,
        user,
        pay: evs[3].1.clone(),
        served: Vec::new(),
    };
    // The timed call must be the gate's refusal, not a fail-closed one.
    let check = |input: &[u8]| -> Res<String> {
        let mut child = Command::new(&s.bin)
            .args([
                "hook",
                "pre-tool-use",
                "--guarded",
                &s.socket,
                "--guard-user",
                &s.guard_uid,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        child.stdin.take().ok_or("stdin")?.write_all(input)?;
        Ok(String::from_utf8_lossy(&child.wait_with_output()?.stderr).into_owned())
    };
    let start = Instant::now();
    while std::os::unix::net::UnixStream::connect(&s.socket).is_err() {
        if start.elapsed() > Duration::from_secs(600) {
            return Err("the separated server did not come up".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for (h, input, want) in &evs[..3] {
        let (code, _) = guarded(&s, h, input)?;
        if i64::from(code) != *want {
            return Err(format!("separated {h}: exit {code}, want {want}").into());
        }
    }
    let why = check(&s.pay)?;
    if !why.contains("labelled EXTERNAL") {
        return Err(format!("separated payment not refused by the gate: {why}").into());
    }
    Ok(s)
}

/// `["--state", "state"]` when the hooks keep a state directory (relative to the size's dir).
fn state_args() -> Vec<&'static str> {
    if STATE.get().copied().unwrap_or(false) {
        vec!["--state", "state"]
    } else {
        Vec::new()
    }
}

fn hook(bin: &Path, dir: &Path, mode: &str, hook: &str, input: &[u8]) -> Res<(i32, Duration)> {
    let start = Instant::now();
    let mut child = Command::new(bin)
        .args(["hook", hook, "l.db"])
        .args(state_args())
        .current_dir(dir)
        .env("MEMLINEAGE_HOOK_SERVER", mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    child.stdin.take().ok_or("stdin")?.write_all(input)?;
    let status = child.wait()?;
    Ok((status.code().unwrap_or(-1), start.elapsed()))
}

/// The fixture's events with `session_id` replaced by `session`.
fn events(session: &str) -> Res<Vec<(String, Vec<u8>, i64)>> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hooks/claude-injected.jsonl");
    let mut out = Vec::new();
    for line in std::fs::read_to_string(file)?.lines() {
        let mut c: Value = serde_json::from_str(line)?;
        c["event"]["session_id"] = Value::from(session);
        out.push((
            c["hook"].as_str().ok_or("hook")?.to_string(),
            serde_json::to_vec(&c["event"])?,
            c["want_exit"].as_i64().ok_or("want_exit")?,
        ));
    }
    Ok(out)
}

fn main() -> Res<()> {
    let o = opts()?;
    let verify_before = verify_strict_us();
    // Per size: the ledger, its recorded session, the in-process samples and a started server.
    struct Size {
        n: u64,
        dir: PathBuf,
        pay: (String, Vec<u8>, i64),
        alone: Vec<Duration>,
        opens: Vec<Duration>,
        server: std::process::Child,
        server_up: Duration,
        writes_up: Duration,
        served: Vec<Duration>,
        separated: Option<Separated>,
    }
    let mut sizes = Vec::new();
    let mut long = Vec::new();
    for &n in &o.sizes {
        let dir = o.dir.join(n.to_string());
        build(&o.bin, &dir, n)?;
        let session = format!("bench-{}-{n}", std::process::id());
        let evs = events(&session)?;
        // The session's start, the prompt and the injected bill, recorded in process (so the
        // server starts cold).
        for (h, input, want) in &evs[..3] {
            let (code, _) = hook(&o.bin, &dir, "off", h, input)?;
            if i64::from(code) != *want {
                return Err(format!("{h}: exit {code}, want {want}").into());
            }
        }
        let keys = KeyStore::load(&dir.join("l.db.key"))?;
        let mut opens = Vec::new();
        for _ in 0..o.alone_runs {
            let signer = keys.log_signer()?;
            let t = Instant::now();
            let l = Ledger::open(SqliteStore::open(&dir.join("l.db"))?, signer)?;
            opens.push(t.elapsed());
            if l.len() < n {
                return Err(format!("opened {} entries, want {n}", l.len()).into());
            }
        }
        let (h, pay, want) = &evs[3];
        let mut alone = Vec::new();
        for _ in 0..o.alone_runs {
            let (code, t) = hook(&o.bin, &dir, "off", h, pay)?;
            if i64::from(code) != *want {
                return Err(format!("in process: exit {code}, want {want}").into());
            }
            alone.push(t);
        }
        // The server, started as the hooks start it (`memlineage hook serve`), but as this
        // process's child so that it is stopped afterwards; timed until it answers (`only`
        // fails closed with exit 2 otherwise, so a benign call exits 0 only when served).
        let (bh, bash, _) = &evs[5];
        if COLD.get().copied().unwrap_or(false) {
            for f in ["l.db", "l.db-wal"]
                .into_iter()
                .filter(|f| dir.join(f).exists())
            {
                let status = Command::new("dd")
                    .arg(format!("if={}", dir.join(f).display()))
                    .args(["iflag=nocache", "count=0", "status=none"])
                    .status()?;
                if !status.success() {
                    return Err(format!("dd iflag=nocache on {f} failed").into());
                }
            }
        }
        let start = Instant::now();
        let server = Command::new(&o.bin)
            .args(["hook", "serve", "l.db"])
            .args(state_args())
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        while hook(&o.bin, &dir, "only", bh, bash)?.0 != 0 {
            if start.elapsed() > Duration::from_secs(600) {
                return Err("the hook server did not come up".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let server_up = start.elapsed();
        // Writes ready: the prompt again (an event that writes), served once the server has
        // counted the ledger's rows (`spec/hooks.md` §11.3; `only` fails it closed, writing
        // nothing, while the count runs past the server's wait).
        let (ph, prompt, _) = &evs[1];
        while hook(&o.bin, &dir, "only", ph, prompt)?.0 != 0 {
            if start.elapsed() > Duration::from_secs(600) {
                return Err("the hook server did not take a write".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let writes_up = start.elapsed();
        if sizes.is_empty() && !o.reads.is_empty() {
            long = long_sessions(&o, &dir, &session)?;
        }
        let separated = if SEPARATED.get().copied().unwrap_or(false) {
            let sep_session = format!("{session}-separated");
            Some(separate(&o, &dir, n, &events(&sep_session)?)?)
        } else {
            None
        };
        sizes.push(Size {
            separated,
            n,
            dir,
            pay: (h.clone(), pay.clone(), *want),
            alone,
            opens,
            server,
            server_up,
            writes_up,
            served: Vec::new(),
        });
    }
    // Served samples interleaved across sizes (one per size per round), so that every size
    // sees the same machine: on a shared VM the load drifts within seconds.
    for _ in 0..o.runs {
        for sz in &mut sizes {
            let (h, pay, want) = sz.pay.clone();
            let (code, t) = hook(&o.bin, &sz.dir, "only", &h, &pay)?;
            if i64::from(code) != want {
                return Err(format!("served: exit {code}, want {want}").into());
            }
            sz.served.push(t);
            if let Some(sep) = sz.separated.as_mut() {
                let sep_pay = sep.pay.clone();
                let (code, t) = guarded(sep, &h, &sep_pay)?;
                if i64::from(code) != want {
                    return Err(format!("separated: exit {code}, want {want}").into());
                }
                sep.served.push(t);
            }
        }
    }
    let mut rows = Vec::new();
    let mut separated_rows = Vec::new();
    for mut sz in sizes {
        sz.server.kill()?;
        sz.server.wait()?;
        if let Some(mut sep) = sz.separated.take() {
            sep.server.kill()?;
            sep.server.wait()?;
            let _ = Command::new("userdel").arg(&sep.user).output();
            let _ = Command::new("groupdel").arg(&sep.user).output();
            separated_rows.push((
                sz.n,
                quantile(&mut sep.served, 0.5),
                quantile(&mut sep.served, 0.9),
            ));
        }
        let row = (
            sz.n,
            quantile(&mut sz.served, 0.5),
            quantile(&mut sz.served, 0.9),
            quantile(&mut sz.alone, 0.5),
            sz.server_up.as_secs_f64(),
            sz.writes_up.as_secs_f64(),
            quantile(&mut sz.opens, 0.5),
        );
        eprintln!("{row:?}");
        rows.push(row);
    }
    let verify_after = verify_strict_us();
    let verify = (verify_before + verify_after) / 2.0;
    println!(
        "Ed25519 verify_strict (100-byte message), median: {verify:.1} µs \
         (before {verify_before:.1}, after {verify_after:.1})"
    );
    println!();
    println!(
        "| entries | served median (ms) | served p90 (ms) | served / verify_strict | \
         in process median (ms) | server start (s) | writes ready (s) | `Ledger::open` median \
         (ms) | open / verify_strict |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (n, med, p90, alone, up, writes, open) in &rows {
        println!(
            "| {n} | {med:.2} | {p90:.2} | {:.0}× | {alone:.1} | {up:.3} | {writes:.3} | {open:.2} \
             | {:.0}× |",
            med * 1e3 / verify,
            open * 1e3 / verify
        );
    }
    if !long.is_empty() {
        print_long(&long, verify);
    }
    if !separated_rows.is_empty() {
        println!();
        println!(
            "| entries | separated (--guarded) median (ms) | p90 (ms) | separated / verify_strict |"
        );
        println!("|---:|---:|---:|---:|");
        for (n, med, p90) in &separated_rows {
            println!("| {n} | {med:.2} | {p90:.2} | {:.0}× |", med * 1e3 / verify);
        }
    }
    if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
        println!();
        println!(
            "ratio served median {} / {}: {:.2}",
            last.0,
            first.0,
            last.1 / first.1
        );
        println!(
            "ratio server start {} / {}: {:.2}; writes ready: {:.2}",
            last.0,
            first.0,
            last.4 / first.4,
            last.5 / first.5
        );
        println!(
            "ratio Ledger::open median {} / {}: {:.2}",
            last.0,
            first.0,
            last.6 / first.6
        );
    }
    Ok(())
}

/// The timings of one long session (`--reads`): its read count, and the served and in-process
/// samples of its PreToolUse (the payment) and PostToolUse (one more 3 KB output).
struct Long {
    reads: usize,
    pre_served: Vec<Duration>,
    post_served: Vec<Duration>,
    pre_alone: Vec<Duration>,
    post_alone: Vec<Duration>,
}

/// A 3 KB tool output, different for each `i`: a build log with numbers, paths and words.
fn output_3kb(i: usize) -> String {
    let mut t = String::with_capacity(3200);
    let mut k = 0usize;
    while t.len() < 3000 {
        let x = (i * 7919 + k * 104_729) % 100_000;
        t.push_str(&format!(
            "2026-12-06T07:{:02}:{:02}Z step {i}.{k}: compiled crate_{x:05} in {}.{:03}s, \
             {} warnings, src/module_{}/file_{x}.rs line {}\n",
            k % 60,
            (i + k) % 60,
            x % 97,
            x % 1000,
            x % 7,
            k % 13,
            x % 4001
        ));
        k += 1;
    }
    t
}

/// The PostToolUse of reading file `i` (a 3 KB output) in `session`.
fn read_event(session: &str, i: usize) -> Res<Vec<u8>> {
    Ok(serde_json::to_vec(&serde_json::json!({
        "session_id": session,
        "transcript_path": "/home/u/proj/.claude/projects/s1.jsonl",
        "cwd": "/home/u/proj",
        "hook_event_name": "PostToolUse",
        "tool_name": "mcp__files__read_file",
        "tool_input": {"file_path": format!("logs/build-{i}.txt")},
        "tool_response": output_3kb(i),
    }))?)
}

/// Records one session per `--reads` count through the served hooks (start, prompt, that many
/// 3 KB outputs less one, then the fixture's bill), and times the payment's PreToolUse and a
/// further PostToolUse in each, served and in process.
fn long_sessions(o: &Opts, dir: &Path, base: &str) -> Res<Vec<Long>> {
    let mut out = Vec::new();
    let mut pays = Vec::new();
    for &r in &o.reads {
        let session = format!("{base}-reads{r}");
        let evs = events(&session)?;
        let served = |h: &str, input: &[u8], want: i64| -> Res<()> {
            let (code, _) = hook(&o.bin, dir, "only", h, input)?;
            if i64::from(code) != want {
                return Err(format!("long session {r}: {h}: exit {code}, want {want}").into());
            }
            Ok(())
        };
        served(&evs[0].0, &evs[0].1, evs[0].2)?;
        served(&evs[1].0, &evs[1].1, evs[1].2)?;
        for i in 0..r.saturating_sub(1) {
            served("post-tool-use", &read_event(&session, i)?, 0)?;
        }
        served(&evs[2].0, &evs[2].1, evs[2].2)?;
        eprintln!("long session: {r} reads recorded");
        pays.push((session, evs[3].clone()));
        out.push(Long {
            reads: r,
            pre_served: Vec::new(),
            post_served: Vec::new(),
            pre_alone: Vec::new(),
            post_alone: Vec::new(),
        });
    }
    let mut next = 1_000_000;
    let alone = o.long_alone_runs.unwrap_or(o.alone_runs);
    for (mode, rounds) in [("only", o.runs), ("off", alone)] {
        for _ in 0..rounds {
            for (l, (session, pay)) in out.iter_mut().zip(&pays) {
                next += 1;
                let (pre, post) = pre_and_post(o, dir, mode, session, pay, next)?;
                let (pres, posts) = match mode {
                    "only" => (&mut l.pre_served, &mut l.post_served),
                    _ => (&mut l.pre_alone, &mut l.post_alone),
                };
                pres.push(pre);
                posts.push(post);
            }
        }
    }
    Ok(out)
}

/// One timed PreToolUse of `pay` and one PostToolUse of a new 3 KB output (`i`) in `session`,
/// with `MEMLINEAGE_HOOK_SERVER=mode`.
fn pre_and_post(
    o: &Opts,
    dir: &Path,
    mode: &str,
    session: &str,
    (h, pay, want): &(String, Vec<u8>, i64),
    i: usize,
) -> Res<(Duration, Duration)> {
    let (code, pre) = hook(&o.bin, dir, mode, h, pay)?;
    if i64::from(code) != *want {
        return Err(format!("long session, {mode}: PreToolUse exit {code}, want {want}").into());
    }
    let (code, post) = hook(&o.bin, dir, mode, "post-tool-use", &read_event(session, i)?)?;
    if code != 0 {
        return Err(format!("long session, {mode}: PostToolUse exit {code}").into());
    }
    Ok((pre, post))
}

/// The long sessions' table: medians in ms, each / verify_strict and / its value at the
/// fewest reads.
fn print_long(long: &[Long], verify: f64) {
    let mut rows: Vec<(usize, [f64; 4])> = Vec::new();
    for l in long {
        let mut m = [
            l.pre_served.clone(),
            l.post_served.clone(),
            l.pre_alone.clone(),
            l.post_alone.clone(),
        ];
        // In ms; NaN where no sample was taken (`--alone-runs 0`).
        rows.push((
            l.reads,
            m.each_mut().map(|v| match v.is_empty() {
                true => f64::NAN,
                false => quantile(v, 0.5),
            }),
        ));
    }
    let Some((_, first)) = rows.first().cloned() else {
        return;
    };
    println!();
    println!(
        "| reads | served PreToolUse (ms) | / verify_strict | / first | served PostToolUse (ms) \
         | / first | in process PreToolUse (ms) | / first | in process PostToolUse (ms) | / first |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (r, m) in &rows {
        println!("{}", bench::four_row(*r, m, &first, m[0] * 1e3 / verify));
    }
}
