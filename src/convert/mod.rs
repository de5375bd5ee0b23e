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
mod json;
mod libraries;
mod memory_pools;
mod metric_units;
mod metrics;
mod nvtx;
mod options;
mod osrt;
mod overhead;
mod part_writer;
mod parts;
mod pipeline;
mod projection;
mod samples;
mod sched;
mod stacks;
mod summary;
mod threads;
mod typed_gpu;
mod unmatched;

use std::io::Write;

pub(crate) use json::{convert_json, json_parts};
pub use options::{Format, GpuModel, Options, DEFAULT_GZIP_LEVEL};
pub use parts::{Part, Parts};
pub use summary::Summary;

pub(crate) use pipeline::RowTicker;

use parts::category_of;

use crate::error::Failure;
use crate::nsys::{Report, RowFilter};
use crate::perfetto::Trace;

/// Converts the chosen parts of `report`, as filtered, into a Perfetto trace
/// written to `out`, gzipped if `options` say so (their format and nsys are
/// the caller's business). `progress` is called now and then with a
/// [`Progress`], on the calling thread.
///
/// The parts are converted at once on three threads, each part on a
/// sequence of its own and each thread reading its tables on a further
/// thread (see [`pipeline`]).
pub(crate) fn convert<W: Write + Send>(
    report: &Report,
    out: W,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<(W, Summary), Failure> {
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
pub(crate) fn convert_into<W: Write + Send>(
    report: &Report,
    trace: &Trace<W>,
    options: &Options,
    namespace: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary, Failure> {
    let Options {
        parts,
        filter,
        findings,
        gpu_model,
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
    let kept = RowFilter::new(report, filter)?;
    let mut summary = pipeline::run(
        report,
        &kept,
        trace,
        *parts,
        findings.as_ref(),
        cuda::CudaModel {
            namespace,
            gpus: typed_gpu::Gpus::declare(trace, report, *gpu_model)?,
        },
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
    summary.kept_nothing = unmatched::kept_nothing(report, options, &summary)?;
    Ok(summary)
}

/// How far a conversion is.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// The rows read so far.
    pub rows_read: u64,
    /// An estimate of the rows there are to read, from the event tables' sizes.
    pub rows_total: u64,
}

/// A number that tells this report's tracks and flows apart from another's.
pub(crate) fn namespace(report: &Report) -> Result<u64, Failure> {
    Ok(flows::mix(report.fingerprint()?))
}

/// A CPU number as the trace holds it, or `None` for one it cannot
/// (negative, or from [`MAX_CPUS`](crate::perfetto::MAX_CPUS)).
fn trace_cpu(cpu: i64) -> Option<u32> {
    u32::try_from(cpu)
        .ok()
        .filter(|&c| c < crate::perfetto::MAX_CPUS)
}

/// Session time as a trace timestamp, or `None` before time 0.
fn trace_time(t: i64) -> Option<u64> {
    u64::try_from(t).ok()
}
