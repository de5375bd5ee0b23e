//! `convert DIR...`: every report below some directories, converted in
//! parallel, with one progress bar and a table at the end.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use nsys2perfetto::{convert_file, Error, Format, Options, Summary};

use crate::signals::Signals;
use crate::{human_bytes, INTERRUPTED, USAGE};

/// The extensions of what `convert` reads: exports, and reports it exports first.
const SQLITE: &str = "sqlite";
const REPORTS: [&str; 2] = ["nsys-rep", "qdrep"];

/// One file to convert, and where its trace goes.
struct Job {
    input: PathBuf,
    output: PathBuf,
}

/// How one conversion went.
struct Outcome {
    result: Result<(Summary, u64), Error>,
    took: Duration,
}

/// Converts every report and export below the directories among `inputs`
/// (and the files among them), `jobs` at a time; with `output`, the traces
/// go into that directory in the inputs' tree, else beside each input.
pub fn run(
    inputs: &[PathBuf],
    output: Option<&Path>,
    options: &Options,
    jobs: Option<usize>,
    quiet: bool,
    signals: &Signals,
) -> ExitCode {
    if let Some(out) = output {
        let why = "with directories to convert, -o names the directory that mirrors their tree";
        if let Err(refusal) = crate::convert::check_directory(out, why) {
            crate::print_error(&crate::Usage(refusal).into());
            return ExitCode::from(USAGE);
        }
    }
    let mut work = Vec::new();
    for input in inputs {
        let found = if input.is_dir() {
            find_reports(input)
        } else {
            Ok(vec![input.clone()])
        };
        let found = match found {
            Ok(found) => found,
            Err(e) => {
                eprintln!("nsys2perfetto: error: {}: {e}", input.display());
                return ExitCode::FAILURE;
            }
        };
        let root = if input.is_dir() {
            input.as_path()
        } else {
            input.parent().unwrap_or(Path::new(""))
        };
        for file in found {
            let relative = file.strip_prefix(root).unwrap_or(&file).to_owned();
            let name = trace_name(&file, options.format);
            let target = match output {
                Some(out) => out.join(relative).with_file_name(name),
                None => file.with_file_name(name),
            };
            work.push(Job {
                input: file,
                output: target,
            });
        }
    }
    if work.is_empty() {
        eprintln!(
            "nsys2perfetto: error: no .sqlite, .nsys-rep or .qdrep file below {}",
            inputs
                .iter()
                .map(|i| i.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return ExitCode::FAILURE;
    }
    // Two inputs of one name (a report and its .qdrep twin, or files of
    // two directories mirrored into one -o) would write one trace.
    let mut targets = std::collections::HashMap::new();
    for job in &work {
        if let Some(first) = targets.insert(job.output.clone(), &job.input) {
            eprintln!(
                "nsys2perfetto: error: {} and {} would both be written to {}; \
                 convert them separately, each with its own -o",
                first.display(),
                job.input.display(),
                job.output.display()
            );
            return ExitCode::from(USAGE);
        }
    }
    let jobs = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, work.len());
    let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(work.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} files, {elapsed} elapsed")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_message(format!("converting {jobs} at a time"));
        bar
    });
    let outcomes = convert_all(&work, options, jobs, bar.as_ref());
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if let Some(status) = signals.received() {
        eprintln!("nsys2perfetto: interrupted; traces not yet complete were not written");
        return ExitCode::from(status);
    }
    let failed = outcomes
        .iter()
        .filter(|o| o.as_ref().is_none_or(|o| o.result.is_err()))
        .count();
    if !quiet || failed > 0 {
        print_table(&work, &outcomes);
    }
    match failed {
        0 => ExitCode::SUCCESS,
        _ if outcomes
            .iter()
            .flatten()
            .any(|o| matches!(o.result, Err(Error::Interrupted { .. }))) =>
        {
            ExitCode::from(INTERRUPTED)
        }
        _ => ExitCode::FAILURE,
    }
}

/// Converts `work` on `jobs` threads; one failure does not stop the others.
/// `None` for a file left unconverted (after an interruption).
fn convert_all(
    work: &[Job],
    options: &Options,
    jobs: usize,
    bar: Option<&ProgressBar>,
) -> Vec<Option<Outcome>> {
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Option<Outcome>>> =
        Mutex::new(std::iter::repeat_with(|| None).take(work.len()).collect());
    let cancelled = || {
        options
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    };
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= work.len() || cancelled() {
                    break;
                }
                let job = &work[i];
                let started = Instant::now();
                let result = convert_one(job, options);
                let outcome = Outcome {
                    result,
                    took: started.elapsed(),
                };
                outcomes.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(outcome);
                if let Some(bar) = bar {
                    bar.inc(1);
                }
            });
        }
    });
    outcomes.into_inner().unwrap_or_else(|e| e.into_inner())
}

fn convert_one(job: &Job, options: &Options) -> Result<(Summary, u64), Error> {
    if let Some(dir) = job.output.parent() {
        std::fs::create_dir_all(dir).map_err(|cause| Error::Output {
            path: job.output.clone(),
            cause,
        })?;
    }
    let summary = convert_file(&job.input, &job.output, options, &mut |_| {})?;
    let size = std::fs::metadata(&job.output).map_or(0, |m| m.len());
    Ok((summary, size))
}

/// The trace's file name for `input`: its name, extension replaced by the
/// format's.
fn trace_name(input: &Path, format: Format) -> PathBuf {
    Path::new(input.file_name().unwrap_or(input.as_os_str()))
        .with_extension(crate::conversion::trace_extension(format))
}

/// Every export and report below `dir`, in name order. A `.sqlite` whose
/// report (same name, `.nsys-rep` or `.qdrep`) sits beside it is that
/// report's export: the report is converted, not both. Links to files are
/// followed; links to directories are not (no cycles).
fn find_reports(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        for path in entries {
            let is_link = std::fs::symlink_metadata(&path)?.file_type().is_symlink();
            if path.is_dir() {
                if !is_link {
                    dirs.push(path);
                }
                continue;
            }
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let beside_report = || REPORTS.iter().any(|r| path.with_extension(r).is_file());
            if REPORTS.contains(&ext) || (ext == SQLITE && !beside_report()) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The events a trace holds: slices, samples, switches and counter values.
fn events(s: &Summary) -> u64 {
    s.slices.values().sum::<u64>() + s.cpu_samples + s.sched_events + s.counter_values
}

fn print_table(work: &[Job], outcomes: &[Option<Outcome>]) {
    let rows: Vec<[String; 4]> = work
        .iter()
        .zip(outcomes)
        .map(|(job, outcome)| {
            let file = job.input.display().to_string();
            match outcome {
                None => [file, "-".into(), "-".into(), "not converted".into()],
                Some(Outcome {
                    result: Ok((summary, size)),
                    took,
                }) => [
                    file,
                    events(summary).to_string(),
                    human_bytes(*size),
                    format!("{:.2}s", took.as_secs_f64()),
                ],
                Some(Outcome {
                    result: Err(e),
                    took,
                }) => [
                    file,
                    "-".into(),
                    "-".into(),
                    format!("{:.2}s  error: {e}", took.as_secs_f64()),
                ],
            }
        })
        .collect();
    let header = ["file", "events", "size", "time"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2) = (width(0), width(1), width(2));
    eprintln!(
        "{:<w0$}  {:>w1$}  {:>w2$}  {}",
        header[0], header[1], header[2], header[3]
    );
    for r in &rows {
        eprintln!("{:<w0$}  {:>w1$}  {:>w2$}  {}", r[0], r[1], r[2], r[3]);
    }
    let failed = outcomes
        .iter()
        .filter(|o| o.as_ref().is_none_or(|o| o.result.is_err()))
        .count();
    eprintln!("{} converted, {failed} failed", outcomes.len() - failed);
}
