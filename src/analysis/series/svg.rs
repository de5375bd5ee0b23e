//! The plot of a series: total time of each pattern against the parameter,
//! one line per pattern, as a self-contained SVG.
//!
//! The x axis is numeric where every value is a number (logarithmic where
//! they span a factor of 16 or more, as doubling batch sizes do), with a tick
//! at each value; otherwise the values are evenly spaced, in the order given.
//! The y axis starts at zero, in the time unit that suits the largest total.
//! The frame, palette and round ticks are [`crate::render::chart`]'s.

use crate::render::chart::{self, decimals, round_step, PALETTE};
use crate::render::escape::html as escape;
use crate::render::format::{duration_3, TimeUnit};
use std::fmt::Write;

use super::{Series, SeriesCell};

const PLOT_WIDTH: f64 = 560.0;
const PLOT_HEIGHT: f64 = 320.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 56.0;
const BOTTOM: f64 = 64.0;
const LEGEND_GAP: f64 = 28.0;
const LEGEND_LINE: f64 = 22.0;
const FONT_SIZE: u8 = 12;
/// Longer patterns are shortened in the legend (the full text is its tooltip).
const LEGEND_CHARS: usize = 44;

/// Past ten lines, colours repeat with these dashes.
const DASHES: [&str; 3] = ["", "6 3", "2 3"];

pub(super) fn plot(series: &Series) -> String {
    let x = XAxis::new(series);
    let y = YAxis::new(series);

    let legend_chars = (0..series.patterns.len())
        .map(|p| {
            let (text, note) = legend_label(series, p);
            text.chars().count() + note.len() + 3
        })
        .max()
        .unwrap_or(10);
    let legend_width = 36.0 + legend_chars as f64 * chart::char_width(FONT_SIZE);
    let width = (LEFT + PLOT_WIDTH + LEGEND_GAP + legend_width + 16.0).round();
    let legend_height = 30.0 + series.patterns.len() as f64 * LEGEND_LINE;
    let height = (TOP + PLOT_HEIGHT.max(legend_height) + BOTTOM).round();

    let title = format!("Total time of matching events by {}", series.parameter);
    let mut s = chart::open(None, width, height, FONT_SIZE, &title);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="24" font-size="15" font-weight="bold">{}</text>"#,
        escape(&title)
    );
    let _ = writeln!(
        s,
        r##"<text x="{LEFT}" y="42" fill="#555">{} run{}; GPU time for kernels and NVTX GPU projections, CPU time for calls and NVTX ranges</text>"##,
        series.runs.len(),
        if series.runs.len() == 1 { "" } else { "s" }
    );

    if let Some(first) = series.incomplete.first() {
        let more = match series.incomplete.len() {
            1 => String::new(),
            n => format!(" (and {} more: see the CSV)", n - 1),
        };
        let _ = writeln!(
            s,
            r##"<text x="{LEFT}" y="{:.1}" fill="#c0392b">INCOMPLETE: {}{more}</text>"##,
            height - 8.0,
            escape(first)
        );
    }

    // Grid and y axis.
    let _ = writeln!(s, r##"<g stroke="#e3e3e3" stroke-width="1">"##);
    for &(value, _) in &y.ticks {
        let py = y.pixel(value);
        let _ = writeln!(
            s,
            r#"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}"/>"#,
            LEFT + PLOT_WIDTH
        );
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(s, r##"<g text-anchor="end" fill="#333">"##);
    for (value, label) in &y.ticks {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{label}</text>"#,
            LEFT - 8.0,
            y.pixel(*value) + 4.0
        );
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(
        s,
        r#"<text transform="translate(22 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + PLOT_HEIGHT / 2.0,
        y.title
    );

    // x axis.
    let _ = writeln!(s, r##"<g text-anchor="middle" fill="#333">"##);
    let mut last_label_end = f64::NEG_INFINITY;
    for (i, run) in series.runs.iter().enumerate() {
        let px = x.pixel(i);
        let _ = writeln!(
            s,
            r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#333"/>"##,
            TOP + PLOT_HEIGHT,
            TOP + PLOT_HEIGHT + 5.0
        );
        // Labels that would overlap the previous one are left out.
        let half = run.value.chars().count() as f64 * chart::char_width(FONT_SIZE) / 2.0;
        if px - half >= last_label_end + 6.0 {
            let _ = writeln!(
                s,
                r#"<text x="{px:.1}" y="{:.1}">{}</text>"#,
                TOP + PLOT_HEIGHT + 19.0,
                escape(&run.value)
            );
            last_label_end = px + half;
        }
    }
    let _ = writeln!(s, "</g>");
    let scale = match x.kind {
        XKind::Log => " (log scale)",
        _ => "",
    };
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}{scale}</text>"#,
        LEFT + PLOT_WIDTH / 2.0,
        TOP + PLOT_HEIGHT + 44.0,
        escape(&series.parameter)
    );
    let _ = writeln!(
        s,
        r##"<path d="M{LEFT} {TOP}V{:.1}H{:.1}" fill="none" stroke="#333"/>"##,
        TOP + PLOT_HEIGHT,
        LEFT + PLOT_WIDTH
    );

    // One line per pattern, with a dot per run carrying its numbers.
    let order = x.order();
    for (p, (pattern, cells)) in series.patterns.iter().zip(&series.cells).enumerate() {
        // A pattern that matched nothing anywhere would only hide the axis.
        if no_events(cells) {
            continue;
        }
        let (color, dash) = style(p);
        let points: Vec<String> = order
            .iter()
            .map(|&i| {
                format!(
                    "{:.1},{:.1}",
                    x.pixel(i),
                    y.pixel(cells[i].total_ns.max(0) as f64)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            r#"<g><title>{}</title><polyline points="{}" fill="none" stroke="{color}" stroke-width="2"{dash} stroke-linejoin="round"/>"#,
            escape(pattern.text()),
            points.join(" ")
        );
        for &i in &order {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"><title>{}</title></circle>"#,
                x.pixel(i),
                y.pixel(cells[i].total_ns.max(0) as f64),
                escape(&tooltip(series, pattern.text(), i, &cells[i]))
            );
        }
        let _ = writeln!(s, "</g>");
    }

    // Legend, in the order of the lines' ends, highest first.
    let legend_x = LEFT + PLOT_WIDTH + LEGEND_GAP;
    let _ = writeln!(
        s,
        r#"<text x="{legend_x}" y="{:.1}" font-weight="bold">event pattern</text>"#,
        TOP + 4.0
    );
    let last = order.last().copied().unwrap_or(0);
    let mut by_end: Vec<usize> = (0..series.patterns.len()).collect();
    by_end.sort_by_key(|&p| std::cmp::Reverse(series.cells[p][last].total_ns));
    for (row, &p) in by_end.iter().enumerate() {
        let pattern = &series.patterns[p];
        let (color, dash) = style(p);
        let ly = TOP + 24.0 + row as f64 * LEGEND_LINE;
        let (text, note) = legend_label(series, p);
        if no_events(&series.cells[p]) {
            // No line to show a sample of.
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" fill="#777">{} ({note})</text>"##,
                legend_x + 32.0,
                ly + 4.0,
                escape(&text)
            );
            continue;
        }
        let _ = writeln!(
            s,
            r##"<g><title>{}</title><line x1="{legend_x}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2"{dash}/><circle cx="{:.1}" cy="{ly:.1}" r="3.5" fill="{color}"/><text x="{:.1}" y="{:.1}">{} <tspan fill="#777">({note})</tspan></text></g>"##,
            escape(pattern.text()),
            legend_x + 24.0,
            legend_x + 12.0,
            legend_x + 32.0,
            ly + 4.0,
            escape(&text)
        );
    }
    chart::close(&mut s);
    s
}

/// A pattern's legend entry: its text, shortened, and what its line measures.
fn legend_label(series: &Series, p: usize) -> (String, &'static str) {
    let pattern = &series.patterns[p];
    let note = match pattern.kind().is_gpu_time() {
        _ if no_events(&series.cells[p]) => "no events in any run",
        true => "GPU time",
        false => "CPU time",
    };
    (shorten(pattern.text()), note)
}

fn no_events(cells: &[SeriesCell]) -> bool {
    cells.iter().all(|c| c.count == 0)
}

fn style(pattern: usize) -> (&'static str, String) {
    let color = PALETTE[pattern % PALETTE.len()];
    let dash = DASHES[(pattern / PALETTE.len()) % DASHES.len()];
    let dash = match dash {
        "" => String::new(),
        d => format!(r#" stroke-dasharray="{d}""#),
    };
    (color, dash)
}

fn tooltip(series: &Series, pattern: &str, run: usize, cell: &SeriesCell) -> String {
    format!(
        "{pattern}, {}={}: {} in {} events",
        series.parameter,
        series.runs[run].value,
        duration_3(cell.total_ns),
        cell.count
    )
}

fn shorten(text: &str) -> String {
    match text.chars().count() > LEGEND_CHARS {
        true => {
            let kept: String = text.chars().take(LEGEND_CHARS - 1).collect();
            format!("{kept}…")
        }
        false => text.to_owned(),
    }
}

/// The time axis: linear from zero to a round number at or above the
/// largest total; logarithmic, by decades, where some line would otherwise
/// lie flat along the bottom (its largest total under 1/50 of the largest).
struct YAxis {
    title: String,
    scale: YScale,
    /// (nanoseconds, label).
    ticks: Vec<(f64, String)>,
}

enum YScale {
    /// Nanoseconds at the top of the plot.
    Linear { top_ns: f64 },
    /// Decades (log10 of nanoseconds) at the bottom and top; zero sits
    /// below the bottom decade.
    Log { low: f64, high: f64 },
}

/// Below the lowest decade of a log axis: where zeros are drawn.
const ZERO_BAND: f64 = 20.0;
/// A line whose largest total is under 1/this of the largest calls for a log axis.
const FLAT_RATIO: i64 = 50;

impl YAxis {
    fn new(series: &Series) -> Self {
        let drawn: Vec<&Vec<SeriesCell>> = series.cells.iter().filter(|c| !no_events(c)).collect();
        let line_max =
            |cells: &&Vec<SeriesCell>| cells.iter().map(|c| c.total_ns).max().unwrap_or(0);
        let max_ns = drawn.iter().map(line_max).max().unwrap_or(0).max(1);
        let smallest_line = drawn.iter().map(line_max).filter(|&m| m > 0).min();
        match smallest_line {
            Some(small) if small.saturating_mul(FLAT_RATIO) < max_ns => {
                let min_positive = drawn
                    .iter()
                    .flat_map(|cells| cells.iter().map(|c| c.total_ns))
                    .filter(|&t| t > 0)
                    .min()
                    .unwrap_or(1);
                let any_zero = drawn
                    .iter()
                    .any(|cells| cells.iter().any(|c| c.total_ns <= 0));
                Self::log(min_positive, max_ns, any_zero)
            }
            _ => Self::linear(max_ns),
        }
    }

    fn linear(max_ns: i64) -> Self {
        let max_ns = max_ns.max(1) as f64;
        let unit = TimeUnit::of(max_ns);
        let scale = unit.ns();
        let max = max_ns / scale;
        let step = round_step(max / 5.0);
        // Headroom: the highest dot clears the top of the plot.
        let top = (max * 1.04 / step).ceil() * step;
        let decimals = decimals(step);
        let steps = (top / step).round() as usize;
        let ticks = (0..=steps)
            .map(|k| {
                let v = k as f64 * step;
                (v * scale, format!("{v:.decimals$}"))
            })
            .collect();
        YAxis {
            title: format!("total time ({})", unit.name()),
            scale: YScale::Linear {
                top_ns: top * scale,
            },
            ticks,
        }
    }

    fn log(min_ns: i64, max_ns: i64, zero: bool) -> Self {
        let low = (min_ns.max(1) as f64).log10().floor();
        let mut high = (max_ns.max(1) as f64 * 1.04).log10().ceil();
        if high <= low {
            high = low + 1.0;
        }
        let decades = (high - low) as usize;
        // At most about eight labels.
        let every = decades.div_ceil(8).max(1);
        let mut ticks: Vec<(f64, String)> = (0..=decades)
            .filter(|k| k % every == 0)
            .map(|k| {
                let ns = 10f64.powi((low as i32) + k as i32);
                (ns, chart::time_tick(ns, ns, ns))
            })
            .collect();
        if zero {
            ticks.insert(0, (0.0, "0".to_owned()));
        }
        YAxis {
            title: "total time (log scale)".to_owned(),
            scale: YScale::Log { low, high },
            ticks,
        }
    }

    fn pixel(&self, ns: f64) -> f64 {
        match self.scale {
            YScale::Linear { top_ns } => TOP + PLOT_HEIGHT - ns / top_ns * PLOT_HEIGHT,
            YScale::Log { .. } if ns <= 0.0 => TOP + PLOT_HEIGHT,
            YScale::Log { low, high } => {
                let band = PLOT_HEIGHT - ZERO_BAND;
                TOP + band - (ns.log10() - low) / (high - low) * band
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum XKind {
    Linear,
    Log,
    /// Evenly spaced, in the runs' order.
    Categories,
}

struct XAxis {
    kind: XKind,
    /// Each run's value, on the axis's scale (its index for categories).
    at: Vec<f64>,
    min: f64,
    max: f64,
}

impl XAxis {
    fn new(series: &Series) -> Self {
        let numbers: Option<Vec<f64>> = series
            .runs
            .iter()
            .map(|r| r.value.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
            .collect();
        let (kind, at) = match numbers {
            Some(v) if v.len() >= 2 => {
                let (lo, hi) = min_max(&v);
                if lo > 0.0 && hi / lo >= 16.0 {
                    (XKind::Log, v.iter().map(|v| v.log2()).collect())
                } else if hi > lo {
                    (XKind::Linear, v)
                } else {
                    (XKind::Categories, (0..v.len()).map(|i| i as f64).collect())
                }
            }
            _ => (
                XKind::Categories,
                (0..series.runs.len()).map(|i| i as f64).collect(),
            ),
        };
        let (lo, hi) = min_max(&at);
        // A margin so that the first and last dots clear the axes.
        let pad = match kind {
            XKind::Categories => 0.5,
            _ => (hi - lo) * 0.05,
        };
        XAxis {
            kind,
            at,
            min: lo - pad,
            max: hi + pad,
        }
    }

    fn pixel(&self, run: usize) -> f64 {
        LEFT + (self.at[run] - self.min) / (self.max - self.min) * PLOT_WIDTH
    }

    /// The runs from left to right.
    fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.at.len()).collect();
        order.sort_by(|&a, &b| self.at[a].total_cmp(&self.at[b]));
        order
    }
}

fn min_max(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_y_axis_covers_the_largest_total_in_its_unit() {
        let y = YAxis::linear(143_200_000);
        assert_eq!(y.title, "total time (ms)");
        assert!(y.pixel(143_200_000.0) > TOP);
        let labels: Vec<&str> = y.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "50", "100", "150"]);
        assert_eq!(YAxis::linear(0).title, "total time (ns)");
    }

    #[test]
    fn a_log_axis_runs_by_decades_with_zero_below() {
        let y = YAxis::log(7_000, 4_900_000_000, true);
        let labels: Vec<&str> = y.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(
            labels,
            ["0", "1 µs", "10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s", "10 s"]
        );
        assert_eq!(y.pixel(0.0), TOP + PLOT_HEIGHT);
        assert_eq!(y.pixel(1e10), TOP);
        assert!(y.pixel(1e3) < TOP + PLOT_HEIGHT - ZERO_BAND + 0.01);
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
