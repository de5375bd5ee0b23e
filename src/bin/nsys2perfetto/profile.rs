//! `profile`: a command profiled by nsys, its report converted.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use nsys2perfetto::profile::NsysProfile;
use nsys2perfetto::series::{check_series, measure_series, EventPattern, SeriesRun};
use nsys2perfetto::stats::RangeNames;
use nsys2perfetto::{convert_file, Error, Options, OutputFile};

use anyhow::anyhow;

use crate::conversion::Conversion;
use crate::paths::Writing;
use crate::signals::Signals;
use crate::{human_bytes, Interrupted, Usage};

/// Profile a command with `nsys profile`, then convert its report.
///
/// Prints where the report and the trace are, and exits with the command's
/// exit code. Where nsys leaves only its raw capture (.qdstrm), as nsys
/// 2022.4 does on a machine without a GPU, the QdstrmImporter of the same
/// install turns it into the report. Ctrl-C ends the collection, stops nsys
/// and the command, and keeps nothing.
#[derive(clap::Args)]
pub struct Args {
    /// What nsys traces, as for `nsys profile --trace` (such as
    /// cuda,nvtx,osrt); nsys's default when not given.
    #[arg(short = 't', long, value_name = "API,...")]
    trace: Option<String>,

    /// The report's name without extension: NAME.nsys-rep and
    /// NAME.perfetto-trace (NAME.json with --format json) are written (default: report1, report2, ... in
    /// the current directory, the first one free).
    #[arg(short, long, value_name = "NAME")]
    output: Option<PathBuf>,

    /// Overwrite a report and trace of the same name.
    #[arg(short, long)]
    force: bool,

    /// The nsys CLI.
    #[arg(long, value_name = "PATH", default_value = "nsys")]
    nsys: PathBuf,

    /// More options for `nsys profile`, up to a `--` (such as
    /// `--nsys-args --sample=none --cpuctxsw=none -- ./app`).
    #[arg(long, value_name = "ARG", num_args = 1.., allow_hyphen_values = true,
          value_terminator = "--")]
    nsys_args: Vec<OsString>,

    /// No summary of the conversion; errors only (nsys and the command
    /// still print what they print).
    #[arg(short, long)]
    quiet: bool,

    #[command(flatten)]
    conversion: Conversion,

    /// Seconds nsys may go on after its command ended before it is said
    /// what is being waited for (default 30; for tests).
    #[arg(long, value_name = "SECONDS", hide = true)]
    wait_notice: Option<u64>,

    /// The command to profile and its arguments (after `--` when it has
    /// options of its own).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<OsString>,

    #[command(flatten)]
    sweep: Sweep,
}

/// The flags of `profile --series`, under a heading of their own.
#[derive(clap::Args)]
#[command(next_help_heading = "Series")]
struct Sweep {
    /// Profile the command once per value, `$p` in the command standing for
    /// it (`--series batch=8,16,32 -- python train.py --batch '$p'`, quoted
    /// so that the shell leaves it); then
    /// measure --events across the runs as `series` does. The reports are
    /// NAME_VALUE (-o NAME, default run).
    #[arg(long, value_name = "NAME=V,...", requires = "events")]
    series: Option<String>,

    /// With --series: the event patterns to measure (as for `series`).
    #[arg(long, num_args = 1.., value_name = "PATTERN", requires = "series")]
    events: Vec<String>,

    /// With --series: where the CSV table goes (default: standard output).
    #[arg(long, value_name = "FILE", requires = "series")]
    table: Option<PathBuf>,

    /// With --series: also draw the plot of total time against the value, as SVG.
    #[arg(long, value_name = "FILE", requires = "series")]
    svg: Option<PathBuf>,
}

pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    // An option of ours misspelt would be taken for the command and handed
    // to nsys, which would refuse it as an option of its own.
    if let Some(flag) = args
        .command
        .first()
        .filter(|c| c.to_string_lossy().starts_with('-'))
    {
        return Err(Usage(format!(
            "{}: no option of profile, and no command (options for nsys go in --nsys-args \
             ... --; the command to profile comes last)",
            flag.to_string_lossy()
        ))
        .into());
    }
    let options = args.conversion.clone().options();
    let mut options = options.map_err(|e| Usage(e.to_string()))?;
    // The trace is named after the report, with the format's extension.
    args.conversion
        .encoding
        .apply(&mut options, None)
        .map_err(Usage)?;
    options.read = crate::exporter::read_options(&args.nsys, signals);
    match &args.sweep.series {
        Some(series) => run_series(series, &args, &options, signals),
        None => {
            let mut profile = NsysProfile::new(args.command.clone());
            profile.output = args.output.clone();
            let profiled = profile_and_convert(profile, &args, &options, signals)?;
            Ok(ExitCode::from(profiled.status))
        }
    }
}

/// A command profiled and its report converted.
struct Run {
    report: PathBuf,
    /// The command's exit status, or 1 where it succeeded and the
    /// conversion failed.
    status: u8,
}

/// Profiles `profile`'s command and converts its report, saying where both
/// are; an error where nothing was profiled (or the conversion was
/// interrupted). A conversion that fails is said, and the run goes on.
fn profile_and_convert(
    mut profile: NsysProfile,
    args: &Args,
    options: &Options,
    signals: &Signals,
) -> anyhow::Result<Run> {
    let (force, quiet) = (args.force, args.quiet);
    profile.nsys = args.nsys.clone();
    profile.trace = args.trace.clone();
    profile.nsys_args = args.nsys_args.clone();
    profile.overwrite = force;
    let trace_path = profile
        .report_path()
        .with_extension(options.format.extension());
    if !force && trace_path.exists() {
        let e = Error::ReportExists { path: trace_path };
        return Err(Usage(format!("{e} (-o NAME, --force)")).into());
    }
    if let Some(seconds) = args.wait_notice {
        profile.wait_notice = std::time::Duration::from_secs(seconds);
    }
    let told = &mut |wait| {
        if !quiet {
            crate::note(format_args!("{wait}"));
        }
    };
    let profiled = profile
        .run_telling(Some(&signals.cancel), told)
        .map_err(|e| match e {
            // A refused name, as a usage error.
            Error::ReportExists { .. } => Usage(format!("{e} (-o NAME, --force)")).into(),
            Error::ProfileFailed { .. } if !args.nsys_args.is_empty() => {
                anyhow!(
                    "{e}: did nsys refuse one of --nsys-args {}? (it says why above)",
                    {
                        let given: Vec<_> =
                            args.nsys_args.iter().map(|a| a.to_string_lossy()).collect();
                        given.join(" ")
                    }
                )
            }
            e => e.into(),
        })?;
    let report = profiled.report;
    if !quiet {
        if let Some(importer) = &profiled.imported_by {
            crate::note(format_args!(
                "nsys left its raw capture: imported by {}",
                importer.display()
            ));
        }
    }
    let started = Instant::now();
    let trace = OutputFile::new(&trace_path).force(force);
    let converted = convert_file(&report, trace, options, &mut |_| {});
    // The command's own status, unless it succeeded and the conversion did not.
    let command_status = u8::try_from(profiled.exit_code).unwrap_or(1);
    match converted {
        Ok(summary) => {
            if !quiet {
                for warning in summary.warnings() {
                    crate::warn(format_args!("{}: {warning}", report.display()));
                }
                let size = std::fs::metadata(&trace_path).map(|m| m.len()).unwrap_or(0);
                crate::say(format_args!(
                    "{} -> {} ({}): {summary} in {:.2}s",
                    report.display(),
                    trace_path.display(),
                    human_bytes(size),
                    started.elapsed().as_secs_f64()
                ));
                crate::say(format_args!("report: {}", report.display()));
                crate::say(format_args!("trace:  {}", trace_path.display()));
            }
            Ok(Run {
                report,
                status: command_status,
            })
        }
        Err(e @ Error::Interrupted { .. }) => {
            let stopped = format!("{e}; the report is {}", report.display());
            Err(Interrupted(stopped).into())
        }
        Err(e) => {
            crate::print_error(&anyhow!("{e}; the report is {}", report.display()));
            Ok(Run {
                report,
                status: if command_status == 0 {
                    1
                } else {
                    command_status
                },
            })
        }
    }
}

/// The report name of the run with `value` (without extension): NAME_VALUE.
fn run_name(base: &Path, value: &str) -> PathBuf {
    let mut name = base.as_os_str().to_owned();
    name.push(format!("_{value}"));
    PathBuf::from(name)
}

/// What `--series` will run: the parameter's name, its values, the events
/// to measure and a run per value.
type SeriesPlan = (String, Vec<String>, Vec<EventPattern>, Vec<SeriesRun>);

/// `--series NAME=V,...`: the command profiled once per value, then the
/// events measured across the reports. Ends with the first run's non-zero
/// status, if any.
fn run_series(
    series: &str,
    args: &Args,
    options: &Options,
    signals: &Signals,
) -> anyhow::Result<ExitCode> {
    let base = args.output.clone().unwrap_or_else(|| PathBuf::from("run"));
    let plan = || -> Result<SeriesPlan, String> {
        let (name, values) = series
            .split_once('=')
            .filter(|(n, v)| !n.is_empty() && !v.is_empty())
            .ok_or_else(|| format!("--series {series:?}: write NAME=V,... (batch=8,16,32)"))?;
        if !args
            .command
            .iter()
            .any(|a| a.to_string_lossy().contains("$p"))
        {
            return Err("--series: the command has no $p to stand for the value".into());
        }
        let patterns = args
            .sweep
            .events
            .iter()
            .map(|p| EventPattern::parse(p).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let values: Vec<String> = values.split(',').map(str::to_owned).collect();
        // Each run's report, named before it is made: a value given twice
        // or an output that cannot be written is refused before the first
        // run, not after the last.
        let runs: Vec<SeriesRun> = values
            .iter()
            .map(|v| SeriesRun::new(v.clone(), run_name(&base, v)))
            .collect();
        check_series(name, &runs, &patterns).map_err(|e| e.to_string())?;
        Ok((name.to_owned(), values, patterns, runs))
    };
    let (parameter, values, patterns, planned) = plan().map_err(Usage)?;
    let writing = Writing { force: args.force };
    let (table, plot) = (args.sweep.table.as_deref(), args.sweep.svg.as_deref());
    let outputs = crate::series_output::Outputs::checked(table, plot, &planned, writing)?;
    let mut runs = Vec::new();
    let mut status = 0;
    for value in &values {
        let command: Vec<OsString> = args
            .command
            .iter()
            .map(|a| match a.to_str() {
                Some(text) => OsString::from(text.replace("$p", value)),
                None => a.clone(),
            })
            .collect();
        let mut profile = NsysProfile::new(command);
        profile.output = Some(run_name(&base, value));
        if !args.quiet {
            crate::say(format_args!("{parameter}={value}:"));
        }
        let run = profile_and_convert(profile, args, options, signals)?;
        if status == 0 {
            status = run.status;
        }
        runs.push(SeriesRun::new(value.clone(), run.report));
    }
    let measured = measure_series(
        &parameter,
        &runs,
        &patterns,
        RangeNames::Recorded,
        &options.read,
        &mut |_| {},
    );
    let written = measured.and_then(|series| outputs.write(&series));
    match written {
        Ok(()) => Ok(ExitCode::from(status)),
        Err(Error::Interrupted { .. }) => {
            let stopped = "interrupted while measuring the series; nothing written";
            Err(Interrupted(stopped.into()).into())
        }
        Err(e) => Err(e.into()),
    }
}
