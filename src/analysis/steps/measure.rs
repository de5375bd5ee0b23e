//! One report's steps, in two streamed passes: the NVTX ranges the pattern
//! matches (the steps, by process), then the GPU work in start order, whose
//! union per process is shared out to that process's steps.
//!
//! Memory holds each process's steps and, per process, the end of its GPU
//! work so far and the GPUs it used: not the report's events.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::Failure;
use crate::nsys::cuda::CudaEvent;
use crate::nsys::nvtx::NvtxKind;
use crate::nsys::{Report, RowFilter, TimeCheck};

use super::busy::{BusyUnion, StepRanges};
use super::measured::ProcessSteps;
use super::pattern::StepPattern;
use super::{GpuWork, NvtxRanges, StepTime};

/// The most names of ranges that are not steps a report keeps, to say what
/// exists when the pattern matched nothing.
const NAMES_SEEN: usize = 8;

/// What one report holds of a job's steps.
#[derive(Debug, Default)]
pub(super) struct Measured {
    /// Each process that recorded steps, by pid.
    pub(super) processes: Vec<ProcessSteps>,
    /// All of the report's GPU work.
    pub(super) gpu_work: GpuWork,
    /// The NVTX ranges of the report.
    pub(super) nvtx: NvtxRanges,
    /// GPU work of no known process, while several processes have steps.
    pub(super) unattributed_ops: u64,
}

/// A step as the NVTX pass finds it.
struct Found {
    name: String,
    start: i64,
    end: Option<i64>,
}

/// What the GPU pass keeps of some work (a process's, or the whole
/// report's) until it makes its [`GpuWork`].
#[derive(Default)]
struct WorkSeen {
    union: BusyUnion,
    gpus: BTreeSet<i64>,
}

impl WorkSeen {
    /// Adds work on GPU `device` over `[start, end)`; returns the part of it
    /// the union did not hold yet (see [`BusyUnion::add`]).
    fn add(&mut self, device: i64, start: i64, end: i64) -> Option<(i64, i64)> {
        self.gpus.insert(device);
        self.union.add(start, end)
    }

    fn finish(self) -> GpuWork {
        GpuWork {
            gpus: self.gpus.into_iter().collect(),
            busy_ns: self.union.total_ns,
        }
    }
}

pub(super) fn measure(report: &Report, pattern: &StepPattern) -> Result<Measured, Failure> {
    let mut measured = Measured::default();
    let mut found: BTreeMap<u32, Vec<Found>> = BTreeMap::new();
    let last_nvtx_time =
        report.nvtx_events_to_last_time(&RowFilter::none(), |e| -> Result<(), Failure> {
            if e.kind == NvtxKind::Mark {
                return Ok(());
            }
            let ranges = &mut measured.nvtx;
            ranges.count += 1;
            let name = e.text.as_ref().map_or("", |t| t.as_str());
            if pattern.matches(name) {
                found.entry(e.pid).or_default().push(Found {
                    name: name.to_owned(),
                    start: e.start,
                    end: e.end,
                });
            } else if ranges.other_names.len() < NAMES_SEEN
                && !ranges.other_names.iter().any(|n| n == name)
            {
                ranges.other_names.push(name.to_owned());
            }
            Ok(())
        })?;

    // Each process's steps, ended, with room for their busy time.
    let mut processes: Vec<(u32, Vec<StepTime>, usize, StepRanges)> = found
        .into_iter()
        .map(|(pid, steps)| {
            let open = steps.iter().filter(|s| s.end.is_none()).count();
            let steps: Vec<StepTime> = steps
                .into_iter()
                .map(|s| {
                    let end = s.end.or(last_nvtx_time).unwrap_or(s.start).max(s.start);
                    StepTime {
                        name: s.name,
                        start_ns: s.start,
                        duration_ns: (end - s.start) as u64,
                        gpu_busy_ns: 0,
                    }
                })
                .collect();
            let ranges = StepRanges::new(steps.iter().map(|s| (s.start_ns, s.end_ns())));
            (pid, steps, open, ranges)
        })
        .collect();
    // Work whose process the export does not say is the sole stepping process's.
    let sole = match processes.as_slice() {
        [(pid, ..)] => Some(*pid),
        _ => None,
    };

    let mut report_work = WorkSeen::default();
    let mut by_pid: BTreeMap<u32, WorkSeen> = BTreeMap::new();
    let mut check = TimeCheck::new(report)?;
    report.for_each_gpu_op(&RowFilter::none(), |op| -> Result<(), Failure> {
        if !check.allow_event(&op) {
            return Ok(());
        }
        let common = match &op {
            CudaEvent::Kernel(k) => &k.common,
            CudaEvent::Memcpy(m) => &m.common,
            CudaEvent::Memset(m) => &m.common,
            CudaEvent::Graph(g) => &g.common,
            _ => return Ok(()),
        };
        let (device, start, end) = (common.place.device, common.start, common.end);
        report_work.add(device, start, end);
        let Some(pid) = common.place.pid.or(sole) else {
            if !processes.is_empty() {
                measured.unattributed_ops += 1;
            }
            return Ok(());
        };
        let process = by_pid.entry(pid).or_default();
        let Some((from, to)) = process.add(device, start, end) else {
            return Ok(());
        };
        if let Ok(at) = processes.binary_search_by_key(&pid, |p| p.0) {
            let (_, steps, _, ranges) = &mut processes[at];
            ranges.clip(from, to, |i, ns| steps[i].gpu_busy_ns += ns);
        }
        Ok(())
    })?;

    measured.gpu_work = report_work.finish();
    measured.processes = processes
        .into_iter()
        .map(|(pid, steps, open_steps, _)| ProcessSteps {
            pid,
            open_steps,
            gpu_work: by_pid.remove(&pid).unwrap_or_default().finish(),
            steps,
        })
        .collect();
    Ok(measured)
}
