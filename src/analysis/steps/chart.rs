//! The chart of the job's steps, as data ([`StepBars`], drawn by
//! [`crate::render::chart::step_bars`]): per step a group of bars, one per
//! rank, as tall as the rank's step took; the part of it the rank's GPUs
//! were busy is the solid foot of the bar, and the slowest rank's bar is
//! highlighted (none in a tie, or with one rank). A rank without the step
//! has a cross in its place.
//!
//! Past [`MAX_STEPS`] steps, the chart holds those of largest skew, in step
//! order, and says so; the tables keep every step.

use crate::render::chart::step_bars::{Bar, Group, Slot, StepBars};
use crate::render::chart::Chart;
use crate::render::format::ms;

use super::JobSteps;

/// The most steps one chart holds.
pub(super) const MAX_STEPS: usize = 60;

/// The steps the chart holds, by index, and whether that is all of them.
pub(super) fn charted(job: &JobSteps) -> (Vec<usize>, bool) {
    let mut chosen: Vec<usize> = (0..job.steps.len()).collect();
    if chosen.len() <= MAX_STEPS {
        return (chosen, true);
    }
    let skew = |i: usize| job.steps[i].slowest.as_ref().map_or(0, |s| s.skew_ns);
    // Largest skew first, the earlier step of a tie; then back in order.
    chosen.sort_by_key(|&i| (std::cmp::Reverse(skew(i)), i));
    chosen.truncate(MAX_STEPS);
    chosen.sort_unstable();
    (chosen, false)
}

/// The chart of the steps [`charted`] chooses.
pub(super) fn chart(job: &JobSteps) -> Chart {
    let (chosen, _) = charted(job);
    let groups = chosen.iter().map(|&place| {
        let step = &job.steps[place];
        // No slowest rank in a tie.
        let slowest = (step.slowest.as_ref())
            .filter(|sl| sl.skew_ns > 0)
            .map(|sl| sl.rank);
        let slots = step.times.iter().enumerate().map(|(r, time)| {
            let label = &job.ranks[r].label;
            match time {
                None => Slot::Missing {
                    tooltip: format!("{label}: missing"),
                },
                Some(t) => Slot::Bar(Bar {
                    length_ns: t.duration_ns,
                    foot_ns: t.gpu_busy_ns,
                    highlighted: slowest == Some(r),
                    tooltip: format!(
                        "{}: {label}: {}, GPU busy {}",
                        step.name,
                        ms(t.duration_ns as f64),
                        ms(t.gpu_busy_ns as f64)
                    ),
                }),
            }
        });
        Group {
            name: step.name.clone(),
            place,
            slots: slots.collect(),
        }
    });
    Chart::StepBars(StepBars {
        title: "Step durations per rank".to_owned(),
        class: "job-steps-chart",
        bar_legend: "a rank's step (solid: its GPUs busy)".to_owned(),
        highlight_legend: (job.ranks.len() > 1).then(|| "the step's slowest rank".to_owned()),
        x_name: "step".to_owned(),
        groups: groups.collect(),
    })
}
