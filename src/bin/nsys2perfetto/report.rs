//! `report`: where the GPU time of each run went, on one page.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use nsys2perfetto::directories::reports_in;
use nsys2perfetto::merge::{Labels, RankPattern};
use nsys2perfetto::report::{
    report_files, save_page, write_page, KindPattern, PageFormat, ReportOptions,
};
use nsys2perfetto::steps::{measure_report_steps, save_report_steps, StepOptions, StepPattern};
use nsys2perfetto::{
    is_standard_output, output_format, NewDirectories, OutputFile, OutputSet, ReadOptions,
};

use crate::flags::parse_rank_pattern;
use crate::interrupted_reading;
use crate::paths::Writing;
use crate::reading::{quiet_help, Reading};
use crate::signals::Signals;
use crate::Usage;

/// One page per run: per GPU, busy time and idle time (host-bound or
/// waiting) with the longest idle stretches and what the CPU threads did
/// then; GPU time by kind of kernel; communication overlapped by
/// computation; launch delays; the top kernels and NVTX scopes; the
/// findings of `analyze`. Several reports: a section each, and with
/// `--step`, the job they make: per step each rank's time and GPU busy time,
/// the slowest rank and the skew.
#[derive(clap::Args)]
#[command(mut_args(quiet_help("Errors only: not the line that says where the page went")))]
pub struct Args {
    /// Nsight Systems SQLite exports, or reports (.nsys-rep, .qdrep), which
    /// are exported first with the nsys CLI; or directories, whose every
    /// export and report below is a run, as `convert` finds them. With
    /// --step, also files of steps measured by --measure-only, in place of
    /// their reports.
    #[arg(required = true, value_name = "REPORT")]
    inputs: Vec<PathBuf>,

    /// Write the page to this file (.html, .md or .json) instead of
    /// printing Markdown.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// html (self-contained, with charts), md (Markdown) or json (one
    /// object, for programs). Default: by the output's extension, else md;
    /// a format the extension contradicts is refused.
    #[arg(long, value_name = "FORMAT")]
    format: Option<PageFormat>,

    /// A kind of kernel of your own, matched before the built-in ones:
    /// NAME=REGEX (case-insensitive, anywhere in the kernel's name); may be
    /// given more than once.
    #[arg(long = "kind", value_name = "NAME=REGEX")]
    kinds: Vec<KindPattern>,

    /// The job's steps: the NVTX ranges whose names match this glob (`*`
    /// any text, `?` one character; e.g. 'ProfilerStep*'), each report a
    /// rank (each process with steps, where a report holds several). Steps
    /// are matched across ranks by name where names carry an index, else
    /// by order.
    #[arg(long, value_name = "PATTERN", value_parser = parse_step)]
    step: Option<StepPattern>,

    /// With --step, where a report's MPI_RANKS table does not give its rank:
    /// take it from the file name with this regex (its first group, or the
    /// whole match), as `merge` does; else the file's place, from 0.
    #[arg(long, value_name = "REGEX", requires = "step", value_parser = parse_rank_pattern)]
    rank_from_name: Option<RankPattern>,

    /// With --step: only measure each report's steps, and write them as
    /// data for `report --step` to combine later in place of the reports
    /// (JSON, "kind": "nsys2perfetto.rank-steps"): a line per report (JSON
    /// Lines) to standard output or -o FILE; with -o DIR, an existing
    /// directory, a file per report, DIR/NAME.steps.json after the report's
    /// file name. Ranks are named when combined.
    #[arg(long, requires = "step", conflicts_with_all = ["format", "kinds", "rank_from_name"])]
    measure_only: bool,

    #[command(flatten)]
    writing: Writing,

    #[command(flatten)]
    reading: Reading,
}

pub fn run(mut args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    // A directory is the reports below it, as `convert` finds them.
    args.inputs = reports_in(&args.inputs)?;
    if args.measure_only {
        return measure_only(args, signals);
    }
    let output = args.output.as_deref().filter(|p| p.as_os_str() != "-");
    let format = output_format(args.format, output, PageFormat::Markdown)
        .map_err(|e| Usage(e.to_string()))?;
    let file = match output {
        Some(path) if args.format.is_none() && PageFormat::of_name(path).is_none() => {
            return Err(Usage(format!(
                "{}: which format? Name it .html, .md or .json, or give --format",
                path.display()
            ))
            .into())
        }
        Some(path) => Some(args.writing.output(path, &args.inputs)?),
        None => None,
    };
    for input in &args.inputs {
        crate::paths::present(input)?;
    }
    crate::paths::note_untested(&args.inputs, args.reading.quiet);
    let options = (args.reading.read_options(signals)).with_on_unreadable(crate::on_unreadable());
    let mut report_options = ReportOptions::default();
    report_options.kinds = args.kinds;
    report_options.steps = args.step.map(|pattern| {
        let mut steps = StepOptions::new(pattern);
        steps.labels = Labels::Ranks {
            from_name: args.rank_from_name,
        };
        steps
    });
    let page = report_files(&args.inputs, &report_options, &options, &mut |_| {})
        .map_err(interrupted_reading)?;
    for run in &page.runs {
        for warning in run.warnings() {
            crate::warn(format_args!("{}: {warning}", run.path));
        }
    }
    match &file {
        Some(file) => {
            save_page(file, &page, format)?;
            if !args.reading.quiet {
                crate::say(format_args!(
                    "{} run(s) -> {}",
                    page.runs.len(),
                    file.path().display()
                ));
            }
        }
        None => {
            let mut text = Vec::new();
            write_page(&mut text, &page, format).expect("writing to memory");
            let mut out = std::io::stdout().lock();
            out.write_all(&text)
                .and_then(|()| out.flush())
                .context("cannot write standard output")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Where `--measure-only` writes.
enum Measured {
    /// JSON Lines to standard output.
    Stdout,
    /// JSON Lines into one file.
    File(OutputFile),
    /// A file per report, in a directory that may have to be made.
    Files(Vec<OutputFile>, NewDirectories),
}

/// `report --step P --measure-only`: each report's steps as data, written
/// as each is measured (to a file of its own) or once all are (one file).
fn measure_only(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    let pattern = args.step.clone().expect("--measure-only requires --step");
    let out = match args.output.clone() {
        None => Measured::Stdout,
        Some(path) if is_standard_output(&path) => Measured::Stdout,
        // A directory, as `convert -o` takes one: an existing one, or one
        // named with a trailing / (made, with its missing parents).
        Some(dir) if dir.is_dir() || crate::paths::names_directory(&dir) => {
            let why = "a trailing / names a directory";
            crate::paths::check_directory(&dir, why).map_err(Usage)?;
            let paths: Vec<PathBuf> = args
                .inputs
                .iter()
                .map(|input| {
                    let name = input.file_name().unwrap_or(input.as_os_str());
                    dir.join(Path::new(name).with_extension("steps.json"))
                })
                .collect();
            for (i, path) in paths.iter().enumerate() {
                if let Some(j) = paths[..i].iter().position(|p| p == path) {
                    return Err(crate::Usage(format!(
                        "{} and {} would both be measured into {}: give their steps a \
                         directory each, or -o FILE for all in one",
                        args.inputs[j].display(),
                        args.inputs[i].display(),
                        path.display()
                    ))
                    .into());
                }
            }
            let files = paths
                .iter()
                .map(|path| {
                    let file = OutputFile::new(path).inputs(&args.inputs);
                    let file = file.force(args.writing.force);
                    file.check_replacing().map_err(|e| Usage(e.to_string()))?;
                    Ok(file)
                })
                .collect::<Result<Vec<_>, Usage>>()?;
            Measured::Files(files, NewDirectories::missing([dir.as_path()]))
        }
        Some(path) => Measured::File(args.writing.output(&path, &args.inputs)?),
    };
    for input in &args.inputs {
        crate::paths::present(input)?;
    }
    crate::paths::note_untested(&args.inputs, args.reading.quiet);
    let options = (args.reading.read_options(signals))
        .with_on_unreadable(crate::on_unreadable())
        // `report` counts them in its runs' warnings; measured alone, here.
        .with_on_impossible_times(crate::on_impossible_times());
    if let Measured::Files(files, made) = &out {
        made.make().map_err(|cause| {
            let dir = files[0].path().parent().unwrap_or(Path::new("."));
            let path = dir.to_owned();
            nsys2perfetto::Error::Output { path, cause }
        })?;
    }
    let measured = measure_each(&args, &pattern, &out, &options, signals);
    if let Measured::Files(_, made) = &out {
        made.remove_empty();
    }
    let written = measured?;
    if !args.reading.quiet {
        match &out {
            Measured::File(file) => crate::say(format_args!(
                "{written} report(s) -> {}",
                file.path().display()
            )),
            Measured::Files(files, _) => {
                if let Some(dir) = files.first().and_then(|f| f.path().parent()) {
                    crate::say(format_args!("{written} report(s) -> {}", dir.display()));
                }
            }
            Measured::Stdout => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Measures each report's steps and writes them where `out` says: to
/// standard output as each is measured, or, all measured, to one file or a
/// file each (all or none). Returns how many reports were measured.
fn measure_each(
    args: &Args,
    pattern: &StepPattern,
    out: &Measured,
    options: &ReadOptions,
    signals: &Signals,
) -> anyhow::Result<usize> {
    let mut all = Vec::new();
    let mut set = OutputSet::new();
    for (i, input) in args.inputs.iter().enumerate() {
        if signals.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            let path = input.clone();
            return Err(interrupted_reading(nsys2perfetto::Error::Interrupted {
                path,
            }));
        }
        let steps = measure_report_steps(input, pattern, options).map_err(interrupted_reading)?;
        match out {
            Measured::Stdout => {
                let mut stdout = std::io::stdout().lock();
                steps
                    .write_json(&mut stdout)
                    .and_then(|()| stdout.flush())
                    .context("cannot write standard output")?;
            }
            Measured::File(_) => all.push(steps),
            Measured::Files(files, _) => set.write_with(&files[i], |out| steps.write_json(out))?,
        }
    }
    match out {
        Measured::File(file) => save_report_steps(file, &all)?,
        Measured::Files(..) => {
            set.publish()?;
        }
        Measured::Stdout => {}
    }
    Ok(args.inputs.len())
}

/// `--step`'s glob, or why it is none, in one line.
fn parse_step(s: &str) -> Result<StepPattern, String> {
    StepPattern::new(s).map_err(|e| e.to_string())
}
