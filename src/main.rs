//! `nsys2perfetto`: the command line. All the work is in the library.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use nsys2perfetto::{convert_file, Options, Part, Parts, Progress};

#[derive(Parser)]
#[command(
    version,
    about = "Convert NVIDIA Nsight Systems reports into Perfetto traces"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert reports into gzipped Perfetto traces for ui.perfetto.dev and trace_processor.
    ///
    /// Every CUDA API call, kernel, memcpy, memset, synchronization and NVTX event
    /// becomes a slice, with a flow from each launch to the GPU work it launched.
    /// The output is written to a temporary file and renamed when complete.
    Convert {
        /// Nsight Systems SQLite exports (`nsys export --type sqlite`), or reports
        /// (.nsys-rep, .qdrep), which are exported first with the nsys CLI.
        #[arg(required = true, value_name = "INPUT")]
        inputs: Vec<PathBuf>,

        /// Output file (default: INPUT with extension .perfetto-trace). With several
        /// inputs, a directory to write each trace into.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,

        /// Write raw protobuf instead of gzip.
        #[arg(long, conflicts_with = "level")]
        no_gzip: bool,

        /// Gzip level: 1 is fastest, 9 smallest. Level 1 compresses in half
        /// the default's time into 29% more bytes; 6 saves 9% at 2.4 times the time.
        #[arg(long, value_name = "N", default_value_t = nsys2perfetto::DEFAULT_GZIP_LEVEL,
              value_parser = clap::value_parser!(u32).range(1..=9))]
        level: u32,

        /// Leave these out of the trace, for a lighter one: cuda, nvtx, osrt
        /// (OS runtime calls), samples (CPU samples), sched (context switches).
        #[arg(long, value_name = "PART,...", value_delimiter = ',')]
        exclude: Vec<Part>,

        /// The nsys CLI used to export .nsys-rep/.qdrep reports.
        #[arg(long, value_name = "PATH", default_value = "nsys")]
        nsys: PathBuf,

        /// No progress bar and no summary; errors only.
        #[arg(short, long)]
        quiet: bool,
    },
}

fn main() -> ExitCode {
    let Command::Convert {
        inputs,
        output,
        no_gzip,
        level,
        exclude,
        nsys,
        quiet,
    } = Cli::parse().command;
    let options = Options {
        gzip: (!no_gzip).then_some(level),
        parts: exclude
            .iter()
            .fold(Parts::all(), |parts, p| parts.without(*p)),
        nsys,
    };
    if inputs.len() > 1 && output.as_deref().is_some_and(|o| !o.is_dir()) {
        eprintln!("nsys2perfetto: error: with several inputs, -o must name an existing directory");
        return ExitCode::from(2);
    }
    let mut failed = false;
    for input in &inputs {
        let target = output_path(input, output.as_deref(), inputs.len() > 1);
        if let Err(e) = convert_one(input, &target, &options, quiet) {
            eprintln!("nsys2perfetto: error: {e}");
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn convert_one(
    input: &Path,
    target: &Path,
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
    let summary = convert_file(input, target, options, &mut progress);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let summary = summary?;
    if !quiet {
        for warning in summary.warnings() {
            eprintln!("nsys2perfetto: warning: {}: {warning}", input.display());
        }
        let size = std::fs::metadata(target).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "{} -> {} ({}): {summary} in {:.2}s",
            input.display(),
            target.display(),
            human_bytes(size),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// `-o` as given; a directory with several inputs; else beside the input.
fn output_path(input: &Path, output: Option<&Path>, several: bool) -> PathBuf {
    let file_name =
        Path::new(input.file_name().unwrap_or(input.as_os_str())).with_extension("perfetto-trace");
    match output {
        Some(dir) if several => dir.join(file_name),
        Some(out) => out.to_owned(),
        None => input.with_file_name(file_name),
    }
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}
