//! What the CPU threads of a process did during a GPU's longest idle
//! stretches, per thread: the call (CUDA API or OS runtime) it spent most
//! time in, summed over its calls of one name (a stretch spent in thousands
//! of `stat64` and `mmap` calls is told as such, not by its one longest
//! call); the NVTX range that overlapped the stretch most (among equals,
//! the shorter: the innermost range); and the function most of its CPU
//! samples were taken in. A second pass, over only the calls and samples
//! within a stretch (one scan each, the stretches in its WHERE clause) and
//! the NVTX ranges.

use std::cmp::Reverse;

use rustc_hash::FxHashMap;

use crate::error::Failure;
use crate::nsys::{Report, RowFilter};
use crate::worker::outcome;

use super::gpu::Gap;
use super::model::{IdleStretch, ThreadActivity};

/// The most threads told per stretch, the busiest first.
const THREADS: usize = 4;

/// What one thread did in one stretch.
#[derive(Default)]
struct Activity {
    /// Time in calls overlapping the stretch, by call name.
    call_time: FxHashMap<String, i64>,
    calls: u64,
    /// The best (overlap, -length, name) of the NVTX ranges.
    range: Option<(i64, i64, String)>,
    /// Samples in the stretch, by the function they were taken in.
    sampled: FxHashMap<String, u64>,
    samples: u64,
}

impl Activity {
    fn offer_range(&mut self, overlap: i64, length: i64, name: &str) {
        let better = match &self.range {
            None => true,
            Some((o, l, _)) => (overlap, -length) > (*o, *l),
        };
        if better {
            self.range = Some((overlap, -length, name.to_owned()));
        }
    }

    /// The thread's share of a stretch, as it is told: the call it spent
    /// most time in (by name, the first name of equals).
    fn told(&self, tid: u32, name: Option<String>) -> ThreadActivity {
        let mut thread = ThreadActivity {
            tid,
            name,
            ..ThreadActivity::default()
        };
        thread.call = most(&self.call_time);
        thread.calls = self.calls;
        thread.range = self.range.as_ref().map(|(o, _, name)| (name.clone(), *o));
        thread.sampled = most(&self.sampled);
        thread.samples = self.samples;
        thread
    }

    /// The order threads are told in: a thread that made many calls or was
    /// sampled often did more than one blocked in a single long call (a
    /// `poll`, a synchronization); among equals, the longest in a call or
    /// range first.
    fn busiest_first(&self, tid: u32) -> (Reverse<u64>, Reverse<i64>, u32) {
        let call = self.call_time.values().copied().max().unwrap_or(0);
        let range = self.range.as_ref().map_or(0, |r| r.0);
        (
            Reverse(self.calls + self.samples),
            Reverse(call.max(range)),
            tid,
        )
    }
}

/// The name with the greatest value (the first name of equals), of those
/// that are names.
fn most<T: Ord + Copy>(by_name: &FxHashMap<String, T>) -> Option<(String, T)> {
    by_name
        .iter()
        .filter(|(name, _)| !name.is_empty())
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(name, n)| (name.clone(), *n))
}

fn overlap(gap: &Gap, start: i64, end: i64) -> i64 {
    end.min(gap.end) - start.max(gap.start)
}

/// The CUDA and OS runtime calls in the stretches: time in each by name.
fn calls_within(report: &Report, gaps: &[Gap], windows: &[(i64, i64)]) -> Result<Did, Failure> {
    let mut did = Did::default();
    report.each_call_within(windows, |call| {
        for (i, gap) in gaps.iter().enumerate() {
            let o = overlap(gap, call.start, call.end);
            if gap.pid == Some(call.pid) && o > 0 {
                let a = did.entry((i, call.tid)).or_default();
                *a.call_time.entry(call.name.to_owned()).or_default() += o;
                a.calls += 1;
            }
        }
    })?;
    Ok(did)
}

/// The CPU samples taken in the stretches, by function.
fn samples_within(report: &Report, gaps: &[Gap], windows: &[(i64, i64)]) -> Result<Did, Failure> {
    let mut did = Did::default();
    report.each_sample_within(windows, |sample| {
        for (i, gap) in gaps.iter().enumerate() {
            let within = gap.start <= sample.at && sample.at < gap.end;
            if gap.pid == Some(sample.pid) && within {
                let a = did.entry((i, sample.tid)).or_default();
                *a.sampled.entry(sample.function.to_owned()).or_default() += 1;
                a.samples += 1;
            }
        }
    })?;
    Ok(did)
}

/// The NVTX range of each thread that overlaps each stretch most.
fn ranges_over(report: &Report, gaps: &[Gap]) -> Result<Did, Failure> {
    let mut did = Did::default();
    if gaps.is_empty() {
        return Ok(did);
    }
    report.for_each_thread_range(&RowFilter::none(), |r| -> Result<(), Failure> {
        let (Some(end), Some(text)) = (r.end, r.text) else {
            return Ok(());
        };
        for (i, gap) in gaps.iter().enumerate() {
            let o = overlap(gap, r.start, end);
            if gap.pid == Some(r.pid) && o > 0 {
                did.entry((i, r.tid))
                    .or_default()
                    .offer_range(o, end - r.start, text);
            }
        }
        Ok(())
    })?;
    Ok(did)
}

/// What the threads did in each stretch, by (stretch, thread).
type Did = FxHashMap<(usize, u32), Activity>;

/// The stretches, each with what its process's threads did.
pub(super) fn idle_stretches(report: &Report, gaps: &[Gap]) -> Result<Vec<IdleStretch>, Failure> {
    let windows: Vec<(i64, i64)> = gaps.iter().map(|g| (g.start, g.end)).collect();
    // Three reads, each of its own table with a connection of its own and
    // filling fields of its own: they run side by side.
    let (calls, samples, ranges) = std::thread::scope(|scope| {
        let calls = scope.spawn(|| calls_within(report, gaps, &windows));
        let samples = scope.spawn(|| samples_within(report, gaps, &windows));
        let ranges = ranges_over(report, gaps);
        (outcome(calls.join()), outcome(samples.join()), ranges)
    });
    let mut did = calls?;
    for (at, a) in samples? {
        let d = did.entry(at).or_default();
        d.sampled = a.sampled;
        d.samples = a.samples;
    }
    for (at, a) in ranges? {
        did.entry(at).or_default().range = a.range;
    }
    let threads = &report.meta().threads;
    Ok(gaps
        .iter()
        .enumerate()
        .map(|(i, gap)| {
            let mut tids: Vec<(u32, &Activity)> = did
                .iter()
                .filter(|(k, _)| k.0 == i)
                .map(|(k, a)| (k.1, a))
                .collect();
            tids.sort_by_key(|(tid, a)| a.busiest_first(*tid));
            tids.truncate(THREADS);
            IdleStretch {
                start: gap.start,
                end: gap.end,
                waiting_from: gap.waiting_from,
                pid: gap.pid,
                threads: tids
                    .into_iter()
                    .map(|(tid, a)| {
                        let name = gap.pid.and_then(|pid| threads.get(&(pid, tid)).cloned());
                        a.told(tid, name)
                    })
                    .collect(),
            }
        })
        .collect())
}
