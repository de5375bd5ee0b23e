//! The page of one or more runs: HTML (self-contained: inline CSS and SVG
//! charts, no script), Markdown with the same numbers, or JSON for
//! programs. Each run is a section; each part of a run a subsection, written
//! by a function of its own, in the order of [`SECTIONS`].

mod blocks;
mod html;
mod json;
mod markdown;
mod svg;

use std::io::{self, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::workflows::output::OutputFile;

use super::model::{GpuUse, RunReport};
use super::Page;

/// What a page is written as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageFormat {
    /// One HTML file with its styles and charts inline.
    Html,
    /// Markdown, the charts left out.
    Markdown,
    /// One JSON object: `{"runs": [...]}`, a run per report (see README).
    Json,
}

impl PageFormat {
    /// The format a file name asks for by its extension (`.html`, `.htm`,
    /// `.md`, `.json`).
    pub fn of_name(path: &Path) -> Option<PageFormat> {
        let ext = path.extension()?.to_string_lossy().to_lowercase();
        match ext.as_str() {
            "html" | "htm" => Some(PageFormat::Html),
            "md" | "markdown" => Some(PageFormat::Markdown),
            "json" => Some(PageFormat::Json),
            _ => None,
        }
    }
}

impl std::str::FromStr for PageFormat {
    type Err = Error;

    fn from_str(s: &str) -> Result<PageFormat> {
        match s {
            "html" => Ok(PageFormat::Html),
            "md" | "markdown" => Ok(PageFormat::Markdown),
            "json" => Ok(PageFormat::Json),
            _ => Err(Error::InvalidOption(format!(
                "format {s:?}: expected html, md or json"
            ))),
        }
    }
}

/// The parts of a run, in the order a page shows them.
pub(super) const SECTIONS: [&str; 6] = [
    "GPUs",
    "Time by kind",
    "Launch overhead",
    "Top kernels",
    "Top NVTX scopes",
    "Findings",
];

/// Writes `page` to `out`: the job's steps first, where it has them, then
/// a section per run.
pub fn write_page(out: &mut dyn Write, page: &Page, format: PageFormat) -> io::Result<()> {
    match format {
        PageFormat::Html => html::write(out, page),
        PageFormat::Markdown => markdown::write(out, page),
        PageFormat::Json => json::write(out, page),
    }
}

/// [`write_page`] into the file `output`, which appears only when complete.
pub fn save_page(output: impl Into<OutputFile>, page: &Page, format: PageFormat) -> Result<()> {
    let inputs: Vec<&str> = page.runs.iter().map(|r| r.path.as_str()).collect();
    let output = output.into().inputs(&inputs);
    output.write_with(|out| write_page(out, page, format))
}

/// `part` of `whole` in percent (0 of nothing).
pub(super) fn percent(part: i128, whole: i128) -> f64 {
    match whole {
        0 => 0.0,
        whole => part as f64 * 100.0 / whole as f64,
    }
}

/// A duration as people read it: `812 ns`, `3.41 µs`, `12.9 ms`, `1.23 s`.
pub(in crate::analysis::report) fn duration(ns: i128) -> String {
    let abs = ns.unsigned_abs() as f64;
    let (value, unit) = match abs {
        a if a >= 1e9 => (ns as f64 / 1e9, "s"),
        a if a >= 1e6 => (ns as f64 / 1e6, "ms"),
        a if a >= 1e3 => (ns as f64 / 1e3, "µs"),
        _ => return format!("{ns} ns"),
    };
    let decimals = match value.abs() {
        v if v >= 100.0 => 1,
        v if v >= 10.0 => 2,
        _ => 3,
    };
    format!("{value:.decimals$} {unit}")
}

/// A time on the export's clock, in seconds.
pub(in crate::analysis::report) fn seconds(ns: i128) -> String {
    format!("{:.6} s", ns as f64 / 1e9)
}

/// The capture's length, where known.
pub(super) fn capture_len(run: &RunReport) -> Option<i64> {
    run.capture.map(|(start, end)| end - start)
}

/// A GPU's heading: `GPU 0 (NVIDIA H100 80GB HBM3)`.
pub(super) fn gpu_title(gpu: &GpuUse) -> String {
    match &gpu.name {
        Some(name) => format!("GPU {} ({name})", gpu.device),
        None => format!("GPU {}", gpu.device),
    }
}

/// The headline numbers of a GPU, label and value, as every format shows them.
pub(super) fn gpu_headlines(run: &RunReport, gpu: &GpuUse) -> Vec<(&'static str, String)> {
    let span = i128::from(gpu.span());
    let idle = i128::from(gpu.host_bound + gpu.waiting + gpu.unattributed);
    let mut lines = vec![(
        "Busy",
        format!(
            "{} ({:.1}% of its work's span of {})",
            duration(gpu.busy.into()),
            percent(gpu.busy.into(), span),
            duration(span)
        ),
    )];
    if let Some(capture) = capture_len(run) {
        lines.push((
            "Busy share of the capture",
            format!(
                "{:.1}% of {}",
                percent(gpu.busy.into(), capture.into()),
                duration(capture.into())
            ),
        ));
    }
    lines.push((
        "Idle within its work's span",
        format!("{} ({:.1}%)", duration(idle), percent(idle, span)),
    ));
    for (label, value) in [
        ("  host-bound (nothing launched)", gpu.host_bound),
        ("  waiting (launched, not started)", gpu.waiting),
        (
            "  unattributed (launch call not in the export)",
            gpu.unattributed,
        ),
    ] {
        lines.push((
            label,
            format!(
                "{} ({:.1}% of idle)",
                duration(value.into()),
                percent(value.into(), idle)
            ),
        ));
    }
    let overlap = match gpu.communication {
        0 => "no communication kernels".to_owned(),
        c => format!(
            "{:.1}% of {} of communication ran beside computation",
            percent(gpu.overlapped.into(), c.into()),
            duration(c.into())
        ),
    };
    lines.push(("Communication overlap", overlap));
    lines
}
