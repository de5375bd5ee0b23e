//! Times that cannot be right: an event that ends before it starts, or far
//! past the end of the capture, or starts near the far end of time (a
//! flipped bit, a broken export). The analyses leave such an event out and
//! count it, as `convert` counts the ends before starts it writes as
//! instants; left in, one such time spans centuries and skews every number.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::cuda::{self, CudaEvent};
use super::Report;

/// Which spans of time can be right in one report.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlausibleTimes {
    /// The latest end that can be right.
    latest: i64,
}

/// Before it, no start can be right: no clock of nsys's reads that far
/// below 0 (a sign bit flipped gives one).
const EARLIEST: i64 = i64::MIN / 2;

/// How far past the capture's end an event may end: nsys stops collecting
/// there, so its events end before it; this is slack for the odd clock.
const PAST_THE_END: i64 = 60_000_000_000;

impl PlausibleTimes {
    /// Whether an event from `start` to `end` can be right.
    pub(crate) fn allow(&self, start: i64, end: i64) -> bool {
        EARLIEST <= start && start <= end && end <= self.latest
    }
}

impl Report {
    /// The spans of time that can be right in this report: ending by twice
    /// the capture's end, where the export records it (events of some
    /// exports start long before the recorded start: no bound there), else
    /// by half of i64's range.
    pub(crate) fn plausible_times(&self) -> rusqlite::Result<PlausibleTimes> {
        let latest = match self.capture_span()? {
            Some((_, stop)) => stop.max(0).saturating_mul(2).saturating_add(PAST_THE_END),
            None => i64::MAX / 2,
        };
        Ok(PlausibleTimes { latest })
    }
}

/// One pass's check of times: it counts, by table, the events it leaves
/// out, and records them in its report when dropped (see
/// [`Report::impossible_times`]); a table read by several passes counts
/// once. It holds no borrow of the report: a pass may outlive it (a trace
/// report's rows are walked as they are written).
pub(crate) struct TimeCheck {
    noted: Arc<Mutex<BTreeMap<&'static str, u64>>>,
    times: PlausibleTimes,
    left_out: BTreeMap<&'static str, u64>,
}

impl TimeCheck {
    pub(crate) fn new(report: &Report) -> rusqlite::Result<Self> {
        Ok(TimeCheck {
            noted: Arc::clone(&report.impossible),
            times: report.plausible_times()?,
            left_out: BTreeMap::new(),
        })
    }

    /// A check that starts anew, counting into the same report: for each
    /// walk of a trace (a table walked twice counts once).
    pub(crate) fn again(&self) -> Self {
        TimeCheck {
            noted: Arc::clone(&self.noted),
            times: self.times,
            left_out: BTreeMap::new(),
        }
    }

    /// Whether an event of `table` from `start` to `end` can be right;
    /// counted where not.
    pub(crate) fn allow(&mut self, table: &'static str, start: i64, end: i64) -> bool {
        let right = self.times.allow(start, end);
        if !right {
            *self.left_out.entry(table).or_default() += 1;
        }
        right
    }

    /// [`TimeCheck::allow`] for an event of the CUDA stream.
    pub(crate) fn allow_event(&mut self, event: &CudaEvent<'_>) -> bool {
        let table = match event {
            CudaEvent::Api(_) => cuda::RUNTIME,
            CudaEvent::Kernel(_) => cuda::KERNEL,
            CudaEvent::Memcpy(_) => cuda::MEMCPY,
            CudaEvent::Memset(_) => cuda::MEMSET,
            CudaEvent::Sync(_) => cuda::SYNC,
            CudaEvent::Graph(_) | CudaEvent::GraphCreation(_) => cuda::GRAPH_TRACE,
        };
        let (start, end) = event.span();
        self.allow(table, start, end)
    }
}

impl Drop for TimeCheck {
    fn drop(&mut self) {
        let mut noted = self.noted.lock().unwrap_or_else(|e| e.into_inner());
        for (table, &events) in &self.left_out {
            let most = noted.entry(table).or_default();
            *most = (*most).max(events);
        }
    }
}

impl Report {
    /// The events that the passes over this report so far left out for
    /// their times (see [`TimeCheck`]).
    pub(crate) fn impossible_times(&self) -> u64 {
        let noted = self.impossible.lock().unwrap_or_else(|e| e.into_inner());
        noted.values().sum()
    }
}

/// What to say of `events` events (CUDA work and calls, NVTX ranges, OS
/// runtime calls, ...) left out for their times, if any.
pub fn impossible_times_warning(events: u64) -> Option<String> {
    match events {
        0 => None,
        1 => Some(
            "1 event has times that cannot be right (it ends before it starts, \
             or far past the capture's end): left out"
                .to_owned(),
        ),
        n => Some(format!(
            "{n} events have times that cannot be right (they end before they start, \
             or far past the capture's end): left out"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_before_starts_and_far_ends_are_not_right() {
        let times = PlausibleTimes {
            latest: 10_000_000_000,
        };
        assert!(times.allow(5, 5));
        assert!(times.allow(-5, 5));
        assert!(!times.allow(6, 5));
        assert!(!times.allow(1, 9_223_372_036_854_775_000));
        assert!(!times.allow(9_223_372_036_854_775_000, 1));
        assert!(!times.allow(i64::MIN + 1, 1));
    }
}
