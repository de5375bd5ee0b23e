//! Writing output files atomically: a temporary file, renamed when complete.
//! Traces, and the text answers of `stats`, `compare` and `analyze`.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::analysis::analyze::{write_findings, Findings};
use crate::analysis::stats::{Fit, RowSource, StatsReport, Table, TableFormat};
use crate::error::{Error, Result};
use crate::render::table::{Layout, Sharing};
use crate::Options;

/// Writes the tables of each report (its path, or two compared, and its
/// tables) one after the other: in CSV, a table alone is its header and
/// rows; several each follow a line that says which table of which report
/// it is, with a blank line before all but the first; in JSON, an object
/// per table on a line of its own (see [`Table::write`]). `fit` says how
/// long the names of aligned tables may be.
pub fn write_tables(
    out: &mut dyn Write,
    summaries: &[(Vec<String>, Vec<Table>)],
    format: TableFormat,
    fit: Fit,
) -> io::Result<()> {
    let count = summaries.iter().map(|(_, list)| list.len()).sum();
    let mut tables = Tables::new(format, fit, count);
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
    let mut tables = Tables::new(format, fit, inputs.len() * which.len());
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

/// [`write_summaries`] into the file at `path`, which appears only when
/// complete; in CSV, several summaries go to a file each, named as
/// [`table_paths`] says. Returns the files written, in order.
pub fn save_summaries(
    path: &Path,
    inputs: &[std::path::PathBuf],
    which: &[StatsReport],
    options: &Options,
    format: TableFormat,
    fit: Fit,
) -> Result<Vec<PathBuf>> {
    let count = inputs.len() * which.len();
    if format != TableFormat::Csv || count < 2 {
        write_atomically(path, |out| {
            let failed = |cause| Error::Output {
                path: path.to_owned(),
                cause,
            };
            write_summaries(out, inputs, which, options, format, fit).map_err(|e| match e {
                Error::Writer { cause } => failed(cause),
                e => e,
            })?;
            out.flush().map_err(failed)
        })?;
        return Ok(vec![path.to_owned()]);
    }
    let names: Vec<(String, &str)> = inputs
        .iter()
        .flat_map(|input| {
            which
                .iter()
                .map(move |s| (input.display().to_string(), s.name()))
        })
        .collect();
    let paths = table_paths(path, &names)?;
    let mut each = paths.iter();
    for input in inputs {
        let files = [input.display().to_string()];
        crate::workflows::with_report(input, options, |report| {
            for summary in which {
                let (table, rows) = summary.computed(report, options.range_names)?;
                let file = each.next().expect("a path per table");
                save(file, |out| write_alone(out, &table, &*rows, &files, fit))?;
            }
            Ok(())
        })?;
    }
    Ok(paths)
}

/// The files several CSV tables written to `path` go to, one each, as
/// `nsys stats -o PREFIX` names them: `PREFIX_<table>.csv`, where PREFIX is
/// `path` without its `.csv`; with tables of several reports,
/// `PREFIX_<report>_<table>.csv` (the report's file name without its
/// extension). `tables` are the report and the name of each table. Two
/// reports of one file name are refused: their files would collide.
pub fn table_paths(path: &Path, tables: &[(String, &str)]) -> Result<Vec<PathBuf>> {
    let text = path.as_os_str().to_string_lossy();
    let prefix = match text.len().checked_sub(4) {
        Some(at) if text.is_char_boundary(at) && text[at..].eq_ignore_ascii_case(".csv") => {
            &text[..at]
        }
        _ => &text[..],
    };
    let mut reports: Vec<&str> = tables.iter().map(|(r, _)| r.as_str()).collect();
    reports.dedup();
    let several = reports.len() > 1;
    let stem = |report: &str| {
        let name = Path::new(report)
            .file_name()
            .map_or_else(|| report.to_owned(), |n| n.to_string_lossy().into_owned());
        match name.rsplit_once('.') {
            Some((stem, _)) if !stem.is_empty() => stem.to_owned(),
            _ => name,
        }
    };
    let mut stems: Vec<(String, &str)> = Vec::new();
    for report in &reports {
        let s = stem(report);
        if let Some((_, other)) = stems.iter().find(|(t, _)| *t == s) {
            return Err(Error::InvalidOption(format!(
                "{other} and {report} would both write {prefix}_{s}_<table>.csv: \
                 summarize them one at a time, or write --format json"
            )));
        }
        stems.push((s, report));
    }
    Ok(tables
        .iter()
        .map(|(report, table)| match several {
            true => PathBuf::from(format!("{prefix}_{}_{table}.csv", stem(report))),
            false => PathBuf::from(format!("{prefix}_{table}.csv")),
        })
        .collect())
}

/// One table, alone in its output, with the rows of `rows`.
fn write_alone(
    out: &mut dyn Write,
    table: &Table,
    rows: &dyn RowSource,
    files: &[String],
    fit: Fit,
) -> io::Result<()> {
    let layout = Layout {
        format: TableFormat::Csv,
        files,
        fit,
        sharing: Sharing::Alone,
    };
    table.write_rows(out, &layout, rows)
}

/// Tables written one after the other in one format.
struct Tables {
    format: TableFormat,
    fit: Fit,
    sharing: Sharing,
    first: bool,
}

impl Tables {
    /// For `count` tables in all.
    fn new(format: TableFormat, fit: Fit, count: usize) -> Tables {
        Tables {
            format,
            fit,
            sharing: match count {
                0 | 1 => Sharing::Alone,
                _ => Sharing::Shared,
            },
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
        let layout = Layout {
            format: self.format,
            files,
            fit: self.fit,
            sharing: self.sharing,
        };
        table.write_rows(out, &layout, rows)
    }
}

/// [`write_tables`] into the file at `path`, which appears only when
/// complete; in CSV, several tables go to a file each, named as
/// [`table_paths`] says. Returns the files written, in order.
pub fn save_tables(
    path: &Path,
    summaries: &[(Vec<String>, Vec<Table>)],
    format: TableFormat,
    fit: Fit,
) -> Result<Vec<PathBuf>> {
    let count: usize = summaries.iter().map(|(_, list)| list.len()).sum();
    if format != TableFormat::Csv || count < 2 {
        save(path, |out| write_tables(out, summaries, format, fit))?;
        return Ok(vec![path.to_owned()]);
    }
    let names: Vec<(String, &str)> = summaries
        .iter()
        .flat_map(|(files, list)| list.iter().map(|t| (files.join(", "), t.name.as_str())))
        .collect();
    let paths = table_paths(path, &names)?;
    let tables = summaries
        .iter()
        .flat_map(|(files, list)| list.iter().map(move |t| (files, t)));
    for ((files, table), file) in tables.zip(&paths) {
        save(file, |out| write_alone(out, table, &table.rows, files, fit))?;
    }
    Ok(paths)
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
