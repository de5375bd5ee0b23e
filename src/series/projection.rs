//! NVTX ranges projected onto the GPU, for the ranges a series measures.
//!
//! NVIDIA's definition (`nsys stats --report nvtxgpuproj`): a kernel, memcpy
//! or memset belongs to a range when the API call that launched it lies
//! wholly inside the range, on the range's thread; the projection runs from
//! the first start to the last end of the range's GPU work. Ranges without
//! GPU work have no projection.
//!
//! The ranges (only those some pattern matched) are known before the CUDA
//! events stream past in time order: a launch is tied to the ranges open on
//! its thread, and each operation of a launch widens those ranges.

use rustc_hash::FxHashMap;

/// A range to project, as the NVTX pass found it.
pub(super) struct ProjectedRange {
    pub start: i64,
    /// [`OPEN`] for a range still open when the capture stopped (not an
    /// `Option`: ranges are many, and this keeps each to 32 bytes).
    pub end: i64,
    pub pid: u32,
    pub tid: u32,
    /// The set of patterns that matched its name (an index the caller keeps).
    pub patterns: u32,
}

/// The end of a range still open when the capture stopped.
pub(super) const OPEN: i64 = i64::MAX;

struct Launch {
    /// Indices into `Projection::ranges`.
    ranges: Vec<usize>,
    /// Operations still to come.
    left: u32,
}

pub(super) struct Projection {
    /// In start order.
    ranges: Vec<ProjectedRange>,
    /// Where ranges without an end end.
    open_until: i64,
    /// The first range not yet started.
    next: usize,
    /// Ranges started and not known to be over, by thread.
    open: FxHashMap<(u32, u32), Vec<usize>>,
    /// By range: the first start and last end of its GPU work.
    first: Vec<i64>,
    last: Vec<i64>,
    /// Launches inside some range whose operations have not all come, by
    /// (pid, correlationId).
    launches: FxHashMap<(u32, i64), Launch>,
}

impl Projection {
    /// `ranges` in start order, as the NVTX stream gives them.
    pub fn new(ranges: Vec<ProjectedRange>, open_until: i64) -> Self {
        debug_assert!(ranges.windows(2).all(|w| w[0].start <= w[1].start));
        let n = ranges.len();
        Self {
            ranges,
            open_until,
            next: 0,
            open: FxHashMap::default(),
            first: vec![i64::MAX; n],
            last: vec![i64::MIN; n],
            launches: FxHashMap::default(),
        }
    }

    fn end(&self, range: usize) -> i64 {
        match self.ranges[range].end {
            OPEN => self.open_until,
            end => end,
        }
    }

    /// A call of thread (pid, tid) during [start, end] that launched `ops`
    /// GPU operations with correlation id `corr`. Calls come in start order.
    pub fn launch(
        &mut self,
        (pid, tid): (u32, u32),
        corr: i64,
        (start, end): (i64, i64),
        ops: u32,
    ) {
        while let Some(range) = self.ranges.get(self.next).filter(|r| r.start <= start) {
            self.open
                .entry((range.pid, range.tid))
                .or_default()
                .push(self.next);
            self.next += 1;
        }
        if ops == 0 {
            return;
        }
        let Some(open) = self.open.get(&(pid, tid)) else {
            return;
        };
        // Ranges over before this call can hold no later call either.
        let open: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&r| self.end(r) >= start)
            .collect();
        let inside: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&r| self.ranges[r].start <= start && self.end(r) >= end)
            .collect();
        self.open.insert((pid, tid), open);
        if !inside.is_empty() {
            self.launches.insert(
                (pid, corr),
                Launch {
                    ranges: inside,
                    left: ops,
                },
            );
        }
    }

    /// A GPU operation of launch (pid, corr) during [start, end]; `counted`
    /// is false for work the projection leaves out, which only settles the launch.
    pub fn op(&mut self, pid: u32, corr: i64, (start, end): (i64, i64), counted: bool) {
        let Some(launch) = self.launches.get_mut(&(pid, corr)) else {
            return;
        };
        if counted {
            for &r in &launch.ranges {
                self.first[r] = self.first[r].min(start);
                self.last[r] = self.last[r].max(end);
            }
        }
        launch.left = launch.left.saturating_sub(1);
        if launch.left == 0 {
            self.launches.remove(&(pid, corr));
        }
    }

    /// Each projected range: its set of patterns, and its projected duration.
    pub fn finish(self) -> impl Iterator<Item = (u32, i64)> {
        self.ranges
            .into_iter()
            .zip(self.first.into_iter().zip(self.last))
            .filter(|(_, (first, _))| *first != i64::MAX)
            .map(|(range, (first, last))| (range.patterns, last.max(first) - first))
    }
}
