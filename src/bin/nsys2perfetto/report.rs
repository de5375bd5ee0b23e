//! `report`: where the GPU time of each run went, on one page.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use nsys2perfetto::report::{
    report_file, save_page, write_page, KindPattern, PageFormat, ReportOptions,
};
use nsys2perfetto::{check_output_not_input, Options};

use crate::interrupted_reading;
use crate::signals::Signals;

/// One page per run: per GPU, busy time and idle time (host-bound or
/// waiting) with the longest idle stretches and what the CPU threads did
/// then; GPU time by kind of kernel; communication overlapped by
/// computation; launch delays; the top kernels and NVTX scopes; the
/// findings of `analyze`. Several reports: a section each.
#[derive(clap::Args)]
pub struct Args {
    /// Nsight Systems SQLite exports, or reports (.nsys-rep, .qdrep), which
    /// are exported first with the nsys CLI.
    #[arg(required = true, value_name = "REPORT")]
    inputs: Vec<PathBuf>,

    /// Write the page to this file (.html, .md or .json) instead of
    /// printing Markdown.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// html (self-contained, with charts), md (Markdown) or json (one
    /// object, for programs). Default: by the output's extension, else md.
    #[arg(long, value_name = "FORMAT")]
    format: Option<PageFormat>,

    /// A kind of kernel of your own, matched before the built-in ones:
    /// NAME=REGEX (case-insensitive, anywhere in the kernel's name); may be
    /// given more than once.
    #[arg(long = "kind", value_name = "NAME=REGEX")]
    kinds: Vec<KindPattern>,

    /// The nsys CLI used to export .nsys-rep/.qdrep reports.
    #[arg(long, value_name = "PATH", default_value = "nsys")]
    nsys: PathBuf,
}

pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    let format = match (&args.format, &args.output) {
        (Some(format), _) => *format,
        (None, Some(path)) if path.as_os_str() != "-" => {
            PageFormat::of_name(path).ok_or_else(|| {
                crate::Usage(format!(
                    "{}: which format? Name it .html, .md or .json, or give --format",
                    path.display()
                ))
            })?
        }
        (None, _) => PageFormat::Markdown,
    };
    let output = args.output.filter(|p| p.as_os_str() != "-");
    if let Some(path) = &output {
        crate::paths::writable(path).map_err(crate::Usage)?;
        check_output_not_input(path, &args.inputs).map_err(|e| crate::Usage(e.to_string()))?;
    }
    for input in &args.inputs {
        crate::paths::present(input).map_err(crate::Usage)?;
    }
    let mut options = Options::default();
    options.nsys = args.nsys;
    options.cancel = Some(signals.cancel.clone());
    let mut report_options = ReportOptions::default();
    report_options.kinds = args.kinds;
    let runs = args
        .inputs
        .iter()
        .map(|input| report_file(input, &report_options, &options).map_err(interrupted_reading))
        .collect::<anyhow::Result<Vec<_>>>()?;
    match &output {
        Some(path) => {
            save_page(path, &runs, format)?;
            eprintln!("{} run(s) -> {}", runs.len(), path.display());
        }
        None => {
            let mut page = Vec::new();
            write_page(&mut page, &runs, format).expect("writing to memory");
            let mut out = std::io::stdout().lock();
            out.write_all(&page)
                .and_then(|()| out.flush())
                .context("cannot write standard output")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
