//! `query`: read-only SQL over a run, by the library's query workflow.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use nsys2perfetto::hub::Cache;
use nsys2perfetto::query::{
    default_cache_dir, find_trace_processor, query_file, Engine, TRACE_PROCESSOR_VARIABLE,
};
use nsys2perfetto::stats::{Fit, TableFormat};
use nsys2perfetto::Options;

use crate::reading::{quiet_help, Reading};
use crate::signals::Signals;
use crate::Usage;

/// Run read-only SQL over a run: through trace_processor over its Perfetto
/// trace (converted once, then kept in a cache), or over its SQLite export
/// where no trace_processor is at hand. Only reads run (SELECT, WITH,
/// VALUES, INCLUDE PERFETTO MODULE); a statement that writes is refused.
/// Where the SQL holds several statements, the last one's rows are printed.
#[derive(clap::Args)]
#[command(mut_args(quiet_help(
    "Errors only: not the note saying the export is queried for want of trace_processor"
)))]
pub struct Args {
    /// An Nsight Systems SQLite export, or a report (.nsys-rep, .qdrep),
    /// exported first with the nsys CLI.
    #[arg(value_name = "RUN")]
    run: PathBuf,

    /// The SQL: trace_processor's tables (slice, thread, gpu, ...) over the
    /// trace; the export's own (CUPTI_ACTIVITY_KIND_KERNEL, ...) over an
    /// export.
    #[arg(value_name = "SQL")]
    sql: String,

    /// How the rows are printed.
    #[arg(long, value_enum, default_value_t = QueryFormat::Text)]
    format: QueryFormat,

    /// trace_processor_shell (default: $NSYS2PERFETTO_TRACE_PROCESSOR, else
    /// trace_processor_shell or trace_processor on PATH, else the SQLite
    /// export is queried).
    #[arg(long, value_name = "PATH", conflicts_with = "export")]
    trace_processor: Option<PathBuf>,

    /// Query the SQLite export even where trace_processor is at hand.
    #[arg(long)]
    export: bool,

    /// Where converted traces (and exports of reports) are kept (default:
    /// $XDG_CACHE_HOME/nsys2perfetto/query, or ~/.cache/nsys2perfetto/query).
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,

    #[command(flatten)]
    reading: Reading,
}

/// How `query` prints its rows: aligned columns, CSV (header first), or one
/// JSON object (the columns, and the rows as objects). The values carry no
/// help of their own, so that `--help` lists them on one line as every
/// other command's formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum QueryFormat {
    Text,
    Csv,
    Json,
}

/// The most the cache's traces may take: past it, the least recently used
/// are removed.
const CACHE_LIMIT: u64 = 4 << 30;

pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    let engine = match args.export {
        true => Engine::Export,
        false => match find_trace_processor(args.trace_processor.as_deref()) {
            Some(tp) => Engine::TraceProcessor(tp),
            None => {
                if !args.reading.quiet {
                    crate::note(format_args!(
                        "no trace_processor at hand (--trace-processor PATH, \
                         {TRACE_PROCESSOR_VARIABLE}, or trace_processor_shell on PATH): \
                         the SQLite export is queried instead"
                    ));
                }
                Engine::Export
            }
        },
    };
    let dir = match args.cache {
        Some(dir) => dir,
        None => default_cache_dir().ok_or_else(|| {
            Usage("no cache directory (neither XDG_CACHE_HOME nor HOME): give --cache".into())
        })?,
    };
    let cache = Cache::open(&dir, CACHE_LIMIT)?;
    let options = Options::default().with_read(args.reading.read_options(signals));
    let answer =
        query_file(&cache, &args.run, &args.sql, &engine, &options, &mut |_| {}).map_err(|e| {
            match e {
                nsys2perfetto::Error::QueryRefused { .. } => Usage(e.to_string()).into(),
                e => crate::interrupted_reading(e),
            }
        })?;
    let format = match args.format {
        QueryFormat::Text => TableFormat::Table,
        QueryFormat::Csv => TableFormat::Csv,
        QueryFormat::Json => TableFormat::Json,
    };
    let files = [args.run.display().to_string()];
    let mut out = std::io::stdout().lock();
    answer
        .table()
        .write(&mut out, format, &files, Fit::Whole)
        .and_then(|()| out.flush())
        .context("cannot write to standard output")?;
    Ok(ExitCode::SUCCESS)
}
