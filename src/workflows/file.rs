//! Files: a report or export at a path, converted into a trace file that
//! appears only when complete, or into any writer.

use std::io::Write;
use std::path::Path;

use super::input::with_report;
use super::output;
use crate::error::{Error, Result};
use crate::{convert, Options, Progress, Summary};

/// Converts the report or export at `input` into a trace at `output`.
///
/// The trace is written to a temporary file beside `output` and renamed when
/// complete: a failure never leaves a partial trace. An `output` that is the
/// input (or a link to it) is refused before anything is read. `progress`
/// hears how far the conversion is, now and then.
pub fn convert_file(
    input: &Path,
    output: &Path,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary> {
    check_output(input, output)?;
    with_report(input, options, |report| {
        output::write_atomically(output, |out| {
            let converted = convert(report, out, options, progress);
            converted.map(|(_, summary)| summary).map_err(|e| match e {
                Error::Writer { cause } => Error::Output {
                    path: output.to_owned(),
                    cause,
                },
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
    with_report(input, options, |report| {
        let (mut out, summary) = convert(report, out, options, progress)?;
        out.flush().map_err(|cause| Error::Writer { cause })?;
        Ok((out, summary))
    })
}

/// Refuses an output that cannot be written before anything is read: the
/// input itself (by path or by link), a directory, or a path in a directory
/// that does not exist.
pub(crate) fn check_output(input: &Path, output: &Path) -> Result<()> {
    if same_file(input, output) {
        return Err(own_output(input, output));
    }
    if output.is_dir() {
        return Err(Error::OutputIsDirectory {
            path: output.to_owned(),
        });
    }
    let dir = match output.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Error::NoOutputDirectory {
            path: output.to_owned(),
            dir: dir.to_owned(),
        });
    }
    Ok(())
}

/// Refuses an `output` that is one of `inputs` (by path, or a link to it),
/// checked before anything is read or written: a command that writes several
/// outputs checks each, so that it converts nothing where one would
/// overwrite an input. The error is [`Error::OutputIsInput`] naming the
/// input, or [`Error::AlreadyTrace`] where that input is a trace already
/// rather than a report (its conversion would refuse it in its turn).
pub fn check_output_not_input<P: AsRef<Path>>(output: &Path, inputs: &[P]) -> Result<()> {
    match inputs.iter().find(|i| same_file(i.as_ref(), output)) {
        Some(input) => Err(own_output(input.as_ref(), output)),
        None => Ok(()),
    }
}

/// Why `input` cannot be converted into `output`, the same file: it is a
/// trace already (a file named like a trace that is no report), or it would
/// be overwritten.
pub(crate) fn own_output(input: &Path, output: &Path) -> Error {
    match super::input::sniff(input) {
        Err(e @ Error::AlreadyTrace { .. }) => e,
        _ => Error::OutputIsInput {
            output: output.to_owned(),
            input: input.to_owned(),
        },
    }
}

/// Whether `a` and `b` name one existing file (not a directory): the same
/// path, or links to one file (hard or symbolic).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(meta_a), Ok(meta_b)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if meta_a.is_dir() || meta_b.is_dir() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if (meta_a.dev(), meta_a.ino()) == (meta_b.dev(), meta_b.ino()) {
            return true;
        }
    }
    let _ = (meta_a, meta_b);
    matches!(
        (std::fs::canonicalize(a), std::fs::canonicalize(b)),
        (Ok(a), Ok(b)) if a == b
    )
}
