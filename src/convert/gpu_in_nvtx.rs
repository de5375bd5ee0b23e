//! The CUDA activity inside kept NVTX ranges (`Filter::gpu_in_nvtx`): the
//! spans of time each thread spends inside a kept range, read before the
//! CUDA stream. Only the ranges kept are held, merged where they overlap, so
//! memory follows what the filter keeps, not the size of the report.
//!
//! Like every filter, it combines with the others by keeping what each of
//! them keeps: with a time window, a call is kept when it is inside a kept
//! range and overlaps the window, and GPU work when its launch is inside a
//! kept range and the work itself overlaps the window, wherever its launch
//! lies in time. Work that runs in the window but was launched before it is
//! found by a read of its own (`Report::for_each_launch_outside_window`),
//! since the calls outside the window are not in the CUDA stream.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::nsys::{Report, RowFilter};

use super::nvtx::keeps_nvtx;
use crate::error::Failure;

/// Per thread (pid, tid), the spans covered by kept NVTX ranges: sorted,
/// disjoint, inclusive.
#[derive(Default)]
pub(super) struct NvtxSpans {
    by_thread: FxHashMap<(u32, u32), Vec<(i64, i64)>>,
    /// The launches (pid, correlationId) made inside kept ranges by calls
    /// outside the time window, of GPU work inside it.
    launched_outside_window: FxHashSet<(u32, i64)>,
}

impl NvtxSpans {
    /// The spans of the NVTX ranges of `report` that `filter` keeps.
    pub(super) fn read(report: &Report, filter: &RowFilter) -> Result<Self, Failure> {
        let meta = report.meta();
        let mut by_thread: FxHashMap<(u32, u32), Vec<(i64, i64)>> = FxHashMap::default();
        let kept = filter.filter();
        report.for_each_thread_range(filter, |r| -> Result<(), Failure> {
            if kept.is_none_or(|kept| keeps_nvtx(kept, meta, r.pid, r.domain, r.text)) {
                let end = r.end.unwrap_or(i64::MAX);
                by_thread
                    .entry((r.pid, r.tid))
                    .or_default()
                    .push((r.start, end.max(r.start)));
            }
            Ok(())
        })?;
        for spans in by_thread.values_mut() {
            spans.sort_unstable();
            let mut merged: Vec<(i64, i64)> = Vec::with_capacity(spans.len());
            for &(start, end) in spans.iter() {
                match merged.last_mut() {
                    Some(last) if start <= last.1 => last.1 = last.1.max(end),
                    _ => merged.push((start, end)),
                }
            }
            *spans = merged;
        }
        let mut spans = Self {
            by_thread,
            launched_outside_window: FxHashSet::default(),
        };
        let mut outside = FxHashSet::default();
        report.for_each_launch_outside_window(filter, |call| -> Result<(), Failure> {
            if spans.covers(call.pid, call.tid, call.start) {
                outside.insert((call.pid, call.correlation_id));
            }
            Ok(())
        })?;
        spans.launched_outside_window = outside;
        Ok(spans)
    }

    /// Whether a call of thread (pid, tid) at `t` is inside a kept range.
    pub(super) fn covers(&self, pid: u32, tid: u32, t: i64) -> bool {
        let Some(spans) = self.by_thread.get(&(pid, tid)) else {
            return false;
        };
        let after = spans.partition_point(|&(start, _)| start <= t);
        after > 0 && spans[after - 1].1 >= t
    }

    /// Whether launch (pid, correlationId), made before (or after) the time
    /// window, was made inside a kept range.
    pub(super) fn launched_outside_window(&self, pid: u32, correlation_id: i64) -> bool {
        self.launched_outside_window
            .contains(&(pid, correlation_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_the_union_of_ranges() {
        let mut spans = NvtxSpans::default();
        spans
            .by_thread
            .insert((1, 2), vec![(10, 20), (30, i64::MAX)]);
        assert!(spans.covers(1, 2, 10));
        assert!(spans.covers(1, 2, 20));
        assert!(!spans.covers(1, 2, 25));
        assert!(!spans.covers(1, 2, 9));
        assert!(spans.covers(1, 2, 1 << 40));
        assert!(!spans.covers(1, 3, 15));
    }
}
