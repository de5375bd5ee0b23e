//! NVTX GPU projection: each NVTX range projected onto the GPU, from the first
//! start to the last end of the GPU operations launched inside it.
//!
//! NVIDIA's definition (`nsys stats --report nvtxgpuproj`): a kernel, memcpy
//! or memset belongs to a range when the API call that launched it lies
//! wholly inside the range, on the range's thread; only ranges that start and
//! end on one thread count; the count is of launches (correlation ids).
//!
//! The NVTX thread feeds its ranges, in start order, to the CUDA thread, which
//! sees every launch and GPU operation in time order. A range is finished when
//! the CUDA stream has passed its end and every launch inside it has all its
//! operations; finished projections are written in start order, as soon as no
//! later one can start before them.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::io::Write;

use rustc_hash::FxHashMap;

use crate::nsys::Metadata;
use crate::perfetto::{Arg, ArgValue, SequenceWriter, Slice, SliceTrack, Stacking, TrackSpec};

use super::gpu::GpuTracks;
use super::summary::Summary;
use super::ConvertError;

mod feed;

use feed::Range;
pub use feed::{channel, RangeFeed, RangeSource};

pub const NVTX_GPU: &str = "nvtx_gpu";

struct Open {
    id: u64,
    start: u64,
    end: Option<u64>,
    /// Moved to `ranges` when a launch lands inside.
    range: Option<Range>,
}

/// A thread of the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Thread {
    pid: u32,
    tid: u32,
}

/// A launch: the process's correlation id of an API call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct LaunchKey {
    pid: u32,
    corr: i64,
}

/// When an open range ends; ordered by end.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct RangeEnd {
    end: u64,
    id: u64,
    thread: Thread,
}

/// The order projections are written in: by start, the longer first, so
/// that ranges nest as their source ranges do.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct WriteOrder {
    first: u64,
    longer_first: Reverse<u64>,
    id: u64,
}

/// A projection track: the ranges of one thread on one GPU.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct ProjectionTrack {
    device: i64,
    thread: Thread,
}

struct Launch {
    inside: Vec<u64>,
    left: u32,
    arrived: bool,
}

struct Projected {
    range: Range,
    /// The CUDA stream has passed the range's end.
    closed: bool,
    /// Launches inside the range still waiting for operations.
    pending: u32,
    launches: u32,
    first: u64,
    last: u64,
    device: i64,
}

/// Computes projections on the CUDA thread and writes them on a sequence of
/// their own, one track per (device, source thread) in the device's group.
pub struct Projector<'p, 's, W: Write> {
    seq: &'p mut SequenceWriter<'s, W>,
    source: RangeSource,
    /// Ranges with a launch inside, until they are finished.
    ranges: FxHashMap<u64, Projected>,
    next_id: u64,
    /// Ranges not yet closed, by end.
    open_ends: BinaryHeap<Reverse<RangeEnd>>,
    /// Ranges not yet closed, by thread. Most ranges never see a launch:
    /// they live and die here, without an entry in `ranges`.
    open_by_thread: FxHashMap<Thread, Vec<Open>>,
    /// Launches inside some range whose operations have not all arrived:
    /// the ranges, and the operations still to come.
    launches: FxHashMap<LaunchKey, Launch>,
    /// Unfinished ranges that have operations, by first operation start: (start, id).
    unfinished: BTreeSet<(u64, u64)>,
    /// Finished projections waiting to be written, by (start, longer first).
    finished: BinaryHeap<Reverse<WriteOrder>>,
    done: FxHashMap<u64, Projected>,
    tracks: FxHashMap<ProjectionTrack, SliceTrack>,
    now: u64,
}

impl<'p, 's, W: Write> Projector<'p, 's, W> {
    pub fn new(seq: &'p mut SequenceWriter<'s, W>, source: RangeSource) -> Self {
        Self {
            seq,
            source,
            ranges: FxHashMap::default(),
            next_id: 0,
            open_ends: BinaryHeap::new(),
            open_by_thread: FxHashMap::default(),
            launches: FxHashMap::default(),
            unfinished: BTreeSet::new(),
            finished: BinaryHeap::new(),
            done: FxHashMap::default(),
            tracks: FxHashMap::default(),
            now: 0,
        }
    }

    /// The CUDA stream has reached `t`: takes the ranges that started, closes
    /// those that ended, and writes what can no longer change its place.
    pub fn advance(
        &mut self,
        t: u64,
        gpu: &GpuTracks,
        meta: &Metadata,
        summary: &mut Summary,
    ) -> Result<(), ConvertError> {
        self.now = self.now.max(t);
        while let Some(range) = self.source.next_until(t) {
            let id = self.next_id;
            self.next_id += 1;
            let thread = Thread {
                pid: range.pid,
                tid: range.tid,
            };
            self.open_ends.push(Reverse(RangeEnd {
                end: range.end.unwrap_or(u64::MAX),
                id,
                thread,
            }));
            self.open_by_thread.entry(thread).or_default().push(Open {
                id,
                start: range.start,
                end: range.end,
                range: Some(range),
            });
        }
        // Open ranges end where the NVTX data ends, once that is known.
        let open_until = self.source.end().unwrap_or(u64::MAX);
        while let Some(Reverse(next)) = self.open_ends.peek() {
            if next.end.min(open_until) >= t {
                break;
            }
            let Reverse(RangeEnd { id, thread, .. }) = self.open_ends.pop().expect("peeked");
            self.close(id, thread);
        }
        self.write_ready(gpu, meta, summary)
    }

    /// A launch of `ops` operations by thread (pid, tid) during [start, end].
    pub fn launch(
        &mut self,
        (pid, tid): (u32, u32),
        corr: i64,
        (start, end): (u64, u64),
        ops: u32,
    ) {
        if ops == 0 {
            return;
        }
        let Some(open) = self.open_by_thread.get_mut(&Thread { pid, tid }) else {
            return;
        };
        let open_until = self.source.end().unwrap_or(u64::MAX);
        let mut inside = Vec::new();
        for o in open
            .iter_mut()
            .filter(|o| o.start <= start && o.end.unwrap_or(open_until) >= end)
        {
            let p = self.ranges.entry(o.id).or_insert_with(|| Projected {
                range: o.range.take().expect("a range not yet projected"),
                closed: false,
                pending: 0,
                launches: 0,
                first: u64::MAX,
                last: 0,
                device: 0,
            });
            p.pending += 1;
            inside.push(o.id);
        }
        if inside.is_empty() {
            return;
        }
        self.launches.insert(
            LaunchKey { pid, corr },
            Launch {
                inside,
                left: ops,
                arrived: false,
            },
        );
    }

    /// A GPU operation of launch (pid, corr) ran on `device` during [start, end].
    pub fn op(&mut self, pid: u32, corr: i64, device: i64, (start, end): (u64, u64)) {
        let Some(launch) = self.launches.get_mut(&LaunchKey { pid, corr }) else {
            return;
        };
        launch.arrived = true;
        for id in launch.inside.iter() {
            let p = self
                .ranges
                .get_mut(id)
                .expect("a range waiting for its launches");
            if p.first == u64::MAX {
                p.device = device;
                self.unfinished.insert((start, *id));
            }
            p.first = p.first.min(start);
            p.last = p.last.max(end);
        }
        self.one_less(pid, corr);
    }

    /// An operation of launch (pid, corr) that NVIDIA's projection does not
    /// count: a CUDA graph traced as a whole (`GRAPH_TRACE`). It only stops
    /// the launch from waiting for it.
    pub fn op_not_projected(&mut self, pid: u32, corr: i64) {
        if self.launches.contains_key(&LaunchKey { pid, corr }) {
            self.one_less(pid, corr);
        }
    }

    /// One operation of a launch has come; the last one settles the launch.
    fn one_less(&mut self, pid: u32, corr: i64) {
        let key = LaunchKey { pid, corr };
        let launch = self.launches.get_mut(&key).expect("present");
        launch.left -= 1;
        if launch.left > 0 {
            return;
        }
        let launch = self.launches.remove(&key).expect("present");
        for id in launch.inside {
            let p = self.ranges.get_mut(&id).expect("a range");
            p.pending -= 1;
            if launch.arrived {
                p.launches += 1;
            }
            self.finish_if_done(id);
        }
    }

    /// The CUDA stream is over: launches still waiting never get their
    /// remaining operations; every projection is written.
    pub fn finish(
        mut self,
        gpu: &GpuTracks,
        meta: &Metadata,
        summary: &mut Summary,
    ) -> Result<(), ConvertError> {
        self.source.close();
        for (_, launch) in std::mem::take(&mut self.launches) {
            for id in launch.inside {
                let p = self.ranges.get_mut(&id).expect("a range");
                p.pending -= 1;
                // A launch some of whose operations arrived counts, as in nsys.
                if launch.arrived {
                    p.launches += 1;
                }
            }
        }
        for Reverse(RangeEnd { id, thread, .. }) in std::mem::take(&mut self.open_ends) {
            self.close(id, thread);
        }
        // Ranges closed before, whose last launches were still waiting.
        let waiting: Vec<u64> = self.ranges.keys().copied().collect();
        for id in waiting {
            self.finish_if_done(id);
        }
        self.now = u64::MAX;
        self.write_ready(gpu, meta, summary)
    }

    /// The range has ended on the CPU: no launch can land in it any more.
    fn close(&mut self, id: u64, thread: Thread) {
        if let Some(open) = self.open_by_thread.get_mut(&thread) {
            if let Some(at) = open.iter().position(|o| o.id == id) {
                open.swap_remove(at);
            }
        }
        if let Some(p) = self.ranges.get_mut(&id) {
            p.closed = true;
            self.finish_if_done(id);
        }
    }

    fn finish_if_done(&mut self, id: u64) {
        let p = &self.ranges[&id];
        if !p.closed || p.pending > 0 {
            return;
        }
        let p = self.ranges.remove(&id).expect("present");
        if p.first == u64::MAX {
            return;
        }
        self.unfinished.remove(&(p.first, id));
        self.finished.push(Reverse(WriteOrder {
            first: p.first,
            longer_first: Reverse(p.last),
            id,
        }));
        self.done.insert(id, p);
    }
}

impl<W: Write> Projector<'_, '_, W> {
    /// Writes the finished projections that start before any projection still
    /// to come can: before the CUDA stream's time and before the first
    /// operation of every unfinished range.
    fn write_ready(
        &mut self,
        gpu: &GpuTracks,
        meta: &Metadata,
        summary: &mut Summary,
    ) -> Result<(), ConvertError> {
        let bound = match self.unfinished.first() {
            Some(&(first, _)) => first.min(self.now),
            None => self.now,
        };
        while let Some(Reverse(next)) = self.finished.peek() {
            if next.first >= bound && bound != u64::MAX {
                break;
            }
            let Reverse(WriteOrder { id, .. }) = self.finished.pop().expect("peeked");
            let p = self.done.remove(&id).expect("a finished projection");
            self.write(&p, gpu, meta)?;
            summary.count(NVTX_GPU);
        }
        Ok(())
    }

    fn write(
        &mut self,
        p: &Projected,
        gpu: &GpuTracks,
        meta: &Metadata,
    ) -> Result<(), ConvertError> {
        let (pid, tid) = (p.range.pid, p.range.tid);
        let key = ProjectionTrack {
            device: p.device,
            thread: Thread { pid, tid },
        };
        let track = match self.tracks.get(&key) {
            Some(&t) => t,
            None => {
                let name = format!(
                    "NVTX projection: {} (tid {tid})",
                    super::threads::thread_name(meta, pid, tid)
                );
                let mut spec = TrackSpec::new(gpu.device_group(p.device), name);
                spec.description = Some(format!(
                    "NVTX ranges of thread {tid} (pid {pid}) projected onto GPU {}: from the first start to the last end of the GPU work launched inside each range",
                    p.device
                ));
                // After the device's streams.
                spec.rank = Some(i32::MAX - 1);
                let t = self.seq.slice_track(spec, Stacking::Nest);
                self.tracks.insert(key, t);
                t
            }
        };
        let range_end = p
            .range
            .end
            .unwrap_or_else(|| self.source.end().unwrap_or(p.range.start));
        let args = [
            Arg::new("gpu_ops", ArgValue::Uint(u64::from(p.launches))),
            Arg::new("range_start", ArgValue::Uint(p.range.start)),
            Arg::new(
                "range_duration",
                ArgValue::Uint(range_end.saturating_sub(p.range.start)),
            ),
        ];
        let slice = Slice::new(
            p.first,
            Some(p.last.max(p.first)),
            p.range.name.as_str(),
            NVTX_GPU,
            &args,
        );
        self.seq.slice(track, &slice)?;
        Ok(())
    }
}
