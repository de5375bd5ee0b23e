//! An in-process pipe: the trace writer on one thread, the transcoder
//! reading its bytes on another, with a few chunks in flight at most, so
//! the protobuf trace never lies whole in memory or on disk.

use std::io::{self, Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Bytes handed over at a time.
const CHUNK: usize = 256 << 10;
/// Chunks in flight before the writer waits for the reader.
const IN_FLIGHT: usize = 4;

/// A pipe's two ends.
pub(super) fn pipe() -> (PipeWriter, PipeReader) {
    let (tx, rx) = sync_channel(IN_FLIGHT);
    (
        PipeWriter {
            tx,
            buf: Vec::with_capacity(CHUNK),
        },
        PipeReader {
            rx,
            chunk: Vec::new(),
            at: 0,
            ended: false,
        },
    )
}

/// The writing end. Only [`finish`](Self::finish) tells the reader that the
/// bytes are complete: dropped without it, the reader sees a broken pipe.
pub(crate) struct PipeWriter {
    tx: SyncSender<Vec<u8>>,
    buf: Vec<u8>,
}

impl PipeWriter {
    fn send(&mut self, chunk: Vec<u8>) -> io::Result<()> {
        self.tx.send(chunk).map_err(|_| {
            io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the JSON writer stopped reading the trace",
            )
        })
    }

    /// Sends what is buffered, then the end of the bytes (an empty chunk,
    /// which is never sent otherwise).
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.flush()?;
        self.send(Vec::new())
    }
}

impl Write for PipeWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.send(chunk)
    }
}

/// The reading end: end of file once the writer finished, an error if the
/// writer went away without finishing.
pub(super) struct PipeReader {
    rx: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
    ended: bool,
}

impl Read for PipeReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.chunk.len() {
            if self.ended {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(chunk) if chunk.is_empty() => self.ended = true,
                Ok(chunk) => {
                    self.chunk = chunk;
                    self.at = 0;
                }
                Err(_) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, WriterGone)),
            }
        }
        let n = out.len().min(self.chunk.len() - self.at);
        out[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The writer went away without finishing: it failed, and its own error
/// says why.
#[derive(Debug)]
struct WriterGone;

impl std::fmt::Display for WriterGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the trace stopped before its end")
    }
}

impl std::error::Error for WriterGone {}

/// Whether `e` is the reader's error of a writer that went away without
/// finishing (which then has an error of its own).
pub(crate) fn writer_gone(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<WriterGone>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_arrive_whole_and_in_order() {
        let (mut w, mut r) = pipe();
        let data: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i % 251) as u8).collect();
        std::thread::scope(|s| {
            let reader = s.spawn(move || {
                let mut got = Vec::new();
                r.read_to_end(&mut got).map(|_| got)
            });
            for piece in data.chunks(1000) {
                w.write_all(piece).unwrap();
            }
            w.finish().unwrap();
            assert_eq!(reader.join().unwrap().unwrap(), data);
        });
    }

    #[test]
    fn a_writer_gone_without_finishing_is_an_error() {
        let (mut w, mut r) = pipe();
        w.write_all(b"partial").unwrap();
        w.flush().unwrap();
        drop(w);
        let mut got = Vec::new();
        let e = r.read_to_end(&mut got).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(got, b"partial");
    }
}
