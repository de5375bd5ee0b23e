//! The mapping from an Nsight Systems report to Perfetto tracks, slices and flows.
//!
//! One sequence carries all CUDA activity (API calls and GPU work, merged in
//! time order so that each launch precedes its work and flows can be linked),
//! a second one all NVTX events.

mod cuda;
mod flows;
mod gpu;
mod nvtx;
mod summary;
mod threads;

use std::io::{self, Write};

pub use summary::Summary;

use crate::nsys::Report;
use crate::perfetto::Trace;

/// Why a conversion stopped.
#[derive(Debug)]
pub enum Failure {
    Read(rusqlite::Error),
    Write(io::Error),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Read(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Write(e)
    }
}

/// Converts `report` into a Perfetto trace written to `out`. `progress` is
/// called now and then with a [`Progress`].
pub fn convert<W: Write>(
    report: &Report,
    out: W,
    progress: &mut dyn FnMut(Progress),
) -> Result<(W, Summary), Failure> {
    let namespace = namespace(report)?;
    let mut trace = Trace::new(out, namespace);
    let mut summary = Summary::default();
    let total = EVENT_TABLES
        .iter()
        .map(|t| report.approximate_rows(t))
        .sum();
    let mut rows = Rows {
        done: 0,
        total,
        progress,
    };
    if let Some(t0) = report
        .meta()
        .session_start_unix_ns
        .and_then(|t| u64::try_from(t).ok())
    {
        trace.set_wall_clock(t0)?;
    }
    {
        let mut seq = trace.sequence()?;
        cuda::write(report, &mut seq, namespace, &mut summary, &mut rows)?;
        seq.finish()?;
    }
    {
        let mut seq = trace.sequence()?;
        nvtx::write(report, &mut seq, &mut summary, &mut rows)?;
        seq.finish()?;
    }
    Ok((trace.finish()?, summary))
}

/// How far a conversion is.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub rows_read: u64,
    /// An estimate of the rows there are to read, from the event tables' sizes.
    pub rows_total: u64,
}

/// The tables whose rows become events.
const EVENT_TABLES: [&str; 7] = [
    crate::nsys::cuda::RUNTIME,
    crate::nsys::cuda::DRIVER,
    crate::nsys::cuda::KERNEL,
    crate::nsys::cuda::MEMCPY,
    crate::nsys::cuda::MEMSET,
    crate::nsys::cuda::SYNC,
    crate::nsys::nvtx::TABLE,
];

/// Counts rows read and reports them every few thousand.
pub(crate) struct Rows<'p> {
    done: u64,
    total: u64,
    progress: &'p mut dyn FnMut(Progress),
}

impl Rows<'_> {
    pub fn tick(&mut self) {
        self.done += 1;
        if self.done.is_multiple_of(8192) {
            (self.progress)(Progress {
                rows_read: self.done,
                rows_total: self.total.max(self.done),
            });
        }
    }
}

/// A number that tells this report's tracks and flows apart from another's.
fn namespace(report: &Report) -> Result<u64, Failure> {
    Ok(flows::mix(report.fingerprint(&EVENT_TABLES)?))
}

/// Session time as a trace timestamp, or `None` before time 0.
fn trace_time(t: i64) -> Option<u64> {
    u64::try_from(t).ok()
}
