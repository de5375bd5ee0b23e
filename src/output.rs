//! Writing the trace file: optionally gzipped on a thread of its own, and
//! atomic (a temporary file, renamed when complete).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use flate2::write::GzEncoder;
use flate2::Compression;

use crate::error::{Error, Result};

/// Runs `write` on a writer into a temporary file beside `path`, and moves the
/// file into place only if it succeeds.
pub fn write_atomically<T>(
    path: &Path,
    gzip: Option<u32>,
    write: impl FnOnce(&mut (dyn Write + Send)) -> Result<T>,
) -> Result<T> {
    let failed = |source| Error::Output {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".nsys2perfetto-").suffix(".tmp");
    // A trace is a file to share: the permissions any new file gets (0666
    // less the umask), not the temporary file's private 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let tmp = builder.tempfile_in(dir).map_err(|e| failed(os_error(e)))?;
    let file = tmp.as_file().try_clone().map_err(failed)?;
    let value = if let Some(level) = gzip {
        let mut out = GzipThread::new(file, Compression::new(level));
        let value = write(&mut out);
        // Join the compressor even when `write` failed, then report the first error.
        let finished = out.finish();
        let value = value?;
        finished.map_err(failed)?;
        value
    } else {
        let mut out = BufWriter::with_capacity(CHUNK, file);
        let value = write(&mut out)?;
        out.into_inner()
            .map_err(|e| failed(e.into_error()))?
            .sync_all()
            .map_err(failed)?;
        value
    };
    tmp.persist(path).map_err(|e| failed(e.error))?;
    Ok(value)
}

/// The error of creating the temporary file, without its made-up name (the
/// user's message names the output): its kind says what went wrong.
fn os_error(e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::NotFound => io::Error::new(
            io::ErrorKind::NotFound,
            "no file can be created in its directory",
        ),
        kind => io::Error::new(kind, kind.to_string()),
    }
}

/// Bytes handed to the compressor at a time.
const CHUNK: usize = 1 << 20;
/// Chunks in flight: enough to keep both threads busy, little memory.
const CHUNKS_IN_FLIGHT: usize = 4;

/// A writer that gzips on another thread, so that compression runs beside the
/// conversion instead of after it.
struct GzipThread {
    buf: Vec<u8>,
    chunks: Option<SyncSender<Vec<u8>>>,
    spare: Receiver<Vec<u8>>,
    compressor: Option<JoinHandle<io::Result<()>>>,
}

impl GzipThread {
    fn new(file: File, level: Compression) -> Self {
        let (chunks, incoming) = mpsc::sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
        let (recycle, spare) = mpsc::sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT + 1);
        let compressor = thread::spawn(move || -> io::Result<()> {
            let mut gz = GzEncoder::new(BufWriter::with_capacity(CHUNK, file), level);
            for mut chunk in incoming {
                gz.write_all(&chunk)?;
                chunk.clear();
                // Hand the buffer back; if the writer is gone, just drop it.
                let _ = recycle.try_send(chunk);
            }
            let file = gz.finish()?.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()
        });
        Self {
            buf: Vec::with_capacity(CHUNK),
            chunks: Some(chunks),
            spare,
            compressor: Some(compressor),
        }
    }

    fn send(&mut self) -> io::Result<()> {
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.buf, next);
        let sent = self.chunks.as_ref().map(|c| c.send(full));
        match sent {
            Some(Ok(())) => Ok(()),
            // The compressor stopped: its own error says why.
            _ => Err(self
                .join()
                .err()
                .unwrap_or_else(|| io::Error::other("compressor stopped"))),
        }
    }

    fn join(&mut self) -> io::Result<()> {
        self.chunks = None;
        match self.compressor.take() {
            Some(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("compressor panicked"))),
            None => Ok(()),
        }
    }

    fn finish(mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.send()?;
        }
        self.join()
    }
}

impl Write for GzipThread {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for GzipThread {
    fn drop(&mut self) {
        let _ = self.join();
    }
}
