//! The page's charts, as data (drawn by [`crate::render::chart::timeline`]):
//! each GPU's busy and waiting time over the run, and the kinds of work as
//! one stacked bar.

use super::super::model::RunReport;
use super::percent;
use crate::render::chart::timeline::{BusyTimeline, Lane, Shares, TimeBuckets};
use crate::render::chart::Chart;

/// Per GPU, the share of each time bucket that was busy and waiting, up
/// to the last work's end (the buckets after it are empty).
pub(super) fn busy_over_time(run: &RunReport) -> Chart {
    let (bucket, origin) = run.timeline;
    let last = run.gpus.iter().map(|g| g.last_end).max().unwrap_or(origin);
    let held = run.gpus.first().map_or(0, |g| g.timeline.busy.len());
    let buckets = ((last - origin).div_euclid(bucket.max(1)) as usize + 1).clamp(1, held.max(1));
    let lanes = run.gpus.iter().map(|gpu| Lane {
        label: format!("GPU {}", gpu.device),
        busy_ns: gpu.timeline.busy.clone(),
        waiting_ns: gpu.timeline.waiting.clone(),
    });
    Chart::Busy(BusyTimeline {
        buckets: TimeBuckets {
            origin_ns: origin,
            width_ns: bucket,
            count: buckets,
        },
        lanes: lanes.collect(),
    })
}

/// The kinds of work as one bar, each its share of the summed GPU time.
pub(super) fn kinds_bar(run: &RunReport) -> Chart {
    let total: i128 = run.kinds.iter().map(|k| k.time).sum();
    let parts = run
        .kinds
        .iter()
        .map(|k| (k.kind.clone(), percent(k.time, total)));
    Chart::Shares(Shares {
        title: "GPU time by kind of work".to_owned(),
        parts: parts.collect(),
    })
}
