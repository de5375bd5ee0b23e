//! `--nsys` and `-q`, the last flags of the commands that read reports and
//! tell a person how it went (all but `mcp`, which talks to a program, and
//! `profile` and `serve`, whose `--nsys` and `-q` say other things).

use nsys2perfetto::ReadOptions;

use crate::exporter::Exporter;
use crate::signals::Signals;

/// `--nsys`, the CLI that exports reports, and `-q`, errors only.
///
/// What `-q` leaves unsaid is each command's own, so `-q` has no help here:
/// each command gives it with [`quiet_help`].
#[derive(clap::Args, Clone, Debug)]
pub struct Reading {
    #[command(flatten)]
    pub exporter: Exporter,

    #[arg(short, long)]
    pub quiet: bool,
}

impl Reading {
    /// How the command reads its inputs: see [`Exporter::read_options`].
    pub fn read_options(&self, signals: &Signals) -> ReadOptions {
        self.exporter.read_options(signals)
    }
}

/// Gives `-q` its help, `help`: what the command leaves unsaid with it. On
/// a command's `Args`: `#[command(mut_args(quiet_help("...")))]`. (clap's
/// `mut_arg` would move the flag to the end of the list that completion
/// scripts follow; this changes it in its place. `command_line` tests that
/// every flag of every command has its help.)
pub fn quiet_help(help: &'static str) -> impl FnMut(clap::Arg) -> clap::Arg {
    move |arg| match arg.get_id() == "quiet" {
        true => arg.help(help),
        false => arg,
    }
}
