//! Directories of reports: every export and report below them, each
//! converted by [`convert_file`] into a trace in a tree that mirrors theirs
//! (or beside it), several at a time. One failure does not stop the others.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::file::convert_file;
use super::input::SQLITE_MAGIC;
use super::new_directories::NewDirectories;
use super::output::OutputFile;
use crate::error::{Error, Result};
use crate::{Format, Options, Summary};

/// The extension of the exports a directory conversion reads.
const SQLITE: &str = "sqlite";
/// The extensions of the reports it reads, exporting them first.
const REPORTS: [&str; 2] = ["nsys-rep", "qdrep"];

/// One file of a directory conversion, and where its trace goes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TreeFile {
    /// The export or report.
    pub input: PathBuf,
    /// Its trace.
    pub output: PathBuf,
    /// The report beside `input`, an export at least as new as it: the
    /// export is converted in its place, with no need of nsys.
    pub export_of: Option<PathBuf>,
}

/// How the conversion of one file of a directory went.
#[derive(Debug)]
#[non_exhaustive]
pub struct TreeConversion {
    /// What the trace holds (its warnings included) and its size in bytes,
    /// or why there is no trace.
    pub result: Result<(Summary, u64)>,
    /// How long it took.
    pub took: Duration,
}

/// The files to convert of `inputs` (directories, and files among them):
/// every export and report below each directory, in name order, and the
/// files as they are. With `output` (a directory), each trace goes into it
/// at its input's place in the tree; without, beside its input.
///
/// Each trace is named after its input, with the extension of `format`. A
/// missing `output` directory is made when the first trace is written.
///
/// Refused before anything is converted: an `output` that is something
/// other than a directory, inputs with nothing to convert, and two inputs
/// whose traces would be one file.
pub fn files_below(
    inputs: &[PathBuf],
    output: Option<&Path>,
    format: Format,
) -> Result<Vec<TreeFile>> {
    if let Some(out) = output {
        if out.exists() && !out.is_dir() {
            return Err(Error::InvalidOption(format!(
                "{} is not a directory: with directories to convert, -o names the directory \
                 that mirrors their tree",
                out.display()
            )));
        }
    }
    let mut files = Vec::new();
    for input in inputs {
        let (root, found) = if input.is_dir() {
            let found = find_reports(input).map_err(|cause| Error::Unreadable {
                path: input.clone(),
                cause,
            })?;
            (input.as_path(), found)
        } else {
            (
                input.parent().unwrap_or(Path::new("")),
                vec![(input.clone(), None)],
            )
        };
        for (file, export_of) in found {
            let relative = file.strip_prefix(root).unwrap_or(&file).to_owned();
            let name = trace_name(&file, format);
            let target = match output {
                Some(out) => out.join(relative).with_file_name(name),
                None => file.with_file_name(name),
            };
            files.push(TreeFile {
                input: file,
                output: target,
                export_of,
            });
        }
    }
    if files.is_empty() {
        return Err(Error::NothingToConvert {
            below: inputs.to_vec(),
        });
    }
    // Two inputs of one name (a report and its .qdrep twin, or files of
    // two directories mirrored into one -o) would write one trace.
    let mut targets = std::collections::HashMap::new();
    for file in &files {
        if let Some(first) = targets.insert(file.output.clone(), &file.input) {
            return Err(Error::InvalidOption(format!(
                "{} and {} would both be written to {}; convert them separately, each with \
                 its own -o",
                first.display(),
                file.input.display(),
                file.output.display()
            )));
        }
    }
    Ok(files)
}

/// The trace of each of `files`, as the file it must not be: none of the
/// inputs of the conversion, and no report or export unless `force`.
fn outputs(files: &[TreeFile], force: bool) -> Vec<OutputFile> {
    let inputs: Vec<&Path> = files.iter().map(|f| f.input.as_path()).collect();
    files
        .iter()
        .map(|f| OutputFile::new(&f.output).inputs(&inputs).force(force))
        .collect()
}

/// Refuses, before anything is converted, `files` of which one's trace
/// would replace an input (through a link, say) or, unless `force`, a
/// report or export (see [`OutputFile::check_replacing`]).
pub fn check_outputs(files: &[TreeFile], force: bool) -> Result<()> {
    // Their directories are made as they are written.
    outputs(files, force)
        .iter()
        .try_for_each(OutputFile::check_replacing)
}

/// Converts `files` with [`convert_file`], `jobs` at a time, making the
/// directories their traces go into; a trace replaces a report or export
/// only with `force`, an input never. `done` hears of each file converted
/// (or failed), as it is. Once `options.cancel` is set, no file is started:
/// those are `None`. A directory made that no trace went into is removed.
pub fn convert_files(
    files: &[TreeFile],
    options: &Options,
    force: bool,
    jobs: usize,
    done: &(dyn Fn(&TreeFile, &TreeConversion) + Sync),
) -> Vec<Option<TreeConversion>> {
    let outputs = outputs(files, force);
    // Made as traces are written; those left empty (an interruption, a
    // failure) are removed at the end.
    let made = NewDirectories::missing(files.iter().filter_map(|f| f.output.parent()));
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Option<TreeConversion>>> =
        Mutex::new(std::iter::repeat_with(|| None).take(files.len()).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, files.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= files.len() || options.cancelled() {
                    break;
                }
                let file = &files[i];
                let started = Instant::now();
                let result = convert_one(file, &outputs[i], options);
                let outcome = TreeConversion {
                    result,
                    took: started.elapsed(),
                };
                done(file, &outcome);
                outcomes.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(outcome);
            });
        }
    });
    made.remove_empty();
    outcomes.into_inner().unwrap_or_else(|e| e.into_inner())
}

fn convert_one(file: &TreeFile, output: &OutputFile, options: &Options) -> Result<(Summary, u64)> {
    if let Some(dir) = file.output.parent() {
        std::fs::create_dir_all(dir).map_err(|cause| output.failed(cause))?;
    }
    let summary = convert_file(&file.input, output, options, &mut |_| {})?;
    let size = std::fs::metadata(&file.output).map_or(0, |m| m.len());
    Ok((summary, size))
}

/// The reports and exports `inputs` name, for the commands that read
/// several (`stats`, `report`): below each directory, every export and
/// report as [`files_below`] finds them (an export in place of its report
/// where it is at least as new), in name order; files as they are.
/// A directory with none is refused.
pub fn reports_in(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut reports = Vec::with_capacity(inputs.len());
    for input in inputs {
        if !input.is_dir() {
            reports.push(input.clone());
            continue;
        }
        let found = find_reports(input).map_err(|cause| Error::Unreadable {
            path: input.clone(),
            cause,
        })?;
        if found.is_empty() {
            return Err(Error::NothingToConvert {
                below: vec![input.clone()],
            });
        }
        reports.extend(found.into_iter().map(|(report, _)| report));
    }
    Ok(reports)
}

/// The trace's file name for `input`: its name, extension replaced by the
/// format's.
fn trace_name(input: &Path, format: Format) -> PathBuf {
    Path::new(input.file_name().unwrap_or(input.as_os_str())).with_extension(format.extension())
}

/// Every export and report below `dir`, in name order, each with the
/// report it stands for. A `.sqlite` whose report (same name, `.nsys-rep`
/// or `.qdrep`) sits beside it is that report's export: the export is
/// converted in the report's place when it is at least as new (its
/// modification time) and it starts as an SQLite file does, the report,
/// exported again, when it is older; never both. A `.sqlite` that is no
/// SQLite file stands for no report: the report is found, not hidden by
/// it (nor is it, whose name is the report's). Links to files are
/// followed; links to directories are not (no cycles).
pub(crate) fn find_reports(dir: &Path) -> std::io::Result<Vec<(PathBuf, Option<PathBuf>)>> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()?;
        entries.sort();
        for path in entries {
            let is_link = match std::fs::symlink_metadata(&path) {
                Ok(meta) => meta.file_type().is_symlink(),
                // Gone since the listing (a temporary file renamed into
                // place, as an upload or a conversion beside it ends): not
                // there, rather than the whole directory unreadable.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            if path.is_dir() {
                if !is_link {
                    dirs.push(path);
                }
                continue;
            }
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if ext == SQLITE {
                let report = REPORTS
                    .iter()
                    .map(|r| path.with_extension(r))
                    .find(|r| r.is_file());
                match report {
                    None => found.push((path, None)),
                    Some(report) if is_fresh_export(&path, &report) && is_sqlite(&path) => {
                        found.push((path, Some(report)))
                    }
                    Some(_) => {}
                }
            } else if REPORTS.contains(&ext) {
                let export = path.with_extension(SQLITE);
                if !(export.is_file() && is_fresh_export(&export, &path) && is_sqlite(&export)) {
                    found.push((path, None));
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Whether `path` starts as an SQLite file does: an export that may stand
/// for its report.
fn is_sqlite(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; SQLITE_MAGIC.len()];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == *SQLITE_MAGIC)
}

/// Whether `export` was written no earlier than `report` was: an export of
/// it as it is now, as far as the file times tell.
fn is_fresh_export(export: &Path, report: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified());
    match (modified(export), modified(report)) {
        (Ok(export), Ok(report)) => export >= report,
        _ => false,
    }
}
