//! The trace reports of `stats`: a row per event, in time order, as nsys's
//! `cuda_api_trace` and `cuda_gpu_trace` print them. Their rows are read
//! from the export each time the table is walked, never held: memory stays
//! flat.

use std::io;

use crate::error::Failure;
use crate::nsys::gpu_trace::GpuTraceRow;
use crate::nsys::ids::{pid_of, tid_of};
use crate::nsys::names::api_stats_name;
use crate::nsys::{ApiTrace, GpuTrace, Report};

use super::table::{Cell, RowSource, Rows};

/// The columns of `cuda_api_trace`, as nsys 2022.4 and 2025.3 name them.
pub(super) const API_TRACE_COLUMNS: [&str; 9] = [
    "Start (ns)",
    "Duration (ns)",
    "Name",
    "Result",
    "CorrID",
    "Pid",
    "Tid",
    "T-Pri",
    "Thread Name",
];

/// Every CUDA runtime call: its start, duration and name (without its
/// version suffix, as nsys prints it), result, correlation id, process,
/// thread and the thread's priority and name.
pub(super) fn api_trace(report: &Report) -> Result<Rows, Failure> {
    Ok(trace_rows(
        report.api_trace()?,
        ApiTrace::is_empty,
        |trace, f| {
            trace.each(|call| {
                f(&[
                    Cell::Int(i128::from(call.start)),
                    Cell::Int(i128::from(call.end) - i128::from(call.start)),
                    text(call.name.as_deref().map(|n| api_stats_name(n).to_owned())),
                    int(call.result),
                    int(call.correlation_id),
                    int(call.thread.global_tid.map(|g| i64::from(pid_of(g)))),
                    int(call.thread.global_tid.map(|g| i64::from(tid_of(g)))),
                    int(call.thread.priority),
                    text(call.thread.name.clone()),
                ])
            })
        },
    ))
}

fn int(v: Option<i64>) -> Cell {
    v.map_or(Cell::Empty, |v| Cell::Int(i128::from(v)))
}

fn text(v: Option<String>) -> Cell {
    v.map_or(Cell::Empty, Cell::Text)
}

/// The columns of `cuda_gpu_trace`, as nsys 2022.4 names them.
pub(super) const GPU_TRACE_COLUMNS: [&str; 20] = [
    "Start (ns)",
    "Duration (ns)",
    "CorrId",
    "GrdX",
    "GrdY",
    "GrdZ",
    "BlkX",
    "BlkY",
    "BlkZ",
    "Reg/Trd",
    "StcSMem (MB)",
    "DymSMem (MB)",
    "Bytes (MB)",
    "Throughput (MBps)",
    "SrcMemKd",
    "DstMemKd",
    "Device",
    "Ctx",
    "Strm",
    "Name",
];

/// Every kernel, memory copy and memset: start, duration, correlation id,
/// a kernel's grid, block, registers and shared memory, a copy's or
/// memset's bytes, throughput and memory kinds, the device, context,
/// stream and name.
pub(super) fn gpu_trace(report: &Report) -> Result<Rows, Failure> {
    Ok(trace_rows(
        report.gpu_trace()?,
        GpuTrace::is_empty,
        |trace, f| trace.each(|op| f(&gpu_cells(op))),
    ))
}

/// Bytes in MB (10^6 bytes), three decimals, as nsys prints sizes.
fn megabytes(bytes: Option<i64>) -> Cell {
    bytes.map_or(Cell::Empty, |b| Cell::Real(b as f64 / 1e6, 3))
}

/// MB per second as nsys computes it: the bytes times the whole number of
/// durations in a second (an integer division, as in nsys's SQL); none for
/// an operation without bytes or of no duration.
fn throughput(op: &GpuTraceRow) -> Cell {
    let duration = i128::from(op.end) - i128::from(op.start);
    match op.bytes {
        Some(bytes) if duration != 0 => {
            let per_second = i128::from(bytes) * (1_000_000_000 / duration);
            Cell::Real(per_second as f64 / 1e6, 3)
        }
        _ => Cell::Empty,
    }
}

/// A row of `cuda_gpu_trace`.
fn gpu_cells(op: &GpuTraceRow) -> [Cell; 20] {
    [
        Cell::Int(i128::from(op.start)),
        Cell::Int(i128::from(op.end) - i128::from(op.start)),
        int(op.correlation_id),
        int(op.grid[0]),
        int(op.grid[1]),
        int(op.grid[2]),
        int(op.block[0]),
        int(op.block[1]),
        int(op.block[2]),
        int(op.registers_per_thread),
        megabytes(op.static_shared),
        megabytes(op.dynamic_shared),
        megabytes(op.bytes),
        throughput(op),
        text(op.source_kind.clone()),
        text(op.destination_kind.clone()),
        text(op.device.clone()),
        int(op.context_id),
        int(op.stream_id),
        text(op.name.clone()),
    ]
}

/// Walks a trace, each row as its cells to the function given.
type Walk<T> = fn(&T, &mut dyn FnMut(&[Cell]) -> Result<(), TraceError>) -> Result<(), TraceError>;

/// A trace's rows, read from the export each time its table is walked.
struct TraceRows<T> {
    trace: T,
    is_empty: fn(&T) -> bool,
    walk: Walk<T>,
}

/// The rows of `trace`, none where the export has no such trace.
fn trace_rows<T: 'static>(trace: Option<T>, is_empty: fn(&T) -> bool, walk: Walk<T>) -> Rows {
    match trace {
        Some(trace) => Box::new(TraceRows {
            trace,
            is_empty,
            walk,
        }),
        None => Box::new(Vec::<Vec<Cell>>::new()),
    }
}

impl<T> RowSource for TraceRows<T> {
    fn is_empty(&self) -> bool {
        (self.is_empty)(&self.trace)
    }

    /// Each row to `f`: an error of the export or of the writer, as the
    /// writer's.
    fn each(&self, f: &mut dyn FnMut(&[Cell]) -> io::Result<()>) -> io::Result<()> {
        let walked = (self.walk)(&self.trace, &mut |row| f(row).map_err(TraceError::Written));
        walked.map_err(|e| match e {
            TraceError::Written(e) => e,
            TraceError::Read(e) => io::Error::other(e),
        })
    }
}

/// What stops a walk over a trace: the export, or the writer.
enum TraceError {
    Read(rusqlite::Error),
    Written(io::Error),
}

impl From<rusqlite::Error> for TraceError {
    fn from(e: rusqlite::Error) -> Self {
        TraceError::Read(e)
    }
}
