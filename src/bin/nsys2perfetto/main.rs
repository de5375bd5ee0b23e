//! `nsys2perfetto`: the command line. All the work is in the library; each
//! subcommand is a module here that turns its flags into library calls.
//!
//! Every error a subcommand meets comes back here, as an `anyhow::Error`, and
//! is printed by [`print_error`] on one line; the exit status is chosen here
//! too ([`exit_status`]). Warnings and notes go through [`warn`] and [`note`].

use std::fmt::Display;
use std::process::ExitCode;

use anyhow::Context;
use clap::error::ErrorKind;
use clap::{Parser, Subcommand};
use nsys2perfetto::human_bytes;

mod analyze;
mod batch;
mod compare;
mod completions;
mod conversion;
mod convert;
mod exporter;
mod flags;
mod grouping;
mod host;
mod man;
mod mcp;
mod merge;
mod open;
mod paths;
mod profile;
mod query;
mod reading;
mod report;
mod series;
mod series_output;
mod serve;
mod signals;
mod stats;
mod tables;

#[derive(Parser)]
#[command(
    version,
    about = "Convert NVIDIA Nsight Systems reports into Perfetto traces"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Declares the commands once: `Name: module` is the command `name`, whose
/// flags are `module::Args` and whose work is `module::run(args, signals)`.
macro_rules! commands {
    ($($name:ident: $module:ident),* $(,)?) => {
        #[derive(Subcommand)]
        enum Command {
            $($name($module::Args),)*
        }

        impl Command {
            fn run(self, signals: &signals::Signals) -> anyhow::Result<ExitCode> {
                match self {
                    $(Command::$name(args) => $module::run(args, signals),)*
                }
            }
        }
    };
}

commands! {
    Convert: convert,
    Profile: profile,
    Open: open,
    Merge: merge,
    Stats: stats,
    Analyze: analyze,
    Compare: compare,
    Series: series,
    Report: report,
    Query: query,
    Mcp: mcp,
    Serve: serve,
    Completions: completions,
    Man: man,
}

/// Exit status of a command line refused before any input is read (as for
/// clap's own usage errors).
const USAGE: u8 = 2;
/// Exit status of a run interrupted by a signal that left no status
/// (128 + SIGINT, as a shell reports Ctrl-C).
const INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return refuse_command_line(e),
    };
    let signals = match signals::Signals::watch().context("cannot handle signals") {
        Ok(signals) => signals,
        Err(e) => return exit_status(&e, None),
    };
    // What runs killed before their end (SIGKILL) left.
    nsys2perfetto::temporaries::remove_stale();
    let ran = cli.command.run(&signals);
    match ran {
        Ok(status) => status,
        Err(e) => exit_status(&e, signals.received()),
    }
}

/// A command line refused before any input is read: exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// A run stopped by a signal: exit status 128 + the signal's number. Its
/// message says what was stopped; it is printed without "error:".
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Interrupted(pub String);

/// `e`, where reading the reports of a table was interrupted: an
/// [`Interrupted`] saying which report, before anything was written.
pub fn interrupted_reading(e: nsys2perfetto::Error) -> anyhow::Error {
    match e {
        nsys2perfetto::Error::Interrupted { path } => Interrupted(format!(
            "interrupted while reading {}; nothing written",
            path.display()
        ))
        .into(),
        e => e.into(),
    }
}

/// `e`, a usage error where the library refused an option before reading
/// any input (for the calls that check their options first); an
/// interruption as [`interrupted_reading`] says it.
pub fn refused_option(e: nsys2perfetto::Error) -> anyhow::Error {
    match e {
        nsys2perfetto::Error::InvalidOption(_) => Usage(e.to_string()).into(),
        e => interrupted_reading(e),
    }
}

/// How a failure ends the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    /// The command line was refused: exit status 2.
    Usage,
    /// A signal stopped the run: 128 + its number.
    Interrupted,
    /// The reader of standard output stopped reading (`-o - | head`): what
    /// it wanted it had, so the program ends quietly with status 0, as
    /// `git log | head` does (a program killed by SIGPIPE would give 141,
    /// which `set -o pipefail` takes for a failure).
    ReaderGone,
    /// Anything else: exit status 1.
    Failed,
}

fn failure(e: &anyhow::Error) -> Failure {
    use nsys2perfetto::Error as Lib;
    use std::io::ErrorKind::BrokenPipe;
    for cause in e.chain() {
        if cause.is::<Usage>() {
            return Failure::Usage;
        }
        if cause.is::<Interrupted>() {
            return Failure::Interrupted;
        }
        match cause.downcast_ref::<Lib>() {
            Some(Lib::Interrupted { .. } | Lib::ProfilingInterrupted { .. }) => {
                return Failure::Interrupted
            }
            Some(Lib::Writer { cause }) if cause.kind() == BrokenPipe => {
                return Failure::ReaderGone
            }
            Some(Lib::Output { path, cause })
                if nsys2perfetto::is_standard_output(path) && cause.kind() == BrokenPipe =>
            {
                return Failure::ReaderGone
            }
            // A refused output name is a usage error, whenever it is found.
            Some(
                Lib::OutputIsInput { .. }
                | Lib::OutputIsReport { .. }
                | Lib::NamedAfterDevice { .. }
                | Lib::ReportExists { .. },
            ) => return Failure::Usage,
            _ => {}
        }
        if cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == BrokenPipe)
        {
            return Failure::ReaderGone;
        }
    }
    Failure::Failed
}

/// Prints `e` on one line: `nsys2perfetto: error: ` and its chain of
/// causes, joined by ": " (an interruption without "error: "; nothing where
/// the reader of standard output went away).
pub fn print_error(e: &anyhow::Error) {
    match failure(e) {
        Failure::ReaderGone => {}
        Failure::Interrupted => say(format_args!("nsys2perfetto: {e:#}")),
        Failure::Usage | Failure::Failed => say(format_args!("nsys2perfetto: error: {e:#}")),
    }
}

/// Prints `e` and gives the exit status it calls for; `received`, the
/// status of the signal received, if one was.
fn exit_status(e: &anyhow::Error, received: Option<u8>) -> ExitCode {
    print_error(e);
    match failure(e) {
        Failure::Usage => ExitCode::from(USAGE),
        Failure::Interrupted => ExitCode::from(received.unwrap_or(INTERRUPTED)),
        Failure::ReaderGone => ExitCode::SUCCESS,
        Failure::Failed => ExitCode::FAILURE,
    }
}

/// Prints a line on standard error. A standard error that cannot be
/// written (closed, or a pipe whose reader is gone) is no reason to stop,
/// still less to panic as `eprintln!` does: the exit status says the rest.
pub fn say(line: impl Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Prints a warning: something the user should know about a result that
/// was nevertheless made.
pub fn warn(message: impl Display) {
    say(format_args!("nsys2perfetto: warning: {message}"));
}

/// What the analyses say of a table they could not read: a warning, as
/// `convert` says it, naming the input.
pub fn on_unreadable() -> Option<nsys2perfetto::OnUnreadable> {
    let hear = |path: &std::path::Path, table: &nsys2perfetto::Unreadable| {
        let line = table.warning(nsys2perfetto::NOT_READ);
        warn(format_args!("{}: {line}", path.display()));
    };
    Some(nsys2perfetto::OnUnreadable(std::sync::Arc::new(hear)))
}

/// What `stats`, `compare` and measured steps say of the CUDA events they
/// left out of an input for their times: a warning, as `report` words it.
pub fn on_impossible_times() -> Option<nsys2perfetto::OnImpossibleTimes> {
    let hear = |path: &std::path::Path, events: u64| {
        if let Some(line) = nsys2perfetto::impossible_times_warning(events) {
            warn(format_args!("{}: {line}", path.display()));
        }
    };
    Some(nsys2perfetto::OnImpossibleTimes(std::sync::Arc::new(hear)))
}

/// Prints a note: how something was decided, where the user may want to
/// decide otherwise.
pub fn note(message: impl Display) {
    say(format_args!("nsys2perfetto: note: {message}"));
}

/// Help and version as clap prints them; any other refusal of the command
/// line on one line, as every other error.
fn refuse_command_line(e: clap::Error) -> ExitCode {
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    exit_status(&Usage(one_line(&e.render().to_string())).into(), None)
}

/// clap's message on one line: its lines up to the usage, without the
/// leading "error: ", tips after a "; ".
fn one_line(rendered: &str) -> String {
    let mut line = String::new();
    for part in rendered
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        if line.is_empty() {
            line.push_str(part.strip_prefix("error: ").unwrap_or(part));
        } else {
            line.push_str(if part.starts_with("tip:") { "; " } else { " " });
            line.push_str(part);
        }
    }
    line
}

/// Writes `bytes` to standard output: a text the program prints whole
/// (a completion script, a manual page).
fn write_standard_output(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}
