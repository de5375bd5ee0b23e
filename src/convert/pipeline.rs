//! How a conversion runs: which thread reads what, which writes which
//! sequence, where gzip runs, and what travels between them.
//!
//! ```text
//!  +----------------------------------------------------------------------+
//!  | calling thread (owns the `progress` callback)                        |
//!  |  1. makes a sequence for each part, in `Part::ALL` order (fixed ids) |
//!  |  2. starts the workers "nvtx" and "cpu", handing each the sequences  |
//!  |     of its parts                                                     |
//!  |  3. converts CUDA itself: writes Cuda and NvtxGpu; every 8192 of its |
//!  |     rows, calls `progress` with them and the counts the workers sent |
//!  |  4. then calls `progress` as the workers' counts come in, until the  |
//!  |     last worker has ended                                            |
//!  |  5. joins the workers, closes every sequence at the end of the trace |
//!  +----------------------------------------------------------------------+
//!     ^ events        ^ NVTX ranges, in         ^ rows read      ^ rows read
//!     |               | start order             | (a channel)    |
//!     |               | (projection feed)       |                |
//!     |          +----+-------------------------+---+  +---------+-----------+
//!     |          | worker "nvtx"                    |  | worker "cpu"        |
//!     |          | writes Nvtx                      |  | writes Osrt,        |
//!     |          |                                  |  | Libraries, Samples, |
//!     |          |                                  |  | Sched, Metrics and  |
//!     |          |                                  |  | Nsys, in turn       |
//!     |          +----------------^-----------------+  +---------^-----------+
//!     |                           | events                       | events
//!  +--+---------------+  +--------+---------+          +---------+-----------+
//!  | reader thread:   |  | reader thread:   |          | a reader thread for |
//!  | the CUDA tables  |  | the NVTX tables  |          | each part in turn   |
//!  +------------------+  +------------------+          +---------------------+
//!
//!  every sequence --packets--> its spill: a buffer, then a temporary file
//!                              once the buffer fills, gzipped on a thread
//!                              of its own when the trace is gzipped
//! ```
//!
//! - A reader thread (`nsys::scan`) has an SQLite connection of its own; it
//!   merges its tables into time order and sends the events in batches over
//!   a bounded channel, so reading overlaps with converting.
//! - Each sequence is written by one thread only, and the trace is put
//!   together from whole sequences by id (`perfetto::Trace::finish`): the
//!   output's bytes do not depend on how the threads interleave. The only
//!   state the threads share is the trace's tracks, behind one lock.
//! - The NVTX GPU projection needs every NVTX range and every CUDA launch:
//!   the NVTX worker sends its ranges (`projection::RangeFeed`, a bounded
//!   channel) to the CUDA side, whose projector takes them as the CUDA
//!   events pass their start. When either side stops early, the other sees
//!   the channel close and carries on without it.
//! - CUDA, the largest part, is converted on the calling thread, which
//!   would otherwise only wait: one thread fewer.
//! - Only the calling thread calls `progress`. The workers' counts wait on
//!   a channel, read whenever the calling thread counts its own; the
//!   channel closes when the last worker drops its end, and until then the
//!   calling thread, done with CUDA, sleeps in `recv`.
//! - A thread that fails returns its error once it has stopped; the others
//!   run to their end, and the first error in the order cuda, nvtx, cpu is
//!   the conversion's. A panic on any thread is resumed on the thread that
//!   started it (see `crate::worker`), up to the caller.

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::{self, Scope, ScopedJoinHandle};

use crate::nsys::{Report, RowFilter};
use crate::perfetto::{SequenceWriter, Trace};
use crate::worker::outcome;

use super::cuda::{self, CudaModel};
use super::part_writer::{PartWriter, Written};
use super::projection::{self, RangeFeed, RangeSource};
use super::typed_gpu::Gpus;
use super::{findings, nvtx};
use super::{Part, Parts, Summary};
use crate::error::Failure;

/// Converts the `parts` of `report` into `trace`, keeping the rows `filter`
/// keeps, calling `progress` with the number of rows read so far, and closes
/// every sequence: the trace is ready to be finished.
pub(super) fn run<W: Write + Send>(
    report: &Report,
    filter: &RowFilter,
    trace: &Trace<W>,
    parts: Parts,
    thresholds: Option<&crate::analysis::analyze::Thresholds>,
    model: CudaModel,
    progress: &mut dyn FnMut(u64),
) -> Result<Summary, Failure> {
    let mut sequences = Sequences::new(trace, parts);
    let (feed, ranges) = match [Part::Cuda, Part::Nvtx, Part::NvtxGpu].map(|p| parts.has(p)) {
        [true, true, true] => {
            let (feed, ranges) = projection::channel();
            (Some(feed), Some(ranges))
        }
        _ => (None, None),
    };
    let cuda_sequences = sequences.take(|part| matches!(part.declared::<W>().writer, Writer::Cuda));
    let nvtx_sequences = sequences.take(|part| matches!(part.declared::<W>().writer, Writer::Nvtx));
    let cpu_sequences =
        sequences.take(|part| matches!(part.declared::<W>().writer, Writer::Cpu(_)));
    let (counts, from_workers) = mpsc::channel();
    let done = thread::scope(|scope| {
        let mut to = counts.clone();
        let nvtx = start(scope, "nvtx", move || {
            counted(&mut to, |rows| {
                write_nvtx(report, filter, nvtx_sequences, feed, rows)
            })
        })?;
        let mut to = counts;
        let mut cpu_gpus = model.gpus.clone();
        let cpu = start(scope, "cpu", move || {
            counted(&mut to, |rows| {
                write_cpu(report, filter, cpu_sequences, &mut cpu_gpus, rows)
            })
        })?;
        let mut reporter = Reporter {
            read: 0,
            from_workers,
            progress,
        };
        let cuda = counted(&mut reporter, |rows| {
            write_cuda(report, filter, cuda_sequences, ranges, model, rows)
        });
        reporter.until_workers_end();
        Ok::<_, Failure>([cuda, outcome(nvtx.join()), outcome(cpu.join())])
    })?;
    let mut summary = Summary::default();
    for part in done {
        let part = part?;
        summary.merge(part.summary);
        sequences.put_back(part.sequences);
    }
    // Findings come last, on a sequence of their own: the others keep their ids.
    let analysis = match thresholds {
        Some(thresholds) => {
            let mut seq = trace.sequence();
            findings::write(report, filter.filter(), &mut seq, thresholds, &mut summary)?;
            seq.drain()?;
            Some(seq)
        }
        None => None,
    };
    // Slices that never ended close at the end of the whole trace.
    let end = trace.last_timestamp().unwrap_or(0);
    sequences.close(end)?;
    if let Some(seq) = analysis {
        seq.close(end)?;
    }
    Ok(summary)
}

/// Starts a worker thread named `name`.
fn start<'scope, T: Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    name: &str,
    work: impl FnOnce() -> T + Send + 'scope,
) -> Result<ScopedJoinHandle<'scope, T>, Failure> {
    let started = thread::Builder::new()
        .name(name.to_owned())
        .spawn_scoped(scope, work);
    started.map_err(|e| Failure::Write(io::Error::new(e.kind(), format!("starting a thread: {e}"))))
}

/// Who writes a part's sequence.
pub(super) enum Writer<W: Write> {
    /// The calling thread: the CUDA activity and, beside it, the NVTX
    /// projection.
    Cuda,
    /// The NVTX worker, which also feeds the projection its ranges.
    Nvtx,
    /// The CPU worker, with this function, one part after the other in
    /// `Part::ALL` order.
    Cpu(WritePart<W>),
}

type WritePart<W> = for<'a, 's, 'r> fn(PartWriter<'a, 's, 'r, W>) -> Written;

/// What a thread hands back: what it counted, and its sequences, drained.
struct Done<'t, W: Write> {
    summary: Summary,
    sequences: Sequences<'t, W>,
}

fn write_cuda<'t, W: Write>(
    report: &Report,
    filter: &RowFilter,
    mut sequences: Sequences<'t, W>,
    ranges: Option<RangeSource>,
    model: CudaModel,
    rows: &mut RowTicker<'_>,
) -> Result<Done<'t, W>, Failure> {
    let mut summary = Summary::default();
    let [cuda, mut projection] = sequences.get_many([Part::Cuda, Part::NvtxGpu]);
    if let Some(seq) = cuda {
        let fed = projection.as_deref_mut().zip(ranges);
        cuda::write(report, filter, seq, fed, model, &mut summary, rows)?;
        seq.drain()?;
        // Every sequence is drained before the trace's last time is read
        // (the projection's ends lie within the kernels', but it need not know).
        if let Some(projection) = projection {
            projection.drain()?;
        }
    }
    Ok(Done { summary, sequences })
}

fn write_nvtx<'t, W: Write>(
    report: &Report,
    filter: &RowFilter,
    mut sequences: Sequences<'t, W>,
    mut feed: Option<RangeFeed>,
    rows: &mut RowTicker<'_>,
) -> Result<Done<'t, W>, Failure> {
    let mut summary = Summary::default();
    if let Some(seq) = sequences.get(Part::Nvtx) {
        let written = nvtx::write(report, filter, seq, feed.as_mut(), &mut summary, rows);
        // The CUDA side waits for the ranges' end, even after a failure.
        if let Some(feed) = feed.take() {
            feed.finish();
        }
        written?;
        seq.drain()?;
    }
    Ok(Done { summary, sequences })
}

fn write_cpu<'t, W: Write>(
    report: &Report,
    filter: &RowFilter,
    mut sequences: Sequences<'t, W>,
    gpus: &mut Gpus,
    rows: &mut RowTicker<'_>,
) -> Result<Done<'t, W>, Failure> {
    let mut summary = Summary::default();
    for part in Part::ALL {
        let (Writer::Cpu(write), Some(seq)) = (part.declared().writer, sequences.get(part)) else {
            continue;
        };
        write(PartWriter {
            report,
            filter,
            seq,
            summary: &mut summary,
            gpus,
            rows,
        })?;
        seq.drain()?;
    }
    Ok(Done { summary, sequences })
}

/// The sequences of a conversion, by part: one for each part converted.
struct Sequences<'t, W: Write> {
    by_part: [Option<SequenceWriter<'t, W>>; Part::ALL.len()],
}

impl<'t, W: Write> Sequences<'t, W> {
    /// Made in `Part::ALL` order, here: sequence ids do not depend on thread
    /// timing. A part converted has its sequence even when it has nothing
    /// to write.
    fn new(trace: &'t Trace<W>, parts: Parts) -> Self {
        Self {
            by_part: Part::ALL.map(|part| parts.has(part).then(|| trace.sequence())),
        }
    }

    fn get(&mut self, part: Part) -> Option<&mut SequenceWriter<'t, W>> {
        self.by_part[part.index()].as_mut()
    }

    /// The sequences of several distinct parts at once.
    fn get_many<const N: usize>(
        &mut self,
        parts: [Part; N],
    ) -> [Option<&mut SequenceWriter<'t, W>>; N] {
        self.by_part
            .get_disjoint_mut(parts.map(Part::index))
            .expect("distinct parts")
            .map(Option::as_mut)
    }

    /// Moves the sequences of the parts `mine` says out, into a set of their own.
    fn take(&mut self, mine: impl Fn(Part) -> bool) -> Self {
        Self {
            by_part: Part::ALL.map(|part| match mine(part) {
                true => self.by_part[part.index()].take(),
                false => None,
            }),
        }
    }

    /// Puts back the sequences [`take`](Self::take) moved out.
    fn put_back(&mut self, taken: Self) {
        for (slot, seq) in self.by_part.iter_mut().zip(taken.by_part) {
            if seq.is_some() {
                *slot = seq;
            }
        }
    }

    /// Closes every sequence, ending the slices still open at `at`.
    fn close(self, at: u64) -> io::Result<()> {
        for seq in self.by_part.into_iter().flatten() {
            seq.close(at)?;
        }
        Ok(())
    }
}

/// RowTicker a thread has read, counted for the progress callback: the count
/// goes on every [`ROWS_PER_UPDATE`] rows.
pub(crate) struct RowTicker<'c> {
    unsent: u64,
    to: &'c mut dyn Counts,
}

/// RowTicker between two counts of a thread.
const ROWS_PER_UPDATE: u64 = 8192;

impl RowTicker<'_> {
    pub(crate) fn tick(&mut self) {
        self.unsent += 1;
        if self.unsent == ROWS_PER_UPDATE {
            self.to.add(std::mem::take(&mut self.unsent));
        }
    }
}

/// Runs `work` with a count of rows that goes to `to`, the last rows too.
fn counted<T>(to: &mut dyn Counts, work: impl FnOnce(&mut RowTicker<'_>) -> T) -> T {
    let mut rows = RowTicker { unsent: 0, to };
    let done = work(&mut rows);
    if rows.unsent > 0 {
        rows.to.add(rows.unsent);
    }
    done
}

/// Where the counts of rows read go.
trait Counts {
    fn add(&mut self, rows: u64);
}

/// A worker's counts go to the calling thread.
impl Counts for Sender<u64> {
    fn add(&mut self, rows: u64) {
        // The calling thread listens until every worker is done, unless its
        // progress callback panicked: then no one needs the count.
        let _ = self.send(rows);
    }
}

/// The calling thread's counts, added to the workers' and reported.
struct Reporter<'p> {
    read: u64,
    from_workers: Receiver<u64>,
    progress: &'p mut dyn FnMut(u64),
}

impl Counts for Reporter<'_> {
    fn add(&mut self, rows: u64) {
        self.read += rows + self.from_workers.try_iter().sum::<u64>();
        (self.progress)(self.read);
    }
}

impl Reporter<'_> {
    /// Reports the workers' counts as they come, until the last worker has
    /// ended and dropped its end of the channel.
    fn until_workers_end(&mut self) {
        for rows in self.from_workers.iter() {
            self.read += rows;
            (self.progress)(self.read);
        }
    }
}
