//! `compare`: what changed between two reports.

use std::path::PathBuf;
use std::process::ExitCode;

use nsys2perfetto::compare::{
    busy_percent, check, compare, compare_files, comparison_table, fit_to_width, incomplete_sides,
    needs_busy, top_by_kind, verdict_table, Kind, Rule, RunSummary, Verdict,
};
use nsys2perfetto::merge::{merge_files, Alignment, Labels, MergeOptions};
use nsys2perfetto::report::RunReport;
use nsys2perfetto::report::{report_file, summary_table, ReportOptions};
use nsys2perfetto::stats::{Table, TableFormat};
use nsys2perfetto::Options;

use crate::conversion::Encoding;
use crate::grouping::Grouping;
use crate::interrupted_reading;
use crate::paths::Writing;
use crate::reading::{quiet_help, Reading};
use crate::signals::Signals;
use crate::tables::TableOutput;
use crate::Usage;

/// Compare two reports: per kernel, whole CUDA graph, CUDA API function and
/// NVTX range, the change (B minus A) of total time, count, average and share
/// of GPU time, kind by kind, largest change of total time first.
///
/// For CI, `--fail-if RULE...` exits with status 3 where a rule breaks,
/// printing a line per broken rule. A rule is `METRIC>CHANGE%` (breaks where
/// B's value is more than CHANGE percent of A's above A's) or
/// `METRIC<CHANGE%` (more than that below), METRIC one of: `gpu_time` (the
/// summed time of kernels, memcpys, memsets, whole CUDA graphs); `busy` (the
/// share of their work's span the GPUs were busy); `kernel:REGEX`,
/// `api:REGEX`, `nvtx:REGEX` (the summed total time of the kernels, CUDA API
/// functions or NVTX ranges, `domain:name` as the table names them, whose
/// whole name REGEX matches). Examples: `gpu_time>+5%`,
/// `kernel:.*gemm.*>+10%`, `api:cudaMemcpy.*>+20%`, `nvtx:.*forward>+3%`,
/// `busy<-5%`. `--format md` writes the rules and the largest changes as
/// Markdown, for a pull request's comment.
#[derive(clap::Args)]
#[command(mut_args(quiet_help("Errors only: not the line that says where the --trace went")))]
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

    /// At most N rows of each kind, the largest changes (default: all; 10
    /// with --format md).
    #[arg(long, value_name = "N")]
    top: Option<usize>,

    /// Exit with status 3 where one of these rules breaks, a line each on
    /// standard error naming A's and B's values, the change and the limit:
    /// METRIC>+N% or METRIC<-N%, METRIC one of gpu_time, busy,
    /// kernel:REGEX, api:REGEX, nvtx:REGEX (gpu_time>+5%,
    /// kernel:.*gemm.*>+10%, busy<-5%). The table of rules follows the
    /// others.
    #[arg(long = "fail-if", value_name = "RULE", num_args = 1.., value_parser = parse_rule)]
    fail_if: Vec<Rule>,

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
    reading: Reading,
}

pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    let inputs = [&args.a, &args.b];
    let tables = args
        .table
        .checked(&inputs, args.writing, args.reading.quiet)?;
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
    crate::paths::note_untested(inputs, args.reading.quiet);
    options.read = (args.reading.read_options(signals))
        .with_on_unreadable(crate::on_unreadable())
        .with_on_impossible_times(crate::on_impossible_times());
    let files = vec![args.a.display().to_string(), args.b.display().to_string()];
    let reports = match args.summary || needs_busy(&args.fail_if) {
        true => {
            let report_options = ReportOptions::default();
            let read = |path: &PathBuf| report_file(path, &report_options, &options.read);
            let a = read(&args.a).map_err(interrupted_reading)?;
            let b = read(&args.b).map_err(interrupted_reading)?;
            Some((a, b))
        }
        false => None,
    };
    let compared = match !args.summary || !args.fail_if.is_empty() {
        true => Some(
            compare_files(&args.a, &args.b, args.grouping.range_names(), &options.read)
                .map_err(interrupted_reading)?,
        ),
        false => None,
    };
    let verdicts = match &compared {
        Some((a, b)) => verdicts(&args.fail_if, a, b, reports.as_ref())?,
        None => Vec::new(),
    };
    let rules = (!verdicts.is_empty()).then(|| verdict_table(&verdicts));
    if args.summary {
        let (a, b) = reports.as_ref().expect("read for --summary");
        let written = tables.write(&[(
            files,
            [summary_table(a, b)].into_iter().chain(rules).collect(),
        )]);
        return written.map(|()| verdict_status(&verdicts));
    }
    let (a, b) = compared.expect("compared without --summary");
    let kinds = match args.kinds.is_empty() {
        true => Kind::ALL.to_vec(),
        false => args.kinds,
    };
    // A pull request's comment shows the largest changes, not every name.
    let top = match tables.format() {
        TableFormat::Markdown => args.top.or(Some(MARKDOWN_TOP)),
        _ => args.top,
    };
    let mut table = comparison_table(&top_by_kind(compare(&a, &b), &kinds, top));
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
    // The rules first in a comment, where a reader looks; after the
    // table elsewhere, where the table is what is read.
    let all: Vec<Table> = match tables.format() {
        TableFormat::Markdown => rules.into_iter().chain([table]).collect(),
        _ => [table].into_iter().chain(rules).collect(),
    };
    // The trace is written even where the table could not be.
    let written = tables.write(&[(files, all)]);
    let Some(trace) = &trace else {
        return written.map(|()| verdict_status(&verdicts));
    };
    let mut merge = MergeOptions::default();
    merge.alignment = Alignment::FirstGpuWork;
    merge.labels = Labels::Given(vec!["A".into(), "B".into()]);
    let inputs = [args.a.clone(), args.b.clone()];
    merge_files(&inputs, trace, &options, &merge, &mut |_| {})?;
    if !args.reading.quiet {
        let shown = crate::paths::shown(trace.path());
        crate::say(format_args!("both runs -> {shown}"));
    }
    written.map(|()| verdict_status(&verdicts))
}

/// How many rows of each kind `--format md` shows without `--top`.
const MARKDOWN_TOP: usize = 10;

/// Exit status of a comparison where a rule of `--fail-if` broke.
const RULE_BROKEN: u8 = 3;

/// A rule of `--fail-if`; a bad one refused saying what a rule looks like.
fn parse_rule(text: &str) -> Result<Rule, String> {
    text.parse()
        .map_err(|e: nsys2perfetto::compare::RuleError| e.to_string())
}

/// Each rule checked against A and B (`reports`, their reports, where a
/// `busy` rule needs them).
fn verdicts(
    rules: &[Rule],
    a: &RunSummary,
    b: &RunSummary,
    reports: Option<&(RunReport, RunReport)>,
) -> anyhow::Result<Vec<Verdict>> {
    let busy = reports.and_then(|(a, b)| Some((busy_percent(a)?, busy_percent(b)?)));
    rules
        .iter()
        .map(|rule| check(rule, a, b, busy).map_err(anyhow::Error::from))
        .collect()
}

/// Says each broken rule on a line of its own; status 3 where one broke.
fn verdict_status(verdicts: &[Verdict]) -> ExitCode {
    let broken: Vec<&Verdict> = verdicts.iter().filter(|v| v.broken).collect();
    for verdict in &broken {
        crate::say(format_args!("nsys2perfetto: rule broken: {verdict}"));
    }
    match broken.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(RULE_BROKEN),
    }
}
