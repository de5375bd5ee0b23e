//! The flags of the commands that print tables (`stats`, `compare`), and how
//! those tables are written.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use nsys2perfetto::stats::{save_tables, write_tables, Fit, Table, TableFormat};

/// Where tables go and how they look.
#[derive(clap::Args)]
pub struct TableOutput {
    /// table (aligned columns), csv (as `nsys stats --format csv`) or json
    /// (JSON Lines: one object per summary and report).
    #[arg(long, value_name = "FORMAT", default_value = "table")]
    format: TableFormat,

    /// Write to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Names whole in the table format (cut otherwise to the terminal's
    /// width, or to 100 characters as nsys cuts them, ending in "…").
    #[arg(long)]
    wide: bool,
}

impl TableOutput {
    /// Refuses, before any report is read, an output file that cannot be
    /// written.
    pub fn check(&self) -> Result<(), crate::Usage> {
        match &self.output {
            Some(path) => crate::paths::writable(path).map_err(crate::Usage),
            None => Ok(()),
        }
    }

    /// Writes the tables of each report, named by its source, to the file
    /// or to standard output, with names as long as [`TableOutput::fit`]
    /// allows.
    pub fn write(&self, summaries: &[(String, Vec<Table>)]) -> anyhow::Result<()> {
        let fit = self.fit();
        match &self.output {
            Some(path) => save_tables(path, summaries, self.format, fit)?,
            None => {
                let mut text = Vec::new();
                write_tables(&mut text, summaries, self.format, fit).expect("writing to memory");
                let mut out = std::io::stdout().lock();
                out.write_all(&text)
                    .and_then(|()| out.flush())
                    .context("cannot write standard output")?
            }
        }
        Ok(())
    }

    /// How long names may be in an aligned table: whole with `--wide`; on a
    /// terminal, as long as its lines allow; elsewhere (a file, a pipe), as
    /// long as nsys prints them.
    fn fit(&self) -> Fit {
        use std::io::IsTerminal;
        if self.wide {
            return Fit::Whole;
        }
        let stdout = std::io::stdout();
        match (&self.output, stdout.is_terminal()) {
            (None, true) => match terminal_size::terminal_size_of(&stdout) {
                Some((terminal_size::Width(columns), _)) => Fit::Line(usize::from(columns)),
                None => Fit::NSYS,
            },
            _ => Fit::NSYS,
        }
    }
}
