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

use std::path::{Path, PathBuf};

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
}

impl Default for Options {
    fn default() -> Self {
        Self {
            gzip: Some(DEFAULT_GZIP_LEVEL),
            nsys: PathBuf::from("nsys"),
            parts: Parts::all(),
        }
    }
}

/// Converts the report or export at `input` into a trace at `output`.
///
/// The trace is written to a temporary file beside `output` and renamed when
/// complete: a failure never leaves a partial trace. `progress` hears how far
/// the conversion is, now and then.
pub fn convert_file(
    input: &Path,
    output: &Path,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary> {
    let kind = nsys::sniff(input)?;
    let export_dir;
    let sqlite = match kind {
        nsys::FileKind::Sqlite => input.to_owned(),
        nsys::FileKind::NsysReport => {
            export_dir = tempfile::tempdir().map_err(|e| Error::Output {
                path: std::env::temp_dir(),
                source: e,
            })?;
            nsys::export_to_sqlite(input, &options.nsys, export_dir.path())?
        }
    };
    let report = nsys::Report::open(&sqlite)?;
    // Errors name the file the user gave, not the temporary export.
    let damaged = |source| Error::Damaged {
        path: input.to_owned(),
        source,
    };
    output::write_atomically(output, |out| {
        convert::convert(&report, out, &options.parts, options.gzip, progress)
            .map(|(_, summary)| summary)
            .map_err(|f| match f {
                convert::Failure::Read(e) => damaged(e),
                convert::Failure::Write(e) => Error::Output {
                    path: output.to_owned(),
                    source: e,
                },
            })
    })
}
