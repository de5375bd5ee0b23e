//! Files: a report or export at a path, converted into a trace file that
//! appears only when complete, or into any writer.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::nsys;
use crate::{convert, output, Options, Progress, Summary};

/// Converts the report or export at `input` into a trace at `output`.
///
/// The trace is written to a temporary file beside `output` and renamed when
/// complete: a failure never leaves a partial trace. An `output` that is the
/// input (or a link to it) is refused before anything is read. `progress`
/// hears how far the conversion is, now and then.
pub fn convert_file(
    input: &Path,
    output: &Path,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary> {
    check_output(input, output)?;
    let source = Source::open(input, options)?;
    let summary = output::write_atomically(output, |out| {
        source.convert(out, options, progress).map_err(|e| match e {
            Error::Writer { cause } => Error::Output {
                path: output.to_owned(),
                cause,
            },
            e => e,
        })
    });
    match summary {
        Err(_) if options.cancelled() => Err(source.interrupted()),
        summary => summary,
    }
}

/// Converts the report or export at `input` into a trace written to `out`
/// (standard output, say), gzipped as `options` says. Returns `out`, flushed.
/// On failure `out` may have received part of a trace.
pub fn convert_to_writer<W: Write + Send>(
    input: &Path,
    out: W,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<(W, Summary)> {
    let source = Source::open(input, options)?;
    let mut out = out;
    let converted = source.convert(&mut out, options, progress);
    match converted {
        Err(_) if options.cancelled() => Err(source.interrupted()),
        Err(e) => Err(e),
        Ok(summary) => {
            out.flush().map_err(|cause| Error::Writer { cause })?;
            Ok((out, summary))
        }
    }
}

/// Refuses an output that cannot be written before anything is read: the
/// input itself (by path or by link), a directory, or a path in a directory
/// that does not exist.
pub(crate) fn check_output(input: &Path, output: &Path) -> Result<()> {
    if same_file(input, output) {
        return Err(own_output(input, output));
    }
    if output.is_dir() {
        return Err(Error::OutputIsDirectory {
            path: output.to_owned(),
        });
    }
    let dir = match output.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Error::NoOutputDirectory {
            path: output.to_owned(),
            dir: dir.to_owned(),
        });
    }
    Ok(())
}

/// Why `input` cannot be converted into `output`, the same file: it is a
/// trace already (a file named like a trace that is no report), or it would
/// be overwritten.
pub fn own_output(input: &Path, output: &Path) -> Error {
    match nsys::sniff(input) {
        Err(e @ Error::AlreadyTrace { .. }) => e,
        _ => Error::OutputIsInput {
            output: output.to_owned(),
            input: input.to_owned(),
        },
    }
}

/// Whether `a` and `b` name one existing file (not a directory): the same
/// path, or links to one file (hard or symbolic).
pub fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(meta_a), Ok(meta_b)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if meta_a.is_dir() || meta_b.is_dir() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if (meta_a.dev(), meta_a.ino()) == (meta_b.dev(), meta_b.ino()) {
            return true;
        }
    }
    let _ = (meta_a, meta_b);
    matches!(
        (std::fs::canonicalize(a), std::fs::canonicalize(b)),
        (Ok(a), Ok(b)) if a == b
    )
}

/// An input, open: its export (made by nsys into a temporary directory that
/// lives as long as this, for a report) and the report read from it.
pub(crate) struct Source<'a> {
    input: &'a Path,
    report: nsys::Report,
    _export_dir: Option<tempfile::TempDir>,
}

impl<'a> Source<'a> {
    pub(crate) fn open(input: &'a Path, options: &Options) -> Result<Self> {
        let interrupted = || Error::Interrupted {
            path: input.to_owned(),
        };
        let kind = nsys::sniff(input)?;
        let mut export_dir = None;
        let sqlite = match kind {
            nsys::FileKind::Sqlite => input.to_owned(),
            nsys::FileKind::NsysReport => {
                let dir =
                    export_dir.insert(tempfile::tempdir().map_err(|cause| Error::Output {
                        path: std::env::temp_dir(),
                        cause,
                    })?);
                nsys::export_to_sqlite(input, &options.nsys, dir.path(), options.cancel.as_deref())?
            }
        };
        let report = nsys::Report::open_cancellable(&sqlite, options.cancel.clone());
        let report = match report {
            Err(_) if options.cancelled() => return Err(interrupted()),
            // Errors name the file the user gave, not the temporary export.
            Err(e) if export_dir.is_some() => return Err(rename(e, input)),
            report => report?,
        };
        Ok(Source {
            input,
            report,
            _export_dir: export_dir,
        })
    }

    pub(crate) fn report(&self) -> &nsys::Report {
        &self.report
    }

    /// An error about the export, told about the input.
    pub(crate) fn rename(&self, e: Error) -> Error {
        rename(e, self.input)
    }

    /// Converts into `out`.
    fn convert(
        &self,
        out: &mut (dyn Write + Send),
        options: &Options,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Summary> {
        convert(&self.report, out, options, progress)
            .map(|(_, summary)| summary)
            .map_err(|e| rename(e, self.input))
    }

    pub(crate) fn interrupted(&self) -> Error {
        Error::Interrupted {
            path: self.input.to_owned(),
        }
    }
}

/// An error about the temporary export of `input`, told about `input`.
pub(crate) fn rename(e: Error, input: &Path) -> Error {
    match e {
        Error::Damaged { cause, .. } => Error::Damaged {
            path: input.to_owned(),
            cause,
        },
        Error::UnknownFormat { .. } => Error::UnknownFormat {
            path: input.to_owned(),
        },
        Error::NotAnExport { .. } => Error::NotAnExport {
            path: input.to_owned(),
        },
        e => e,
    }
}
