//! The one way out: every file any command writes goes through
//! [`OutputFile::write`], which refuses an output that is one of the
//! command's inputs or an Nsight Systems report or export it was not told to
//! replace, and writes atomically (a temporary file, renamed when complete).
//! Also here: the text answers of `stats`, `compare` and `analyze` written to
//! such a file, and the rule that picks an output's format from its name.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::analysis::analyze::{write_findings, Findings};
use crate::analysis::stats::{Fit, RowSource, StatsReport, Table, TableFormat};
use crate::error::{Error, Result};
use crate::nsys::names::RangeNames;
use crate::nsys::ReadOptions;
use crate::nsys_cli::REPORT_MAGIC;
use crate::render::table::{Layout, Sharing};

use super::input::SQLITE_MAGIC;

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
/// named by the input's path, NVTX ranges named as `range_names` says. Unlike [`summarize_file`](crate::stats::summarize_file)
/// and [`write_tables`], memory does not grow with the number of rows nor
/// of names: a summary of many names is written as it is read back from a
/// temporary file. A failure to write `out` is [`Error::Writer`]; on
/// failure `out` may have received part of the summaries.
pub fn write_summaries(
    out: &mut dyn Write,
    inputs: &[std::path::PathBuf],
    which: &[StatsReport],
    range_names: RangeNames,
    options: &ReadOptions,
    format: TableFormat,
    fit: Fit,
) -> Result<()> {
    let failed = |cause| Error::Writer { cause };
    let mut tables = Tables::new(format, fit, inputs.len() * which.len());
    for input in inputs {
        let files = [input.display().to_string()];
        crate::workflows::with_report(input, options, |report| {
            for summary in which {
                let (table, rows) = summary.computed(report, range_names)?;
                // A failed read of a temporary file says so in its cause.
                tables.write(out, &files, &table, &*rows).map_err(failed)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// [`write_summaries`] into the file `output`, which appears only when
/// complete; `inputs` are among the files it must not be. In CSV, several
/// summaries go to a file each, named as [`table_paths`] says, each checked
/// before any report is read. Returns the files written, in order.
pub fn save_summaries(
    output: impl Into<OutputFile>,
    inputs: &[PathBuf],
    which: &[StatsReport],
    range_names: RangeNames,
    options: &ReadOptions,
    format: TableFormat,
    fit: Fit,
) -> Result<Vec<PathBuf>> {
    let output = output.into().inputs(inputs);
    let count = inputs.len() * which.len();
    if format != TableFormat::Csv || count < 2 || output.is_standard_output() {
        output.write(|out| {
            write_summaries(out, inputs, which, range_names, options, format, fit).map_err(
                |e| match e {
                    Error::Writer { cause } => output.failed(cause),
                    e => e,
                },
            )?;
            out.flush().map_err(|cause| output.failed(cause))
        })?;
        return Ok(vec![output.path().to_owned()]);
    }
    let names: Vec<(String, &str)> = inputs
        .iter()
        .flat_map(|input| {
            which
                .iter()
                .map(move |s| (input.display().to_string(), s.name()))
        })
        .collect();
    let files = table_files(&output, &names)?;
    let mut each = files.iter();
    // All or none: a failure or an interruption at the third table leaves
    // neither of the first two.
    let mut set = OutputSet::new();
    for input in inputs {
        let names = [input.display().to_string()];
        crate::workflows::with_report(input, options, |report| {
            for summary in which {
                let (table, rows) = summary.computed(report, range_names)?;
                let file = each.next().expect("a file per table");
                set.write_with(file, |out| write_alone(out, &table, &*rows, &names, fit))?;
            }
            Ok(())
        })?;
    }
    set.publish()
}

/// The files of [`table_paths`], written as `output` is, each checked before
/// anything is written. Names made from a device's (`/dev/full_<table>.csv`)
/// are refused: they would be new files beside the device.
fn table_files(output: &OutputFile, tables: &[(String, &str)]) -> Result<Vec<OutputFile>> {
    output.check_derivable()?;
    let files: Vec<OutputFile> = table_paths(output.path(), tables)?
        .into_iter()
        .map(|path| output.sibling(path))
        .collect();
    for file in &files {
        file.check()?;
    }
    Ok(files)
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

/// One table, alone in its file, with the rows of `rows`: as nsys 2025.3
/// writes the files of `nsys stats -o`, a table without rows is an empty
/// file (no header).
fn write_alone(
    out: &mut dyn Write,
    table: &Table,
    rows: &dyn RowSource,
    files: &[String],
    fit: Fit,
) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
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

/// [`write_tables`] into the file `output`, which appears only when
/// complete; in CSV, several tables go to a file each, named as
/// [`table_paths`] says. Returns the files written, in order.
pub fn save_tables(
    output: impl Into<OutputFile>,
    summaries: &[(Vec<String>, Vec<Table>)],
    format: TableFormat,
    fit: Fit,
) -> Result<Vec<PathBuf>> {
    let output = output.into();
    let count: usize = summaries.iter().map(|(_, list)| list.len()).sum();
    if format != TableFormat::Csv || count < 2 || output.is_standard_output() {
        output.write_with(|out| write_tables(out, summaries, format, fit))?;
        return Ok(vec![output.path().to_owned()]);
    }
    let names: Vec<(String, &str)> = summaries
        .iter()
        .flat_map(|(files, list)| list.iter().map(|t| (files.join(", "), t.name.as_str())))
        .collect();
    let files = table_files(&output, &names)?;
    let tables = summaries
        .iter()
        .flat_map(|(files, list)| list.iter().map(move |t| (files, t)));
    let mut set = OutputSet::new();
    for ((names, table), file) in tables.zip(&files) {
        set.write_with(file, |out| write_alone(out, table, &table.rows, names, fit))?;
    }
    set.publish()
}

/// [`write_findings`] into the file `output`, which appears only when
/// complete.
pub fn save_findings(
    output: impl Into<OutputFile>,
    findings: &Findings,
    file: &str,
    format: TableFormat,
    rows: Option<usize>,
) -> Result<()> {
    output
        .into()
        .write_with(|out| write_findings(out, findings, file, format, rows))
}

/// A file a command writes: its path, the inputs of the command that it
/// must not be, and whether it may replace a report or export that is none
/// of them (`--force`).
///
/// Made from a path (`OutputFile::from(path)`), it protects the inputs that
/// the function writing it reads itself, and every report by its content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputFile {
    path: PathBuf,
    inputs: Vec<PathBuf>,
    force: bool,
}

impl OutputFile {
    /// The file at `path`, protecting no input yet, replacing no report.
    pub fn new(path: impl Into<PathBuf>) -> OutputFile {
        OutputFile {
            path: path.into(),
            inputs: Vec::new(),
            force: false,
        }
    }

    /// This output, which must also be none of `inputs` (by any name: the
    /// same path, a hard link, a symbolic link), `--force` or not.
    pub fn inputs<P: AsRef<Path>>(mut self, inputs: &[P]) -> OutputFile {
        self.inputs
            .extend(inputs.iter().map(|p| p.as_ref().to_owned()));
        self
    }

    /// This output, which with `force` may replace an Nsight Systems report
    /// (`.nsys-rep`, `.qdrep`) or an SQLite file that is no input; without,
    /// such a file is refused, whatever its name.
    pub fn force(mut self, force: bool) -> OutputFile {
        self.force = force;
        self
    }

    /// Another file written by the same command (one table of several, say),
    /// with the same inputs and `--force`.
    pub fn sibling(&self, path: impl Into<PathBuf>) -> OutputFile {
        OutputFile {
            path: path.into(),
            ..self.clone()
        }
    }

    /// Where the file goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this output is standard output (named `-`, as in `-o -`).
    pub fn is_standard_output(&self) -> bool {
        is_standard_output(&self.path)
    }

    /// Whether `other` names this file, existing or not: a link to it, or
    /// the same name in the same directory however written (`x`, `./x`).
    /// Standard output is only itself.
    pub fn is_same_file(&self, other: &Path) -> bool {
        if self.is_standard_output() || is_standard_output(other) {
            return self.is_standard_output() && is_standard_output(other);
        }
        match std::fs::metadata(&self.path) {
            Ok(meta) if same_file(other, &self.path, &meta) => true,
            _ => identity(&self.path) == identity(other),
        }
    }

    /// Refuses, before any work, an output that cannot or must not be
    /// written: one of the inputs ([`Error::OutputIsInput`], or
    /// [`Error::AlreadyTrace`] where that input is a trace rather than a
    /// report); a directory; a file in a directory that does not exist; a
    /// report or SQLite file, judged by its first bytes, unless `force`
    /// ([`Error::OutputIsReport`]).
    pub fn check(&self) -> Result<()> {
        if self.is_standard_output() {
            return Ok(());
        }
        self.check_replacing()?;
        let dir = directory_of(&self.path);
        if !dir.is_dir() {
            return Err(Error::NoOutputDirectory {
                path: self.path.clone(),
                dir: dir.to_owned(),
            });
        }
        Ok(())
    }

    /// [`OutputFile::check`] but for its directory, which may be made
    /// later (as `convert -o DIR/` makes it once every output is checked):
    /// refuses what this output must not replace.
    pub fn check_replacing(&self) -> Result<()> {
        if self.is_standard_output() {
            return Ok(());
        }
        let path = &self.path;
        let meta = std::fs::metadata(path);
        // An output not there yet is no input: nothing to compare.
        if let Ok(output) = &meta {
            if let Some(input) = self.inputs.iter().find(|i| same_file(i, path, output)) {
                return Err(own_output(input, path));
            }
        }
        if meta.as_ref().is_ok_and(|m| m.is_dir()) {
            return Err(Error::OutputIsDirectory {
                path: path.to_owned(),
            });
        }
        // Only a regular file is looked into: opening a FIFO would wait for
        // a writer.
        if !self.force && meta.is_ok_and(|m| m.is_file()) {
            if let Some(what) = report_kind(path) {
                return Err(Error::OutputIsReport {
                    path: path.to_owned(),
                    what,
                });
            }
        }
        Ok(())
    }

    /// Refuses names made from this one (`<name>_<table>.csv`, say) where it
    /// is standard output, a device or a pipe: such names would be new files
    /// beside a device (`/dev/full_x.csv`), no file of the user's.
    pub fn check_derivable(&self) -> Result<()> {
        let device = std::fs::metadata(&self.path).is_ok_and(|m| !m.is_file() && !m.is_dir());
        match device || self.is_standard_output() {
            true => Err(Error::NamedAfterDevice {
                path: self.path.clone(),
            }),
            false => Ok(()),
        }
    }

    /// Checks this output ([`OutputFile::check`]), then runs `write` on a
    /// writer into a temporary file beside it, moved into place only if
    /// `write` succeeds: a failure (an error, a full disk, the file size
    /// limit, an interruption) leaves no partial output and no temporary
    /// file.
    ///
    /// A path that is a device or a pipe (`/dev/null`, `/dev/stdout`, a
    /// FIFO) is written in place instead: renaming a file over it would
    /// replace the device, for every program on the machine. So is standard
    /// output (`-`).
    pub fn write<T>(&self, write: impl FnOnce(&mut (dyn Write + Send)) -> Result<T>) -> Result<T> {
        self.check()?;
        write_atomically(&self.path, write)
    }

    /// [`OutputFile::write`] for a writer that fails with io errors: they
    /// become [`Error::Output`], naming this file.
    pub fn write_with(
        &self,
        write: impl FnOnce(&mut (dyn Write + Send)) -> io::Result<()>,
    ) -> Result<()> {
        self.write(|out| {
            write(out)
                .and_then(|()| out.flush())
                .map_err(|cause| self.failed(cause))
        })
    }

    /// `cause`, an error of writing this file, as its user hears it.
    pub fn failed(&self, cause: io::Error) -> Error {
        Error::Output {
            path: self.path.clone(),
            cause,
        }
    }
}

impl From<&Path> for OutputFile {
    fn from(path: &Path) -> OutputFile {
        OutputFile::new(path)
    }
}

impl From<&PathBuf> for OutputFile {
    fn from(path: &PathBuf) -> OutputFile {
        OutputFile::new(path)
    }
}

impl From<PathBuf> for OutputFile {
    fn from(path: PathBuf) -> OutputFile {
        OutputFile::new(path)
    }
}

impl From<&OutputFile> for OutputFile {
    fn from(output: &OutputFile) -> OutputFile {
        output.clone()
    }
}

/// The name that stands for standard output wherever a command names an
/// output (`-o -`).
pub const STANDARD_OUTPUT: &str = "-";

/// Whether `path` is [`STANDARD_OUTPUT`].
pub fn is_standard_output(path: &Path) -> bool {
    path.as_os_str() == STANDARD_OUTPUT
}

/// The directory a file at `path` goes into.
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A path that names the same file however `path` was written: its
/// directory resolved (links, `..`), then its name.
fn identity(path: &Path) -> PathBuf {
    match (std::fs::canonicalize(directory_of(path)), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path.to_owned(),
    }
}

/// What the regular file at `path` holds, where it is something no output
/// replaces unasked: an Nsight Systems report or an SQLite database (an
/// export), judged by its first bytes whatever its name. A file that cannot
/// be read is not judged.
fn report_kind(path: &Path) -> Option<&'static str> {
    use std::io::Read;
    let mut head = [0u8; 32];
    let mut file = std::fs::File::open(path).ok()?;
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    let head = &head[..n];
    if head.starts_with(REPORT_MAGIC) {
        Some("an Nsight Systems report")
    } else if head.starts_with(SQLITE_MAGIC) {
        Some("an SQLite database (an Nsight Systems export?)")
    } else {
        None
    }
}

/// Why `input` cannot be written as `output`, the same file: it is a
/// trace already (a file named like a trace that is no report), or it would
/// be overwritten.
fn own_output(input: &Path, output: &Path) -> Error {
    match super::input::sniff(input) {
        Err(e @ Error::AlreadyTrace { .. }) => e,
        _ => Error::OutputIsInput {
            output: output.to_owned(),
            input: input.to_owned(),
        },
    }
}

/// Whether `input` and `output` (whose metadata is `output_meta`) name one
/// existing file (not a directory): the same path, or links to one file
/// (hard or symbolic).
fn same_file(input: &Path, output: &Path, output_meta: &std::fs::Metadata) -> bool {
    let Ok(input_meta) = std::fs::metadata(input) else {
        return false;
    };
    if input_meta.is_dir() || output_meta.is_dir() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = output;
        (input_meta.dev(), input_meta.ino()) == (output_meta.dev(), output_meta.ino())
    }
    #[cfg(not(unix))]
    matches!(
        (std::fs::canonicalize(input), std::fs::canonicalize(output)),
        (Ok(a), Ok(b)) if a == b
    )
}

/// A format of output files that their names can ask for.
pub trait NamedFormat: Copy + PartialEq {
    /// The format a file's name asks for, if it asks for one.
    fn named(path: &Path) -> Option<Self>;
    /// The format's name, as `--format` takes it.
    fn flag(self) -> &'static str;
    /// The extension of a file of this format, without the dot.
    fn extension(self) -> &'static str;
}

/// The format to write `output` in: `asked` (by `--format`), else the one
/// the output's name asks for, else `default`. An `asked` format that the
/// name contradicts (`--format md` for `page.html`) is refused
/// ([`Error::InvalidOption`]): nothing is written under a name that says
/// something else. No `output` (standard output) takes `asked`.
pub fn output_format<F: NamedFormat>(
    asked: Option<F>,
    output: Option<&Path>,
    default: F,
) -> Result<F> {
    let named = output.and_then(F::named);
    match (asked, named, output) {
        (Some(asked), Some(named), Some(output)) if asked != named => {
            Err(Error::InvalidOption(format!(
                "--format {} and the output {} disagree: drop --format, or name the output .{}",
                asked.flag(),
                output.display(),
                asked.extension()
            )))
        }
        (Some(format), ..) | (None, Some(format), _) => Ok(format),
        (None, None, _) => Ok(default),
    }
}

/// Refuses an output of a format that its name says is another (`x.json`
/// for a CSV table, `x.png` for an SVG plot), where the format cannot
/// follow the name: `what` is the format written, `extensions` the names
/// that fit it (the first the one to give). A name of no known format
/// (`table.txt`, `/dev/stdout`) is taken as it is.
pub fn check_named_as(output: &Path, what: &str, extensions: &[&str]) -> Result<()> {
    /// The extensions that say a file's format.
    /// (A report's or an export's, `.nsys-rep`, `.sqlite`, are not among
    /// them: `--force` decides whether such a file is replaced.)
    const KNOWN: &[&str] = &[
        "csv",
        "tsv",
        "json",
        "jsonl",
        "ndjson",
        "gz",
        "html",
        "htm",
        "md",
        "svg",
        "png",
        "jpg",
        "jpeg",
        "gif",
        "pdf",
        "perfetto-trace",
        "pftrace",
        "pb",
        "xml",
        "xlsx",
    ];
    let Some(extension) = output.extension() else {
        return Ok(());
    };
    let extension = extension.to_string_lossy().to_lowercase();
    if extensions.contains(&extension.as_str()) || !KNOWN.contains(&extension.as_str()) {
        return Ok(());
    }
    Err(Error::InvalidOption(format!(
        "{} names a .{extension} file, but what goes there is {what}: name it .{}",
        output.display(),
        extensions[0]
    )))
}

impl NamedFormat for crate::Format {
    fn named(path: &Path) -> Option<Self> {
        crate::Format::named(path)
    }
    fn flag(self) -> &'static str {
        match self {
            crate::Format::Perfetto => "perfetto",
            crate::Format::Json => "json",
        }
    }
    fn extension(self) -> &'static str {
        crate::Format::extension(self)
    }
}

impl NamedFormat for TableFormat {
    /// `.csv` for CSV, `.json`, `.jsonl` or `.ndjson` for JSON Lines; an
    /// aligned table has no name of its own.
    fn named(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_string_lossy().to_lowercase();
        match ext.as_str() {
            "csv" => Some(TableFormat::Csv),
            "json" | "jsonl" | "ndjson" => Some(TableFormat::Json),
            "md" | "markdown" => Some(TableFormat::Markdown),
            _ => None,
        }
    }
    fn flag(self) -> &'static str {
        match self {
            TableFormat::Table => "table",
            TableFormat::Csv => "csv",
            TableFormat::Json => "json",
            TableFormat::Markdown => "md",
        }
    }
    fn extension(self) -> &'static str {
        match self {
            TableFormat::Table => "txt",
            TableFormat::Csv => "csv",
            TableFormat::Json => "json",
            TableFormat::Markdown => "md",
        }
    }
}

impl NamedFormat for crate::report::PageFormat {
    fn named(path: &Path) -> Option<Self> {
        crate::report::PageFormat::of_name(path)
    }
    fn flag(self) -> &'static str {
        match self {
            crate::report::PageFormat::Html => "html",
            crate::report::PageFormat::Markdown => "md",
            crate::report::PageFormat::Json => "json",
        }
    }
    fn extension(self) -> &'static str {
        self.flag()
    }
}

/// Runs `write` on a writer into a temporary file beside `path`, and moves the
/// file into place only if it succeeds (a device, a pipe or standard output
/// is written in place). Only [`OutputFile::write`] calls it, after its
/// checks.
fn write_atomically<T>(
    path: &Path,
    write: impl FnOnce(&mut (dyn Write + Send)) -> Result<T>,
) -> Result<T> {
    let (value, staged) = write_staged(path, write)?;
    staged.publish()?;
    Ok(value)
}

/// A file written whole, not yet in place: [`Staged::publish`] renames it
/// there; dropped, it is removed.
struct Staged {
    path: PathBuf,
    /// `None` where the file was written in place (a device, standard
    /// output).
    temporary: Option<tempfile::NamedTempFile>,
}

impl Staged {
    /// Moves the file into place; returns where it went.
    fn publish(self) -> Result<PathBuf> {
        if let Some(temporary) = self.temporary {
            temporary.persist(&self.path).map_err(|e| Error::Output {
                path: self.path.clone(),
                cause: e.error,
            })?;
        }
        Ok(self.path)
    }
}

/// Runs `write` on a writer into a temporary file beside `path`, complete
/// and synced when it returns, or, for a device, a pipe or standard output,
/// into `path` itself.
fn write_staged<T>(
    path: &Path,
    write: impl FnOnce(&mut (dyn Write + Send)) -> Result<T>,
) -> Result<(T, Staged)> {
    let failed = |cause| Error::Output {
        path: path.to_owned(),
        cause,
    };
    let in_place = |value| {
        let staged = Staged {
            path: path.to_owned(),
            temporary: None,
        };
        Ok((value, staged))
    };
    if is_standard_output(path) {
        let mut out = BufWriter::with_capacity(BUFFER, io::stdout());
        let value = write(&mut out)?;
        out.flush().map_err(failed)?;
        return in_place(value);
    }
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(failed)?;
        let mut out = BufWriter::with_capacity(BUFFER, file);
        let value = write(&mut out)?;
        out.flush().map_err(failed)?;
        return in_place(value);
    }
    let tmp = temporary_beside(path)?;
    let file = tmp.as_file().try_clone().map_err(failed)?;
    let mut out = BufWriter::with_capacity(BUFFER, file);
    let value = write(&mut out)?;
    out.into_inner()
        .map_err(|e| failed(e.into_error()))?
        .sync_all()
        .map_err(failed)?;
    let staged = Staged {
        path: path.to_owned(),
        temporary: Some(tmp),
    };
    Ok((value, staged))
}

/// A new temporary file beside `path` (in its directory, so that it is
/// renamed into place without a copy), removed when dropped; an error names
/// `path`, not the temporary file.
pub(crate) fn temporary_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".nsys2perfetto-").suffix(".tmp");
    // A trace is a file to share: the permissions any new file gets (0666
    // less the umask), not the temporary file's private 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder
        .tempfile_in(directory_of(path))
        .map_err(|e| Error::Output {
            path: path.to_owned(),
            cause: os_error(e),
        })
}

/// Several files of one command, all or none: each is written whole into
/// a temporary file beside it, and all are moved into place by
/// [`OutputSet::publish`] once every one is. Dropped before (an error, an
/// interruption, the file size limit), the set leaves none of them.
#[derive(Default)]
pub struct OutputSet {
    staged: Vec<Staged>,
}

impl OutputSet {
    /// An empty set.
    pub fn new() -> OutputSet {
        OutputSet::default()
    }

    /// Checks `file` ([`OutputFile::check`]) and writes it with `write`,
    /// as [`OutputFile::write_with`] does, but leaves it out of place until
    /// [`OutputSet::publish`].
    pub fn write_with(
        &mut self,
        file: &OutputFile,
        write: impl FnOnce(&mut (dyn Write + Send)) -> io::Result<()>,
    ) -> Result<()> {
        file.check()?;
        let ((), staged) = write_staged(file.path(), |out| {
            write(out)
                .and_then(|()| out.flush())
                .map_err(|cause| file.failed(cause))
        })?;
        self.staged.push(staged);
        Ok(())
    }

    /// Moves every file written into place, in the order written; returns
    /// their paths. Where one cannot be moved, those moved before it are
    /// removed, and the rest with the set.
    pub fn publish(self) -> Result<Vec<PathBuf>> {
        let mut published: Vec<PathBuf> = Vec::with_capacity(self.staged.len());
        let mut renamed: Vec<PathBuf> = Vec::new();
        for staged in self.staged {
            let moved = staged.temporary.is_some();
            match staged.publish() {
                Ok(path) => {
                    if moved {
                        renamed.push(path.clone());
                    }
                    published.push(path);
                }
                Err(e) => {
                    for path in &renamed {
                        let _ = std::fs::remove_file(path);
                    }
                    return Err(e);
                }
            }
        }
        Ok(published)
    }
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
