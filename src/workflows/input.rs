//! One way in: every command turns the path it was given into a report the
//! same way.
//!
//! The file is judged by its first bytes: an SQLite export is read as it
//! is; a report (`.nsys-rep`, `.qdrep`) is exported by nsys into a temporary
//! directory first, which goes when the [`Input`] goes. Errors name the
//! user's file, never the temporary export, and any error of a cancelled run
//! is [`Error::Interrupted`].

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::nsys::ReadOptions;
use crate::nsys::Report;
use crate::nsys_cli::{export_to_sqlite, REPORT_MAGIC};

/// What a file holds, judged by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    Sqlite,
    /// An Nsight Systems report (`.nsys-rep`, or the older `.qdrep`).
    NsysReport,
}

/// The first bytes of an SQLite database.
pub(crate) const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// What `path` holds, judged by its first bytes (not by its name).
pub(crate) fn sniff(path: &Path) -> Result<FileKind> {
    let unreadable = |cause| Error::Unreadable {
        path: path.to_owned(),
        cause,
    };
    // Judged before opening: opening a named pipe waits for a writer,
    // perhaps forever, and a device may never end.
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(unreadable(not_a_regular_file(&meta)));
    }
    let mut head = [0u8; 64];
    let mut file = File::open(path).map_err(unreadable)?;
    let n = read_up_to(&mut file, &mut head).map_err(unreadable)?;
    let head = &head[..n];
    if n == 0 {
        return Err(unreadable(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the file is empty",
        )));
    }
    if head.starts_with(SQLITE_MAGIC) {
        Ok(FileKind::Sqlite)
    } else if head.starts_with(REPORT_MAGIC) {
        Ok(FileKind::NsysReport)
    } else {
        Err(Error::not_a_report(path))
    }
}

/// Why a file that is not a regular file (`meta` says what it is) is not
/// read: a report is read more than once, and from places other than its
/// start, which a pipe or a device cannot give.
fn not_a_regular_file(meta: &std::fs::Metadata) -> std::io::Error {
    use std::io::{Error, ErrorKind};
    if meta.is_dir() {
        return Error::new(ErrorKind::IsADirectory, "is a directory");
    }
    let what = kind_of_special_file(meta);
    Error::new(
        ErrorKind::InvalidInput,
        format!("it is {what}, not a regular file: save the report or export to a file first"),
    )
}

fn kind_of_special_file(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = meta.file_type();
        if kind.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    let _ = meta;
    "a special file"
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Runs `work` on the report or export at `path`: the one way every command
/// reads an input. Errors name `path`; once `options.cancel` is set, any
/// error is [`Error::Interrupted`]. A temporary export is removed on return.
/// Then `options.on_unreadable` hears of each table the work could not read,
/// and `options.on_impossible_times` of the events it left out for their times.
pub(crate) fn with_report<T>(
    path: &Path,
    options: &ReadOptions,
    work: impl FnOnce(&Report) -> Result<T>,
) -> Result<T> {
    let input = Input::new(path, options)?;
    let report = input.open(options)?;
    let done = work(&report).map_err(|e| input.told(e, options))?;
    if let Some(hear) = &options.on_unreadable {
        for unreadable in report.unreadable() {
            (hear.0)(path, &unreadable);
        }
    }
    if let Some(hear) = &options.on_impossible_times {
        match report.impossible_times() {
            0 => {}
            events => (hear.0)(path, events),
        }
    }
    Ok(done)
}

/// An input made readable: its SQLite export, the file itself or one made by
/// nsys into a temporary directory that lives as long as this.
pub(crate) struct Input {
    /// The file the user gave.
    path: PathBuf,
    export: PathBuf,
    _export_dir: Option<tempfile::TempDir>,
}

impl Input {
    /// The input at `path`, a report exported first with `options.nsys`.
    /// Nothing is started once `options.cancel` is set.
    pub(crate) fn new(path: &Path, options: &ReadOptions) -> Result<Input> {
        let told = |e| Input::tell(path, e, options);
        options.stop_if_cancelled(path)?;
        let (export, export_dir) = match sniff(path).map_err(told)? {
            FileKind::Sqlite => (path.to_owned(), None),
            FileKind::NsysReport => {
                let dir = crate::temporaries::directory("export").map_err(told)?;
                let export =
                    export_to_sqlite(path, &options.nsys, dir.path(), options.cancel.as_deref())
                        .map_err(told)?;
                (export, Some(dir))
            }
        };
        Ok(Input {
            path: path.to_owned(),
            export,
            _export_dir: export_dir,
        })
    }

    /// The file the user gave.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the export; its queries stop once `options.cancel` is set. It
    /// may be opened again once the report is dropped.
    pub(crate) fn open(&self, options: &ReadOptions) -> Result<Report> {
        Report::open_cancellable(&self.export, options.cancel.clone())
            .map_err(|e| self.told(e, options))
    }

    /// An error met while working on this input, as its user should hear
    /// it.
    pub(crate) fn told(&self, e: Error, options: &ReadOptions) -> Error {
        Input::tell(&self.path, e, options)
    }

    fn tell(path: &Path, e: Error, options: &ReadOptions) -> Error {
        if options.cancelled() {
            return Error::Interrupted {
                path: path.to_owned(),
            };
        }
        // Errors about the temporary export are told about the input.
        match e {
            Error::Damaged { cause, .. } => Error::Damaged {
                path: path.to_owned(),
                cause,
            },
            Error::UnknownFormat { .. } => Error::UnknownFormat {
                path: path.to_owned(),
            },
            Error::NotAnExport { .. } => Error::NotAnExport {
                path: path.to_owned(),
            },
            e => e,
        }
    }
}
