//! Writing output files atomically: a temporary file, renamed when complete.
//! Traces, and the text answers of `stats`, `compare` and `analyze`.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::analysis::analyze::{write_findings, Findings};
use crate::analysis::stats::{Fit, RowSource, StatsReport, Table, TableFormat};
use crate::error::{Error, Result};
use crate::Options;

/// Writes the tables of each report (its path, or two compared, and its
/// tables) one after the other: in CSV, each after a line that says which
/// table of which report it is and a blank line before all but the first;
/// in JSON, an object per table on a line of its own (see
/// [`Table::write`]). `fit` says how long the names of aligned tables may
/// be.
pub fn write_tables(
    out: &mut dyn Write,
    summaries: &[(Vec<String>, Vec<Table>)],
    format: TableFormat,
    fit: Fit,
) -> io::Result<()> {
    let mut tables = Tables::new(format, fit);
    for (files, list) in summaries {
        for table in list {
            tables.write(out, files, table, &table.rows)?;
        }
    }
    Ok(())
}

/// Computes `which` summaries of each report or export in `inputs` and
/// writes each as soon as it is computed, as [`write_tables`] writes them,
/// named by the input's path. Unlike [`summarize_file`](crate::stats::summarize_file)
/// and [`write_tables`], memory does not grow with the number of rows nor
/// of names: a summary of many names is written as it is read back from a
/// temporary file. A failure to write `out` is [`Error::Writer`]; on
/// failure `out` may have received part of the summaries.
pub fn write_summaries(
    out: &mut dyn Write,
    inputs: &[std::path::PathBuf],
    which: &[StatsReport],
    options: &Options,
    format: TableFormat,
    fit: Fit,
) -> Result<()> {
    let failed = |cause| Error::Writer { cause };
    summaries_into(out, inputs, which, options, format, fit, &failed)
}

/// [`write_summaries`] into the file at `path`, which appears only when
/// complete.
pub fn save_summaries(
    path: &Path,
    inputs: &[std::path::PathBuf],
    which: &[StatsReport],
    options: &Options,
    format: TableFormat,
    fit: Fit,
) -> Result<()> {
    write_atomically(path, |out| {
        let failed = |cause| Error::Output {
            path: path.to_owned(),
            cause,
        };
        summaries_into(out, inputs, which, options, format, fit, &failed)?;
        out.flush().map_err(failed)
    })
}

fn summaries_into(
    out: &mut dyn Write,
    inputs: &[std::path::PathBuf],
    which: &[StatsReport],
    options: &Options,
    format: TableFormat,
    fit: Fit,
    failed: &dyn Fn(io::Error) -> Error,
) -> Result<()> {
    let mut tables = Tables::new(format, fit);
    for input in inputs {
        let files = [input.display().to_string()];
        crate::workflows::with_report(input, options, |report| {
            for summary in which {
                let (table, rows) = summary.computed(report, options.range_names)?;
                // A failed read of a temporary file says so in its cause.
                tables.write(out, &files, &table, &*rows).map_err(failed)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Summaries written one after the other in one format.
struct Tables {
    format: TableFormat,
    fit: Fit,
    first: bool,
}

impl Tables {
    fn new(format: TableFormat, fit: Fit) -> Tables {
        Tables {
            format,
            fit,
            first: true,
        }
    }

    fn write(
        &mut self,
        out: &mut dyn Write,
        files: &[String],
        table: &Table,
        rows: &dyn RowSource,
    ) -> io::Result<()> {
        if self.format == TableFormat::Csv && !self.first {
            out.write_all(b"\n")?;
        }
        self.first = false;
        table.write_rows(out, self.format, files, self.fit, rows)
    }
}

/// [`write_tables`] into the file at `path`, which appears only when
/// complete.
pub fn save_tables(
    path: &Path,
    summaries: &[(Vec<String>, Vec<Table>)],
    format: TableFormat,
    fit: Fit,
) -> Result<()> {
    save(path, |out| write_tables(out, summaries, format, fit))
}

/// [`write_findings`] into the file at `path`, which appears only when
/// complete.
pub fn save_findings(
    path: &Path,
    findings: &Findings,
    file: &str,
    format: TableFormat,
    rows: Option<usize>,
) -> Result<()> {
    save(path, |out| {
        write_findings(out, findings, file, format, rows)
    })
}

/// Runs `write` into the file at `path`, which appears only when complete.
fn save(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    write_atomically(path, |out| {
        write(out).map_err(|cause| Error::Output {
            path: path.to_owned(),
            cause,
        })
    })
}

/// Runs `write` on a writer into a temporary file beside `path`, and moves the
/// file into place only if it succeeds.
///
/// A `path` that is a device or a pipe (`/dev/null`, `/dev/stdout`, a FIFO)
/// is written in place instead: renaming a file over it would replace the
/// device, for every program on the machine.
pub(crate) fn write_atomically<T>(
    path: &Path,
    write: impl FnOnce(&mut (dyn Write + Send)) -> Result<T>,
) -> Result<T> {
    let failed = |cause| Error::Output {
        path: path.to_owned(),
        cause,
    };
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(failed)?;
        let mut out = BufWriter::with_capacity(BUFFER, file);
        let value = write(&mut out)?;
        out.flush().map_err(failed)?;
        return Ok(value);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".nsys2perfetto-").suffix(".tmp");
    // A trace is a file to share: the permissions any new file gets (0666
    // less the umask), not the temporary file's private 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let tmp = builder.tempfile_in(dir).map_err(|e| failed(os_error(e)))?;
    let file = tmp.as_file().try_clone().map_err(failed)?;
    let mut out = BufWriter::with_capacity(BUFFER, file);
    let value = write(&mut out)?;
    out.into_inner()
        .map_err(|e| failed(e.into_error()))?
        .sync_all()
        .map_err(failed)?;
    tmp.persist(path).map_err(|e| failed(e.error))?;
    Ok(value)
}

/// The error of creating the temporary file, without its made-up name (the
/// user's message names the output): its kind says what went wrong.
fn os_error(e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::NotFound => io::Error::new(
            io::ErrorKind::NotFound,
            "no file can be created in its directory",
        ),
        kind => io::Error::new(kind, kind.to_string()),
    }
}

/// Bytes written to the file at a time.
const BUFFER: usize = 1 << 20;
