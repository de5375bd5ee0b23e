//! Convert NVIDIA Nsight Systems reports into compact Perfetto traces.
//!
//! Inside, three parts with one-way dependencies: a reader of Nsight Systems
//! SQLite exports (schema probing, typed rows streamed in time order), a
//! writer of Perfetto traces ([`perfetto`]: sequences, interning, tracks,
//! flows, gzip; it knows nothing of Nsight), and the mapping between them.
//!
//! The crate root converts: [`convert()`] turns an open [`Report`] into a
//! trace written to any writer (Perfetto's protobuf, or Chrome's trace event
//! JSON: [`Format`]), as [`Options`] say; [`convert_file`] adds what a tool
//! needs around it: `.nsys-rep` reports exported through the `nsys` CLI, and
//! an output file that appears only when complete ([`convert_to_writer`]
//! writes to any writer instead). The other commands live in modules of
//! their own: [`directories`] (trees of reports, several at a time),
//! [`merge`] (several reports in one trace), [`stats`], [`compare`],
//! [`analyze`] and [`series`] (what `nsys stats` and `nsys analyze` compute,
//! two runs compared, event times across runs), [`report`] (where a run's GPU
//! time went, on one page), [`steps`] (steps across the ranks of a job),
//! [`profile`] (running `nsys profile`), [`serve`] (a trace handed to
//! ui.perfetto.dev), [`server`] (the HTTP servers of `serve` and `open`,
//! with the `serve` feature), [`hub`] (what the hub serves) and
//! [`perfetto`] (the trace writer). An export need not be a file: here one
//! is built in memory.
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

#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod analysis;
#[cfg(feature = "cli")]
mod cli_values;
mod convert;
mod error;
mod filter;
mod nsys;
mod nsys_cli;
mod pattern;
pub mod perfetto;
mod ranks;
mod render;
pub mod server;
pub mod temporaries;
mod worker;
mod workflows;

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

pub use convert::{Format, GpuModel, Options, Part, Parts, Progress, Summary, DEFAULT_GZIP_LEVEL};
pub use error::{DatabaseError, Error, Result};
pub use filter::{Filter, TimeWindow};
pub use nsys::{
    impossible_times_warning, table_role, HearImpossibleTimes, HearUnreadable, OnImpossibleTimes,
    OnUnreadable, ReadOptions, Report, TableRole, Unconverted, Unreadable, NOT_READ,
};
pub use nsys_cli::stop_children_now;
pub use render::format::human_bytes;
pub use workflows::file::{convert_file, convert_to_writer};
pub use workflows::new_directories::NewDirectories;
pub use workflows::output::{
    check_named_as, is_standard_output, output_format, NamedFormat, OutputFile, OutputSet,
    STANDARD_OUTPUT,
};
pub use workflows::serve;
pub use workflows::tested::untested_version;

pub mod hub {
    //! What the web page of `serve` needs that is no HTTP: the reports under
    //! its directories ([`scan`]), their headlines and traces computed once
    //! and cached ([`Cache`]), the pages ([`pages`]) and uploads ([`upload`]).
    //! The hub's server is [`crate::server`]'s.
    pub use crate::workflows::hub::*;
}

pub mod directories {
    //! Directories of reports: every export and report below them
    //! ([`files_below`]), each converted into a trace in a tree that mirrors
    //! theirs, several at a time ([`convert_files`]). One failure does not
    //! stop the others.
    pub use crate::workflows::directories::{
        check_outputs, convert_files, files_below, reports_in, TreeConversion, TreeFile,
    };
}

pub mod merge {
    //! Several reports in one trace ([`merge_files`]): the ranks of one job
    //! on one time line, or two runs side by side. Each report keeps its
    //! events' durations; its pids, tids and CPUs move to numbers no other
    //! report uses, and its processes are named after its label.
    pub use crate::ranks::{Labels, RankFrom, RankPattern};
    pub use crate::workflows::merge::{
        merge_files, AlignedOn, Alignment, MergeOptions, MergeProgress, MergedReport,
    };
}

pub mod stats {
    //! The summaries `nsys stats` prints ([`summarize`], [`summarize_file`]),
    //! with the same columns and numbers, as [`Table`]s written as aligned
    //! text, CSV or JSON ([`TableFormat`]; [`save_tables`]).
    //!
    //! Each summary reads the rows of its tables once, in table order; its
    //! exact medians wait in a temporary file where groups are large, so
    //! memory does not grow with the number of rows.
    //!
    //! ```no_run
    //! use std::path::Path;
    //! use nsys2perfetto::stats::{
    //!     save_tables, summarize_file, Fit, RangeNames, StatsReport, TableFormat,
    //! };
    //! use nsys2perfetto::ReadOptions;
    //!
    //! let input = Path::new("report.nsys-rep");
    //! let which = &StatsReport::DEFAULT;
    //! let tables = summarize_file(input, which, RangeNames::Recorded, &ReadOptions::default())?;
    //! let summaries = [(vec![input.display().to_string()], tables)];
    //! save_tables(Path::new("stats.csv"), &summaries, TableFormat::Csv, Fit::Whole)?;
    //! # Ok::<(), nsys2perfetto::Error>(())
    //! ```
    pub use crate::analysis::stats::{
        summarize, summarize_with, Cell, Fit, Stats, StatsReport, Table, TableFormat,
    };
    pub use crate::nsys::names::{group_name, RangeNames};
    pub use crate::workflows::analyses::summarize_file;
    pub use crate::workflows::output::{
        save_summaries, save_tables, table_paths, write_summaries, write_tables,
    };
}

pub mod query {
    //! Read-only SQL over a run ([`query_file`]): through trace_processor
    //! over its trace (converted once, cached), or over its SQLite export
    //! ([`Engine`]); a statement that writes is refused
    //! ([`Error::QueryRefused`](crate::Error::QueryRefused)).
    pub use crate::workflows::query::*;
}

pub mod compare {
    //! Two runs compared ([`compare_files`]): per kernel, whole CUDA graph,
    //! API function and NVTX range, the change in total time and count, kind
    //! by kind and largest first ([`top_by_kind`]), as a
    //! [`Table`](crate::stats::Table) ([`comparison_table`]).
    pub use crate::analysis::compare::incomplete_sides;
    pub use crate::analysis::rules::{
        busy_percent, check, needs_busy, verdict_table, Direction, Metric, Rule, RuleError,
        Verdict, RULE_SYNTAX,
    };
    pub use crate::analysis::stats::{
        compare, comparison_table, fit_to_width, run_summary, run_summary_with, top_by_kind,
        Difference, Kind, RunSummary, Side, NARROWING,
    };
    pub use crate::workflows::analyses::compare_files;
}

pub mod analyze {
    //! Findings: the six rules of `nsys analyze` ([`Rule`]), with NVIDIA's
    //! definitions and default thresholds ([`Thresholds`]), computed in
    //! streaming passes over an export ([`analyze`], [`analyze_file`]). The
    //! findings wait, sorted, in a temporary file ([`Findings`]) until
    //! written ([`write_findings`], [`save_findings`]) or put into a trace
    //! ([`Options::findings`](crate::Options::findings)).
    pub use crate::analysis::analyze::{
        analyze, write_findings, Finding, Findings, Place, Rule, Thresholds,
    };
    pub use crate::filter::parse_duration;
    pub use crate::workflows::analyses::analyze_file;
    pub use crate::workflows::output::save_findings;
}

pub mod report {
    //! Where the GPU time of a run went, on one page ([`report()`],
    //! [`report_file`]): per GPU, busy time and idle time split into
    //! host-bound and waiting, with the longest idle stretches and what the
    //! CPU threads did then; time by kind of work ([`KindPattern`]);
    //! communication overlapped by computation; launch delays; the top
    //! kernels and NVTX scopes; `analyze`'s findings. Written as HTML,
    //! Markdown or JSON ([`save_page`]); two runs' headline numbers side by
    //! side ([`summary_table`]). Several runs of one job make one [`Page`]
    //! ([`report_files`]), with the job's steps across its ranks where
    //! [`ReportOptions::steps`] names them (see [`crate::steps`]).
    pub use crate::analysis::gpu_time::{
        report, summary_table, write_page, GpuTimeline, GpuUse, IdleStretch, KindPattern, KindTime,
        LaunchDelays, NamedTime, NvtxScopes, Page, PageFormat, ReportOptions, RuleFindings,
        RunReport, ThreadActivity,
    };
    pub use crate::workflows::analyses::{report_file, report_files};
    pub use crate::workflows::saved::save_page;
}

pub mod series {
    //! How the time of chosen events ([`EventPattern`]) changes across runs
    //! that differ in one parameter ([`SeriesRun`]): per run and pattern, the
    //! count of matching events and their total, mean and median duration
    //! ([`measure_series`]), written as a CSV table or an SVG plot
    //! ([`Series`]).
    pub use crate::analysis::series::{
        check_series, measure_events, measure_events_with, EventKind, EventPattern, Series,
        SeriesCell, SeriesRun,
    };
    pub use crate::workflows::analyses::measure_series;
}

pub mod steps {
    //! Steps across the ranks of a job ([`measure_steps`]): per step (an
    //! NVTX range a [`StepPattern`] picks, as `ProfilerStep*`), each rank's
    //! duration and GPU busy time, the slowest rank and by how much, and the
    //! skew over the run ([`JobSteps`]), written as Markdown, JSON or an
    //! HTML fragment with an SVG chart.
    //!
    //! The per-report part, [`measure_report_steps`], returns data
    //! ([`ReportSteps`], JSON by serde) that [`combine_steps`] combines into
    //! the same job: reports measured apart, on other machines.
    pub use crate::analysis::steps::{
        combine_steps, GpuWork, JobSteps, NvtxRanges, ProcessSteps, RankSteps, ReportSteps,
        RunSkew, Slowest, Step, StepMatch, StepOptions, StepPattern, StepTime, MEASURED_KIND,
        MEASURED_VERSION,
    };
    pub use crate::workflows::analyses::{measure_report_steps, measure_steps};
    pub use crate::workflows::saved::save_report_steps;
}

pub mod profile {
    //! Profiling a command with `nsys profile` ([`NsysProfile`]), making sure
    //! a report comes out of it: where nsys could not import its raw capture
    //! itself, the `QdstrmImporter` of the same install does it.
    pub use crate::nsys_cli::{LongWait, NsysProfile, Profiled};
}

/// Converts `report` into a trace written to `out` (Perfetto's format, or
/// JSON: [`Options::format`]), as `options` say (`options.read.nsys` plays
/// no part: the report is open already). Returns `out` and what the trace holds; `progress` hears how far it is, now and
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
        cancel: options.read.cancel.as_deref(),
    };
    let converted = match options.format {
        Format::Perfetto => convert::convert(report, out, options, progress),
        Format::Json => convert::convert_json(report, out, options, progress),
    };
    let (out, mut summary) = converted.map_err(|f| match f {
        _ if options.cancelled() => Error::Interrupted {
            path: report.path().to_owned(),
        },
        error::Failure::Read(e) => Error::Damaged {
            path: report.path().to_owned(),
            cause: DatabaseError(e),
        },
        error::Failure::Write(cause) => Error::Writer { cause },
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
