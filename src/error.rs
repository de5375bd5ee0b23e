//! The errors a user can meet, each worded to fit on one line, lower case,
//! with what to do where there is something to do.

use std::fmt;
use std::path::PathBuf;

/// Why a conversion failed. Each message is one line that already says why
/// (the underlying error is part of it, not a separate `source`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input could not be read.
    #[error("cannot read {}: {}", path.display(), plain(cause))]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        cause: std::io::Error,
    },

    /// An input is neither a report nor an export.
    #[error("{} is neither an Nsight Systems report (.nsys-rep, .qdrep) nor an SQLite export", path.display())]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },

    /// nsys's raw capture, which only its `QdstrmImporter` turns into a
    /// report (`profile` does so where nsys did not).
    #[error(
        "{} is nsys's raw capture, not a report: import it with `QdstrmImporter -i {}` from the \
         host-linux-x64 folder of an Nsight Systems install, then convert the .nsys-rep it makes",
        path.display(),
        path.display()
    )]
    RawCapture {
        /// The file.
        path: PathBuf,
    },

    /// A trace given where a report is read: its content is no report's, its
    /// name a trace's.
    #[error("{} is already a trace, not a report: open it with `nsys2perfetto open {}`", path.display(), path.display())]
    AlreadyTrace {
        /// The file.
        path: PathBuf,
    },

    /// An input is an SQLite database but not an export.
    #[error("{} is an SQLite database but not an Nsight Systems export (it has no StringIds table)", path.display())]
    NotAnExport {
        /// The file.
        path: PathBuf,
    },

    /// An export lacks a column without which none of it can be read.
    #[error("{} cannot be read: its {table} table has no {column} column, which every nsys export has", path.display())]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The table.
        table: &'static str,
        /// The column it lacks.
        column: &'static str,
    },

    /// An export is damaged or truncated.
    #[error("{} is damaged or truncated: {cause}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        cause: DatabaseError,
    },

    /// A file of measured steps (`report --step --measure-only`) that
    /// cannot be combined.
    #[error("{}: {reason}", path.display())]
    StepsFile {
        /// The file.
        path: PathBuf,
        /// Why not.
        reason: String,
    },

    /// A report needs exporting, and nsys could not be run.
    #[error(
        "cannot convert {} without nsys: {reason}; install Nsight Systems, pass --nsys PATH, \
         or export it yourself with `nsys export --type sqlite`",
        path.display()
    )]
    NsysMissing {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },

    /// nsys could not export a report. `nsys` names the CLI: `nsys
    /// 2022.4.2.1`, or its path when it did not
    /// say its version.
    #[error(
        "{nsys} could not export {} ({}): {message}; {advice}",
        path.display(),
        captured(capture_version)
    )]
    NsysRefused {
        /// The file.
        path: PathBuf,
        /// The nsys CLI.
        nsys: String,
        /// The version of the nsys that captured the report, where known.
        capture_version: Option<String>,
        /// What nsys said.
        message: String,
        /// What to do.
        advice: String,
    },

    /// An output could not be written (`-`: standard output).
    #[error("cannot write {}: {}", shown(path), plain(cause))]
    Output {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        cause: std::io::Error,
    },

    /// The temporary directory (`TMPDIR`), where reports are exported and
    /// large intermediate results wait, cannot take a file: it is missing,
    /// full, or not writable.
    #[error("{}", in_temporary_directory(dir, cause))]
    TemporaryDirectory {
        /// The directory.
        dir: PathBuf,
        /// What went wrong.
        cause: std::io::Error,
    },

    /// An output's directory does not exist.
    #[error("cannot write {}: directory {} does not exist", path.display(), dir.display())]
    NoOutputDirectory {
        /// The file.
        path: PathBuf,
        /// The directory missing.
        dir: PathBuf,
    },

    /// Files were to be named after an output that is standard output, a
    /// device or a pipe (`/dev/full_<table>.csv`): they would be new files
    /// beside a device, not the user's.
    #[error(
        "cannot write files named after {}: it is {}, not a file; write them to a file's name",
        shown(path),
        match crate::workflows::output::is_standard_output(path) {
            true => "standard output",
            false => "a device or a pipe",
        }
    )]
    NamedAfterDevice {
        /// The output named.
        path: PathBuf,
    },

    /// An output is a directory.
    #[error("cannot write {}: it is a directory", path.display())]
    OutputIsDirectory {
        /// The file.
        path: PathBuf,
    },

    /// The output is the input, or another name of the same file.
    #[error("cannot write {}: it is the input {}", output.display(), input.display())]
    OutputIsInput {
        /// The output.
        output: PathBuf,
        /// The input it names.
        input: PathBuf,
    },

    /// The output is an Nsight Systems report or an SQLite file (an export,
    /// say), judged by its content, and replacing it was not asked for.
    #[error("cannot write {}: it is {what}; --force replaces it", path.display())]
    OutputIsReport {
        /// The output.
        path: PathBuf,
        /// What it is.
        what: &'static str,
    },

    /// Writing into a caller's writer failed ([`crate::convert_to_writer`]).
    #[error("cannot write the trace: {}", plain(cause))]
    Writer {
        /// What went wrong.
        cause: std::io::Error,
    },

    /// An option out of its range, such as a gzip level of 0.
    #[error("{0}")]
    InvalidOption(String),

    /// `nsys profile` made no report.
    #[error("cannot profile: {reason}")]
    ProfileFailed {
        /// Why.
        reason: String,
    },

    /// A report of the name asked for exists already.
    #[error("{} exists: choose another name, or overwrite it", path.display())]
    ReportExists {
        /// The file.
        path: PathBuf,
    },

    /// nsys left its raw capture, which it could not import, and no
    /// `QdstrmImporter` was found for it.
    #[error(
        "nsys left only {} (it could not import it, and no QdstrmImporter was found near {} or on PATH): \
         import it with `QdstrmImporter -i {}` from the host-linux-x64 folder of an Nsight Systems install, \
         then convert the .nsys-rep it makes",
        qdstrm.display(),
        nsys.display(),
        qdstrm.display()
    )]
    QdstrmOnly {
        /// The raw capture.
        qdstrm: PathBuf,
        /// The nsys CLI.
        nsys: PathBuf,
    },

    /// `QdstrmImporter` failed on nsys's raw capture.
    #[error("{} could not import {}: {reason}", importer.display(), qdstrm.display())]
    ImportFailed {
        /// The raw capture.
        qdstrm: PathBuf,
        /// The importer.
        importer: PathBuf,
        /// Why.
        reason: String,
    },

    /// The cancellation flag was set while profiling: nsys was stopped and
    /// what it had written removed.
    #[error("interrupted while profiling {command}; nsys was stopped and no report kept")]
    ProfilingInterrupted {
        /// The command profiled.
        command: String,
    },

    /// A trace could not be served to the UI.
    #[error("{reason}")]
    Serve {
        /// Why.
        reason: String,
    },

    /// Directories to convert hold no export or report.
    #[error("no .sqlite, .nsys-rep or .qdrep file below {}", list(below))]
    NothingToConvert {
        /// The directories.
        below: Vec<PathBuf>,
    },

    /// A query that is no read (`query`): nothing was run.
    #[error("query refused: {reason}")]
    QueryRefused {
        /// Why.
        reason: String,
    },

    /// A query its engine could not run (`query`): the engine's words.
    #[error("query failed: {reason}")]
    QueryFailed {
        /// Why.
        reason: String,
    },

    /// The cancellation flag was set: nothing was left behind.
    #[error("interrupted while converting {}; no trace written", path.display())]
    Interrupted {
        /// The file.
        path: PathBuf,
    },
}

/// An output's path as its user reads it: `-` is standard output.
fn shown(path: &std::path::Path) -> String {
    match crate::workflows::output::is_standard_output(path) {
        true => "standard output".to_owned(),
        false => path.display().to_string(),
    }
}

/// Paths, as a list: `a, b`.
fn list(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    names.join(", ")
}

/// The result of a call of this library: its value, or an [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Why `path`, neither a report nor an export by its content, cannot be
    /// read, told by what its name says it is: nsys's raw capture, a trace,
    /// or something else.
    pub(crate) fn not_a_report(path: &std::path::Path) -> Error {
        let path = path.to_owned();
        let raw_capture = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("qdstrm"));
        if raw_capture {
            Error::RawCapture { path }
        } else if crate::Format::named(&path).is_some() {
            Error::AlreadyTrace { path }
        } else {
            Error::UnknownFormat { path }
        }
    }
}

/// What SQLite said about an export it could not read.
#[derive(Debug)]
pub struct DatabaseError(pub(crate) rusqlite::Error);

impl fmt::Display for DatabaseError {
    /// On one line: SQLite quotes a damaged schema's SQL, newlines and all.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.to_string();
        f.write_str(&text.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

impl std::error::Error for DatabaseError {}

fn captured(version: &Option<String>) -> String {
    match version {
        Some(version) => format!("captured with nsys {version}"),
        None => "captured by an nsys of unknown version".to_owned(),
    }
}

/// Why a file could not be made or written in the temporary directory
/// `dir`, and what to do: choose another with `TMPDIR`.
fn in_temporary_directory(dir: &std::path::Path, cause: &std::io::Error) -> String {
    use std::io::ErrorKind;
    // Said once: a cause that says already which temporary file it was.
    if let Some(worded) = cause.get_ref().and_then(|e| e.downcast_ref::<Worded>()) {
        return worded.0.clone();
    }
    let dir = dir.display();
    match cause.kind() {
        ErrorKind::NotFound => format!(
            "the temporary directory {dir} does not exist: create it, or set TMPDIR to a \
             directory that exists"
        ),
        ErrorKind::NotADirectory => {
            format!("the temporary directory {dir} is not a directory: set TMPDIR to a directory")
        }
        ErrorKind::FileTooLarge => format!("a temporary file in {dir}: {}", plain(cause)),
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => format!(
            "the temporary directory {dir} is full ({}): free space there, or set TMPDIR to a \
             directory with more room",
            plain(cause)
        ),
        _ => format!(
            "cannot write in the temporary directory {dir}: {}; set TMPDIR to another directory",
            plain(cause)
        ),
    }
}

/// `cause`, an error of a temporary file in the temporary directory, worded
/// as [`Error::TemporaryDirectory`] is (for the writers that report io
/// errors): its kind is kept.
pub(crate) fn in_temp_dir(cause: std::io::Error) -> std::io::Error {
    let message = in_temporary_directory(&std::env::temp_dir(), &cause);
    std::io::Error::new(cause.kind(), Worded(message))
}

/// The message of an io error about a temporary file that says already
/// which file it was and where: worded again by nobody.
#[derive(Debug)]
pub(crate) struct Worded(pub(crate) String);

impl fmt::Display for Worded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Worded {}

impl Error {
    /// A temporary file or directory could not be made or written in the
    /// temporary directory (`TMPDIR`).
    pub fn temporary(cause: std::io::Error) -> Error {
        Error::TemporaryDirectory {
            dir: std::env::temp_dir(),
            cause,
        }
    }
}

/// An io error in plain words: the system's description without its
/// "(os error N)", starting lower case like every message here.
pub(crate) fn plain(e: &std::io::Error) -> String {
    if e.raw_os_error().is_some() && e.kind() == std::io::ErrorKind::FileTooLarge {
        return file_too_large();
    }
    let text = e.to_string();
    let text = match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => &text[..at],
        _ => &text,
    };
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        // "Permission denied", but not "IO error" or "ENOSPC".
        (Some(first), second)
            if first.is_uppercase() && !second.is_some_and(char::is_uppercase) =>
        {
            first
                .to_lowercase()
                .chain(text[first.len_utf8()..].chars())
                .collect()
        }
        _ => text.to_owned(),
    }
}

/// EFBIG in words: a write went past the process's file size limit
/// (`ulimit -f`, SIGXFSZ being ignored), or past the largest file its file
/// system holds.
fn file_too_large() -> String {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit(2) writes the struct it is given, nothing else.
        let got = unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) } == 0;
        if got && limit.rlim_cur != libc::RLIM_INFINITY {
            return format!(
                "file size limit exceeded (ulimit -f: {} bytes)",
                limit.rlim_cur
            );
        }
    }
    "file too large for its file system".to_owned()
}

/// Why reading a report into something failed, for a conversion and an
/// analysis alike: the report could not be read, or a file being written
/// could not be (the trace of a conversion; for an analysis, a temporary file
/// of values set aside for medians or findings set aside for sorting). Each
/// caller says what the file was; [`Failure::of`] says it for an analysis,
/// where a failed temporary file is no damage to the report.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The report's database could not be read.
    Read(rusqlite::Error),
    /// A file being written failed: the trace, or a temporary file.
    Write(std::io::Error),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Read(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Write(e)
    }
}

impl Failure {
    /// The error of analysing the report at `report`, whose only written
    /// files are temporary.
    pub(crate) fn of(self, report: &std::path::Path) -> Error {
        match self {
            Failure::Read(cause) => Error::Damaged {
                path: report.to_owned(),
                cause: DatabaseError(cause),
            },
            Failure::Write(cause) => Error::temporary(cause),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[cfg(unix)]
    #[test]
    fn io_errors_read_plainly() {
        assert_eq!(
            plain(&io::Error::from_raw_os_error(2)),
            "no such file or directory"
        );
        assert_eq!(
            plain(&io::Error::from_raw_os_error(13)),
            "permission denied"
        );
        assert_eq!(plain(&io::Error::other("IO failure")), "IO failure");
        assert_eq!(
            plain(&io::Error::new(io::ErrorKind::NotFound, "already plain")),
            "already plain"
        );
    }

    /// A temporary file's error that names its file already is not named
    /// again: "a temporary file in /tmp: a temporary file in /tmp: ...".
    #[cfg(unix)]
    #[test]
    fn a_temporary_file_is_named_once() {
        let too_large = io::Error::from_raw_os_error(libc::EFBIG);
        let e = Error::temporary(in_temp_dir(too_large));
        assert_eq!(e.to_string().matches("temporary").count(), 1, "{e}");
    }

    #[test]
    fn a_failed_spill_is_no_damage_to_the_report() {
        use std::path::Path;
        let cause = io::Error::new(io::ErrorKind::StorageFull, "no space left on device");
        let e = Failure::from(cause).of(Path::new("r.sqlite"));
        assert!(matches!(e, Error::TemporaryDirectory { .. }), "{e}");
        let e = Failure::from(rusqlite::Error::InvalidQuery).of(Path::new("r.sqlite"));
        assert!(matches!(e, Error::Damaged { .. }));
    }
}
