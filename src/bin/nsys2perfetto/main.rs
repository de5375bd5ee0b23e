//! `nsys2perfetto`: the command line. All the work is in the library; each
//! subcommand is a module here that turns its flags into library calls.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod analyze;
mod batch;
mod compare;
mod conversion;
mod convert;
mod merge;
mod open;
mod profile;
mod series;
mod signals;
mod stats;

#[derive(Parser)]
#[command(
    version,
    about = "Convert NVIDIA Nsight Systems reports into Perfetto traces"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Convert(convert::Args),
    Profile(profile::Args),
    Open(open::Args),
    Merge(merge::Args),
    Stats(stats::Args),
    Analyze(analyze::Args),
    Compare(compare::Args),
    Series(series::Args),
}

/// Exit status of a command line refused before any input is read (as for
/// clap's own usage errors).
const USAGE: u8 = 2;
/// Exit status of a run interrupted by a signal that left no status
/// (128 + SIGINT, as a shell reports Ctrl-C).
const INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let signals = match signals::Signals::watch() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("nsys2perfetto: error: cannot handle signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Command::Convert(args) => convert::run(args, &signals),
        Command::Profile(args) => profile::run(args, &signals),
        Command::Open(args) => open::run(args, &signals),
        Command::Merge(args) => merge::run(args, &signals),
        Command::Stats(args) => stats::run(args, &signals),
        Command::Analyze(args) => analyze::run(args, &signals),
        Command::Compare(args) => compare::run(args, &signals),
        Command::Series(args) => series::run(args, &signals),
    }
}

/// A byte count as people read it: 11.7 KiB, 20.7 MiB.
fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}
