//! The job's steps as one JSON object, for CI and scripts.
//!
//! The shape (times in ns; ranks and steps referred to by index):
//!
//! ```text
//! { "pattern": "ProfilerStep*", "matched_by": "name" | "order",
//!   "ranks": [ { "label", "input", "rank": n | null,
//!                "rank_from": "mpi_ranks" | "file_name" | "order" | null,
//!                "pid": n | null, "steps", "open_steps", "gpus": [n],
//!                "gpu_busy_ns", "nvtx_ranges", "other_names": [s],
//!                "unattributed_gpu_ops", "slowest_in" } ],
//!   "steps": [ { "name",
//!                "times": [ { "name", "start_ns", "duration_ns", "gpu_busy_ns" } | null ],
//!                "missing": [rank],
//!                "slowest": { "rank", "fastest_rank", "median_ns",
//!                             "lead_over_median_ns", "skew_ns" } | null } ],
//!   "skew": { "steps_compared", "mean_skew_ns": x | null,
//!             "max_skew_step": step | null, "max_skew_ns": n | null,
//!             "slowest_count": [n], "slowest_most_often": rank | null },
//!   "notes": [s], "incomplete": [s] (only where some table was unreadable) }
//! ```

use std::borrow::Cow;
use std::io::{self, Write};

use serde::Serialize;

use crate::ranks::RankFrom;
use crate::render::json::{number, optional_number};

use super::{GpuWork, JobSteps, NvtxRanges, StepMatch, StepTime};

impl JobSteps {
    /// Writes the steps as one JSON object (its shape: see the module), and
    /// a newline.
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer(&mut *out, &self.document()).map_err(io::Error::from)?;
        writeln!(out)
    }

    /// The document [`JobSteps::write_json`] writes: also a part of the
    /// page's JSON.
    pub(crate) fn document(&self) -> impl Serialize + '_ {
        Document::of(self)
    }
}

/// The JSON document of a [`JobSteps`], field by field in the order the
/// module shows.
#[derive(Serialize)]
struct Document<'a> {
    pattern: &'a str,
    matched_by: &'static str,
    ranks: Vec<Rank<'a>>,
    steps: Vec<Step<'a>>,
    skew: Skew<'a>,
    notes: Vec<String>,
    /// Only where some report's tables could not be read.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    incomplete: &'a [String],
}

#[derive(Serialize)]
struct Rank<'a> {
    label: &'a str,
    input: Cow<'a, str>,
    rank: Option<i64>,
    rank_from: Option<&'static str>,
    pid: Option<u32>,
    steps: usize,
    open_steps: usize,
    #[serde(flatten)]
    gpu_work: &'a GpuWork,
    #[serde(flatten)]
    nvtx: &'a NvtxRanges,
    unattributed_gpu_ops: u64,
    slowest_in: usize,
}

#[derive(Serialize)]
struct Step<'a> {
    name: &'a str,
    times: &'a [Option<StepTime>],
    missing: Vec<usize>,
    slowest: Option<Slowest>,
}

#[derive(Serialize)]
struct Slowest {
    rank: usize,
    fastest_rank: usize,
    #[serde(serialize_with = "number")]
    median_ns: f64,
    #[serde(serialize_with = "number")]
    lead_over_median_ns: f64,
    skew_ns: u64,
}

#[derive(Serialize)]
struct Skew<'a> {
    steps_compared: usize,
    #[serde(serialize_with = "optional_number")]
    mean_skew_ns: Option<f64>,
    max_skew_step: Option<usize>,
    max_skew_ns: Option<u64>,
    slowest_count: &'a [usize],
    slowest_most_often: Option<usize>,
}

impl<'a> Document<'a> {
    fn of(job: &'a JobSteps) -> Self {
        let matched_by = match job.matched_by {
            StepMatch::Name => "name",
            StepMatch::Order => "order",
        };
        let ranks = job
            .ranks
            .iter()
            .enumerate()
            .map(|(r, rank)| Rank {
                label: &rank.label,
                input: rank.input.to_string_lossy(),
                rank: rank.rank.map(|(n, _)| n),
                rank_from: rank.rank.map(|(_, from)| rank_from(from)),
                pid: rank.pid,
                steps: rank.steps,
                open_steps: rank.open_steps,
                gpu_work: &rank.gpu_work,
                nvtx: &rank.nvtx,
                unattributed_gpu_ops: rank.unattributed_gpu_ops,
                slowest_in: job.skew.slowest_count.get(r).copied().unwrap_or(0),
            })
            .collect();
        let steps = job
            .steps
            .iter()
            .map(|step| Step {
                name: &step.name,
                times: &step.times,
                missing: step.missing(),
                slowest: step.slowest.as_ref().map(|s| Slowest {
                    rank: s.rank,
                    fastest_rank: s.fastest_rank,
                    median_ns: s.median_ns,
                    lead_over_median_ns: s.lead_over_median_ns,
                    skew_ns: s.skew_ns,
                }),
            })
            .collect();
        let skew = &job.skew;
        Document {
            pattern: &job.pattern,
            matched_by,
            ranks,
            steps,
            skew: Skew {
                steps_compared: skew.steps_compared,
                mean_skew_ns: skew.mean_skew_ns,
                max_skew_step: skew.max_skew.map(|m| m.0),
                max_skew_ns: skew.max_skew.map(|m| m.1),
                slowest_count: &skew.slowest_count,
                slowest_most_often: skew.slowest_most_often,
            },
            notes: job.notes(),
            incomplete: &job.incomplete,
        }
    }
}

fn rank_from(from: RankFrom) -> &'static str {
    match from {
        RankFrom::MpiRanks => "mpi_ranks",
        RankFrom::FileName => "file_name",
        RankFrom::Order => "order",
    }
}
