//! `merge`: the reports of one job (one per MPI rank or node) in one trace.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use nsys2perfetto::merge::{
    merge_files, AlignedOn, Labels, MergeOptions, MergeProgress, MergedReport, RankFrom,
    RankPattern,
};
use nsys2perfetto::{Options, Summary};

use crate::conversion::{Encoding, Selection};
use crate::flags::parse_rank_pattern;
use crate::paths::Writing;
use crate::reading::{quiet_help, Reading};
use crate::signals::Signals;
use crate::{human_bytes, note, warn, Usage};

/// Merge the reports of one job (one per MPI rank or node) into one trace.
///
/// The reports are aligned on their wall-clock session starts; every process
/// and GPU is labelled with its rank and host; pids, tids and CPUs of each
/// report are moved to numbers of their own (report k's by k x 4194304), so
/// nothing collides. Durations are exact: events are only shifted.
#[derive(clap::Args)]
#[command(mut_args(quiet_help("No progress bar and no summary; errors only")))]
pub struct Args {
    /// Nsight Systems SQLite exports or reports (.nsys-rep, .qdrep), one per
    /// rank.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,

    /// The merged trace: Perfetto's protobuf, or Chrome's JSON for a name
    /// ending in .json or .json.gz (see --format); - for standard output.
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,

    /// Where a report's MPI_RANKS table does not give its rank: take it from
    /// the file name with this regex (its first group, or the whole match).
    /// Without it, or when it does not match, the rank is the file's place
    /// on the command line, from 0.
    #[arg(long, value_name = "REGEX", value_parser = parse_rank_pattern)]
    rank_from_name: Option<RankPattern>,

    #[command(flatten)]
    encoding: Encoding,

    #[command(flatten)]
    selection: Selection,

    #[command(flatten)]
    reading: Reading,

    #[command(flatten)]
    writing: Writing,
}

pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    let mut options = Options::default();
    args.encoding
        .apply(&mut options, Some(&args.output))
        .map_err(Usage)?;
    options.parts = args.selection.parts().map_err(Usage)?;
    let output = args.writing.output(&args.output, &args.inputs)?;
    crate::paths::no_trace_to_terminal(&output)?;
    crate::paths::note_untested(&args.inputs, args.reading.quiet);
    options.read = args.reading.read_options(signals);
    let mut merge = MergeOptions::default();
    merge.labels = Labels::Ranks {
        from_name: args.rank_from_name,
    };
    let started = Instant::now();
    let bar = (!args.reading.quiet && std::io::stderr().is_terminal()).then(|| {
        let style = "{msg} [{bar:30}] {percent:>3}%";
        // As long as the inputs from the start: a bar of length 0 reads 100%.
        let bar = ProgressBar::new(args.inputs.len() as u64);
        bar.set_style(
            ProgressStyle::with_template(style)
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar
    });
    let mut progress = |p: MergeProgress| {
        let Some(bar) = &bar else { return };
        match p.conversion {
            None => {
                bar.set_message(format!("opening report {}/{}", p.report + 1, p.reports));
                bar.set_length(p.reports as u64);
                bar.set_position(p.report as u64);
            }
            Some(c) => {
                bar.set_message(format!("converting report {}/{}", p.report + 1, p.reports));
                // Each report counts as one step, its rows as a share of it.
                let share = c.rows_read as f64 / c.rows_total.max(1) as f64;
                bar.set_length(1000 * p.reports as u64);
                bar.set_position(1000 * p.report as u64 + (1000.0 * share) as u64);
            }
        }
    };
    let merged = merge_files(&args.inputs, &output, &options, &merge, &mut progress);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let reports = merged?;
    if !args.reading.quiet {
        print_summary(&reports, &args.output, started);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_summary(reports: &[MergedReport], output: &std::path::Path, started: Instant) {
    // Waits on events recorded before the capture: said once, with the
    // total, as every rank of a job has them.
    let unrecorded_waits = reports
        .iter()
        .map(|r| r.summary.event_waits_unrecorded)
        .sum();
    for r in reports {
        let said_once = Summary {
            event_waits_unrecorded: 0,
            ..r.summary.clone()
        };
        for warning in said_once.warnings() {
            warn(format_args!("{}: {warning}", r.path.display()));
        }
        if r.aligned_on == AlignedOn::FirstEvent {
            warn(format_args!(
                "{} records no session start \
                 (TARGET_INFO_SESSION_START_TIME): aligned on its first event",
                r.path.display()
            ));
        }
        if r.sched_left_out {
            warn(format_args!(
                "{}: its context switches are left out and its CPU \
                 samples have no CPU: the reports before it number {} CPUs, and \
                 trace_processor takes CPU numbers below {}",
                r.path.display(),
                r.cpu_offset,
                nsys2perfetto::perfetto::MAX_CPUS
            ));
        }
        if let Some((_, RankFrom::Order)) = r.rank {
            note(format_args!(
                "{}: no MPI_RANKS and no --rank-from-name match: \
                 rank from its place on the command line",
                r.path.display(),
            ));
        }
        crate::say(format_args!(
            "{}: {} at +{:.3} ms: {}",
            r.label,
            r.path.display(),
            r.offset_ns as f64 / 1e6,
            r.summary
        ));
    }
    warn_far_apart(reports);
    let count = match reports.len() {
        1 => "1 report".to_owned(),
        n => format!("{n} reports"),
    };
    let totals = Summary {
        event_waits_unrecorded: unrecorded_waits,
        ..Summary::default()
    };
    for warning in totals.warnings() {
        match reports {
            [one] => warn(format_args!("{}: {warning}", one.path.display())),
            _ => warn(format_args!("{count}: {warning}")),
        }
    }
    let took = started.elapsed().as_secs_f64();
    if nsys2perfetto::is_standard_output(output) {
        crate::say(format_args!("{count} -> standard output in {took:.2}s"));
        return;
    }
    let size = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    crate::say(format_args!(
        "{count} -> {} ({}) in {took:.2}s",
        output.display(),
        human_bytes(size),
    ));
}

/// Sessions that started further apart than this are not of one job.
const ONE_JOB: u64 = 3600 * 1_000_000_000;

/// Warns where reports aligned on their session starts began more than an
/// hour apart: their events then lie that far apart on the trace's time
/// line (the ranks of one job start within seconds).
fn warn_far_apart(reports: &[MergedReport]) {
    let on_start: Vec<&MergedReport> = reports
        .iter()
        .filter(|r| r.aligned_on == AlignedOn::SessionStart)
        .collect();
    let (Some(first), Some(last)) = (
        on_start.iter().min_by_key(|r| r.offset_ns),
        on_start.iter().max_by_key(|r| r.offset_ns),
    ) else {
        return;
    };
    let apart = last.offset_ns - first.offset_ns;
    if apart > ONE_JOB {
        warn(format_args!(
            "the sessions started {} apart ({} first, {} last): on one time line their \
             events lie that far apart, as if of one job (`compare A B --trace OUT` puts \
             two runs side by side at their first GPU work)",
            long_duration(apart),
            first.path.display(),
            last.path.display()
        ));
    }
}

/// A long span of time, in the largest unit of years, days and hours.
fn long_duration(ns: u64) -> String {
    let hours = ns as f64 / 3.6e12;
    match hours {
        h if h >= 24.0 * 365.25 => format!("{:.1} years", h / (24.0 * 365.25)),
        h if h >= 24.0 => format!("{:.1} days", h / 24.0),
        h => format!("{h:.1} hours"),
    }
}
