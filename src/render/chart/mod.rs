//! Charts as data, drawn here: the analyses describe a chart ([`Chart`]:
//! its series, their values and labels) and this module draws it as SVG,
//! escaping its text. Each kind of chart has a file: lines over a
//! parameter ([`lines`]), a job's steps as grouped bars ([`step_bars`]),
//! GPU time over a run and shares of a whole ([`timeline`]). What every
//! chart shares is declared once, below: the `<svg>` frame (size, font,
//! title for screen readers, white ground), the palette, round ticks and
//! their labels, and legends of coloured swatches.

use std::fmt::Write;

use super::format::TimeUnit;
use crate::render::escape::html as escape;

pub(crate) mod lines;
pub(crate) mod step_bars;
pub(crate) mod timeline;

/// A chart, described by an analysis, for a page or a file.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Chart {
    /// Lines of values against a parameter.
    Lines(lines::LineChart),
    /// Bars in groups, a group per step.
    StepBars(step_bars::StepBars),
    /// Busy and waiting time per GPU over a run.
    Busy(timeline::BusyTimeline),
    /// Shares of a whole, as one stacked bar.
    Shares(timeline::Shares),
}

impl Chart {
    /// The chart as a self-contained SVG document.
    pub(crate) fn svg(&self) -> String {
        match self {
            Chart::Lines(c) => c.svg(),
            Chart::StepBars(c) => c.svg(),
            Chart::Busy(c) => c.svg(),
            Chart::Shares(c) => c.svg(),
        }
    }
}

/// Distinct for the common forms of colour blindness, and on white (Tableau 10).
pub(crate) const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#b6992d", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];
/// The palette's blue, orange and red, named for what charts use them for.
pub(crate) const BLUE: &str = PALETTE[0];
pub(crate) const ORANGE: &str = PALETTE[1];
pub(crate) const RED: &str = PALETTE[2];
/// The ground of a plot, where nothing was.
pub(crate) const GROUND: &str = "#eceff3";
/// Grid lines, and the text that is less important than the marks.
pub(crate) const GRID: &str = "#e3e3e3";
pub(crate) const MUTED: &str = "#555";

const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";

/// The `<svg>` element of a chart `width` by `height` pixels, text of
/// `font_size` px, titled `title` (its tooltip and what a screen reader
/// says), on white; `class` names it for styles and tests. Close with
/// [`close`].
pub(crate) fn open(
    class: Option<&str>,
    width: f64,
    height: f64,
    font_size: u8,
    title: &str,
) -> String {
    let class = class.map_or(String::new(), |c| format!(" class=\"{c}\""));
    let title = escape(title);
    format!(
        "<svg{class} xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"{FONT}\" font-size=\"{font_size}\" \
         role=\"img\" aria-label=\"{title}\">\n<title>{title}</title>\n\
         <rect width=\"{width}\" height=\"{height}\" fill=\"white\"/>\n"
    )
}

/// The end of a chart [`open`] began.
pub(crate) fn close(svg: &mut String) {
    svg.push_str("</svg>\n");
}

/// The width of a character of text of `font_size` px, roughly, for
/// sizing legends and spacing labels.
pub(crate) fn char_width(font_size: u8) -> f64 {
    f64::from(font_size) * 7.0 / 12.0
}

/// A round step between ticks: 1, 2, 2.5 or 5 times a power of ten, the
/// least at or above `raw`.
pub(crate) fn round_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let nice = match raw / power {
        f if f <= 1.0 => 1.0,
        f if f <= 2.0 => 2.0,
        f if f <= 2.5 => 2.5,
        f if f <= 5.0 => 5.0,
        _ => 10.0,
    };
    nice * power
}

/// Round ticks from 0 up to at least `largest`, about `wanted` of them:
/// the step, and how many steps reach `largest` (one at least).
pub(crate) fn ticks(largest: f64, wanted: usize) -> (f64, usize) {
    if largest <= 0.0 {
        return (1.0, 1);
    }
    let step = round_step(largest / wanted.max(1) as f64);
    (step, (largest / step).ceil().max(1.0) as usize)
}

/// The decimals that tell ticks `step` apart (0 for 50, 2 for 0.25).
pub(crate) fn decimals(step: f64) -> usize {
    let mut d = 0;
    while d < 6 && {
        let scaled = step * 10f64.powi(d as i32);
        (scaled.round() - scaled).abs() > 1e-9
    } {
        d += 1;
    }
    d
}

/// A tick at `ns` of an axis of time stepping by `step_ns` up to
/// `top_ns`, in the unit of the top, with the decimals the step needs
/// there: `0.5 ms`, `400 ms`, `15 s`.
pub(crate) fn time_tick(ns: f64, step_ns: f64, top_ns: f64) -> String {
    let unit = TimeUnit::of(top_ns);
    let d = decimals(step_ns / unit.ns());
    format!("{:.d$} {}", ns / unit.ns(), unit.name())
}

/// A tick at `ns` on an export's clock stepping by `step_ns`, in seconds,
/// with the decimals the step needs: `5.7865 s`, `11 s`.
pub(crate) fn clock_tick(ns: f64, step_ns: f64) -> String {
    let d = decimals(step_ns / 1e9);
    format!("{:.d$} s", ns / 1e9)
}

/// How a legend entry shows its colour.
#[derive(Clone, Copy)]
pub(crate) enum Swatch {
    /// A square of the colour.
    Solid,
    /// A square of the colour, outlined (for colours near white).
    Outlined,
    /// A faint square with a solid foot: a bar and the part of it that was busy.
    Foot,
}

/// A row of legend entries from `(x, y)` (the baseline of the text),
/// spaced by the length of their labels.
pub(crate) fn legend(
    svg: &mut String,
    x: f64,
    y: f64,
    font_size: u8,
    items: &[(&str, &str, Swatch)],
) {
    let mut at = x;
    let top = y - 10.0;
    for &(label, color, swatch) in items {
        let _ = match swatch {
            Swatch::Solid => write!(
                svg,
                "<rect x=\"{at}\" y=\"{top}\" width=\"12\" height=\"12\" fill=\"{color}\"/>"
            ),
            Swatch::Outlined => write!(
                svg,
                "<rect x=\"{at}\" y=\"{top}\" width=\"12\" height=\"12\" fill=\"{color}\" stroke=\"#999\" stroke-width=\"0.5\"/>"
            ),
            Swatch::Foot => write!(
                svg,
                "<rect x=\"{at}\" y=\"{top}\" width=\"12\" height=\"12\" fill=\"{color}\" fill-opacity=\"0.4\"/>\
                 <rect x=\"{at}\" y=\"{}\" width=\"12\" height=\"6\" fill=\"{color}\"/>",
                top + 6.0
            ),
        };
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{y}\">{}</text>",
            at + 18.0,
            escape(label)
        );
        at += 18.0 + label.chars().count() as f64 * char_width(font_size) + 20.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round() {
        assert_eq!(round_step(0.9), 1.0);
        assert_eq!(round_step(1.3), 2.0);
        assert_eq!(round_step(23.0), 25.0);
        assert_eq!(round_step(0.031), 0.05);
        assert_eq!(decimals(0.25), 2);
        assert_eq!(decimals(50.0), 0);
    }

    #[test]
    fn ticks_are_round_and_reach_the_largest() {
        assert_eq!(ticks(9.3e6, 5), (2e6, 5));
        assert_eq!(ticks(1e6, 5), (2e5, 5));
        assert_eq!(ticks(0.0, 5), (1.0, 1));
        let (step, n) = ticks(123_456.0, 5);
        assert!(step * n as f64 >= 123_456.0 && (2..=6).contains(&n));
    }

    #[test]
    fn tick_labels_are_in_the_unit_of_the_top() {
        assert_eq!(time_tick(4e8, 1e8, 4e8), "400 ms");
        assert_eq!(time_tick(0.0, 2e5, 1e6), "0.0 ms");
        assert_eq!(time_tick(5e5, 5e5, 2.5e6), "0.5 ms");
        assert_eq!(time_tick(1.5e10, 5e9, 1.5e10), "15 s");
        assert_eq!(time_tick(40.0, 20.0, 100.0), "40 ns");
        assert_eq!(time_tick(1e3, 1e3, 1e3), "1 µs");
        assert_eq!(clock_tick(5.7865e9, 5e5), "5.7865 s");
        assert_eq!(clock_tick(11e9, 1e9), "11 s");
    }

    #[test]
    fn the_frame_escapes_its_title() {
        let mut s = open(Some("c"), 10.0, 20.0, 12, "a <b> & c");
        close(&mut s);
        assert!(s.starts_with("<svg class=\"c\" xmlns="), "{s}");
        assert!(s.contains("<title>a &lt;b&gt; &amp; c</title>"), "{s}");
        assert!(s.ends_with("</svg>\n"));
    }
}
