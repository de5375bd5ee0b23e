//! The flags of the commands that print tables (`stats`, `compare`), and how
//! those tables are written.

use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use nsys2perfetto::stats::{
    save_summaries, save_tables, write_summaries, write_tables, Fit, RangeNames, StatsReport,
    Table, TableFormat,
};
use nsys2perfetto::{output_format, OutputFile, ReadOptions};

use crate::interrupted_reading;
use crate::paths::Writing;
use crate::Usage;

/// Where tables go and how they look.
#[derive(clap::Args)]
pub struct TableOutput {
    /// table (aligned columns), csv (as `nsys stats --format csv`: a table
    /// alone starts with its header; several on standard output each follow
    /// a `# title (name) of report` line) or json (JSON Lines: one object
    /// per table and report). Default: as the output's name
    /// says (.csv, .json), else table; a format the name contradicts is
    /// refused.
    #[arg(long, value_name = "FORMAT")]
    format: Option<TableFormat>,

    /// Write to this file instead of standard output (- is standard
    /// output); several tables in CSV go to a file each, FILE_<table>.csv
    /// (FILE without its .csv), as `nsys stats -o` names them.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Names whole in the table format (cut otherwise to the terminal's
    /// width, or to 100 characters as nsys cuts them, ending in "…").
    #[arg(long)]
    wide: bool,
}

impl TableOutput {
    /// Where the tables go and in which format, refused before any report
    /// is read where the output cannot be written (one of `inputs`, a report
    /// without `--force`, a missing directory) or its name contradicts
    /// `--format`. `quiet`: errors only.
    pub fn checked(
        &self,
        inputs: &[&PathBuf],
        writing: Writing,
        quiet: bool,
    ) -> Result<Tables, Usage> {
        let file = match self.file_name() {
            Some(path) => Some(writing.output(path, inputs)?),
            None => None,
        };
        let format = output_format(self.format, self.file_name(), TableFormat::Table)
            .map_err(|e| Usage(e.to_string()))?;
        Ok(Tables {
            file,
            format,
            fit: self.fit(),
            quiet,
        })
    }

    /// The file `-o` names: none for standard output (no `-o`, or `-o -`).
    fn file_name(&self) -> Option<&Path> {
        let named = self.output.as_deref();
        named.filter(|path| !nsys2perfetto::is_standard_output(path))
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
        match (self.file_name(), stdout.is_terminal()) {
            (None, true) => match terminal_size::terminal_size_of(&stdout) {
                Some((terminal_size::Width(columns), _)) => Fit::Line(usize::from(columns)),
                None => Fit::NSYS,
            },
            _ => Fit::NSYS,
        }
    }
}

/// Where tables go, checked, and how they look.
pub struct Tables {
    file: Option<OutputFile>,
    format: TableFormat,
    fit: Fit,
    /// Errors only: not the note that names the files of several tables.
    quiet: bool,
}

impl Tables {
    /// Their format.
    pub fn format(&self) -> TableFormat {
        self.format
    }

    /// Whether the tables are aligned text, to be fitted to a terminal of
    /// this width (see [`TableOutput::fit`]).
    pub fn terminal_width(&self) -> Option<usize> {
        match (self.format, self.fit) {
            (TableFormat::Table, Fit::Line(width)) => Some(width),
            _ => None,
        }
    }

    /// The file they go to, if not standard output.
    pub fn file(&self) -> Option<&OutputFile> {
        self.file.as_ref()
    }

    /// Writes the tables of each report, named by its source, to the file
    /// or to standard output.
    pub fn write(&self, summaries: &[(Vec<String>, Vec<Table>)]) -> anyhow::Result<()> {
        let (format, fit) = (self.format, self.fit);
        match &self.file {
            Some(file) => {
                let written = save_tables(file, summaries, format, fit)?;
                self.say_written(&written);
            }
            None => {
                let mut text = Vec::new();
                write_tables(&mut text, summaries, format, fit).expect("writing to memory");
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
        names: RangeNames,
        options: &ReadOptions,
    ) -> anyhow::Result<()> {
        let (format, fit) = (self.format, self.fit);
        if let Some(file) = &self.file {
            let written = save_summaries(file, inputs, which, names, options, format, fit)
                .map_err(interrupted_reading)?;
            self.say_written(&written);
            return Ok(());
        }
        // The spool's errors name the temporary directory, once.
        let spool_failed = |cause: std::io::Error| match cause.raw_os_error() {
            Some(_) => nsys2perfetto::Error::temporary(cause).into(),
            // Worded by the library already (a temporary file of its own).
            None => anyhow::Error::new(cause),
        };
        let mut spooled = tempfile::tempfile().map_err(spool_failed)?;
        let mut writer = BufWriter::new(&spooled);
        write_summaries(&mut writer, inputs, which, names, options, format, fit).map_err(|e| {
            match e {
                nsys2perfetto::Error::Writer { cause } => spool_failed(cause),
                e => interrupted_reading(e),
            }
        })?;
        writer.flush().map_err(spool_failed)?;
        drop(writer);
        spooled.rewind().context("cannot read a temporary file")?;
        let mut out = std::io::stdout().lock();
        std::io::copy(&mut spooled, &mut out)
            .and_then(|_| out.flush())
            .context("cannot write standard output")
    }
}

impl Tables {
    /// Says which files several tables went to, where they are not the one
    /// named (unless quiet).
    fn say_written(&self, written: &[PathBuf]) {
        if written.len() > 1 && !self.quiet {
            let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
            crate::note(format!("a file per table: {}", names.join(", ")));
        }
    }
}
