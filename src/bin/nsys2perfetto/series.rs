//! `series`: the time of chosen events across runs that differ in one parameter.

use std::path::PathBuf;
use std::process::ExitCode;

use nsys2perfetto::series::{check_series, measure_series, EventPattern, SeriesRun};
use nsys2perfetto::Error;

use crate::grouping::Grouping;
use crate::paths::Writing;
use crate::reading::{quiet_help, Reading};
use crate::series_output::Outputs;
use crate::signals::Signals;
use crate::{Interrupted, Usage};

/// Measure events across a series of runs: a CSV table and an SVG plot.
///
/// For each run (a report labelled with its value of one parameter) and
/// each event pattern: the count of matching events and their total, mean
/// and median duration. Patterns are regular expressions over event names,
/// prefixed with what they match: `kernel:` (the default: kernels by short or
/// demangled name, GPU time), `api:` (CUDA API calls), `cudnn:`, `cublas:`
/// (library calls), `nvtx:` (NVTX ranges, CPU time), `nvtx-gpu:` (NVTX ranges
/// projected onto the GPU).
///
/// Example: `series --param batch=8 a.sqlite --param batch=16 b.sqlite
/// --events sgemm nvtx:forward --svg plot.svg`
#[derive(clap::Args)]
#[command(mut_args(quiet_help("No progress lines; errors only")))]
pub struct Args {
    /// A run: its value of the parameter and its report (an SQLite export or
    /// a .nsys-rep/.qdrep report). Repeat for each run; every run names the
    /// same parameter.
    #[arg(long, num_args = 2, value_names = ["NAME=VALUE", "REPORT"],
          action = clap::ArgAction::Append)]
    param: Vec<String>,

    #[command(flatten)]
    template: Template,

    /// Event patterns, one row of the table and one line of the plot each.
    #[arg(long, required = true, num_args = 1.., value_name = "PATTERN")]
    events: Vec<String>,

    #[command(flatten)]
    grouping: Grouping,

    /// Where the CSV table goes (default, or -: standard output).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Also draw the plot of total time against the parameter, as SVG (-:
    /// to standard output, with the table in a file).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,

    #[command(flatten)]
    reading: Reading,

    #[command(flatten)]
    writing: Writing,
}

/// The runs as a template and its values, instead of --param.
#[derive(clap::Args)]
#[group(requires_all = ["pattern", "values"], conflicts_with = "param")]
struct Template {
    /// The reports of the runs, named by a template in which `$p` stands for
    /// the value (`run_$p.sqlite`); with --values.
    #[arg(long, value_name = "TEMPLATE")]
    pattern: Option<String>,

    /// The values `$p` of --pattern takes, in order.
    #[arg(long, value_name = "V,...", value_delimiter = ',')]
    values: Vec<String>,

    /// The name of the parameter with --pattern (default: p).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
}

pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    let (parameter, runs, patterns) = plan(&args).map_err(Usage)?;
    let outputs = Outputs::checked(
        args.output.as_deref(),
        args.svg.as_deref(),
        &runs,
        args.writing,
    )?;
    // A report that is not there fails the run before the first is measured.
    for run in &runs {
        crate::paths::present(&run.input)?;
    }
    let quiet = args.reading.quiet;
    crate::paths::note_untested(runs.iter().map(|r| &r.input), quiet);
    let options = (args.reading.read_options(signals)).with_on_unreadable(crate::on_unreadable());
    let mut progress = |run: &SeriesRun| {
        if !quiet {
            crate::say(format_args!(
                "{parameter}={}: {}",
                run.value,
                run.input.display()
            ));
        }
    };
    let names = args.grouping.range_names();
    let measured = measure_series(&parameter, &runs, &patterns, names, &options, &mut progress);
    let series = measured.map_err(|e| match e {
        Error::Interrupted { path } => Interrupted(format!(
            "interrupted while measuring {}; nothing written",
            path.display()
        ))
        .into(),
        // Refused before any report was read: a value given twice, say.
        e => crate::refused_option(e),
    })?;
    for (run, &left_out) in series.runs.iter().zip(&series.left_out) {
        if left_out > 0 {
            crate::warn(format_args!(
                "{}: {left_out} event(s) with times that cannot be right (ending before they \
                 start, or far past the capture's end): left out",
                run.input.display()
            ));
        }
    }
    outputs.write(&series)?;
    Ok(ExitCode::SUCCESS)
}

/// Neither way of naming the runs given: one of them is needed, not both.
const NO_RUNS: &str = "no runs: give --param NAME=VALUE REPORT for each run, \
                       or --pattern TEMPLATE with --values V,...";

/// The parameter, the runs and the patterns, or why the command line is wrong.
fn plan(args: &Args) -> Result<(String, Vec<SeriesRun>, Vec<EventPattern>), String> {
    let patterns = args
        .events
        .iter()
        .map(|p| EventPattern::parse(p).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let (parameter, runs) = match &args.template.pattern {
        Some(template) => {
            if !template.contains("$p") {
                return Err(format!(
                    "--pattern {template:?} has no $p to stand for the value"
                ));
            }
            let name = args.template.name.clone();
            let name = name.unwrap_or_else(|| "p".to_owned());
            (
                name,
                SeriesRun::from_template(template, &args.template.values),
            )
        }
        None if args.param.is_empty() => return Err(NO_RUNS.into()),
        None => {
            let mut parameter: Option<String> = None;
            let mut runs = Vec::new();
            for pair in args.param.chunks(2) {
                let [setting, report] = pair else {
                    return Err("--param takes NAME=VALUE and a report".into());
                };
                let Some((name, value)) = setting.split_once('=') else {
                    return Err(format!(
                        "--param {setting:?}: write NAME=VALUE (batch=8), then the report"
                    ));
                };
                match &parameter {
                    Some(first) if first != name => {
                        return Err(format!(
                            "--param names {first:?} and {name:?}: a series varies one parameter"
                        ))
                    }
                    _ => parameter = Some(name.to_owned()),
                }
                runs.push(SeriesRun::new(value, report));
            }
            (parameter.unwrap_or_default(), runs)
        }
    };
    check_series(&parameter, &runs, &patterns).map_err(|e| e.to_string())?;
    Ok((parameter, runs, patterns))
}
