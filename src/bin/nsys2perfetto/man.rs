//! `man`: the manual page of the program, or of one of its commands, in
//! roff, made from the command line clap knows (the same text as `--help`).

use std::process::ExitCode;

use clap::CommandFactory;

use crate::signals::Signals;

/// Print the manual page (roff), to read with `man -l -` or install as
/// nsys2perfetto.1 (nsys2perfetto-COMMAND.1 for a command).
#[derive(clap::Args)]
pub struct Args {
    /// The command whose page to print (default: the program's, which lists
    /// the commands).
    #[arg(value_name = "COMMAND")]
    command: Option<String>,
}

/// (The signals play no part: printing a text is over at once.)
pub fn run(args: Args, _signals: &Signals) -> anyhow::Result<ExitCode> {
    let program = crate::Cli::command();
    let page = match &args.command {
        None => program,
        Some(name) => {
            let Some(command) = program.find_subcommand(name) else {
                let names: Vec<&str> = program.get_subcommands().map(|c| c.get_name()).collect();
                return Err(crate::Usage(format!(
                    "no command {name:?} (commands: {})",
                    names.join(", ")
                ))
                .into());
            };
            // The page's title and usage name the command as it is typed.
            command
                .clone()
                .bin_name(format!("nsys2perfetto {name}"))
                .display_name(format!("nsys2perfetto-{name}"))
                .version(env!("CARGO_PKG_VERSION"))
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page).render(&mut roff)?;
    crate::write_standard_output(&roff)?;
    Ok(ExitCode::SUCCESS)
}
