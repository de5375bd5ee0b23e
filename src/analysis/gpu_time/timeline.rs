//! Busy and waiting time over the run, per GPU, in a fixed number of equal
//! buckets from the first GPU work on: the buckets start 1 µs wide and
//! double (neighbours merged) whenever work passes the last, so memory is
//! the same for any length of run, and the work of a stretch of time is the
//! same however long it is: at most [`BUCKETS`] pieces, after at most 64
//! doublings (sums in i128, so no span of i64 times overflows them).

use super::model::GpuTimeline;

/// How many buckets a GPU's time line has.
pub(super) const BUCKETS: usize = 240;

/// The time lines of every GPU (a lane each), on buckets they share.
#[derive(Debug)]
pub(super) struct Timeline {
    pub origin: Option<i64>,
    pub width: i64,
    pub lanes: Vec<GpuTimeline>,
}

impl Default for Timeline {
    fn default() -> Self {
        Self {
            origin: None,
            width: 1000,
            lanes: Vec::new(),
        }
    }
}

/// Which state a stretch of time is in.
#[derive(Clone, Copy)]
pub(super) enum State {
    Busy,
    Waiting,
}

impl Timeline {
    /// Adds `[start, end)` in `state` to lane `lane` (made if new). Starts
    /// come in ascending order, so none lies before the origin.
    pub(super) fn add(&mut self, lane: usize, state: State, start: i64, end: i64) {
        if end <= start {
            return;
        }
        let origin = *self.origin.get_or_insert(start);
        let start = start.max(origin);
        let past_origin = |at: i64| i128::from(at) - i128::from(origin);
        while past_origin(end) > i128::from(self.width) * BUCKETS as i128 {
            self.double();
        }
        if self.lanes.len() <= lane {
            self.lanes.resize_with(lane + 1, || GpuTimeline {
                busy: vec![0; BUCKETS],
                waiting: vec![0; BUCKETS],
            });
        }
        let buckets = match state {
            State::Busy => &mut self.lanes[lane].busy,
            State::Waiting => &mut self.lanes[lane].waiting,
        };
        let mut at = start;
        while at < end {
            let i = (past_origin(at) / i128::from(self.width)) as usize;
            let bucket_end = i128::from(origin) + (i as i128 + 1) * i128::from(self.width);
            // Within i64: the last bucket ends at or past `end`.
            let piece_end = i128::from(end).min(bucket_end) as i64;
            buckets[i] = buckets[i].saturating_add(piece_end - at);
            at = piece_end;
        }
    }

    fn double(&mut self) {
        for lane in &mut self.lanes {
            for buckets in [&mut lane.busy, &mut lane.waiting] {
                for i in 0..BUCKETS / 2 {
                    buckets[i] = buckets[2 * i].saturating_add(buckets[2 * i + 1]);
                }
                buckets[BUCKETS / 2..].fill(0);
            }
        }
        self.width *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_is_kept_whole_as_buckets_widen() {
        let mut t = Timeline::default();
        t.add(0, State::Busy, 10_000, 12_500);
        t.add(1, State::Waiting, 11_000, 11_200);
        t.add(0, State::Busy, 5_000_000, 5_000_300);
        let busy: i64 = t.lanes[0].busy.iter().sum();
        assert_eq!(busy, 2_800);
        assert_eq!(t.lanes[1].waiting.iter().sum::<i64>(), 200);
        assert!(t.width * BUCKETS as i64 >= 5_000_300 - 10_000);
        assert_eq!(t.lanes[0].busy[0], 2_500);
    }

    #[test]
    fn the_widest_span_of_times_widens_the_buckets_without_overflow() {
        let mut t = Timeline::default();
        t.add(0, State::Busy, i64::MIN, i64::MIN + 10);
        t.add(0, State::Waiting, i64::MIN + 10, i64::MAX);
        assert!(i128::from(t.width) * BUCKETS as i128 >= i128::from(i64::MAX) * 2);
        assert_eq!(t.lanes[0].busy.iter().sum::<i64>(), 10);
        let waiting: i128 = t.lanes[0].waiting.iter().map(|&w| i128::from(w)).sum();
        assert_eq!(waiting, i128::from(i64::MAX) - i128::from(i64::MIN + 10));
    }
}
