//! GPU busy time: the union of a process's GPU work, as its operations come
//! in start order, and each new part of it shared out to the steps it falls
//! in.
//!
//! Work in start order extends a union that only grows at its end: an
//! operation adds what of it lies past the end of everything before it. So
//! the union of all of a process's GPUs is a single number per process, and
//! the time where several streams or GPUs worked at once counts once.

/// The union of one process's GPU work so far.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BusyUnion {
    /// The end of the work seen so far; `None` before any.
    covered_until: Option<i64>,
    /// The union's length, ns.
    pub(super) total_ns: u64,
}

impl BusyUnion {
    /// Adds the work `[start, end)`, which starts no earlier than any work
    /// added before; returns the part of it the union did not hold yet.
    pub(super) fn add(&mut self, start: i64, end: i64) -> Option<(i64, i64)> {
        let from = self.covered_until.map_or(start, |c| c.max(start));
        if end <= from {
            return None;
        }
        self.covered_until = Some(end);
        self.total_ns += (end - from) as u64;
        Some((from, end))
    }
}

/// A rank's steps as time ranges, for finding those a stretch of busy time
/// overlaps. Steps are few (one per iteration): their ranges are kept, in
/// start order, with the furthest end of each prefix (steps may nest or
/// overlap).
#[derive(Debug, Default)]
pub(super) struct StepRanges {
    starts: Vec<i64>,
    ends: Vec<i64>,
    /// The largest end of the steps up to and including each.
    furthest_end: Vec<i64>,
}

impl StepRanges {
    /// The ranges `(start, end)`, in start order.
    pub(super) fn new(ranges: impl IntoIterator<Item = (i64, i64)>) -> Self {
        let mut steps = StepRanges::default();
        for (start, end) in ranges {
            let furthest = steps.furthest_end.last().map_or(end, |&f| f.max(end));
            steps.starts.push(start);
            steps.ends.push(end);
            steps.furthest_end.push(furthest);
        }
        steps
    }

    /// Calls `add` with each step `[start, end)` overlaps, by index, and
    /// the length of the overlap.
    pub(super) fn clip(&self, start: i64, end: i64, mut add: impl FnMut(usize, u64)) {
        // The steps that start before `end`, walked back while one of them
        // may still reach past `start`.
        let mut i = self.starts.partition_point(|&s| s < end);
        while i > 0 && self.furthest_end[i - 1] > start {
            i -= 1;
            let overlap = self.ends[i].min(end) - self.starts[i].max(start);
            if overlap > 0 {
                add(i, overlap as u64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_work_counts_once() {
        let mut union = BusyUnion::default();
        assert_eq!(union.add(0, 10), Some((0, 10)));
        assert_eq!(union.add(5, 15), Some((10, 15)));
        assert_eq!(union.add(6, 12), None, "within the union");
        assert_eq!(union.add(20, 25), Some((20, 25)));
        assert_eq!(union.add(20, 20), None, "empty");
        assert_eq!(union.total_ns, 20);
    }

    fn clipped(steps: &StepRanges, start: i64, end: i64, busy: &mut [u64]) {
        steps.clip(start, end, |i, ns| busy[i] += ns);
    }

    #[test]
    fn busy_time_is_clipped_to_each_step_it_overlaps() {
        // Two steps one after the other, and one nested in the first.
        let steps = StepRanges::new([(0, 100), (10, 20), (100, 200)]);
        let mut busy = [0; 3];
        clipped(&steps, 15, 150, &mut busy);
        assert_eq!(busy, [85, 5, 50]);
        clipped(&steps, -50, -10, &mut busy);
        clipped(&steps, 200, 300, &mut busy);
        assert_eq!(busy, [85, 5, 50], "outside every step");
        // A long step before short ones it covers still counts.
        let steps = StepRanges::new([(0, 1000), (10, 20), (30, 40)]);
        let mut busy = [0; 3];
        clipped(&steps, 500, 600, &mut busy);
        assert_eq!(busy, [100, 0, 0]);
    }
}
