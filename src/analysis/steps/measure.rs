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
use super::pattern::StepPattern;
use super::StepTime;

/// The most names of ranges that are not steps a report keeps, to say what
/// exists when the pattern matched nothing.
const NAMES_SEEN: usize = 8;

/// What one report holds of a job's steps.
#[derive(Debug, Default)]
pub(super) struct Measured {
    /// Each process that recorded steps, by pid.
    pub(super) processes: Vec<ProcessSteps>,
    /// The GPUs of all of the report's GPU work, and its union.
    pub(super) gpus: Vec<i64>,
    pub(super) gpu_busy_ns: u64,
    /// The NVTX ranges of the report (steps or not).
    pub(super) nvtx_ranges: u64,
    /// The first few distinct names of ranges that are not steps.
    pub(super) other_names: Vec<String>,
    /// GPU work of no known process, while several processes have steps.
    pub(super) unattributed_ops: u64,
}

/// The steps of one process, with its GPU work.
#[derive(Debug)]
pub(super) struct ProcessSteps {
    pub(super) pid: u32,
    /// In start order.
    pub(super) steps: Vec<StepTime>,
    /// Steps still open when the capture stopped: ended at the last NVTX
    /// time of the report, as nsys ends them.
    pub(super) open_steps: usize,
    pub(super) gpus: Vec<i64>,
    /// The union of its GPU work over the whole capture.
    pub(super) gpu_busy_ns: u64,
}

/// A step as the NVTX pass finds it.
struct Found {
    name: String,
    start: i64,
    end: Option<i64>,
}

/// What the GPU pass keeps of one process.
#[derive(Default)]
struct ProcessGpu {
    union: BusyUnion,
    gpus: BTreeSet<i64>,
}

pub(super) fn measure(report: &Report, pattern: &StepPattern) -> Result<Measured, Failure> {
    let mut measured = Measured::default();
    let mut found: BTreeMap<u32, Vec<Found>> = BTreeMap::new();
    let last_nvtx_time =
        report.nvtx_events_to_last_time(&RowFilter::none(), |e| -> Result<(), Failure> {
            if e.kind == NvtxKind::Mark {
                return Ok(());
            }
            measured.nvtx_ranges += 1;
            let name = e.text.as_ref().map_or("", |t| t.as_str());
            if pattern.matches(name) {
                found.entry(e.pid).or_default().push(Found {
                    name: name.to_owned(),
                    start: e.start,
                    end: e.end,
                });
            } else if measured.other_names.len() < NAMES_SEEN
                && !measured.other_names.iter().any(|n| n == name)
            {
                measured.other_names.push(name.to_owned());
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

    let mut report_union = BusyUnion::default();
    let mut report_gpus = BTreeSet::new();
    let mut by_pid: BTreeMap<u32, ProcessGpu> = BTreeMap::new();
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
        let (start, end) = (common.start, common.end);
        report_union.add(start, end);
        report_gpus.insert(common.place.device);
        let Some(pid) = common.place.pid.or(sole) else {
            if !processes.is_empty() {
                measured.unattributed_ops += 1;
            }
            return Ok(());
        };
        let process = by_pid.entry(pid).or_default();
        process.gpus.insert(common.place.device);
        let Some((from, to)) = process.union.add(start, end) else {
            return Ok(());
        };
        if let Ok(at) = processes.binary_search_by_key(&pid, |p| p.0) {
            let (_, steps, _, ranges) = &mut processes[at];
            ranges.clip(from, to, |i, ns| steps[i].gpu_busy_ns += ns);
        }
        Ok(())
    })?;

    measured.gpus = report_gpus.into_iter().collect();
    measured.gpu_busy_ns = report_union.total_ns;
    measured.processes = processes
        .into_iter()
        .map(|(pid, steps, open_steps, _)| {
            let gpu = by_pid.remove(&pid).unwrap_or_default();
            ProcessSteps {
                pid,
                steps,
                open_steps,
                gpus: gpu.gpus.into_iter().collect(),
                gpu_busy_ns: gpu.union.total_ns,
            }
        })
        .collect();
    Ok(measured)
}
