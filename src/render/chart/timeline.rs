//! The charts of a run's page, as inline SVG (frame, palette, ticks and
//! legends from [`crate::render::chart`]): each GPU's busy and waiting time
//! over the run ([`BusyTimeline`]), and shares of a whole as one stacked
//! bar ([`Shares`]).

use std::fmt::Write;

use crate::render::chart::{self, Swatch, BLUE, GROUND, MUTED, ORANGE, PALETTE};
use crate::render::escape::html as escape;

/// Per GPU, a lane of buckets of time on the export's clock: how much of
/// each was busy and how much waiting.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BusyTimeline {
    pub(crate) buckets: TimeBuckets,
    pub(crate) lanes: Vec<Lane>,
}

/// Equal buckets of time, one after the other: the time axis of a
/// [`BusyTimeline`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TimeBuckets {
    /// Where the first starts, on the export's clock (ns).
    pub(crate) origin_ns: i64,
    /// The length of each (ns).
    pub(crate) width_ns: i64,
    /// How many are drawn (one at least).
    pub(crate) count: usize,
}

/// A GPU's lane of a [`BusyTimeline`]: per bucket, its busy and waiting
/// time (ns).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Lane {
    pub(crate) label: String,
    pub(crate) busy_ns: Vec<i64>,
    pub(crate) waiting_ns: Vec<i64>,
}

/// Parts of a whole, as one stacked bar with a legend.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Shares {
    pub(crate) title: String,
    /// Each part's name and its share of the whole (%).
    pub(crate) parts: Vec<(String, f64)>,
}

impl BusyTimeline {
    pub(crate) fn svg(&self) -> String {
        busy_over_time(self)
    }
}

impl Shares {
    pub(crate) fn svg(&self) -> String {
        shares_bar(self)
    }
}

const LEFT: f64 = 110.0;
const PLOT: f64 = 840.0;
const LANE: f64 = 46.0;
const GAP: f64 = 12.0;
const FONT_SIZE: u8 = 12;

/// Per GPU, a strip of bars: the share of each time bucket that was busy
/// (blue) and waiting (orange); the rest (grey) was host-bound or outside
/// the GPU's work. The time axis is the export's clock, in seconds, as the
/// capture line and the idle stretches give times, with round ticks.
fn busy_over_time(timeline: &BusyTimeline) -> String {
    let TimeBuckets {
        origin_ns: origin,
        width_ns: bucket,
        count: buckets,
    } = timeline.buckets;
    let bar = PLOT / buckets as f64;
    let height = 30.0 + timeline.lanes.len() as f64 * (LANE + GAP) + 40.0;
    let width = LEFT + PLOT + 20.0;
    let mut s = chart::open(
        None,
        width,
        height,
        FONT_SIZE,
        "Busy and waiting time over the run, per GPU",
    );
    chart::legend(
        &mut s,
        LEFT,
        14.0,
        FONT_SIZE,
        &[
            ("busy", BLUE, Swatch::Outlined),
            ("waiting (launched, not started)", ORANGE, Swatch::Outlined),
            ("host-bound or no work", GROUND, Swatch::Outlined),
        ],
    );
    for (i, lane) in timeline.lanes.iter().enumerate() {
        let top = 30.0 + i as f64 * (LANE + GAP);
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            LEFT - 8.0,
            top + LANE / 2.0 + 4.0,
            escape(&lane.label)
        );
        let _ = write!(
            s,
            "<rect x=\"{LEFT}\" y=\"{top}\" width=\"{PLOT}\" height=\"{LANE}\" fill=\"{GROUND}\"/>"
        );
        let over_time = lane.busy_ns.iter().zip(&lane.waiting_ns);
        for (b, (&busy, &waiting)) in over_time.take(buckets).enumerate() {
            let x = LEFT + b as f64 * bar;
            let busy_h = LANE * (busy as f64 / bucket as f64).min(1.0);
            let wait_h = (LANE * (waiting as f64 / bucket as f64)).min(LANE - busy_h);
            if busy_h > 0.0 {
                let _ = write!(
                    s,
                    "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bar:.2}\" height=\"{busy_h:.2}\" fill=\"{BLUE}\"/>",
                    top + LANE - busy_h
                );
            }
            if wait_h > 0.0 {
                let _ = write!(
                    s,
                    "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bar:.2}\" height=\"{wait_h:.2}\" fill=\"{ORANGE}\"/>",
                    top + LANE - busy_h - wait_h
                );
            }
        }
        s.push('\n');
    }
    // The time axis: round times on the export's clock within the buckets.
    let axis = 30.0 + timeline.lanes.len() as f64 * (LANE + GAP) + 4.0;
    let total = bucket as f64 * buckets as f64;
    let (step, _) = chart::ticks(total, 8);
    let x_of = |ns: f64| LEFT + PLOT * (ns - origin as f64) / total;
    let mut tick = (origin as f64 / step).ceil() * step;
    while tick <= origin as f64 + total + 0.5 {
        let x = x_of(tick);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{axis}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#888\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            axis + 5.0,
            axis + 18.0,
            escape(&chart::clock_tick(tick, step))
        );
        tick += step;
    }
    let _ = writeln!(
        s,
        "\n<text x=\"{LEFT}\" y=\"{}\" fill=\"{MUTED}\">time on the export's clock, as the capture and the idle stretches give it</text>",
        axis + 34.0
    );
    chart::close(&mut s);
    s
}

/// The parts as one bar, each as long as its share.
fn shares_bar(shares: &Shares) -> String {
    let rows = shares.parts.len().div_ceil(3);
    let height = 50.0 + rows as f64 * 20.0 + 10.0;
    let width = PLOT + 40.0;
    let mut s = chart::open(None, width, height, FONT_SIZE, &shares.title);
    let mut x = 10.0;
    for (i, (name, share)) in shares.parts.iter().enumerate() {
        let w = PLOT * share / 100.0;
        let color = PALETTE[i % PALETTE.len()];
        let _ = write!(
            s,
            "<rect x=\"{x:.2}\" y=\"10\" width=\"{w:.2}\" height=\"28\" fill=\"{color}\"><title>{}: {share:.1}%</title></rect>",
            escape(name),
        );
        x += w;
    }
    s.push('\n');
    for (i, (name, share)) in shares.parts.iter().enumerate() {
        let (col, row) = (i % 3, i / 3);
        let label = format!("{name} {share:.1}%");
        let color = PALETTE[i % PALETTE.len()];
        chart::legend(
            &mut s,
            10.0 + col as f64 * (PLOT / 3.0),
            60.0 + row as f64 * 20.0,
            FONT_SIZE,
            &[(&label, color, Swatch::Solid)],
        );
    }
    chart::close(&mut s);
    s
}
