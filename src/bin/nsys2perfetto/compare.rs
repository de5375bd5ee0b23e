//! `compare`: what changed between two reports.

use std::path::PathBuf;
use std::process::ExitCode;

use nsys2perfetto::compare::{
    compare, compare_files, comparison_table, fit_to_width, incomplete_sides, top_by_kind, Kind,
};
use nsys2perfetto::merge::{merge_files, Alignment, Labels, MergeOptions};
use nsys2perfetto::report::{report_file, summary_table, ReportOptions};
use nsys2perfetto::Options;

use crate::conversion::Encoding;
use crate::exporter::Exporter;
use crate::grouping::Grouping;
use crate::interrupted_reading;
use crate::paths::Writing;
use crate::signals::Signals;
use crate::tables::TableOutput;
use crate::Usage;

/// Compare two reports: per kernel, whole CUDA graph, CUDA API function and
/// NVTX range, the change (B minus A) of total time, count, average and share
/// of GPU time, kind by kind, largest change of total time first.
#[derive(clap::Args)]
pub struct Args {
    /// The first report or export (A).
    #[arg(value_name = "A")]
    a: PathBuf,

    /// The second report or export (B).
    #[arg(value_name = "B")]
    b: PathBuf,

    /// Only these kinds of rows: kernel, graph (whole CUDA graphs), api, nvtx
    /// (default: all). Rows come kind by kind in that order, since their
    /// times are of different clocks: GPU time, CPU time in a call, wall
    /// time of a range.
    #[arg(long = "kind", value_name = "KIND,...", value_delimiter = ',')]
    kinds: Vec<Kind>,

    /// At most N rows of each kind, the largest changes (default: all).
    #[arg(long, value_name = "N")]
    top: Option<usize>,

    /// Instead of the rows by name, the headline numbers of `report` side
    /// by side: per GPU its busy share and idle split (host-bound, waiting),
    /// communication overlap, and per kind of work its share of GPU time
    /// and launch delay (median, p90), with B minus A.
    #[arg(long, conflicts_with_all = ["kinds", "top", "trace"])]
    summary: bool,

    #[command(flatten)]
    grouping: Grouping,

    #[command(flatten)]
    table: TableOutput,

    /// Also write a trace holding both runs, as process groups labelled `A:
    /// ...` and `B: ...`, aligned at their first GPU work: Perfetto's
    /// protobuf, or Chrome's JSON for a name ending in .json or .json.gz (as
    /// for merge); - for standard output.
    #[arg(long, value_name = "OUT")]
    trace: Option<PathBuf>,

    #[command(flatten)]
    writing: Writing,

    #[command(flatten)]
    exporter: Exporter,

    /// Errors only: not the line that says where the --trace went.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    let inputs = [&args.a, &args.b];
    let tables = args.table.checked(&inputs, args.writing, args.quiet)?;
    let mut options = Options::default();
    let trace = match &args.trace {
        Some(path) => {
            let trace = args.writing.output(path, &inputs)?;
            match tables.file() {
                Some(table) => crate::paths::distinct(("-o", table), ("--trace", &trace))?,
                None if trace.is_standard_output() => {
                    return Err(
                        crate::paths::both_to_standard_output("the table", "--trace -").into(),
                    )
                }
                None => {}
            }
            crate::paths::no_trace_to_terminal(&trace)?;
            // The format its name asks for, as `merge -o` takes it.
            Encoding::apply_named(&mut options, path).map_err(Usage)?;
            Some(trace)
        }
        None => None,
    };
    crate::paths::note_untested(inputs, args.quiet);
    options.read = (args.exporter.read_options(signals))
        .with_on_unreadable(crate::on_unreadable())
        .with_on_impossible_times(crate::on_impossible_times());
    if args.summary {
        let report_options = ReportOptions::default();
        let read = |path: &PathBuf| report_file(path, &report_options, &options.read);
        let a = read(&args.a).map_err(interrupted_reading)?;
        let b = read(&args.b).map_err(interrupted_reading)?;
        let files = vec![args.a.display().to_string(), args.b.display().to_string()];
        tables.write(&[(files, vec![summary_table(&a, &b)])])?;
        return Ok(ExitCode::SUCCESS);
    }
    let (a, b) = compare_files(&args.a, &args.b, args.grouping.range_names(), &options.read)
        .map_err(interrupted_reading)?;
    let kinds = match args.kinds.is_empty() {
        true => Kind::ALL.to_vec(),
        false => args.kinds,
    };
    let mut table = comparison_table(&top_by_kind(compare(&a, &b), &kinds, args.top));
    table.incomplete = incomplete_sides(&a.incomplete, &b.incomplete);
    if let Some(width) = tables.terminal_width() {
        let left_out = fit_to_width(&mut table, width);
        if !left_out.is_empty() {
            crate::note(format!(
                "left out to fit the terminal's {width} columns: {} (--wide or --format csv \
                 shows every column)",
                left_out.join(", ")
            ));
        }
    }
    let files = vec![args.a.display().to_string(), args.b.display().to_string()];
    // The trace is written even where the table could not be.
    let written = tables.write(&[(files, vec![table])]);
    let Some(trace) = &trace else {
        return written.map(|()| ExitCode::SUCCESS);
    };
    let mut merge = MergeOptions::default();
    merge.alignment = Alignment::FirstGpuWork;
    merge.labels = Labels::Given(vec!["A".into(), "B".into()]);
    let inputs = [args.a.clone(), args.b.clone()];
    merge_files(&inputs, trace, &options, &merge, &mut |_| {})?;
    if !args.quiet {
        let shown = crate::paths::shown(trace.path());
        crate::say(format_args!("both runs -> {shown}"));
    }
    written.map(|()| ExitCode::SUCCESS)
}
