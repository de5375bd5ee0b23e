//! The flags of the commands that print tables (`stats`, `compare`), and how
//! those tables are written.

use std::io::{BufWriter, Seek, Write};
use std::path::PathBuf;

use anyhow::Context;

use nsys2perfetto::stats::{
    save_summaries, save_tables, write_summaries, write_tables, Fit, StatsReport, Table,
    TableFormat,
};
use nsys2perfetto::Options;

use crate::interrupted_reading;

/// Where tables go and how they look.
#[derive(clap::Args)]
pub struct TableOutput {
    /// table (aligned columns), csv (as `nsys stats --format csv`: a table
    /// alone starts with its header; several on standard output each follow
    /// a `# title (name) of report` line) or json (JSON Lines: one object
    /// per table and report).
    #[arg(long, value_name = "FORMAT", default_value = "table")]
    format: TableFormat,

    /// Write to this file instead of standard output; several tables in
    /// CSV go to a file each, FILE_<table>.csv (FILE without its .csv), as
    /// `nsys stats -o` names them.
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
    pub fn write(&self, summaries: &[(Vec<String>, Vec<Table>)]) -> anyhow::Result<()> {
        let fit = self.fit();
        match &self.output {
            Some(path) => say_written(&save_tables(path, summaries, self.format, fit)?),
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

    /// Computes `which` summaries of each input and writes them to the file
    /// or to standard output, each as soon as it is computed: memory does
    /// not grow with the summaries' rows. Standard output gets them when all
    /// are done, from a temporary file, so that a failure prints none.
    pub fn write_summaries(
        &self,
        inputs: &[PathBuf],
        which: &[StatsReport],
        options: &Options,
    ) -> anyhow::Result<()> {
        let (format, fit) = (self.format, self.fit());
        if let Some(path) = &self.output {
            let written = save_summaries(path, inputs, which, options, format, fit)
                .map_err(interrupted_reading)?;
            say_written(&written);
            return Ok(());
        }
        let mut spool =
            tempfile::tempfile().context("cannot create a temporary file (TMPDIR says where)")?;
        let mut writer = BufWriter::new(&spool);
        write_summaries(&mut writer, inputs, which, options, format, fit).map_err(|e| match e {
            nsys2perfetto::Error::Writer { cause } => anyhow::Error::new(cause)
                .context("cannot write a temporary file (TMPDIR says where)"),
            e => interrupted_reading(e),
        })?;
        writer
            .flush()
            .context("cannot write a temporary file (TMPDIR says where)")?;
        drop(writer);
        spool.rewind().context("cannot read a temporary file")?;
        let mut out = std::io::stdout().lock();
        std::io::copy(&mut spool, &mut out)
            .and_then(|_| out.flush())
            .context("cannot write standard output")
    }

    /// Whether the tables are aligned text, to be fitted to a terminal of
    /// this width (see [`TableOutput::fit`]).
    pub fn terminal_width(&self) -> Option<usize> {
        match (self.format, self.fit()) {
            (TableFormat::Table, Fit::Line(width)) => Some(width),
            _ => None,
        }
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

/// Says which files several tables went to, where they are not the one
/// named.
fn say_written(written: &[PathBuf]) {
    if written.len() > 1 {
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        crate::note(format!("a file per table: {}", names.join(", ")));
    }
}
