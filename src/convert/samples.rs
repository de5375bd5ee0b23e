//! CPU samples: one Perfetto callstack sample per sample of the report, with
//! its stack, so that the UI draws flame graphs per thread and process.

use std::io::Write;

use rustc_hash::FxHashSet;

use crate::nsys::cpu::{ChainFrame, CpuSample, SAMPLE_CALLCHAINS};
use crate::nsys::{Report, RowFilter};
use crate::perfetto::SequenceWriter;

use super::stacks::Frames;
use super::summary::Summary;
use super::threads::thread_track;
use super::{trace_time, ConvertError, RowTicker};

pub const SAMPLES: &str = "cpu_samples";

pub fn write<W: Write>(
    report: &Report,
    filter: &RowFilter,
    seq: &mut SequenceWriter<'_, W>,
    summary: &mut Summary,
    rows: &mut RowTicker,
) -> Result<(), ConvertError> {
    let meta = report.meta();
    let mut described: FxHashSet<(u32, u32)> = FxHashSet::default();
    let mut chain: Vec<ChainFrame> = Vec::new();
    let mut frames = Frames::default();
    report.for_each_cpu_sample(filter, |sample: CpuSample| -> Result<(), ConvertError> {
        rows.tick();
        let Some(ts) = trace_time(sample.start) else {
            summary.skip_negative(SAMPLES);
            return Ok(());
        };
        // The thread's descriptor puts the samples under its process.
        if described.insert((sample.pid, sample.tid)) {
            let thread = seq.with_tracks(|t| thread_track(t, meta, sample.pid, sample.tid));
            seq.describe(thread)?;
        }
        report.callchain(SAMPLE_CALLCHAINS, sample.id, &mut chain)?;
        let stack = frames.of(report, &chain);
        seq.cpu_sample(ts, (sample.pid, sample.tid), sample.cpu, stack)?;
        summary.cpu_samples += 1;
        Ok(())
    })
}
