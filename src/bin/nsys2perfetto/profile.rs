//! `profile`: a command profiled by nsys, its report converted.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use nsys2perfetto::{convert_file, unused_report_name, Error, NsysProfile, Options};

use crate::signals::Signals;
use crate::{human_bytes, INTERRUPTED};

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
    /// NAME.perfetto-trace are written (default: report1, report2, ... in
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

    /// The command to profile and its arguments (after `--` when it has
    /// options of its own).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<OsString>,
}

pub fn run(args: Args, signals: &Signals) -> ExitCode {
    let Args {
        trace,
        output,
        force,
        nsys,
        nsys_args,
        quiet,
        command,
    } = args;
    let mut profile = NsysProfile::new(command);
    profile.nsys = nsys.clone();
    profile.trace = trace;
    profile.output = output.unwrap_or_else(|| unused_report_name(Path::new("")));
    profile.nsys_args = nsys_args;
    profile.overwrite = force;
    let trace_path = profile.report_path().with_extension("perfetto-trace");
    if !force && trace_path.exists() {
        let e = Error::ReportExists { path: trace_path };
        eprintln!("nsys2perfetto: error: {e} (-o NAME, --force)");
        return ExitCode::FAILURE;
    }
    let profiled = match profile.run(Some(&signals.cancel)) {
        Ok(profiled) => profiled,
        Err(e @ Error::ProfilingInterrupted { .. }) => {
            eprintln!("nsys2perfetto: {e}");
            return ExitCode::from(signals.received().unwrap_or(INTERRUPTED));
        }
        Err(e @ Error::ReportExists { .. }) => {
            eprintln!("nsys2perfetto: error: {e} (-o NAME, --force)");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("nsys2perfetto: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let report = &profiled.report;
    if !quiet {
        if let Some(importer) = &profiled.imported_by {
            eprintln!(
                "nsys2perfetto: nsys left its raw capture: imported by {}",
                importer.display()
            );
        }
    }
    let mut options = Options::default();
    options.nsys = nsys;
    options.cancel = Some(Arc::clone(&signals.cancel));
    let started = Instant::now();
    let converted = convert_file(report, &trace_path, &options, &mut |_| {});
    // The command's own status, unless it succeeded and the conversion did not.
    let command_status = u8::try_from(profiled.exit_code).unwrap_or(1);
    match converted {
        Ok(summary) => {
            if !quiet {
                for warning in summary.warnings() {
                    eprintln!("nsys2perfetto: warning: {}: {warning}", report.display());
                }
                let size = std::fs::metadata(&trace_path).map(|m| m.len()).unwrap_or(0);
                eprintln!(
                    "{} -> {} ({}): {summary} in {:.2}s",
                    report.display(),
                    trace_path.display(),
                    human_bytes(size),
                    started.elapsed().as_secs_f64()
                );
                eprintln!("report: {}", report.display());
                eprintln!("trace:  {}", trace_path.display());
            }
            ExitCode::from(command_status)
        }
        Err(e @ Error::Interrupted { .. }) => {
            eprintln!("nsys2perfetto: {e}; the report is {}", report.display());
            ExitCode::from(signals.received().unwrap_or(INTERRUPTED))
        }
        Err(e) => {
            eprintln!(
                "nsys2perfetto: error: {e}; the report is {}",
                report.display()
            );
            ExitCode::from(if command_status == 0 {
                1
            } else {
                command_status
            })
        }
    }
}
