//! `analyze`: the findings of `nsys analyze`, printed.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use nsys2perfetto::analyze::{
    analyze_file, parse_duration, save_findings, write_findings, Rule, Thresholds,
};
use nsys2perfetto::stats::TableFormat;
use nsys2perfetto::{is_standard_output, output_format, Options};

use crate::exporter::Exporter;
use crate::paths::Writing;
use crate::signals::Signals;

/// Find what `nsys analyze` finds: synchronous memcpy and memset, async memcpy
/// with pageable memory, synchronizing API calls, GPU gaps and low GPU
/// utilization, each with its time, duration, thread or device and stream,
/// and the correlation ids of the events behind it.
#[derive(clap::Args)]
pub struct Args {
    /// An Nsight Systems SQLite export (`nsys export --type sqlite`), or a
    /// report (.nsys-rep, .qdrep), exported first with the nsys CLI.
    #[arg(value_name = "REPORT")]
    report: PathBuf,

    /// The rules to run (default: all), by their names in nsys 2024 and later
    /// or in nsys 2022.4 (gpu-starv for gpu_gaps, ...).
    #[arg(long = "rule", value_name = "NAME,...", value_delimiter = ',')]
    rules: Vec<Rule>,

    /// table: a table per rule; csv: one table of every finding, its header
    /// first; json: an object per rule on a line of its own (JSON Lines), as
    /// `stats` writes its summaries. Default: as the output's name says
    /// (.csv, .json), else table; a format the name contradicts is refused.
    #[arg(long, value_name = "FORMAT")]
    format: Option<TableFormat>,

    /// Write to this file instead of standard output (- is standard
    /// output).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// At most N findings per rule, the most important first (0, or -1 as
    /// for nsys: all).
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = row_limit,
          allow_negative_numbers = true)]
    rows: usize,

    /// gpu_gaps: gaps longer than this, with its unit: ns, us, ms or s
    /// (`500ms`, `1.5ms`, `200us`), as `--time` takes it.
    #[arg(long, value_name = "TIME", default_value = "500ms", value_parser = parse_duration)]
    gap: u64,

    /// gpu_time_util: chunks in which the GPU is in use less than this
    /// percentage of the time (0 to 100).
    #[arg(long, value_name = "PERCENT", default_value_t = Thresholds::default().util_percent,
          value_parser = clap::value_parser!(u32).range(0..=100))]
    util_threshold: u32,

    /// gpu_time_util: the number of equal chunks each device's time range
    /// is cut into (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = Thresholds::default().util_chunks,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    chunks: u32,

    #[command(flatten)]
    writing: Writing,

    #[command(flatten)]
    exporter: Exporter,

    /// Errors only: not the note that says how many findings --rows left
    /// out.
    #[arg(short, long)]
    quiet: bool,
}

/// `--rows`: a count, where 0 and nsys's -1 mean all (0 here).
fn row_limit(text: &str) -> Result<usize, String> {
    match text.trim() {
        "-1" => Ok(0),
        text => text
            .parse()
            .map_err(|_| "a number of rows, 0 or more (0 or -1: all)".to_owned()),
    }
}

pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    // `-o -` is standard output, as no -o.
    let output = args.output.as_deref().filter(|p| !is_standard_output(p));
    let file = match output {
        Some(path) => Some(args.writing.output(path, &[&args.report])?),
        None => None,
    };
    let format = output_format(args.format, output, TableFormat::Table)
        .map_err(|e| crate::Usage(e.to_string()))?;
    crate::paths::note_untested([&args.report], args.quiet);
    let rules = match args.rules.is_empty() {
        true => Rule::ALL.to_vec(),
        false => args.rules,
    };
    let mut thresholds = Thresholds::default();
    thresholds.gap_ns = args.gap;
    thresholds.util_percent = args.util_threshold;
    thresholds.util_chunks = args.chunks;
    let mut options = Options::default();
    options.on_unreadable = crate::on_unreadable();
    options.nsys = args.exporter.nsys;
    options.cancel = Some(Arc::clone(&signals.cancel));
    let findings =
        analyze_file(&args.report, &rules, &thresholds, &options).map_err(crate::refused_option)?;
    for warning in findings.warnings() {
        crate::warn(format_args!("{}: {warning}", args.report.display()));
    }
    let rows = (args.rows > 0).then_some(args.rows);
    if format != TableFormat::Table && !args.quiet {
        say_left_out(&findings, rows);
    }
    let name = args.report.display().to_string();
    match &file {
        Some(file) => save_findings(file, &findings, &name, format, rows)?,
        None => {
            let mut out = io::stdout().lock();
            write_findings(&mut out, &findings, &name, format, rows)
                .and_then(|()| out.flush())
                .context("writing the findings")?
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Says how many findings of each rule `--rows` left out of CSV or JSON
/// (the tables say it under each rule).
fn say_left_out(findings: &nsys2perfetto::analyze::Findings, rows: Option<usize>) {
    let Some(rows) = rows else { return };
    let cut: Vec<String> = findings
        .rules()
        .iter()
        .filter(|&&rule| findings.count(rule) > rows)
        .map(|&rule| format!("{} more of {rule}", findings.count(rule) - rows))
        .collect();
    if !cut.is_empty() {
        crate::note(format!(
            "at most {rows} findings per rule are written: {} (--rows 0 writes all)",
            cut.join(", ")
        ));
    }
}
