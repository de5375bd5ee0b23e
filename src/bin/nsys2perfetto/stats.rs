//! `stats`: the summaries `nsys stats` prints, computed by the library.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use nsys2perfetto::stats::{
    save_tables, summarize_file, write_tables, Fit, StatsReport, Table, TableFormat,
};
use nsys2perfetto::{Error, Options};

use crate::signals::Signals;
use crate::Interrupted;

/// Print the summaries `nsys stats` prints (same columns, same numbers).
///
/// Each summary groups a table's events by name and gives their share of
/// the summary's total time, total, count, average, median, minimum, maximum
/// and standard deviation, as nsys 2025.3 defines them (see README.md).
#[derive(clap::Args)]
pub struct Args {
    /// Nsight Systems SQLite exports, or reports (.nsys-rep, .qdrep), which
    /// are exported first with the nsys CLI.
    #[arg(required = true, value_name = "REPORT")]
    inputs: Vec<PathBuf>,

    /// The summaries, by nsys's old or new names (cudaapisum or
    /// cuda_api_sum, ...), each printed once however often it is named.
    /// Default: nvtx_sum, cuda_api_sum, cuda_gpu_kern_sum,
    /// cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    report: Vec<StatsReport>,

    /// table (aligned columns), csv (as `nsys stats --format csv`) or json
    /// (JSON Lines: one object per summary and report).
    #[arg(long, value_name = "FORMAT", default_value = "table")]
    format: TableFormat,

    /// Write to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Names whole in the table format (cut otherwise to the terminal's
    /// width, or to 100 characters as nsys cuts them, ending in "…").
    #[arg(long)]
    wide: bool,

    /// The nsys CLI used to export .nsys-rep/.qdrep reports.
    #[arg(long, value_name = "PATH", default_value = "nsys")]
    nsys: PathBuf,
}

pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    let which = match args.report.is_empty() {
        true => StatsReport::DEFAULT.to_vec(),
        false => once_each(args.report),
    };
    let mut options = Options::default();
    options.nsys = args.nsys;
    options.cancel = Some(signals.cancel.clone());
    let fit = fit(args.wide, args.output.as_deref());
    let mut summaries = Vec::new();
    for input in &args.inputs {
        let tables = summarize_file(input, &which, &options).map_err(|e| match e {
            Error::Interrupted { path } => Interrupted(format!(
                "interrupted while reading {}; nothing written",
                path.display()
            ))
            .into(),
            e => anyhow::Error::from(e),
        })?;
        summaries.push((input.display().to_string(), tables));
    }
    write_output(args.output.as_deref(), &summaries, args.format, fit)?;
    Ok(ExitCode::SUCCESS)
}

/// The summaries asked for, each once, in the order first asked for
/// (`cuda_api_sum,cudaapisum` is one summary by two names).
fn once_each(asked: Vec<StatsReport>) -> Vec<StatsReport> {
    let mut once = Vec::with_capacity(asked.len());
    for report in asked {
        if !once.contains(&report) {
            once.push(report);
        }
    }
    once
}

/// How long names may be in an aligned table written to `output` (standard
/// output where `None`): whole with `--wide`; on a terminal, as long as its
/// lines allow; elsewhere, as long as nsys prints them.
pub fn fit(wide: bool, output: Option<&Path>) -> Fit {
    use std::io::IsTerminal;
    if wide {
        return Fit::Whole;
    }
    let stdout = std::io::stdout();
    match (output, stdout.is_terminal()) {
        (None, true) => match terminal_size::terminal_size_of(&stdout) {
            Some((terminal_size::Width(columns), _)) => Fit::Line(usize::from(columns)),
            None => Fit::NSYS,
        },
        _ => Fit::NSYS,
    }
}

/// Writes the summaries of each report to `output`, or to standard output,
/// with names as long as `fit` allows.
pub fn write_output(
    output: Option<&Path>,
    summaries: &[(String, Vec<Table>)],
    format: TableFormat,
    fit: Fit,
) -> anyhow::Result<()> {
    match output {
        Some(path) => save_tables(path, summaries, format, fit)?,
        None => {
            let mut text = Vec::new();
            write_tables(&mut text, summaries, format, fit).expect("writing to memory");
            let mut out = std::io::stdout().lock();
            out.write_all(&text)
                .and_then(|()| out.flush())
                .context("cannot write standard output")?
        }
    }
    Ok(())
}
