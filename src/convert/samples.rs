//! CPU samples: one Perfetto callstack sample per sample of the report, with
//! its stack, so that the UI draws flame graphs per thread and process.

use std::io::Write;

use rustc_hash::FxHashSet;

use crate::nsys::cpu::{ChainFrame, CpuSample, SAMPLE_CALLCHAINS};

use super::part_writer::{PartWriter, Written};
use super::stacks::Frames;
use super::threads::thread_track;

pub(super) const SAMPLES: &str = "cpu_samples";

pub(super) fn write<W: Write>(mut part: PartWriter<'_, '_, '_, W>) -> Written {
    let report = part.report;
    let meta = report.meta();
    let mut described: FxHashSet<(u32, u32)> = FxHashSet::default();
    let mut chain: Vec<ChainFrame> = Vec::new();
    let mut frames = Frames::default();
    report.for_each_cpu_sample(part.filter, |sample: CpuSample| -> Written {
        let Some(ts) = part.row_at(sample.start, SAMPLES) else {
            return Ok(());
        };
        // The thread's descriptor puts the samples under its process.
        if described.insert((sample.pid, sample.tid)) {
            let thread = part
                .seq
                .with_tracks(|t| thread_track(t, meta, sample.pid, sample.tid));
            part.seq.describe(thread)?;
        }
        report.callchain(SAMPLE_CALLCHAINS, sample.id, &mut chain)?;
        let stack = frames.of(report, &chain);
        let cpu = sample.cpu.and_then(super::trace_cpu);
        if cpu.is_none() && sample.cpu.is_some() {
            part.summary.samples_on_bad_cpu += 1;
        }
        part.seq
            .cpu_sample(ts, (sample.pid, sample.tid), cpu, stack)?;
        part.summary.cpu_samples += 1;
        Ok(())
    })
}
