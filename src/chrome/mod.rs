//! Chrome trace event JSON: the trace the Perfetto writer makes, transcoded
//! as it is written, for tools that read only JSON.
//!
//! The conversion itself is untouched: the Perfetto trace goes through an
//! in-process pipe to a transcoder on a thread of its own, which writes the
//! JSON (gzipped if asked) as packets arrive. So the JSON carries exactly
//! what the protobuf carries, and memory stays flat: the transcoder holds
//! only the open slices and the interned strings of each sequence.

mod json;
mod pipe;
mod transcode;

use std::io::{self, Read, Write};

use flate2::write::GzEncoder;
use flate2::Compression;

pub use transcode::Transcoded;

use crate::convert::{self, ConvertError, Progress, Summary};
use crate::nsys::{Report, Unconverted};
use crate::{Options, Part, Parts};

/// The parts Chrome's JSON has no place for: CPU samples and context
/// switches.
const LEFT_OUT: [Part; 2] = [Part::Samples, Part::Sched];

/// `parts` without what JSON cannot carry, and the tables of `report` with
/// rows that are left out for it (told in the summary as not converted).
pub(crate) fn json_parts(report: &Report, parts: Parts) -> (Parts, Vec<Unconverted>) {
    let unconverted = LEFT_OUT
        .iter()
        .filter(|&&p| parts.has(p))
        .flat_map(|p| p.tables(report))
        .map(|table| Unconverted {
            rows: report.rows(&table),
            table,
        })
        .filter(|u| u.rows > 0)
        .collect();
    let parts = LEFT_OUT.iter().fold(parts, |p, &l| p.without(l));
    (parts, unconverted)
}

/// Transcodes the raw Perfetto trace read from `input` into JSON written to
/// `out`, gzipped at level `gzip` if given.
pub(crate) fn transcode<R: Read, W: Write>(
    input: R,
    out: W,
    gzip: Option<u32>,
) -> io::Result<(W, Transcoded)> {
    match gzip {
        Some(level) => {
            let (gz, transcoded) =
                transcode::transcode(input, GzEncoder::new(out, Compression::new(level)))?;
            Ok((gz.finish()?, transcoded))
        }
        None => transcode::transcode(input, out),
    }
}

/// Converts the `parts` of `report` into JSON written to `out`, gzipped at
/// level `gzip` if given.
pub fn convert<W: Write + Send>(
    report: &Report,
    out: W,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<(W, Summary, Transcoded), ConvertError> {
    let gzip = options.gzip;
    // No gzip between the writer and the transcoder: it would be undone at
    // once.
    let protobuf = Options {
        gzip: None,
        ..options.clone()
    };
    let (writer, reader) = pipe::pipe();
    std::thread::scope(|scope| {
        let transcoder = scope.spawn(move || transcode(reader, out, gzip));
        let converted = convert::convert(report, writer, &protobuf, progress)
            .and_then(|(writer, summary)| Ok((writer.finish()?, summary)));
        // The pipe is closed now (finished, or dropped with the error), so
        // the transcoder ends.
        let transcoded = crate::worker::outcome(transcoder.join());
        match (converted, transcoded) {
            (Ok(((), summary)), Ok((out, transcoded))) => Ok((out, summary, transcoded)),
            // The transcoder's own failure (writing the output, say) stopped
            // the conversion at its next write: its error says why.
            (Err(ConvertError::Write(_)) | Ok(_), Err(e)) => Err(ConvertError::Write(e)),
            (Err(e), _) => Err(e),
        }
    })
}
