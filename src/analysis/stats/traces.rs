//! The trace reports of `stats`: a row per event, in time order, as nsys's
//! `cuda_api_trace` prints them. Their rows are read from the export each
//! time the table is walked, never held: memory stays flat.

use std::io;

use crate::error::Failure;
use crate::nsys::ids::{pid_of, tid_of};
use crate::nsys::names::api_stats_name;
use crate::nsys::{ApiTrace, Report};

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
    Ok(match report.api_trace()? {
        Some(trace) => Box::new(ApiTraceRows(trace)),
        None => Box::new(Vec::<Vec<Cell>>::new()),
    })
}

struct ApiTraceRows(ApiTrace);

fn int(v: Option<i64>) -> Cell {
    v.map_or(Cell::Empty, |v| Cell::Int(i128::from(v)))
}

fn text(v: Option<String>) -> Cell {
    v.map_or(Cell::Empty, Cell::Text)
}

impl RowSource for ApiTraceRows {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn each(&self, f: &mut dyn FnMut(&[Cell]) -> io::Result<()>) -> io::Result<()> {
        self.0
            .each(|call| -> Result<(), TraceError> {
                let row = [
                    Cell::Int(i128::from(call.start)),
                    Cell::Int(i128::from(call.end) - i128::from(call.start)),
                    text(call.name.as_deref().map(|n| api_stats_name(n).to_owned())),
                    int(call.result),
                    int(call.correlation_id),
                    int(call.global_tid.map(|g| i64::from(pid_of(g)))),
                    int(call.global_tid.map(|g| i64::from(tid_of(g)))),
                    int(call.priority),
                    text(call.thread.clone()),
                ];
                f(&row).map_err(TraceError::Written)
            })
            .map_err(|e| match e {
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
