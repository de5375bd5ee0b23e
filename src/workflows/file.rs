//! Files: a report or export at a path, converted into a trace file that
//! appears only when complete, or into any writer.

use std::io::Write;
use std::path::Path;

use super::input::with_report;
use super::output::OutputFile;
use crate::error::{Error, Result};
use crate::{convert, Options, Progress, Summary};

/// Converts the report or export at `input` into a trace at `output` (a
/// path, or an [`OutputFile`] that says which other files it must not be,
/// and whether it may replace a report).
///
/// The trace is written to a temporary file beside `output` and renamed when
/// complete: a failure never leaves a partial trace. An `output` that is the
/// input (or a link to it), or a report or export that `output` does not
/// allow replacing, is refused before anything is read. `progress` hears how
/// far the conversion is, now and then.
pub fn convert_file(
    input: &Path,
    output: impl Into<OutputFile>,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary> {
    let output = output.into().inputs(&[input]);
    output.check()?;
    with_report(input, &options.read, |report| {
        output.write(|out| {
            let converted = convert(report, out, options, progress);
            converted.map(|(_, summary)| summary).map_err(|e| match e {
                Error::Writer { cause } => output.failed(cause),
                e => e,
            })
        })
    })
}

/// Converts the report or export at `input` into a trace written to `out`
/// (standard output, say), gzipped as `options` says. Returns `out`, flushed.
/// On failure `out` may have received part of a trace.
pub fn convert_to_writer<W: Write + Send>(
    input: &Path,
    out: W,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<(W, Summary)> {
    with_report(input, &options.read, |report| {
        let (mut out, summary) = convert(report, out, options, progress)?;
        out.flush().map_err(|cause| Error::Writer { cause })?;
        Ok((out, summary))
    })
}
