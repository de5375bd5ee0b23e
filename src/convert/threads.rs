//! Process and thread tracks, named from the report.

use std::collections::BTreeSet;

use crate::nsys::Metadata;
use crate::perfetto::{TrackId, Tracks};

/// The process name nsys records for a program it launched itself.
const NSYS_LAUNCHER: &str = "nsys-launcher";

/// The process's name, with its MPI rank where the report records one: each
/// rank of a job is often the same program, and the rank tells their traces apart.
pub(super) fn process_name(meta: &Metadata, pid: u32) -> String {
    let main_thread = meta.threads.get(&(pid, pid));
    // A program started through `nsys profile` (MPI ranks under `srun nsys
    // profile ...`) keeps the pid of nsys's launcher, which PROCESSES names;
    // its main thread carries the program's own name.
    let name = match meta.processes.get(&pid) {
        Some(launcher) if launcher == NSYS_LAUNCHER => main_thread.unwrap_or(launcher).clone(),
        Some(name) => name.clone(),
        None => main_thread.map_or_else(|| format!("Process {pid}"), Clone::clone),
    };
    match meta.mpi_ranks.get(&pid) {
        Some(ranks) if !ranks.is_empty() => format!("{name} ({})", rank_label(ranks)),
        _ => name,
    }
}

/// "MPI rank 3", or "MPI ranks 0, 1" for a process whose threads the report
/// puts in several ranks.
fn rank_label(ranks: &BTreeSet<i64>) -> String {
    let list: Vec<String> = ranks.iter().map(i64::to_string).collect();
    match list.as_slice() {
        [one] => format!("MPI rank {one}"),
        _ => format!("MPI ranks {}", list.join(", ")),
    }
}

pub(super) fn thread_name(meta: &Metadata, pid: u32, tid: u32) -> String {
    meta.threads
        .get(&(pid, tid))
        .cloned()
        .unwrap_or_else(|| format!("Thread {tid}"))
}

pub(super) fn thread_track(tracks: &mut Tracks, meta: &Metadata, pid: u32, tid: u32) -> TrackId {
    tracks.thread(
        pid as i32,
        i64::from(tid),
        || process_name(meta, pid),
        || thread_name(meta, pid, tid),
    )
}

pub(super) fn process_track(tracks: &mut Tracks, meta: &Metadata, pid: u32) -> TrackId {
    tracks.process(pid as i32, || process_name(meta, pid))
}
