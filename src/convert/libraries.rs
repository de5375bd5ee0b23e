//! Library calls (cuDNN, cuBLAS, OpenACC, OpenMP, MPI, UCX, video codecs): slices
//! on a track per library of the calling thread, in the library's category.

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::nsys::libraries::{Library, LibraryCall, INT_ARGS, STR_ARGS};
use crate::nsys::{Report, RowFilter};
use crate::perfetto::{Arg, ArgValue, SequenceWriter, Slice, SliceTrack, Stacking, TrackSpec};

use super::summary::Summary;
use super::threads::thread_track;
use super::{trace_time, ConvertError, RowTicker};

pub fn write<W: Write>(
    report: &Report,
    filter: &RowFilter,
    seq: &mut SequenceWriter<'_, W>,
    summary: &mut Summary,
    rows: &mut RowTicker,
) -> Result<(), ConvertError> {
    let meta = report.meta();
    let mut tracks: FxHashMap<(u32, u32, Library), SliceTrack> = FxHashMap::default();
    report.for_each_library_call(filter, |call: LibraryCall| -> Result<(), ConvertError> {
        rows.tick();
        let (track_name, category) = shown(call.library);
        let Some(start) = trace_time(call.start) else {
            summary.skip_negative(category);
            return Ok(());
        };
        let track = *tracks
            .entry((call.pid, call.tid, call.library))
            .or_insert_with(|| {
                let thread = seq.with_tracks(|t| thread_track(t, meta, call.pid, call.tid));
                seq.slice_track(TrackSpec::new(Some(thread), track_name), Stacking::Nest)
            });
        let end = summary.checked_end(start, call.end);
        let mut args: Vec<Arg> = Vec::new();
        for ((name, _), value) in INT_ARGS.iter().zip(call.ints) {
            if let Some(v) = value {
                args.push(Arg::new(name, ArgValue::Int(v)));
            }
        }
        for ((name, _), value) in STR_ARGS.iter().zip(call.strs) {
            if let Some(v) = value {
                args.push(Arg::new(name, ArgValue::Str(v)));
            }
        }
        let slice = Slice::new(start, Some(end), call.name, category, &args);
        seq.slice(track, &slice)?;
        summary.count(category);
        Ok(())
    })
}

/// The name of a library's track on each thread, and its slices' category.
fn shown(library: Library) -> (&'static str, &'static str) {
    match library {
        Library::Cudnn => ("cuDNN", "cudnn"),
        Library::Cublas => ("cuBLAS", "cublas"),
        Library::OpenAcc => ("OpenACC", "openacc"),
        Library::OpenMp => ("OpenMP", "openmp"),
        Library::Mpi => ("MPI", "mpi"),
        Library::Ucx => ("UCX", "ucx"),
        Library::VideoCodec => ("NVIDIA Video Codec", "nvvideo"),
    }
}
