//! Answers saved as files, through the one way out ([`OutputFile`]): a
//! page, a series, measured steps. Each file appears only when complete,
//! and is none of the inputs it was made from.

use std::path::Path;

use super::output::OutputFile;
use crate::analysis::gpu_time::{write_page, Page, PageFormat};
use crate::analysis::series::Series;
use crate::analysis::steps::ReportSteps;
use crate::error::Result;

/// [`write_page`] into the file `output`, which appears only when complete.
pub fn save_page(output: impl Into<OutputFile>, page: &Page, format: PageFormat) -> Result<()> {
    let inputs: Vec<&str> = page.runs.iter().map(|r| r.path.as_str()).collect();
    let output = output.into().inputs(&inputs);
    output.write_with(|out| write_page(out, page, format))
}

impl Series {
    /// Writes the table to `output`, which appears only when complete.
    pub fn save_csv(&self, output: impl Into<OutputFile>) -> Result<()> {
        self.with_inputs(output)
            .write_with(|out| self.write_csv(out))
    }

    /// Writes the plot to `output`, which appears only when complete.
    pub fn save_svg(&self, output: impl Into<OutputFile>) -> Result<()> {
        self.with_inputs(output)
            .write_with(|out| self.write_svg(out))
    }

    /// `output`, which must be none of the reports measured.
    fn with_inputs(&self, output: impl Into<OutputFile>) -> OutputFile {
        let inputs: Vec<&Path> = self.runs.iter().map(|r| r.input.as_path()).collect();
        output.into().inputs(&inputs)
    }
}

/// Writes `documents` to the file at `path` as JSON Lines (a line each),
/// through the one way out: the file appears only when complete.
pub fn save_report_steps(output: impl Into<OutputFile>, documents: &[ReportSteps]) -> Result<()> {
    output
        .into()
        .write_with(|out| documents.iter().try_for_each(|d| d.write_json(out)))
}
