//! The page of one or more runs: a document of blocks (the job's steps,
//! then a section per run) that the renderer writes as HTML
//! (self-contained: inline CSS and SVG charts, no script) or Markdown with
//! the same numbers; or JSON for programs. Each part of a run is a
//! subsection, made by a function of its own, in the order of [`SECTIONS`].

mod blocks;
mod charts;
mod json;

use std::io::{self, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::render::format::duration;
use crate::render::page::{write_html, write_html_with, write_markdown, Block};

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
    /// One JSON object: `{"runs": [...]}`, a run per report (see docs/report.md).
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
        PageFormat::Html => write_html(out, &title(page), &document(page)),
        PageFormat::Markdown => write_markdown(out, &document(page)),
        PageFormat::Json => json::write(out, page),
    }
}

/// `page` as an HTML page under `header` (the hub's way home), loading
/// `scripts`: the hub's report page.
pub(crate) fn write_html_under(
    out: &mut dyn Write,
    page: &Page,
    header: Block,
    scripts: &[&str],
) -> io::Result<()> {
    let mut blocks = vec![header];
    blocks.extend(document(page));
    write_html_with(out, &title(page), &blocks, scripts)
}

/// The page as blocks: the job's steps, where it has them, then a section
/// per run.
fn document(page: &Page) -> Vec<Block> {
    let mut blocks = Vec::new();
    if let Some(steps) = &page.steps {
        blocks.push(Block::Section("job-steps", steps.blocks()));
    }
    for run in &page.runs {
        blocks.push(Block::Section("", blocks::run_blocks(run)));
    }
    blocks
}

fn title(page: &Page) -> String {
    match page.runs.as_slice() {
        [one] => format!("GPU time report: {}", one.path),
        runs => format!("GPU time report: {} runs", runs.len()),
    }
}

/// `part` of `whole` in percent (0 of nothing).
pub(super) fn percent(part: i128, whole: i128) -> f64 {
    match whole {
        0 => 0.0,
        whole => part as f64 * 100.0 / whole as f64,
    }
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
