//! `gpu_gaps` (GPU starvation): time longer than a threshold in which a
//! device runs no work of a process, between that process's first and last
//! work on it. Gaps are found as the work streams by in start order (a gap
//! opens where work starts after the latest end so far); the profiler's
//! overhead within the range, which the user cannot remove, then fills
//! what it covers of them.

use std::collections::BTreeMap;

use crate::nsys::gpu_work::GpuOp;

use super::{Finding, Lane, Place, Ranges, Rule};

/// A gap, and what bounds it.
struct Gap {
    start: i64,
    end: i64,
    /// The correlationIds of the work that ends at its start and of the
    /// work that starts at its end; `None` where profiler overhead does.
    before: Option<i64>,
    after: Option<i64>,
    /// The context of the work before it.
    context: Option<i64>,
}

struct LaneState {
    first_start: i64,
    first_context: Option<i64>,
    last_end: i64,
    /// The correlationId and context of the work that ends at `last_end`.
    last: (Option<i64>, Option<i64>),
    gaps: Vec<Gap>,
}

pub(super) struct Gaps {
    /// Gaps must be longer than this, in ns.
    threshold: i64,
    lanes: BTreeMap<Lane, LaneState>,
}

impl Gaps {
    pub(super) fn new(threshold: i64) -> Self {
        Self {
            threshold,
            lanes: BTreeMap::new(),
        }
    }

    /// Takes the next operation, in start order. Work with no process or
    /// a start of 0 or less (not a real time) does not count, as in nsys.
    pub(super) fn op(&mut self, op: &GpuOp) {
        let Some(pid) = op.place.pid else {
            return;
        };
        if op.start <= 0 {
            return;
        }
        let lane = self
            .lanes
            .entry((pid, op.place.device))
            .or_insert_with(|| LaneState {
                first_start: op.start,
                first_context: op.place.context,
                last_end: op.end,
                last: (op.correlation_id, op.place.context),
                gaps: Vec::new(),
            });
        // Overhead only shortens gaps: those longer than the threshold
        // without it are the candidates.
        if op.start - lane.last_end > self.threshold {
            lane.gaps.push(Gap {
                start: lane.last_end,
                end: op.start,
                before: lane.last.0,
                after: op.correlation_id,
                context: lane.last.1,
            });
        }
        if op.end > lane.last_end {
            lane.last_end = op.end;
            lane.last = (op.correlation_id, op.place.context);
        }
    }

    /// Each lane's time range, from its first start to its last end.
    pub(super) fn ranges(&self) -> Ranges {
        self.lanes
            .iter()
            .map(|(&lane, s)| (lane, (s.first_start, s.last_end, s.first_context)))
            .collect()
    }

    /// Profiler overhead `[start, end)` on `lane`: what it covers of a gap is
    /// no gap.
    pub(super) fn overhead(&mut self, lane: Lane, start: i64, end: i64) {
        let Some(state) = self.lanes.get_mut(&lane) else {
            return;
        };
        let mut split = Vec::with_capacity(state.gaps.len() + 1);
        for gap in state.gaps.drain(..) {
            if !(start < gap.end && end > gap.start) {
                split.push(gap);
                continue;
            }
            if start > gap.start {
                split.push(Gap {
                    end: start,
                    after: None,
                    ..gap
                });
            }
            if end < gap.end {
                split.push(Gap {
                    start: end,
                    before: None,
                    ..gap
                });
            }
        }
        state.gaps = split;
    }

    pub(super) fn findings(&self) -> Vec<Finding> {
        let mut findings = Vec::new();
        for (&(pid, device), lane) in &self.lanes {
            for gap in lane
                .gaps
                .iter()
                .filter(|g| g.end - g.start > self.threshold)
            {
                let place = Place::Gpu {
                    pid: Some(pid),
                    device,
                    context: gap.context.or(lane.first_context),
                    stream: None,
                };
                let mut f = Finding::new(Rule::GpuGaps, gap.start, gap.end, place);
                f.correlation_ids.extend(gap.before);
                f.correlation_ids.extend(gap.after);
                f.gap_between = Some([gap.before, gap.after]);
                findings.push(f);
            }
        }
        findings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nsys::cuda::GpuPlace;
    use crate::nsys::gpu_work::OpKind;

    fn op(start: i64, end: i64, corr: i64) -> GpuOp {
        GpuOp {
            start,
            end,
            place: GpuPlace {
                pid: Some(1),
                device: 0,
                context: Some(1),
                stream: 7,
            },
            correlation_id: Some(corr),
            kind: OpKind::Kernel,
        }
    }

    #[test]
    fn gaps_are_between_the_latest_end_and_the_next_start() {
        let mut gaps = Gaps::new(10);
        gaps.op(&op(100, 200, 1));
        gaps.op(&op(150, 160, 2)); // inside the first: no gap after it
        gaps.op(&op(211, 220, 3)); // 11 after 200
        gaps.op(&op(225, 230, 4)); // 5: too short
        let f = gaps.findings();
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].start, f[0].duration), (200, 11));
        assert_eq!(f[0].correlation_ids, [1, 3]);
        assert_eq!(gaps.ranges()[&(1, 0)], (100, 230, Some(1)));
    }

    #[test]
    fn overhead_fills_what_it_covers_of_a_gap() {
        let mut gaps = Gaps::new(10);
        gaps.op(&op(100, 200, 1));
        gaps.op(&op(300, 400, 2));
        gaps.overhead((1, 0), 240, 250);
        let f = gaps.findings();
        let spans: Vec<(i64, i64, Vec<i64>)> = f
            .iter()
            .map(|f| (f.start, f.duration, f.correlation_ids.clone()))
            .collect();
        assert_eq!(spans, [(200, 40, vec![1]), (250, 50, vec![2])]);
        // Overhead that leaves only pieces of 10 ns or less: no gap left.
        gaps.overhead((1, 0), 210, 290);
        assert_eq!(gaps.findings().len(), 0);
    }
}
