//! Where a sequence's packets wait until the trace is put together.
//!
//! Each sequence writes into a spill of its own, so that what it writes does
//! not depend on what other sequences do meanwhile: an anonymous temporary
//! file (unlinked from the start, so nothing is left behind whatever happens
//! to the process). When the trace is gzipped, the spill holds the sequence as
//! one gzip member, compressed on a thread of its own beside the one that
//! produces the packets.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use flate2::write::GzEncoder;
use flate2::Compression;

use crate::worker::outcome;

/// Chunks on their way to the compressor: enough to keep it busy while the
/// producer fills the next, little memory.
const CHUNKS_IN_FLIGHT: usize = 2;
/// The compressor's output buffer: fewer, larger writes to the file.
const OUTPUT_BUFFER: usize = 256 << 10;

pub(super) struct Spill(Sink);

enum Sink {
    Raw(File),
    Gzip(Compressor),
}

impl Spill {
    pub fn new(gzip: Option<Compression>) -> io::Result<Self> {
        let file = tempfile::tempfile().map_err(in_temp_dir)?;
        Ok(Spill(match gzip {
            Some(level) => Sink::Gzip(Compressor::new(file, level)?),
            None => Sink::Raw(file),
        }))
    }

    /// Takes the bytes in `chunk`, leaving it empty (with room for as many).
    pub fn write(&mut self, chunk: &mut Vec<u8>) -> io::Result<()> {
        self.write_chunk(chunk).map_err(in_temp_dir)
    }

    fn write_chunk(&mut self, chunk: &mut Vec<u8>) -> io::Result<()> {
        match &mut self.0 {
            Sink::Raw(file) => {
                file.write_all(chunk)?;
                chunk.clear();
                Ok(())
            }
            Sink::Gzip(compressor) => compressor.send(chunk),
        }
    }

    /// Completes the spill and returns its file, positioned at its start.
    pub fn finish(self) -> io::Result<File> {
        let finished = match self.0 {
            Sink::Raw(file) => Ok(file),
            Sink::Gzip(compressor) => compressor.finish(),
        };
        let mut file = finished.map_err(in_temp_dir)?;
        file.seek(SeekFrom::Start(0))?;
        Ok(file)
    }
}

/// Says that an error concerns a temporary file, and where those go: the
/// user's message otherwise names only the output.
pub(super) fn in_temp_dir(e: io::Error) -> io::Error {
    let dir = std::env::temp_dir();
    io::Error::new(
        e.kind(),
        format!("a temporary file in {} (TMPDIR): {e}", dir.display()),
    )
}

/// Gzips the chunks it is sent into a file, on a thread of its own.
struct Compressor {
    chunks: Option<SyncSender<Vec<u8>>>,
    /// Emptied chunks coming back, to be filled again.
    spare: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<File>>>,
}

impl Compressor {
    fn new(file: File, level: Compression) -> io::Result<Self> {
        let (chunks, incoming) = mpsc::sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
        let (recycle, spare) = mpsc::sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT + 1);
        let thread =
            thread::Builder::new()
                .name("gzip".into())
                .spawn(move || -> io::Result<File> {
                    let out = BufWriter::with_capacity(OUTPUT_BUFFER, file);
                    let mut gz = GzEncoder::new(out, level);
                    for mut chunk in incoming {
                        gz.write_all(&chunk)?;
                        chunk.clear();
                        // Hand the buffer back; if the producer is gone, drop it.
                        let _ = recycle.try_send(chunk);
                    }
                    gz.finish()?.into_inner().map_err(|e| e.into_error())
                })?;
        Ok(Self {
            chunks: Some(chunks),
            spare,
            thread: Some(thread),
        })
    }

    fn send(&mut self, chunk: &mut Vec<u8>) -> io::Result<()> {
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(chunk.capacity()));
        let full = std::mem::replace(chunk, next);
        match self.chunks.as_ref().map(|c| c.send(full)) {
            Some(Ok(())) => Ok(()),
            // The compressor stopped: its own error says why.
            _ => Err(self
                .join()
                .err()
                .unwrap_or_else(|| io::Error::other("compressor stopped"))),
        }
    }

    fn finish(mut self) -> io::Result<File> {
        self.join()?
            .ok_or_else(|| io::Error::other("compressor already stopped"))
    }

    fn join(&mut self) -> io::Result<Option<File>> {
        self.chunks = None;
        match self.thread.take() {
            Some(thread) => outcome(thread.join()).map(Some),
            None => Ok(None),
        }
    }
}

impl Drop for Compressor {
    fn drop(&mut self) {
        // Still running: the sequence was given up (a failure elsewhere),
        // and the file goes unread.
        self.chunks = None;
        if let Some(thread) = self.thread.take() {
            let joined = thread.join();
            // A second panic while one unwinds would abort the process.
            if !thread::panicking() {
                let _ = outcome(joined);
            }
        }
    }
}
