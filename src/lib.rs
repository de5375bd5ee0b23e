//! Convert NVIDIA Nsight Systems reports into compact Perfetto traces.
//!
//! Inside, three parts with one-way dependencies: a reader of Nsight Systems
//! SQLite exports (schema probing, typed rows streamed in time order), a
//! writer of Perfetto traces ([`perfetto`]: sequences, interning, tracks,
//! flows, gzip; it knows nothing of Nsight), and the mapping between them.
//!
//! [`convert`] turns an open [`Report`] into a trace written to any writer
//! (Perfetto's protobuf, or Chrome's trace event JSON: [`Format`]);
//! [`convert_file`] adds what a tool needs around it: `.nsys-rep` reports
//! exported through the `nsys` CLI, and an output file that appears only when
//! complete. [`merge_files`] puts several reports into one trace (the ranks
//! of a job on one time line, or two runs side by side). An export need not
//! be a file: here one is built in memory.
//!
//! ```
//! use nsys2perfetto::{convert, Options, Report};
//!
//! // A tiny export: one CUDA API call. Named in-memory databases live as
//! // long as one connection to them is open.
//! let uri = "file:doc-example?mode=memory&cache=shared";
//! let db = rusqlite::Connection::open(uri).unwrap();
//! db.execute_batch(
//!     "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
//!      INSERT INTO StringIds VALUES (1, 'cudaMalloc_v3020');
//!      CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
//!          start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
//!      INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000, 5000, 281479271677952 + 42, 7, 1);",
//! )
//! .unwrap();
//!
//! let report = Report::open_uri(uri)?;
//! let mut options = Options::default();
//! options.gzip = None;
//! let (trace, summary) = convert(&report, Vec::new(), &options, &mut |_| {})?;
//! assert_eq!(summary.slices["cuda_api"], 1);
//! assert!(!trace.is_empty());
//! # Ok::<(), nsys2perfetto::Error>(())
//! ```

mod analysis;
mod convert;
mod error;
mod filter;
mod nsys;
mod nsys_cli;
pub mod perfetto;
mod worker;
mod workflows;

use analysis::series;
pub use analysis::{analyze, stats};

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use analyze::{analyze, Finding, Rule, Thresholds};
pub use convert::{Part, Parts, Progress, Summary};
pub use error::{DatabaseError, Error, Result};
pub use filter::{Filter, TimeWindow};
pub use nsys::{CudaContext, Metadata, Report, Unconverted, Unreadable};
pub use nsys_cli::{find_qdstrm_importer, unused_report_name, NsysProfile, Profiled};
pub use series::{
    measure_events, measure_series, EventKind, EventPattern, Series, SeriesCell, SeriesRun,
};
pub use workflows::directories::{convert_files, files_below, TreeConversion, TreeFile};
pub use workflows::file::{convert_file, convert_to_writer, own_output, same_file};
pub use workflows::merge::{
    merge_files, AlignedOn, Alignment, Labels, MergeOptions, MergeProgress, MergedReport, RankFrom,
    MAX_CPUS, MAX_REPORTS, PID_STRIDE,
};
pub use workflows::output::write_atomically;
pub use workflows::serve;

/// The default gzip level of traces. Measured on a 1.4 M-event trace (see
/// BENCHMARKS.md): level 3 is within 7% of level 6's size at half its cost;
/// level 1 saves a third of level 3's time for 6% more bytes.
pub const DEFAULT_GZIP_LEVEL: u32 = 3;

/// How to convert. Start from [`Options::default`] and set what differs.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// The gzip level of the trace, 1 (fastest) to 9 (smallest), or `None`
    /// for raw protobuf or plain JSON (Perfetto reads both).
    pub gzip: Option<u32>,
    /// The `nsys` CLI used to export `.nsys-rep`/`.qdrep` reports.
    pub nsys: PathBuf,
    /// What the trace carries (everything by default).
    pub parts: Parts,
    /// Which events of those parts it keeps (all by default).
    pub filter: Filter,
    /// Set it (from a signal handler, another thread) to stop the conversion:
    /// it then fails with [`Error::Interrupted`] soon after, having stopped
    /// nsys and removed the temporary trace and export.
    pub cancel: Option<Arc<AtomicBool>>,
    /// What the trace is written as.
    pub format: Format,
    /// With thresholds, the trace also holds what the rules of `nsys
    /// analyze` find (see [`analyze`]), in an "Analysis" track group.
    pub findings: Option<Thresholds>,
}

/// What a trace is written as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Perfetto's protobuf trace format.
    #[default]
    Perfetto,
    /// Chrome's trace event JSON (a `{"traceEvents": [...]}` object), for
    /// tools that read only JSON: the same slices, names, args, processes,
    /// threads, counters and flows. Chrome's format has no place for CPU
    /// samples, context switches or the call stacks of slices: those parts
    /// are left out.
    Json,
}

impl Format {
    /// The format a file name asks for: [`Format::named`], else Perfetto.
    pub fn of_name(path: &std::path::Path) -> Format {
        Format::named(path).unwrap_or(Format::Perfetto)
    }

    /// The format a file name names: JSON for names ending `.json` or
    /// `.json.gz`, Perfetto for `.perfetto-trace` and `.pftrace`; none for
    /// any other name.
    pub fn named(path: &std::path::Path) -> Option<Format> {
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        if name.ends_with(".json") || name.ends_with(".json.gz") {
            Some(Format::Json)
        } else if name.ends_with(".perfetto-trace") || name.ends_with(".pftrace") {
            Some(Format::Perfetto)
        } else {
            None
        }
    }

    /// The extension of a trace file of this format, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Perfetto => "perfetto-trace",
            Format::Json => "json",
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            gzip: Some(DEFAULT_GZIP_LEVEL),
            nsys: PathBuf::from("nsys"),
            parts: Parts::all(),
            filter: Filter::default(),
            cancel: None,
            format: Format::Perfetto,
            findings: None,
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

/// Converts `report` into a trace written to `out` (Perfetto's format, or
/// JSON: [`Options::format`]), as `options` say (`options.nsys` plays no
/// part: the report is open already). Returns `out` and what the trace holds; `progress` hears how far it is, now and
/// then. On failure `out` may hold part of a trace.
pub fn convert<W: Write + Send>(
    report: &Report,
    out: W,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<(W, Summary)> {
    if let Some(level) = options.gzip.filter(|l| !(1..=9).contains(l)) {
        return Err(Error::InvalidOption(format!(
            "gzip level {level} is not between 1 and 9"
        )));
    }
    let out = Cancellable {
        out,
        cancel: options.cancel.as_deref(),
    };
    let converted = match options.format {
        Format::Perfetto => convert::convert(report, out, options, progress),
        Format::Json => convert::convert_json(report, out, options, progress),
    };
    let (out, mut summary) = converted.map_err(|f| match f {
        _ if options.cancelled() => Error::Interrupted {
            path: report.path().to_owned(),
        },
        convert::ConvertError::Read(e) => Error::Damaged {
            path: report.path().to_owned(),
            cause: DatabaseError(e),
        },
        convert::ConvertError::Write(cause) => Error::Writer { cause },
    })?;
    summary.no_event_tables = !report.has_event_tables();
    Ok((out.out, summary))
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
