//! The chart of the job's steps, as inline SVG: per step a group of bars,
//! one per rank, as tall as the rank's step took; the part of it the rank's
//! GPUs were busy is the solid foot of the bar, and the slowest rank's bar is
//! red. A rank without the step has a cross in its place.
//!
//! Past [`MAX_STEPS`] steps, the chart holds those of largest skew, in step
//! order, and says so; the tables keep every step.

use crate::render::escape::html as escape;
use std::fmt::Write;

use super::{ms, JobSteps, Step};

/// The most steps one chart holds.
pub(super) const MAX_STEPS: usize = 60;

const PLOT_WIDTH: f64 = 880.0;
const PLOT_HEIGHT: f64 = 260.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 48.0;
/// The width of a character of the 11 px labels, roughly.
const CHAR_WIDTH: f64 = 6.5;

const RANK_COLOR: &str = "#4e79a7";
const SLOWEST_COLOR: &str = "#e15759";

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

pub(super) fn svg(job: &JobSteps) -> String {
    let (chosen, _) = charted(job);
    let steps: Vec<&Step> = chosen.iter().map(|&i| &job.steps[i]).collect();
    let ranks = job.ranks.len().max(1);
    let longest = steps
        .iter()
        .flat_map(|s| s.times.iter().flatten())
        .map(|t| t.duration_ns)
        .max()
        .unwrap_or(0);
    let (tick, ticks) = ticks(longest as f64);
    let top_ns = tick * ticks as f64;
    let y = |ns: f64| TOP + PLOT_HEIGHT - ns / top_ns * PLOT_HEIGHT;

    let width = LEFT + PLOT_WIDTH + 16.0;
    let height = TOP + PLOT_HEIGHT + BOTTOM;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg class="job-steps-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11" role="img" aria-label="Step durations per rank">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="{width}" height="{height}" fill="white"/>"#
    );
    // The legend, above the plot.
    let _ = writeln!(
        s,
        r#"<rect x="{LEFT}" y="12" width="12" height="12" fill="{RANK_COLOR}" fill-opacity="0.4"/><rect x="{LEFT}" y="18" width="12" height="6" fill="{RANK_COLOR}"/><text x="{}" y="22">a rank's step (solid: its GPUs busy)</text>"#,
        LEFT + 18.0
    );
    let _ = writeln!(
        s,
        r#"<rect x="{}" y="12" width="12" height="12" fill="{SLOWEST_COLOR}"/><text x="{}" y="22">the step's slowest rank</text>"#,
        LEFT + 280.0,
        LEFT + 298.0
    );
    // The time axis and its grid.
    for i in 0..=ticks {
        let ns = tick * i as f64;
        let at = y(ns);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{at:.1}" x2="{}" y2="{at:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + PLOT_WIDTH,
            LEFT - 6.0,
            at + 4.0,
            tick_label(ns, tick)
        );
    }
    let group = PLOT_WIDTH / steps.len().max(1) as f64;
    let bar = group * 0.8 / ranks as f64;
    let label_every = (30.0 / group).ceil().max(1.0) as usize;
    for (g, step) in steps.iter().enumerate() {
        let left = LEFT + g as f64 * group + group * 0.1;
        let slowest = step.slowest.as_ref().map(|sl| sl.rank);
        for (r, time) in step.times.iter().enumerate() {
            let x = left + r as f64 * bar;
            let label = escape(&job.ranks[r].label);
            let Some(t) = time else {
                let _ = writeln!(
                    s,
                    r##"<text class="missing" x="{:.2}" y="{:.1}" text-anchor="middle" fill="#888"><title>{label}: missing</title>×</text>"##,
                    x + bar / 2.0,
                    TOP + PLOT_HEIGHT - 2.0
                );
                continue;
            };
            let (class, color) = match slowest == Some(r) {
                true => ("bar slowest", SLOWEST_COLOR),
                false => ("bar", RANK_COLOR),
            };
            // A hairline between the bars of a group, where they are wide enough.
            let bar = match bar > 4.0 {
                true => bar - 1.0,
                false => bar,
            };
            let top = y(t.duration_ns as f64);
            let busy_top = y(t.gpu_busy_ns.min(t.duration_ns) as f64);
            let _ = writeln!(
                s,
                r#"<g class="{class}"><title>{}: {label}: {}, GPU busy {}</title><rect x="{x:.2}" y="{top:.2}" width="{bar:.2}" height="{:.2}" fill="{color}" fill-opacity="0.4"/><rect class="busy" x="{x:.2}" y="{busy_top:.2}" width="{bar:.2}" height="{:.2}" fill="{color}"/></g>"#,
                escape(&step.name),
                ms(t.duration_ns as f64),
                ms(t.gpu_busy_ns as f64),
                TOP + PLOT_HEIGHT - top,
                TOP + PLOT_HEIGHT - busy_top,
            );
        }
        if g % label_every == 0 {
            // Names too long for their room are told by their place among
            // the steps, the name in the tooltip.
            let chars = ((group * label_every as f64) / CHAR_WIDTH).floor() as usize;
            let label = match step.name.chars().count() <= chars {
                true => step.name.clone(),
                false => format!("#{}", chosen[g] + 1),
            };
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle"><title>{}</title>{}</text>"#,
                LEFT + (g as f64 + 0.5) * group,
                TOP + PLOT_HEIGHT + 16.0,
                escape(&step.name),
                escape(&label)
            );
        }
    }
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{0}" x2="{1}" y2="{0}" stroke="#333"/><text x="{2}" y="{3}" text-anchor="middle">step</text>"##,
        TOP + PLOT_HEIGHT,
        LEFT + PLOT_WIDTH,
        LEFT + PLOT_WIDTH / 2.0,
        TOP + PLOT_HEIGHT + 38.0
    );
    s.push_str("</svg>\n");
    s
}

/// A tick size of 1, 2 or 5 times a power of ten (ns), and how many ticks
/// reach `largest`: two to five.
fn ticks(largest: f64) -> (f64, usize) {
    if largest <= 0.0 {
        return (1e6, 1);
    }
    let rough = largest / 5.0;
    let power = 10f64.powf(rough.log10().floor());
    let tick = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|&t| t >= rough)
        .unwrap_or(10.0 * power);
    (tick, (largest / tick).ceil().max(1.0) as usize)
}

/// A tick's time in the unit of the tick size (ticks are 1, 2 or 5 times a
/// power of ten: whole numbers of that unit).
fn tick_label(ns: f64, tick: f64) -> String {
    let (unit, name) = match tick {
        t if t >= 1e9 => (1e9, "s"),
        t if t >= 1e6 => (1e6, "ms"),
        t if t >= 1e3 => (1e3, "µs"),
        _ => (1.0, "ns"),
    };
    format!("{:.0} {name}", ns / unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_reach_the_largest() {
        assert_eq!(ticks(9.3e6), (2e6, 5));
        assert_eq!(ticks(1e6), (2e5, 5));
        assert_eq!(ticks(0.0), (1e6, 1));
        let (tick, n) = ticks(123_456.0);
        assert!(tick * n as f64 >= 123_456.0 && (2..=5).contains(&n));
    }

    #[test]
    fn tick_labels_are_whole_numbers_of_the_unit_of_the_tick() {
        assert_eq!(tick_label(4e8, 1e8), "400 ms");
        assert_eq!(tick_label(0.0, 2e5), "0 µs");
        assert_eq!(tick_label(6e5, 2e5), "600 µs");
        assert_eq!(tick_label(1.5e10, 5e9), "15 s");
        assert_eq!(tick_label(40.0, 20.0), "40 ns");
    }
}
