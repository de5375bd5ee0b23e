//! The page's charts, as inline SVG: each GPU's busy and waiting time over
//! the run, and the kinds of work as one stacked bar.

use std::fmt::Write;

use super::super::model::RunReport;
use super::{duration, percent};
use crate::render::escape::html as escape;

/// Distinct for the common forms of colour blindness, and on white (Tableau 10).
const COLORS: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#b6992d", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];
const BUSY: &str = "#4e79a7";
const WAITING: &str = "#f28e2b";
const IDLE: &str = "#eceff3";

const LEFT: f64 = 110.0;
const PLOT: f64 = 840.0;
const LANE: f64 = 46.0;
const GAP: f64 = 12.0;

/// Per GPU, a strip of bars: the share of each time bucket that was busy
/// (blue) and waiting (orange); the rest (grey) was host-bound or outside
/// the GPU's work.
pub(super) fn busy_over_time(run: &RunReport) -> String {
    let (bucket, origin) = run.timeline;
    // The buckets up to the last work's end (the rest are empty).
    let last = run.gpus.iter().map(|g| g.last_end).max().unwrap_or(origin);
    let held = run.gpus.first().map_or(0, |g| g.busy_over_time.len());
    let buckets = ((last - origin).div_euclid(bucket.max(1)) as usize + 1).clamp(1, held.max(1));
    let bar = PLOT / buckets as f64;
    let height = 30.0 + run.gpus.len() as f64 * (LANE + GAP) + 40.0;
    let width = LEFT + PLOT + 20.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\">"
    );
    let _ = write!(
        s,
        "<title>Busy and waiting time over the run, per GPU</title>"
    );
    legend(
        &mut s,
        LEFT,
        14.0,
        &[
            ("busy", BUSY),
            ("waiting (launched, not started)", WAITING),
            ("host-bound or no work", IDLE),
        ],
    );
    for (i, gpu) in run.gpus.iter().enumerate() {
        let top = 30.0 + i as f64 * (LANE + GAP);
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">GPU {}</text>",
            LEFT - 8.0,
            top + LANE / 2.0 + 4.0,
            gpu.device
        );
        let _ = write!(
            s,
            "<rect x=\"{LEFT}\" y=\"{top}\" width=\"{PLOT}\" height=\"{LANE}\" fill=\"{IDLE}\"/>"
        );
        let over_time = gpu.busy_over_time.iter().zip(&gpu.waiting_over_time);
        for (b, (&busy, &waiting)) in over_time.take(buckets).enumerate() {
            let x = LEFT + b as f64 * bar;
            let busy_h = LANE * (busy as f64 / bucket as f64).min(1.0);
            let wait_h = (LANE * (waiting as f64 / bucket as f64)).min(LANE - busy_h);
            if busy_h > 0.0 {
                let _ = write!(
                    s,
                    "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bar:.2}\" height=\"{busy_h:.2}\" fill=\"{BUSY}\"/>",
                    top + LANE - busy_h
                );
            }
            if wait_h > 0.0 {
                let _ = write!(
                    s,
                    "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bar:.2}\" height=\"{wait_h:.2}\" fill=\"{WAITING}\"/>",
                    top + LANE - busy_h - wait_h
                );
            }
        }
    }
    // The time axis: from the first GPU work, five ticks.
    let axis = 30.0 + run.gpus.len() as f64 * (LANE + GAP) + 4.0;
    let total = bucket as i128 * buckets as i128;
    for t in 0..=5 {
        let x = LEFT + PLOT * f64::from(t) / 5.0;
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{axis}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#888\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            axis + 5.0,
            axis + 18.0,
            escape(&duration(total * i128::from(t) / 5))
        );
    }
    let _ = write!(
        s,
        "<text x=\"{LEFT}\" y=\"{}\" fill=\"#555\">time since the first GPU work</text></svg>",
        axis + 34.0
    );
    s
}

/// The kinds of work as one bar, each its share of the summed GPU time.
pub(super) fn kinds_bar(run: &RunReport) -> String {
    let total: i128 = run.kinds.iter().map(|k| k.time).sum();
    let rows = run.kinds.len().div_ceil(3);
    let height = 50.0 + rows as f64 * 20.0 + 10.0;
    let width = PLOT + 40.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\">"
    );
    let _ = write!(s, "<title>GPU time by kind of work</title>");
    let mut x = 10.0;
    for (i, k) in run.kinds.iter().enumerate() {
        let w = PLOT * percent(k.time, total) / 100.0;
        let color = COLORS[i % COLORS.len()];
        let _ = write!(
            s,
            "<rect x=\"{x:.2}\" y=\"10\" width=\"{w:.2}\" height=\"28\" fill=\"{color}\"><title>{}: {:.1}%</title></rect>",
            escape(&k.kind),
            percent(k.time, total)
        );
        x += w;
    }
    for (i, k) in run.kinds.iter().enumerate() {
        let (col, row) = (i % 3, i / 3);
        let lx = 10.0 + col as f64 * (PLOT / 3.0);
        let ly = 50.0 + row as f64 * 20.0;
        let color = COLORS[i % COLORS.len()];
        let _ = write!(
            s,
            "<rect x=\"{lx}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{}\" y=\"{}\">{} {:.1}%</text>",
            ly,
            lx + 18.0,
            ly + 10.0,
            escape(&k.kind),
            percent(k.time, total)
        );
    }
    s.push_str("</svg>");
    s
}

fn legend(s: &mut String, x: f64, y: f64, items: &[(&str, &str)]) {
    let mut at = x;
    for (label, color) in items {
        let _ = write!(
            s,
            "<rect x=\"{at}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{color}\" stroke=\"#999\" stroke-width=\"0.5\"/><text x=\"{}\" y=\"{y}\">{}</text>",
            y - 10.0,
            at + 18.0,
            escape(label)
        );
        at += 18.0 + label.len() as f64 * 7.0 + 20.0;
    }
}
