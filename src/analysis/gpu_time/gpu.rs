//! The pass over the CUDA events that measures each GPU: busy time, idle
//! time and why, time by kind, communication overlap and launch delays.
//!
//! The events come in start order. Per GPU, the work seen so far ends at
//! `busy_until`: work that starts later opens an idle stretch from there to
//! its start, and what it adds past `busy_until` is new busy time (the
//! union). The stretch is split at the start of the call that launched the
//! work ending it: before, nothing was asked of the GPU (host-bound); from
//! then on, the work was launched and waited (waiting). Where the export
//! lacks that call, the stretch is unattributed.
//!
//! Communication overlap is the measure of the union of communication
//! kernels intersected with the union of the others. Each new piece of one
//! union (the part past its own `until`) is compared with what the other
//! union covers from the piece's start on, which, since every interval of
//! it seen so far started earlier, is `[start, other's until)`: each
//! overlapped instant is counted once, when the later of its two pieces
//! comes. Memory holds a few numbers per GPU, the launches whose work has
//! not all come, and the few longest idle stretches.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::error::Failure;
use crate::nsys::cuda::CudaEvent;
use crate::nsys::{PlausibleTimes, Report, RowFilter, Streamed};

use super::kinds::Kinds;
use super::sketch::Sketch;
use super::timeline::{State, Timeline};

/// A launch whose work has not all come.
struct Launch {
    start: i64,
    end: i64,
    /// Operations still to come.
    left: u32,
    /// Whether the call's own time was counted (under its first work's kind).
    counted: bool,
}

/// An idle stretch, as the pass finds it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Gap {
    pub start: i64,
    pub end: i64,
    pub pid: Option<u32>,
    pub waiting_from: Option<i64>,
}

#[derive(Default)]
pub(super) struct Device {
    pub first_start: i64,
    pub busy_until: i64,
    pub busy: i64,
    pub host_bound: i64,
    pub waiting: i64,
    pub unattributed: i64,
    comm_until: i64,
    compute_until: i64,
    pub communication: i64,
    pub overlapped: i64,
    /// The longest stretches, longest first.
    pub gaps: Vec<Gap>,
    lane: usize,
}

/// Launch sketches of one kind.
#[derive(Default)]
pub(super) struct KindLaunches {
    pub call_time: Sketch,
    pub delay: Sketch,
}

pub(super) struct GpuPass {
    pub kinds: Kinds,
    pub devices: BTreeMap<i64, Device>,
    pub kind_time: Vec<i128>,
    pub kind_count: Vec<u64>,
    pub launches: Vec<KindLaunches>,
    pub timeline: Timeline,
    /// The first start and last end of any CUDA event.
    pub events: Option<(i64, i64)>,
    /// The spans of time that can be right: events outside them are left out.
    plausible: PlausibleTimes,
    /// CUDA events left out for times that cannot be right.
    pub impossible_times: u64,
    pending: FxHashMap<(u32, i64), Launch>,
    keep_gaps: usize,
    /// The kind of a memcpy by its `copyKind` (`None`: not recorded), so
    /// that each copy finds it without naming it again.
    memcpy_kinds: FxHashMap<Option<i64>, usize>,
}

/// The work of one GPU operation that the pass needs.
struct Op {
    start: i64,
    end: i64,
    device: i64,
    pid: Option<u32>,
    correlation: Option<i64>,
    kind: usize,
    kernel: bool,
}

impl GpuPass {
    pub(super) fn new(kinds: Kinds, keep_gaps: usize, plausible: PlausibleTimes) -> Self {
        Self {
            kinds,
            devices: BTreeMap::new(),
            kind_time: Vec::new(),
            kind_count: Vec::new(),
            launches: Vec::new(),
            timeline: Timeline::default(),
            events: None,
            plausible,
            impossible_times: 0,
            pending: FxHashMap::default(),
            keep_gaps,
            memcpy_kinds: FxHashMap::default(),
        }
    }

    /// Reads the CUDA stream for the pass alone.
    pub(super) fn run(&mut self, report: &Report) -> Result<(), Failure> {
        let copy_kinds = &report.meta().copy_kinds;
        report.for_each_cuda_event(&RowFilter::none(), |streamed| -> Result<(), Failure> {
            if let Streamed::Event(event) = streamed {
                self.event(&event, copy_kinds);
            }
            Ok(())
        })
    }

    /// One event of the report's CUDA stream, in time order (of another
    /// pass's read of it, or of [`GpuPass::run`]'s).
    pub(super) fn event(&mut self, event: &CudaEvent<'_>, copy_kinds: &FxHashMap<i64, String>) {
        let (start, end) = event.span();
        if !self.plausible.allow(start, end) {
            self.impossible_times += 1;
            return;
        }
        let seen = self.events.get_or_insert((start, end));
        seen.0 = seen.0.min(start);
        seen.1 = seen.1.max(end);
        let Some(common) = event.launched_work() else {
            if let CudaEvent::Api(call) = event {
                if let (Some(corr), false, 1..) =
                    (call.correlation_id, call.repeats_a_call, call.gpu_ops)
                {
                    self.pending.insert(
                        (call.pid, corr),
                        Launch {
                            start: call.start,
                            end: call.end,
                            left: call.gpu_ops,
                            counted: false,
                        },
                    );
                }
            }
            return;
        };
        let kind = match event {
            CudaEvent::Kernel(k) => self
                .kinds
                .of_kernel(k.demangled_name.unwrap_or(k.short_name)),
            CudaEvent::Memcpy(m) => {
                let copy_kind = m.own.copy_kind;
                match self.memcpy_kinds.get(&copy_kind) {
                    Some(&kind) => kind,
                    None => {
                        let kind = match copy_kind.and_then(|k| copy_kinds.get(&k)) {
                            Some(d) => self.kinds.named(&format!("memcpy {d}")),
                            None => self.kinds.named("memcpy"),
                        };
                        self.memcpy_kinds.insert(copy_kind, kind);
                        kind
                    }
                }
            }
            CudaEvent::Memset(_) => self.kinds.named("memset"),
            _ => self.kinds.named("CUDA graph"),
        };
        self.op(Op {
            start: common.start,
            end: common.end,
            device: common.place.device,
            pid: common.place.pid,
            correlation: common.correlation_id,
            kind,
            kernel: matches!(event, CudaEvent::Kernel(_)),
        });
    }

    fn op(&mut self, op: Op) {
        if self.kind_time.len() <= op.kind {
            self.kind_time.resize(op.kind + 1, 0);
            self.kind_count.resize(op.kind + 1, 0);
            self.launches
                .resize_with(op.kind + 1, KindLaunches::default);
        }
        self.kind_time[op.kind] += i128::from(op.end - op.start);
        self.kind_count[op.kind] += 1;
        // Its launch: the call's time once, the delay of each operation.
        let key = op.pid.zip(op.correlation);
        let launch = key.and_then(|key| self.pending.get_mut(&key));
        let launched_at = launch.map(|launch| {
            let sketches = &mut self.launches[op.kind];
            if !launch.counted {
                launch.counted = true;
                sketches.call_time.add(launch.end - launch.start);
            }
            sketches.delay.add(op.start - launch.end);
            launch.left = launch.left.saturating_sub(1);
            launch.start
        });
        if let (Some(key), Some(_)) = (key, launched_at) {
            if self.pending.get(&key).is_some_and(|l| l.left == 0) {
                self.pending.remove(&key);
            }
        }

        let lanes = self.devices.len();
        let device = self.devices.entry(op.device).or_insert_with(|| Device {
            first_start: op.start,
            busy_until: op.start,
            comm_until: op.start,
            compute_until: op.start,
            lane: lanes,
            ..Device::default()
        });
        if op.start > device.busy_until {
            let gap = Gap {
                start: device.busy_until,
                end: op.start,
                pid: op.pid,
                waiting_from: launched_at.map(|at| at.clamp(device.busy_until, op.start)),
            };
            match gap.waiting_from {
                Some(from) => {
                    device.host_bound += from - gap.start;
                    device.waiting += gap.end - from;
                    self.timeline
                        .add(device.lane, State::Waiting, from, gap.end);
                }
                None => device.unattributed += gap.end - gap.start,
            }
            keep_longest(&mut device.gaps, gap, self.keep_gaps);
        }
        let piece = op.start.max(device.busy_until);
        if op.end > piece {
            device.busy += op.end - piece;
            self.timeline.add(device.lane, State::Busy, piece, op.end);
            device.busy_until = op.end;
        }
        if op.kernel {
            let (own, other) = match self.kinds.is_communication(op.kind) {
                true => (&mut device.comm_until, device.compute_until),
                false => (&mut device.compute_until, device.comm_until),
            };
            let piece = op.start.max(*own);
            if op.end > piece {
                if self.kinds.is_communication(op.kind) {
                    device.communication += op.end - piece;
                }
                device.overlapped += (op.end.min(other) - piece).max(0);
                *own = op.end;
            }
        }
    }
}

/// Keeps `gap` among the `keep` longest, longest first (earlier first among
/// equals).
fn keep_longest(gaps: &mut Vec<Gap>, gap: Gap, keep: usize) {
    let len = gap.end - gap.start;
    let at = gaps.partition_point(|g| g.end - g.start >= len);
    if at < keep {
        gaps.insert(at, gap);
        gaps.truncate(keep);
    }
}
