//! The trace as Chrome's trace event JSON: the parts JSON has a place for,
//! converted as for Perfetto and transcoded as they are written (see
//! [`crate::perfetto::json`]); the tables of the others told as not
//! converted.

use std::io::Write;

use super::Options;
use crate::nsys::{Report, Unconverted};
use crate::perfetto::json::{transcoding, writer_gone};

use super::{convert, Part, Parts, Progress, Summary};
use crate::error::Failure;

/// Converts the parts of `report` that JSON carries into JSON written to
/// `out`, gzipped if `options` say so.
pub(crate) fn convert_json<W: Write + Send>(
    report: &Report,
    out: W,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<(W, Summary), Failure> {
    let (parts, unconverted) = json_parts(report, options.parts);
    // JSON has no place for Perfetto's GPU model: its GPU work is slices.
    let protobuf = Options {
        parts,
        gzip: None,
        gpu_model: super::GpuModel::TrackEvent,
        ..options.clone()
    };
    let (converted, transcoded) = transcoding(out, options.gzip, |writer| {
        convert(report, writer, &protobuf, progress)
    });
    match (converted, transcoded) {
        (Ok(mut summary), Ok((out, transcoded))) => {
            summary.json_flows_on_nested = transcoded.flows_on_nested;
            summary.unconverted.extend(unconverted);
            Ok((out, summary))
        }
        // The conversion failed first (a temporary file past the file size
        // limit, say): the transcoder only saw it go.
        (Err(e), Err(t)) if writer_gone(&t) => Err(e),
        // The transcoder's own failure (writing the output, say) stopped
        // the conversion at its next write: its error says why.
        (Err(Failure::Write(_)) | Ok(_), Err(e)) => Err(Failure::Write(e)),
        (Err(e), _) => Err(e),
    }
}

/// `parts` without those JSON has no place for, and the tables of `report`
/// with rows that are left out for it (told in the summary as not
/// converted).
pub(crate) fn json_parts(report: &Report, parts: Parts) -> (Parts, Vec<Unconverted>) {
    let left_out: Vec<Part> = Part::ALL
        .into_iter()
        .filter(|&p| !p.in_json() && parts.has(p))
        .collect();
    let unconverted = left_out
        .iter()
        .flat_map(|p| p.tables(report))
        .map(|table| Unconverted {
            rows: report.rows(&table),
            table,
        })
        .filter(|u| u.rows > 0)
        .collect();
    let parts = left_out.iter().fold(parts, |p, &l| p.without(l));
    (parts, unconverted)
}
