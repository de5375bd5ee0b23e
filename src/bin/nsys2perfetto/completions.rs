//! `completions SHELL`: the shell's completion script for the program, made
//! from the command line clap knows, so every command, flag and enumerated
//! value (`--format`, `--rule`, ...) completes as `--help` lists it.

use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::signals::Signals;

/// Print the completion script of a shell, to be sourced by it.
///
/// bash: `source <(nsys2perfetto completions bash)` (or save it in
/// ~/.local/share/bash-completion/completions/nsys2perfetto); zsh: save it as
/// `_nsys2perfetto` in a directory of $fpath; fish: save it in
/// ~/.config/fish/completions/nsys2perfetto.fish.
#[derive(clap::Args)]
pub struct Args {
    /// The shell.
    #[arg(value_name = "SHELL")]
    shell: Shell,
}

/// (The signals play no part: printing a text is over at once.)
pub fn run(args: Args, _signals: &Signals) -> anyhow::Result<ExitCode> {
    let mut command = crate::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "nsys2perfetto", &mut script);
    crate::write_standard_output(&script)?;
    Ok(ExitCode::SUCCESS)
}
