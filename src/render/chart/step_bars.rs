//! Steps as groups of bars (a job's steps across its ranks), as inline SVG
//! (frame, ticks, palette and legend from [`crate::render::chart`]): per
//! step a group of bars, one per slot (rank), as tall as its time; the
//! solid foot of a bar is the part of it that was busy, and a highlighted
//! bar is red. A slot without a bar has a cross in its place. Steps are
//! labelled by their names, or where a name is too long, by the number
//! ending it (`ProfilerStep#12`: 12).
//!
//! A step much longer than the others (a warm-up) would flatten every other
//! bar: the axis is then cut above the others, the longer bars break at the
//! top with their length written on them, and the chart says so.

use crate::render::chart::{self, Swatch, BLUE, MUTED, RED};
use crate::render::escape::html as escape;
use crate::render::format::duration;
use std::fmt::Write;

/// Groups of bars, a group per step.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StepBars {
    /// What it shows (its tooltip, and what a screen reader says).
    pub(crate) title: String,
    /// The class of its `<svg>`, for styles and tests.
    pub(crate) class: &'static str,
    /// The legend of a bar.
    pub(crate) bar_legend: String,
    /// The legend of a highlighted bar, where any may be.
    pub(crate) highlight_legend: Option<String>,
    /// The x axis's name.
    pub(crate) x_name: String,
    pub(crate) groups: Vec<Group>,
}

/// A step: its bars, one per slot.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Group {
    /// Its name: its label where it fits.
    pub(crate) name: String,
    /// Its place among all steps, from 0: its label (`#3`) where its name
    /// is too long and ends in no number.
    pub(crate) place: usize,
    pub(crate) slots: Vec<Slot>,
}

/// A slot of a group: a bar, or a cross where there is none.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Slot {
    Bar(Bar),
    Missing { tooltip: String },
}

/// A bar: its length and its busy foot (ns), in red where highlighted.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Bar {
    pub(crate) length_ns: u64,
    pub(crate) foot_ns: u64,
    pub(crate) highlighted: bool,
    pub(crate) tooltip: String,
}

const PLOT_WIDTH: f64 = 880.0;
const PLOT_HEIGHT: f64 = 260.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 60.0;
const BOTTOM: f64 = 48.0;
const FONT_SIZE: u8 = 11;
/// A bar this many times the median step or longer is an outlier, and
/// the axis is cut below it.
const OUTLIER: f64 = 3.0;

/// Where the time axis ends (ns): above the longest bar, or, where some
/// bars are outliers (at least [`OUTLIER`] times the median and longer
/// than the rest), above the longest of the rest; and whether it is cut.
fn axis_top(durations: &[u64]) -> (f64, bool) {
    let mut sorted = durations.to_vec();
    sorted.sort_unstable();
    let Some(&longest) = sorted.last() else {
        return (0.0, false);
    };
    let median = sorted[sorted.len() / 2] as f64;
    let rest = sorted
        .iter()
        .copied()
        .filter(|&d| (d as f64) < OUTLIER * median)
        .max();
    match rest {
        Some(rest) if (longest as f64) >= OUTLIER * median && rest > 0 => (rest as f64, true),
        _ => (longest as f64, false),
    }
}

/// A step's label under its bars: its name, or where that is longer than
/// `room` characters the number ending it, else its place from 0 (`#3`).
fn step_label(name: &str, place: usize, room: usize) -> String {
    if name.chars().count() <= room {
        return name.to_owned();
    }
    let digits: String = name
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    match digits.is_empty() {
        true => format!("#{place}"),
        false => digits,
    }
}

/// Which steps are labelled (every how many, from the first) and their
/// labels: every one where the labels fit beside each other, else every
/// second, third..., each label the step's name where it fits its room,
/// else the number ending it.
fn step_labels(steps: &[Group], group: f64) -> (usize, Vec<String>) {
    let width = chart::char_width(FONT_SIZE);
    let mut every = (30.0 / group).ceil().max(1.0) as usize;
    loop {
        let room = group * every as f64;
        let labels: Vec<String> = steps
            .iter()
            .map(|step| step_label(&step.name, step.place, ((room - 6.0) / width) as usize))
            .collect();
        let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        if widest as f64 * width + 6.0 <= room || every >= steps.len() {
            return (every, labels);
        }
        every += 1;
    }
}

impl StepBars {
    pub(crate) fn svg(&self) -> String {
        svg(self)
    }
}

fn svg(chart: &StepBars) -> String {
    let steps = &chart.groups;
    // Bars per group: a slot per rank, in every group.
    let ranks = steps
        .iter()
        .fold(1, |most, step| most.max(step.slots.len()));
    let durations: Vec<u64> = (steps.iter().flat_map(|s| &s.slots))
        .filter_map(|slot| match slot {
            Slot::Bar(bar) => Some(bar.length_ns),
            Slot::Missing { .. } => None,
        })
        .collect();
    let (top, cut) = axis_top(&durations);
    let (tick, ticks) = chart::ticks(top, 5);
    let top_ns = tick * ticks as f64;
    let y = |ns: f64| TOP + PLOT_HEIGHT - ns.min(top_ns) / top_ns * PLOT_HEIGHT;

    let width = LEFT + PLOT_WIDTH + 16.0;
    let height = TOP + PLOT_HEIGHT + BOTTOM;
    let mut s = chart::open(Some(chart.class), width, height, FONT_SIZE, &chart.title);
    let mut legend = vec![(chart.bar_legend.as_str(), BLUE, Swatch::Foot)];
    if let Some(highlight) = &chart.highlight_legend {
        legend.push((highlight.as_str(), RED, Swatch::Solid));
    }
    chart::legend(&mut s, LEFT, 22.0, FONT_SIZE, &legend);
    let group = PLOT_WIDTH / steps.len().max(1) as f64;
    let bar = group * 0.8 / ranks as f64;
    // A broken bar's length is written on it where it fits (else in its tooltip).
    let length_fits = bar >= 8.0 * chart::char_width(9);
    if cut {
        let longer = durations.iter().filter(|&&d| d as f64 > top_ns).count();
        let said = match (longer, length_fits) {
            (1, true) => "1 longer bar breaks at the top, its length written on it".to_owned(),
            (1, false) => "1 longer bar breaks at the top, its length in its tooltip".to_owned(),
            (n, true) => format!("{n} longer bars break at the top, their lengths written on them"),
            (n, false) => {
                format!("{n} longer bars break at the top, their lengths in their tooltips")
            }
        };
        let _ = writeln!(
            s,
            r#"<text class="axis-cut" x="{LEFT}" y="40" fill="{MUTED}">The time axis is cut at {}: {said}.</text>"#,
            chart::time_tick(top_ns, tick, top_ns),
        );
    }
    // The time axis and its grid.
    for i in 0..=ticks {
        let ns = tick * i as f64;
        let at = y(ns);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{at:.1}" x2="{}" y2="{at:.1}" stroke="{}"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + PLOT_WIDTH,
            chart::GRID,
            LEFT - 6.0,
            at + 4.0,
            chart::time_tick(ns, tick, top_ns)
        );
    }
    let (label_every, labels) = step_labels(steps, group);
    for (g, step) in steps.iter().enumerate() {
        let left = LEFT + g as f64 * group + group * 0.1;
        for (r, slot) in step.slots.iter().enumerate() {
            let x = left + r as f64 * bar;
            let t = match slot {
                Slot::Bar(t) => t,
                Slot::Missing { tooltip } => {
                    let _ = writeln!(
                        s,
                        r##"<text class="missing" x="{:.2}" y="{:.1}" text-anchor="middle" fill="#888"><title>{}</title>×</text>"##,
                        x + bar / 2.0,
                        TOP + PLOT_HEIGHT - 2.0,
                        escape(tooltip)
                    );
                    continue;
                }
            };
            let (class, color) = match t.highlighted {
                true => ("bar slowest", RED),
                false => ("bar", BLUE),
            };
            // A hairline between the bars of a group, where they are wide enough.
            let bar = match bar > 4.0 {
                true => bar - 1.0,
                false => bar,
            };
            let top = y(t.length_ns as f64);
            let busy_top = y(t.foot_ns.min(t.length_ns) as f64);
            let _ = write!(
                s,
                r#"<g class="{class}"><title>{}</title><rect x="{x:.2}" y="{top:.2}" width="{bar:.2}" height="{:.2}" fill="{color}" fill-opacity="0.4"/><rect class="busy" x="{x:.2}" y="{busy_top:.2}" width="{bar:.2}" height="{:.2}" fill="{color}"/>"#,
                escape(&t.tooltip),
                TOP + PLOT_HEIGHT - top,
                TOP + PLOT_HEIGHT - busy_top,
            );
            if t.length_ns as f64 > top_ns {
                // The break: a white gap across the bar near its top.
                let _ = write!(
                    s,
                    r#"<path class="break" d="M{x:.2} {:.2}l{bar:.2} -6v5l-{bar:.2} 6z" fill="white"/>"#,
                    TOP + 14.0,
                );
                if length_fits {
                    let _ = write!(
                        s,
                        r#"<text x="{:.2}" y="{:.1}" text-anchor="middle" font-size="9">{}</text>"#,
                        x + bar / 2.0,
                        TOP - 3.0,
                        escape(&duration(t.length_ns.into()))
                    );
                }
            }
            s.push_str("</g>\n");
        }
        if g % label_every == 0 {
            // The name in the tooltip, whatever the label says.
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle"><title>{}</title>{}</text>"#,
                LEFT + (g as f64 + 0.5) * group,
                TOP + PLOT_HEIGHT + 16.0,
                escape(&step.name),
                escape(&labels[g])
            );
        }
    }
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{0}" x2="{1}" y2="{0}" stroke="#333"/><text x="{2}" y="{3}" text-anchor="middle">{4}</text>"##,
        TOP + PLOT_HEIGHT,
        LEFT + PLOT_WIDTH,
        LEFT + PLOT_WIDTH / 2.0,
        TOP + PLOT_HEIGHT + 38.0,
        escape(&chart.x_name)
    );
    chart::close(&mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_warm_up_cuts_the_axis_above_the_other_steps() {
        let warm_up = [
            380_292_408,
            3_438_000,
            2_213_000,
            1_963_000,
            2_083_000,
            2_105_000,
        ];
        assert_eq!(axis_top(&warm_up), (3_438_000.0, true));
        let even = [2_000_000, 2_100_000, 1_900_000];
        assert_eq!(axis_top(&even), (2_100_000.0, false));
        assert_eq!(axis_top(&[]), (0.0, false));
        // One step: nothing to cut for.
        assert_eq!(axis_top(&[5]), (5.0, false));
    }

    #[test]
    fn labels_are_names_or_the_number_ending_them() {
        assert_eq!(step_label("step 0", 0, 10), "step 0");
        assert_eq!(step_label("ProfilerStep#12", 3, 4), "12");
        assert_eq!(step_label("aten::linear", 4, 4), "#4");
    }
}
