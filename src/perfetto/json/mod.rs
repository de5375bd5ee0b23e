//! Chrome trace event JSON: a Perfetto trace transcoded as it is written,
//! for tools that read only JSON.
//!
//! The trace is written as for protobuf, into an in-process pipe; a
//! transcoder on a thread of its own reads it and writes the JSON (gzipped
//! if asked) as packets arrive. So the JSON carries exactly what the
//! protobuf carries, and memory stays flat: the transcoder holds only the
//! open slices and the interned strings of each sequence.

mod encode;
mod pipe;
mod transcode;

use std::io::{self, Read, Write};

use flate2::write::GzEncoder;
use flate2::Compression;

pub(crate) use pipe::{writer_gone, PipeWriter};
pub(crate) use transcode::Transcoded;

/// Runs `write` with a writer for a Perfetto trace (not gzipped: it would be
/// undone at once), which is transcoded as it arrives into JSON written to
/// `out`, gzipped at level `gzip` if given. `write` hands the writer back
/// when the trace is whole; dropped without that, the JSON fails.
///
/// Returns what `write` returned and what the transcoder did, each on its
/// own: when the transcoder fails (writing `out`, say), `write` fails at its
/// next write, and only the caller knows which error says why.
pub(crate) fn transcoding<W, T, E>(
    out: W,
    gzip: Option<u32>,
    write: impl FnOnce(PipeWriter) -> Result<(PipeWriter, T), E>,
) -> (Result<T, E>, io::Result<(W, Transcoded)>)
where
    W: Write + Send,
    E: From<io::Error>,
{
    let (writer, reader) = pipe::pipe();
    std::thread::scope(|scope| {
        let transcoder = scope.spawn(move || transcode(reader, out, gzip));
        let written = write(writer)
            .and_then(|(writer, written)| writer.finish().map(|()| written).map_err(E::from));
        // The pipe is closed now (finished, or dropped with the error), so
        // the transcoder ends.
        (written, crate::worker::outcome(transcoder.join()))
    })
}

/// Transcodes the Perfetto trace (not gzipped) read from `input` into JSON
/// written to `out`, gzipped at level `gzip` if given.
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
