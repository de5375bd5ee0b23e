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
use std::sync::atomic::{AtomicU64, Ordering};

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
///
/// The CUDA and NVTX sequences are converted at once, on this thread and on
/// one of their own; each reads its tables on a further thread.
pub fn convert<W: Write + Send>(
    report: &Report,
    out: W,
    progress: &mut dyn FnMut(Progress),
) -> Result<(W, Summary), Failure> {
    let namespace = namespace(report)?;
    let trace = Trace::new(out, namespace);
    let total: u64 = EVENT_TABLES
        .iter()
        .map(|t| report.approximate_rows(t))
        .sum();
    let read = AtomicU64::new(0);
    if let Some(t0) = report
        .meta()
        .session_start_unix_ns
        .and_then(|t| u64::try_from(t).ok())
    {
        trace.set_wall_clock(t0)?;
    }
    // Made here, in a fixed order: sequence ids do not depend on thread timing.
    let mut seq = trace.sequence();
    let nvtx_seq = trace.sequence();
    let summary = std::thread::scope(|scope| -> Result<Summary, Failure> {
        let nvtx = scope.spawn(|| -> Result<_, Failure> {
            let mut summary = Summary::default();
            let mut seq = nvtx_seq;
            nvtx::write(report, &mut seq, &mut summary, &mut Rows::new(&read))?;
            seq.drain()?;
            Ok((seq, summary))
        });
        let mut report_progress = |rows_read: u64| {
            progress(Progress {
                rows_read,
                rows_total: total.max(rows_read),
            })
        };
        let mut summary = Summary::default();
        let mut rows = Rows::new(&read).reporting(&mut report_progress);
        let cuda = cuda::write(report, &mut seq, namespace, &mut summary, &mut rows)
            .and_then(|()| Ok(seq.drain()?));
        while !nvtx.is_finished() {
            rows.report();
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let nvtx = nvtx.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        cuda?;
        let (nvtx_seq, nvtx_summary) = nvtx?;
        // Slices that never ended close at the end of the whole trace.
        let end = trace.last_timestamp().unwrap_or(0);
        seq.close(end)?;
        nvtx_seq.close(end)?;
        summary.merge(nvtx_summary);
        Ok(summary)
    })?;
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

/// Rows read so far, counted by each converting thread into one total; the
/// thread that owns the progress callback reports it every few thousand rows.
pub(crate) struct Rows<'p> {
    mine: u64,
    read: &'p AtomicU64,
    progress: Option<&'p mut dyn FnMut(u64)>,
}

/// Rows between two updates of the shared count.
const ROWS_PER_UPDATE: u64 = 8192;

impl<'p> Rows<'p> {
    fn new(read: &'p AtomicU64) -> Self {
        Self {
            mine: 0,
            read,
            progress: None,
        }
    }

    fn reporting(mut self, progress: &'p mut dyn FnMut(u64)) -> Self {
        self.progress = Some(progress);
        self
    }

    pub fn tick(&mut self) {
        self.mine += 1;
        if self.mine.is_multiple_of(ROWS_PER_UPDATE) {
            self.read.fetch_add(ROWS_PER_UPDATE, Ordering::Relaxed);
            self.report();
        }
    }

    fn report(&mut self) {
        if let Some(progress) = &mut self.progress {
            progress(self.read.load(Ordering::Relaxed));
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
