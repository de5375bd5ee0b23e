//! Steps across the ranks of a job: per step (an NVTX range chosen by a
//! [`StepPattern`], as `ProfilerStep*`), each rank's duration and GPU busy
//! time, the slowest rank and by how much, and the skew over the run.
//!
//! Each report is read on its own, streamed (see `measure`): its steps, the
//! NVTX ranges the pattern matches, by process; then its GPU work (kernels,
//! memcpys, memsets, graphs traced whole) in start order, whose union per
//! process is clipped to that process's steps. A rank is a report's process
//! that recorded steps, named as `merge` names the report (plus its pid
//! where a report holds several such processes); a report with no step is
//! one rank with none, and says which ranges it has. Steps of different
//! ranks are matched by name or by order (see `matching`), and a step some
//! rank lacks is said, not dropped. Durations are wall time, each rank on
//! its own clock: the ranks need no common time line.
//!
//! [`JobSteps`] is written as JSON ([`JobSteps::write_json`]), and as a
//! section of a page (`page`) that the renderer writes as Markdown
//! ([`JobSteps::write_markdown`]) or an HTML fragment with an SVG chart
//! ([`JobSteps::write_html`]).

mod busy;
mod chart;
mod json;
mod matching;
mod measure;
mod measured;
mod page;
mod pattern;

use std::path::{Path, PathBuf};

pub use measured::{ProcessSteps, ReportSteps, KIND as MEASURED_KIND, VERSION as MEASURED_VERSION};
pub use pattern::StepPattern;

use crate::error::{Error, Result};
use crate::ranks::{check_labels, named_from, Labels, Named, RankFrom};

/// What to measure: which ranges are steps, and how ranks are named.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StepOptions {
    /// The NVTX ranges that are steps.
    pub pattern: StepPattern,
    /// How the reports are named, as `merge` names them.
    pub labels: Labels,
}

impl StepOptions {
    /// Steps matched by `pattern`, ranks named by their rank.
    pub fn new(pattern: StepPattern) -> Self {
        Self {
            pattern,
            labels: Labels::default(),
        }
    }
}

/// How the steps of different ranks were matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepMatch {
    /// By the step's name: each rank's names are distinct and mostly
    /// shared (`ProfilerStep#12` is step `ProfilerStep#12` on every rank).
    Name,
    /// By order: the first step of each rank is step 1, and so on.
    Order,
}

/// One rank's time in one step.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct StepTime {
    /// The range's name on this rank.
    pub name: String,
    /// Its start, on the rank's own clock (ns).
    pub start_ns: i64,
    /// Its duration, wall time (ns).
    pub duration_ns: u64,
    /// The time within it at least one of the rank's GPUs was busy with the
    /// rank's work (ns).
    pub gpu_busy_ns: u64,
}

impl StepTime {
    /// Its end, on the rank's own clock (ns).
    pub fn end_ns(&self) -> i64 {
        self.start_ns.saturating_add_unsigned(self.duration_ns)
    }
}

/// The GPUs some work (a report's, or a process's) ran on, and how long
/// at least one of them was busy with it over the whole capture.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct GpuWork {
    /// The GPUs, by device number, in order.
    pub gpus: Vec<i64>,
    /// The union of the work (ns).
    #[serde(rename = "gpu_busy_ns")]
    pub busy_ns: u64,
}

/// The NVTX ranges of a report, steps or not: what exists where the
/// pattern matched nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct NvtxRanges {
    /// How many.
    #[serde(rename = "nvtx_ranges")]
    pub count: u64,
    /// The first few distinct names of those that are not steps.
    pub other_names: Vec<String>,
}

/// The slowest rank of a step, among the ranks that ran it (two at least).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Slowest {
    /// The slowest rank, by index into [`JobSteps::ranks`] (the first given
    /// of those equally slow).
    pub rank: usize,
    /// The fastest.
    pub fastest_rank: usize,
    /// The median duration of the ranks (the mean of the middle two for an
    /// even number), ns.
    pub median_ns: f64,
    /// How much longer the slowest took than the median, ns.
    pub lead_over_median_ns: f64,
    /// How much longer the slowest took than the fastest: the step's skew, ns.
    pub skew_ns: u64,
}

/// One step of the job.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Step {
    /// Its name: the name all ranks share when matched by name, else the
    /// first rank's that has it.
    pub name: String,
    /// Each rank's time, by index into [`JobSteps::ranks`]; `None` where the
    /// rank lacks the step.
    pub times: Vec<Option<StepTime>>,
    /// Its slowest rank, where two ranks or more ran it.
    pub slowest: Option<Slowest>,
}

impl Step {
    fn new(name: String, ranks: usize) -> Self {
        Self {
            name,
            times: vec![None; ranks],
            slowest: None,
        }
    }

    /// The ranks that lack it, by index.
    pub fn missing(&self) -> Vec<usize> {
        (0..self.times.len())
            .filter(|&r| self.times[r].is_none())
            .collect()
    }
}

/// One rank of the job.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RankSteps {
    /// What it is called: its report's label as `merge` makes it, with its
    /// pid where its report holds several ranks.
    pub label: String,
    /// Its report.
    pub input: PathBuf,
    /// With [`Labels::Ranks`], its report's rank and where that came from.
    pub rank: Option<(i64, RankFrom)>,
    /// The process that recorded its steps; `None` for a report without steps.
    pub pid: Option<u32>,
    /// Its steps.
    pub steps: usize,
    /// Of those, the ones still open when the capture stopped: they end at
    /// the report's last NVTX time, as nsys ends them.
    pub open_steps: usize,
    /// Its GPU work: its process's; the report's without steps.
    pub gpu_work: GpuWork,
    /// The NVTX ranges of its report.
    pub nvtx: NvtxRanges,
    /// GPU work of its report whose process the export does not say, while
    /// several processes have steps: counted in no step.
    pub unattributed_gpu_ops: u64,
}

/// The skew of the whole run.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RunSkew {
    /// The steps two ranks or more ran.
    pub steps_compared: usize,
    /// Their mean skew (slowest less fastest), ns; `None` without one.
    pub mean_skew_ns: Option<f64>,
    /// The step of the largest skew, by index into [`JobSteps::steps`], and
    /// that skew (ns).
    pub max_skew: Option<(usize, u64)>,
    /// How many steps each rank was slowest in (a step every rank took
    /// equally long counts for none).
    pub slowest_count: Vec<usize>,
    /// The rank slowest in the most steps (the first given, of a tie).
    pub slowest_most_often: Option<usize>,
}

/// A job's steps, rank by rank.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct JobSteps {
    /// The step pattern, as written.
    pub pattern: String,
    /// How steps of different ranks were matched.
    pub matched_by: StepMatch,
    /// The ranks, in the order of their reports.
    pub ranks: Vec<RankSteps>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Over the run.
    pub skew: RunSkew,
    /// Why its numbers are incomplete: a line per table of a report that
    /// could not be read (`a.sqlite: ...`). Empty where all were read.
    pub incomplete: Vec<String>,
}

impl JobSteps {
    /// The number of (step, rank) places without a time: steps some rank lacks.
    pub fn missing(&self) -> usize {
        self.steps.iter().map(|s| s.missing().len()).sum()
    }
}

/// The job the steps of its reports make, each measured on its own
/// ([`measure_report_steps`](crate::steps::measure_report_steps)) and given
/// in the order of the reports: the cross-rank part of
/// [`measure_steps`](crate::steps::measure_steps), with the same numbers.
/// Ranks are named by `steps.labels` from each report's path, host and MPI rank, and
/// its place here. Steps measured with another pattern than `steps`'s are
/// refused.
pub fn combine_steps(measured: Vec<ReportSteps>, steps: &StepOptions) -> Result<JobSteps> {
    let mut job = Job::new(steps, measured.len())?;
    for (place, report) in measured.into_iter().enumerate() {
        let from = report.input_path();
        job.add_measured(report, place, &from)?;
    }
    Ok(job.finish())
}

/// The steps of a job, measured one open report at a time, for commands
/// that read each report for more than its steps (`report --step`).
pub(crate) struct Job<'o> {
    steps: &'o StepOptions,
    ranks: Vec<RankSteps>,
    times: Vec<Vec<StepTime>>,
    incomplete: Vec<String>,
}

impl<'o> Job<'o> {
    /// A job of `reports` reports; refuses labels that do not fit them.
    pub(crate) fn new(steps: &'o StepOptions, reports: usize) -> Result<Self> {
        if reports == 0 {
            return Err(Error::InvalidOption("no report to measure steps in".into()));
        }
        check_labels(&steps.labels, reports)?;
        Ok(Job {
            steps,
            ranks: Vec::new(),
            times: Vec::new(),
            incomplete: Vec::new(),
        })
    }

    /// Measures the steps of `report`, read from `input`, the job's
    /// `place`-th report (from 0).
    pub(crate) fn add(
        &mut self,
        report: &crate::nsys::Report,
        input: &Path,
        place: usize,
    ) -> Result<()> {
        let measured = ReportSteps::measure(report, input, &self.steps.pattern)?;
        self.add_measured(measured, place, input)
    }

    /// Adds the steps of the job's `place`-th report (from 0), measured on
    /// their own (read from `from`); refuses those measured with another
    /// pattern.
    pub(crate) fn add_measured(
        &mut self,
        measured: ReportSteps,
        place: usize,
        from: &Path,
    ) -> Result<()> {
        let pattern = self.steps.pattern.text();
        if measured.pattern != pattern {
            return Err(Error::StepsFile {
                path: from.to_owned(),
                reason: format!(
                    "the steps of {} were measured as \"{}\", not \"{pattern}\": \
                     measure them again with --step '{pattern}'",
                    measured.input, measured.pattern
                ),
            });
        }
        let input = measured.input_path();
        let of = |line: &String| format!("{}: {line}", input.display());
        self.incomplete.extend(measured.incomplete.iter().map(of));
        let name = named_from(
            &input,
            measured.host.clone(),
            measured.mpi_rank,
            place,
            &self.steps.labels,
        );
        add_ranks(&input, name, measured, &mut self.ranks, &mut self.times);
        Ok(())
    }

    /// The steps matched across the ranks, and the skew over the run.
    pub(crate) fn finish(self) -> JobSteps {
        let (matched_by, steps_matched) = matching::match_steps(self.times);
        let skew = matching::run_skew(&steps_matched, self.ranks.len());
        JobSteps {
            pattern: self.steps.pattern.text().to_owned(),
            matched_by,
            ranks: self.ranks,
            steps: steps_matched,
            skew,
            incomplete: self.incomplete,
        }
    }
}

/// The ranks of one report: one per process with steps, or one without.
fn add_ranks(
    input: &Path,
    name: Named,
    measured: ReportSteps,
    ranks: &mut Vec<RankSteps>,
    times: &mut Vec<Vec<StepTime>>,
) {
    let rank = |label: String, pid: Option<u32>| RankSteps {
        label,
        input: input.to_owned(),
        rank: name.rank,
        pid,
        steps: 0,
        open_steps: 0,
        gpu_work: measured.gpu_work.clone(),
        nvtx: measured.nvtx.clone(),
        unattributed_gpu_ops: measured.unattributed_gpu_ops,
    };
    if measured.processes.is_empty() {
        ranks.push(rank(name.label.clone(), None));
        times.push(Vec::new());
        return;
    }
    let several = measured.processes.len() > 1;
    for process in measured.processes {
        let label = match several {
            true => format!("{} pid {}", name.label, process.pid),
            false => name.label.clone(),
        };
        ranks.push(RankSteps {
            steps: process.steps.len(),
            open_steps: process.open_steps,
            gpu_work: process.gpu_work,
            ..rank(label, Some(process.pid))
        });
        times.push(process.steps);
    }
}

impl JobSteps {
    /// What a reader must be told beside the numbers, one sentence each:
    /// ranks without steps (and what ranges they have), steps some rank
    /// lacks, steps still open at the end of a capture, GPU work of no
    /// known process.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let pattern = &self.pattern;
        for rank in &self.ranks {
            if rank.pid.is_some() {
                continue;
            }
            let what = match rank.nvtx.count {
                0 => "its report has no NVTX range".to_owned(),
                n => format!(
                    "its report's {n} NVTX range{} include {}",
                    plural(n as usize),
                    rank.nvtx
                        .other_names
                        .iter()
                        .map(|n| format!("\"{n}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            notes.push(format!(
                "{} has no NVTX range matching \"{pattern}\": {what}.",
                rank.label
            ));
        }
        for step in &self.steps {
            let missing = step.missing();
            if !missing.is_empty() && missing.len() < self.ranks.len() {
                let labels: Vec<&str> = missing
                    .iter()
                    .map(|&r| self.ranks[r].label.as_str())
                    .collect();
                notes.push(format!(
                    "Step \"{}\" is missing on {}.",
                    step.name,
                    labels.join(", ")
                ));
            }
        }
        for rank in &self.ranks {
            if rank.open_steps > 0 {
                notes.push(format!(
                    "{}: {} step{} still open when the capture stopped, ended at its last NVTX time.",
                    rank.label,
                    rank.open_steps,
                    plural(rank.open_steps)
                ));
            }
            // Said once per report, which may hold several ranks.
            let first_of_report = self.ranks.iter().find(|r| r.input == rank.input);
            if rank.unattributed_gpu_ops > 0 && first_of_report == Some(rank) {
                notes.push(format!(
                    "{}: {} GPU operation{} of its report name no process and count in no step.",
                    rank.label,
                    rank.unattributed_gpu_ops,
                    plural(rank.unattributed_gpu_ops as usize)
                ));
            }
        }
        notes
    }
}

fn plural(n: usize) -> &'static str {
    match n {
        1 => "",
        _ => "s",
    }
}
