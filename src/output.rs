//! Writing the trace file: optionally gzipped, and atomic (temporary file, then rename).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use flate2::write::GzEncoder;
use flate2::Compression;

use crate::error::{Error, Result};

/// Runs `write` on a writer into a temporary file beside `path`, and moves the
/// file into place only if it succeeds.
pub fn write_atomically<T>(
    path: &Path,
    gzip: bool,
    write: impl FnOnce(&mut dyn Write) -> Result<T>,
) -> Result<T> {
    let failed = |source| Error::Output {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".nsys2perfetto-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(failed)?;
    let file = tmp.as_file().try_clone().map_err(failed)?;
    let mut out = Encoder::new(file, gzip);
    let value = write(&mut out)?;
    out.finish().map_err(failed)?;
    tmp.persist(path).map_err(|e| failed(e.error))?;
    Ok(value)
}

enum Encoder {
    Gzip(Box<BufWriter<GzEncoder<BufWriter<File>>>>),
    Raw(BufWriter<File>),
}

const BUFFER: usize = 256 << 10;

impl Encoder {
    fn new(file: File, gzip: bool) -> Self {
        let file = BufWriter::with_capacity(BUFFER, file);
        if gzip {
            let gzip = GzEncoder::new(file, Compression::default());
            Encoder::Gzip(Box::new(BufWriter::with_capacity(BUFFER, gzip)))
        } else {
            Encoder::Raw(file)
        }
    }

    fn finish(self) -> io::Result<()> {
        let mut file = match self {
            Encoder::Gzip(w) => w.into_inner().map_err(|e| e.into_error())?.finish()?,
            Encoder::Raw(w) => w,
        };
        file.flush()?;
        file.into_inner().map_err(|e| e.into_error())?.sync_all()
    }
}

impl Write for Encoder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Encoder::Gzip(w) => w.write(buf),
            Encoder::Raw(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Encoder::Gzip(w) => w.flush(),
            Encoder::Raw(w) => w.flush(),
        }
    }
}
