//! `convert DIR...`: every report below some directories, converted in
//! parallel, with one progress bar, each file's warnings, and a table at the
//! end.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};

use nsys2perfetto::directories::{
    check_outputs, convert_files, files_below, TreeConversion, TreeFile,
};
use nsys2perfetto::{Error, Options};

use crate::paths::Writing;
use crate::signals::Signals;
use crate::{human_bytes, note, refused_option, warn, Interrupted, INTERRUPTED};

/// Converts every report and export below the directories among `inputs`
/// (and the files among them), `jobs` at a time; with `output`, the traces
/// go into that directory in the inputs' tree, else beside each input,
/// replacing a report or export there only as `writing` says.
pub fn run(
    inputs: &[PathBuf],
    output: Option<&Path>,
    options: &Options,
    jobs: Option<usize>,
    quiet: bool,
    writing: Writing,
    signals: &Signals,
) -> anyhow::Result<ExitCode> {
    if output.is_some_and(nsys2perfetto::is_standard_output) {
        return Err(crate::Usage(
            "-o - writes one trace to standard output, and directories hold several reports: \
             give -o DIR/ for their traces"
                .into(),
        )
        .into());
    }
    if let Some(out) = output {
        let why = "with directories to convert, -o names the directory that mirrors their tree";
        crate::paths::check_directory(out, why).map_err(crate::Usage)?;
    }
    let files = files_below(inputs, output, options.format).map_err(refused_option)?;
    check_outputs(&files, writing.force).map_err(|e| crate::Usage(e.to_string()))?;
    crate::paths::note_untested(files.iter().map(|f| &f.input), quiet);
    let jobs = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, files.len());
    let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(files.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} files, {elapsed} elapsed")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_message(format!("converting {jobs} at a time"));
        bar
    });
    let outcomes = convert_files(&files, options, writing.force, jobs, &|_, _| {
        if let Some(bar) = &bar {
            bar.inc(1);
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if signals.received().is_some() {
        let stopped = "interrupted; traces not yet complete were not written";
        return Err(Interrupted(stopped.to_owned()).into());
    }
    if !quiet {
        for file in &files {
            if let Some(report) = &file.export_of {
                note(format_args!(
                    "{}: converted from its export {}, as new as the report (an older export \
                     is exported again from the report)",
                    report.display(),
                    file.input.display()
                ));
            }
        }
        for (file, outcome) in files.iter().zip(&outcomes) {
            for warning in warnings(outcome) {
                warn(format_args!("{}: {warning}", file.input.display()));
            }
        }
    }
    let failed = outcomes
        .iter()
        .filter(|o| o.as_ref().is_none_or(|o| o.result.is_err()))
        .count();
    if !quiet || failed > 0 {
        print_table(&files, &outcomes);
    }
    Ok(match failed {
        0 => ExitCode::SUCCESS,
        _ if outcomes
            .iter()
            .flatten()
            .any(|o| matches!(o.result, Err(Error::Interrupted { .. }))) =>
        {
            ExitCode::from(INTERRUPTED)
        }
        _ => ExitCode::FAILURE,
    })
}

/// The warnings of a file's conversion: none where it failed.
fn warnings(outcome: &Option<TreeConversion>) -> Vec<String> {
    match outcome {
        Some(TreeConversion {
            result: Ok((summary, _)),
            ..
        }) => summary.warnings(),
        _ => Vec::new(),
    }
}

/// The events a trace holds: slices, samples, switches and counter values.
fn events(s: &nsys2perfetto::Summary) -> u64 {
    s.slices.values().sum::<u64>() + s.cpu_samples + s.sched_events + s.counter_values
}

fn print_table(files: &[TreeFile], outcomes: &[Option<TreeConversion>]) {
    let rows: Vec<[String; 5]> = files
        .iter()
        .zip(outcomes)
        .map(|(file, outcome)| {
            let name = file.input.display().to_string();
            let warned = warnings(outcome).len().to_string();
            match outcome {
                None => [
                    name,
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "not converted".into(),
                ],
                Some(TreeConversion {
                    result: Ok((summary, size)),
                    took,
                    ..
                }) => [
                    name,
                    events(summary).to_string(),
                    human_bytes(*size),
                    warned,
                    format!("{:.2}s", took.as_secs_f64()),
                ],
                Some(TreeConversion {
                    result: Err(e),
                    took,
                    ..
                }) => [
                    name,
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    format!("{:.2}s  error: {e}", took.as_secs_f64()),
                ],
            }
        })
        .collect();
    let header = ["file", "events", "size", "warnings", "time"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2, w3) = (width(0), width(1), width(2), width(3));
    let line = |r: [&str; 5]| {
        eprintln!(
            "{:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}  {}",
            r[0], r[1], r[2], r[3], r[4]
        );
    };
    line(header);
    for r in &rows {
        line([&r[0], &r[1], &r[2], &r[3], &r[4]]);
    }
    let failed = outcomes
        .iter()
        .filter(|o| o.as_ref().is_none_or(|o| o.result.is_err()))
        .count();
    eprintln!("{} converted, {failed} failed", outcomes.len() - failed);
}
