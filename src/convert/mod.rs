//! The mapping from an Nsight Systems report to Perfetto tracks, slices and flows.
//!
//! One sequence carries all CUDA activity (API calls and GPU work, merged in
//! time order so that each launch precedes its work and flows can be linked),
//! others NVTX events, OS runtime calls, CPU samples, context switches, and
//! the profiler's own overhead and diagnostics.

mod cuda;
mod events;
mod flows;
mod gpu;
mod graphs;
mod libraries;
mod memory_pools;
mod metrics;
mod nvtx;
mod osrt;
mod overhead;
mod projection;
mod samples;
mod sched;
mod stacks;
mod summary;
mod threads;

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

pub use summary::Summary;

use crate::nsys::{EventStream, Report};
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

/// Converts the `parts` of `report` into a Perfetto trace written to `out`,
/// gzipped at level `gzip` if given. `progress` is called now and then with a
/// [`Progress`].
///
/// The parts are converted at once on three threads (CUDA here, NVTX and the
/// CPU side on threads of their own), each part on a sequence of its own and
/// each reading its tables on a further thread.
pub fn convert<W: Write + Send>(
    report: &Report,
    out: W,
    parts: &Parts,
    gzip: Option<u32>,
    progress: &mut dyn FnMut(Progress),
) -> Result<(W, Summary), Failure> {
    let namespace = namespace(report)?;
    let trace = Trace::new(out, namespace, gzip);
    let total: u64 = Part::ALL
        .iter()
        .filter(|p| parts.has(**p))
        .flat_map(|p| p.tables(report))
        .map(|t| report.approximate_rows(&t))
        .sum();
    let read = AtomicU64::new(0);
    if let Some(t0) = report
        .meta()
        .session_start_unix_ns
        .and_then(|t| u64::try_from(t).ok())
    {
        trace.set_wall_clock(t0);
    }
    // Made here, in a fixed order: sequence ids do not depend on thread timing.
    let mut sequences = Part::ALL.map(|part| parts.has(part).then(|| trace.sequence()));
    let [cuda_seq, nvtx_seq, projection_seq, osrt_seq, libraries_seq, samples_seq, sched_seq, metrics_seq, nsys_seq] =
        &mut sequences;
    // The projection needs both: NVTX ranges flow from the NVTX thread to the CUDA one.
    let (mut feed, projection) = match (&cuda_seq, &nvtx_seq, projection_seq) {
        (Some(_), Some(_), Some(seq)) => {
            let (feed, source) = projection::channel();
            (Some(feed), Some((seq, source)))
        }
        _ => (None, None),
    };
    let summary = std::thread::scope(|scope| -> Result<Summary, Failure> {
        let nvtx = scope.spawn(|| -> Result<Summary, Failure> {
            let mut summary = Summary::default();
            let mut rows = Rows::new(&read);
            if let Some(seq) = nvtx_seq {
                let written = nvtx::write(report, seq, feed.as_mut(), &mut summary, &mut rows);
                // The CUDA thread waits for the feed's end, even after a failure.
                if let Some(feed) = feed.take() {
                    feed.finish();
                }
                written?;
                seq.drain()?;
            }
            Ok(summary)
        });
        let cpu = scope.spawn(|| -> Result<Summary, Failure> {
            let mut summary = Summary::default();
            let mut rows = Rows::new(&read);
            if let Some(seq) = osrt_seq {
                osrt::write(report, seq, &mut summary, &mut rows)?;
                seq.drain()?;
            }
            if let Some(seq) = libraries_seq {
                libraries::write(report, seq, &mut summary, &mut rows)?;
                seq.drain()?;
            }
            if let Some(seq) = samples_seq {
                samples::write(report, seq, &mut summary, &mut rows)?;
                seq.drain()?;
            }
            if let Some(seq) = sched_seq {
                sched::write(report, seq, &mut summary, &mut rows)?;
                seq.drain()?;
            }
            if let Some(seq) = metrics_seq {
                metrics::write(report, seq, &mut summary, &mut rows)?;
                seq.drain()?;
            }
            if let Some(seq) = nsys_seq {
                overhead::write(report, seq, &mut summary, &mut rows)?;
                seq.drain()?;
            }
            Ok(summary)
        });
        let mut report_progress = |rows_read: u64| {
            progress(Progress {
                rows_read,
                rows_total: total.max(rows_read),
            })
        };
        let mut summary = Summary::default();
        let mut rows = Rows::new(&read).reporting(&mut report_progress);
        let cuda = match cuda_seq {
            Some(seq) => cuda::write(report, seq, projection, namespace, &mut summary, &mut rows)
                .and_then(|()| Ok(seq.drain()?)),
            None => Ok(()),
        };
        while !(nvtx.is_finished() && cpu.is_finished()) {
            rows.report();
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let join = |h: std::thread::ScopedJoinHandle<'_, Result<Summary, Failure>>| {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        };
        let (nvtx, cpu) = (join(nvtx), join(cpu));
        cuda?;
        summary.merge(nvtx?);
        summary.merge(cpu?);
        summary.unreadable = report.unreadable();
        // Tables of the parts left out are left out on purpose.
        let excluded: Vec<String> = Part::ALL
            .into_iter()
            .filter(|p| !parts.has(*p))
            .flat_map(|p| p.tables(report))
            .collect();
        summary.unconverted = report.unconverted(|table| excluded.iter().any(|t| t == table));
        Ok(summary)
    })?;
    // Slices that never ended close at the end of the whole trace.
    let end = trace.last_timestamp().unwrap_or(0);
    for seq in sequences.into_iter().flatten() {
        seq.close(end)?;
    }
    Ok((trace.finish()?, summary))
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
    fn tables(self, report: &Report) -> Vec<String> {
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

/// A set of [`Part`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts(u16);

impl Parts {
    pub fn all() -> Self {
        Parts(u16::MAX >> (16 - Part::ALL.len()))
    }

    pub fn has(self, part: Part) -> bool {
        self.0 & (1 << part as u8) != 0
    }

    pub fn without(self, part: Part) -> Self {
        Parts(self.0 & !(1 << part as u8))
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
    Ok(flows::mix(report.fingerprint()?))
}

/// Session time as a trace timestamp, or `None` before time 0.
fn trace_time(t: i64) -> Option<u64> {
    u64::try_from(t).ok()
}
