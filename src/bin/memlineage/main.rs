//! `memlineage`: record agent memory into a signed ledger, verify it offline, gate tool calls.
//!
//! A thin layer over the library: parsing arguments, reading files, printing. Each subcommand
//! lives in its own module, with its arguments (`Args`, whose doc comment is its help) and its
//! `run`; this file only parses and dispatches. Errors go to stderr with a non-zero exit status.

use clap::{Parser, Subcommand};
use std::error::Error;
use std::process::ExitCode;

// Subcommands, in the order `memlineage --help` lists them.
mod init;
mod append;
mod replay;
mod eval;
mod verify;
mod export;
mod export_tiles;
mod migrate;
mod verify_tiles;
mod checkpoint;
mod prove;
mod verify_proof;
mod inspect;
mod explain;
mod flag;
mod release;
mod receipt;
mod heal;
mod rework;
mod gate;
mod ddmin;
mod amputate;
mod demo;
mod mcp;
mod hook;

// Shared by the subcommands.
mod hook_answer;
mod hook_install;
mod hook_separate;
mod hook_tools;
mod hookd;
mod io;
mod mcp_doctor;
mod mcp_door;
mod mcp_install;
mod mcp_proxy;
mod open;
mod progress;
mod telemetry;
#[cfg(feature = "explorer")]
mod serve;

type Res<T> = Result<T, Box<dyn Error>>;

#[derive(Parser)]
#[command(
    name = "memlineage",
    version,
    about = "Chain of custody for LLM agent memory"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// The subcommands; each variant's help is its `Args`' doc comment.
#[derive(Subcommand)]
enum Cmd {
    Init(init::Args),
    Append(append::Args),
    Replay(replay::Args),
    Eval(eval::Args),
    Verify(verify::Args),
    Export(export::Args),
    ExportTiles(export_tiles::Args),
    Migrate(migrate::Args),
    VerifyTiles(verify_tiles::Args),
    Checkpoint(checkpoint::Args),
    Prove(prove::Args),
    VerifyProof(verify_proof::Args),
    Inspect(inspect::Args),
    Explain(explain::Args),
    Flag(flag::Args),
    Release(release::Args),
    Receipt(receipt::Args),
    Heal(heal::Args),
    Rework(rework::Args),
    Gate(gate::Args),
    Ddmin(ddmin::Args),
    Amputate(amputate::Args),
    Demo(demo::Args),
    Mcp(mcp::Args),
    Hook(hook::Args),
    /// A read-only web explorer of the ledger: overview, entries, quarantine reach with
    /// receipts, gate decisions (spec/explorer.md). Loopback only unless --token.
    #[cfg(feature = "explorer")]
    Serve(serve::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.cmd) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cmd: Cmd) -> Res<ExitCode> {
    match cmd {
        Cmd::Init(a) => init::run(a),
        Cmd::Append(a) => append::run(a),
        Cmd::Replay(a) => replay::run(a),
        Cmd::Eval(a) => eval::run(a),
        Cmd::Verify(a) => verify::run(a),
        Cmd::Export(a) => export::run(a),
        Cmd::ExportTiles(a) => export_tiles::run(a),
        Cmd::Migrate(a) => migrate::run(a),
        Cmd::VerifyTiles(a) => verify_tiles::run(a),
        Cmd::Checkpoint(a) => checkpoint::run(a),
        Cmd::Prove(a) => prove::run(a),
        Cmd::VerifyProof(a) => verify_proof::run(a),
        Cmd::Inspect(a) => inspect::run(a),
        Cmd::Explain(a) => explain::run(a),
        Cmd::Flag(a) => flag::run(a),
        Cmd::Release(a) => release::run(a),
        Cmd::Receipt(a) => receipt::run(a),
        Cmd::Heal(a) => heal::run(a),
        Cmd::Rework(a) => rework::run(a),
        Cmd::Gate(a) => gate::run(a),
        Cmd::Ddmin(a) => ddmin::run(a),
        Cmd::Amputate(a) => amputate::run(a),
        Cmd::Demo(a) => demo::run(a),
        Cmd::Mcp(a) => mcp::run(a),
        Cmd::Hook(a) => hook::run(a),
        #[cfg(feature = "explorer")]
        Cmd::Serve(a) => serve::run(a),
    }
}
