//! Lines of times against a parameter (a series' plot): one line per
//! measure, a dot per value of the parameter, as a self-contained SVG.
//!
//! The x axis is numeric where every value is a number (logarithmic where
//! they span a factor of 16 or more, as doubling batch sizes do), with a tick
//! at each value; otherwise the values are evenly spaced, in the order given.
//! The y axis starts at zero, in the time unit that suits the largest time.
//! The frame, palette and round ticks are [`crate::render::chart`]'s.

use crate::render::chart::{self, decimals, round_step, PALETTE};
use crate::render::escape::html as escape;
use crate::render::format::TimeUnit;
use std::fmt::Write;

/// A chart of lines: times (ns) against the values of a parameter.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LineChart {
    /// What it shows, on top (and for screen readers).
    pub(crate) title: String,
    /// A line under the title, muted.
    pub(crate) subtitle: String,
    /// A warning at the foot, in red, where the numbers are not whole.
    pub(crate) warning: Option<String>,
    /// The parameter: the x axis's name.
    pub(crate) x_name: String,
    /// Its values, in the order given: a dot of each line at each.
    pub(crate) x_values: Vec<String>,
    /// What the y axis measures (its unit or scale is added).
    pub(crate) y_name: String,
    /// The legend's heading.
    pub(crate) legend_title: String,
    pub(crate) lines: Vec<Line>,
}

/// A line of a [`LineChart`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Line {
    /// Its name: the legend shortens it, its tooltip holds it whole.
    pub(crate) name: String,
    /// What it measures, after its name in the legend.
    pub(crate) note: String,
    /// Whether it is drawn: a line with nothing to show would only hide the
    /// axis, and has only its legend entry (greyed).
    pub(crate) drawn: bool,
    /// A point per value of the parameter, in their order.
    pub(crate) points: Vec<Point>,
}

/// A point of a [`Line`]: its time, and its dot's tooltip.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Point {
    pub(crate) ns: i64,
    pub(crate) tooltip: String,
}

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

impl LineChart {
    pub(crate) fn svg(&self) -> String {
        plot(self)
    }
}

fn plot(series: &LineChart) -> String {
    let x = XAxis::new(series);
    let y = YAxis::new(series);

    let legend_chars = (series.lines.iter())
        .map(|line| shorten(&line.name).chars().count() + line.note.len() + 3)
        .max()
        .unwrap_or(10);
    let legend_width = 36.0 + legend_chars as f64 * chart::char_width(FONT_SIZE);
    let width = (LEFT + PLOT_WIDTH + LEGEND_GAP + legend_width + 16.0).round();
    let legend_height = 30.0 + series.lines.len() as f64 * LEGEND_LINE;
    let height = (TOP + PLOT_HEIGHT.max(legend_height) + BOTTOM).round();

    let title = &series.title;
    let mut s = chart::open(None, width, height, FONT_SIZE, title);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="24" font-size="15" font-weight="bold">{}</text>"#,
        escape(title)
    );
    let _ = writeln!(
        s,
        r##"<text x="{LEFT}" y="42" fill="#555">{}</text>"##,
        escape(&series.subtitle)
    );

    if let Some(warning) = &series.warning {
        let _ = writeln!(
            s,
            r##"<text x="{LEFT}" y="{:.1}" fill="#c0392b">{}</text>"##,
            height - 8.0,
            escape(warning)
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
        escape(&y.title)
    );

    // x axis.
    let _ = writeln!(s, r##"<g text-anchor="middle" fill="#333">"##);
    let mut last_label_end = f64::NEG_INFINITY;
    for (i, value) in series.x_values.iter().enumerate() {
        let px = x.pixel(i);
        let _ = writeln!(
            s,
            r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#333"/>"##,
            TOP + PLOT_HEIGHT,
            TOP + PLOT_HEIGHT + 5.0
        );
        // Labels that would overlap the previous one are left out.
        let half = value.chars().count() as f64 * chart::char_width(FONT_SIZE) / 2.0;
        if px - half >= last_label_end + 6.0 {
            let _ = writeln!(
                s,
                r#"<text x="{px:.1}" y="{:.1}">{}</text>"#,
                TOP + PLOT_HEIGHT + 19.0,
                escape(value)
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
        escape(&series.x_name)
    );
    let _ = writeln!(
        s,
        r##"<path d="M{LEFT} {TOP}V{:.1}H{:.1}" fill="none" stroke="#333"/>"##,
        TOP + PLOT_HEIGHT,
        LEFT + PLOT_WIDTH
    );

    // One line per measure, with a dot per value carrying its numbers.
    let order = x.order();
    for (p, line) in series.lines.iter().enumerate() {
        if !line.drawn {
            continue;
        }
        let (color, dash) = style(p);
        let points: Vec<String> = order
            .iter()
            .map(|&i| {
                format!(
                    "{:.1},{:.1}",
                    x.pixel(i),
                    y.pixel(line.points[i].ns.max(0) as f64)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            r#"<g><title>{}</title><polyline points="{}" fill="none" stroke="{color}" stroke-width="2"{dash} stroke-linejoin="round"/>"#,
            escape(&line.name),
            points.join(" ")
        );
        for &i in &order {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"><title>{}</title></circle>"#,
                x.pixel(i),
                y.pixel(line.points[i].ns.max(0) as f64),
                escape(&line.points[i].tooltip)
            );
        }
        let _ = writeln!(s, "</g>");
    }

    // Legend, in the order of the lines' ends, highest first.
    let legend_x = LEFT + PLOT_WIDTH + LEGEND_GAP;
    let _ = writeln!(
        s,
        r#"<text x="{legend_x}" y="{:.1}" font-weight="bold">{}</text>"#,
        TOP + 4.0,
        escape(&series.legend_title)
    );
    let last = order.last().copied().unwrap_or(0);
    let mut by_end: Vec<usize> = (0..series.lines.len()).collect();
    by_end.sort_by_key(|&p| std::cmp::Reverse(series.lines[p].points[last].ns));
    for (row, &p) in by_end.iter().enumerate() {
        let line = &series.lines[p];
        let (color, dash) = style(p);
        let ly = TOP + 24.0 + row as f64 * LEGEND_LINE;
        let (text, note) = (shorten(&line.name), escape(&line.note));
        if !line.drawn {
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
            escape(&line.name),
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

fn style(pattern: usize) -> (&'static str, String) {
    let color = PALETTE[pattern % PALETTE.len()];
    let dash = DASHES[(pattern / PALETTE.len()) % DASHES.len()];
    let dash = match dash {
        "" => String::new(),
        d => format!(r#" stroke-dasharray="{d}""#),
    };
    (color, dash)
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
/// largest time; logarithmic, by decades, where some line would otherwise
/// lie flat along the bottom (its largest time under 1/50 of the largest).
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
    fn new(series: &LineChart) -> Self {
        let drawn: Vec<&Line> = series.lines.iter().filter(|l| l.drawn).collect();
        let line_max = |line: &&Line| line.points.iter().map(|p| p.ns).max().unwrap_or(0);
        let max_ns = drawn.iter().map(line_max).max().unwrap_or(0).max(1);
        let smallest_line = drawn.iter().map(line_max).filter(|&m| m > 0).min();
        let name = &series.y_name;
        match smallest_line {
            Some(small) if small.saturating_mul(FLAT_RATIO) < max_ns => {
                let min_positive = drawn
                    .iter()
                    .flat_map(|line| line.points.iter().map(|p| p.ns))
                    .filter(|&t| t > 0)
                    .min()
                    .unwrap_or(1);
                let any_zero = drawn
                    .iter()
                    .any(|line| line.points.iter().any(|p| p.ns <= 0));
                Self::log(name, min_positive, max_ns, any_zero)
            }
            _ => Self::linear(name, max_ns),
        }
    }

    fn linear(name: &str, max_ns: i64) -> Self {
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
            title: format!("{name} ({})", unit.name()),
            scale: YScale::Linear {
                top_ns: top * scale,
            },
            ticks,
        }
    }

    fn log(name: &str, min_ns: i64, max_ns: i64, zero: bool) -> Self {
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
            title: format!("{name} (log scale)"),
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
    fn new(series: &LineChart) -> Self {
        let numbers: Option<Vec<f64>> = series
            .x_values
            .iter()
            .map(|v| v.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
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
                (0..series.x_values.len()).map(|i| i as f64).collect(),
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
        let y = YAxis::linear("total time", 143_200_000);
        assert_eq!(y.title, "total time (ms)");
        assert!(y.pixel(143_200_000.0) > TOP);
        let labels: Vec<&str> = y.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "50", "100", "150"]);
        assert_eq!(YAxis::linear("total time", 0).title, "total time (ns)");
    }

    #[test]
    fn a_log_axis_runs_by_decades_with_zero_below() {
        let y = YAxis::log("t", 7_000, 4_900_000_000, true);
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
    fn the_chart_escapes_the_text_it_is_given() {
        let hostile = "a<b & \"c\"";
        let point = |ns| Point {
            ns,
            tooltip: hostile.to_owned(),
        };
        let line = Line {
            name: hostile.to_owned(),
            note: hostile.to_owned(),
            drawn: true,
            points: vec![point(5), point(50)],
        };
        let chart = LineChart {
            title: hostile.to_owned(),
            subtitle: hostile.to_owned(),
            warning: Some(hostile.to_owned()),
            x_name: hostile.to_owned(),
            x_values: vec![hostile.to_owned(), "2".to_owned()],
            y_name: hostile.to_owned(),
            legend_title: hostile.to_owned(),
            lines: vec![line],
        };
        let svg = chart.svg();
        assert!(!svg.contains(hostile), "{svg}");
        // Every text and tooltip escaped, none twice.
        let escaped = svg.matches("a&lt;b &amp; &quot;c&quot;").count();
        assert_eq!(escaped, 15, "{svg}");
        assert!(!svg.contains("&amp;lt;"), "{svg}");
    }
}
