//! `analyze`: the findings of `nsys analyze`, printed.

use std::io::{self, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use nsys2perfetto::analyze::{
    analyze_file, parse_duration, save_findings, write_findings, Findings, Rule, Thresholds,
};
use nsys2perfetto::directories::reports_in;
use nsys2perfetto::stats::TableFormat;
use nsys2perfetto::{is_standard_output, output_format, OutputFile, OutputSet};

use crate::paths::Writing;
use crate::reading::{quiet_help, Reading};
use crate::signals::Signals;

/// Find what `nsys analyze` finds: synchronous memcpy and memset, async memcpy
/// with pageable memory, synchronizing API calls, GPU gaps and low GPU
/// utilization, each with its time, duration, thread or device and stream,
/// and the correlation ids of the events behind it.
#[derive(clap::Args)]
#[command(mut_args(quiet_help(
    "Errors only: not the note that says how many findings --rows left out"
)))]
pub struct Args {
    /// Nsight Systems SQLite exports (`nsys export --type sqlite`), or
    /// reports (.nsys-rep, .qdrep), exported first with the nsys CLI; or
    /// directories, whose every export and report below is analyzed, as
    /// `convert` finds them. The findings of several reports each follow a
    /// line naming the report (in JSON, each object names it).
    #[arg(required = true, value_name = "REPORT")]
    inputs: Vec<PathBuf>,

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
    /// output); the findings of several reports go to a file each,
    /// FILE_<report>.EXT (FILE without its extension, <report> the report's
    /// file name without its own), all or none.
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
    reading: Reading,
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

pub fn run(mut args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    // A directory is the reports below it, as `convert` finds them.
    args.inputs = reports_in(&args.inputs)?;
    // `-o -` is standard output, as no -o.
    let output = args.output.as_deref().filter(|p| !is_standard_output(p));
    let file = match output {
        Some(path) => Some(args.writing.output(path, &args.inputs)?),
        None => None,
    };
    let format = output_format(args.format, output, TableFormat::Table)
        .map_err(|e| crate::Usage(e.to_string()))?;
    let files = match &file {
        Some(file) if args.inputs.len() > 1 => Some(files_per_report(file, &args.inputs)?),
        _ => None,
    };
    crate::paths::note_untested(&args.inputs, args.reading.quiet);
    let rules = match args.rules.is_empty() {
        true => Rule::ALL.to_vec(),
        false => args.rules,
    };
    let mut thresholds = Thresholds::default();
    thresholds.gap_ns = args.gap;
    thresholds.util_percent = args.util_threshold;
    thresholds.util_chunks = args.chunks;
    let options = (args.reading.read_options(signals)).with_on_unreadable(crate::on_unreadable());
    let rows = (args.rows > 0).then_some(args.rows);
    let several = args.inputs.len() > 1;
    let analyzed = |input: &Path| -> anyhow::Result<Findings> {
        let findings =
            analyze_file(input, &rules, &thresholds, &options).map_err(crate::refused_option)?;
        for warning in findings.warnings() {
            crate::warn(format_args!("{}: {warning}", input.display()));
        }
        if format != TableFormat::Table && !args.reading.quiet {
            say_left_out(&findings, rows, several.then_some(input));
        }
        Ok(findings)
    };
    if let Some(files) = files {
        // All or none: a failure at the third report leaves neither of the
        // first two.
        let mut set = OutputSet::new();
        for (input, file) in args.inputs.iter().zip(&files) {
            let findings = analyzed(input)?;
            let name = input.display().to_string();
            set.write_with(file, |out| {
                write_findings(out, &findings, &name, format, rows)
            })?;
        }
        let written = set.publish()?;
        if !args.reading.quiet {
            let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
            crate::note(format!("a file per report: {}", names.join(", ")));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if several {
        return print_each(&args.inputs, analyzed, format, rows);
    }
    let report = &args.inputs[0];
    let findings = analyzed(report)?;
    let name = report.display().to_string();
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

/// The files the findings of several reports go to, one each, named after
/// `file` and the report (`out.csv`: `out_<report>.csv`, the report's file
/// name without its extension), as `stats` names its files per report;
/// each checked before any report is read. Two reports of one file name
/// are refused: their files would collide.
fn files_per_report(file: &OutputFile, inputs: &[PathBuf]) -> anyhow::Result<Vec<OutputFile>> {
    file.check_derivable()?;
    let path = file.path();
    let prefix = path.with_extension("");
    let mut named: Vec<(PathBuf, &PathBuf)> = Vec::with_capacity(inputs.len());
    for input in inputs {
        let mut name = prefix.clone().into_os_string();
        name.push("_");
        name.push(input.file_stem().unwrap_or(input.as_os_str()));
        if let Some(extension) = path.extension() {
            name.push(".");
            name.push(extension);
        }
        let name = PathBuf::from(name);
        if let Some((_, other)) = named.iter().find(|(n, _)| *n == name) {
            return Err(crate::Usage(format!(
                "{} and {} would both write {}: analyze them one at a time, \
                 or to standard output",
                other.display(),
                input.display(),
                name.display()
            ))
            .into());
        }
        named.push((name, input));
    }
    let files: Vec<OutputFile> = named.into_iter().map(|(n, _)| file.sibling(n)).collect();
    for file in &files {
        file.check()?;
    }
    Ok(files)
}

/// Prints the findings of each of several reports, each after a line that
/// names the report (in JSON, each object names it), when all are found:
/// until then they wait in a temporary file, so that a failure prints none.
fn print_each(
    inputs: &[PathBuf],
    analyzed: impl Fn(&Path) -> anyhow::Result<Findings>,
    format: TableFormat,
    rows: Option<usize>,
) -> anyhow::Result<ExitCode> {
    let spool_failed = |cause| anyhow::Error::from(nsys2perfetto::Error::temporary(cause));
    let mut spooled = tempfile::tempfile().map_err(spool_failed)?;
    let mut writer = BufWriter::new(&spooled);
    for (i, input) in inputs.iter().enumerate() {
        let findings = analyzed(input)?;
        let name = input.display().to_string();
        write_heading(&mut writer, format, &name, i == 0)
            .and_then(|()| write_findings(&mut writer, &findings, &name, format, rows))
            .map_err(spool_failed)?;
    }
    writer.flush().map_err(spool_failed)?;
    drop(writer);
    spooled.rewind().context("cannot read a temporary file")?;
    let mut out = io::stdout().lock();
    io::copy(&mut spooled, &mut out)
        .and_then(|_| out.flush())
        .context("writing the findings")?;
    Ok(ExitCode::SUCCESS)
}

/// The line before a report's findings among several's: `** Findings of
/// REPORT:` and a blank line in the tables, `# Findings of REPORT` in CSV
/// (as `stats` marks its tables), a blank line before all but the first;
/// none in JSON, whose objects name their report.
fn write_heading(
    out: &mut dyn Write,
    format: TableFormat,
    report: &str,
    first: bool,
) -> io::Result<()> {
    if !first && format != TableFormat::Json {
        writeln!(out)?;
    }
    match format {
        TableFormat::Table => writeln!(out, "** Findings of {report}:\n"),
        TableFormat::Csv => writeln!(out, "# Findings of {}", report.replace(['\n', '\r'], " ")),
        TableFormat::Json => Ok(()),
        TableFormat::Markdown => writeln!(out, "## Findings of {report}"),
    }
}

/// Says how many findings of each rule `--rows` left out of CSV or JSON
/// (the tables say it under each rule); `report`, where there are several,
/// names the report.
fn say_left_out(findings: &Findings, rows: Option<usize>, report: Option<&Path>) {
    let Some(rows) = rows else { return };
    let cut: Vec<String> = findings
        .rules()
        .iter()
        .filter(|&&rule| findings.count(rule) > rows)
        .map(|&rule| format!("{} more of {rule}", findings.count(rule) - rows))
        .collect();
    if !cut.is_empty() {
        let of = report.map_or_else(String::new, |r| format!("{}: ", r.display()));
        crate::note(format!(
            "{of}at most {rows} findings per rule are written: {} (--rows 0 writes all)",
            cut.join(", ")
        ));
    }
}
