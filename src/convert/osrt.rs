//! OS runtime calls: slices on an "OS runtime" track of each thread, with the
//! call stack they were made from where the report recorded it; and their
//! file accesses (nsys 2025+), slices of their own on a "File access" track
//! of the thread, with the file's path.

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::nsys::cpu::{ChainFrame, OsrtCall, OSRT_CALLCHAINS};
use crate::nsys::file_access::FileAccess;
use crate::perfetto::{Arg, ArgValue, Slice, SliceTrack, Stacking, TrackSpec};

use super::part_writer::{PartWriter, Written};
use super::stacks::Frames;
use super::threads::{process_track, thread_track};

pub(super) const OSRT: &str = "osrt";
pub(super) const FILE_ACCESS: &str = "file_access";

const NO_THREAD: &str = "OS runtime events that nsys recorded without a thread (tid 0): \
     its own markers of when OS runtime tracing started and finished, and calls it could not \
     place on a thread";

pub(super) fn write<W: Write>(mut part: PartWriter<'_, '_, '_, W>) -> Written {
    let report = part.report;
    let meta = report.meta();
    let mut tracks: FxHashMap<(u32, u32), SliceTrack> = FxHashMap::default();
    let mut chain: Vec<ChainFrame> = Vec::new();
    let mut frames = Frames::default();
    // Few: read whole, and written in time order among the calls.
    let mut accesses = report.file_accesses()?.into_iter().peekable();
    let mut access_tracks: FxHashMap<(u32, u32), SliceTrack> = FxHashMap::default();
    report.for_each_osrt_call(part.filter, |call: OsrtCall| -> Written {
        while let Some(a) = accesses.next_if(|a| a.start <= call.start) {
            write_access(&mut part, &mut access_tracks, &a)?;
        }
        let Some(start) = part.row_at(call.start, OSRT) else {
            return Ok(());
        };
        let track = *tracks.entry((call.pid, call.tid)).or_insert_with(|| {
            // Thread 0 is no thread: nsys puts its own markers there
            // ("OS runtime libraries profiling started") and calls it could
            // not place on a thread. They belong to the process.
            if call.tid == 0 {
                let process = part.seq.with_tracks(|t| process_track(t, meta, call.pid));
                let mut spec = TrackSpec::new(Some(process), "nsys markers");
                spec.description = Some(NO_THREAD.to_owned());
                return part.seq.slice_track(spec, Stacking::Nest);
            }
            let thread = part
                .seq
                .with_tracks(|t| thread_track(t, meta, call.pid, call.tid));
            part.seq
                .slice_track(TrackSpec::new(Some(thread), "OS runtime"), Stacking::Nest)
        });
        let end = part.summary.checked_end(start, call.end);
        let mut args = Vec::with_capacity(1);
        if let Some(v) = call.return_value {
            args.push(Arg::new("return_value", ArgValue::Int(v)));
        }
        let callstack = match call.callchain {
            Some(id) => {
                report.callchain(OSRT_CALLCHAINS, id, &mut chain)?;
                Some(frames.of(report, &chain))
            }
            None => None,
        };
        let slice = Slice::new(start, Some(end), call.name, OSRT, &args)
            .callstack(callstack.filter(|f| !f.is_empty()));
        part.seq.slice(track, &slice)?;
        part.summary.count(OSRT);
        Ok(())
    })?;
    for a in accesses {
        write_access(&mut part, &mut access_tracks, &a)?;
    }
    Ok(())
}

/// Writes file access `a` on its thread's "File access" track, if the
/// filter keeps it (it overlaps the time window, of a process kept).
fn write_access<W: Write>(
    part: &mut PartWriter<'_, '_, '_, W>,
    tracks: &mut FxHashMap<(u32, u32), SliceTrack>,
    a: &FileAccess,
) -> Written {
    if let Some(f) = part.filter.filter() {
        let end = a.end.unwrap_or(i64::MAX);
        let in_time = f.time.start.is_none_or(|from| end >= from)
            && f.time.end.is_none_or(|to| a.start <= to);
        if !in_time || !(f.pids.is_empty() || f.pids.contains(&a.pid)) {
            part.summary.filter_out(FILE_ACCESS);
            return Ok(());
        }
    }
    let Some(start) = part.row_at(a.start, FILE_ACCESS) else {
        return Ok(());
    };
    let meta = part.report.meta();
    let track = *tracks.entry((a.pid, a.tid)).or_insert_with(|| {
        let thread = part
            .seq
            .with_tracks(|t| thread_track(t, meta, a.pid, a.tid));
        // Accesses of one thread may overlap (asynchronous I/O): lanes.
        part.seq.slice_track(
            TrackSpec::new(Some(thread), "File access"),
            Stacking::Exclusive,
        )
    });
    let end = a.end.map(|end| part.summary.checked_end(start, end));
    let mut args = Vec::with_capacity(4);
    if let Some(path) = &a.path {
        args.push(Arg::new("path", ArgValue::Str(path)));
    }
    if let Some(bytes) = a.bytes {
        args.push(Arg::new("bytes", ArgValue::Int(bytes)));
    }
    if let Some(id) = a.api_call_id {
        args.push(Arg::new("api_call_id", ArgValue::Int(id)));
    }
    if let Some(context) = &a.context {
        args.push(Arg::new("context", ArgValue::Str(context)));
    }
    part.seq
        .slice(track, &Slice::new(start, end, &a.what, FILE_ACCESS, &args))?;
    part.summary.count(FILE_ACCESS);
    Ok(())
}
