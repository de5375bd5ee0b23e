//! `convert`: reports in, traces out.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use nsys2perfetto::{
    convert_file, convert_to_writer, Error, NewDirectories, Options, OutputFile, Progress,
};

use crate::conversion::Conversion;
use crate::paths::{check_directory, names_directory, Writing};
use crate::reading::{quiet_help, Reading};
use crate::signals::Signals;
use crate::{human_bytes, Interrupted, Usage};

/// Convert reports into gzipped Perfetto traces for ui.perfetto.dev and trace_processor.
///
/// Every CUDA API call, kernel, memcpy, memset, synchronization and NVTX event
/// becomes a slice, with a flow from each launch to the GPU work it launched.
/// The output is written to a temporary file and renamed when complete; an
/// interrupted conversion (Ctrl-C, SIGTERM) leaves nothing behind.
#[derive(clap::Args)]
#[command(mut_args(quiet_help("No progress bar and no summary; errors only")))]
pub struct Args {
    /// Nsight Systems SQLite exports (`nsys export --type sqlite`), or reports
    /// (.nsys-rep, .qdrep), which are exported first with the nsys CLI; or
    /// directories, whose every export and report below is converted (-o
    /// then names a directory that mirrors their tree).
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,

    /// With directories: how many files to convert at once (default: the
    /// number of cores).
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,

    /// Output file (default: INPUT with extension .perfetto-trace, or .json
    /// with --format json), or a directory to write each trace into (the only
    /// choice with several inputs; one named with a trailing / is made, with
    /// any missing parent, as `mkdir -p` does), or - for standard output.
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,

    #[command(flatten)]
    reading: Reading,

    #[command(flatten)]
    writing: Writing,

    // Last: the heading its filters set would carry on to the flags after
    // them in `--help` (clap applies a flattened group's heading onwards).
    #[command(flatten)]
    conversion: Conversion,
}

/// Converts each input in turn; one that fails does not stop the others
/// (its error is printed, and the exit status is 1).
pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    let Args {
        inputs,
        output,
        conversion,
        reading: Reading { exporter, quiet },
        jobs,
        writing,
    } = args;
    let encoding = conversion.encoding.clone();
    let mut options = conversion.options().map_err(|e| Usage(e.to_string()))?;
    options.read = exporter.read_options(signals);
    // The name of the one trace that -o names (not a directory, not -).
    let named = output.as_deref().filter(|o| {
        *o != Path::new("-") && !o.is_dir() && !names_directory(o) && inputs.len() == 1
    });
    let batch = inputs.iter().any(|i| i.is_dir());
    encoding
        .apply(&mut options, named.filter(|_| !batch))
        .map_err(Usage)?;
    let extension = options.format.extension();
    if batch {
        let jobs = jobs.map(usize::from);
        return crate::batch::run(
            &inputs,
            output.as_deref(),
            &options,
            jobs,
            quiet,
            writing,
            signals,
        );
    }
    let (targets, made) = plan(&inputs, output.as_deref(), extension, writing).map_err(Usage)?;
    crate::paths::note_untested(&inputs, quiet);
    let converted = convert_each(
        &inputs,
        &targets,
        &options,
        quiet,
        output.is_none(),
        signals,
    );
    // A directory of -o that no trace went into (an interruption, a
    // failure) is not left behind.
    made.remove_empty();
    converted
}

/// Converts each input into its target; one that fails does not stop the
/// others (its error is printed, and the exit status is 1).
fn convert_each(
    inputs: &[PathBuf],
    targets: &[Target],
    options: &Options,
    quiet: bool,
    beside_input: bool,
    signals: &Signals,
) -> anyhow::Result<ExitCode> {
    let mut failed = false;
    for (input, target) in inputs.iter().zip(targets) {
        if signals.received().is_some() {
            let stopped = format!("interrupted before converting {}", input.display());
            return Err(Interrupted(stopped).into());
        }
        match convert_one(input, target, options, quiet) {
            Ok(()) => {}
            Err(e @ Error::Interrupted { .. }) => return Err(e.into()),
            // Its error is the run's (and standard output's reader gone
            // ends it quietly).
            Err(e) if inputs.len() == 1 => return Err(hinted(e, beside_input)),
            Err(e) => {
                crate::print_error(&hinted(e, beside_input));
                failed = true;
            }
        }
    }
    // A signal after the last trace was written interrupted nothing.
    Ok(match failed {
        true => ExitCode::FAILURE,
        false => ExitCode::SUCCESS,
    })
}

/// `e`, with what to do about it where the command line can fix it.
fn hinted(e: Error, beside_input: bool) -> anyhow::Error {
    match hint(&e, beside_input) {
        "" => e.into(),
        hint => anyhow::anyhow!("{e}{hint}"),
    }
}

/// What to do about an error that the command line can fix.
fn hint(e: &Error, beside_input: bool) -> &'static str {
    use std::io::ErrorKind::{PermissionDenied, ReadOnlyFilesystem};
    match e {
        Error::Output { cause, .. }
            if beside_input && matches!(cause.kind(), PermissionDenied | ReadOnlyFilesystem) =>
        {
            "; use -o to write the trace elsewhere"
        }
        Error::OutputIsInput { .. } if beside_input => "; name the trace with -o",
        _ => "",
    }
}

/// Where a trace goes.
#[derive(Debug)]
enum Target {
    File(OutputFile),
    Stdout,
}

/// The target of each input, or why the command line cannot be carried out:
/// checked before any input is read, so that nothing is converted for a
/// run that would overwrite an input or one of its own traces. The
/// directory -o names is made, if missing: the directories made come back
/// too, to be removed if they stay empty.
fn plan(
    inputs: &[PathBuf],
    output: Option<&Path>,
    extension: &str,
    writing: Writing,
) -> Result<(Vec<Target>, NewDirectories), String> {
    let several = inputs.len() > 1;
    if output.is_some_and(nsys2perfetto::is_standard_output) {
        if several {
            return Err("-o - writes one trace to standard output: give one input".into());
        }
        if std::io::stdout().is_terminal() {
            return Err(crate::paths::TRACE_TO_TERMINAL.into());
        }
        return Ok((vec![Target::Stdout], NewDirectories::default()));
    }
    let into_dir = match output {
        Some(out) if several || names_directory(out) => {
            let why = match several {
                true => "with several inputs, -o names the directory to write them into",
                false => "a trailing / names a directory",
            };
            check_directory(out, why)?;
            Some(out)
        }
        Some(out) => out.is_dir().then_some(out),
        None => None,
    };
    let mut targets = Vec::new();
    for input in inputs {
        let name =
            Path::new(input.file_name().unwrap_or(input.as_os_str())).with_extension(extension);
        let target = match (output, into_dir) {
            (_, Some(dir)) => dir.join(name),
            (Some(out), None) => {
                if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                    if !dir.is_dir() {
                        return Err(Error::NoOutputDirectory {
                            path: out.to_owned(),
                            dir: dir.to_owned(),
                        }
                        .to_string());
                    }
                }
                out.to_owned()
            }
            // (An input that is a device is refused when it is read.)
            (None, None) => input.with_file_name(name),
        };
        targets.push(target);
    }
    let targets: Vec<OutputFile> = targets
        .into_iter()
        .map(|t| OutputFile::new(t).inputs(inputs).force(writing.force))
        .collect();
    // A directory of -o is made once every output is checked.
    for target in &targets {
        match target.check_replacing() {
            Ok(()) => {}
            // No report, but no conflict either: said in its turn, as
            // any input that is no report.
            Err(Error::AlreadyTrace { .. }) => {}
            Err(e) => return Err(format!("{e}{}", hint(&e, output.is_none()))),
        }
    }
    for (i, target) in targets.iter().enumerate() {
        let first = targets[..i]
            .iter()
            .position(|t| t.is_same_file(target.path()));
        if let Some(first) = first {
            return Err(format!(
                "{} and {} would both be written to {}; convert them one at a time, each with its own -o",
                inputs[first].display(),
                inputs[i].display(),
                target.path().display()
            ));
        }
    }
    let made = NewDirectories::missing(into_dir);
    made.make().map_err(|cause| {
        let path = into_dir.unwrap_or(Path::new(".")).to_owned();
        Error::Output { path, cause }.to_string()
    })?;
    Ok((targets.into_iter().map(Target::File).collect(), made))
}

fn convert_one(
    input: &Path,
    target: &Target,
    options: &Options,
    quiet: bool,
) -> nsys2perfetto::Result<()> {
    let started = Instant::now();
    let style = |template| {
        ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> ")
    };
    // Until the rows are counted (while nsys exports, say), no bar: one of
    // 0 rows would read as done.
    let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(style("{msg}: opening"));
        bar.set_message(input.display().to_string());
        bar
    });
    let mut counted = false;
    let mut progress = |p: Progress| {
        let Some(bar) = &bar else { return };
        if !counted && p.rows_total > 0 {
            counted = true;
            bar.set_length(p.rows_total);
            bar.set_style(style(
                "{msg} [{bar:30}] {percent:>3}% {human_pos}/{human_len} rows, {eta} left",
            ));
        }
        if counted {
            bar.set_length(p.rows_total);
            bar.set_position(p.rows_read);
        }
    };
    let converted = match target {
        Target::File(file) => convert_file(input, file, options, &mut progress).map(|summary| {
            let path = file.path();
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            (summary, path.display().to_string(), size)
        }),
        Target::Stdout => {
            let out = Counting {
                out: std::io::BufWriter::new(std::io::stdout()),
                bytes: 0,
            };
            convert_to_writer(input, out, options, &mut progress)
                .map(|(out, summary)| (summary, "standard output".to_owned(), out.bytes))
        }
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let (summary, written_to, size) = converted?;
    if !quiet {
        for warning in summary.warnings() {
            crate::warn(format_args!("{}: {warning}", input.display()));
        }
        crate::say(format_args!(
            "{} -> {written_to} ({}): {summary} in {:.2}s",
            input.display(),
            human_bytes(size),
            started.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}

/// A writer that counts the bytes it passes on.
struct Counting<W> {
    out: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
