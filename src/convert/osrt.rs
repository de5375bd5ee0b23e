//! OS runtime calls: slices on an "OS runtime" track of each thread, with the
//! call stack they were made from where the report recorded it.

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::nsys::cpu::{ChainFrame, OsrtCall, OSRT_CALLCHAINS};
use crate::perfetto::{Arg, ArgValue, Slice, SliceTrack, Stacking, TrackSpec};

use super::part_writer::{PartWriter, Written};
use super::stacks::Frames;
use super::threads::{process_track, thread_track};

pub(super) const OSRT: &str = "osrt";

const NO_THREAD: &str = "OS runtime events that nsys recorded without a thread (tid 0): \
     its own markers of when OS runtime tracing started and finished, and calls it could not \
     place on a thread";

pub(super) fn write<W: Write>(mut part: PartWriter<'_, '_, '_, W>) -> Written {
    let report = part.report;
    let meta = report.meta();
    let mut tracks: FxHashMap<(u32, u32), SliceTrack> = FxHashMap::default();
    let mut chain: Vec<ChainFrame> = Vec::new();
    let mut frames = Frames::default();
    report.for_each_osrt_call(part.filter, |call: OsrtCall| -> Written {
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
    })
}
