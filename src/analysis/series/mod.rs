//! Series: how the time of chosen events changes across runs that differ in
//! one parameter (a batch size, a rank, a thread count).
//!
//! Each run's report is measured on its own, streamed (see `measure`): per
//! event pattern, the count of matching events and their total, mean and
//! median duration. [`measure_series`](crate::series::measure_series) measures every run; the [`Series`] it
//! returns is written as a CSV table ([`Series::write_csv`]) and as an SVG
//! plot of time against the parameter ([`Series::write_svg`]).

mod measure;
mod pattern;

use std::io::{self, Write};

use crate::render::chart::lines::{Line, LineChart, Point};
use crate::render::chart::Chart;
use crate::render::format::duration_3;
use crate::render::table::Cell;
use std::path::PathBuf;

pub use pattern::{EventKind, EventPattern};

use crate::analysis::stats::Stats;
use crate::error::{Error, Result};
use crate::nsys;
use crate::nsys::names::RangeNames;

/// One run of a series: its value of the parameter, and its report (an
/// SQLite export, or a `.nsys-rep`/`.qdrep` report exported with nsys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeriesRun {
    /// The run's value of the parameter.
    pub value: String,
    /// Its report or export.
    pub input: PathBuf,
}

impl SeriesRun {
    /// The run with `value` of the parameter, whose report is `input`.
    pub fn new(value: impl Into<String>, input: impl Into<PathBuf>) -> Self {
        Self {
            value: value.into(),
            input: input.into(),
        }
    }

    /// The runs whose reports are named by `template` with `$p` replaced by
    /// each value (`run_$p.sqlite` and 8, 16: `run_8.sqlite`, `run_16.sqlite`).
    pub fn from_template(template: &str, values: &[String]) -> Vec<SeriesRun> {
        values
            .iter()
            .map(|v| SeriesRun::new(v.clone(), template.replace("$p", v)))
            .collect()
    }
}

/// The events of one report that match one pattern.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesCell {
    /// How many events match.
    pub count: u64,
    /// The sum of their durations, in nanoseconds.
    pub total_ns: i64,
    /// The median duration (the mean of the middle two for an even count);
    /// `None` without events.
    pub median_ns: Option<f64>,
}

impl SeriesCell {
    /// The cell of a pattern whose events' durations have `stats`.
    fn of(stats: Option<Stats>) -> Self {
        match stats {
            None => SeriesCell::default(),
            Some(s) => SeriesCell {
                count: s.count,
                // Beyond 292 years of events: the most that fits.
                total_ns: i64::try_from(s.total).unwrap_or(if s.total < 0 {
                    i64::MIN
                } else {
                    i64::MAX
                }),
                median_ns: Some(s.median),
            },
        }
    }

    /// The mean duration; `None` without events.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.total_ns as f64 / self.count as f64)
    }
}

/// The measurements of a series: a cell per pattern and run.
#[derive(Clone, Debug)]
pub struct Series {
    /// The name of the parameter (`batch`).
    pub parameter: String,
    /// The runs, in the order given.
    pub runs: Vec<SeriesRun>,
    /// The event patterns, in the order given.
    pub patterns: Vec<EventPattern>,
    /// By pattern, then by run.
    pub cells: Vec<Vec<SeriesCell>>,
    /// Why its numbers are incomplete: a line per table of a run that could
    /// not be read (`batch=8 (a.sqlite): ...`). Empty where all were read.
    pub incomplete: Vec<String>,
    /// By run: the events left out of its cells for times that cannot be
    /// right (ending before they start, or far past the capture's end).
    pub left_out: Vec<u64>,
}

/// Measures the events of `report` that match each of `patterns`: one cell
/// per pattern, in their order. Patterns match NVTX ranges by their names
/// as recorded.
pub fn measure_events(report: &nsys::Report, patterns: &[EventPattern]) -> Result<Vec<SeriesCell>> {
    measure_events_with(report, patterns, RangeNames::Recorded)
}

/// [`measure_events`], `nvtx:` and `nvtx-gpu:` patterns matching each
/// range's name as `names` says (with [`RangeNames::Grouped`],
/// `nvtx:^aten::mm$` matches `aten::mm, op_id = 317126`).
pub fn measure_events_with(
    report: &nsys::Report,
    patterns: &[EventPattern],
    names: RangeNames,
) -> Result<Vec<SeriesCell>> {
    measure_counting(report, patterns, names).map(|(cells, _)| cells)
}

/// [`measure_events_with`], and how many events whose times cannot be right
/// (ending before they start, or far past the capture's end) it left out.
pub(crate) fn measure_counting(
    report: &nsys::Report,
    patterns: &[EventPattern],
    names: RangeNames,
) -> Result<(Vec<SeriesCell>, u64)> {
    measure::measure(report, patterns, names).map_err(|e| e.of(report.path()))
}

/// Refuses a series that cannot be measured or drawn (no name, no run, no
/// pattern, an empty value, a value given twice) with an
/// [`Error::InvalidOption`], reading no report:
/// [`measure_series`](crate::series::measure_series) checks so first, and a
/// caller that makes the reports (profiling a command per value) can check
/// before it does.
pub fn check_series(parameter: &str, runs: &[SeriesRun], patterns: &[EventPattern]) -> Result<()> {
    let invalid = |m: String| Err(Error::InvalidOption(m));
    if parameter.trim().is_empty() {
        return invalid("the parameter of a series needs a name".into());
    }
    if runs.is_empty() {
        return invalid("a series needs at least one run".into());
    }
    if patterns.is_empty() {
        return invalid("a series needs at least one event pattern".into());
    }
    for (i, run) in runs.iter().enumerate() {
        if run.value.is_empty() {
            return invalid(format!("{} has an empty value", run.input.display()));
        }
        if let Some(other) = runs[..i].iter().find(|r| r.value == run.value) {
            return invalid(format!(
                "{parameter}={} is given twice ({} and {})",
                run.value,
                other.input.display(),
                run.input.display()
            ));
        }
    }
    Ok(())
}

impl Series {
    /// The table: a row per pattern; per run, the count of matching events
    /// and their total, mean and median duration in nanoseconds.
    /// Where some run's tables could not be read, `# incomplete:` lines say
    /// so first.
    pub fn write_csv(&self, out: &mut dyn Write) -> io::Result<()> {
        crate::render::table::write_csv_incomplete(out, &self.incomplete)?;
        let mut header = vec!["event".to_owned(), "kind".to_owned()];
        for run in &self.runs {
            for column in ["count", "total_ns", "mean_ns", "median_ns"] {
                header.push(format!("{}={} {column}", self.parameter, run.value));
            }
        }
        let rows: Vec<Vec<Cell>> = (self.patterns.iter().zip(&self.cells))
            .map(|(pattern, cells)| {
                let mut row = vec![
                    Cell::Text(pattern.text().to_owned()),
                    Cell::Text(kind_name(pattern.kind()).to_owned()),
                ];
                for cell in cells {
                    row.push(Cell::Int(cell.count.into()));
                    row.push(Cell::Int(cell.total_ns.into()));
                    row.push(decimal(cell.mean_ns()));
                    row.push(decimal(cell.median_ns));
                }
                row
            })
            .collect();
        crate::render::table::write_csv(out, &header, &rows)
    }

    /// The plot: total time of each pattern against the parameter, as SVG.
    pub fn write_svg(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(self.chart().svg().as_bytes())
    }

    /// The plot as data: a line per pattern of its total time per run.
    fn chart(&self) -> Chart {
        let runs = self.runs.len();
        let lines = (self.patterns.iter().zip(&self.cells))
            .map(|(pattern, cells)| {
                let drawn = cells.iter().any(|c| c.count > 0);
                let note = match pattern.kind().is_gpu_time() {
                    _ if !drawn => "no events in any run",
                    true => "GPU time",
                    false => "CPU time",
                };
                let points = (self.runs.iter().zip(cells))
                    .map(|(run, cell)| Point {
                        ns: cell.total_ns,
                        tooltip: format!(
                            "{}, {}={}: {} in {} events",
                            pattern.text(),
                            self.parameter,
                            run.value,
                            duration_3(cell.total_ns),
                            cell.count
                        ),
                    })
                    .collect();
                Line {
                    name: pattern.text().to_owned(),
                    note: note.to_owned(),
                    drawn,
                    points,
                }
            })
            .collect();
        let warning = self.incomplete.first().map(|first| {
            let more = match self.incomplete.len() {
                1 => String::new(),
                n => format!(" (and {} more: see the CSV)", n - 1),
            };
            format!("INCOMPLETE: {first}{more}")
        });
        Chart::Lines(LineChart {
            title: format!("Total time of matching events by {}", self.parameter),
            subtitle: format!(
                "{runs} run{}; GPU time for kernels and NVTX GPU projections, CPU time for calls and NVTX ranges",
                if runs == 1 { "" } else { "s" }
            ),
            warning,
            x_name: self.parameter.clone(),
            x_values: self.runs.iter().map(|r| r.value.clone()).collect(),
            y_name: "total time".to_owned(),
            legend_title: "event pattern".to_owned(),
            lines,
        })
    }
}

/// How the table names a kind: its pattern prefix.
fn kind_name(kind: EventKind) -> &'static str {
    EventKind::PREFIXES
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or("", |(_, prefix)| prefix.trim_end_matches(':'))
}

/// Nanoseconds to one decimal, as Rust rounds (`{:.1}`): empty where
/// there is no value.
fn decimal(ns: Option<f64>) -> Cell {
    ns.map_or(Cell::Empty, |ns| Cell::Text(format!("{ns:.1}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::ValueSets;

    fn cell(durations: &[i64]) -> SeriesCell {
        let mut sets = ValueSets::default();
        durations.iter().for_each(|&d| sets.add(0, d));
        let mut stats = sets.finish().unwrap();
        stats.resize(1, None);
        SeriesCell::of(stats[0])
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(cell(&[]).median_ns, None);
        assert_eq!(cell(&[]).mean_ns(), None);
        let c = cell(&[5, 1, 9]);
        assert_eq!((c.count, c.total_ns, c.median_ns), (3, 15, Some(5.0)));
        let c = cell(&[10, 1, 4, 7]);
        assert_eq!(c.median_ns, Some(5.5));
        assert_eq!(c.mean_ns(), Some(5.5));
        assert_eq!(cell(&[3, 3]).median_ns, Some(3.0));
        // Many events: their durations spill, the median stays exact.
        let many: Vec<i64> = (0..10_001).map(|i| (i * 7919) % 10_007).collect();
        let mut sorted = many.clone();
        sorted.sort_unstable();
        let c = cell(&many);
        assert_eq!(c.median_ns, Some(sorted[5000] as f64));
        assert_eq!(c.total_ns, many.iter().sum::<i64>());
    }

    #[test]
    fn templates_name_one_report_per_value() {
        let runs = SeriesRun::from_template("out/run_$p/b$p.sqlite", &["8".into(), "16".into()]);
        assert_eq!(
            runs,
            [
                SeriesRun::new("8", "out/run_8/b8.sqlite"),
                SeriesRun::new("16", "out/run_16/b16.sqlite")
            ]
        );
    }

    #[test]
    fn a_value_given_twice_is_refused_before_reading() {
        let p = [EventPattern::parse("gemm").unwrap()];
        let runs = [SeriesRun::new("8", "a"), SeriesRun::new("8", "b")];
        let e = check_series("batch", &runs, &p).unwrap_err().to_string();
        assert_eq!(e, "batch=8 is given twice (a and b)");
    }
}
