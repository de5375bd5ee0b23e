//! NVTX GPU projection: each NVTX range projected onto the GPU, from the first
//! start to the last end of the GPU operations launched inside it.
//!
//! NVIDIA's definition (`nsys stats --report nvtxgpuproj`): a kernel, memcpy
//! or memset belongs to a range when the API call that launched it lies
//! wholly inside the range, on the range's thread; only ranges that start and
//! end on one thread count; the count is of launches (correlation ids).
//!
//! The ranges come from a [`RangeFeed`] on another thread, in start order;
//! the caller hands the projector each event of the CUDA stream, in time
//! order ([`Projector::cuda_event`]): it starts the ranges the stream has
//! reached, closes those it has passed, takes API calls as launches and
//! kernels, copies and memsets as their GPU work. A range is finished when
//! the stream has passed its end and every launch inside it has all its
//! operations; [`Projector::next_ready`] hands out finished projections in
//! start order (the longer first), as soon as no later one can start before
//! them. Memory holds the open ranges and the ranges waiting for their GPU
//! work, not the report.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;

use crate::nsys::cuda::CudaEvent;

mod feed;

pub(crate) use feed::{channel, Name, RangeFeed, RangeSource};

/// A range to project, with what the caller keeps of it (`data`).
pub(crate) struct Range<T> {
    pub start: u64,
    /// `None` for a range still open when the capture stopped.
    pub end: Option<u64>,
    pub pid: u32,
    pub tid: u32,
    pub data: T,
}

/// A range projected onto the GPU.
pub(crate) struct Projected<T> {
    pub range: Range<T>,
    /// The range's end; for a range never ended, where open ranges end.
    pub range_end: u64,
    /// The first start and the last end (not before `first`) of its GPU work.
    pub first: u64,
    pub last: u64,
    /// Launches inside the range that ran GPU work.
    pub launches: u32,
    /// The device of the first GPU operation that came.
    pub device: i64,
}

struct Open {
    id: u64,
    start: u64,
    end: Option<u64>,
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

/// The order projections are handed out in: by start, the longer first, so
/// that they nest as their source ranges do.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct ReadyOrder {
    first: u64,
    longer_first: Reverse<u64>,
    id: u64,
}

struct Launch {
    inside: Vec<u64>,
    left: u32,
    arrived: bool,
}

/// A range from its start until it is handed out, or dropped unprojected:
/// one entry, whatever happens to it on the way.
struct Slot<T> {
    range: Range<T>,
    /// What the launches inside it brought, from the first on. Most ranges
    /// never see a launch.
    work: Option<Work>,
}

struct Work {
    /// The stream has passed the range's end.
    closed: bool,
    /// Launches inside the range still waiting for operations.
    pending: u32,
    launches: u32,
    first: u64,
    last: u64,
    device: i64,
    /// Finished, waiting to be handed out.
    finished: bool,
}

pub(crate) struct Projector<T> {
    next_id: u64,
    /// Where ranges without an end end, once known.
    open_until: Option<u64>,
    /// Ranges started and not yet handed out (or dropped), by id.
    slots: FxHashMap<u64, Slot<T>>,
    /// Ranges not yet closed, by end.
    open_ends: BinaryHeap<Reverse<RangeEnd>>,
    /// Ranges not yet closed, by thread.
    open_by_thread: FxHashMap<Thread, Vec<Open>>,
    /// Launches inside some range whose operations have not all arrived.
    launches: FxHashMap<LaunchKey, Launch>,
    /// Unfinished ranges that have operations, by first operation start: (start, id).
    unfinished: BTreeSet<(u64, u64)>,
    /// Finished projections waiting to be handed out.
    finished: BinaryHeap<Reverse<ReadyOrder>>,
    now: u64,
    /// The ranges not yet started.
    source: RangeSource<T>,
}

impl<T> Projector<T> {
    /// A projector of the ranges `source` gives (in start order), taken as
    /// the CUDA events need them. `open_until`, where known before the
    /// ranges come, is where ranges never ended end; otherwise the feed's
    /// end says.
    pub(crate) fn fed_by(source: RangeSource<T>, open_until: Option<u64>) -> Self {
        Self {
            next_id: 0,
            open_until,
            slots: FxHashMap::default(),
            open_ends: BinaryHeap::new(),
            open_by_thread: FxHashMap::default(),
            launches: FxHashMap::default(),
            unfinished: BTreeSet::new(),
            finished: BinaryHeap::new(),
            now: 0,
            source,
        }
    }

    /// One event of the report's CUDA stream (in time order): an API call
    /// is a launch of its `gpu_ops` operations; kernels, copies and memsets
    /// are projected; a graph traced as a whole only settles its launch.
    /// Events before the capture's origin cannot be projected.
    pub(crate) fn cuda_event(&mut self, event: &CudaEvent<'_>) {
        let Ok(t) = u64::try_from(event.span().0) else {
            return;
        };
        while let Some(range) = self.source.next_until(t) {
            self.start(range);
        }
        if let Some(last) = self.source.last() {
            self.open_until = Some(last);
        }
        self.advance(t);
        let (common, counted) = match event {
            CudaEvent::Api(call) => {
                if let (Some(corr), Ok(end)) = (call.correlation_id, u64::try_from(call.end)) {
                    self.launch((call.pid, call.tid), corr, (t, end), call.gpu_ops);
                }
                return;
            }
            // A graph traced as a whole settles its launch, unprojected.
            work => match work.launched_work() {
                Some(common) => (common, !matches!(work, CudaEvent::Graph(_))),
                None => return,
            },
        };
        if let (Some(pid), Some(corr)) = (common.place.pid, common.correlation_id) {
            match (counted, u64::try_from(common.end)) {
                (true, Ok(end)) => self.op(pid, corr, common.place.device, (t, end)),
                _ => self.op_not_projected(pid, corr),
            }
        }
    }

    /// A range that the stream has reached the start of. Ranges come in
    /// start order, before [`Projector::advance`] passes their start.
    fn start(&mut self, range: Range<T>) {
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
        });
        self.slots.insert(id, Slot { range, work: None });
    }

    /// The stream has reached `t`: closes the ranges that ended before it.
    fn advance(&mut self, t: u64) {
        self.now = self.now.max(t);
        let open_until = self.open_until.unwrap_or(u64::MAX);
        while let Some(Reverse(next)) = self.open_ends.peek() {
            if next.end.min(open_until) >= t {
                break;
            }
            let Reverse(RangeEnd { id, thread, .. }) = self.open_ends.pop().expect("peeked");
            self.close(id, thread);
        }
    }

    /// A launch of `ops` operations by thread (pid, tid) during [start, end].
    fn launch(&mut self, (pid, tid): (u32, u32), corr: i64, (start, end): (u64, u64), ops: u32) {
        if ops == 0 {
            return;
        }
        let Some(open) = self.open_by_thread.get(&Thread { pid, tid }) else {
            return;
        };
        let open_until = self.open_until.unwrap_or(u64::MAX);
        let mut inside = Vec::new();
        for o in open
            .iter()
            .filter(|o| o.start <= start && o.end.unwrap_or(open_until) >= end)
        {
            let slot = self.slots.get_mut(&o.id).expect("an open range");
            let p = slot.work.get_or_insert(Work {
                closed: false,
                pending: 0,
                launches: 0,
                first: u64::MAX,
                last: 0,
                device: 0,
                finished: false,
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
    fn op(&mut self, pid: u32, corr: i64, device: i64, (start, end): (u64, u64)) {
        let Some(launch) = self.launches.get_mut(&LaunchKey { pid, corr }) else {
            return;
        };
        launch.arrived = true;
        for id in launch.inside.iter() {
            let p = self
                .slots
                .get_mut(id)
                .and_then(|s| s.work.as_mut())
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

    /// The ranges (by id) that launch (pid, corr) lies in, while it waits
    /// for operations.
    pub(crate) fn launch_ranges(
        &self,
        pid: u32,
        corr: i64,
    ) -> impl Iterator<Item = (u64, &Range<T>)> {
        self.launches
            .get(&LaunchKey { pid, corr })
            .into_iter()
            .flat_map(|launch| launch.inside.iter())
            .map(|id| (*id, &self.slots[id].range))
    }

    /// An operation of launch (pid, corr) that NVIDIA's projection does not
    /// count: a CUDA graph traced as a whole (`GRAPH_TRACE`). It only stops
    /// the launch from waiting for it.
    fn op_not_projected(&mut self, pid: u32, corr: i64) {
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
            let p = self.work(id);
            p.pending -= 1;
            if launch.arrived {
                p.launches += 1;
            }
            self.finish_if_done(id);
        }
    }

    /// The stream is over: launches still waiting never get their remaining
    /// operations; every projection becomes ready. Ranges not yet started
    /// hold no launch: the feed is told to stop.
    pub(crate) fn finish(&mut self) {
        self.source.close();
        for (_, launch) in std::mem::take(&mut self.launches) {
            for id in launch.inside {
                let p = self.work(id);
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
        let waiting: Vec<u64> = self
            .slots
            .iter()
            .filter(|(_, s)| s.work.as_ref().is_some_and(|w| !w.finished))
            .map(|(&id, _)| id)
            .collect();
        for id in waiting {
            self.finish_if_done(id);
        }
        self.now = u64::MAX;
    }

    /// The range has ended on the CPU: no launch can land in it any more.
    fn close(&mut self, id: u64, thread: Thread) {
        if let Some(open) = self.open_by_thread.get_mut(&thread) {
            if let Some(at) = open.iter().position(|o| o.id == id) {
                open.swap_remove(at);
            }
        }
        if let Entry::Occupied(mut slot) = self.slots.entry(id) {
            match &mut slot.get_mut().work {
                // No launch inside: nothing to project.
                None => drop(slot.remove()),
                Some(p) => {
                    p.closed = true;
                    self.finish_if_done(id);
                }
            }
        }
    }

    /// What the launches inside range `id` brought so far.
    fn work(&mut self, id: u64) -> &mut Work {
        self.slots
            .get_mut(&id)
            .and_then(|s| s.work.as_mut())
            .expect("a range with a launch inside")
    }

    fn finish_if_done(&mut self, id: u64) {
        let p = self.work(id);
        if p.finished || !p.closed || p.pending > 0 {
            return;
        }
        if p.first == u64::MAX {
            // Its launches ran nothing: no projection.
            self.slots.remove(&id);
            return;
        }
        p.finished = true;
        let (first, last) = (p.first, p.last);
        self.unfinished.remove(&(first, id));
        self.finished.push(Reverse(ReadyOrder {
            first,
            longer_first: Reverse(last),
            id,
        }));
    }

    /// The next finished projection that starts before any projection still
    /// to come can: before the stream's time and before the first operation
    /// of every unfinished range.
    pub(crate) fn next_ready(&mut self) -> Option<Projected<T>> {
        let bound = match self.unfinished.first() {
            Some(&(first, _)) => first.min(self.now),
            None => self.now,
        };
        let Reverse(next) = self.finished.peek()?;
        if next.first >= bound && bound != u64::MAX {
            return None;
        }
        let Reverse(ReadyOrder { id, .. }) = self.finished.pop().expect("peeked");
        let Slot { range, work } = self.slots.remove(&id).expect("a finished projection");
        let p = work.expect("a finished projection has work");
        let range_end = range
            .end
            .unwrap_or_else(|| self.open_until.unwrap_or(range.start));
        Some(Projected {
            range,
            range_end,
            first: p.first,
            last: p.last.max(p.first),
            launches: p.launches,
            device: p.device,
        })
    }
}

/// Runs `ranges` on a thread of its own, which sends the ranges to project
/// to its [`RangeFeed`] in start order, while `project` runs here with a
/// [`Projector`] fed by it; `open_until` is where ranges never ended end.
/// Both results come back; the first error, that of `ranges` first, stops
/// both.
pub(crate) fn streamed<T, A, B, E>(
    open_until: Option<u64>,
    ranges: impl FnOnce(&mut RangeFeed<T>) -> Result<A, E> + Send,
    project: impl FnOnce(&mut Projector<T>) -> Result<B, E>,
) -> Result<(A, B), E>
where
    T: Send,
    A: Send,
    E: Send,
{
    let (mut feed, source) = channel();
    std::thread::scope(|scope| {
        let sender = scope.spawn(move || {
            let sent = ranges(&mut feed);
            // A feed dropped unfinished ends the stream after a failure.
            if sent.is_ok() {
                feed.finish();
            }
            sent
        });
        let mut projector = Projector::fed_by(source, open_until);
        let projected = project(&mut projector);
        // Stops the sending side if it is still going.
        drop(projector);
        let sent = match sender.join() {
            Ok(sent) => sent,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        Ok((sent?, projected?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64) -> Range<u32> {
        Range {
            start,
            end: Some(start + 10),
            pid: 1,
            tid: 1,
            data: 0,
        }
    }

    #[test]
    fn a_failing_projection_stops_the_sending_thread_instead_of_blocking_it() {
        // Far more ranges than the channel holds: the sender must give up
        // once the projecting side is gone, or the scope would never end.
        let result: Result<(u64, ()), &str> = streamed(
            None,
            |feed| {
                let mut sent = 0;
                for t in 0..100 * feed::BATCH as u64 {
                    feed.send(range(t));
                    sent += 1;
                }
                Ok(sent)
            },
            |_| Err("projection failed"),
        );
        assert_eq!(result.unwrap_err(), "projection failed");
    }

    #[test]
    fn the_sending_side_error_comes_first() {
        let result: Result<((), ()), &str> = streamed(
            None,
            |feed| {
                feed.send(range(5));
                Err("reading ranges failed")
            },
            |projector| {
                projector.finish();
                Err("projection failed")
            },
        );
        assert_eq!(result.unwrap_err(), "reading ranges failed");
    }

    #[test]
    fn every_range_sent_reaches_the_projector_in_order() {
        let n = 3 * feed::BATCH as u64 + 7;
        let (sent, started) = streamed(
            None,
            |feed| -> Result<u64, ()> {
                for t in 0..n {
                    feed.send(range(t));
                }
                Ok(n)
            },
            |projector| {
                let starts: Vec<u64> = std::iter::from_fn(|| projector.source.next_until(u64::MAX))
                    .map(|r| r.start)
                    .collect();
                Ok(starts)
            },
        )
        .unwrap();
        assert_eq!(sent, n);
        assert_eq!(started, (0..n).collect::<Vec<_>>());
    }
}
