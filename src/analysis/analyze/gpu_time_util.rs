//! `gpu_time_util` (low GPU utilization): each device's time range (first
//! start to last end of a process's work on it) is cut into equal chunks;
//! chunks in which the work's summed time (concurrent work adds up, and
//! may pass 100%) is below a threshold share of the chunk are found, and
//! consecutive ones merged, with their time-weighted mean.

use std::collections::BTreeMap;

use super::{Finding, Lane, Place, Ranges, Rule, Thresholds};

struct Chunks {
    start: i64,
    end: i64,
    size: i64,
    context: Option<i64>,
    /// The time of work within each chunk, summed.
    busy: Vec<i128>,
}

impl Chunks {
    /// The chunk `i`'s `[start, end)`: the last one ends with the range.
    fn bounds(&self, i: usize) -> (i64, i64) {
        let start = self.start + i as i64 * self.size;
        (start, start.saturating_add(self.size).min(self.end))
    }
}

pub(super) struct Utilization {
    threshold: f64,
    lanes: BTreeMap<Lane, Chunks>,
}

impl Utilization {
    pub(super) fn new(ranges: &Ranges, thresholds: &Thresholds) -> Self {
        let n = i64::from(thresholds.util_chunks.max(1));
        let lanes = ranges
            .iter()
            .map(|(&lane, &(start, end, context))| {
                // nsys rounds the chunk up to a whole ns: the last chunks
                // may then lie past the range, and are dropped.
                let size = (end - start).div_euclid(n) + i64::from((end - start) % n != 0);
                let count = match size {
                    0 => 0,
                    size => (end - start) / size + i64::from((end - start) % size != 0),
                };
                let chunks = Chunks {
                    start,
                    end,
                    size,
                    context,
                    busy: vec![0; count.clamp(0, n) as usize],
                };
                (lane, chunks)
            })
            .collect();
        Self {
            threshold: f64::from(thresholds.util_percent),
            lanes,
        }
    }

    /// Adds work `[start, end)` on `lane`.
    pub(super) fn add(&mut self, lane: Lane, start: i64, end: i64) {
        let Some(chunks) = self.lanes.get_mut(&lane) else {
            return;
        };
        if end <= start || chunks.busy.is_empty() {
            return;
        }
        let first = ((start - chunks.start).max(0) / chunks.size) as usize;
        for i in first..chunks.busy.len() {
            let (cstart, cend) = chunks.bounds(i);
            if cstart >= end {
                break;
            }
            if start < cend && end > cstart {
                chunks.busy[i] += i128::from(end.min(cend) - start.max(cstart));
            }
        }
    }

    pub(super) fn findings(&self) -> Vec<Finding> {
        let mut findings = Vec::new();
        for (&(pid, device), chunks) in &self.lanes {
            // The low chunks in a row so far: (start, end, sum of size x percent, sum of sizes).
            let mut run: Option<(i64, i64, f64, f64)> = None;
            let mut close = |run: &mut Option<(i64, i64, f64, f64)>| {
                if let Some((start, end, weighted, sizes)) = run.take() {
                    let place = Place::Gpu {
                        pid: Some(pid),
                        device,
                        context: chunks.context,
                        stream: None,
                    };
                    let mut f = Finding::new(Rule::GpuTimeUtil, start, end, place);
                    f.in_use_percent = Some(round_to_tenth(weighted / sizes));
                    findings.push(f);
                }
            };
            for (i, &busy) in chunks.busy.iter().enumerate() {
                let (cstart, cend) = chunks.bounds(i);
                let size = (cend - cstart) as f64;
                let percent = busy as f64 / size * 100.0;
                if percent < self.threshold {
                    let run = run.get_or_insert((cstart, cend, 0.0, 0.0));
                    run.1 = cend;
                    run.2 += size * percent;
                    run.3 += size;
                } else {
                    close(&mut run);
                }
            }
            close(&mut run);
        }
        findings
    }
}

/// `x` rounded to one decimal, halves away from zero (SQLite's `round(x, 1)`).
fn round_to_tenth(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_lane(start: i64, end: i64, chunks: u32) -> Utilization {
        let mut ranges = Ranges::new();
        ranges.insert((1, 0), (start, end, Some(1)));
        let thresholds = Thresholds {
            util_chunks: chunks,
            ..Thresholds::default()
        };
        Utilization::new(&ranges, &thresholds)
    }

    #[test]
    fn chunks_round_up_and_the_last_is_cut_at_the_range_end() {
        // 10 ns in 3 chunks: 4, 4 and 2 ns.
        let u = one_lane(100, 110, 3);
        let chunks = &u.lanes[&(1, 0)];
        assert_eq!(chunks.busy.len(), 3);
        assert_eq!(chunks.bounds(2), (108, 110));
        // 10 ns in 4 chunks of 3 ns: the 4th would start at the end.
        let u = one_lane(0, 10, 4);
        assert_eq!(u.lanes[&(1, 0)].busy.len(), 4);
        let u = one_lane(0, 9, 4);
        assert_eq!(u.lanes[&(1, 0)].busy.len(), 3);
    }

    #[test]
    fn consecutive_low_chunks_merge_with_their_weighted_mean() {
        let mut u = one_lane(0, 100, 4);
        u.add((1, 0), 0, 10); // chunk 0: 40%
        u.add((1, 0), 25, 30); // chunk 1: 20%
        u.add((1, 0), 50, 75); // chunk 2: 100%
        u.add((1, 0), 99, 100); // chunk 3: 4%
        let f = u.findings();
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].start, f[0].duration), (0, 50));
        assert_eq!(f[0].in_use_percent, Some(30.0));
        assert_eq!((f[1].start, f[1].duration), (75, 25));
        assert_eq!(f[1].in_use_percent, Some(4.0));
    }
}
