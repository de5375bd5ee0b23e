//! Several reports in one trace: the ranks of one job, or two runs side by
//! side.
//!
//! The reports are converted one after the other into the same trace, each in
//! a scope of its own (see [`Trace::begin_scope`]): its timestamps shifted by
//! its place on a common time line, its pids, tids and CPUs moved to numbers
//! no other report uses, its tracks and flows made from a namespace of its
//! own, and its processes and GPUs named after its label. Durations are kept
//! exactly: a report's events are only shifted. Between two reports the
//! trace moves what the previous one wrote out of memory, so memory does not
//! grow with the number of reports.
//!
//! Placing the reports needs a few facts of each (its session start, its
//! first event, its CPUs), read in a first pass over their small tables;
//! `.nsys-rep` reports are exported once, and their exports kept on disk
//! until converted.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::input::Input;
use super::output::{temporary_beside, OutputFile};
use crate::convert;
use crate::error::Failure;
use crate::error::{DatabaseError, Error, Result};
use crate::nsys::Report;
use crate::perfetto::json::transcode;
use crate::perfetto::{Scope, Trace};
use crate::ranks::{check_labels, named, Labels, Named, RankFrom};
use crate::{Cancellable, Format, Options, Progress, Summary};

/// What the reports are aligned on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Alignment {
    /// Their wall-clock session starts (`TARGET_INFO_SESSION_START_TIME`):
    /// what happened at the same moment lines up. A report whose export
    /// lacks its start is aligned on its first event instead, with the
    /// earliest first event of those that have one.
    #[default]
    SessionStart,
    /// Their first GPU work (kernel, copy, set, graph), or first event for a
    /// report with none: runs of one program, compared.
    FirstGpuWork,
}

/// How to merge, beside the [`Options`] of the conversion.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct MergeOptions {
    /// What the reports are aligned on.
    pub alignment: Alignment,
    /// How their processes and GPUs are labelled.
    pub labels: Labels,
}

/// What a report was aligned on, in the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlignedOn {
    /// Its wall-clock session start.
    SessionStart,
    /// Its export lacks the session start, or the alignment asked for it.
    FirstEvent,
    /// Its first GPU work.
    FirstGpuWork,
}

/// One report of a merged trace.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MergedReport {
    /// The report.
    pub path: PathBuf,
    /// What its processes and GPUs are named after.
    pub label: String,
    /// With [`Labels::Ranks`], its rank and where that came from.
    pub rank: Option<(i64, RankFrom)>,
    /// The host it ran on, where the export records it.
    pub host: Option<String>,
    /// What it was aligned on.
    pub aligned_on: AlignedOn,
    /// Added to the report's timestamps (ns).
    pub offset_ns: u64,
    /// Added to its pids and tids (0 stays 0: the idle task).
    pub pid_offset: u32,
    /// Added to its CPU numbers.
    pub cpu_offset: u32,
    /// Its CPUs did not fit below [`MAX_CPUS`](crate::perfetto::MAX_CPUS)
    /// after the reports before it: its context switches were left out, its
    /// CPU samples have no CPU.
    pub sched_left_out: bool,
    /// What its part of the trace holds.
    pub summary: Summary,
}

/// How far a merge is.
#[derive(Clone, Copy, Debug)]
pub struct MergeProgress {
    /// The report being read (from 0).
    pub report: usize,
    /// How many reports there are.
    pub reports: usize,
    /// How far its conversion is; `None` while the reports are being
    /// opened (and exported) to be placed.
    pub conversion: Option<Progress>,
}

/// Each report's pids and tids move up by this much times its place: Linux
/// pids stay below 2^22 (`PID_MAX_LIMIT`), and perfetto's pids are `i32`.
const PID_STRIDE: u32 = 1 << 22;
/// The most reports one trace can hold with pids kept apart.
const MAX_REPORTS: usize = (i32::MAX as u32 / PID_STRIDE) as usize;

/// Converts the reports or exports at `inputs` into one trace at `output`
/// (written to a temporary file and renamed when complete; none of the
/// inputs, and a report or export only where `output` allows it), as
/// `options` say, placed and labelled as `merge` says. Chrome's JSON
/// ([`Format::Json`]) is transcoded from the merged trace, written raw
/// beside `output` first.
pub fn merge_files(
    inputs: &[PathBuf],
    output: impl Into<OutputFile>,
    options: &Options,
    merge: &MergeOptions,
    progress: &mut dyn FnMut(MergeProgress),
) -> Result<Vec<MergedReport>> {
    if inputs.is_empty() {
        return Err(Error::InvalidOption("no report to merge".into()));
    }
    if inputs.len() > MAX_REPORTS {
        return Err(Error::InvalidOption(format!(
            "{} reports: one trace holds at most {MAX_REPORTS} with their pids kept apart; \
             merge them in groups, or concatenate traces converted one by one",
            inputs.len()
        )));
    }
    check_labels(&merge.labels, inputs.len())?;
    if let Some(level) = options.gzip.filter(|l| !(1..=9).contains(l)) {
        return Err(Error::InvalidOption(format!(
            "gzip level {level} is not between 1 and 9"
        )));
    }
    let target = output.into().inputs(inputs);
    target.check()?;
    let output = target.path();
    let reports = inputs.len();
    let mut placed = Vec::with_capacity(reports);
    for (i, input) in inputs.iter().enumerate() {
        progress(MergeProgress {
            report: i,
            reports,
            conversion: None,
        });
        let input = Input::new(input, &options.read)?;
        let report = input.open(&options.read)?;
        let facts = Facts::read(&report, input.path(), i, merge)
            .map_err(|e| input.told(e, &options.read))?;
        placed.push((input, facts));
    }
    let plan = Plan::new(&placed, merge.alignment);
    // JSON is transcoded from the merged trace, written raw beside it first.
    let protobuf = match options.format {
        Format::Json => Some(temporary_beside(output)?),
        Format::Perfetto => None,
    };
    let to_json = protobuf.is_some();
    let write_merged = |out: &mut (dyn Write + Send)| -> Result<Vec<MergedReport>> {
        let out = Cancellable {
            out,
            cancel: options.read.cancel.as_deref(),
        };
        let trace = Trace::new(out, 0, options.gzip.filter(|_| !to_json));
        if let Some(t0) = plan.wall_clock {
            trace.set_wall_clock(t0);
        }
        let mut merged = Vec::with_capacity(reports);
        let mut cpu_offset = 0u32;
        for (i, ((input, facts), offset)) in placed.into_iter().zip(&plan.offsets).enumerate() {
            let report = input.open(&options.read)?;
            let sched_left_out = cpu_offset.saturating_add(facts.cpus) > crate::perfetto::MAX_CPUS;
            let mut parts = options.parts;
            if sched_left_out {
                parts = parts.without(crate::Part::Sched);
            }
            let mut left_out = Vec::new();
            if to_json {
                (parts, left_out) = convert::json_parts(&report, parts);
            }
            let namespace =
                convert::namespace(&report).map_err(|e| converting(e, &input, output, options))?;
            let scope = Scope {
                // Flows and tracks apart from every other report's, the same
                // report given twice included.
                namespace: (namespace & !0xFF_FFFF) | (i as u64 + 1),
                time_offset: offset.0,
                pid_offset: i as u32 * PID_STRIDE,
                cpu_offset,
                drop_cpus: sched_left_out,
                label: Some(facts.label.clone()),
            };
            trace.begin_scope(scope.clone());
            let this_report = Options {
                parts,
                ..options.clone()
            };
            let summary =
                convert::convert_into(&report, &trace, &this_report, scope.namespace, &mut |p| {
                    progress(MergeProgress {
                        report: i,
                        reports,
                        conversion: Some(p),
                    })
                })
                .map_err(|e| converting(e, &input, output, options))
                .map(|mut s| {
                    s.no_event_tables = !report.has_event_tables();
                    s.unconverted.extend(left_out);
                    s
                })?;
            trace
                .settle()
                .map_err(|e| converting(Failure::Write(e), &input, output, options))?;
            drop(report);
            merged.push(MergedReport {
                path: input.path().to_owned(),
                label: facts.label,
                rank: facts.rank,
                host: facts.host,
                aligned_on: offset.1,
                offset_ns: offset.0,
                pid_offset: scope.pid_offset,
                cpu_offset,
                sched_left_out,
                summary,
            });
            if !sched_left_out {
                cpu_offset = cpu_offset.saturating_add(facts.cpus);
            }
        }
        let mut out = trace.finish().map_err(|cause| Error::Output {
            path: output.to_owned(),
            cause,
        })?;
        out.flush().map_err(|cause| Error::Output {
            path: output.to_owned(),
            cause,
        })?;
        Ok(merged)
    };
    let merged = match &protobuf {
        None => target.write(write_merged),
        Some(protobuf) => write_temporary(protobuf, output, write_merged),
    };
    let merged = match protobuf {
        None => merged,
        Some(protobuf) => merged.and_then(|mut merged| {
            let flows_on_nested = write_json(protobuf.path(), &target, options)?;
            // The whole trace's: told with the first report.
            if let Some(first) = merged.first_mut() {
                first.summary.json_flows_on_nested = flows_on_nested;
            }
            Ok(merged)
        }),
    };
    merged.map_err(|e| match e {
        _ if options.cancelled() => Error::Interrupted {
            path: output.to_owned(),
        },
        e => e,
    })
}

/// Runs `write` into the temporary file `temporary`, an intermediate step
/// of the trace at `output` (which errors name).
fn write_temporary<T>(
    temporary: &tempfile::NamedTempFile,
    output: &Path,
    write: impl FnOnce(&mut (dyn Write + Send)) -> Result<T>,
) -> Result<T> {
    let failed = |cause| Error::Output {
        path: output.to_owned(),
        cause,
    };
    let file = temporary.as_file().try_clone().map_err(failed)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let value = write(&mut out)?;
    out.flush().map_err(failed)?;
    Ok(value)
}

/// Writes the raw Perfetto trace at `protobuf` to `output` as Chrome's
/// JSON, gzipped as `options` say; returns how many flows leave or enter a
/// slice that another starts at the same time (see [`Summary`]).
fn write_json(protobuf: &Path, output: &OutputFile, options: &Options) -> Result<u64> {
    let failed = |cause| output.failed(cause);
    let input = std::fs::File::open(protobuf).map_err(failed)?;
    output.write(|out| {
        let out = Cancellable {
            out,
            cancel: options.read.cancel.as_deref(),
        };
        let input = std::io::BufReader::new(input);
        let (_, transcoded) = transcode(input, out, options.gzip).map_err(failed)?;
        Ok(transcoded.flows_on_nested)
    })
}

/// What placing and labelling a report needs to know of it.
struct Facts {
    session_start: Option<i64>,
    first_event: Option<i64>,
    first_gpu_work: Option<i64>,
    cpus: u32,
    label: String,
    rank: Option<(i64, RankFrom)>,
    host: Option<String>,
}

impl Facts {
    fn read(report: &Report, input: &Path, place: usize, merge: &MergeOptions) -> Result<Self> {
        let meta = report.meta();
        let highest_pid = meta
            .processes
            .keys()
            .chain(meta.threads.keys().flat_map(|(p, t)| [p, t]))
            .max()
            .copied()
            .unwrap_or(0);
        if highest_pid >= PID_STRIDE {
            return Err(Error::InvalidOption(format!(
                "{} has pid or tid {highest_pid}, above the {PID_STRIDE} that keeps \
                 the reports of a merged trace apart",
                input.display()
            )));
        }
        let Named { label, rank, host } = named(report, input, place, &merge.labels)?;
        let read = |e| damaged(input, e);
        let first_gpu_work = match merge.alignment {
            Alignment::FirstGpuWork => report.first_gpu_time().map_err(read)?,
            Alignment::SessionStart => None,
        };
        Ok(Facts {
            session_start: meta.session_start_unix_ns,
            first_event: report.first_event_time().map_err(read)?,
            first_gpu_work,
            cpus: report.cpu_count(crate::perfetto::MAX_CPUS).map_err(read)?,
            label,
            rank,
            host,
        })
    }
}

/// Where each report goes on the common time line.
struct Plan {
    /// Each report's shift, and what it was aligned on.
    offsets: Vec<(u64, AlignedOn)>,
    /// The wall-clock time of trace time 0, when the reports were aligned
    /// on their session starts and at least one records it.
    wall_clock: Option<u64>,
}

impl Plan {
    fn new(placed: &[(Input, Facts)], alignment: Alignment) -> Self {
        // Each report's session time 0 on a common time line.
        let mut starts: Vec<(i128, AlignedOn)> = Vec::with_capacity(placed.len());
        let mut wall = false;
        match alignment {
            Alignment::SessionStart => {
                // Where the first events of the reports with a start fall,
                // for those without one.
                let earliest = placed
                    .iter()
                    .filter_map(|(_, f)| {
                        Some(i128::from(f.session_start?) + i128::from(f.first_event.unwrap_or(0)))
                    })
                    .min()
                    .unwrap_or(0);
                for (_, facts) in placed {
                    starts.push(match facts.session_start {
                        Some(start) => {
                            wall = true;
                            (i128::from(start), AlignedOn::SessionStart)
                        }
                        None => (
                            earliest - i128::from(facts.first_event.unwrap_or(0)),
                            AlignedOn::FirstEvent,
                        ),
                    });
                }
            }
            Alignment::FirstGpuWork => {
                for (_, facts) in placed {
                    starts.push(match (facts.first_gpu_work, facts.first_event) {
                        (Some(t), _) => (-i128::from(t), AlignedOn::FirstGpuWork),
                        (None, t) => (-i128::from(t.unwrap_or(0)), AlignedOn::FirstEvent),
                    });
                }
            }
        }
        let zero = starts.iter().map(|s| s.0).min().unwrap_or(0);
        let offsets = starts
            .iter()
            .map(|&(start, on)| (u64::try_from(start - zero).unwrap_or(u64::MAX), on))
            .collect();
        Plan {
            offsets,
            wall_clock: wall.then(|| u64::try_from(zero).ok()).flatten(),
        }
    }
}

fn damaged(path: &Path, e: rusqlite::Error) -> Error {
    Error::Damaged {
        path: path.to_owned(),
        cause: DatabaseError(e),
    }
}

/// The error of converting `input` into the trace at `output`.
fn converting(e: Failure, input: &Input, output: &Path, options: &Options) -> Error {
    let e = match e {
        Failure::Read(e) => damaged(input.path(), e),
        Failure::Write(cause) => Error::Output {
            path: output.to_owned(),
            cause,
        },
    };
    input.told(e, &options.read)
}
