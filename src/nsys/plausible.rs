//! Times that cannot be right: an event that ends before it starts, or far
//! past the end of the capture, or starts near the far end of time (a
//! flipped bit, a broken export). The analyses leave such an event out and
//! count it, as `convert` counts the ends before starts it writes as
//! instants; left in, one such time spans centuries and skews every number.

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
