//! NVTX GPU projection in the trace: the projections of
//! [`crate::analysis::projection`], written on a sequence of their own, one track per
//! (device, source thread) in the device's group.
//!
//! The NVTX thread feeds its ranges, in start order, to the CUDA thread, which
//! sees every launch and GPU operation in time order and hands them to the
//! projector; finished projections are written in start order, as soon as no
//! later one can start before them.

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::analysis::projection::{self, Name, Projected};
use crate::nsys::cuda::CudaEvent;
use crate::nsys::Metadata;
use crate::perfetto::{Arg, ArgValue, SequenceWriter, Slice, SliceTrack, Stacking, TrackSpec};

use super::gpu::GpuTracks;
use super::summary::Summary;
use crate::error::Failure;

/// The NVTX thread's end of the projection's feed: named ranges.
pub(super) type RangeFeed = projection::RangeFeed<Name>;
/// The CUDA thread's end.
pub(super) type RangeSource = projection::RangeSource<Name>;

/// A connected feed and source.
pub(super) fn channel() -> (RangeFeed, RangeSource) {
    projection::channel()
}

pub(super) const NVTX_GPU: &str = "nvtx_gpu";

/// A projection track: the ranges of one thread on one GPU.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct ProjectionTrack {
    device: i64,
    pid: u32,
    tid: u32,
}

/// Projects on the CUDA thread and writes the projections.
pub(super) struct Projector<'p, 's, W: Write> {
    seq: &'p mut SequenceWriter<'s, W>,
    projector: projection::Projector<Name>,
    tracks: FxHashMap<ProjectionTrack, SliceTrack>,
    /// Projections written, added to the summary at the end.
    written: u64,
}

impl<'p, 's, W: Write> Projector<'p, 's, W> {
    pub(super) fn new(seq: &'p mut SequenceWriter<'s, W>, source: RangeSource) -> Self {
        Self {
            seq,
            // Open ranges end where the NVTX data ends, once the feed says.
            projector: projection::Projector::fed_by(source, None),
            tracks: FxHashMap::default(),
            written: 0,
        }
    }

    /// One event of the CUDA stream, in time order: the projector takes it,
    /// and what can no longer change its place is written.
    pub(super) fn cuda_event(
        &mut self,
        event: &CudaEvent<'_>,
        gpu: &GpuTracks,
        meta: &Metadata,
        summary: &mut Summary,
    ) -> Result<(), Failure> {
        self.projector.cuda_event(event);
        self.write_ready(gpu, meta, summary)
    }

    /// The CUDA stream is over: every projection is written.
    pub(super) fn finish(
        mut self,
        gpu: &GpuTracks,
        meta: &Metadata,
        summary: &mut Summary,
    ) -> Result<(), Failure> {
        self.projector.finish();
        self.write_ready(gpu, meta, summary)?;
        summary.count_n(NVTX_GPU, self.written);
        Ok(())
    }

    fn write_ready(
        &mut self,
        gpu: &GpuTracks,
        meta: &Metadata,
        summary: &mut Summary,
    ) -> Result<(), Failure> {
        while let Some(p) = self.projector.next_ready() {
            if p.range.data.is_left_out() {
                summary.filter_out(NVTX_GPU);
                continue;
            }
            self.write(&p, gpu, meta)?;
            self.written += 1;
        }
        Ok(())
    }

    fn write(
        &mut self,
        p: &Projected<Name>,
        gpu: &GpuTracks,
        meta: &Metadata,
    ) -> Result<(), Failure> {
        let (pid, tid) = (p.range.pid, p.range.tid);
        let key = ProjectionTrack {
            device: p.device,
            pid,
            tid,
        };
        let track = match self.tracks.get(&key) {
            Some(&t) => t,
            None => {
                let name = format!(
                    "NVTX projection: {} (tid {tid})",
                    super::threads::thread_name(meta, pid, tid)
                );
                let mut spec = TrackSpec::new(gpu.device_group(p.device), name);
                spec.description = Some(format!(
                    "NVTX ranges of thread {tid} (pid {pid}) projected onto GPU {}: from the first start to the last end of the GPU work launched inside each range",
                    p.device
                ));
                // After the device's streams.
                spec.rank = Some(i32::MAX - 1);
                let t = self.seq.slice_track(spec, Stacking::Nest);
                self.tracks.insert(key, t);
                t
            }
        };
        let args = [
            Arg::new("gpu_ops", ArgValue::Uint(u64::from(p.launches))),
            Arg::new("range_start", ArgValue::Uint(p.range.start)),
            Arg::new(
                "range_duration",
                ArgValue::Uint(p.range_end.saturating_sub(p.range.start)),
            ),
        ];
        let slice = Slice::new(
            p.first,
            Some(p.last),
            p.range.data.as_str(),
            NVTX_GPU,
            &args,
        );
        self.seq.slice(track, &slice)?;
        Ok(())
    }
}
