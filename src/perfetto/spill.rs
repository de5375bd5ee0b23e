//! Where a sequence's packets wait until the trace is put together.
//!
//! Each sequence writes into a spill of its own, so that what it writes does
//! not depend on what other sequences do meanwhile: an anonymous temporary
//! file (unlinked from the start, so nothing is left behind whatever happens
//! to the process). When the trace is gzipped, each chunk the sequence hands
//! over becomes a gzip member of its own, compressed by the trace's
//! [`Compressors`]: a few threads shared by all sequences, as many as the
//! process may use cores. The members go into the file in the order of their
//! chunks, so the bytes do not depend on which thread compressed what, or
//! when. Readers take concatenated members as one stream.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::num::NonZeroUsize;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};

use libdeflater::{CompressionLvl, Compressor};

use crate::worker::outcome;

/// Chunks of one spill being compressed or waiting to be: enough to keep
/// the compressors busy while the sequence fills the next, little memory.
const CHUNKS_IN_FLIGHT: usize = 1;

pub(super) struct Spill(Sink);

enum Sink {
    Raw(File),
    Gzip(Members),
}

impl Spill {
    /// A spill of raw packets, or, given `compressors`, of gzip members.
    pub(super) fn new(compressors: Option<CompressorHandle>) -> io::Result<Self> {
        let file = tempfile::tempfile().map_err(in_temp_dir)?;
        Ok(Spill(match compressors {
            Some(compressors) => Sink::Gzip(Members {
                file,
                compressors,
                in_flight: VecDeque::with_capacity(CHUNKS_IN_FLIGHT + 1),
                spare: Vec::new(),
            }),
            None => Sink::Raw(file),
        }))
    }

    /// Takes the bytes in `chunk`, leaving it empty (with room for as many).
    pub(super) fn write(&mut self, chunk: &mut Vec<u8>) -> io::Result<()> {
        self.write_chunk(chunk).map_err(in_temp_dir)
    }

    fn write_chunk(&mut self, chunk: &mut Vec<u8>) -> io::Result<()> {
        match &mut self.0 {
            Sink::Raw(file) => {
                file.write_all(chunk)?;
                chunk.clear();
                Ok(())
            }
            Sink::Gzip(members) => members.send(chunk),
        }
    }

    /// Completes the spill and returns its file, positioned at its start.
    pub(super) fn finish(self) -> io::Result<File> {
        let finished = match self.0 {
            Sink::Raw(file) => Ok(file),
            Sink::Gzip(members) => members.finish(),
        };
        let mut file = finished.map_err(in_temp_dir)?;
        file.seek(SeekFrom::Start(0))?;
        Ok(file)
    }
}

/// Says that an error concerns a temporary file, and where those go: the
/// user's message otherwise names only the output.
pub(super) use crate::error::in_temp_dir;

/// A spill's gzip members, written to its file in the order of their chunks.
struct Members {
    file: File,
    compressors: CompressorHandle,
    /// The members being compressed, oldest first.
    in_flight: VecDeque<Receiver<Compressed>>,
    /// Emptied chunks, to be filled again.
    spare: Vec<Vec<u8>>,
}

impl Members {
    fn send(&mut self, chunk: &mut Vec<u8>) -> io::Result<()> {
        let next = self
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(chunk.capacity()));
        let raw = std::mem::replace(chunk, next);
        let (done, member) = mpsc::sync_channel(1);
        let job = Job {
            raw,
            level: self.compressors.level,
            done,
        };
        if self.compressors.jobs.send(job).is_err() {
            return Err(stopped());
        }
        self.in_flight.push_back(member);
        while self.in_flight.len() > CHUNKS_IN_FLIGHT {
            self.write_oldest()?;
        }
        Ok(())
    }

    /// Waits for the oldest member and writes it.
    fn write_oldest(&mut self) -> io::Result<()> {
        let Some(member) = self.in_flight.pop_front() else {
            return Ok(());
        };
        let Compressed { mut raw, member } = member.recv().map_err(|_| stopped())?;
        self.file.write_all(&member?)?;
        raw.clear();
        if self.spare.len() < CHUNKS_IN_FLIGHT {
            self.spare.push(raw);
        }
        Ok(())
    }

    fn finish(mut self) -> io::Result<File> {
        while !self.in_flight.is_empty() {
            self.write_oldest()?;
        }
        Ok(self.file)
    }
}

/// A compressor thread stopped without an answer: it panicked, and joining
/// it (see [`Compressors`]'s drop) resumes that panic.
fn stopped() -> io::Error {
    io::Error::other("a compressor thread stopped")
}

/// A chunk to compress, and where its member goes.
struct Job {
    raw: Vec<u8>,
    level: Level,
    done: SyncSender<Compressed>,
}

/// A compressed chunk: the member, and the chunk's buffer back for reuse.
struct Compressed {
    raw: Vec<u8>,
    member: io::Result<Vec<u8>>,
}

/// The threads that compress the chunks of a trace's spills, started on
/// first use: one per core the process may run on.
#[derive(Default)]
pub(super) struct Compressors {
    jobs: Option<Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
}

/// What a spill needs to have its chunks compressed.
pub(super) struct CompressorHandle {
    jobs: Sender<Job>,
    level: Level,
}

impl Compressors {
    /// A handle for a new spill, starting the threads if none runs yet.
    pub(super) fn handle(&mut self, level: Level) -> io::Result<CompressorHandle> {
        let jobs = match &self.jobs {
            Some(jobs) => jobs.clone(),
            None => self.start()?,
        };
        Ok(CompressorHandle { jobs, level })
    }

    fn start(&mut self) -> io::Result<Sender<Job>> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let cores = thread::available_parallelism().map_or(1, NonZeroUsize::get);
        for _ in 0..cores {
            let queue = Arc::clone(&queue);
            let thread = thread::Builder::new()
                .name("gzip".into())
                .spawn(move || compress_jobs(&queue))?;
            self.threads.push(thread);
        }
        self.jobs = Some(jobs.clone());
        Ok(jobs)
    }
}

/// Compresses jobs until every sender is gone.
fn compress_jobs(queue: &Mutex<Receiver<Job>>) {
    // Compressing can wait; reading the report cannot: the longest reader
    // is what the trace waits for, and gzip competing with it for the cores
    // left a core idle at the end. A lower priority (nice 5, this thread
    // only: Linux sets it per thread) gives the readers the cores first;
    // the 50x benchmark converts in 1.07 s instead of 1.12 (medians of 9).
    // Best effort: without it the output is the same, only later.
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority only reads its arguments; gettid cannot fail.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 5);
    }
    // A compressor holds a few hundred KiB of tables: one per thread, kept
    // from job to job (made again only if the level changes).
    let mut compressor: Option<(Level, Compressor)> = None;
    let mut out = Vec::new();
    loop {
        // The lock is held only to take a job, not while compressing it.
        let job = queue.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok(Job { raw, level, done }) = job else {
            return;
        };
        let compressor = match &mut compressor {
            Some((made_for, compressor)) if *made_for == level => compressor,
            slot => &mut slot.insert((level, Compressor::new(level.0))).1,
        };
        let member = compress(compressor, &raw, &mut out);
        // A spill that gave up (a failure elsewhere) no longer listens.
        let _ = done.send(Compressed { raw, member });
    }
}

/// A gzip level, 1 (fastest) to 9 (smallest); 0 stores without compressing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Level(CompressionLvl);

impl Level {
    /// `level`, or the nearest level libdeflate has (0 to 12).
    pub(super) fn new(level: u32) -> Self {
        // 0 to 12 are all valid, so the default is never used.
        Level(CompressionLvl::new(level.min(12) as i32).unwrap_or_default())
    }
}

/// `bytes` as one gzip member.
pub(super) fn gzip_member(bytes: &[u8], level: Level) -> io::Result<Vec<u8>> {
    let mut compressor = Compressor::new(level.0);
    compress(&mut compressor, bytes, &mut Vec::new())
}

/// `bytes` as one gzip member, made in `scratch` (kept for the next call,
/// as big as the largest member's bound) and copied out at its size.
///
/// libdeflate compresses whole buffers only, which suits chunks that are each
/// a member of their own; its members are the same bytes for the same input
/// and level, whatever the thread.
fn compress(
    compressor: &mut Compressor,
    bytes: &[u8],
    scratch: &mut Vec<u8>,
) -> io::Result<Vec<u8>> {
    let bound = compressor.gzip_compress_bound(bytes.len());
    if scratch.len() < bound {
        scratch.resize(bound, 0);
    }
    let len = compressor
        .gzip_compress(bytes, scratch)
        .map_err(|e| io::Error::other(format!("gzip: {e}")))?;
    Ok(scratch[..len].to_vec())
}

impl Drop for Compressors {
    fn drop(&mut self) {
        // The threads end once the spills' handles are gone too: every
        // spill has been finished or given up by now.
        self.jobs = None;
        for thread in self.threads.drain(..) {
            let joined = thread.join();
            // A second panic while one unwinds would abort the process.
            if !thread::panicking() {
                outcome(joined);
            }
        }
    }
}
