//! The analyses of files: each input turned into a report the one way
//! ([`with_report`]: a report exported with `options.nsys` first, its
//! temporary export removed after), then analysed as an open report; runs
//! of several inputs read them in turn, and stop between two once
//! `options.cancel` is set. The analyses themselves (`crate::analysis`)
//! take an open report and options of their own.

use std::path::{Path, PathBuf};

use super::with_report;
use crate::analysis::analyze::{analyze, Findings, Rule, Thresholds};
use crate::analysis::gpu_time::{report, Page, ReportOptions, RunReport};
use crate::analysis::series::{
    check_series, measure_counting, EventPattern, Series, SeriesCell, SeriesRun,
};
use crate::analysis::stats::{run_summary_with, summarize_with, RunSummary, StatsReport, Table};
use crate::analysis::steps::{Job, JobSteps, ReportSteps, StepOptions, StepPattern};
use crate::error::{Error, Result};
use crate::nsys::names::RangeNames;
use crate::nsys::ReadOptions;
use crate::nsys::Report;

/// [`summarize`](crate::stats::summarize) for the report or export at
/// `input` (a report is exported with `options.nsys` first;
/// `options.cancel` stops it), NVTX ranges named as `names` says.
pub fn summarize_file(
    input: &Path,
    which: &[StatsReport],
    names: RangeNames,
    options: &ReadOptions,
) -> Result<Vec<Table>> {
    with_report(input, options, |report| {
        summarize_with(report, which, names)
    })
}

/// The summaries of `a` and `b` that [`compare`](crate::compare::compare)
/// compares, each a report or an export, NVTX ranges named as `names` says.
pub fn compare_files(
    a: &Path,
    b: &Path,
    names: RangeNames,
    options: &ReadOptions,
) -> Result<(RunSummary, RunSummary)> {
    let summary = |report: &Report| run_summary_with(report, names);
    let a = with_report(a, options, summary)?;
    let b = with_report(b, options, summary)?;
    Ok((a, b))
}

/// [`analyze`] on the report at `path`: an SQLite export, or an
/// `.nsys-rep`/`.qdrep` report, exported first to a temporary file with
/// `options.nsys`. Once `options.cancel` is set, it stops soon after with
/// [`Error::Interrupted`].
pub fn analyze_file(
    path: &Path,
    rules: &[Rule],
    thresholds: &Thresholds,
    options: &ReadOptions,
) -> Result<Findings> {
    with_report(path, options, |report| analyze(report, rules, thresholds))
}

/// [`report()`] of the report or export at `path` (a report is exported
/// with `options.nsys` first; `options.cancel` stops it).
pub fn report_file(
    path: &Path,
    report_options: &ReportOptions,
    options: &ReadOptions,
) -> Result<RunReport> {
    with_report(path, options, |r| run_report(r, path, report_options))
}

/// [`report()`] of the open report `r`, read from `path`: the run is named
/// by its path as given.
fn run_report(r: &Report, path: &Path, report_options: &ReportOptions) -> Result<RunReport> {
    let mut run = report(r, report_options)?;
    run.path = path.display().to_string();
    Ok(run)
}

/// The page of the reports or exports at `inputs`, each read once (a
/// report is exported with `options.nsys` first; `options.cancel` stops
/// the work); `progress` hears of each input as it starts. With
/// [`ReportOptions::steps`], an input may also be a report's steps measured
/// on their own (a file of [`ReportSteps`](crate::steps::ReportSteps)
/// documents, recognised by its content): its ranks join the job's in its
/// place, and it has no run of its own on the page.
pub fn report_files(
    inputs: &[PathBuf],
    report_options: &ReportOptions,
    options: &ReadOptions,
    progress: &mut dyn FnMut(&Path),
) -> Result<Page> {
    let mut measured = Vec::with_capacity(inputs.len());
    for input in inputs {
        let steps = ReportSteps::read_file(input)?;
        if steps.is_some() && report_options.steps.is_none() {
            return Err(Error::InvalidOption(format!(
                "{} holds measured steps: combine them with --step PATTERN",
                input.display()
            )));
        }
        measured.push(steps);
    }
    let reports = measured
        .iter()
        .map(|m| m.as_ref().map_or(1, Vec::len))
        .sum();
    let mut job = match &report_options.steps {
        Some(steps) => Some(Job::new(steps, reports)?),
        None => None,
    };
    let mut runs = Vec::with_capacity(inputs.len());
    let mut place = 0;
    for (input, measured) in inputs.iter().zip(measured) {
        options.stop_if_cancelled(input)?;
        progress(input);
        if let (Some(measured), Some(job)) = (measured, &mut job) {
            for steps in measured {
                job.add_measured(steps, place, input)?;
                place += 1;
            }
            continue;
        }
        let run = with_report(input, options, |r| {
            let run = run_report(r, input, report_options)?;
            if let Some(job) = &mut job {
                job.add(r, input, place)?;
            }
            Ok(run)
        })?;
        place += 1;
        runs.push(run);
    }
    Ok(Page {
        runs,
        steps: job.map(Job::finish),
    })
}

/// Measures each run of a series, in turn, streaming over its report;
/// `progress` hears of each run as it starts. NVTX ranges are matched by
/// the names `names` gives them; `options` gives the nsys CLI that exports
/// reports and the flag that stops the work.
pub fn measure_series(
    parameter: &str,
    runs: &[SeriesRun],
    patterns: &[EventPattern],
    names: RangeNames,
    options: &ReadOptions,
    progress: &mut dyn FnMut(&SeriesRun),
) -> Result<Series> {
    check_series(parameter, runs, patterns)?;
    let mut cells = vec![Vec::with_capacity(runs.len()); patterns.len()];
    let mut incomplete = Vec::new();
    let mut left_out = Vec::with_capacity(runs.len());
    for run in runs {
        options.stop_if_cancelled(&run.input)?;
        progress(run);
        let (measured, run_left_out, unread) = measure_file(&run.input, patterns, names, options)?;
        left_out.push(run_left_out);
        for (row, cell) in cells.iter_mut().zip(measured) {
            row.push(cell);
        }
        incomplete.extend(unread.iter().map(|u| {
            let why = u.warning(crate::nsys::NOT_READ);
            format!("{parameter}={} ({}): {why}", run.value, run.input.display())
        }));
    }
    Ok(Series {
        parameter: parameter.to_owned(),
        runs: runs.to_vec(),
        patterns: patterns.to_vec(),
        cells,
        incomplete,
        left_out,
    })
}

/// Measures the report or export at `input`, exporting a report with nsys
/// into a temporary directory first; with the tables it could not read.
fn measure_file(
    input: &Path,
    patterns: &[EventPattern],
    names: RangeNames,
    options: &ReadOptions,
) -> Result<(Vec<SeriesCell>, u64, Vec<crate::Unreadable>)> {
    with_report(input, options, |report| {
        let (cells, left_out) = measure_counting(report, patterns, names)?;
        Ok((cells, left_out, report.unreadable()))
    })
}

/// Measures the steps of the reports or exports at `inputs`, each in turn
/// (`.nsys-rep`/`.qdrep` reports exported with `options.nsys` first);
/// `progress` hears of each as it starts.
pub fn measure_steps(
    inputs: &[PathBuf],
    steps: &StepOptions,
    options: &ReadOptions,
    progress: &mut dyn FnMut(&Path),
) -> Result<JobSteps> {
    let mut job = Job::new(steps, inputs.len())?;
    for (place, input) in inputs.iter().enumerate() {
        options.stop_if_cancelled(input)?;
        progress(input);
        with_report(input, options, |report| job.add(report, input, place))?;
    }
    Ok(job.finish())
}

/// Measures the steps of the report or export at `input` on its own: the
/// per-report part of [`measure_steps`], which a worker computes and
/// returns as data ([`ReportSteps`]) for
/// [`combine_steps`](crate::steps::combine_steps).
pub fn measure_report_steps(
    input: &Path,
    pattern: &StepPattern,
    options: &ReadOptions,
) -> Result<ReportSteps> {
    with_report(input, options, |report| {
        ReportSteps::measure(report, input, pattern)
    })
}
