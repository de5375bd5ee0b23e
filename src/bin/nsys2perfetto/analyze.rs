//! `analyze`: the findings of `nsys analyze`, printed.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use nsys2perfetto::analyze::{write_findings, Format};
use nsys2perfetto::{analyze, Report, Rule, Thresholds};

use crate::signals::Signals;
use crate::USAGE;

/// Find what `nsys analyze` finds: synchronous memcpy and memset, async memcpy
/// with pageable memory, synchronizing API calls, GPU gaps and low GPU
/// utilization, each with its time, duration, thread or device and stream,
/// and the correlation ids of the events behind it.
#[derive(clap::Args)]
pub struct Args {
    /// An Nsight Systems SQLite export (`nsys export --type sqlite`).
    #[arg(value_name = "REPORT")]
    report: PathBuf,

    /// The rules to run (default: all), by their names in nsys 2024 and later
    /// or in nsys 2022.4 (gpu-starv for gpu_gaps, ...).
    #[arg(long = "rule", value_name = "NAME,...", value_delimiter = ',')]
    rules: Vec<Rule>,

    /// table: a table per rule; csv, json: one table of every finding.
    #[arg(long, value_name = "FORMAT", default_value = "table")]
    format: Format,

    /// At most N findings per rule, the most important first (0: all).
    #[arg(long, value_name = "N", default_value_t = 50)]
    rows: usize,

    /// gpu_gaps: gaps longer than this many milliseconds.
    #[arg(long, value_name = "MS", default_value_t = Thresholds::default().gap_ms)]
    gap: u64,

    /// gpu_time_util: chunks in which the GPU is in use less than this
    /// percentage of the time.
    #[arg(long, value_name = "PERCENT", default_value_t = Thresholds::default().util_percent)]
    util_threshold: u32,

    /// gpu_time_util: the number of equal chunks each device's time range
    /// is cut into (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = Thresholds::default().util_chunks,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    chunks: u32,
}

pub fn run(args: Args, _signals: &Signals) -> ExitCode {
    let rules = match args.rules.is_empty() {
        true => Rule::ALL.to_vec(),
        false => args.rules,
    };
    let mut thresholds = Thresholds::default();
    thresholds.gap_ms = args.gap;
    thresholds.util_percent = args.util_threshold;
    thresholds.util_chunks = args.chunks;
    let found = Report::open(&args.report).and_then(|r| analyze(&r, &rules, &thresholds));
    let findings = match found {
        Ok(findings) => findings,
        Err(e @ nsys2perfetto::Error::InvalidOption(_)) => {
            eprintln!("nsys2perfetto: error: {e}");
            return ExitCode::from(USAGE);
        }
        Err(e) => {
            eprintln!("nsys2perfetto: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rows = (args.rows > 0).then_some(args.rows);
    let mut out = io::stdout().lock();
    let written =
        write_findings(&mut out, &findings, &rules, args.format, rows).and_then(|()| out.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nsys2perfetto: error: writing the findings: {e}");
            ExitCode::FAILURE
        }
    }
}
