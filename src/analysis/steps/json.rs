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
//!   "notes": [s] }
//! ```

use std::fmt::Display;
use std::io::{self, Write};

use crate::ranks::RankFrom;
use crate::render::escape::json_string;

use super::{JobSteps, StepMatch};

impl JobSteps {
    /// Writes the steps as one JSON object (its shape: see the module), and
    /// a newline.
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        let matched_by = match self.matched_by {
            StepMatch::Name => "name",
            StepMatch::Order => "order",
        };
        write!(
            out,
            "{{\"pattern\":{},\"matched_by\":\"{matched_by}\",\"ranks\":[",
            json_string(&self.pattern)
        )?;
        for (r, rank) in self.ranks.iter().enumerate() {
            let (number, from) = match rank.rank {
                Some((n, from)) => (n.to_string(), json_string(rank_from(from))),
                None => ("null".into(), "null".into()),
            };
            write!(
                out,
                "{}{{\"label\":{},\"input\":{},\"rank\":{number},\"rank_from\":{from},\
                 \"pid\":{},\"steps\":{},\"open_steps\":{},\"gpus\":[{}],\"gpu_busy_ns\":{},\
                 \"nvtx_ranges\":{},\"other_names\":[{}],\"unattributed_gpu_ops\":{},\
                 \"slowest_in\":{}}}",
                comma(r),
                json_string(&rank.label),
                json_string(&rank.input.to_string_lossy()),
                or_null(rank.pid),
                rank.steps,
                rank.open_steps,
                list(rank.gpus.iter()),
                rank.gpu_busy_ns,
                rank.nvtx_ranges,
                list(rank.other_names.iter().map(|n| json_string(n))),
                rank.unattributed_gpu_ops,
                self.skew.slowest_count.get(r).copied().unwrap_or(0)
            )?;
        }
        write!(out, "],\"steps\":[")?;
        for (i, step) in self.steps.iter().enumerate() {
            write!(
                out,
                "{}{{\"name\":{},\"times\":[",
                comma(i),
                json_string(&step.name)
            )?;
            for (r, time) in step.times.iter().enumerate() {
                match time {
                    Some(t) => write!(
                        out,
                        "{}{{\"name\":{},\"start_ns\":{},\"duration_ns\":{},\"gpu_busy_ns\":{}}}",
                        comma(r),
                        json_string(&t.name),
                        t.start_ns,
                        t.duration_ns,
                        t.gpu_busy_ns
                    )?,
                    None => write!(out, "{}null", comma(r))?,
                }
            }
            write!(
                out,
                "],\"missing\":[{}],\"slowest\":",
                list(step.missing().iter())
            )?;
            match &step.slowest {
                Some(s) => write!(
                    out,
                    "{{\"rank\":{},\"fastest_rank\":{},\"median_ns\":{},\
                     \"lead_over_median_ns\":{},\"skew_ns\":{}}}}}",
                    s.rank, s.fastest_rank, s.median_ns, s.lead_over_median_ns, s.skew_ns
                )?,
                None => write!(out, "null}}")?,
            }
        }
        let skew = &self.skew;
        write!(
            out,
            "],\"skew\":{{\"steps_compared\":{},\"mean_skew_ns\":{},\"max_skew_step\":{},\
             \"max_skew_ns\":{},\"slowest_count\":[{}],\"slowest_most_often\":{}}},\"notes\":[{}]}}",
            skew.steps_compared,
            or_null(skew.mean_skew_ns),
            or_null(skew.max_skew.map(|m| m.0)),
            or_null(skew.max_skew.map(|m| m.1)),
            list(skew.slowest_count.iter()),
            or_null(skew.slowest_most_often),
            list(self.notes().iter().map(|n| json_string(n)))
        )?;
        writeln!(out)
    }
}

fn rank_from(from: RankFrom) -> &'static str {
    match from {
        RankFrom::MpiRanks => "mpi_ranks",
        RankFrom::FileName => "file_name",
        RankFrom::Order => "order",
    }
}

fn comma(i: usize) -> &'static str {
    match i {
        0 => "",
        _ => ",",
    }
}

fn or_null(value: Option<impl Display>) -> String {
    value.map_or("null".into(), |v| v.to_string())
}

fn list<T: Display>(items: impl Iterator<Item = T>) -> String {
    items.map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}
