//! `stats`: the summaries `nsys stats` prints, computed by the library.

use std::path::PathBuf;
use std::process::ExitCode;

use nsys2perfetto::directories::reports_in;
use nsys2perfetto::stats::StatsReport;

use crate::grouping::Grouping;
use crate::paths::Writing;
use crate::reading::{quiet_help, Reading};
use crate::signals::Signals;
use crate::tables::TableOutput;

/// Print the summaries `nsys stats` prints (same columns, same numbers).
///
/// Each summary groups a table's events by name and gives their share of
/// the summary's total time, total, count, average, median, minimum, maximum
/// and standard deviation, as nsys 2025.3 defines them (see docs/stats.md).
#[derive(clap::Args)]
#[command(mut_args(quiet_help(
    "Errors only: not the note that names the files of several CSV tables"
)))]
pub struct Args {
    /// Nsight Systems SQLite exports, or reports (.nsys-rep, .qdrep), which
    /// are exported first with the nsys CLI; or directories, whose every
    /// export and report below is summarized, as `convert` finds them.
    #[arg(required = true, value_name = "REPORT")]
    inputs: Vec<PathBuf>,

    /// The summaries, by nsys's old or new names (cudaapisum or
    /// cuda_api_sum, ...), each printed once however often it is named.
    /// Default: nvtx_sum, cuda_api_sum, cuda_gpu_kern_sum,
    /// cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    report: Vec<StatsReport>,

    #[command(flatten)]
    grouping: Grouping,

    #[command(flatten)]
    table: TableOutput,

    #[command(flatten)]
    writing: Writing,

    #[command(flatten)]
    reading: Reading,
}

pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    // A directory is the reports below it, as `convert` finds them.
    let reports = reports_in(&args.inputs)?;
    let inputs: Vec<&PathBuf> = reports.iter().collect();
    let quiet = args.reading.quiet;
    let tables = args.table.checked(&inputs, args.writing, quiet)?;
    crate::paths::note_untested(&inputs, quiet);
    let which = match args.report.is_empty() {
        true => StatsReport::DEFAULT.to_vec(),
        false => once_each(args.report),
    };
    let options = (args.reading.read_options(signals))
        .with_on_unreadable(crate::on_unreadable())
        .with_on_impossible_times(crate::on_impossible_times());
    let names = args.grouping.range_names();
    tables.write_summaries(&reports, &which, names, &options)?;
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
