//! Library calls (cuDNN, cuBLAS, OpenACC, OpenMP, MPI, UCX, video codecs,
//! OpenGL): slices on a track per library of the calling thread, in the
//! library's category. The GPU work of OpenGL calls is on its GPU, a track
//! per GL context, as nsys shows it.

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::nsys::libraries::{Library, LibraryCall, INT_ARGS, STR_ARGS};
use crate::perfetto::{Arg, ArgValue, Slice, SliceTrack, Stacking, TrackSpec};

use super::gpu::device_group;
use super::part_writer::{PartWriter, Written};
use super::threads::{process_track, thread_track};

pub(super) fn write<W: Write>(mut part: PartWriter<'_, '_, '_, W>) -> Written {
    let report = part.report;
    let meta = report.meta();
    let mut tracks: FxHashMap<(u32, u32, Library), SliceTrack> = FxHashMap::default();
    let mut on_gpus: FxHashMap<(Option<i64>, Option<i64>), SliceTrack> = FxHashMap::default();
    report.for_each_library_call(part.filter, |call: LibraryCall| -> Written {
        let (track_name, category) = shown(call.library);
        let Some(start) = part.row_at(call.start, category) else {
            return Ok(());
        };
        let track = match call.library {
            Library::OpenGlWorkload => {
                let gpu = call.int("gpu");
                let context = call.int("context");
                *on_gpus.entry((gpu, context)).or_insert_with(|| {
                    let parent = match gpu {
                        Some(gpu) => part.seq.with_tracks(|t| device_group(t, meta, gpu)),
                        None => part.seq.with_tracks(|t| process_track(t, meta, call.pid)),
                    };
                    let name = match context {
                        Some(c) => format!("{track_name}, GL context {c}"),
                        None => track_name.to_owned(),
                    };
                    // Work of one context may overlap: each in a lane.
                    part.seq
                        .slice_track(TrackSpec::new(Some(parent), name), Stacking::Exclusive)
                })
            }
            _ => *tracks
                .entry((call.pid, call.tid, call.library))
                .or_insert_with(|| {
                    let thread = part
                        .seq
                        .with_tracks(|t| thread_track(t, meta, call.pid, call.tid));
                    part.seq
                        .slice_track(TrackSpec::new(Some(thread), track_name), Stacking::Nest)
                }),
        };
        let end = part.summary.checked_end(start, call.end);
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
        part.seq.slice(track, &slice)?;
        part.summary.count(category);
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
        Library::OpenGl => ("OpenGL", "opengl"),
        Library::OpenGlWorkload => ("OpenGL workload", "opengl_workload"),
    }
}
