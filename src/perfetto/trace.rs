//! A whole trace: the tracks every sequence shares, and the closed
//! sequences, put together in a fixed order.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Seek, SeekFrom, Write};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::gpu::GpuRegistry;
use super::packets::encode_packet;
use super::proto::{clock_snapshot::Clock, trace_packet, ClockSnapshot, TracePacket};
use super::sequence::{sequence_id, SequenceWriter, FLUSH_AT, SEQ_INCREMENTAL_STATE_CLEARED};
use super::spill::{gzip_member, in_temp_dir, Compressors, Level};
use super::tracks::{Maker, Scope, Tracks};
use super::{BOOTTIME, REALTIME};

/// A whole trace: its tracks, and the sequences written into it.
///
/// Sequences may be written from several threads at once. The trace's bytes
/// do not depend on how those threads interleave: each sequence writes into a
/// spill of its own, and [`finish`](Self::finish) puts the trace together
/// in a fixed order: first the clock snapshot and the descriptors of every
/// track in use (on a sequence of their own, ordered by the tracks alone),
/// then each sequence whole, by sequence id.
/// Gzipped, the head and each 512 KiB chunk of a sequence are gzip members of
/// their own, compressed on as many threads as there are cores, and readers
/// take the members as one stream.
///
/// The tracks are shared by all sequences, behind one lock. Outside the
/// trace and its sequences it is taken only by
/// [`SequenceWriter::with_tracks`], for a closure that cannot take it again.
pub struct Trace<W: Write> {
    shared: Mutex<Shared<W>>,
    /// The thread holding `shared`, if any (see [`Trace::lock`]).
    holder: AtomicUsize,
    sequences: AtomicU32,
    pub(super) gzip: Option<Level>,
    /// The span slices are clipped to (see [`Trace::set_window`]).
    pub(super) window: std::sync::OnceLock<(u64, u64)>,
}

pub(super) struct Shared<W: Write> {
    out: W,
    pub(super) tracks: Tracks,
    wall_clock: Option<TracePacket>,
    /// The latest timestamp seen in the current scope, before its shift.
    last_timestamp: Option<u64>,
    /// What the current scope adds to timestamps, pids, tids and CPUs.
    shift: Shift,
    /// The number of sequences started before the current scope began.
    scope_base: u32,
    /// The closed sequences, by id.
    pub(super) sequences: BTreeMap<u32, Written>,
    /// Closed sequences already put in trace order, with how many there are
    /// (see [`Trace::settle`]).
    settled: Option<(File, u32)>,
    /// The threads that gzip the spills' chunks.
    pub(super) compressors: Compressors,
    /// The GPUs, queues and contexts of Perfetto's GPU model.
    pub(super) gpus: GpuRegistry,
}

/// A closed sequence's packets (gzipped if the trace is).
pub(super) enum Written {
    /// Never more than one buffer: kept in memory, compressed when the trace
    /// is put together.
    Buffered(Vec<u8>),
    Spilled(File),
}

impl<W: Write> Shared<W> {
    pub(super) fn saw(&mut self, ts: u64) {
        self.last_timestamp = self.last_timestamp.max(Some(ts));
    }
}

impl<W: Write> Trace<W> {
    /// `namespace` keeps this trace's track uuids apart from other traces'.
    /// `gzip` is the compression level (0-9), or `None` for raw protobuf.
    pub fn new(out: W, namespace: u64, gzip: Option<u32>) -> Self {
        Self {
            shared: Mutex::new(Shared {
                out,
                tracks: Tracks::new(namespace),
                wall_clock: None,
                last_timestamp: None,
                shift: Shift::default(),
                scope_base: 0,
                sequences: BTreeMap::new(),
                settled: None,
                compressors: Compressors::default(),
                gpus: GpuRegistry::default(),
            }),
            holder: AtomicUsize::new(NO_THREAD),
            sequences: AtomicU32::new(0),
            gzip: gzip.map(Level::new),
            window: std::sync::OnceLock::new(),
        }
    }

    /// Clips the slices of every sequence to `[start, end]` (open where
    /// `None`): a slice that begins before or ends after it is cut there,
    /// with its own start or end in the arg `clipped_start` or `clipped_end`.
    /// Set once, before the first slice.
    pub fn set_window(&self, start: Option<u64>, end: Option<u64>) {
        let _ = self
            .window
            .set((start.unwrap_or(0), end.unwrap_or(u64::MAX)));
    }

    /// Ties trace time 0 to a wall-clock time (ns since the Unix epoch).
    pub fn set_wall_clock(&self, unix_ns_at_zero: u64) {
        let clocks = vec![
            clock(BOOTTIME, 0, false),
            clock(REALTIME, unix_ns_at_zero, false),
        ];
        self.lock().wall_clock = Some(TracePacket {
            timestamp: Some(0),
            timestamp_clock_id: Some(BOOTTIME),
            data: Some(trace_packet::Data::ClockSnapshot(ClockSnapshot { clocks })),
            ..Default::default()
        });
    }

    /// Starts a new scope: what one source (one report of several) writes
    /// into the trace from now on. Its timestamps are shifted by
    /// `scope.time_offset`, its pids and tids by `scope.pid_offset`, its
    /// CPUs by `scope.cpu_offset`; its tracks are made afresh (a pid or
    /// group key seen in an earlier scope is another track) with uuids from
    /// `scope.namespace`, and its top-level tracks are named after
    /// `scope.label`. Start it when no sequence of the previous scope is
    /// open; [`last_timestamp`](Self::last_timestamp) starts again.
    pub fn begin_scope(&self, scope: Scope) {
        let mut shared = self.lock();
        shared.shift = Shift {
            time: scope.time_offset,
            pid: scope.pid_offset,
            cpu: (!scope.drop_cpus).then_some(scope.cpu_offset),
        };
        shared.last_timestamp = None;
        shared.scope_base = self.sequences.load(Ordering::Relaxed);
        shared.tracks.begin_scope(scope);
    }

    /// Moves the sequences closed so far out of memory, in trace order, into
    /// one temporary file: a trace of many sources then holds neither a
    /// buffer nor an open file for each of their sequences. Call it once
    /// every open sequence is closed (between two scopes, say): sequences
    /// closed later must have higher ids.
    pub fn settle(&self) -> io::Result<()> {
        let gzip = self.gzip;
        let mut shared = self.lock();
        let closed = std::mem::take(&mut shared.sequences);
        if closed.is_empty() {
            return Ok(());
        }
        let (file, count) = match &mut shared.settled {
            Some(settled) => settled,
            None => shared
                .settled
                .insert((tempfile::tempfile().map_err(in_temp_dir)?, 0)),
        };
        for written in closed.into_values() {
            write_written(file, written, gzip)?;
            *count += 1;
        }
        Ok(())
    }

    /// Starts a new packet sequence, with its own interning and delta clock.
    /// Sequence ids count up from 1 in the order sequences are started.
    pub fn sequence(&self) -> SequenceWriter<'_, W> {
        let id = self.sequences.fetch_add(1, Ordering::Relaxed) + 1;
        let (shift, maker) = {
            let shared = self.lock();
            (shared.shift, Maker(id - shared.scope_base))
        };
        SequenceWriter::new(self, id, maker, shift)
    }

    /// The latest timestamp of the packets written so far by the sequences
    /// of the current scope that were drained or closed, before its shift.
    pub fn last_timestamp(&self) -> Option<u64> {
        self.lock().last_timestamp
    }

    /// Puts the trace together from the closed sequences and returns the
    /// writer. trace_processor refuses a trace with no packets, so an empty
    /// report still gets one (its clock snapshot).
    pub fn finish(self) -> io::Result<W> {
        let nothing = {
            let shared = self.lock();
            shared.sequences.is_empty() && shared.settled.is_none()
        };
        if nothing {
            self.sequence().close(0)?;
        }
        let gzip = self.gzip;
        let shared = self.shared.into_inner().unwrap_or_else(|e| e.into_inner());
        debug_assert_eq!(
            shared.sequences.len() + shared.settled.as_ref().map_or(0, |s| s.1 as usize),
            self.sequences.load(Ordering::Relaxed) as usize,
            "every sequence is closed before the trace is put together"
        );
        let mut out = shared.out;
        let mut head = Vec::new();
        if let Some(packet) = &shared.wall_clock {
            encode_packet(packet, &mut head);
        }
        if let Some(info) = shared.gpus.info() {
            let packet = TracePacket {
                timestamp: Some(0),
                timestamp_clock_id: Some(BOOTTIME),
                data: Some(trace_packet::Data::GpuInfo(info)),
                ..Default::default()
            };
            encode_packet(&packet, &mut head);
        }
        // The descriptors go on a sequence of their own, numbered after the
        // others, and apply from the start of the trace on.
        let id = self.sequences.fetch_add(1, Ordering::Relaxed) + 1;
        for (i, descriptor) in shared.tracks.used_descriptors().into_iter().enumerate() {
            let packet = TracePacket {
                timestamp: Some(0),
                timestamp_clock_id: Some(BOOTTIME),
                data: Some(trace_packet::Data::TrackDescriptor(descriptor)),
                optional_trusted_packet_sequence_id: Some(sequence_id(id)),
                sequence_flags: (i == 0).then_some(SEQ_INCREMENTAL_STATE_CLEARED),
                ..Default::default()
            };
            encode_packet(&packet, &mut head);
        }
        write_member(&mut out, &head, gzip)?;
        if let Some((mut file, _)) = shared.settled {
            file.seek(SeekFrom::Start(0))?;
            io::copy(&mut BufReader::with_capacity(FLUSH_AT, file), &mut out)?;
        }
        for written in shared.sequences.into_values() {
            write_written(&mut out, written, gzip)?;
        }
        Ok(out)
    }

    /// Locks the shared state. Taking the lock again on the thread that
    /// holds it (from inside [`SequenceWriter::with_tracks`], through
    /// another sequence) would wait forever: it panics instead.
    pub(super) fn lock(&self) -> Locked<'_, W> {
        let me = this_thread();
        // Only this thread ever stores `me`, and it stores `NO_THREAD` again
        // before unlocking: seeing `me` means this thread holds the lock.
        assert_ne!(
            self.holder.load(Ordering::Relaxed),
            me,
            "the trace's tracks are locked twice on one thread"
        );
        // A panicking sequence cannot leave the shared state half-updated:
        // carry on with what is there.
        let guard = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        self.holder.store(me, Ordering::Relaxed);
        Locked {
            guard,
            holder: &self.holder,
        }
    }
}

/// What a scope adds to what its sequences write (see [`Trace::begin_scope`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Shift {
    pub(super) time: u64,
    pub(super) pid: u32,
    /// `None` when the scope's CPU numbers are dropped.
    pub(super) cpu: Option<u32>,
}

impl Default for Shift {
    /// No scope: everything as it is.
    fn default() -> Self {
        Shift {
            time: 0,
            pid: 0,
            cpu: Some(0),
        }
    }
}

impl Shift {
    /// A pid or tid of the scope, as the trace knows it.
    pub(super) fn id(self, id: u32) -> u32 {
        match id {
            0 => 0,
            id => id + self.pid,
        }
    }
}

/// The value of [`Trace::holder`] while no thread holds the lock.
const NO_THREAD: usize = 0;

/// A number that tells the running thread apart from every other thread
/// alive: the address of a thread-local.
fn this_thread() -> usize {
    thread_local!(static MARK: u8 = const { 0 });
    MARK.with(|mark| std::ptr::from_ref(mark) as usize)
}

/// The shared state of a trace, locked by the thread in [`Trace::holder`].
pub(super) struct Locked<'a, W: Write> {
    guard: MutexGuard<'a, Shared<W>>,
    holder: &'a AtomicUsize,
}

impl<W: Write> Drop for Locked<'_, W> {
    fn drop(&mut self) {
        // Runs before the guard, a field, unlocks.
        self.holder.store(NO_THREAD, Ordering::Relaxed);
    }
}

impl<W: Write> Deref for Locked<'_, W> {
    type Target = Shared<W>;
    fn deref(&self) -> &Shared<W> {
        &self.guard
    }
}

impl<W: Write> DerefMut for Locked<'_, W> {
    fn deref_mut(&mut self) -> &mut Shared<W> {
        &mut self.guard
    }
}

/// Writes a closed sequence's packets.
fn write_written<W: Write>(out: &mut W, written: Written, gzip: Option<Level>) -> io::Result<()> {
    match written {
        Written::Buffered(bytes) => write_member(out, &bytes, gzip),
        Written::Spilled(file) => {
            io::copy(&mut BufReader::with_capacity(FLUSH_AT, file), out).map(drop)
        }
    }
}

/// Writes `bytes` as they are, or as a gzip member of their own.
fn write_member<W: Write>(out: &mut W, bytes: &[u8], gzip: Option<Level>) -> io::Result<()> {
    match gzip {
        _ if bytes.is_empty() => Ok(()),
        Some(level) => out.write_all(&gzip_member(bytes, level)?),
        None => out.write_all(bytes),
    }
}

pub(super) fn clock(clock_id: u32, timestamp: u64, is_incremental: bool) -> Clock {
    Clock {
        clock_id: Some(clock_id),
        timestamp: Some(timestamp),
        is_incremental: is_incremental.then_some(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perfetto::TrackSpec;

    #[test]
    fn locking_the_tracks_again_on_one_thread_panics_instead_of_waiting_forever() {
        let trace = Trace::new(Vec::<u8>::new(), 0, None);
        let mut first = trace.sequence();
        let mut second = trace.sequence();
        let nested = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            first.with_tracks(|_| second.add_track(TrackSpec::new(None, "group")))
        }));
        let payload = nested.expect_err("a nested lock panics");
        let message = payload
            .downcast_ref::<String>()
            .expect("a formatted message");
        assert!(message.contains("locked twice on one thread"), "{message}");
        // Released by the panic: usable again, from this thread and another.
        second.add_track(TrackSpec::new(None, "group"));
        std::thread::scope(|scope| {
            scope.spawn(|| first.add_track(TrackSpec::new(None, "other")));
        });
        first.close(0).unwrap();
        second.close(0).unwrap();
        assert!(!trace.finish().unwrap().is_empty());
    }
}
