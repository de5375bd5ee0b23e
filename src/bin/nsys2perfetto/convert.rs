//! `convert`: reports in, traces out.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use indicatif::{ProgressBar, ProgressStyle};

use nsys2perfetto::{
    convert_file, convert_to_writer, Error, Filter, Format, Options, Part, Parts, Progress,
    TimeWindow,
};

use crate::signals::Signals;
use crate::{human_bytes, INTERRUPTED, USAGE};

/// Convert reports into gzipped Perfetto traces for ui.perfetto.dev and trace_processor.
///
/// Every CUDA API call, kernel, memcpy, memset, synchronization and NVTX event
/// becomes a slice, with a flow from each launch to the GPU work it launched.
/// The output is written to a temporary file and renamed when complete; an
/// interrupted conversion (Ctrl-C, SIGTERM) leaves nothing behind.
#[derive(clap::Args)]
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

    /// Output file (default: INPUT with extension .perfetto-trace), or a
    /// directory to write each trace into (the only choice with several
    /// inputs), or - for standard output.
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,

    /// Write raw protobuf instead of gzip.
    #[arg(long, conflicts_with = "level")]
    no_gzip: bool,

    /// Write Perfetto's protobuf, or Chrome's trace event JSON for tools that
    /// read only JSON (default: json when -o ends in .json or .json.gz).
    /// JSON goes to INPUT.json by default and is gzipped only when its name
    /// ends in .gz; it carries no CPU samples, context switches or call stacks.
    #[arg(long, value_name = "FORMAT", value_parser = ["perfetto", "json"])]
    format: Option<String>,

    /// Gzip level: 1 is fastest, 9 smallest. Level 1 compresses in half
    /// the default's time into 29% more bytes; 6 saves 9% at 2.4 times the time.
    #[arg(long, value_name = "N", default_value_t = nsys2perfetto::DEFAULT_GZIP_LEVEL,
          value_parser = clap::value_parser!(u32).range(1..=9))]
    level: u32,

    /// Leave these out of the trace, for a lighter one (see README.md for
    /// what each part holds).
    #[arg(long, value_name = "PART,...", value_delimiter = ',', value_parser = part_parser())]
    exclude: Vec<Part>,

    /// Add an "Analysis" track group: what `nsys2perfetto analyze` finds
    /// (with its default thresholds), as slices over the offending time.
    #[arg(long)]
    findings: bool,

    /// Only these parts in the trace (then --exclude leaves out of them).
    #[arg(long, value_name = "PART,...", value_delimiter = ',', value_parser = part_parser())]
    only: Vec<Part>,

    /// Keep only events that overlap this span of session time, START:END,
    /// either side optional, each in ns, us, ms or s (ns without a unit):
    /// `1.5s:2s`, `500ms:`, `:100us`. Slices reaching beyond it are cut at
    /// its edges, their recorded times in the args clipped_start/clipped_end.
    #[arg(long, value_name = "START:END", allow_hyphen_values = true)]
    time: Option<TimeWindow>,

    /// Keep only the events of these processes (GPU metrics, which belong
    /// to no process, stay).
    #[arg(long, value_name = "PID,...", value_delimiter = ',')]
    pid: Vec<u32>,

    /// Keep only the GPU work, GPU metrics, CUDA memory and page faults of
    /// these GPUs (deviceId).
    #[arg(long, value_name = "ID,...", value_delimiter = ',')]
    gpu: Vec<i64>,

    /// Keep only the kernels whose short or demangled name matches this
    /// regular expression (other GPU work stays).
    #[arg(long, value_name = "REGEX")]
    kernels: Option<String>,

    /// Keep only the NVTX ranges and marks whose name matches this regular
    /// expression.
    #[arg(long, value_name = "REGEX")]
    nvtx: Option<String>,

    /// Keep only the NVTX events of this domain (`default` for NVTX's
    /// default domain); repeat it for several.
    #[arg(long, value_name = "NAME")]
    nvtx_domain: Vec<String>,

    /// Keep only the CUDA API calls made inside the NVTX ranges kept (by
    /// --nvtx, --nvtx-domain; any range without them) and the GPU work they
    /// launched; synchronizations are left out.
    #[arg(long)]
    gpu_in_nvtx: bool,

    /// The nsys CLI used to export .nsys-rep/.qdrep reports.
    #[arg(long, value_name = "PATH", default_value = "nsys")]
    nsys: PathBuf,

    /// No progress bar and no summary; errors only.
    #[arg(short, long)]
    quiet: bool,
}

/// The parts `--exclude` accepts, named as the library names them.
fn part_parser() -> impl TypedValueParser<Value = Part> {
    PossibleValuesParser::new(Part::ALL.map(Part::name)).map(|name| {
        name.parse::<Part>()
            .expect("each possible value names a part")
    })
}

/// Converts each input in turn; one that fails does not stop the others.
pub fn run(args: Args, signals: &Signals) -> ExitCode {
    let Args {
        inputs,
        output,
        no_gzip,
        level,
        format,
        exclude,
        findings,
        only,
        time,
        pid,
        gpu,
        kernels,
        nvtx,
        nvtx_domain,
        gpu_in_nvtx,
        nsys,
        quiet,
        jobs,
    } = args;
    let mut options = Options::default();
    options.gzip = (!no_gzip).then_some(level);
    let chosen = match only.is_empty() {
        true => Parts::all(),
        false => Part::ALL
            .into_iter()
            .filter(|p| !only.contains(p))
            .fold(Parts::all(), |parts, p| parts.without(p)),
    };
    options.parts = exclude.iter().fold(chosen, |parts, p| parts.without(*p));
    let filter = || -> nsys2perfetto::Result<Filter> {
        let mut f = Filter::default()
            .time(time.unwrap_or_default())
            .pids(pid)
            .gpus(gpu);
        if let Some(pattern) = &kernels {
            f = f.kernels(pattern)?;
        }
        if let Some(pattern) = &nvtx {
            f = f.nvtx(pattern)?;
        }
        for domain in &nvtx_domain {
            f = f.nvtx_domain(domain);
        }
        if gpu_in_nvtx {
            f = f.gpu_in_nvtx();
        }
        Ok(f)
    };
    options.filter = match filter() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("nsys2perfetto: error: {e}");
            return ExitCode::from(USAGE);
        }
    };
    options.nsys = nsys;
    options.findings = findings.then(nsys2perfetto::Thresholds::default);
    options.cancel = Some(Arc::clone(&signals.cancel));
    options.format = match format.as_deref() {
        Some("json") => Format::Json,
        Some(_) => Format::Perfetto,
        None => output
            .as_deref()
            .filter(|o| !o.is_dir())
            .map_or(Format::Perfetto, Format::of_name),
    };
    if options.format == Format::Json
        && no_gzip
        && output
            .as_deref()
            .is_some_and(|o| o.to_string_lossy().ends_with(".gz"))
    {
        eprintln!("nsys2perfetto: error: --no-gzip with an output name ending in .gz: drop one");
        return ExitCode::from(USAGE);
    }
    let extension = match options.format {
        Format::Json => "json",
        _ => "perfetto-trace",
    };
    if inputs.iter().any(|i| i.is_dir()) {
        let jobs = jobs.map(usize::from);
        return crate::batch::run(&inputs, output.as_deref(), &options, jobs, quiet, signals);
    }
    let targets = match plan(&inputs, output.as_deref(), extension) {
        Ok(targets) => targets,
        Err(message) => {
            eprintln!("nsys2perfetto: error: {message}");
            return ExitCode::from(USAGE);
        }
    };
    let mut failed = false;
    for (input, target) in inputs.iter().zip(&targets) {
        if let Some(status) = signals.received() {
            eprintln!(
                "nsys2perfetto: interrupted before converting {}",
                input.display()
            );
            return ExitCode::from(status);
        }
        let mut options = options.clone();
        if options.format == Format::Json {
            // JSON is gzipped by name: readers of JSON often take only plain text.
            let gz = matches!(target, Target::File(p) if p.to_string_lossy().ends_with(".gz"));
            options.gzip = (gz && !no_gzip).then_some(level);
        }
        match convert_one(input, target, &options, quiet) {
            Ok(()) => {}
            Err(e @ Error::Interrupted { .. }) => {
                eprintln!("nsys2perfetto: {e}");
                return ExitCode::from(signals.received().unwrap_or(INTERRUPTED));
            }
            Err(e) => {
                eprintln!("nsys2perfetto: error: {e}{}", hint(&e, output.is_none()));
                failed = true;
            }
        }
    }
    // A signal after the last trace was written interrupted nothing.
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
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
        Error::OutputIsInput { .. } => "; name the trace with -o",
        _ => "",
    }
}

/// Where a trace goes.
#[derive(Debug)]
enum Target {
    File(PathBuf),
    Stdout,
}

/// The target of each input, or why the command line cannot be carried out:
/// checked before any input is read, so that nothing is converted for a
/// run that would overwrite an input or one of its own traces.
fn plan(inputs: &[PathBuf], output: Option<&Path>, extension: &str) -> Result<Vec<Target>, String> {
    let several = inputs.len() > 1;
    if output.is_some_and(|o| o == Path::new("-")) {
        if several {
            return Err("-o - writes one trace to standard output: give one input".into());
        }
        if std::io::stdout().is_terminal() {
            return Err(
                "standard output is a terminal: redirect it to a file or a pipe for -o -".into(),
            );
        }
        return Ok(vec![Target::Stdout]);
    }
    let into_dir = match output {
        Some(out) => {
            let says_dir = out
                .as_os_str()
                .to_string_lossy()
                .ends_with(['/', std::path::MAIN_SEPARATOR]);
            if several || says_dir {
                if !out.exists() {
                    return Err(format!("directory {} does not exist", out.display()));
                }
                if !out.is_dir() {
                    return Err(format!(
                        "{} is not a directory: with several inputs, -o names the directory to write them into",
                        out.display()
                    ));
                }
            }
            out.is_dir().then_some(out)
        }
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
            (None, None) => input.with_file_name(name),
        };
        targets.push(target);
    }
    for target in &targets {
        if let Some(input) = inputs.iter().find(|i| nsys2perfetto::same_file(i, target)) {
            let e = Error::OutputIsInput {
                output: target.clone(),
                input: input.clone(),
            };
            return Err(format!("{e}{}", hint(&e, output.is_none())));
        }
    }
    let mut seen: HashMap<PathBuf, usize> = HashMap::new();
    for (i, target) in targets.iter().enumerate() {
        if let Some(&first) = seen.get(&identity(target)) {
            return Err(format!(
                "{} and {} would both be written to {}; convert them one at a time, each with its own -o",
                inputs[first].display(),
                inputs[i].display(),
                target.display()
            ));
        }
        seen.insert(identity(target), i);
    }
    Ok(targets.into_iter().map(Target::File).collect())
}

/// A path that names the same file however `path` was written: its
/// directory resolved (links, `..`), then its name.
fn identity(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(dir), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path.to_owned(),
    }
}

fn convert_one(
    input: &Path,
    target: &Target,
    options: &Options,
    quiet: bool,
) -> nsys2perfetto::Result<()> {
    let started = Instant::now();
    let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
        let style = "{msg} [{bar:30}] {percent:>3}% {human_pos}/{human_len} rows, {eta} left";
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(style)
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_message(input.display().to_string());
        bar
    });
    let mut progress = |p: Progress| {
        if let Some(bar) = &bar {
            bar.set_length(p.rows_total);
            bar.set_position(p.rows_read);
        }
    };
    let converted = match target {
        Target::File(path) => convert_file(input, path, options, &mut progress).map(|summary| {
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
            eprintln!("nsys2perfetto: warning: {}: {warning}", input.display());
        }
        eprintln!(
            "{} -> {written_to} ({}): {summary} in {:.2}s",
            input.display(),
            human_bytes(size),
            started.elapsed().as_secs_f64()
        );
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
