//! Convert NVIDIA Nsight Systems reports into compact Perfetto traces.
//!
//! The crate has three parts with one-way dependencies:
//! - [`nsys`] reads an Nsight Systems SQLite export: schema probing, names, and
//!   typed rows streamed in time order;
//! - [`perfetto`] writes Perfetto traces: sequences, interning, tracks, lanes,
//!   flows (it knows nothing about Nsight);
//! - [`convert`] maps the one onto the other.
//!
//! [`convert_file`] ties them together with the file handling a tool needs:
//! `.nsys-rep` export through the `nsys` CLI, gzip, and an atomic output.
//!
//! ```no_run
//! use std::path::Path;
//! use nsys2perfetto::{convert_file, Options};
//!
//! let summary = convert_file(Path::new("report.sqlite"), Path::new("report.perfetto-trace"), &Options::default(), &mut |_| {})?;
//! println!("{summary}");
//! # Ok::<(), nsys2perfetto::Error>(())
//! ```

pub mod convert;
mod error;
pub mod nsys;
mod output;
pub mod perfetto;
mod worker;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use convert::{Part, Parts, Progress, Summary};
pub use error::{Error, Result};

/// The default gzip level of traces. Measured on a 1.4 M-event trace (see
/// README.md): level 3 is within 10% of level 6's size at 40% of its cost;
/// level 1 is 29% bigger again.
pub const DEFAULT_GZIP_LEVEL: u32 = 3;

/// How to convert.
#[derive(Clone, Debug)]
pub struct Options {
    /// The gzip level of the trace, 1 (fastest) to 9 (smallest), or `None`
    /// for raw protobuf (Perfetto reads both).
    pub gzip: Option<u32>,
    /// The `nsys` CLI used to export `.nsys-rep`/`.qdrep` reports.
    pub nsys: PathBuf,
    /// What the trace carries (everything by default).
    pub parts: Parts,
    /// Set it (from a signal handler, another thread) to stop the conversion:
    /// it then fails with [`Error::Interrupted`] soon after, having stopped
    /// nsys and removed the temporary trace and export.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            gzip: Some(DEFAULT_GZIP_LEVEL),
            nsys: PathBuf::from("nsys"),
            parts: Parts::all(),
            cancel: None,
        }
    }
}

impl Options {
    fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }
}

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
        source.convert(out, options, progress, |e| Error::Output {
            path: output.to_owned(),
            source: e,
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
    let failed = |source| Error::Writer { source };
    let mut out = out;
    let converted = source
        .convert(&mut out, options, progress, failed)
        .map(|summary| (out, summary));
    match converted {
        Err(_) if options.cancelled() => Err(source.interrupted()),
        Err(e) => Err(e),
        Ok((mut out, summary)) => {
            out.flush().map_err(failed)?;
            Ok((out, summary))
        }
    }
}

/// Refuses an output that cannot be written before anything is read: the
/// input itself (by path or by link), a directory, or a path in a directory
/// that does not exist.
fn check_output(input: &Path, output: &Path) -> Result<()> {
    if same_file(input, output) {
        return Err(Error::OutputIsInput {
            output: output.to_owned(),
            input: input.to_owned(),
        });
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
struct Source<'a> {
    input: &'a Path,
    report: nsys::Report,
    _export_dir: Option<tempfile::TempDir>,
}

impl<'a> Source<'a> {
    fn open(input: &'a Path, options: &Options) -> Result<Self> {
        let interrupted = || Error::Interrupted {
            path: input.to_owned(),
        };
        let kind = nsys::sniff(input)?;
        let mut export_dir = None;
        let sqlite = match kind {
            nsys::FileKind::Sqlite => input.to_owned(),
            nsys::FileKind::NsysReport => {
                let dir = export_dir.insert(tempfile::tempdir().map_err(|e| Error::Output {
                    path: std::env::temp_dir(),
                    source: e,
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

    /// Converts into `out`, which fails as `write_failed` says.
    fn convert(
        &self,
        out: &mut (dyn Write + Send),
        options: &Options,
        progress: &mut dyn FnMut(Progress),
        write_failed: impl Fn(io::Error) -> Error,
    ) -> Result<Summary> {
        let out = Cancellable {
            out,
            cancel: options.cancel.as_deref(),
        };
        let (_, mut summary) =
            convert::convert(&self.report, out, &options.parts, options.gzip, progress).map_err(
                |f| match f {
                    convert::Failure::Read(e) => Error::Damaged {
                        path: self.input.to_owned(),
                        source: e,
                    },
                    convert::Failure::Write(e) => write_failed(e),
                },
            )?;
        let schema = self.report.schema();
        summary.no_event_tables = !schema
            .tables()
            .any(|t| schema.has_column(t, "start") || schema.has_column(t, "timestamp"));
        Ok(summary)
    }

    fn interrupted(&self) -> Error {
        Error::Interrupted {
            path: self.input.to_owned(),
        }
    }
}

/// An error about the temporary export of `input`, told about `input`.
fn rename(e: Error, input: &Path) -> Error {
    match e {
        Error::Damaged { source, .. } => Error::Damaged {
            path: input.to_owned(),
            source,
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

/// A writer that fails once `cancel` is set, so that a conversion stops at
/// its next write.
struct Cancellable<'c, W> {
    out: W,
    cancel: Option<&'c AtomicBool>,
}

impl<W: Write> Write for Cancellable<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            // Not ErrorKind::Interrupted: write_all would retry that.
            return Err(io::Error::other("interrupted"));
        }
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
