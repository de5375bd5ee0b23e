//! Process and thread tracks, named from the report.

use crate::nsys::Metadata;
use crate::perfetto::{TrackId, Tracks};

pub fn process_name(meta: &Metadata, pid: u32) -> String {
    meta.processes
        .get(&pid)
        .or_else(|| meta.threads.get(&(pid, pid)))
        .cloned()
        .unwrap_or_else(|| format!("Process {pid}"))
}

pub fn thread_name(meta: &Metadata, pid: u32, tid: u32) -> String {
    meta.threads
        .get(&(pid, tid))
        .cloned()
        .unwrap_or_else(|| format!("Thread {tid}"))
}

pub fn thread_track(tracks: &mut Tracks, meta: &Metadata, pid: u32, tid: u32) -> TrackId {
    tracks.thread(
        pid as i32,
        i64::from(tid),
        || process_name(meta, pid),
        || thread_name(meta, pid, tid),
    )
}

pub fn process_track(tracks: &mut Tracks, meta: &Metadata, pid: u32) -> TrackId {
    tracks.process(pid as i32, || process_name(meta, pid))
}
