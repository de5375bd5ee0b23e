//! The mapping from an Nsight Systems report to Perfetto tracks, slices and flows.
//!
//! One sequence carries all CUDA activity (API calls and GPU work, merged in
//! time order so that each launch precedes its work and flows can be linked),
//! others NVTX events, OS runtime calls, CPU samples, context switches, and
//! the profiler's own overhead and diagnostics. Which thread does what is in
//! [`pipeline`].

mod cuda;
mod events;
mod findings;
mod flows;
mod gpu;
mod gpu_in_nvtx;
mod graphs;
mod libraries;
mod memory_pools;
mod metrics;
mod nvtx;
mod osrt;
mod overhead;
mod pipeline;
mod projection;
mod samples;
mod sched;
mod stacks;
mod summary;
mod threads;

use std::io::{self, Write};

pub use summary::Summary;

pub(crate) use pipeline::RowTicker;

use crate::nsys::{EventStream, Report, RowFilter};
use crate::perfetto::Trace;
use crate::Options;

/// Why a conversion stopped.
#[derive(Debug)]
pub enum ConvertError {
    Read(rusqlite::Error),
    Write(io::Error),
}

impl From<rusqlite::Error> for ConvertError {
    fn from(e: rusqlite::Error) -> Self {
        ConvertError::Read(e)
    }
}

impl From<io::Error> for ConvertError {
    fn from(e: io::Error) -> Self {
        ConvertError::Write(e)
    }
}

/// Converts the chosen parts of `report`, as filtered, into a Perfetto trace
/// written to `out`, gzipped if `options` say so (their format and nsys are
/// the caller's business). `progress` is called now and then with a
/// [`Progress`], on the calling thread.
///
/// The parts are converted at once on three threads, each part on a
/// sequence of its own and each thread reading its tables on a further
/// thread (see [`pipeline`]).
pub fn convert<W: Write + Send>(
    report: &Report,
    out: W,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<(W, Summary), ConvertError> {
    let namespace = namespace(report)?;
    let trace = Trace::new(out, namespace, options.gzip);
    if let Some(t0) = report
        .meta()
        .session_start_unix_ns
        .and_then(|t| u64::try_from(t).ok())
    {
        trace.set_wall_clock(t0);
    }
    let summary = convert_into(report, &trace, options, namespace, progress)?;
    Ok((trace.finish()?, summary))
}

/// Converts the chosen parts of `report` into `trace`, in the trace's
/// current scope, with flow ids made from `namespace`. Every sequence it
/// starts is closed when it returns.
pub fn convert_into<W: Write + Send>(
    report: &Report,
    trace: &Trace<W>,
    options: &Options,
    namespace: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary, ConvertError> {
    let Options {
        parts,
        filter,
        findings,
        ..
    } = options;
    let window = filter.time;
    if !window.is_everything() {
        let at = |t: Option<i64>| t.and_then(trace_time);
        trace.set_window(at(window.start), at(window.end));
    }
    let total: u64 = Part::ALL
        .iter()
        .filter(|p| parts.has(**p))
        .flat_map(|p| p.tables(report))
        .map(|t| report.approximate_rows(&t))
        .sum();
    let kept = RowFilter::new(report, filter);
    let mut summary = pipeline::run(
        report,
        &kept,
        trace,
        *parts,
        findings.as_ref(),
        namespace,
        &mut |rows_read| {
            progress(Progress {
                rows_read,
                rows_total: total.max(rows_read),
            })
        },
    )?;
    summary.unreadable = report.unreadable();
    for (table, rows) in kept.left_out() {
        *summary.filtered_out.entry(category_of(&table)).or_default() += rows;
    }
    // Tables of the parts left out are left out on purpose.
    let excluded: Vec<String> = Part::ALL
        .into_iter()
        .filter(|p| !parts.has(*p))
        .flat_map(|p| p.tables(report))
        .collect();
    summary.unconverted = report.unconverted(|table| excluded.iter().any(|t| t == table));
    Ok(summary)
}

/// The kinds of data a trace can carry; all by default, any can be left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// CUDA API calls, GPU kernels, memcpy, memset and sync, with launch flows.
    Cuda,
    /// NVTX ranges and marks.
    Nvtx,
    /// NVTX ranges projected onto the GPU (needs `cuda` and `nvtx`).
    NvtxGpu,
    /// OS runtime calls, with their call stacks.
    Osrt,
    /// Calls into cuDNN, cuBLAS, OpenACC, OpenMP, MPI, UCX and the video codecs.
    Libraries,
    /// CPU samples, with their call stacks.
    Samples,
    /// Context switches (thread scheduling).
    Sched,
    /// GPU metrics, CUDA memory use and memory pools, unified-memory page faults.
    Metrics,
    /// The profiler's own overhead and its diagnostic messages.
    Nsys,
}

impl Part {
    /// Every part, in the order they are declared in.
    pub const ALL: [Part; 9] = [
        Part::Cuda,
        Part::Nvtx,
        Part::NvtxGpu,
        Part::Osrt,
        Part::Libraries,
        Part::Samples,
        Part::Sched,
        Part::Metrics,
        Part::Nsys,
    ];

    /// The name `--exclude` knows the part by.
    pub fn name(self) -> &'static str {
        match self {
            Part::Cuda => "cuda",
            Part::Nvtx => "nvtx",
            Part::NvtxGpu => "nvtx_gpu",
            Part::Osrt => "osrt",
            Part::Libraries => "libraries",
            Part::Samples => "samples",
            Part::Sched => "sched",
            Part::Metrics => "metrics",
            Part::Nsys => "nsys",
        }
    }

    /// The part's place in [`Part::ALL`].
    const fn index(self) -> usize {
        self as usize
    }

    /// The event streams the part is made of.
    fn streams(self) -> &'static [EventStream] {
        match self {
            Part::Cuda => &[EventStream::Cuda],
            Part::Nvtx => &[EventStream::Nvtx],
            // Made of the CUDA and NVTX streams, which it does not read itself.
            Part::NvtxGpu => &[],
            Part::Osrt => &[EventStream::OsRuntime],
            Part::Libraries => &[EventStream::Libraries],
            Part::Samples => &[EventStream::CpuSamples],
            Part::Sched => &[EventStream::Scheduling],
            Part::Metrics => &[EventStream::Device],
            Part::Nsys => &[EventStream::Profiler],
        }
    }

    /// The tables of `report` the part reads its events from.
    pub(crate) fn tables(self, report: &Report) -> Vec<String> {
        self.streams()
            .iter()
            .flat_map(|s| report.tables_of(*s))
            .collect()
    }
}

impl std::str::FromStr for Part {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Part::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Part::ALL.iter().map(|p| p.name()).collect();
                format!("unknown part '{s}' (expected one of: {})", names.join(", "))
            })
    }
}

// A part's place in `Part::ALL` is its index: the list is in declaration order.
const _: () = {
    let mut i = 0;
    while i < Part::ALL.len() {
        assert!(
            Part::ALL[i].index() == i,
            "Part::ALL is in declaration order"
        );
        i += 1;
    }
};

/// A set of [`Part`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts([bool; Part::ALL.len()]);

impl Parts {
    pub fn all() -> Self {
        Parts([true; Part::ALL.len()])
    }

    pub fn has(self, part: Part) -> bool {
        self.0[part.index()]
    }

    pub fn without(mut self, part: Part) -> Self {
        self.0[part.index()] = false;
        self
    }
}

impl Default for Parts {
    fn default() -> Self {
        Parts::all()
    }
}

/// How far a conversion is.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub rows_read: u64,
    /// An estimate of the rows there are to read, from the event tables' sizes.
    pub rows_total: u64,
}

/// The category of what a table's rows become (the slices' category, or
/// the kind of counter or sample), or the table's name where that varies.
fn category_of(table: &str) -> String {
    use crate::nsys::{cpu, cuda as c, graphs as g, metrics as m, nvtx as n, overhead as o};
    let category = match table {
        c::RUNTIME | c::DRIVER => cuda::API,
        c::KERNEL => cuda::KERNEL,
        c::MEMCPY => cuda::MEMCPY,
        c::MEMSET => cuda::MEMSET,
        c::SYNC => cuda::SYNC,
        c::GRAPH_TRACE => cuda::GRAPH,
        n::TABLE => nvtx::NVTX,
        cpu::OSRT => osrt::OSRT,
        cpu::SAMPLES => samples::SAMPLES,
        cpu::SCHED => sched::SCHED,
        m::MEMORY_USAGE => metrics::CUDA_MEMORY,
        m::GPU_METRICS => metrics::GPU_METRICS,
        m::MEMORY_POOLS => memory_pools::MEMORY_POOL,
        m::UM_GPU_FAULTS | m::UM_CPU_FAULTS => metrics::UNIFIED_MEMORY,
        g::GRAPH_EVENTS | g::GRAPH_NODE_EVENTS => graphs::GRAPH_CREATION,
        o::PROFILER_OVERHEAD => overhead::NSYS_OVERHEAD,
        o::CUPTI_OVERHEAD => overhead::CUPTI_OVERHEAD,
        o::DIAGNOSTICS => overhead::DIAGNOSTIC,
        _ => table,
    };
    category.to_owned()
}

/// A number that tells this report's tracks and flows apart from another's.
pub fn namespace(report: &Report) -> Result<u64, ConvertError> {
    Ok(flows::mix(report.fingerprint()?))
}

/// Session time as a trace timestamp, or `None` before time 0.
fn trace_time(t: i64) -> Option<u64> {
    u64::try_from(t).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_left_out_is_the_only_one_missing() {
        for left_out in Part::ALL {
            let parts = Parts::all().without(left_out);
            for part in Part::ALL {
                assert_eq!(parts.has(part), part != left_out, "{part:?}");
            }
            assert!(!parts.without(left_out).has(left_out));
        }
    }
}
